"""Ops that read an input at shifted, wrapped or clamped coordinates: Tile and Pad, each one
ISliceLayer whose sample mode says what a coordinate outside the input reads (as onnx-tensorrt
lowers them). Repeats and pads may be runtime tensors: the slice size is then a shape tensor."""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.ops.reduce import const_ints
from loopc.backend.trt.ops.shape import computed_axes
from loopc.backend.trt.registry import converter, unsupported
from loopc.ir import Node
from loopc.semantics.attributes import attr
from loopc.trt import trt

#: ONNX Pad mode → TensorRT SampleMode: edge repeats the border (CLAMP); reflect mirrors without
#: repeating it (REFLECT); wrap is periodic (WRAP); constant fills.
_PAD_MODES = {"constant": "FILL", "reflect": "REFLECT", "edge": "CLAMP", "wrap": "WRAP"}


def sampled_slice(ctx: ConversionContext, node: Node, x: Any, axes: list[int] | Any, start: list[int] | Any,
                  size: list[int] | Any, mode: str, fill: Any = None, suffix: str = "") -> Any:
    """An ISliceLayer with stride 1 over ``axes`` in sample ``mode``; ``axes``, ``start`` and ``size`` are
    lists of ints or 1-D INT64 tensors (one entry per axis; computed axes in [0, rank)). ``suffix`` names a
    helper layer (see ``ctx.named``)."""
    shape = tuple(x.shape)
    rank = len(shape)
    static = isinstance(start, list) and isinstance(size, list) and isinstance(axes, list)
    if static and all(shape[i] != -1 for i in range(rank) if i not in axes):
        full_start, full_size = [0] * rank, list(shape)
        for a, s, n in zip(axes, start, size):
            full_start[a], full_size[a] = s, n
        layer = ctx.network.add_slice(x, full_start, full_size, [1] * rank)
    else:
        n = len(axes) if isinstance(axes, list) else int(axes.shape[0])
        layer = ctx.network.add_slice(x, [0] * n, [1] * n, [1] * n)
        for index, value, what in ((1, start, "start"), (2, size, "size")):
            layer.set_input(index, ctx.constant(np.array(value, np.int64), node, what) if isinstance(value, list)
                            else value)
        layer.set_input(3, ctx.constant(np.ones(n, np.int64), node, "stride"))
        if not isinstance(axes, list):
            layer.set_input(5, axes)
        elif axes != list(range(rank)):
            layer.set_input(5, ctx.constant(np.array(axes, np.int64), node, "axes"))
    layer.mode = getattr(trt().SampleMode, mode)
    if fill is not None:
        layer.set_input(4, fill)
    return ctx.out(layer, node, suffix)


@converter("Tile")
def tile(ctx: ConversionContext, node: Node) -> None:
    """out[i] = x[i mod shape]: a WRAP slice from 0 of size shape × repeats."""
    x = ctx.get(node.inputs[0], node)
    shape = tuple(x.shape)
    rank = len(shape)
    if rank == 0:
        ctx.set(node.outputs[0], ctx.out(ctx.network.add_identity(x), node))
        return
    known = ctx.constant_of(node.inputs[1])
    if known is not None and known.size != rank:
        raise unsupported(node, f"{known.size} repeats for an input of rank {rank}")
    if known is not None and -1 not in shape:
        size: Any = [d * int(r) for d, r in zip(shape, known.reshape(-1))]
    else:
        if known is not None:
            repeats = ctx.constant(known.astype(np.int64).reshape(-1), node, "repeats")
        else:
            repeats = ctx.cast(ctx.get(node.inputs[1], node), trt().int64, node, "repeats")
        size = ctx.elementwise(ctx.shape_of(x, node), repeats, "PROD", node, "size")
    ctx.set(node.outputs[0], sampled_slice(ctx, node, x, list(range(rank)), [0] * rank, size, "WRAP"))


@converter("Pad")
def pad(ctx: ConversionContext, node: Node) -> None:
    """Pads of n axes are [begin_0..begin_n-1, end_0..end_n-1]: the slice starts at -begin and is
    d + begin + end long (a negative pad crops). Pads and axes may be computed (shape tensors).

    A negative pad crops before the other end is padded (ONNX's reference and onnxruntime): the same
    slice for every mode but wrap, whose period is then the cropped length, so wrap crops first."""
    x = ctx.get(node.inputs[0], node)
    shape = tuple(x.shape)
    rank = len(shape)
    mode = attr(node, "mode")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in _PAD_MODES:
        raise unsupported(node, f"mode={mode!r}")
    inputs = list(node.inputs) + [None] * (4 - len(node.inputs))
    axes: list[int] | Any
    if inputs[3] is not None and ctx.constant_of(inputs[3]) is None:
        axes = computed_axes(ctx, node, inputs[3], rank)
        n = int(axes.shape[0])
        if n < 0:
            raise unsupported(node, "a computed axes input of unknown length")
    else:
        known_axes = const_ints(ctx, node, inputs[3], "axes")
        axes = list(range(rank)) if known_axes is None else [a % rank for a in known_axes]
        n = len(axes)
    fill = None
    if mode == "constant" and inputs[2] is not None:
        fill = ctx.scalar0d(ctx.get(inputs[2], node), node, "value")
    known = ctx.constant_of(inputs[1])
    if known is not None:
        if known.size != 2 * n:
            raise unsupported(node, f"{known.size} pads for {n} axes")
        begin, end = [int(p) for p in known.reshape(-1)[:n]], [int(p) for p in known.reshape(-1)[n:]]
        if mode == "wrap" and min(begin + end) < 0:
            x, begin, end = _crop(ctx, node, x, axes, begin, end), [max(b, 0) for b in begin], [max(e, 0) for e in end]
            shape = tuple(x.shape)
        if isinstance(axes, list) and -1 not in (dims := [shape[a] for a in axes]):
            size = [d + b + e for d, b, e in zip(dims, begin, end)]
            ctx.set(node.outputs[0], sampled_slice(ctx, node, x, axes, [-b for b in begin], size, _PAD_MODES[mode],
                                                   fill))
            return
        pads = ctx.constant(np.array(begin + end, np.int64), node, "pads")
    else:
        pads = ctx.cast(ctx.get(inputs[1], node), trt().int64, node, "pads")
        if pads.shape[0] not in (-1, 2 * n):
            raise unsupported(node, f"{pads.shape[0]} pads for {n} axes")
    begin_t = ctx.gather1(pads, list(range(n)), node, "begin")
    end_t = ctx.gather1(pads, list(range(n, 2 * n)), node, "end")
    if mode == "wrap" and known is None:
        x = _crop(ctx, node, x, axes, begin_t, end_t)
        zero = ctx.constant(np.zeros(n, np.int64), node, "no_pad")
        begin_t, end_t = (ctx.elementwise(t, zero, "MAX", node, f"{what}_added")
                          for t, what in ((begin_t, "begin"), (end_t, "end")))
    start = ctx.elementwise(ctx.constant(np.zeros(n, np.int64), node, "zero"), begin_t, "SUB", node, "start")
    if isinstance(axes, list):
        dims_t = ctx.gather1(ctx.shape_of(x, node), axes, node, "dims")
    else:
        dims_t = ctx.out(ctx.network.add_gather(ctx.shape_of(x, node), axes, 0), node, "dims")
    size = ctx.elementwise(ctx.elementwise(dims_t, begin_t, "SUM", node, "plus_begin"), end_t, "SUM", node, "size")
    ctx.set(node.outputs[0], sampled_slice(ctx, node, x, axes, start, size, _PAD_MODES[mode], fill))


def _crop(ctx: ConversionContext, node: Node, x: Any, axes: list[int] | Any, begin: list[int] | Any,
          end: list[int] | Any) -> Any:
    """``x`` without what the negative pads of ``axes`` remove (each side's pad, ints or an INT64 tensor)."""
    if isinstance(begin, list) and isinstance(end, list) and isinstance(axes, list) and -1 not in \
            (dims := [x.shape[a] for a in axes]):
        return sampled_slice(ctx, node, x, axes, [max(-b, 0) for b in begin],
                             [d + min(b, 0) + min(e, 0) for d, b, e in zip(dims, begin, end)], "STRICT_BOUNDS",
                             suffix="cropped")
    n = len(axes) if isinstance(axes, list) else int(axes.shape[0])
    zero = ctx.constant(np.zeros(n, np.int64), node, "no_crop")
    begin_t, end_t = (b if not isinstance(b, list) else ctx.constant(np.array(b, np.int64), node, what)
                      for b, what in ((begin, "crop_begin"), (end, "crop_end")))
    if isinstance(axes, list):
        dims_t = ctx.gather1(ctx.shape_of(x, node), axes, node, "uncropped")
    else:
        dims_t = ctx.out(ctx.network.add_gather(ctx.shape_of(x, node), axes, 0), node, "uncropped")
    start = ctx.elementwise(ctx.elementwise(zero, begin_t, "SUB", node, "neg_begin"), zero, "MAX", node, "crop_start")
    size = ctx.elementwise(ctx.elementwise(dims_t, ctx.elementwise(begin_t, zero, "MIN", node, "begin_cut"), "SUM",
                                           node, "less_begin"),
                           ctx.elementwise(end_t, zero, "MIN", node, "end_cut"), "SUM", node, "crop_size")
    return sampled_slice(ctx, node, x, axes, start, size, "STRICT_BOUNDS", suffix="cropped")

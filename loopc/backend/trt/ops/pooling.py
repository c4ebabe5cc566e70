"""Windowed pools: MaxPool, AveragePool, LpPool (an IPoolingLayer each, 1-D run as 2-D; sized as
ONNX sizes them by :mod:`~loopc.backend.trt.ops.pool_windows`, dilated ones by
:mod:`~loopc.backend.trt.ops.dilated_pooling`), GlobalLpPool (a reduction) and MaxUnpool (a scatter).

Integer MaxPool pools exact float32 values; its Indices output comes from
:mod:`~loopc.backend.trt.ops.max_pool_indices`. LpPool is an average of |x|^p that counts the
padding (zeros add nothing) times the window's size, then the p-th root.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.ops.dilated_pooling import dilated_pool
from loopc.backend.trt.ops.max_pool_indices import max_pool_with_indices
from loopc.backend.trt.ops.pool_windows import NOTHING, PADDED, WHOLE, Window, plan, window_refusal
from loopc.backend.trt.ops.reduce import mask
from loopc.backend.trt.ops.shape import slice_axes
from loopc.backend.trt.ops.unary import scalar_like
from loopc.backend.trt.registry import converter, unsupported
from loopc.ir import Node
from loopc.semantics.attributes import attr
from loopc.trt import trt


def _norm_order(node: Node) -> float:
    """LpPool's and GlobalLpPool's p: an int since opset 2, a float in opset 1."""
    return float(node.attrs.get("p", 2))


def _p_refusal(node: Node) -> str | None:
    p = _norm_order(node)
    return f"{node.op} with p={p:g} (p must be positive)" if p <= 0 else None


def _lp_refusal(node: Node) -> str | None:
    return _p_refusal(node) or window_refusal(node)


def _window_over(node: Node, x: Any) -> Window:
    """``node``'s window, which must fit ``x`` [N, C, *spatial]."""
    window = Window.of(node)
    n, rank = len(window.kernel), len(x.shape)
    if rank != n + 2:
        raise unsupported(node, f"a {n}-D window over a rank-{rank} input (it needs [N, C, {n} spatial dims])")
    return window


def pool(ctx: ConversionContext, node: Node, x: Any, kind: str, counts: str = NOTHING) -> Any:
    """``x`` [N, C, *spatial] pooled as ``node``'s window says; ``kind`` is a PoolingType name and
    ``counts`` what an average divides by (see :data:`NOTHING`)."""
    window = _window_over(node, x)
    if len(window.kernel) == 1:  # TensorRT pools 2-D and 3-D windows: [N, C, L] runs as [N, C, L, 1]
        lifted = ctx.unsqueeze(x, [3], node, "as2d")
        return ctx.squeeze(_pool_nd(ctx, node, lifted, window.lifted(), kind, counts), [3], node, "as1d")
    return _pool_nd(ctx, node, x, window, kind, counts)


def _pool_nd(ctx: ConversionContext, node: Node, x: Any, window: Window, kind: str, counts: str) -> Any:
    """A 2-D or 3-D pool: one pooling layer (a slice after it trims windows ONNX drops), or the
    phases of a dilated one."""
    if any(d != 1 for d in window.dilations):
        return dilated_pool(ctx, node, x, window, kind, counts)
    found = plan(window, tuple(int(d) for d in x.shape[2:]), counts)
    if isinstance(found, str):
        raise unsupported(node, found)
    layer = ctx.network.add_pooling_nd(x, getattr(trt().PoolingType, kind), window.kernel)
    layer.stride_nd = window.strides
    layer.pre_padding = found.begin
    layer.post_padding = found.end
    layer.padding_mode = getattr(trt().PaddingMode, found.mode)
    layer.average_count_excludes_padding = counts == NOTHING
    y = ctx.out(layer, node, "pool")
    if any(k is not None for k in found.keep):
        axes = [2 + i for i, k in enumerate(found.keep) if k is not None]
        sizes = [k for k in found.keep if k is not None]
        y = slice_axes(ctx, node, y, axes, [0] * len(axes), sizes, [1] * len(axes), "ceil_trim")
    return y


def _as_float(ctx: ConversionContext, node: Node, x: Any) -> Any:
    """TensorRT pools floats (and quantized INT8): integers are pooled as exact float32 values."""
    T = trt()
    if x.dtype in (T.float32, T.float16, T.bfloat16):
        return x
    return ctx.cast(x, T.float32, node, "as_float")


@converter("MaxPool", capability=window_refusal)
def max_pool(ctx: ConversionContext, node: Node) -> None:
    x = ctx.get(node.inputs[0], node)
    if len(node.outputs) > 1 and node.outputs[1].is_used():
        y, indices = _max_pool_indices(ctx, node, _as_float(ctx, node, x))
        ctx.set(node.outputs[1], indices)
    else:
        y = pool(ctx, node, _as_float(ctx, node, x), "MAX")
    ctx.set(node.outputs[0], ctx.cast(y, x.dtype, node, "typed"))


def _max_pool_indices(ctx: ConversionContext, node: Node, x: Any) -> tuple[Any, Any]:
    """The max and its flat index per window (1-D run as 2-D over [L, 1], where both index orders
    agree)."""
    window = _window_over(node, x)
    column_major = bool(int(node.attrs.get("storage_order", 0)))
    if len(window.kernel) > 1:
        return max_pool_with_indices(ctx, node, x, window, column_major)
    lifted = ctx.unsqueeze(x, [3], node, "as2d")
    values, indices = max_pool_with_indices(ctx, node, lifted, window.lifted(), column_major)
    return ctx.squeeze(values, [3], node, "as1d"), ctx.squeeze(indices, [3], node, "indices1d")


@converter("AveragePool", capability=window_refusal)
def average_pool(ctx: ConversionContext, node: Node) -> None:
    x = ctx.get(node.inputs[0], node)
    counts = PADDED if int(attr(node, "count_include_pad")) else NOTHING
    ctx.set(node.outputs[0], pool(ctx, node, x, "AVERAGE", counts))


def _power(ctx: ConversionContext, node: Node, x: Any, p: float, suffix: str) -> Any:
    return ctx.elementwise(x, scalar_like(ctx, p, x, node, f"{suffix}_p"), "POW", node, suffix)


def _magnitude_power(ctx: ConversionContext, node: Node, x: Any, p: float) -> Any:
    """|x|^p: ABS for p = 1, x·x for p = 2, else POW of |x| (exact for even p as well)."""
    if p == 2:
        return ctx.elementwise(x, x, "PROD", node, "square")
    magnitude = ctx.unary(x, "ABS", node, "abs")
    return magnitude if p == 1 else _power(ctx, node, magnitude, p, "pow")


def _root(ctx: ConversionContext, node: Node, x: Any, p: float) -> Any:
    if p == 1:
        return x
    if p == 2:
        return ctx.unary(x, "SQRT", node, "root")
    return _power(ctx, node, x, 1.0 / p, "root")


@converter("LpPool", capability=_lp_refusal)
def lp_pool(ctx: ConversionContext, node: Node) -> None:
    """(sum over the window of |x|^p)^(1/p): an average that counts the padding (zeros add nothing)
    times the window's size, with windows that all lie within the padding."""
    x = ctx.get(node.inputs[0], node)
    p = _norm_order(node)
    mean = pool(ctx, node, _magnitude_power(ctx, node, x, p), "AVERAGE", WHOLE)
    size = float(np.prod(Window.of(node).kernel))
    total = ctx.elementwise(mean, scalar_like(ctx, size, mean, node, "window"), "PROD", node, "sum")
    ctx.set(node.outputs[0], _root(ctx, node, total, p))


@converter("GlobalLpPool", capability=_p_refusal)
def global_lp_pool(ctx: ConversionContext, node: Node) -> None:
    """(sum over the spatial axes of |x|^p)^(1/p), kept as ones."""
    x = ctx.get(node.inputs[0], node)
    rank = len(x.shape)
    if rank < 3:
        raise unsupported(node, f"GlobalLpPool of a rank-{rank} input (it needs [N, C, D1, ...])")
    p = _norm_order(node)
    powered = _magnitude_power(ctx, node, x, p)
    layer = ctx.network.add_reduce(powered, trt().ReduceOperation.SUM, mask(list(range(2, rank)), rank), True)
    ctx.set(node.outputs[0], _root(ctx, node, ctx.out(layer, node, "sum"), p))


def _unpool_refusal(node: Node) -> str | None:
    found = window_refusal(node)
    if found is not None:
        return found
    window = Window.of(node)
    if any(s < f for s, f in zip(window.strides, window.kernel)):
        return ("MaxUnpool of overlapping windows (a stride shorter than the kernel): a max two windows share "
                "is written twice, which TensorRT's scatter leaves undefined")
    return None


@converter("MaxUnpool", capability=_unpool_refusal)
def max_unpool(ctx: ConversionContext, node: Node) -> None:
    """x's values written at their flat indices into zeros of the shape the pool read,
    (in - 1)·S - pads + F per spatial axis: an IScatterLayer on the flattened zeros. Windows must not
    overlap, so that no index repeats.

    An ``output_shape`` other than that shape is refused: the spec places the indices in it (as
    onnxruntime and PyTorch do), ONNX's reference and node test in the computed shape, padded after.
    """
    x, indices = ctx.get(node.inputs[0], node), ctx.get(node.inputs[1], node)
    window = _window_over(node, x)
    shape = tuple(int(d) for d in x.shape)
    if -1 in shape:
        raise unsupported(node, f"MaxUnpool of an input of dynamic shape {list(shape)}")
    unpooled = [*shape[:2], *((i - 1) * s - b - a + f for i, s, b, a, f in
                              zip(shape[2:], window.strides, window.begin, window.end, window.kernel))]
    given = node.inputs[2] if len(node.inputs) > 2 else None
    if given is not None:
        known = ctx.constant_of(given)
        if known is None:
            raise unsupported(node, "MaxUnpool with a computed output_shape (where its indices go is ambiguous "
                                    "unless it is the unpooled shape)")
        if [int(d) for d in known.reshape(-1)] != unpooled:
            raise unsupported(node, f"MaxUnpool to output_shape {[int(d) for d in known.reshape(-1)]} other than "
                                    f"the unpooled {unpooled} (ONNX's spec and its reference place the indices "
                                    "differently)")
    zero = ctx.cast(ctx.constant(np.zeros(1, np.float32), node, "zero"), x.dtype, node, "zero_typed")
    zeros = ctx.out(ctx.network.add_slice(zero, [0], [int(np.prod(unpooled))], [0]), node, "zeros")
    where = ctx.reshape(ctx.cast(indices, trt().int64, node, "indices64"), [-1, 1], node, "where")
    layer = ctx.network.add_scatter(zeros, where, ctx.reshape(x, [-1], node, "values"), trt().ScatterMode.ND)
    ctx.set(node.outputs[0], ctx.reshape(ctx.out(layer, node, "scatter"), unpooled, node))

"""Ops that keep or zero elements by position: Trilu (causal masks in decoders, from torch.triu/tril),
EyeLike (tf2onnx's tf.eye and matrix-diagonal ops) and Dropout, which at inference keeps everything."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx import helper

from loopc.backend.trt.context import ConversionContext, trt_dtype
from loopc.backend.trt.ops.shape import broadcast_to
from loopc.backend.trt.ops.unary import scalar_like
from loopc.backend.trt.registry import converter, unsupported
from loopc.ir import Node
from loopc.semantics.attributes import attr
from loopc.trt import trt


def _diagonal_offsets(ctx: ConversionContext, node: Node, x: Any) -> Any:
    """j - i for every (row i, column j) of ``x``'s last two axes, as an INT64 [rows, cols] tensor."""
    rows, cols = tuple(x.shape)[-2:]
    if rows != -1 and cols != -1:
        return ctx.constant(np.arange(cols)[None, :] - np.arange(rows)[:, None], node, "offsets")
    rank = len(x.shape)
    layer = ctx.network.add_fill([1, 1], trt().FillOperation.LINSPACE, trt().int64)
    layer.set_input(0, ctx.gather1(ctx.shape_of(x, node), [rank - 2, rank - 1], node, "matrix"))
    layer.set_input(1, ctx.constant(np.array(0, np.int64), node, "alpha"))
    layer.set_input(2, ctx.constant(np.array([-1, 1], np.int64), node, "beta"))  # element [i, j] = j - i
    return ctx.out(layer, node, "offsets")


@converter("Trilu")
def trilu(ctx: ConversionContext, node: Node) -> None:
    """Keep j - i >= k (upper, the default) or j - i <= k (lower) in each matrix; zero the rest."""
    x = ctx.get(node.inputs[0], node)
    rank = len(x.shape)
    if rank < 2:
        raise unsupported(node, f"Trilu of a rank-{rank} tensor (it needs matrices)")
    upper = bool(attr(node, "upper"))
    k_value = node.inputs[1] if len(node.inputs) > 1 else None
    known = np.zeros(1, np.int64) if k_value is None else ctx.constant_of(k_value)
    if known is not None:
        k = ctx.constant(np.array(known, np.int64).reshape(1, 1), node, "k")
    else:
        k = ctx.reshape(ctx.cast(ctx.get(k_value, node), trt().int64, node, "k64"), [1, 1], node, "k")
    if 0 in tuple(x.shape)[-2:]:  # no elements: nothing to mask
        ctx.set(node.outputs[0], ctx.out(ctx.network.add_identity(x), node))
        return
    offsets = _diagonal_offsets(ctx, node, x)
    dropped = ctx.elementwise(offsets, k, "LESS" if upper else "GREATER", node, "dropped")
    zero = scalar_like(ctx, 0, x, node, "zero")
    keep, x, zero = ctx.broadcast([dropped, x, zero], node)
    ctx.set(node.outputs[0], ctx.out(ctx.network.add_select(keep, zero, x), node))


@converter("EyeLike")
def eye_like(ctx: ConversionContext, node: Node) -> None:
    """Ones where j - i == k in a matrix shaped like the input, in ``dtype`` (default: the input's)."""
    x = ctx.get(node.inputs[0], node)
    if len(x.shape) != 2:
        raise unsupported(node, f"EyeLike of a rank-{len(x.shape)} tensor (ONNX requires a matrix)")
    dtype = trt_dtype(helper.tensor_dtype_to_np_dtype(int(node.attrs["dtype"]))) if "dtype" in node.attrs else x.dtype
    k = ctx.constant(np.array([[int(attr(node, "k"))]], np.int64), node, "k")
    on = ctx.elementwise(_diagonal_offsets(ctx, node, x), k, "EQUAL", node, "diagonal")
    ctx.set(node.outputs[0], ctx.out(ctx.network.add_cast(on, dtype), node))


@converter("Dropout")
def dropout(ctx: ConversionContext, node: Node) -> None:
    """Inference: the output is the input and the optional mask is all true. Training mode drops
    at random, which an engine for inference does not do: refused unless the ratio is 0."""
    inputs = list(node.inputs) + [None] * (3 - len(node.inputs))
    ratio, training = inputs[1], inputs[2]
    if training is not None:
        mode = ctx.constant_of(training)
        if mode is None:
            raise unsupported(node, "a computed training_mode (Dropout must be in inference mode)")
        rate = np.array(0.5) if ratio is None else ctx.constant_of(ratio)
        if bool(mode.reshape(())) and (rate is None or float(rate.reshape(())) != 0.0):
            raise unsupported(node, "Dropout in training mode (random); export the model in eval mode")
    x = ctx.get(node.inputs[0], node)
    ctx.set(node.outputs[0], ctx.out(ctx.network.add_identity(x), node))
    if len(node.outputs) > 1 and node.outputs[1] is not None:
        rank = len(x.shape)
        seed = ctx.constant(np.ones((1,) * rank, bool), node, "keep" if rank else "mask")
        if rank:
            target: Any = list(x.shape) if -1 not in tuple(x.shape) else ctx.shape_of(x, node)
            seed = broadcast_to(ctx, node, seed, target, "mask")
        ctx.set(node.outputs[1], seed)

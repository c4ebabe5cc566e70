"""Per-channel normalizations at inference: BatchNormalization (running statistics, so an affine
map per channel) and InstanceNormalization (INormalizationLayer over the spatial axes, as
onnx-tensorrt builds it). Channels are axis 1; LayerNormalization lives with the reductions."""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext, np_dtype
from loopc.backend.trt.ops.reduce import mask
from loopc.backend.trt.ops.unary import scalar_like
from loopc.backend.trt.registry import converter, unsupported
from loopc.ir import Node


def _per_channel(ctx: ConversionContext, node: Node, vector: Any, rank: int, suffix: str) -> Any:
    """A [C] tensor as [1, C, 1, ..., 1] of ``rank`` dims, to broadcast against [N, C, ...]."""
    return ctx.reshape(vector, [1, -1] + [1] * (rank - 2), node, suffix)


def _inference_batch_norm(node: Node) -> str | None:
    """An engine normalizes with the stored statistics, per channel."""
    if int(node.attrs.get("training_mode", 0)):
        return "BatchNormalization in training mode; export the model in eval mode"
    if not int(node.attrs.get("spatial", 1)):
        return "spatial=0 (statistics per element, opset < 9)"
    return None


@converter("BatchNormalization", capability=_inference_batch_norm)
def batch_norm(ctx: ConversionContext, node: Node) -> None:
    """y = x * a + b with a = scale / sqrt(var + eps), b = B - mean * a; folded when the statistics
    are constants (the usual export), else computed."""
    x = ctx.get(node.inputs[0], node)
    rank = len(x.shape)
    if rank < 2:
        raise unsupported(node, f"BatchNormalization of a rank-{rank} input (it needs [N, C, ...])")
    eps = float(node.attrs.get("epsilon", 1e-5))
    params = [ctx.constant_of(v) for v in node.inputs[1:5]]
    if all(p is not None for p in params):
        scale, bias, mean, var = (np.asarray(p, np.float64) for p in params)
        a = scale / np.sqrt(var + eps)
        b = bias - mean * a
        dtype = np_dtype(x.dtype)
        shape = [1, a.size] + [1] * (rank - 2)
        a_t = ctx.cast(ctx.constant(a.astype(dtype).reshape(shape), node, "scale"), x.dtype, node, "scale_typed")
        b_t = ctx.cast(ctx.constant(b.astype(dtype).reshape(shape), node, "shift"), x.dtype, node, "shift_typed")
    else:
        scale, bias, mean, var = (_per_channel(ctx, node, ctx.get(v, node), rank, name)
                                  for v, name in zip(node.inputs[1:5], ("s", "b", "mean", "var")))
        spread = ctx.elementwise(var, scalar_like(ctx, eps, var, node, "eps"), "SUM", node, "var_eps")
        a_t = ctx.elementwise(scale, ctx.unary(spread, "SQRT", node, "std"), "DIV", node, "scale")
        b_t = ctx.elementwise(bias, ctx.elementwise(mean, a_t, "PROD", node, "mean_scaled"), "SUB", node, "shift")
    ctx.set(node.outputs[0], ctx.elementwise(ctx.elementwise(x, a_t, "PROD", node, "scaled"), b_t, "SUM", node))


@converter("InstanceNormalization")
def instance_norm(ctx: ConversionContext, node: Node) -> None:
    """Statistics per (sample, channel) over the axes after the channel."""
    x, scale, bias = (ctx.get(v, node) for v in node.inputs)
    rank = len(x.shape)
    if rank < 3:
        raise unsupported(node, f"InstanceNormalization of a rank-{rank} input (it needs [N, C, D1, ...])")
    layer = ctx.network.add_normalization(x, _per_channel(ctx, node, scale, rank, "scale"),
                                          _per_channel(ctx, node, bias, rank, "bias"), mask(list(range(2, rank)), rank))
    layer.epsilon = float(node.attrs.get("epsilon", 1e-5))
    ctx.set(node.outputs[0], ctx.out(layer, node))

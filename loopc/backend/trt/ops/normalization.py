"""Normalizations at inference: BatchNormalization (running statistics, so an affine map per
channel), InstanceNormalization, GroupNormalization and LayerNormalization (INormalizationLayer),
MeanVarianceNormalization, RMSNormalization and LpNormalization (reductions), and LRN (ILRNLayer).
Channels are axis 1."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx import helper

from loopc.backend.trt.context import ConversionContext, np_dtype, trt_dtype
from loopc.backend.trt.ops.reduce import mask
from loopc.backend.trt.ops.unary import scalar_like
from loopc.backend.trt.registry import converter, node_error, unsupported
from loopc.ir import Node
from loopc.semantics.attributes import attr
from loopc.trt import trt


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
    eps = float(attr(node, "epsilon"))
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
    layer.epsilon = float(attr(node, "epsilon"))
    ctx.set(node.outputs[0], ctx.out(layer, node))


# -- statistics over axes -----------------------------------------------------------------------


def _stash(ctx: ConversionContext, node: Node, x: Any) -> Any:
    """``x`` in the type ``stash_type`` names (float32 by default): the type the statistics are taken in."""
    wanted = trt_dtype(helper.tensor_dtype_to_np_dtype(int(node.attrs.get("stash_type", 1))))
    return ctx.cast(x, wanted, node, "stash")


def _mean(ctx: ConversionContext, node: Node, x: Any, axes: int, suffix: str) -> Any:
    return ctx.out(ctx.network.add_reduce(x, trt().ReduceOperation.AVG, axes, True), node, suffix)


def _moments(ctx: ConversionContext, node: Node, x: Any, axes: int) -> tuple[Any, Any, Any]:
    """Mean, x - mean and the (biased) variance over the ``axes`` mask, statistics kept as unit axes."""
    mean = _mean(ctx, node, x, axes, "mean")
    centered = ctx.elementwise(x, mean, "SUB", node, "centered")
    var = _mean(ctx, node, ctx.elementwise(centered, centered, "PROD", node, "squared"), axes, "var")
    return mean, centered, var


@converter("LayerNormalization")
def layer_norm(ctx: ConversionContext, node: Node) -> None:
    """(x - mean) / sqrt(var + eps) * scale + bias over the axes from ``axis`` to the last.

    Y alone is one INormalizationLayer, run in the stash type (float32 for a float16 input, by
    default, as ONNX computes it). When the Mean or InvStdDev outputs are wanted, the statistics
    are reductions in the stash type (what those outputs are typed in), and Y is computed from
    them, so that the three agree.
    """
    x = ctx.get(node.inputs[0], node)
    rank = len(x.shape)
    axis = int(attr(node, "axis")) % rank
    axes = mask(list(range(axis, rank)), rank)
    eps = float(attr(node, "epsilon"))
    scale = ctx.to_rank(ctx.get(node.inputs[1], node), rank, node, "scale")
    has_bias = len(node.inputs) > 2 and node.inputs[2] is not None
    bias = ctx.to_rank(ctx.get(node.inputs[2], node), rank, node, "bias") if has_bias else None
    stats = [v for v in node.outputs[1:3] if v is not None]
    wide = _stash(ctx, node, x)
    if not stats:
        if bias is None:
            bias = ctx.elementwise(scale, scale, "SUB", node, "zero_bias")
        layer = ctx.network.add_normalization(wide, ctx.cast(scale, wide.dtype, node, "scale_stash"),
                                              ctx.cast(bias, wide.dtype, node, "bias_stash"), axes)
        layer.epsilon = eps
        narrowed = wide.dtype != x.dtype
        ctx.set(node.outputs[0], ctx.cast(ctx.out(layer, node, "stashed" if narrowed else ""), x.dtype, node))
        return
    mean, centered, var = _moments(ctx, node, wide, axes)
    spread = ctx.elementwise(var, scalar_like(ctx, eps, var, node, "eps"), "SUM", node, "var_eps")
    inv_std = ctx.unary(ctx.unary(spread, "SQRT", node, "std"), "RECIP", node, "inv_std")
    normalized = ctx.cast(ctx.elementwise(centered, inv_std, "PROD", node, "normalized"), x.dtype, node,
                          "normalized_typed")
    y = ctx.elementwise(normalized, scale, "PROD", node, "scaled" if bias is not None else "")
    ctx.set(node.outputs[0], ctx.elementwise(y, bias, "SUM", node) if bias is not None else y)
    for value, tensor in zip(node.outputs[1:3], (mean, inv_std)):
        if value is not None:
            ctx.set(value, tensor)


@converter("GroupNormalization")
def group_norm(ctx: ConversionContext, node: Node) -> None:
    """INormalizationLayer with num_groups over the axes after the channel (its v2 form, which takes
    the per-channel scale and bias of opset 21; opset 18's per-group ones are made per-channel by the
    frontend), in the stash type."""
    x, scale, bias = (ctx.get(v, node) for v in node.inputs)
    rank = len(x.shape)
    vector = rank == 2  # no spatial axes: [N, C] as [N, C, 1]
    if vector:
        x = ctx.unsqueeze(x, [2], node, "as3d")
        rank = 3
    groups = int(node.attrs["num_groups"])
    channels = int(x.shape[1])
    if channels != -1 and channels % groups:
        raise node_error(node, f"num_groups {groups} does not divide the {channels} channels")
    # TensorRT takes a group's statistics over its channels and the masked axes after the channel axis;
    # with one group it takes none across channels, so the channel axis joins the mask
    first = 1 if groups == 1 else 2
    wide = _stash(ctx, node, x)
    scale, bias = (ctx.cast(_per_channel(ctx, node, t, rank, name), wide.dtype, node, f"{name}_stash")
                   for t, name in ((scale, "scale"), (bias, "bias")))
    layer = ctx.network.add_normalization_v2(wide, scale, bias, mask(list(range(first, rank)), rank))
    layer.epsilon = float(attr(node, "epsilon"))
    layer.num_groups = groups
    narrowed = wide.dtype != x.dtype
    y = ctx.out(layer, node, "normalized" if vector or narrowed else "")
    if vector:
        y = ctx.squeeze(y, [2], node, "squeezed" if narrowed else "")
    ctx.set(node.outputs[0], ctx.cast(y, x.dtype, node))


@converter("MeanVarianceNormalization")
def mean_variance_norm(ctx: ConversionContext, node: Node) -> None:
    """(x - E[x]) / (sqrt(E[(x - E[x])^2]) + 1e-9) over ``axes``, the epsilon where ONNX's function puts it."""
    x = ctx.get(node.inputs[0], node)
    rank = len(x.shape)
    axes = mask([int(a) for a in node.attrs.get("axes", [0, 2, 3])], rank)
    _, centered, var = _moments(ctx, node, x, axes)
    std = ctx.elementwise(ctx.unary(var, "SQRT", node, "std"), scalar_like(ctx, 1e-9, var, node, "eps"), "SUM",
                          node, "std_eps")
    ctx.set(node.outputs[0], ctx.elementwise(centered, std, "DIV", node))


@converter("RMSNormalization")
def rms_norm(ctx: ConversionContext, node: Node) -> None:
    """x / sqrt(mean(x^2) + eps) * scale over the axes from ``axis`` on, the statistic in ``stash_type``."""
    x = ctx.get(node.inputs[0], node)
    rank = len(x.shape)
    axis = int(attr(node, "axis")) % rank
    wide = _stash(ctx, node, x)
    square_mean = _mean(ctx, node, ctx.elementwise(wide, wide, "PROD", node, "squared"),
                        mask(list(range(axis, rank)), rank), "square_mean")
    eps = scalar_like(ctx, float(attr(node, "epsilon")), square_mean, node, "eps")
    rms = ctx.unary(ctx.elementwise(square_mean, eps, "SUM", node, "square_mean_eps"), "SQRT", node, "rms")
    normalized = ctx.cast(ctx.elementwise(wide, rms, "DIV", node, "normalized"), x.dtype, node, "normalized_typed")
    scale = ctx.get(node.inputs[1], node)
    ctx.set(node.outputs[0], ctx.elementwise(normalized, scale, "PROD", node))


def _p_is_1_or_2(node: Node) -> str | None:
    p = int(node.attrs.get("p", 2))
    return None if p in (1, 2) else f"LpNormalization with p={p} (ONNX defines p=1 and p=2)"


@converter("LpNormalization", capability=_p_is_1_or_2)
def lp_norm(ctx: ConversionContext, node: Node) -> None:
    """x / ||x||_p along ``axis``; a zero vector stays zero, as ONNX says (it is divided by 1)."""
    x = ctx.get(node.inputs[0], node)
    rank = len(x.shape)
    axes = mask([int(attr(node, "axis")) % rank], rank)
    p = int(attr(node, "p"))
    terms = ctx.unary(x, "ABS", node, "abs") if p == 1 else ctx.elementwise(x, x, "PROD", node, "squared")
    total = ctx.out(ctx.network.add_reduce(terms, trt().ReduceOperation.SUM, axes, True), node, "sum")
    norm = total if p == 1 else ctx.unary(total, "SQRT", node, "l2")
    zero, one = scalar_like(ctx, 0.0, norm, node, "zero"), scalar_like(ctx, 1.0, norm, node, "one")
    is_zero = ctx.elementwise(norm, zero, "EQUAL", node, "is_zero")
    norm = ctx.out(ctx.network.add_select(is_zero, one, norm), node, "norm")
    ctx.set(node.outputs[0], ctx.elementwise(x, norm, "DIV", node))


#: TensorRT's ILRNLayer limits: an odd window of 1 to 15 channels, alpha in [-1e20, 1e20], beta in
#: [0.01, 1e5], k in [1e-5, 1e10].
_LRN_WINDOWS = range(1, 16, 2)


def _lrn_in_range(node: Node) -> str | None:
    size = int(node.attrs["size"])
    alpha = float(node.attrs.get("alpha", 1e-4))
    beta, bias = float(node.attrs.get("beta", 0.75)), float(node.attrs.get("bias", 1.0))
    if size not in _LRN_WINDOWS:
        return f"LRN size={size} (TensorRT's LRN window is odd, 1 to 15)"
    if not -1e20 <= alpha <= 1e20:
        return f"LRN alpha={alpha} (TensorRT takes -1e20 to 1e20)"
    if not 0.01 <= beta <= 1e5:
        return f"LRN beta={beta} (TensorRT takes 0.01 to 1e5)"
    if not 1e-5 <= bias <= 1e10:
        return f"LRN bias={bias} (TensorRT's k takes 1e-5 to 1e10)"
    return None


@converter("LRN", capability=_lrn_in_range)
def lrn(ctx: ConversionContext, node: Node) -> None:
    """ILRNLayer: the window runs over the channel axis, the third from last, with ONNX's alpha / size
    scaling. Inputs of another rank than 4 are viewed as [N, C, rest, 1] around it."""
    x = ctx.get(node.inputs[0], node)
    rank = len(x.shape)
    if rank < 3:
        raise unsupported(node, f"LRN of a rank-{rank} input (it needs [N, C, D1, ...])")
    src = x if rank == 4 else ctx.reshape(x, [0, 0, -1, 1], node, "as4d", zero_copies=True)
    layer = ctx.network.add_lrn(src, int(node.attrs["size"]), float(attr(node, "alpha")),
                                float(attr(node, "beta")), float(attr(node, "bias")))
    y = ctx.out(layer, node, "" if rank == 4 else "lrn")
    if rank != 4:
        y = ctx.reshape(y, ctx.shape_of(x, node, "shape"), node)
    ctx.set(node.outputs[0], y)

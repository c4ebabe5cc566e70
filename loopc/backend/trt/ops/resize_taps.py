"""Resize as gathers and weighted sums, for what TensorRT's resize layer cannot express: scales that
make no whole output length, antialiased downscaling, cubic on more than two axes, any mode on an
outer axis. With the input and output lengths of an axis known when the network is built, ONNX's
resize of that axis is fixed taps: output j = Σ_k w[k, j] · x[idx[k, j]], the indices and weights
computed here from ONNX's definitions, applied as one IGatherLayer and one product per tap.

tf_crop_and_resize is built this way too, from constant sizes and a constant crop region. Where
onnxruntime and ONNX's reference disagree (align_corners, and pytorch_half_pixel's single pixel, with
an output length that is not length × scale: one divides by the unrounded length, the other by the
rounded one; tf_crop_and_resize by scales, sized with or without the crop), nothing is built.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext, np_dtype
from loopc.ir import Node
from loopc.semantics.attributes import attr, text
from loopc.semantics.resize import NEAREST, keys, onnx_coordinates, rounded

#: Most taps one axis may take (an antialiased downscale by s reads about 4/s input pixels).
MAX_TAPS = 64


def ambiguous(transform: str, n_out: int, width: float) -> bool:
    """Whether onnxruntime and ONNX's reference map this axis differently (see the module's docstring)."""
    return width != n_out and (transform == "align_corners" or (transform == "pytorch_half_pixel" and n_out == 1))


def onnx_taps(node: Node, mode: str, transform: str, n_in: int, n_out: int, scale: float, width: float,
              crop: tuple[float, float] = (0.0, 1.0)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Input indices and weights, each [taps, n_out], of ONNX's resize of one axis: the filter's taps
    around each mapped coordinate (stretched by 1/scale when antialiasing a downscale), edge pixels
    past either end, or dropped and the rest renormalized with exclude_outside. Also which outputs
    tf_crop_and_resize maps outside the input (they read extrapolation_value)."""
    coord = onnx_coordinates(transform, n_in, n_out, scale, width, crop)
    outside = (coord < 0) | (coord > n_in - 1) if transform == "tf_crop_and_resize" else np.zeros(n_out, bool)
    if mode == "NEAREST":
        rounding = NEAREST[text(node, "nearest_mode")]
        return np.clip(rounded(coord, rounding), 0, n_in - 1).astype(np.int64)[None], np.ones((1, n_out)), outside
    support = 1 if mode == "LINEAR" else 2
    stretch = min(scale, 1.0) if int(attr(node, "antialias")) else 1.0
    start = int(np.floor(-support / stretch)) + 1
    base = np.floor(coord)
    index = base[None] + np.arange(start, 2 - start)[:, None]
    distance = (index - coord[None]) * stretch
    if mode == "LINEAR":
        weight = np.clip(1 - np.abs(distance), 0, 1)
    else:
        weight = keys(distance, float(attr(node, "cubic_coeff_a")))
    weight = weight / weight.sum(axis=0, keepdims=True)
    if int(attr(node, "exclude_outside")):
        weight = np.where((index >= 0) & (index < n_in), weight, 0.0)
        weight = weight / weight.sum(axis=0, keepdims=True)
    return np.clip(index, 0, n_in - 1).astype(np.int64), weight, outside


def resample(ctx: ConversionContext, node: Node, x: Any, axis: int, index: np.ndarray, weight: np.ndarray,
             outside: np.ndarray) -> Any:
    """Σ_k weight[k] · gather(x, index[k], axis) (one tap: the gather alone, so values move exactly);
    extrapolation_value where ``outside``."""
    rank = len(x.shape)
    shape = [1] * rank
    shape[axis] = index.shape[1]
    total = None
    for k in range(index.shape[0]):
        picked = ctx.out(ctx.network.add_gather(x, ctx.constant(index[k], node, f"axis{axis}_idx{k}"), axis), node,
                         f"axis{axis}_tap{k}")
        if index.shape[0] == 1:
            total = picked
            break
        w = ctx.constant(weight[k].reshape(shape).astype(np_dtype(x.dtype)), node, f"axis{axis}_w{k}")
        term = ctx.elementwise(picked, w, "PROD", node, f"axis{axis}_term{k}")
        total = term if total is None else ctx.elementwise(total, term, "SUM", node, f"axis{axis}_sum{k}")
    if not outside.any():
        return total
    mask = ctx.constant(outside.reshape(shape), node, f"axis{axis}_outside")
    fill = ctx.constant(np.full(shape, float(attr(node, "extrapolation_value")), np_dtype(x.dtype)), node,
                        f"axis{axis}_fill")
    return ctx.out(ctx.network.add_select(*ctx.broadcast([mask, fill, total], node)), node, f"axis{axis}_crop")

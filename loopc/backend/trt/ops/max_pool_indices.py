"""MaxPool's Indices output, which TensorRT's pooling layer does not give: every window tap read by a
strided slice, the taps stacked and TopK(1) taken over them (ties keep the first tap in window
order, as ONNX's strict ``>`` does), and the tap number turned into ONNX's flat input index.

The index of tap t at output o is (n·C + c)·V + Σ_i (o_i·S_i - B_i + j_i(t)·D_i)·stride_i, with V
the spatial volume and stride_i row-major (storage_order 0) or column-major over the spatial axes
(storage_order 1): a constant of the output position plus a lookup of t.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.ops.pool_windows import Window, onnx_output_sizes, onnx_pads
from loopc.backend.trt.ops.reduce import topk
from loopc.backend.trt.ops.sampling import sampled_slice
from loopc.backend.trt.ops.shape import slice_axes
from loopc.backend.trt.registry import unsupported
from loopc.ir import Node
from loopc.trt import trt


def _spatial_strides(spatial: tuple[int, ...], column_major: bool) -> list[int]:
    order = range(len(spatial)) if column_major else reversed(range(len(spatial)))
    strides, step = [0] * len(spatial), 1
    for i in order:
        strides[i], step = step, step * spatial[i]
    return strides


def max_pool_with_indices(ctx: ConversionContext, node: Node, x: Any, window: Window,
                          column_major: bool) -> tuple[Any, Any]:
    """The max of each window of float ``x`` [N, C, *spatial] (static) and its flat input index."""
    shape = tuple(int(d) for d in x.shape)
    if -1 in shape:
        raise unsupported(node, f"MaxPool's Indices output of an input of dynamic shape {list(shape)}")
    n, c, spatial = shape[0], shape[1], shape[2:]
    k = len(spatial)
    outs = onnx_output_sizes(window, spatial)
    begin, end = onnx_pads(window, spatial)
    if any(p >= f for p, f in zip(begin + end, window.kernel + window.kernel)):
        raise unsupported(node, "MaxPool's Indices output with pads as long as the kernel (windows of padding only)")
    axes = list(range(2, 2 + k))
    low = ctx.cast(ctx.constant(np.array(-np.inf, np.float32), node, "low"), x.dtype, node, "low_typed")
    reach = window.reach()
    extent = [(o - 1) * s + r for o, s, r in zip(outs, window.strides, reach)]
    padded = sampled_slice(ctx, node, x, axes, [-b for b in begin], extent, "FILL", low)
    taps = list(itertools.product(*(range(f) for f in window.kernel)))
    reads = [slice_axes(ctx, node, padded, axes, [j * d for j, d in zip(tap, window.dilations)], list(outs),
                        list(window.strides), f"tap{t}") for t, tap in enumerate(taps)]
    stacked = ctx.reshape(ctx.concat(reads, node, "taps", axis=1), [n, len(taps), c, *outs], node, "by_tap")
    values, chosen = topk(ctx, node, stacked, 1, 1, largest=True)
    strides = _spatial_strides(spatial, column_major)
    volume = math.prod(spatial)
    # (n·C + c)·V + Σ_i (o_i·S_i - B_i)·stride_i, as one constant [N, C, O1, ..., Ok]
    base = np.arange(n * c, dtype=np.int64).reshape(n, c, *([1] * k)) * volume
    for i, (o, s, b) in enumerate(zip(outs, window.strides, begin)):
        base = base + ((np.arange(o) * s - b) * strides[i]).reshape([1, 1] + [o if a == i else 1 for a in range(k)])
    shift = np.array([sum(j * d * st for j, d, st in zip(tap, window.dilations, strides)) for tap in taps], np.int64)
    tap_of = ctx.reshape(chosen, [n, c, *outs], node, "tap")
    lookup = ctx.out(ctx.network.add_gather(ctx.constant(shift, node, "tap_shift"), tap_of, 0), node, "shift")
    flat = ctx.elementwise(ctx.cast(lookup, trt().int64, node, "shift64"), ctx.constant(base, node, "base"),
                           "SUM", node, "indices")
    return ctx.reshape(values, [n, c, *outs], node, "max"), flat

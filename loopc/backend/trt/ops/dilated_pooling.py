"""Dilated pools, which TensorRT's pooling layer cannot express, as a plain pool of the input's
dilation phases.

Along an axis with dilation d, output o reads the padded input at o·S + j·d (j < F): cells that all
share the phase r = o·S mod d. Split the padded input into its d phases (reshape [Q·d] to [Q, d],
phase first), pool every phase with the undilated window at stride 1, and output o is the phase-r
result at q = o·S div d: a gather. An average pools sums (a mean over the whole window times its
size) and divides by the counted cells, a constant of the static sizes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.ops.pool_windows import NOTHING, WHOLE, Window, onnx_output_sizes, onnx_pads
from loopc.backend.trt.ops.sampling import sampled_slice
from loopc.backend.trt.registry import unsupported
from loopc.ir import Node
from loopc.trt import trt


def tap_counts(window: Window, spatial: tuple[int, ...], counts: str) -> np.ndarray:
    """What each output's average divides by: its taps on the input (NOTHING) or on the padded input
    (PADDED); shape [1, 1, O1, ..., Ok]."""
    outs = onnx_output_sizes(window, spatial)
    begin, end = onnx_pads(window, spatial)
    total = np.ones((1, 1), np.float64)
    for o, i, f, s, d, b, a in zip(outs, spatial, window.kernel, window.strides, window.dilations, begin, end):
        taps = np.arange(o)[:, None] * s + np.arange(f)[None, :] * d  # padded coordinates
        low, high = (b, b + i) if counts == NOTHING else (0, b + i + a)
        total = np.multiply.outer(total, ((taps >= low) & (taps < high)).sum(axis=1).astype(np.float64))
    return total


def dilated_pool(ctx: ConversionContext, node: Node, x: Any, window: Window, kind: str, counts: str) -> Any:
    """``x`` [N, C, *spatial] (C and spatial static) pooled with ``window``'s dilations; MAX or AVERAGE."""
    shape = tuple(int(v) for v in x.shape)
    k = len(window.kernel)
    spatial = shape[2:]
    if -1 in shape[1:]:
        raise unsupported(node, f"dilations={list(window.dilations)} on a dynamic channel count or spatial size")
    outs = onnx_output_sizes(window, spatial)
    begin, _ = onnx_pads(window, spatial)
    # phase lengths: every kept window's last tap q + F - 1 must exist in each phase
    lengths = [(o - 1) * s // d + f for o, s, d, f in zip(outs, window.strides, window.dilations, window.kernel)]
    fill = None
    if kind == "MAX":
        fill = ctx.constant(np.array(-np.inf, np.float32), node, "low")
        fill = ctx.cast(fill, x.dtype, node, "low_typed")
    padded = sampled_slice(ctx, node, x, list(range(2, 2 + k)), [-b for b in begin],
                           [q * d for q, d in zip(lengths, window.dilations)], "FILL", fill)
    # [N, C, Q1, d1, ..., Qk, dk] -> [N, C, d1..dk, Q1..Qk] -> [N, C·d1···dk, Q1, ..., Qk]
    split = ctx.network.add_shuffle(padded)
    split.reshape_dims = (0, shape[1], *(v for q, d in zip(lengths, window.dilations) for v in (q, d)))
    split.zero_is_placeholder = True
    split.second_transpose = (0, 1, *(3 + 2 * i for i in range(k)), *(2 + 2 * i for i in range(k)))
    phases = ctx.reshape(ctx.out(split, node, "phases"), [0, shape[1] * math.prod(window.dilations), *lengths],
                         node, "phases_as_channels", zero_copies=True)
    layer = ctx.network.add_pooling_nd(phases, getattr(trt().PoolingType, kind), window.kernel)
    pooled = ctx.out(layer, node, "pool")
    # [N, C·d1···dk, U1, ..., Uk] -> [N, C, d1, U1, ..., dk, Uk] -> [N, C, d1·U1, ..., dk·Uk]
    units = [q - f + 1 for q, f in zip(lengths, window.kernel)]
    merge = ctx.network.add_shuffle(pooled)
    merge.reshape_dims = (0, shape[1], *window.dilations, *units)
    merge.zero_is_placeholder = True
    merge.second_transpose = (0, 1, *(v for i in range(k) for v in (2 + i, 2 + k + i)))
    y = ctx.reshape(ctx.out(merge, node, "unphase"), [0, shape[1], *(d * u for d, u in zip(window.dilations, units))],
                    node, "by_phase", zero_copies=True)
    for i, (o, s, d, u) in enumerate(zip(outs, window.strides, window.dilations, units)):
        starts = np.arange(o) * s
        index = ctx.constant((starts % d) * u + starts // d, node, f"taps{i}", np.int64)
        y = ctx.out(ctx.network.add_gather(y, index, 2 + i), node, f"pick{i}")
    if kind == "MAX" or counts == WHOLE:  # a max, or the mean of whole windows: what the pool gave
        return y
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = math.prod(window.kernel) / tap_counts(window, spatial, counts)
    factor = ctx.cast(ctx.constant(scale.astype(np.float32), node, "per_count"), x.dtype, node, "per_count_typed")
    return ctx.elementwise(y, factor, "PROD", node, "mean")

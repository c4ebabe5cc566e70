"""Ops whose output length depends on the data: NonZero and Compress.

Datacenter TensorRT has INonZeroLayer. TensorRT-RTX accepts the layer but its builder has no
kernel for it ("has no runners that implement it"), so there NonZero is lowered to layers it has:
a stable partition of the flat positions (non-zeros first, in order) by a cumulative sum and a
scatter, cut to the count of non-zeros — a slice whose size is data-dependent, which it builds
outside loops (inside a loop body its builder fails on any data-dependent shape).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.registry import converter, unsupported
from loopc.ir import Node
from loopc.trt import is_rtx, trt


def _iota(ctx: ConversionContext, node: Node, like: Any, suffix: str) -> Any:
    """0, 1, ..., n-1 (INT32) for a 1-D ``like`` of length n."""
    n = int(like.shape[0])
    if n != -1:
        return ctx.constant(np.arange(n, dtype=np.int32), node, suffix)
    layer = ctx.network.add_fill([0], trt().FillOperation.LINSPACE, trt().int32)
    layer.set_input(0, ctx.out(ctx.network.add_shape(like), node, f"{suffix}_n"))
    layer.set_input(1, ctx.constant(np.array(0, np.int32), node, f"{suffix}_alpha"))
    layer.set_input(2, ctx.constant(np.array([1], np.int32), node, f"{suffix}_beta"))
    return ctx.out(layer, node, suffix)


def _truth(ctx: ConversionContext, node: Node, x: Any) -> Any:
    """x != 0 as BOOL (NaN counts as non-zero, as in ONNX)."""
    if x.dtype == trt().bool:
        return x
    zero = ctx.scalar(0, x, node, "zero")
    return ctx.unary(ctx.elementwise(x, zero, "EQUAL", node, "is_zero"), "NOT", node, "non_zero")


def nonzero_positions(ctx: ConversionContext, node: Node, mask: Any) -> Any:
    """The positions where the 1-D BOOL ``mask`` is true, in order, as a 1-D INT32 tensor.

    With c = the inclusive running count of trues, position k goes to slot c[k] - 1 when true and
    to count + k - c[k] (after every true one, in order) when false: a permutation, so one scatter
    of k into those slots has no colliding writes. The first ``count`` slots are the answer.
    """
    T = trt()
    ones = ctx.cast(mask, T.int32, node, "ones")
    axis = ctx.constant(np.array(0, np.int32), node, "axis")
    running = ctx.out(ctx.network.add_cumulative(ones, axis, T.CumulativeOperation.SUM, False, False), node, "running")
    # The count is the running count's maximum (0 when empty), not the mask's sum: summed straight
    # from a static-shaped input, every layer on the way could compute a shape tensor, so TensorRT
    # takes the input for one and refuses it; after the cumulative layer the count is a data-dependent size.
    floor = ctx.constant(np.array([0], np.int32), node, "floor")
    padded = ctx.concat([floor, running], node, "running0")
    count = ctx.out(ctx.network.add_reduce(padded, T.ReduceOperation.MAX, 1, True), node, "count")
    k = _iota(ctx, node, mask, "position")
    taken = ctx.elementwise(running, ctx.constant(np.array([1], np.int32), node, "one"), "SUB", node, "taken_slot")
    left = ctx.elementwise(ctx.elementwise(count, k, "SUM", node, "count_k"), running, "SUB", node, "left_slot")
    slot = ctx.out(ctx.network.add_select(mask, taken, left), node, "slot")
    layer = ctx.network.add_scatter(k, slot, k, T.ScatterMode.ELEMENT)
    layer.axis = 0
    partition = ctx.out(layer, node, "partition")
    cut = ctx.network.add_slice(partition, [0], [1], [1])
    cut.set_input(2, ctx.cast(count, T.int64, node, "count64"))
    return ctx.out(cut, node, "positions")


def _strides(ctx: ConversionContext, node: Node, x: Any) -> tuple[Any, Any]:
    """Row-major strides and dims of ``x`` as [rank, 1] INT32 tensors."""
    shape = tuple(x.shape)
    rank = len(shape)
    if -1 not in shape:
        strides = [math.prod(shape[a + 1:]) for a in range(rank)]
        return (ctx.constant(np.array(strides, np.int32).reshape(rank, 1), node, "strides"),
                ctx.constant(np.array(shape, np.int32).reshape(rank, 1), node, "dims"))
    dims = ctx.cast(ctx.out(ctx.network.add_shape(x), node, "shape"), trt().int32, node, "dims32")
    parts = []
    for a in range(rank - 1):
        tail = ctx.gather1(dims, list(range(a + 1, rank)), node, f"tail{a}")
        parts.append(ctx.out(ctx.network.add_reduce(tail, trt().ReduceOperation.PROD, 1, True), node, f"stride{a}"))
    parts.append(ctx.constant(np.array([1], np.int32), node, f"stride{rank - 1}"))
    strides = ctx.concat(parts, node, "strides_flat")
    return ctx.reshape(strides, [rank, 1], node, "strides"), ctx.reshape(dims, [rank, 1], node, "dims")


@converter("NonZero")
def nonzero(ctx: ConversionContext, node: Node) -> None:
    """[rank, count] INT64 subscripts of the non-zero elements, in row-major order."""
    x = ctx.get(node.inputs[0], node)
    rank = len(x.shape)
    if rank == 0:
        raise unsupported(node, "NonZero of a 0-D tensor")
    if not is_rtx():
        found = ctx.out(ctx.network.add_non_zero(x), node, "found")
        ctx.set(node.outputs[0], ctx.out(ctx.network.add_cast(found, trt().int64), node))
        return
    flat = ctx.reshape(_truth(ctx, node, x), [-1], node, "flat")
    positions = ctx.reshape(nonzero_positions(ctx, node, flat), [1, -1], node, "row")
    strides, dims = _strides(ctx, node, x)
    q = ctx.elementwise(positions, strides, "FLOOR_DIV", node, "quotient")  # [rank, count]
    wraps = ctx.elementwise(ctx.elementwise(q, dims, "FLOOR_DIV", node, "wraps"), dims, "PROD", node, "wrapped")
    coords = ctx.elementwise(q, wraps, "SUB", node, "coords")
    ctx.set(node.outputs[0], ctx.out(ctx.network.add_cast(coords, trt().int64), node))


@converter("Compress")
def compress(ctx: ConversionContext, node: Node) -> None:
    """The slices along ``axis`` (of the flattened input without one) where the condition holds."""
    x, condition = (ctx.get(v, node) for v in node.inputs)
    if "axis" in node.attrs:
        axis = int(node.attrs["axis"]) % len(x.shape)
    else:
        x, axis = ctx.reshape(x, [-1], node, "flat"), 0
    picked = nonzero_positions(ctx, node, ctx.reshape(condition, [-1], node, "condition"))
    ctx.set(node.outputs[0], ctx.out(ctx.network.add_gather(x, picked, axis), node))

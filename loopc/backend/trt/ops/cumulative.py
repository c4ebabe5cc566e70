"""CumProd as a TensorRT loop: TensorRT's cumulative layer sums only.

The loop iterates over the axis (backwards for ``reverse``), carries the running product from a
recurrence of ones, and concatenates each step's product (``exclusive``: the product before the
step) along the axis, in reverse order for ``reverse``. Products are exact in the element type, in
the order the spec states; a logarithm/exponent or matrix form would not be (signs, zeros,
integers). An axis known only when the engine runs takes one loop per possible axis and a Select
on the axis's value: a TensorRT iterator's axis is fixed when the network is built.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext, np_dtype
from loopc.backend.trt.ops.elementwise import wrap_around
from loopc.backend.trt.registry import converter, node_error
from loopc.ir import Node
from loopc.semantics.attributes import attr
from loopc.trt import trt


def product_scan(ctx: ConversionContext, node: Node, x: Any, axis: int, exclusive: bool, reverse: bool,
                 suffix: str) -> Any:
    """The cumulative product of ``x`` along a known ``axis``, as one ILoop."""
    T = trt()
    loop = ctx.network.add_loop()
    length = _axis_length(ctx, node, x, axis, suffix)
    ctx.named(loop.add_trip_limit(length, T.TripLimit.COUNT), node, f"{suffix}count")
    step = ctx.out(loop.add_iterator(x, axis, reverse), node, f"{suffix}step")
    running = ctx.named(loop.add_recurrence(_ones(ctx, node, x, axis, suffix)), node, f"{suffix}running")
    product = ctx.elementwise(running.get_output(0), step, "PROD", node, f"{suffix}product")
    running.set_input(1, product)
    kind = T.LoopOutput.REVERSE if reverse else T.LoopOutput.CONCATENATE
    output = loop.add_loop_output(running.get_output(0) if exclusive else product, kind, axis)
    output.set_input(1, length)
    return ctx.out(output, node, suffix.rstrip("/") if suffix else "")


def _axis_length(ctx: ConversionContext, node: Node, x: Any, axis: int, suffix: str) -> Any:
    """The trip count: ``x``'s extent on ``axis`` as a 0-D INT32 tensor."""
    n = int(x.shape[axis])
    if n != -1:
        return ctx.constant(np.array(n, np.int32), node, f"{suffix}length")
    extent = ctx.gather1(ctx.shape_of(x, node, f"{suffix}shape"), [axis], node, f"{suffix}extent")
    return ctx.scalar0d(ctx.cast(extent, trt().int32, node, f"{suffix}extent32"), node, f"{suffix}length")


def _ones(ctx: ConversionContext, node: Node, x: Any, axis: int, suffix: str) -> Any:
    """Ones shaped like one step of ``x`` (``x`` without ``axis``): the product of no elements."""
    T = trt()
    shape = [int(d) for i, d in enumerate(x.shape) if i != axis]
    if -1 not in shape:
        return ctx.constant(np.ones(shape, np_dtype(x.dtype)), node, f"{suffix}ones")
    drawn = T.float32 if np_dtype(x.dtype).kind == "f" else T.int64
    layer = ctx.network.add_fill([0] * len(shape), T.FillOperation.LINSPACE, drawn)
    kept = [i for i in range(len(x.shape)) if i != axis]
    layer.set_input(0, ctx.gather1(ctx.shape_of(x, node, f"{suffix}shape"), kept, node, f"{suffix}step_shape"))
    layer.set_input(1, ctx.constant(np.array(1, np_dtype(drawn)), node, f"{suffix}one"))
    layer.set_input(2, ctx.constant(np.zeros(len(shape), np_dtype(drawn)), node, f"{suffix}no_slope"))
    return ctx.cast(ctx.out(layer, node, f"{suffix}ones"), x.dtype, node, f"{suffix}ones_cast")


def axis_is(ctx: ConversionContext, node: Node, axis: Any, k: int, rank: int) -> Any:
    """``axis == k`` for an INT64 axis in [-rank, rank) shaped [1]*rank, as a bool tensor of that shape
    (choosing among results built for each axis, when the axis is known only at run time)."""
    hit = ctx.elementwise(axis, ctx.constant(np.full([1] * rank, k, np.int64), node, f"axis{k}"), "EQUAL", node,
                          f"is_axis{k}")
    wrapped = ctx.elementwise(axis, ctx.constant(np.full([1] * rank, k - rank, np.int64), node, f"axis{k - rank}"),
                              "EQUAL", node, f"is_axis{k - rank}")
    return ctx.elementwise(hit, wrapped, "OR", node, f"axis_is{k}")


@converter("CumProd")
def cumprod(ctx: ConversionContext, node: Node) -> None:
    x = ctx.get(node.inputs[0], node)
    rank = len(x.shape)
    if rank == 0:
        raise node_error(node, "CumProd needs an input of rank 1 or more")
    exclusive, reverse = bool(attr(node, "exclusive")), bool(attr(node, "reverse"))
    unsigned32 = node.inputs[0] is not None and node.inputs[0].dtype == np.dtype(np.uint32)
    known = ctx.constant_of(node.inputs[1])
    if known is not None or rank == 1:  # a rank-1 input has one axis, whatever the value
        axis = int(np.asarray(known).reshape(-1)[0]) % rank if known is not None else 0
        result = product_scan(ctx, node, x, axis, exclusive, reverse, "wide/" if unsigned32 else "")
        # uint32 is carried in INT64: its products wrap around to 32 bits, as ONNX's uint32 does
        ctx.set(node.outputs[0], wrap_around(ctx, result, 32, False, node) if unsigned32 else result)
        return
    axis_t = ctx.get(node.inputs[1], node)
    axis_nd = ctx.reshape(ctx.cast(axis_t, trt().int64, node, "axis64"), [1] * rank, node, "axis_nd")
    result = product_scan(ctx, node, x, rank - 1, exclusive, reverse, f"axis{rank - 1}/")
    for k in reversed(range(rank - 1)):
        scan = product_scan(ctx, node, x, k, exclusive, reverse, f"axis{k}/")
        chosen = axis_is(ctx, node, axis_nd, k, rank)
        result = ctx.out(ctx.network.add_select(chosen, scan, result), node,
                         "" if k == 0 and not unsigned32 else f"select{k}")
    ctx.set(node.outputs[0], wrap_around(ctx, result, 32, False, node) if unsigned32 else result)

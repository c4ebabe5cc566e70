"""Ops that reduce along axes: Reduce*, GlobalAveragePool/GlobalMaxPool, Softmax, LogSoftmax,
ArgMax/ArgMin, TopK, CumSum. Axes arrive as inputs in the newest opsets; TensorRT's reduce layer takes
them when the network is built, so a computed axes input of Reduce* becomes a reduction of each axis
over all of it or none of it (:mod:`loopc.backend.trt.ops.run_time_axes`); the other ops need constant
ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.ops.run_time_axes import axes_count, axis_flags, split_dims, squeezed_dims
from loopc.backend.trt.registry import converter, node_error, unsupported
from loopc.ir import Node, Value
from loopc.semantics.attributes import attr
from loopc.trt import trt

_REDUCE = {"ReduceSum": "SUM", "ReduceMean": "AVG", "ReduceMax": "MAX", "ReduceMin": "MIN", "ReduceProd": "PROD",
           "ReduceSumSquare": "SUM", "ReduceL2": "SUM", "ReduceL1": "SUM", "ReduceLogSumExp": "SUM",
           "ReduceLogSum": "SUM"}
#: How many axes one reduce layer takes when the axes are computed: each is viewed as two dims, and the
#: dims before and after them as one each, within TensorRT's eight.
_AXES_PER_PASS = 3
#: What follows the sum (a root or logarithm).
_POST = {"ReduceL2": "SQRT", "ReduceLogSumExp": "LOG", "ReduceLogSum": "LOG"}


def const_ints(ctx: ConversionContext, node: Node, value: Value | None, what: str) -> list[int] | None:
    """A constant integer input as a list (``None`` when absent); a computed one is unsupported."""
    if value is None:
        return None
    array = ctx.constant_of(value)
    if array is None:
        raise unsupported(node, f"a computed {what} input")
    return [int(v) for v in array.reshape(-1)]


def mask(axes: list[int], rank: int) -> int:
    bits = 0
    for a in axes:
        bits |= 1 << (a % rank)
    return bits


@converter(*_REDUCE)
def reduce(ctx: ConversionContext, node: Node) -> None:
    x = ctx.get(node.inputs[0], node)
    rank = len(x.shape)
    keep = bool(attr(node, "keepdims"))
    axes_v = node.inputs[1] if len(node.inputs) > 1 else None
    if axes_v is not None and ctx.constant_of(axes_v) is None and axes_count(ctx, node, axes_v):
        if rank == 0:
            raise unsupported(node, "computed axes of a rank-0 input (it has no axis to reduce)")
        if node.op == "ReduceLogSumExp":
            ctx.set(node.outputs[0], _log_sum_exp(
                ctx, node, x, lambda t, op, kept: _reduce_run_time_axes(ctx, node, t, axes_v, kept, op), keep))
            return
        ctx.set(node.outputs[0], _finished(ctx, node, _reduce_run_time_axes(ctx, node, _prepared(ctx, node, x),
                                                                            axes_v, keep), x))
        return
    axes = [] if axes_v is not None and ctx.constant_of(axes_v) is None else const_ints(ctx, node, axes_v, "axes")
    if axes is None and "axes" in node.attrs:  # tolerate the pre-18 attribute form
        axes = [int(a) for a in node.attrs["axes"]]
    if not axes:
        if attr(node, "noop_with_empty_axes"):
            ctx.set(node.outputs[0], ctx.out(ctx.network.add_identity(x), node))
            return
        axes = list(range(rank))
    if node.op == "ReduceLogSumExp" and rank:
        def over(t: Any, op: str, kept: bool) -> Any:
            return ctx.out(ctx.network.add_reduce(t, getattr(trt().ReduceOperation, op), mask(axes, rank), kept),
                           node, f"{op.lower()}{'_kept' if kept else ''}")

        ctx.set(node.outputs[0], _log_sum_exp(ctx, node, x, over, keep))
        return
    prepared = _prepared(ctx, node, x)
    suffix = "reduce" if node.op in _POST or x.dtype == trt().bool else ""
    if rank == 0:
        y = ctx.out(ctx.network.add_identity(prepared), node, suffix)
    else:
        op = getattr(trt().ReduceOperation, _REDUCE[node.op])
        y = ctx.out(ctx.network.add_reduce(prepared, op, mask(axes, rank), keep), node, suffix)
    ctx.set(node.outputs[0], _finished(ctx, node, y, x))


def _prepared(ctx: ConversionContext, node: Node, x: Any) -> Any:
    """What the reduction runs on: the squares, magnitudes or exponentials, or booleans as INT32
    (TensorRT reduces no BOOL)."""
    if node.op in ("ReduceSumSquare", "ReduceL2"):
        return ctx.elementwise(x, x, "PROD", node, "square")
    if node.op == "ReduceL1":
        return ctx.unary(x, "ABS", node, "abs")
    if node.op == "ReduceLogSumExp":
        return ctx.unary(x, "EXP", node, "exp")
    if x.dtype == trt().bool:
        return ctx.cast(x, trt().int32, node, "as_int")
    return x


def _log_sum_exp(ctx: ConversionContext, node: Node, x: Any, over: Callable[[Any, str, bool], Any], keep: bool) -> Any:
    """log(sum(exp(x))) as m + log(sum(exp(x - m))), m the max over the axes (0 where it is not finite), in
    float32, as ONNX's reference computes it: exp then overflows for no finite input, and a half input's sum
    does not overflow where its logarithm is finite (65,536 zeros sum to 65,536, past float16's 65,504).
    ``over(t, op, keep)`` reduces ``t`` over the node's axes."""
    T = trt()
    wide = x if x.dtype == T.float32 else ctx.cast(x, T.float32, node, "wide")
    top = over(wide, "MAX", True)
    endless = ctx.elementwise(ctx.unary(top, "ISINF", node, "max_inf"), ctx.unary(top, "ISNAN", node, "max_nan"), "OR",
                              node, "max_not_finite")
    zero = ctx.constant(np.zeros([1] * len(top.shape), np.float32), node, "no_shift")
    shift = ctx.out(ctx.network.add_select(endless, zero, top), node, "shift")
    exp = ctx.unary(ctx.elementwise(wide, shift, "SUB", node, "shifted"), "EXP", node, "exp")
    y = ctx.elementwise(ctx.unary(over(exp, "SUM", keep), "LOG", node, "log_sum"), over(shift, "MAX", keep), "SUM",
                        node, "wide_result" if x.dtype != T.float32 else "")
    return y if x.dtype == T.float32 else ctx.cast(y, x.dtype, node)


def _finished(ctx: ConversionContext, node: Node, y: Any, x: Any) -> Any:
    """The reduction's result as the op gives it: a root or logarithm, booleans back, or as it is."""
    if node.op in _POST:
        return ctx.unary(y, _POST[node.op], node)
    if x.dtype == trt().bool:  # positive is true: an empty max is INT32's least value, which must be false
        return ctx.elementwise(y, ctx.scalar(0, y, node, "false"), "GREATER", node)
    return y


def _reduce_run_time_axes(ctx: ConversionContext, node: Node, x: Any, axes_v: Value, keep: bool,
                          op: str | None = None) -> Any:
    """Each axis of ``x`` split in two, (1, n) when the axes name it, else (n, 1), and the second parts
    reduced by a reduce layer whose axes are fixed: all of an axis, or a unit one (nothing). The tensor is
    viewed (a reshape, which moves no data) as [before, kept_a, reduced_a, kept_b, reduced_b, ..., after]
    for up to three axes at a time, within TensorRT's eight dims; unit axes need no reduction. A mean is
    the sum divided once by the reduced volume (means of means would round integers twice). See
    :mod:`loopc.backend.trt.ops.run_time_axes`."""
    rank = len(x.shape)
    flags = axis_flags(ctx, node, axes_v, rank)
    dims = ctx.shape_of(x, node, "dims")
    kept, reduced = split_dims(ctx, node, dims, flags)
    op = op or _REDUCE[node.op]
    step = getattr(trt().ReduceOperation, "SUM" if op == "AVG" else op)
    y = x
    wide = [d for d in range(rank) if x.shape[d] != 1]  # the dims between two of them are ones
    for k in range(0, len(wide), _AXES_PER_PASS):
        part = wide[k:k + _AXES_PER_PASS]
        pairs = [ctx.gather1(which, [d], node, f"{name}{d}") for d in part for which, name in ((kept, "kept"),
                                                                                              (reduced, "reduced"))]
        view = ctx.concat([_volume(ctx, node, kept, list(range(part[0])), f"before{k}"), *pairs,
                           _volume(ctx, node, dims, list(range(part[-1] + 1, rank)), f"after{k}")], node, f"view{k}")
        split = ctx.reshape(y, view, node, f"split{k}")
        y = ctx.out(ctx.network.add_reduce(split, step, sum(1 << (2 + 2 * i) for i in range(len(part))), False),
                    node, f"reduce{k}")
    count = axes_count(ctx, node, axes_v)
    y = ctx.reshape(y, kept if keep else squeezed_dims(ctx, node, dims, flags, count), node, "reduced")
    if op == "AVG":
        volume = ctx.cast(_volume(ctx, node, reduced, list(range(rank)), "volume"), y.dtype, node, "volume_cast")
        y = ctx.elementwise(y, ctx.reshape(volume, [1] * len(y.shape), node, "volume_nd"), "DIV", node, "mean")
    return y


def _volume(ctx: ConversionContext, node: Node, dims: Any, indices: list[int], suffix: str) -> Any:
    """The product of ``dims`` at ``indices`` (1 for none), as a [1] INT64 tensor."""
    if not indices:
        return ctx.constant(np.array([1], np.int64), node, suffix)
    picked = ctx.gather1(dims, indices, node, f"{suffix}_dims")
    return ctx.out(ctx.network.add_reduce(picked, trt().ReduceOperation.PROD, 1, True), node, suffix)


@converter("GlobalAveragePool", "GlobalMaxPool")
def global_pool(ctx: ConversionContext, node: Node) -> None:
    """Mean or max over the spatial axes (all after [N, C]), kept as ones."""
    x = ctx.get(node.inputs[0], node)
    rank = len(x.shape)
    if rank < 3:
        raise unsupported(node, f"{node.op} of a rank-{rank} input (it needs [N, C, D1, ...])")
    op = trt().ReduceOperation.AVG if node.op == "GlobalAveragePool" else trt().ReduceOperation.MAX
    ctx.set(node.outputs[0], ctx.out(ctx.network.add_reduce(x, op, mask(list(range(2, rank)), rank), True), node))


@converter("Softmax", "LogSoftmax")
def softmax(ctx: ConversionContext, node: Node) -> None:
    x = ctx.get(node.inputs[0], node)
    vector = len(x.shape) == 1  # TensorRT's softmax wants two dims or more: run it on [1, n]
    if vector:
        x = ctx.unsqueeze(x, [0], node, "as2d")
    layer = ctx.network.add_softmax(x)
    layer.axes = mask([int(attr(node, "axis")) % len(x.shape) if not vector else 1], len(x.shape))
    y = ctx.out(layer, node, "softmax" if node.op == "LogSoftmax" or vector else "")
    if vector:
        y = ctx.squeeze(y, [0], node, "" if node.op == "Softmax" else "softmax1d")
    if node.op == "LogSoftmax":
        y = ctx.unary(y, "LOG", node)
    ctx.set(node.outputs[0], y)


def topk(ctx: ConversionContext, node: Node, x: Any, k: int | Any, axis: int, largest: bool) -> tuple[Any, Any]:
    """TensorRT TopK (sorted; ties keep the lower index); ``k`` is an int or a 0-D tensor."""
    T = trt()
    if len(x.shape) == 1:  # TensorRT's TopK wants two dims or more: run it on [1, n]
        values, idx = topk(ctx, node, ctx.unsqueeze(x, [0], node, "as2d"), k, 1, largest)
        return ctx.squeeze(values, [0], node, "values1d"), ctx.squeeze(idx, [0], node, "indices1d")
    op = T.TopKOperation.MAX if largest else T.TopKOperation.MIN
    static_k = k if isinstance(k, int) else 1
    if isinstance(k, int):
        layer = ctx.named(ctx.network.add_topk(x, op, static_k, mask([axis], len(x.shape))), node, "topk")
    else:  # TensorRT-RTX's builder (Myelin) expects INT64 indices from a TopK with a computed k
        layer = ctx.named(ctx.network.add_topk(x, op, static_k, mask([axis], len(x.shape)), T.int64), node, "topk")
    if not isinstance(k, int):
        layer.set_input(1, ctx.cast(ctx.scalar0d(k, node, "k0d"), T.int32, node, "k32"))
    return layer.get_output(0), layer.get_output(1)


@converter("ArgMax", "ArgMin")
def argmax(ctx: ConversionContext, node: Node) -> None:
    """TopK with k = 1, whose index is the first extreme's. select_last_index = 1 runs it on the input
    reversed along the axis (a slice of stride -1) and maps the index i back to d - 1 - i."""
    x = ctx.get(node.inputs[0], node)
    axis = int(attr(node, "axis")) % max(len(x.shape), 1)
    last = bool(attr(node, "select_last_index")) and len(x.shape) > 0
    if last:
        x, top = _reversed(ctx, node, x, axis)
    _, idx = topk(ctx, node, x, 1, axis, node.op == "ArgMax")
    idx = ctx.cast(idx, trt().int64, node, "index64" if last else "")
    if last:
        idx = ctx.elementwise(top, idx, "SUB", node, "from_end")
    if not bool(attr(node, "keepdims")):
        idx = ctx.squeeze(idx, [axis], node, "squeeze")
    ctx.set(node.outputs[0], idx)


def _reversed(ctx: ConversionContext, node: Node, x: Any, axis: int) -> tuple[Any, Any]:
    """``x`` reversed along ``axis`` (a slice from d - 1 with stride -1), and d - 1 as an INT64 tensor
    of ``x``'s rank, every dim 1, for d the axis length."""
    shape = tuple(x.shape)
    rank = len(shape)
    if -1 not in shape:
        d = shape[axis]
        start, stride = [0] * rank, [1] * rank
        start[axis], stride[axis] = d - 1, -1
        flipped = ctx.out(ctx.network.add_slice(x, start, shape, stride), node, "reverse")
        return flipped, ctx.constant(np.full((1,) * rank, d - 1, np.int64), node, "last")
    dim = ctx.gather1(ctx.shape_of(x, node), [axis], node, "dim")
    top = ctx.elementwise(dim, ctx.constant(np.array([1], np.int64), node, "one"), "SUB", node, "dim_1")
    layer = ctx.network.add_slice(x, [0], [1], [1])
    for index, tensor in ((1, top), (2, dim), (3, ctx.constant(np.array([-1], np.int64), node, "stride")),
                          (5, ctx.constant(np.array([axis], np.int64), node, "axis"))):
        layer.set_input(index, tensor)
    return ctx.out(layer, node, "reverse"), ctx.reshape(top, [1] * rank, node, "last")


@converter("TopK")
def topk_op(ctx: ConversionContext, node: Node) -> None:
    x = ctx.get(node.inputs[0], node)
    axis = int(attr(node, "axis")) % len(x.shape)
    known = ctx.constant_of(node.inputs[1])
    k: int | Any = int(known.reshape(-1)[0]) if known is not None else ctx.get(node.inputs[1], node)
    values, idx = topk(ctx, node, x, k, axis, bool(attr(node, "largest")))
    ctx.set(node.outputs[0], ctx.out(ctx.network.add_identity(values), node, "values"))
    if len(node.outputs) > 1:
        ctx.set(node.outputs[1], ctx.cast(idx, trt().int64, node, "indices"))


@converter("CumSum")
def cumsum(ctx: ConversionContext, node: Node) -> None:
    """ICumulativeLayer reads its axis from a 0-D INT32 tensor: a constant when the axis is known, else the
    computed one (a shape tensor, so TensorRT knows it per profile; negative axes count from the end)."""
    x = ctx.get(node.inputs[0], node)
    if len(node.inputs) < 2 or node.inputs[1] is None:
        raise node_error(node, "CumSum needs its axis input (one integer)")
    known = ctx.constant_of(node.inputs[1])
    if known is not None:
        if known.size != 1:
            raise node_error(node, f"CumSum's axis input holds {known.size} values; it must hold one integer")
        axis_t = ctx.constant(np.array(int(known.reshape(-1)[0]) % len(x.shape), np.int32), node, "axis")
    else:
        axis = ctx.get(node.inputs[1], node)
        if tuple(axis.shape) not in ((), (1,)):
            raise node_error(node, f"CumSum's axis input has shape {tuple(axis.shape)}; it must be one integer")
        axis_t = ctx.cast(ctx.scalar0d(axis, node, "axis0d"), trt().int32, node, "axis")
    layer = ctx.network.add_cumulative(x, axis_t, trt().CumulativeOperation.SUM,
                                       bool(attr(node, "exclusive")), bool(attr(node, "reverse")))
    ctx.set(node.outputs[0], ctx.out(layer, node))


@converter("Hardmax")
def hardmax(ctx: ConversionContext, node: Node) -> None:
    """1 at the first maximum along ``axis``, 0 elsewhere: the maxima (x == max) that are the first
    along the axis (their running count is 1). No index arithmetic, so the axis may be dynamic."""
    x = ctx.get(node.inputs[0], node)
    rank = len(x.shape)
    axis = int(attr(node, "axis")) % rank
    top = ctx.out(ctx.network.add_reduce(x, trt().ReduceOperation.MAX, mask([axis], rank), True), node, "max")
    is_max = ctx.elementwise(x, top, "EQUAL", node, "is_max")
    counts = ctx.cast(is_max, trt().int32, node, "is_max_int")
    axis_t = ctx.constant(np.array(axis, np.int32), node, "axis")
    running = ctx.out(ctx.network.add_cumulative(counts, axis_t, trt().CumulativeOperation.SUM, False, False),
                      node, "running")
    first = ctx.elementwise(running, ctx.constant(np.ones((1,) * rank, np.int32), node, "one"), "EQUAL", node,
                            "first")
    ctx.set(node.outputs[0], ctx.cast(ctx.elementwise(is_max, first, "AND", node, "first_max"), x.dtype, node))

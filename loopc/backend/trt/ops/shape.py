"""Ops that move data or compute shapes: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Expand,
Shape, Size, Concat, Split, Slice.

Static shapes give static layers; dynamic dims are computed at run time with INT64 shape tensors
(IShapeLayer plus elementwise arithmetic), which TensorRT resolves when it builds the profile.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.ops.linalg import read_through
from loopc.backend.trt.ops.reduce import const_ints
from loopc.backend.trt.ops.run_time_axes import axes_count, axis_flags, squeezed_dims, unsqueezed_dims
from loopc.backend.trt.registry import converter, unsupported
from loopc.ir import Node, Value
from loopc.semantics.attributes import attr
from loopc.trt import trt

#: Static ints, told from a tensor by being a list or a tuple.
Ints = list[int] | tuple[int, ...]
#: Slice bounds beyond this are clamped first, so that later shape arithmetic cannot overflow.
_BIG = 2**62


def _tensor(ctx: ConversionContext, node: Node, v: Ints | Any, suffix: str) -> Any:
    if isinstance(v, (list, tuple)):
        return ctx.constant(np.array(v, np.int64), node, suffix)
    return v


def slice_axes(ctx: ConversionContext, node: Node, x: Any, axes: Ints | Any, start: Ints | Any, size: Ints | Any,
               stride: Ints | Any, suffix: str = "") -> Any:
    """ISliceLayer over ``axes`` only; each parameter is a list of ints or a 1-D INT64 tensor (computed
    axes must lie in [0, rank): see :func:`computed_axes`)."""
    shape = tuple(x.shape)
    rank = len(shape)
    if not isinstance(axes, (list, tuple)):
        n = int(axes.shape[0])
        layer = ctx.network.add_slice(x, [0] * n, [1] * n, [1] * n)
        for index, value, what in ((1, start, "start"), (2, size, "size"), (3, stride, "stride")):
            layer.set_input(index, _tensor(ctx, node, value, f"{suffix or 'slice'}_{what}"))
        layer.set_input(5, axes)
        return ctx.out(layer, node, suffix)
    axes = [a % rank for a in axes]
    static = all(isinstance(p, (list, tuple)) for p in (start, size, stride))
    others_static = all(shape[i] != -1 for i in range(rank) if i not in axes)
    if static and others_static:
        full_start, full_size, full_stride = [0] * rank, list(shape), [1] * rank
        for a, s, n, st in zip(axes, start, size, stride):
            full_start[a], full_size[a], full_stride[a] = s, n, st
        return ctx.out(ctx.network.add_slice(x, full_start, full_size, full_stride), node, suffix)
    n = len(axes)
    layer = ctx.network.add_slice(x, [0] * n, [1] * n, [1] * n)
    layer.set_input(1, _tensor(ctx, node, start, f"{suffix or 'slice'}_start"))
    layer.set_input(2, _tensor(ctx, node, size, f"{suffix or 'slice'}_size"))
    layer.set_input(3, _tensor(ctx, node, stride, f"{suffix or 'slice'}_stride"))
    if axes != list(range(rank)):
        layer.set_input(5, ctx.constant(np.array(axes, np.int64), node, f"{suffix or 'slice'}_axes"))
    return ctx.out(layer, node, suffix)


def computed_axes(ctx: ConversionContext, node: Node, value: Value, rank: int, suffix: str = "axes") -> Any:
    """A computed axes input as a 1-D INT64 shape tensor in [0, rank) (a negative axis counts from the end):
    TensorRT reads it when it builds the profile, as ISliceLayer's axes input."""
    axes = ctx.cast(ctx.get(value, node), trt().int64, node, f"{suffix}_i64")
    if len(axes.shape) != 1:
        raise unsupported(node, f"a computed {suffix} input of rank {len(axes.shape)} (it must be 1-D)")
    negative = ctx.elementwise(axes, _ones(ctx, node, 0, f"{suffix}_zero"), "LESS", node, f"{suffix}_negative")
    wrapped = ctx.elementwise(axes, _ones(ctx, node, rank, f"{suffix}_rank"), "SUM", node, f"{suffix}_wrapped")
    return ctx.out(ctx.network.add_select(negative, wrapped, axes), node, suffix)


def _ones(ctx: ConversionContext, node: Node, value: int, suffix: str) -> Any:
    """``value`` as a [1] INT64 constant (it broadcasts against any 1-D shape tensor)."""
    return ctx.constant(np.array([value], np.int64), node, suffix)


def broadcast_to(ctx: ConversionContext, node: Node, x: Any, target: Ints | Any, suffix: str = "") -> Any:
    """NumPy broadcast of ``x`` against ``target`` (ints or a 1-D INT64 tensor): a slice with stride 0
    on the unit axes that grow."""
    n = len(target) if isinstance(target, (list, tuple)) else int(target.shape[0])
    rank = max(n, len(x.shape))
    x = ctx.to_rank(x, rank, node, "lift")
    shape = tuple(x.shape)
    if isinstance(target, (list, tuple)):
        target = [1] * (rank - n) + list(target)
        if -1 not in shape:
            out = list(np.broadcast_shapes(shape, tuple(target)))
            stride = [1 if d == o else 0 for d, o in zip(shape, out)]
            return ctx.out(ctx.network.add_slice(x, [0] * rank, out, stride), node, suffix)
    if rank > n:
        ones = ctx.constant(np.ones(rank - n, np.int64), node, "lead")
        target = ctx.concat([ones, _tensor(ctx, node, target, "target")], node, "target_full")
    target_t = _tensor(ctx, node, target, "target")
    have = ctx.shape_of(x, node, "have")
    one = ctx.constant(np.ones(rank, np.int64), node, "ones")
    # A unit axis takes the target's size, 0 included; others keep theirs: max(have, target) * min(have, target, 1)
    # (a broadcast has have == target, have == 1 or target == 1). Not a select on have == 1: TensorRT-RTX's builder
    # crashes on a loop whose shapes depend on a comparison of dims.
    low = ctx.elementwise(ctx.elementwise(have, target_t, "MIN", node, "low"), one, "MIN", node, "nonzero")
    out = ctx.elementwise(ctx.elementwise(have, target_t, "MAX", node, "high"), low, "PROD", node, "out_shape")
    # stride 1 where the input already has the size, 0 where a unit axis grows: max(min(d - 1, 1), 0)
    stride = ctx.elementwise(ctx.elementwise(have, one, "SUB", node, "d_minus_1"), one, "MIN", node, "min1")
    stride = ctx.elementwise(stride, ctx.constant(np.zeros(rank, np.int64), node, "zeros"), "MAX", node, "stride")
    return slice_axes(ctx, node, x, list(range(rank)), [0] * rank, out, stride, suffix)


@converter("Reshape")
def reshape(ctx: ConversionContext, node: Node) -> None:
    """A 0 in the target copies the input dim unless allowzero; one -1 is inferred (TensorRT does the same)."""
    x = ctx.get(node.inputs[0], node)
    zero_copies = not attr(node, "allowzero")
    known = ctx.constant_of(node.inputs[1])
    target: Any = [int(d) for d in known.reshape(-1)] if known is not None else ctx.get(node.inputs[1], node)
    ctx.set(node.outputs[0], ctx.reshape(x, target, node, "", zero_copies))


@converter("Flatten")
def flatten(ctx: ConversionContext, node: Node) -> None:
    x = ctx.get(node.inputs[0], node)
    shape = tuple(x.shape)
    axis = int(attr(node, "axis"))
    axis = axis + len(shape) if axis < 0 else axis
    left, right = shape[:axis], shape[axis:]
    if -1 not in left:
        dims: Any = [math.prod(left), -1]
    elif -1 not in right:
        dims = [-1, math.prod(right)]
    else:
        lead = ctx.gather1(ctx.shape_of(x, node), list(range(axis)), node, "left")
        prod = ctx.out(ctx.network.add_reduce(lead, trt().ReduceOperation.PROD, 1, True), node, "left_volume")
        dims = ctx.concat([prod, ctx.constant(np.array([-1], np.int64), node, "rest")], node, "dims")
    ctx.set(node.outputs[0], ctx.reshape(x, dims, node, ""))


@converter("Squeeze")
def squeeze(ctx: ConversionContext, node: Node) -> None:
    x = ctx.get(node.inputs[0], node)
    axes_v = node.inputs[1] if len(node.inputs) > 1 else None
    if axes_v is not None and ctx.constant_of(axes_v) is None:
        ctx.set(node.outputs[0], _squeeze_run_time_axes(ctx, node, x, axes_v))
        return
    axes = const_ints(ctx, node, axes_v, "axes")
    if axes is None:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    y = ctx.squeeze(x, axes, node, "") if axes else ctx.out(ctx.network.add_identity(x), node)
    ctx.set(node.outputs[0], y)


def _squeeze_run_time_axes(ctx: ConversionContext, node: Node, x: Any, axes_v: Value) -> Any:
    """A reshape to the dims the axes leave (see :mod:`loopc.backend.trt.ops.run_time_axes`)."""
    count = axes_count(ctx, node, axes_v)
    if count == 0:
        if any(d in (1, -1) for d in x.shape):
            raise unsupported(node, "an empty computed axes input of Squeeze (onnxruntime then squeezes every "
                                    "dim of length 1, ONNX's reference none)", hint="leave the axes input out")
        return ctx.out(ctx.network.add_identity(x), node)
    rank = len(x.shape)
    dims = ctx.shape_of(x, node, "dims")
    flags = axis_flags(ctx, node, axes_v, rank, dims)
    return ctx.reshape(x, squeezed_dims(ctx, node, dims, flags, count), node, "")


@converter("Unsqueeze")
def unsqueeze(ctx: ConversionContext, node: Node) -> None:
    x = ctx.get(node.inputs[0], node)
    axes_v = node.inputs[1]
    if axes_v is not None and ctx.constant_of(axes_v) is None:
        ctx.set(node.outputs[0], _unsqueeze_run_time_axes(ctx, node, x, axes_v))
        return
    axes = const_ints(ctx, node, axes_v, "axes") or []
    y = ctx.unsqueeze(x, axes, node, "") if axes else ctx.out(ctx.network.add_identity(x), node)  # tf2onnx's einsum
    ctx.set(node.outputs[0], y)


def _unsqueeze_run_time_axes(ctx: ConversionContext, node: Node, x: Any, axes_v: Value) -> Any:
    """A reshape to the dims with ones where the axes say (see :mod:`loopc.backend.trt.ops.run_time_axes`)."""
    count = axes_count(ctx, node, axes_v)
    rank = len(x.shape) + count
    if count == 0:
        return ctx.out(ctx.network.add_identity(x), node)
    flags = axis_flags(ctx, node, axes_v, rank)
    if rank == count:  # a scalar: every axis is a new one
        return ctx.reshape(x, [1] * rank, node, "")
    return ctx.reshape(x, unsqueezed_dims(ctx, node, ctx.shape_of(x, node, "dims"), flags), node, "")


@converter("Transpose")
def transpose(ctx: ConversionContext, node: Node) -> None:
    """A shuffle, unless every reader is a product that reads the operand transposed: then no layer at all."""
    if read_through(node):
        return
    x = ctx.get(node.inputs[0], node)
    rank = len(x.shape)
    perm = [int(p) % rank for p in node.attrs.get("perm", list(range(rank))[::-1])]
    layer = ctx.network.add_shuffle(x)
    layer.first_transpose = tuple(perm)
    ctx.set(node.outputs[0], ctx.out(layer, node))


@converter("Expand")
def expand(ctx: ConversionContext, node: Node) -> None:
    x = ctx.get(node.inputs[0], node)
    known = ctx.constant_of(node.inputs[1])
    target: Any = [int(d) for d in known.reshape(-1)] if known is not None else ctx.get(node.inputs[1], node)
    ctx.set(node.outputs[0], broadcast_to(ctx, node, x, target))


@converter("Shape")
def shape_op(ctx: ConversionContext, node: Node) -> None:
    """A constant when the dims are static (so later shape arithmetic folds), else an IShapeLayer."""
    x = ctx.get(node.inputs[0], node)
    rank = len(x.shape)
    start, end, _ = slice(attr(node, "start"), node.attrs.get("end", rank)).indices(rank)
    picked = tuple(x.shape)[start:end]
    if -1 not in picked:
        ctx.set_array(node.outputs[0], np.array(picked, np.int64), node)
        return
    full = ctx.out(ctx.network.add_shape(x), node, "" if (start, end) == (0, rank) else "shape")
    if (start, end) != (0, rank):
        full = slice_axes(ctx, node, full, [0], [start], [max(end - start, 0)], [1])
    ctx.set(node.outputs[0], full)


@converter("Size")
def size(ctx: ConversionContext, node: Node) -> None:
    x = ctx.get(node.inputs[0], node)
    shape = tuple(x.shape)
    if -1 not in shape:
        ctx.set(node.outputs[0], ctx.constant(np.array(math.prod(shape), np.int64), node, ""))
        return
    dims = ctx.out(ctx.network.add_shape(x), node, "shape")
    ctx.set(node.outputs[0], ctx.out(ctx.network.add_reduce(dims, trt().ReduceOperation.PROD, 1, False), node))


@converter("Concat")
def concat(ctx: ConversionContext, node: Node) -> None:
    """Inputs known to be empty add nothing (exporters start shape lists and accumulators with one)."""
    present = [v for v in node.inputs if v is not None]
    kept = [v for v in present if v not in ctx.empties] or present
    tensors = [ctx.get(v, node) for v in kept]
    if len(tensors) == 1:
        ctx.set(node.outputs[0], ctx.out(ctx.network.add_identity(tensors[0]), node))
        return
    layer = ctx.network.add_concatenation(tensors)
    layer.axis = int(node.attrs["axis"]) % len(tensors[0].shape)
    ctx.set(node.outputs[0], ctx.out(layer, node))


@converter("Split")
def split(ctx: ConversionContext, node: Node) -> None:
    """Pieces along ``axis``: the ``split`` sizes, or ``num_outputs`` chunks of ceil(d / n) (the last smaller)."""
    x = ctx.get(node.inputs[0], node)
    rank = len(x.shape)
    axis = int(attr(node, "axis")) % rank
    d = int(x.shape[axis])
    n = len(node.outputs)
    split_v = node.inputs[1] if len(node.inputs) > 1 else None
    if split_v is not None and ctx.constant_of(split_v) is None:
        _computed_split(ctx, node, x, axis, split_v)
        return
    sizes = const_ints(ctx, node, split_v, "split")
    if sizes is None and d != -1:
        chunk = -(-d // n)
        sizes = [max(0, min(chunk, d - k * chunk)) for k in range(n)]
    if sizes is not None:
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()
        for k, out in enumerate(node.outputs):
            ctx.set(out, slice_axes(ctx, node, x, [axis], [int(starts[k])], [sizes[k]], [1], f"part{k}"))
        return
    # dynamic axis length: chunk = ceil(d / n); piece k starts at min(k * chunk, d), has min(chunk, d - start)
    dim = ctx.gather1(ctx.shape_of(x, node), [axis], node, "dim")
    nn = ctx.constant(np.array([n], np.int64), node, "n")
    one = ctx.constant(np.array([1], np.int64), node, "one")
    chunk = ctx.elementwise(ctx.elementwise(dim, ctx.elementwise(nn, one, "SUB", node, "n_1"), "SUM", node, "dn"),
                            nn, "FLOOR_DIV", node, "chunk")
    for k, out in enumerate(node.outputs):
        start = ctx.elementwise(chunk, ctx.constant(np.array([k], np.int64), node, f"k{k}"), "PROD", node, f"s{k}")
        start = ctx.elementwise(start, dim, "MIN", node, f"start{k}")
        length = ctx.elementwise(chunk, ctx.elementwise(dim, start, "SUB", node, f"rest{k}"), "MIN", node, f"len{k}")
        ctx.set(out, slice_axes(ctx, node, x, [axis], start, length, [1], f"part{k}"))


def _computed_split(ctx: ConversionContext, node: Node, x: Any, axis: int, split_v: Value) -> None:
    """Piece k of computed ``split`` sizes starts where piece k - 1 ends: a running sum of shape tensors."""
    sizes = ctx.cast(ctx.get(split_v, node), trt().int64, node, "split")
    n = len(node.outputs)
    if tuple(sizes.shape) not in ((n,), (-1,)):
        raise unsupported(node, f"a split input of shape {tuple(sizes.shape)} for {n} outputs")
    start = _ones(ctx, node, 0, "start0")
    for k, out in enumerate(node.outputs):
        size = ctx.gather1(sizes, [k], node, f"size{k}")
        ctx.set(out, slice_axes(ctx, node, x, [axis], start, size, [1], f"part{k}"))
        if k + 1 < n:
            start = ctx.elementwise(start, size, "SUM", node, f"start{k + 1}")


@converter("Slice")
def slice_op(ctx: ConversionContext, node: Node) -> None:
    """ONNX Slice: negative starts/ends count from the end, and both are clamped to the axis (as Python does).
    Computed axes and steps become shape tensors (TensorRT reads them when it builds the profile)."""
    x = ctx.get(node.inputs[0], node)
    rank = len(x.shape)
    inputs = list(node.inputs) + [None] * (5 - len(node.inputs))
    n_axes = None
    starts_c, ends_c = ctx.constant_of(inputs[1]), ctx.constant_of(inputs[2])
    if starts_c is not None:
        n_axes = starts_c.size
    elif inputs[1] is not None and inputs[1].shape and isinstance(inputs[1].shape[0], int):
        n_axes = inputs[1].shape[0]
    elif x.shape and len(ctx.get(inputs[1], node).shape) == 1 and ctx.get(inputs[1], node).shape[0] != -1:
        n_axes = int(ctx.get(inputs[1], node).shape[0])
    axes: list[int] | Any
    if inputs[3] is not None and ctx.constant_of(inputs[3]) is None:
        axes = computed_axes(ctx, node, inputs[3], rank)
    else:
        known_axes = const_ints(ctx, node, inputs[3], "axes")
        if known_axes is None:
            if n_axes is None:
                raise unsupported(node, "Slice with starts of unknown length and no axes")
            known_axes = list(range(n_axes))
        axes = [a % rank for a in known_axes]
    steps: list[int] | Any
    if inputs[4] is not None and ctx.constant_of(inputs[4]) is None:
        steps = ctx.cast(ctx.get(inputs[4], node), trt().int64, node, "steps")
    else:
        steps = const_ints(ctx, node, inputs[4], "steps") or [1] * _count(node, axes)
        if any(s == 0 for s in steps):
            raise unsupported(node, "a zero slice step")
    if isinstance(axes, list) and isinstance(steps, list) and starts_c is not None and ends_c is not None:
        dims = [int(x.shape[a]) for a in axes]
        if -1 not in dims:
            start, size = [], []
            for d, s, e, st in zip(dims, starts_c.reshape(-1), ends_c.reshape(-1), steps):
                s0, e0, st0 = slice(int(s), int(e), st).indices(d)
                start.append(s0)
                size.append(len(range(s0, e0, st0)))
            ctx.set(node.outputs[0], slice_axes(ctx, node, x, axes, start, size, steps))
            return
    ctx.set(node.outputs[0], _dynamic_slice(ctx, node, x, axes, inputs[1], inputs[2], steps))


def _count(node: Node, axes: list[int] | Any) -> int:
    """How many axes a slice has (a computed axes input must have a known length)."""
    n = len(axes) if isinstance(axes, list) else int(axes.shape[0])
    if n < 0:
        raise unsupported(node, "a computed axes input of unknown length")
    return n


def _dynamic_slice(ctx: ConversionContext, node: Node, x: Any, axes: list[int] | Any, starts_v: Any, ends_v: Any,
                   steps: list[int] | Any) -> Any:
    """The same clamping as ``slice.indices``, computed on INT64 shape tensors; ``axes`` and ``steps`` are
    lists of ints or 1-D INT64 tensors."""
    T = trt()
    vec = lambda a, name: ctx.constant(np.array(a, np.int64), node, name)  # noqa: E731
    if isinstance(axes, list):
        d = ctx.gather1(ctx.shape_of(x, node), axes, node, "dims")
    else:
        d = ctx.out(ctx.network.add_gather(ctx.shape_of(x, node), axes, 0), node, "dims")
    if isinstance(steps, list):
        neg = vec([1 if st < 0 else 0 for st in steps], "neg")
        sign = vec([1 if st > 0 else -1 for st in steps], "sign")
        mag = vec([abs(st) for st in steps], "step_abs")
    else:
        backwards = ctx.elementwise(steps, vec([0], "step_zero"), "LESS", node, "backwards")
        neg = ctx.out(ctx.network.add_select(backwards, vec([1], "one"), vec([0], "nought")), node, "neg")
        sign = ctx.out(ctx.network.add_select(backwards, vec([-1], "minus"), vec([1], "plus")), node, "sign")
        mag = ctx.elementwise(steps, sign, "PROD", node, "step_abs")
    lo, hi = vec([-_BIG], "lo"), vec([_BIG], "hi")
    bounds = []
    for which, value in (("start", starts_v), ("end", ends_v)):
        v = ctx.cast(ctx.get(value, node), T.int64, node, f"{which}_i64")
        v = ctx.elementwise(ctx.elementwise(v, lo, "MAX", node, f"{which}_lo"), hi, "MIN", node, f"{which}_hi")
        wrapped = ctx.elementwise(v, d, "SUM", node, f"{which}_plus_d")
        negative = ctx.elementwise(v, vec([0], f"{which}_zero"), "LESS", node, f"{which}_neg")
        bounds.append(ctx.out(ctx.network.add_select(negative, wrapped, v), node, f"{which}_wrapped"))
    start, end = bounds
    top = ctx.elementwise(d, neg, "SUB", node, "top")  # d for step > 0, d - 1 for step < 0
    start = ctx.elementwise(ctx.elementwise(start, vec([0], "zero"), "MAX", node, "start_ge0"), top, "MIN",
                            node, "start")
    floor = ctx.elementwise(vec([0], "floor_zero"), neg, "SUB", node, "floor")  # 0, or -1 for step < 0
    end = ctx.elementwise(ctx.elementwise(end, floor, "MAX", node, "end_ge"), top, "MIN", node, "end")
    dist = ctx.elementwise(ctx.elementwise(end, start, "SUB", node, "span"), sign, "PROD", node, "distance")
    round_up = ctx.elementwise(mag, vec([1], "one_less"), "SUB", node, "round_up")
    count = ctx.elementwise(ctx.elementwise(dist, round_up, "SUM", node, "dist_up"), mag, "FLOOR_DIV", node, "count")
    size = ctx.elementwise(count, vec([0], "none"), "MAX", node, "size")
    return slice_axes(ctx, node, x, axes, start, size, steps)

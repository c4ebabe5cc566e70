"""Indexing: Gather, GatherND, GatherElements, Slice, StridedSlice, the Scatter*Update family, TopK,
OneHot, ReverseSequence, NonZero.

Each becomes ONNX's op of the same meaning where one exists; the rest (Gather's batch_dims,
StridedSlice's masks, ScatterUpdate's whole-slice writes, TopK sorted by index) are rewritten
into ONNX ops that compute exactly the same values.
"""

from __future__ import annotations

import numpy as np

from loopc.frontend.openvino.importer import Op, static_value
from loopc.frontend.openvino.ops._common import axes, axis, cast, const_ints, dim, i64, optional_input
from loopc.frontend.openvino.registry import translates
from loopc.ir import Value

#: A slice bound past any axis; ONNX's Slice clamps it.
BIG = 2**62


def _wrap_negative(op: Op, indices: Value, data: Value, k: int) -> Value:
    """int64 ``indices`` into axis ``k`` of ``data`` with negative ones counted from the end."""
    known = static_value(indices)
    indices = i64(op, indices)
    if known is not None and np.all(np.asarray(known) >= 0):
        return indices
    length = op.em.dim(data, k)
    negative = op.op("Less", [indices, op.const(0, np.int64)])
    return op.op("Where", [negative, op.op("Add", [indices, length]), indices])


@translates("Gather", 1, 7, 8)
def gather(op: Op) -> list[Value]:
    """Gather-8 counts negative indices from the end, as ONNX does (Gather-1/7 leave them undefined).
    batch_dims > 0 is a GatherND over the batch dims with the gathered axis moved next to them."""
    op.expect_inputs(3)
    data, indices = op.inputs[0], index_operand(op, op.inputs[1])
    rank = op.rank(0)
    a = axis(op, const_ints(op, 2, "axis")[0], rank)
    batch = op.int_attr("batch_dims", 0) if op.version >= 7 else 0
    if batch == 0:
        return [op.op("Gather", [data, indices], {"axis": a})]
    index_rank = op.rank(1)
    batch = batch + index_rank if batch < 0 else batch
    if not 0 < batch <= min(a, index_rank):
        raise op.error(f"batch_dims={op.int_attr('batch_dims')} must be at most the axis ({a}) and the rank "
                       f"of the indices ({index_rank})")
    indices = _wrap_negative(op, indices, data, a)
    front = list(range(batch)) + [a] + [k for k in range(batch, rank) if k != a]
    moved = data if front == list(range(rank)) else op.op("Transpose", [data], {"perm": front})
    picked = op.op("GatherND", [moved, op.op("Unsqueeze", [indices, op.const([-1], np.int64)])],
                   {"batch_dims": batch})
    if a == batch:
        return [picked]
    # picked is [batch, index dims, data dims between batch and axis, data dims after axis]
    n_index, n_pre = index_rank - batch, a - batch
    start = list(range(batch))
    index_axes = list(range(batch, batch + n_index))
    pre_axes = list(range(batch + n_index, batch + n_index + n_pre))
    post_axes = list(range(batch + n_index + n_pre, batch + n_index + rank - batch - 1))
    return [op.op("Transpose", [picked], {"perm": start + pre_axes + index_axes + post_axes})]


@translates("GatherND", 5, 8)
def gather_nd(op: Op) -> list[Value]:
    """GatherND-8 is ONNX's; GatherND-5 merges the batch dims of its output into one."""
    op.expect_inputs(2)
    batch = op.int_attr("batch_dims", 0)
    out = op.op("GatherND", [op.inputs[0], i64(op, op.inputs[1])], {"batch_dims": batch})
    if op.version >= 8 or batch <= 1:
        return [out]
    static = [d for d in out.shape if isinstance(d, int)] if out.shape is not None else []
    if out.shape is not None and len(static) == len(out.shape):
        target = op.const([int(np.prod(static[:batch]))] + static[batch:], np.int64)
    else:
        target = op.op("Concat", [op.const([-1], np.int64), op.op("Shape", [out], {"start": batch})], {"axis": 0})
    return [op.op("Reshape", [out, target])]


@translates("GatherElements", 6)
def gather_elements(op: Op) -> list[Value]:
    op.expect_inputs(2)
    a = axis(op, op.int_attr("axis"), op.rank(0))
    return [op.op("GatherElements", list(op.inputs), {"axis": a})]


def index_operand(op: Op, indices: Value) -> Value:
    """Indices as ONNX takes them (int32 or int64): OpenVINO's Gather takes any integer type, and its ONNX
    frontend converts a detector's box indices to u64."""
    if indices.dtype is None or indices.dtype in ONNX_INDICES:
        return indices
    source = indices.producer.inputs[0] if indices.producer is not None and indices.producer.op == "Cast" else None
    if source is not None and source.dtype in ONNX_INDICES:
        return source  # the Convert's operand: TensorRT has no u64, and a valid (non-negative) index is the same
    return i64(op, indices)


ONNX_INDICES = (np.dtype(np.int32), np.dtype(np.int64))


@translates("Slice", 8)
def slice_(op: Op) -> list[Value]:
    """ONNX's Slice with its inputs in ONNX's order (axes before steps)."""
    op.expect_inputs(4, 5)
    data, start, stop, step = op.inputs[:4]
    axes_in = optional_input(op, 4)
    inputs = [data, i64(op, start, True), i64(op, stop, True), None if axes_in is None else i64(op, axes_in, True),
              i64(op, step, True)]
    return [op.op("Slice", inputs)]


@translates("StridedSlice")
def strided_slice(op: Op) -> list[Value]:
    """Constant begin/end/stride with the masks as OpenVINO reads them: a 1 in begin_mask or end_mask
    ignores that bound (a masked shrink takes index 0, whatever the stride); new_axis, shrink_axis and
    one ellipsis as in TensorFlow. Lowered to a Slice, a Squeeze of the shrunk axes, then an Unsqueeze
    of the new ones."""
    op.expect_inputs(3, 4)
    x = op.inputs[0]
    rank = op.rank(0)
    begin, end = const_ints(op, 1, "begin"), const_ints(op, 2, "end")
    stride = const_ints(op, 3, "stride") if len(op.inputs) > 3 else [1] * len(begin)
    if not len(begin) == len(end) == len(stride):
        raise op.error(f"begin, end and stride have {len(begin)}, {len(end)} and {len(stride)} values")
    masks = {key: op.ints_attr(key, []) for key in ("begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask",
                                                    "ellipsis_mask")}

    def bit(key: str, i: int) -> bool:
        return i < len(masks[key]) and masks[key][i] != 0

    n = len(begin)
    ellipses = [i for i in range(n) if bit("ellipsis_mask", i)]
    if len(ellipses) > 1:
        raise op.error(f"ellipsis_mask {masks['ellipsis_mask']} has more than one ellipsis")
    consumed = sum(1 for i in range(n) if not bit("new_axis_mask", i) and not bit("ellipsis_mask", i))
    if consumed > rank:
        raise op.error(f"{consumed} begin/end entries slice a rank-{rank} input")
    slice_axes, starts, ends, steps, shrunk, new = [], [], [], [], [], []
    in_axis = out_axis = 0
    for i in range(n):
        if bit("ellipsis_mask", i):
            in_axis += rank - consumed
            out_axis += rank - consumed
        elif bit("new_axis_mask", i):
            new.append(out_axis)
            out_axis += 1
        elif bit("shrink_axis_mask", i):
            b = 0 if bit("begin_mask", i) else begin[i]  # OpenVINO (unlike TensorFlow) masks a shrink's index too
            d = dim(x, in_axis)
            if d is not None and not -d <= b < d:
                raise op.error(f"shrink_axis entry {i} takes index {b} of an axis of length {d}")
            slice_axes.append(in_axis)
            starts.append(b)
            ends.append(b + 1 if b != -1 else BIG)
            steps.append(1)
            shrunk.append(in_axis)
            in_axis += 1
        else:
            s = stride[i]
            if s == 0:
                raise op.error(f"stride {i} is 0")
            b = (0 if s > 0 else BIG) if bit("begin_mask", i) else begin[i]
            e = (BIG if s > 0 else -BIG) if bit("end_mask", i) else end[i]
            if (b, e, s) != (0, BIG, 1):
                slice_axes.append(in_axis)
                starts.append(b)
                ends.append(e)
                steps.append(s)
            in_axis += 1
            out_axis += 1
    y = x
    if slice_axes:
        y = op.op("Slice", [y, op.const(starts, np.int64), op.const(ends, np.int64), op.const(slice_axes, np.int64),
                            op.const(steps, np.int64)])
    if shrunk:
        y = op.op("Squeeze", [y, op.const(shrunk, np.int64)])
    if new:
        y = op.op("Unsqueeze", [y, op.const(new, np.int64)])
    return [y if y is not x else op.op("Identity", [x])]


@translates("ScatterNDUpdate", 4, 15)
def scatter_nd_update(op: Op) -> list[Value]:
    op.expect_inputs(3)
    reduction = op.choice_attr("reduction", ("none", "sum", "sub", "prod", "min", "max"), "none")
    if reduction != "none":
        raise op.unsupported(f"reduction={reduction!r}: TensorRT's scatter only overwrites")
    data, indices, updates = op.inputs
    return [op.op("ScatterND", [data, i64(op, indices), updates])]


@translates("ScatterUpdate", 3)
def scatter_update(op: Op) -> list[Value]:
    """Writes whole slices: ``data[.., indices[j], ..] = updates[.., j, ..]`` along ``axis``. The indices
    are flattened, spread over the updates' shape, and written elementwise (ScatterElements)."""
    op.expect_inputs(4)
    data, indices, updates = op.inputs[:3]
    rank = op.rank(0)
    a = axis(op, const_ints(op, 3, "axis")[0], rank)
    flat = op.op("Reshape", [i64(op, indices), op.const([-1], np.int64)])
    parts: list[Value] = []
    if a > 0:
        parts.append(op.op("Shape", [data], {"end": a}))
    parts.append(op.const([-1], np.int64))
    if a < rank - 1:
        parts.append(op.op("Shape", [data], {"start": a + 1}))
    target = parts[0] if len(parts) == 1 else op.op("Concat", parts, {"axis": 0})
    written = op.op("Reshape", [updates, target])
    spread = op.op("Reshape", [flat, op.const([1] * a + [-1] + [1] * (rank - a - 1), np.int64)])
    spread = op.op("Expand", [spread, op.op("Shape", [written])])
    return [op.op("ScatterElements", [data, spread, written], {"axis": a})]


@translates("ScatterElementsUpdate", 3, 12)
def scatter_elements_update(op: Op) -> list[Value]:
    op.expect_inputs(4)
    if op.version >= 12:
        reduction = op.choice_attr("reduction", ("none", "sum", "prod", "min", "max", "mean"), "none")
        if reduction != "none":
            raise op.unsupported(f"reduction={reduction!r}: TensorRT's scatter only overwrites")
    data, indices, updates = op.inputs[:3]
    a = axis(op, const_ints(op, 3, "axis")[0], op.rank(0))
    return [op.op("ScatterElements", [data, indices, updates], {"axis": a})]


@translates("TopK", 1, 3, 11)
def topk(op: Op) -> list[Value]:
    """ONNX's TopK sorted by value (ties keep the lower index, which is what stable=true asks); sort=none
    leaves the order free, and OpenVINO's CPU gives the value order too. sort=index reorders by index."""
    op.expect_inputs(2)
    x = op.inputs[0]
    a = axis(op, op.int_attr("axis"), op.rank(0))
    largest = op.choice_attr("mode", ("max", "min")) == "max"
    order = op.choice_attr("sort", ("value", "index", "none"), "none")
    index_type = op.dtype_attr("index_element_type") if "index_element_type" in op.layer.data else np.dtype(np.int32)
    if index_type not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise op.error(f"index_element_type {index_type} is not i32 or i64")
    k = i64(op, op.inputs[1], vector=True)
    values, indices = op.em.multi("TopK", [x, k], 2, {"axis": a, "largest": int(largest), "sorted": 1})
    if order == "index":
        indices, position = op.em.multi("TopK", [indices, k], 2, {"axis": a, "largest": 0, "sorted": 1})
        values = op.op("GatherElements", [values, position], {"axis": a})
    return [values, cast(op, indices, index_type)]


@translates("OneHot", 1, 16)
def one_hot(op: Op) -> list[Value]:
    """``indices == arange(depth)`` along the new axis, then on_value or off_value. An index outside
    [0, depth) gives all off_value, as OpenVINO does (ONNX's OneHot would wrap negative ones), except
    that OneHot-16's negative_indices_mode="normalize" counts [-depth, -1] from the end."""
    op.expect_inputs(4)
    indices, depth, on, off = op.inputs
    rank = op.rank(0)
    a = axis(op, op.int_attr("axis", -1), rank + 1)
    count = i64(op, depth)
    if count.shape != ():
        count = op.op("Reshape", [count, op.const([], np.int64)])
    index = i64(op, indices)
    if op.version >= 16 and op.choice_attr("negative_indices_mode", ("ignore_negative", "normalize"),
                                           "ignore_negative") == "normalize":
        negative = op.op("Less", [index, op.const(0, np.int64)])
        index = op.op("Where", [negative, op.op("Add", [index, count]), index])
    classes = op.op("Range", [op.const(0, np.int64), count, op.const(1, np.int64)])
    classes = op.op("Reshape", [classes, op.const([-1] + [1] * (rank - a), np.int64)])
    hit = op.op("Equal", [op.op("Unsqueeze", [index, op.const([a], np.int64)]), classes])
    return [op.op("Where", [hit, on, off])]


@translates("ReverseSequence")
def reverse_sequence(op: Op) -> list[Value]:
    """ONNX's op takes batch and sequence axes 0 and 1 only: other axes are transposed there and back."""
    op.expect_inputs(2)
    x = op.inputs[0]
    rank = op.rank(0)
    batch, seq = axes(op, [op.int_attr("batch_axis", 0), op.int_attr("seq_axis", 1)], rank, "batch_axis/seq_axis")
    lengths = i64(op, op.inputs[1])
    if {batch, seq} == {0, 1}:
        return [op.op("ReverseSequence", [x, lengths], {"batch_axis": batch, "time_axis": seq})]
    perm = [batch, seq] + [k for k in range(rank) if k not in (batch, seq)]
    moved = op.op("Transpose", [x], {"perm": perm})
    reversed_ = op.op("ReverseSequence", [moved, lengths], {"batch_axis": 0, "time_axis": 1})
    return [op.op("Transpose", [reversed_], {"perm": [int(k) for k in np.argsort(perm)]})]


@translates("NonZero", 3)
def non_zero(op: Op) -> list[Value]:
    """The [rank, count] coordinates of nonzero elements, as ONNX's NonZero, in output_type."""
    op.expect_inputs(1)
    out = op.dtype_attr("output_type") if "output_type" in op.layer.data else np.dtype(np.int64)
    if out not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise op.error(f"output_type {out} is not i32 or i64")
    return [cast(op, op.op("NonZero", [op.inputs[0]]), out)]

"""Ops that compute shapes or move data without changing it: ShapeOf, Reshape, Squeeze, Unsqueeze,
Transpose, Broadcast, Tile, Concat, Split, VariadicSplit, Reverse, Range, Eye, Pad, Identity.

OpenVINO takes axes, shapes and repeats as inputs of either integer width; ONNX wants int64 and
TensorRT wants axes at build time, so axes must be constants. Where OpenVINO is more lenient than
ONNX (Tile's repeats of another length than the rank, Squeeze of a non-unit axis, Broadcast's
axes_mapping) the translator spells the difference out.
"""

from __future__ import annotations

import numpy as np

from loopc.frontend.openvino.importer import Op, static_value
from loopc.frontend.openvino.ops._common import I64, axes, axis, cast, const_ints, dim, i64, optional_input
from loopc.frontend.openvino.registry import translates
from loopc.ir import Value

#: An end bound past any axis: ONNX's Slice clamps it to the axis length.
BIG = 2**62


@translates("ShapeOf", 1, 3)
def shape_of(op: Op) -> list[Value]:
    op.expect_inputs(1)
    shape = op.op("Shape", [op.inputs[0]])
    if op.version >= 3:
        shape = cast(op, shape, op.dtype_attr("output_type") if "output_type" in op.layer.data else I64)
    return [shape]


@translates("Reshape")
def reshape(op: Op) -> list[Value]:
    """special_zero=true: a 0 copies the input's dim (ONNX's default); false: a 0 is a zero-length dim."""
    op.expect_inputs(2)
    special_zero = op.bool_attr("special_zero", False)
    return [op.op("Reshape", [op.inputs[0], i64(op, op.inputs[1], vector=True)],
                  {"allowzero": 0 if special_zero else 1})]


@translates("Squeeze", 1, 15)
def squeeze(op: Op) -> list[Value]:
    """OpenVINO keeps a named axis whose length is not 1 (ONNX would fail); a dynamic one is squeezed,
    as OpenVINO's shape inference decides, unless Squeeze-15's allow_axis_skip makes the rank depend on it."""
    op.expect_inputs(1, 2)
    x = op.inputs[0]
    rank = op.rank(0)
    if len(op.inputs) == 1:
        if any(dim(x, k) is None for k in range(rank)):
            raise op.unsupported("squeezing every unit axis of an input with dynamic dims makes the output "
                                 "rank dynamic; give the axes")
        picked = [k for k in range(rank) if dim(x, k) == 1]
    else:
        skip = op.version >= 15 and op.bool_attr("allow_axis_skip", False)
        picked = []
        for a in axes(op, const_ints(op, 1, "axes"), rank):
            if dim(x, a) is None and skip:
                raise op.unsupported(f"allow_axis_skip=true with dynamic axis {a}: the output rank would depend "
                                     f"on its length at run time")
            if dim(x, a) in (1, None):
                picked.append(a)
    if not picked:
        return [op.op("Identity", [x])]
    return [op.op("Squeeze", [x, op.const(sorted(picked), np.int64)])]


@translates("Unsqueeze")
def unsqueeze(op: Op) -> list[Value]:
    op.expect_inputs(2)
    return [op.op("Unsqueeze", [op.inputs[0], op.const(const_ints(op, 1, "axes"), np.int64)])]


@translates("Transpose")
def transpose(op: Op) -> list[Value]:
    """An empty order reverses the axes."""
    op.expect_inputs(2)
    rank = op.rank(0)
    order = const_ints(op, 1, "order") or list(range(rank))[::-1]
    if sorted(order) != list(range(rank)):
        raise op.error(f"order {order} is not a permutation of the {rank} axes")
    return [op.op("Transpose", [op.inputs[0]], {"perm": order})]


@translates("Broadcast", 1, 3)
def broadcast(op: Op) -> list[Value]:
    """numpy and bidirectional are ONNX's Expand (for numpy the target is the output shape, which
    Expand gives too when the model is valid); explicit first puts the data's axes where
    axes_mapping says, with unit axes between."""
    modes = ("numpy", "explicit", "none") + (("bidirectional",) if op.version >= 3 else ())
    mode = op.choice_attr("mode", modes, "numpy")
    mode = "explicit" if mode == "none" else mode  # Broadcast-1 writes explicit as "none"
    if mode == "explicit":
        op.expect_inputs(3)
    else:
        op.expect_inputs(2, 3)
    x, target = op.inputs[0], i64(op, op.inputs[1], vector=True)
    if mode == "explicit":
        if target.shape is None or not isinstance(target.shape[0], int):
            raise op.unsupported("explicit broadcast to a target shape of unknown length")
        out_rank = target.shape[0]
        mapping = const_ints(op, 2, "axes_mapping")
        if len(mapping) != op.rank(0) or mapping != sorted(set(mapping)) or (mapping and mapping[-1] >= out_rank):
            raise op.error(f"axes_mapping {mapping} must give each of the data's {op.rank(0)} axes an increasing "
                           f"axis of the rank-{out_rank} output")
        missing = [a for a in range(out_rank) if a not in mapping]
        if missing:
            x = op.op("Unsqueeze", [x, op.const(missing, np.int64)])
    return [op.op("Expand", [x, target])]


@translates("Tile")
def tile(op: Op) -> list[Value]:
    """Repeats shorter than the rank apply to the last axes; longer ones add leading unit axes."""
    op.expect_inputs(2)
    x, repeats = op.inputs[0], i64(op, op.inputs[1], vector=True)
    rank = op.rank(0)
    count = repeats.shape[0] if repeats.shape else None
    if not isinstance(count, int):
        raise op.unsupported("repeats of unknown length")
    if count < rank:
        repeats = op.op("Concat", [op.const(np.ones(rank - count, np.int64)), repeats], {"axis": 0})
    elif count > rank:
        x = op.op("Unsqueeze", [x, op.const(list(range(count - rank)), np.int64)])
    return [op.op("Tile", [x, repeats])]


@translates("Concat")
def concat(op: Op) -> list[Value]:
    if not op.inputs:
        raise op.error("takes at least one input")
    rank = op.rank(0)
    return [op.op("Concat", list(op.inputs), {"axis": axis(op, op.int_attr("axis"), rank)})]


@translates("Split")
def split(op: Op) -> list[Value]:
    """num_splits equal pieces along a constant axis."""
    op.expect_inputs(2)
    n = op.int_attr("num_splits")
    if n < 1 or n != len(op.layer.outputs):
        raise op.error(f"num_splits={n} but the layer has {len(op.layer.outputs)} output port(s)")
    rank = op.rank(0)
    a = axis(op, const_ints(op, 1, "axis")[0], rank)
    d = dim(op.inputs[0], a)
    if d is not None and d % n:
        raise op.error(f"axis {a} of length {d} does not split into {n} equal pieces")
    return op.em.multi("Split", [op.inputs[0]], n, {"axis": a, "num_outputs": n})


@translates("VariadicSplit")
def variadic_split(op: Op) -> list[Value]:
    """One Slice per piece; with a -1 the pieces after it count from the end, so a dynamic axis works.
    Lengths computed at run time (``torch.chunk`` of a loop-carried value) give run-time offsets."""
    op.expect_inputs(3)
    x = op.inputs[0]
    rank = op.rank(0)
    a = axis(op, const_ints(op, 1, "axis")[0], rank)
    if static_value(op.inputs[2]) is None:
        return _split_at_run_time(op, x, a)
    lengths = const_ints(op, 2, "split_lengths")
    if len(lengths) != len(op.layer.outputs):
        raise op.error(f"{len(lengths)} split_lengths but {len(op.layer.outputs)} output port(s)")
    if lengths.count(-1) > 1 or any(n < -1 for n in lengths):
        raise op.error(f"split_lengths {lengths}: lengths are >= 0, with at most one -1")
    d = dim(x, a)
    known = sum(n for n in lengths if n >= 0)
    if d is not None and (known > d or (-1 not in lengths and known != d)):
        raise op.error(f"split_lengths {lengths} do not add up to axis {a}'s length {d}")
    free = lengths.index(-1) if -1 in lengths else len(lengths)
    outs: list[Value] = []
    for k, n in enumerate(lengths):
        if k < free:
            start = sum(lengths[:k])
            end = start + n
        else:  # at or after the -1: offsets from the end
            after = sum(lengths[k + 1:])
            end = -after if after else BIG
            start = sum(lengths[:k]) if k == free else -(after + n)
        outs.append(op.op("Slice", [x, op.const([start], np.int64), op.const([end], np.int64),
                                    op.const([a], np.int64)]))
    return outs


def _split_at_run_time(op: Op, x: Value, a: int) -> list[Value]:
    """The pieces of lengths known only at run time: a -1 takes what the others leave of the axis, each piece
    ends at the running sum of the lengths and starts where the one before ends."""
    pieces = len(op.layer.outputs)
    given = i64(op, op.inputs[2], vector=True)
    if given.shape is not None and given.shape[0] not in (None, pieces):
        raise op.error(f"{given.shape[0]} split_lengths but {pieces} output port(s)")
    # min/max arithmetic, not a comparison: TensorRT-RTX 1.7's builder crashes on a shape computed inside a
    # loop from a comparison of dims (a Where on ``== -1``)
    free = op.op("Neg", [op.op("Min", [given, op.const([0], np.int64)])])  # 1 at the -1, else 0
    fixed = op.op("Max", [given, op.const([0], np.int64)])
    length = op.op("Gather", [op.op("Shape", [x]), op.const([a], np.int64)])
    rest = op.op("Sub", [length, op.op("ReduceSum", [fixed, op.const([0], np.int64)], {"keepdims": 1})])
    lengths = op.op("Add", [fixed, op.op("Mul", [free, rest])])
    ends = op.op("CumSum", [lengths, op.const(0, np.int64)])
    starts = op.op("Sub", [ends, lengths])
    axes_ = op.const([a], np.int64)
    return [op.op("Slice", [x, op.op("Slice", [starts, op.const([k], np.int64), op.const([k + 1], np.int64)]),
                            op.op("Slice", [ends, op.const([k], np.int64), op.const([k + 1], np.int64)]), axes_])
            for k in range(pieces)]


@translates("Reverse")
def reverse(op: Op) -> list[Value]:
    """A Slice with step -1 over the axes given by index (mode="index") or by a boolean mask."""
    op.expect_inputs(2)
    rank = op.rank(0)
    mode = op.choice_attr("mode", ("index", "mask"))
    if mode == "mask":
        flags = op.require_constant(1, "axis mask").reshape(-1)
        if flags.size != rank:
            raise op.error(f"the axis mask has {flags.size} entries for a rank-{rank} input")
        picked = [k for k in range(rank) if flags[k]]
    else:
        picked = axes(op, const_ints(op, 1, "axes"), rank)
    if not picked:
        return [op.op("Identity", [op.inputs[0]])]
    n = len(picked)
    return [op.op("Slice", [op.inputs[0], op.const([-1] * n, np.int64), op.const([-BIG] * n, np.int64),
                            op.const(picked, np.int64), op.const([-1] * n, np.int64)])]


@translates("Range", 1, 4)
def range_(op: Op) -> list[Value]:
    """Range-1 keeps its inputs' type; Range-4 computes in output_type. Integer bounds into a float
    output_type count in int64 and convert after (exact, and TensorRT sizes a computed range only from
    integers); a float range into an integer output_type is refused unless the bounds are whole numbers."""
    op.expect_inputs(3)
    inputs = list(op.inputs)
    out = None
    if op.version >= 4:
        out = op.dtype_attr("output_type")
        work = out
        if out.kind in "iu":
            for k, v in enumerate(inputs):
                if v.dtype is not None and v.dtype.kind == "f":
                    known = op.constant(k)
                    if known is None or not np.all(np.asarray(known) == np.trunc(np.asarray(known))):
                        raise op.unsupported(f"input {k} is floating point and output_type is {out}: the length "
                                             f"is computed in floating point, the values in integers; cast the "
                                             f"bounds to {out} first")
        elif all(v.dtype is not None and v.dtype.kind in "iu" for v in inputs):
            work = I64
        inputs = [cast(op, v, work) for v in inputs]
    elif len({v.dtype for v in inputs}) != 1:
        raise op.error("Range-1 takes start, stop and step of one type")
    inputs = [op.op("Reshape", [v, op.const([], np.int64)]) if v.shape != () else v for v in inputs]
    values = op.op("Range", inputs)
    return [values if out is None else cast(op, values, out)]


@translates("Eye", 9)
def eye(op: Op) -> list[Value]:
    """Ones where column - row == diagonal_index, repeated over batch_shape: an Equal of two aranges, so
    the sizes may be computed (as integers)."""
    op.expect_inputs(3, 4)
    out = op.dtype_attr("output_type")
    rows, cols, shift = (i64(op, v) for v in op.inputs[:3])
    rows, cols, shift = (v if v.shape == () else op.op("Reshape", [v, op.const([], np.int64)])
                         for v in (rows, cols, shift))
    zero, one = op.const(0, np.int64), op.const(1, np.int64)
    row = op.op("Unsqueeze", [op.op("Range", [zero, rows, one]), op.const([1], np.int64)])
    col = op.op("Sub", [op.op("Range", [zero, cols, one]), shift])
    y = cast(op, op.op("Equal", [row, col]), out)
    if len(op.inputs) > 3:
        batch = i64(op, op.inputs[3], vector=True)
        y = op.op("Expand", [y, op.op("Concat", [batch, op.const([1, 1], np.int64)], {"axis": 0})])
    return [y]


@translates("Pad", 1, 12)
def pad(op: Op) -> list[Value]:
    """pads_begin and pads_end become ONNX's one pads vector; Pad-12 allows negative pads (crops)."""
    op.expect_inputs(3, 4)
    mode = op.choice_attr("pad_mode", ("constant", "edge", "reflect", "symmetric"), "constant")
    if mode == "symmetric":
        raise op.unsupported("pad_mode='symmetric' (it repeats the edge element; TensorRT's slice modes have "
                             "no such sampling)")
    x = op.inputs[0]
    begin, end = op.constant(1), op.constant(2)
    if begin is not None and end is not None:
        if op.version < 12 and (np.any(begin < 0) or np.any(end < 0)):
            raise op.error("Pad-1 takes no negative pads")
        pads = op.const(np.concatenate([begin.reshape(-1), end.reshape(-1)]).astype(np.int64))
    else:
        pads = op.op("Concat", [i64(op, op.inputs[1], vector=True), i64(op, op.inputs[2], vector=True)], {"axis": 0})
    inputs = [x, pads]
    value = optional_input(op, 3)
    if mode == "constant" and value is not None:
        inputs.append(cast(op, value, x.dtype) if x.dtype is not None else value)
    return [op.op("Pad", inputs, {"mode": mode})]


@translates("Identity", 16)
def identity(op: Op) -> list[Value]:
    op.expect_inputs(1)
    return [op.op("Identity", [op.inputs[0]])]

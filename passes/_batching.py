"""A loop body's node rewritten to run all trips at once, on values with a new leading trip axis.

Loop distribution moves iteration-parallel work out of a loop: a node that ran once per trip on
per-trip values runs once on their stack (``[trips, ...]``). Each op needs its own rule, since its
axes move by one and operands that do not carry the trip axis must still broadcast as they did:

* elementwise ops: a stacked operand of lower rank than the result is unsqueezed after the trip
  axis, so the result's own axes line up as they did on one trip;
* MatMul and Gemm: the stacked operand keeps its matrix axes last; Gemm becomes MatMul (plus alpha,
  beta and C), since a Gemm takes only matrices;
* ops with axes (Transpose, Unsqueeze, Squeeze, Concat, Split, Softmax, Gather, Slice, reductions):
  a non-negative axis moves up by one; a negative one counts from the end and stays;
* Reshape gets a leading 0 (copy the trip dim): its other zeros still copy the dims they did;
  Expand a leading 1, its operand padded as an elementwise one.

An op without a rule, or one whose rule needs what is unknown (a rank, axes that are not constants,
the trip axis itself reduced or reshaped away), is refused: ``batch_node`` records why and returns None.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.ir import Node, Value, constant_value
from loopc.ir.builder import Builder
from loopc.ir.core import Dim
from loopc.ir.ops import traits
from loopc.passes._why import declined
from loopc.semantics.attributes import attr


def batchable(node: Node) -> bool:
    """Whether ``node``'s op has a rule here (its operands may still refuse)."""
    return traits(node.op).lift is not None


def _fixed_stacked(node: Node, stacked: list[bool]) -> bool:
    """Whether an operand that must stay per-loop (a shape, axes, bounds, indices) is stacked."""
    lift = traits(node.op).lift
    return lift is not None and any(stacked[k] for k in lift.fixed if k < len(stacked))


def batch_node(b: Builder, node: Node, inputs: list[Value | None], stacked: list[bool], trips: Dim) -> list[Value] | None:
    """Make with ``b`` the nodes computing ``node``'s results for all trips from ``inputs`` (``stacked[k]``:
    input k has the trip axis in front; the others are read as they were) and return those results, or
    None, having made nothing, when ``node`` cannot be stacked. ``trips`` is the trip axis's length as far
    as known (for the results' types)."""
    ranks = [_rank(v) for v in node.inputs]
    out_ranks = [_rank(v) for v in node.outputs]
    if not any(stacked):
        return declined("none of its operands differs between trips", at=node)
    if any(r is None for r, s in zip(ranks, stacked) if s) or None in out_ranks:
        return declined("the rank of a stacked operand or of a result is unknown", at=node)
    lift = traits(node.op).lift
    if lift is None:
        return declined(f"{node.op} has no rule for operands stacked over the trips", at=node)
    if _fixed_stacked(node, stacked):
        return declined("an operand it reads as a shape, axes, bounds or indices differs between trips", at=node)
    outputs = [b.value(f"{v.name}_all", v.dtype, None if v.shape is None else (trips, *v.shape)) for v in node.outputs]
    attrs = dict(node.attrs)
    operands = list(inputs)
    op, rule = node.op, lift.rule
    if rule == "elementwise":
        rank = out_ranks[0]
        assert rank is not None
        operands = [_pad(b, v, ranks[k], rank) if stacked[k] and v is not None else v
                    for k, v in enumerate(operands)]
    elif rule == "matmul":
        matmul = _matmul(b, operands, stacked, ranks, out_ranks[0])
        if isinstance(matmul, str):
            return declined(matmul, at=node)
        operands = matmul
    elif rule == "gemm":
        return _gemm(b, node, operands, stacked, outputs[0])
    elif rule == "transpose":
        rank = ranks[0]
        assert rank is not None
        perm = attrs.get("perm", list(range(rank))[::-1])
        attrs["perm"] = [0] + [int(p) % rank + 1 for p in perm]
    elif rule == "axes":
        axes_at = 1 if len(node.inputs) > 1 else None
        axes = constant_value(node.inputs[1]) if axes_at else attrs.get("axes")
        if axes is None:  # all axes (Squeeze of every 1, a full reduction): the trip axis would go too
            return declined("it lists no constant axes, so it would act on the trip axis too", at=node)
        shifted = [_shift(int(a)) for a in np.asarray(axes).reshape(-1)]
        if axes_at:
            operands[1] = b.const(np.array(shifted, np.int64), name=f"{node.outputs[0].name}_axes_all")
        else:
            attrs["axes"] = shifted
    elif rule == "axis":
        axis = _axis(node)
        if axis is None:
            return declined(f"{op} has no axis", at=node)
        if op == "Gather" and stacked[0] is False:
            return declined("it gathers from a value the same in every trip, by indices that differ", at=node)
        attrs["axis"] = _shift(axis)
    elif rule == "slice":
        if not _slice(b, node, operands):
            return declined("its axes are not constants (or, not listed, its starts are not)", at=node)
    elif rule == "reshape":
        if int(attr(node, "allowzero")) or operands[1] is None:
            return declined("it has allowzero set, or no target shape", at=node)
        operands[1] = _lead(b, operands[1], 0, f"{node.outputs[0].name}_shape_all")
    elif rule == "expand":
        rank = out_ranks[0]
        if operands[1] is None or stacked[1] or rank is None:
            return declined("its target shape differs between trips, or is unknown", at=node)
        operands[0] = _pad(b, operands[0], ranks[0], rank) if operands[0] is not None else None
        operands[1] = _lead(b, operands[1], 1, f"{node.outputs[0].name}_shape_all")
    else:
        return declined(f"{op} has no rule for operands stacked over the trips", at=node)
    b.standing_for(node).node(op, operands, outputs, attrs, name=f"{node.name}_all")
    return outputs


def _axis(node: Node) -> int | None:
    """The node's ``axis`` attribute, or the op's default; None when it has neither."""
    param = traits(node.op).axis
    default = param.default if param is not None and isinstance(param.default, int) else None
    given = node.attrs.get("axis", default)
    return None if given is None else int(given)


def _lead(b: Builder, shape: Value, dim: int, name: str) -> Value:
    """A shape operand with ``dim`` in front (Reshape's 0 copies the trip dim, Expand's 1 keeps it)."""
    known = constant_value(shape)
    if known is not None:
        return b.const(np.concatenate([[dim], np.asarray(known, np.int64).reshape(-1)]).astype(np.int64), name=name)
    lead = b.const(np.array([dim], np.int64), name=f"{name}_lead")
    return b.op("Concat", [lead, shape], {"axis": 0}, name=name, dtype=shape.dtype)


def _rank(value: Value | None) -> int | None:
    return len(value.shape) if value is not None and value.shape is not None else None


def _shift(axis: int) -> int:
    """A per-trip axis on the stacked value: counted from the front it moves past the trip axis."""
    return axis + 1 if axis >= 0 else axis


def _pad(b: Builder, value: Value, rank: int | None, to: int | None) -> Value:
    """A stacked ``value`` of per-trip ``rank`` with 1s after the trip axis up to per-trip rank ``to``, so
    that it broadcasts against the others as it did on one trip."""
    assert rank is not None and to is not None
    if rank >= to:
        return value
    axes = b.const(np.arange(1, to - rank + 1, dtype=np.int64), name=f"{value.name}_pad_axes")
    return b.op("Unsqueeze", [value, axes], name=f"{value.name}_padded", dtype=value.dtype,
                shape=None if value.shape is None else (value.shape[0], *([1] * (to - rank)), *value.shape[1:]))


def _matmul(b: Builder, operands: list[Value | None], stacked: list[bool], ranks: list[int | None],
            out_rank: int | None) -> list[Value | None] | str:
    """MatMul's operands stacked so their matrix axes stay last, or why they cannot be. A stacked vector
    (per-trip rank 1) is a matrix of trips only against a plain matrix: [trips, K]·[K, N] is each trip's
    [K]·[K, N]."""
    left, right = operands
    ra, rb = ranks
    if left is None or right is None or ra is None or rb is None or out_rank is None:
        return "an operand is missing, or a rank is unknown"
    if stacked[0] and ra == 1:
        return [left, right] if not stacked[1] and rb == 2 else "it multiplies a per-trip vector by no fixed matrix"
    if stacked[1] and rb == 1:
        return "its right operand is a per-trip vector"
    to = max(out_rank, 2)
    return [_pad(b, left, ra, to) if stacked[0] else left, _pad(b, right, rb, to) if stacked[1] else right]


def _gemm(b: Builder, node: Node, operands: list[Value | None], stacked: list[bool], result: Value) -> list[Value] | None:
    """``alpha·A'·B' + beta·C`` as MatMul, Mul and Add: a Gemm takes matrices, not stacks of them."""
    left, right = operands[0], operands[1]
    c = operands[2] if len(operands) > 2 else None
    if left is None or right is None or (c is not None and stacked[2]):
        return declined("an operand is missing, or its C differs between trips", at=node)
    name = node.outputs[0].name
    dtype = node.outputs[0].dtype

    def transposed(value: Value, is_stacked: bool, tag: str) -> Value:
        return b.op("Transpose", [value], {"perm": [0, 2, 1] if is_stacked else [1, 0]}, name=f"{name}_{tag}_t",
                    dtype=value.dtype)

    if int(attr(node, "transA")):
        left = transposed(left, stacked[0], "a")
    if int(attr(node, "transB")):
        right = transposed(right, stacked[1], "b")
    alpha, beta = float(attr(node, "alpha")), float(attr(node, "beta"))
    product = result if c is None and alpha == 1.0 else b.value(f"{name}_product", dtype)
    b.standing_for(node).node("MatMul", [left, right], [product], name=f"{node.name}_all")
    if alpha != 1.0:
        scale = b.const(np.array(alpha, dtype), name=f"{name}_alpha")
        product = b.op("Mul", [product, scale], out=result if c is None else None, name=f"{name}_scaled", dtype=dtype)
    if c is not None:
        if beta != 1.0:
            c = b.op("Mul", [c, b.const(np.array(beta, dtype), name=f"{name}_beta")], name=f"{name}_c_scaled",
                     dtype=dtype)
        b.op("Add", [product, c], out=result)
    return [result]


def _slice(b: Builder, node: Node, operands: list[Value | None]) -> bool:
    """Slice's axes (explicit, or 0.. for as many as starts) moved past the trip axis."""
    starts = constant_value(node.inputs[1])
    axes: Any = constant_value(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] is not None else None
    if axes is None:
        if len(node.inputs) > 3 and node.inputs[3] is not None or starts is None:
            return False  # axes given but not constant, or too little known to list the default ones
        axes = np.arange(np.asarray(starts).size)
    shifted = np.array([_shift(int(a)) for a in np.asarray(axes).reshape(-1)], np.int64)
    while len(operands) < 4:
        operands.append(None)
    operands[3] = b.const(shifted, name=f"{node.outputs[0].name}_axes_all")
    return True


def row_wise(node: Node, stacked: list[bool]) -> bool:
    """Whether ``node``, run on operands whose axis 0 is a trip axis where ``stacked`` says so, computes each
    row of its results from the same row of those operands alone: the same node then runs one trip's
    rows (axis 0 of length 1). The inverse question to :func:`batch_node`'s."""
    ranks = [_rank(v) for v in node.inputs]
    out_rank = _rank(node.outputs[0]) if node.outputs else None
    if not any(stacked) or out_rank is None or any(r is None for r, s in zip(ranks, stacked) if s):
        return False
    lift = traits(node.op).lift
    if lift is None or _fixed_stacked(node, stacked):
        return False
    op, attrs, rule = node.op, node.attrs, lift.rule
    if rule == "elementwise":  # the others broadcast along the rows, never across them
        return all(r == out_rank if s else v is None or (r is not None and (r < out_rank or _one_row(v)))
                   for v, r, s in zip(node.inputs, ranks, stacked))
    if rule == "matmul":
        rb = ranks[1]
        return stacked == [True, False] and ranks[0] is not None and ranks[0] >= 2 and rb is not None \
            and (rb == 2 or rb < ranks[0])
    if rule == "gemm":
        c = node.inputs[2] if len(node.inputs) > 2 else None
        return stacked[:2] == [True, False] and not int(attr(node, "transA")) \
            and (c is None or (not stacked[2] and ((_rank(c) or 0) <= 1 or _one_row(c))))
    if rule == "transpose":
        return "perm" in attrs and int(attrs["perm"][0]) == 0
    if rule == "reshape":
        shape = constant_value(node.inputs[1])
        return not int(attr(node, "allowzero")) and shape is not None and np.asarray(shape).size > 0 \
            and int(np.asarray(shape).reshape(-1)[0]) == 0
    if op == "Concat":
        return all(stacked) and int(attr(node, "axis")) % out_rank != 0
    if rule in ("axes", "slice"):
        param = traits(op).axes_operand
        at = param.operand if param is not None and param.operand is not None else 1
        given = node.inputs[at] if len(node.inputs) > at else None
        axes = constant_value(given) if given is not None else attrs.get("axes")
        rank = out_rank if param is not None and param.of_result else ranks[0]
        assert rank is not None
        return axes is not None and np.asarray(axes).size > 0 \
            and all(int(a) % rank != 0 for a in np.asarray(axes).reshape(-1))
    if rule == "axis" and op != "Gather":
        rank, axis = ranks[0], _axis(node)
        return stacked[0] and rank is not None and axis is not None and axis % rank != 0
    return False


def _one_row(value: Value) -> bool:
    """A value whose axis 0 broadcasts (length 1), so it reads the same for every row."""
    return value.shape is not None and len(value.shape) > 0 and value.shape[0] == 1

"""A while condition that compares an induction variable with a loop-invariant bound is a trip count.

tf2onnx writes ``tf.while_loop(lambda i, ...: i < 9, ...)`` as a Loop with M = INT64_MAX whose body
carries ``i`` and computes ``Less(Cast(i + 1, float), 9.0)``; TorchScript's ``for i in range(n)``
with a ``break`` becomes M = INT64_MAX and ``cond = i + 1 < n and not done``. Left as a kWHILE
limit, such a loop has no length TensorRT can size its concatenated outputs by, so it would need
--max-trips although its trip count is known. This pass moves each such comparison into the
trip count (kCOUNT) and keeps kWHILE only for what depends on data.

Why it is exact. Split the body's next condition into conjuncts ``p_1 and ... and p_k``. A
conjunct ``v(t) < B`` with ``v(t) = a + s·t`` (``s > 0``, ``B`` invariant) holds for exactly the
first ``K = max(0, ceil((B - a) / s))`` trips ``t`` and for none after. Trip ``t + 1`` runs when
the condition trip ``t`` computed holds, so that conjunct ends the loop after ``K + 1`` trips,
and before that it is true: the loop is the same with trip count ``min(M, K + 1)`` and the other
conjuncts as its condition. (When the condition is computed from the trip's own parameters
rather than carried, trip ``t`` itself needs ``v(t) < B``: ``K`` trips.) ``<=``, ``>``, ``>=``
and ``Not`` normalize to ``<`` over the integers; a comparison in floating point
(``Cast(i) < 9.0``) is the same comparison over the integers with the bound rounded
(``i < ceil(9.0)``) — exact while ``i`` is exactly representable (below 2^24 in float32).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from loopc.ir import Graph, Loop, Node, Value, constant_value
from loopc.ir.builder import Builder
from loopc.ir.ops import traits
from loopc.loop_rules import MAX_TRIPS
from loopc.passes._induction import Affine, Induction
from loopc.passes._util import as_i64, computed_from, stopping_branch
from loopc.passes._why import declined, no
from loopc.passes.trip_limits import always_true
from loopc.passes.manager import PassResult

BOOL, I64 = np.dtype(np.bool_), np.dtype(np.int64)
#: comparison -> (the comparison with its operands swapped, its negation)
COMPARISONS = {
    "Less": ("Greater", "GreaterOrEqual"),
    "LessOrEqual": ("GreaterOrEqual", "Greater"),
    "Greater": ("Less", "LessOrEqual"),
    "GreaterOrEqual": ("LessOrEqual", "Less"),
}


@dataclass
class Bound:
    """``value(t) < limit`` over the integers, with ``value`` increasing in ``t``.

    ``limit`` is ``limit_base + limit_const`` (``limit_base`` an invariant integer value, or None)."""

    value: Affine
    limit_base: Value | None
    limit_const: int


class CountedLoops:
    name = "counted-loops"

    def __call__(self, graph: Graph) -> PassResult:
        counted = 0
        for outer, node in graph.structured():
            if isinstance(node, Loop) and node.condition is not None:
                counted += self._rewrite(outer, node) or 0
        return PassResult(graph, counted > 0, {"bounds": counted} if counted else {})

    def _rewrite(self, outer: Graph, loop: Loop) -> int | None:
        assert loop.condition is not None
        carried = next((r for r in loop.recurrences if r.state is loop.condition), None)
        if any(o.value is loop.condition for o in loop.loop_outputs):
            # the flag's own final value is read: it must keep its values
            return declined(f"its condition {loop.condition.name!r} is read after the loop", at=loop)
        predicate = carried.next if carried is not None else loop.condition
        going_on = _breaking_branch(predicate) if carried is not None else None
        if going_on is not None:  # `if stop: break` before the count's test: count the trips that go on
            return self._bound_past_a_break(outer, loop, going_on) if loop.trip_count is None else 0
        induction = Induction(loop)
        bounds: list[Bound] = []
        rest: list[Value] = []
        why: list[str] = []
        for conjunct in _conjuncts(predicate):
            bound = _bound(induction, conjunct)
            if isinstance(bound, Bound):
                bounds.append(bound)
            else:
                rest.append(conjunct)
                why.append(f"{conjunct.name!r} {bound}")
        if not bounds:
            if always_true(loop, loop.condition):
                return None  # a condition that never stops the loop: trip-limits drops it
            return declined(f"its trip count cannot be counted: {'; '.join(why)}", at=loop)
        # a carried condition is what trip t computed for trip t + 1: one more trip than it allows
        if not _count(outer, loop, bounds, extra=1 if carried is not None else 0):
            return None
        condition = _all_of(Builder(outer).into(loop.body), loop.name, rest)
        if carried is not None:
            loop.update(carried, next=condition)
        else:
            loop.set_condition(condition if rest else None)
        return len(bounds)


    def _bound_past_a_break(self, outer: Graph, loop: Loop, going_on: dict[Value, Value]) -> int:
        """A trip count for a loop whose carried condition is an If's output that one branch makes false (a
        ``break``): every trip after which the loop goes on took the other branch, so its values bound the trips.
        The condition stays as it is; the count only gives the loop its length."""
        carried = next(r for r in loop.recurrences if r.state is loop.condition)
        induction = Induction(loop, going_on)
        found = [_bound(induction, c) for c in _conjuncts(going_on[carried.next])]
        bounds = [bound for bound in found if isinstance(bound, Bound)]
        if not bounds:
            return declined("its trip count cannot be counted: the trips that do not break compare no counter "
                            "with a bound fixed before the loop", at=loop) or 0
        return len(bounds) if _count(outer, loop, bounds, extra=1) else 0


def _count(outer: Graph, loop: Loop, bounds: list[Bound], extra: int) -> bool:
    """Give ``loop`` the trip count its ``bounds`` (and its own count) allow, ``extra`` trips past each; False, and
    nothing changed, when the count is one TensorRT cannot take (the while limit then stays)."""
    before: list[Node] = []
    b = Builder(outer, before)
    counts = [_trips(b, loop.name, bound, extra=extra) for bound in bounds]
    count = _smallest(b, loop.name, counts + ([loop.trip_count] if loop.trip_count is not None else []))
    folded = constant_value(count)
    if folded is not None and int(np.asarray(folded)) > MAX_TRIPS:
        return no(f"its trip count {int(np.asarray(folded))} exceeds TensorRT's INT32 limit", at=loop)
    outer.insert_before(loop, before)
    loop.set_trip_count(count)
    loop.set_max_trips(None)  # concatenated outputs are now as long as the trip count
    return True


def _breaking_branch(predicate: Value) -> dict[Value, Value] | None:
    """When ``predicate`` is an If's output that one branch yields as a constant false (a ``break``): each output of
    that If mapped to what the other branch yields, the values of the trips that go on."""
    found = stopping_branch(predicate)
    if found is None:
        return None
    branch, stops = found
    goes_on = branch.else_branch if stops is branch.then_branch else branch.then_branch
    return dict(zip(branch.outputs, goes_on.outputs))


def _conjuncts(value: Value) -> list[Value]:
    node = value.producer
    if node is not None and node.op == "And" and len(node.inputs) == 2 and all(v is not None for v in node.inputs):
        return [c for v in node.inputs if v is not None for c in _conjuncts(v)]
    return [value]


def _bound(induction: Induction, predicate: Value) -> Bound | str:
    """``predicate`` as ``v(t) < limit`` over the integers, ``v`` increasing, ``limit`` invariant; else why not."""
    node = predicate.producer
    negate = False
    while node is not None and node.op in ("Not", "Cast", "Identity") and node.inputs[0] is not None:
        if node.op != "Not" and node.inputs[0].dtype != BOOL:
            return "tests a number against zero, not a comparison"
        negate ^= node.op == "Not"
        node = node.inputs[0].producer
    if node is None or node.op not in COMPARISONS or len(node.inputs) != 2:
        return "is not a comparison (a flag computed from data?)"
    op = COMPARISONS[node.op][1] if negate else node.op
    left, right = node.inputs
    if left is None or right is None:
        return "is not a comparison of two values"
    value, limit = _induction_operand(induction, left), _limit_operand(induction, right)
    if value is None or isinstance(limit, str):
        first = limit if value is not None else None  # why a counter on the left has no bound on the right
        value, limit = _induction_operand(induction, right), _limit_operand(induction, left)
        op = COMPARISONS[op][0]
        if isinstance(first, str) and (value is None or isinstance(limit, str)):
            return first
    if value is None:
        return "compares no counter that steps by a constant each trip"
    if isinstance(limit, str):
        return limit
    if value.step == 0:
        return "compares a value that does not change between trips"
    base, low, high = limit  # the limit is base + a number in [low, high] (rounding a float bound)
    if op in ("Less", "LessOrEqual") and value.step > 0:
        # v < x  <=>  v < ceil(x);  v <= x  <=>  v < floor(x) + 1
        return Bound(value, base, high if op == "Less" else low + 1)
    if op in ("Greater", "GreaterOrEqual") and value.step < 0:
        # v > x  <=>  -v < -floor(x);  v >= x  <=>  -v < -ceil(x) + 1
        negated = value.times(-1)
        if negated is None or base is not None:
            return "counts down to a bound that is not a constant"
        return Bound(negated, None, -low if op == "Greater" else -high + 1)
    return "holds on the last trips, not the first"  # a suffix of the trips: no count


def _induction_operand(induction: Induction, value: Value) -> Affine | None:
    """An affine integer operand, also when the comparison is done in floating point after a Cast."""
    node = value.producer
    if node is not None and node.op == "Cast" and node.inputs[0] is not None:
        value = node.inputs[0]
    found = induction.affine(value)
    return found if found is not None and found.base is None else None


def _limit_operand(induction: Induction, value: Value) -> tuple[Value | None, int, int] | str:
    """A loop-invariant bound as ``(base, floor, ceil)``: an integer value, or a number; else why not."""
    array = constant_value(value)
    if array is not None:
        number = np.asarray(array)
        if number.size != 1 or number.dtype.kind not in "iuf" or not np.isfinite(number).all():
            return "compares with a constant that is not one finite number"
        x = float(number.reshape(-1)[0]) if number.dtype.kind == "f" else int(number.reshape(-1)[0])
        return None, math.floor(x), math.ceil(x)
    node = value.producer
    if node is not None and node.op == "Cast" and node.inputs[0] is not None:
        value = node.inputs[0]  # an integer cast to float and back compares as the integer
    found = induction.affine(value)
    if found is None or found.step != 0:
        return "compares with a bound that changes between trips"
    if found.base is not None and not _shape_computable(found.base):
        return "compares with a bound computed from data, which TensorRT cannot take as a trip count"
    return found.base, found.const, found.const


def _shape_computable(value: Value) -> bool:
    """Whether ``value`` is integer arithmetic on integer inputs and tensor dims, nothing read from data.

    A trip count TensorRT must know when the loop starts; a bound computed from tensor data (an
    argmax, a float reduction) stays a kWHILE condition, which TensorRT evaluates per trip."""
    for current in computed_from(value):
        if current.dtype is None or np.dtype(current.dtype).kind not in "iu":
            return False
        node = current.producer
        if node is None and (current.shape is None or len(current.shape) > 1):
            return False  # an input: TensorRT takes a scalar or vector of integers as a shape tensor
        if node is not None and not traits(node.op).shape_arithmetic:
            return False
    return True


def _trips(b: Builder, name: str, bound: Bound, extra: int) -> Value:
    """``max(0, ceil((limit - a) / s)) + extra`` trips, as integer nodes (constants fold)."""
    a, s = bound.value.const, bound.value.step
    gap_const = bound.limit_const - a
    if bound.limit_base is None:
        return b.const(np.array(max(0, -(-gap_const // s)) + extra, np.int64), name=f"{name}_trips")
    limit = as_i64(b, f"{name}_limit", bound.limit_base)
    gap = b.op("Add", [limit, b.const(np.array(gap_const + s - 1, np.int64), name=f"{name}_gap_const")],
               name=f"{name}_gap")
    clamped = b.op("Max", [gap, b.const(np.array(s - 1, np.int64), name=f"{name}_floor")], name=f"{name}_gap_clamped")
    if s != 1:  # ceil(gap / s) = (gap + s - 1) // s, and the numerator is never negative here
        clamped = b.op("Div", [clamped, b.const(np.array(s, np.int64), name=f"{name}_step")], name=f"{name}_quotient")
    return b.op("Add", [clamped, b.const(np.array(extra, np.int64), name=f"{name}_extra")], name=f"{name}_trips")


def _smallest(b: Builder, name: str, counts: list[Value]) -> Value:
    values = [constant_value(c) for c in counts]
    if all(v is not None for v in values):
        return b.const(np.array(min(int(np.asarray(v).reshape(-1)[0]) for v in values), np.int64), name=f"{name}_count")
    if len(counts) == 1:
        return counts[0]
    return b.op("Min", [as_i64(b, f"{name}_count{k}", c) for k, c in enumerate(counts)], name=f"{name}_count")


def _all_of(body: Builder, name: str, conjuncts: list[Value]) -> Value:
    """The conjunction of ``conjuncts`` as a value made by ``body`` (a constant true when there are none)."""
    if not conjuncts:
        return body.const(np.array(True), name=f"{name}_always")
    result = conjuncts[0]
    for k, other in enumerate(conjuncts[1:]):
        result = body.op("And", [result, other], name=f"{name}_while{k}", dtype=BOOL, shape=())
    return result


__all__ = ["CountedLoops"]

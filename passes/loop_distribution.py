"""Loop distribution: a loop's iteration-parallel work runs once, batched over all trips, outside it.

A loop is as fast as its serial chain, so work that does not depend on the carried state should not
be in it. The body splits into three parts:

* **before**: nodes that read only iterators and invariants (``x[t]·Wᵀ``, a projection, a feature
  map of the input). They run once before the loop on the iterators' whole sources — the trip axis
  in front — and the loop iterates over their results. Invariant-only nodes move out as they are.
* **core**: what the recurrences, the condition and the trip count depend on. It stays.
* **after**: nodes whose results feed only concatenated outputs (a per-step output head). The loop
  emits their per-trip operands instead, and they run once after it on the stacked values.

An operand the body computes from outer values alone, by nodes that cannot trap (a quantized weight's
DequantizeLinear), is the same on every trip: a part that reads it takes a copy of those nodes along, so a
weight's dequantize stays beside the product that reads it (which TensorRT fuses) and is never stacked per trip.

Legal under early exit: the before part computes every element of its sources, also for trips a
while loop never runs, so it holds only ops that cannot fail or trap (:mod:`loopc.passes._batching`'s
pure tensor ops); the after part sees exactly the stacked trips that ran. Iterators read backwards
stay backwards over the batched values, and a before node may combine only iterators of one
direction whose lengths are provably equal.

The cost model: a part moves only if it holds a matrix product (what it saves), and nothing is
batched whose stacked size is known to pass :data:`MAX_BATCHED_BYTES`. Only loops at the top level
are distributed: a batched value feeding a nested loop's iterator would sit in the enclosing body,
which TensorRT's builder handles poorly (see :mod:`loopc.passes.gather_to_iterator`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loopc.ir import Graph, Loop, LoopIterator, LoopOutput, Node, Value, constant_value
from loopc.ir.builder import Builder
from loopc.ir.core import Dim
from loopc.ir.ops import Trap, may_trap, traits
from loopc.passes._batching import batch_node, batchable
from loopc.passes._why import declined
from loopc.passes.manager import PassResult
from loopc.semantics.attributes import attr

#: Largest stack of one value the pass creates, when its size is known.
MAX_BATCHED_BYTES = 256 * 2**20


@dataclass(frozen=True)
class _Space:
    """Where a stacked value's trip axis comes from: an iterator's source length and direction."""

    length: Dim | object
    reverse: bool


class LoopDistribution:
    name = "loop-distribution"

    def __call__(self, graph: Graph) -> PassResult:
        stats = {"hoisted": 0, "before": 0, "after": 0}
        for outer, node in list(graph.structured()):
            if isinstance(node, Loop) and outer is graph:
                hoisted, before, after = _Distribution(outer, node).run()
                stats["hoisted"] += hoisted
                stats["before"] += before
                stats["after"] += after
        stats = {k: v for k, v in stats.items() if v}
        return PassResult(graph, bool(stats), stats)


class _Distribution:
    def __init__(self, outer: Graph, loop: Loop) -> None:
        self.outer = outer
        self.loop = loop
        self.inner = {v for v in loop.body.inputs}
        for _, n in loop.body.walk():
            self.inner.update(v for v in n.outputs)
        self.steady = self._steady_values()
        #: copies, outside the loop, of the steady values the moved parts read
        self.copies: dict[Value, Value] = {}

    def run(self) -> tuple[int, int, int]:
        return self._hoist_invariants(), self._before() or 0, self._after() or 0

    # ------------------------------------------------------------------------------ invariants

    def _steady_values(self) -> set[Value]:
        """The body's values made from outer values alone by nodes that cannot trap and nest no graph."""
        steady: set[Value] = set()
        for node in self.loop.body.nodes:
            if node.subgraphs() or self.loop.condition in node.outputs or may_trap(
                    node.op, [v.dtype if v is not None else None for v in node.inputs]) != Trap.NONE:
                continue
            if all(v is None or v not in self.inner or v in steady for v in node.inputs):
                steady.update(node.outputs)
        return steady

    def _copied(self, b: Builder, value: Value) -> Value:
        """``value`` as the nodes moved out of the loop read it: itself when outer, a copy made with ``b`` of the
        nodes that compute a steady one (see the module's docstring)."""
        if value not in self.inner:
            return value
        found = self.copies.get(value)
        if found is None:
            node = value.producer
            assert node is not None and value in self.steady
            inputs = [None if v is None else self._copied(b, v) for v in node.inputs]
            outputs = [b.value(f"{v.name}_out", v.dtype, v.shape) for v in node.outputs]
            b.standing_for(node).node(node.op, inputs, outputs, dict(node.attrs))
            self.copies.update(zip(node.outputs, outputs))
            found = self.copies[value]
        return found

    def _hoist_invariants(self) -> int:
        """Nodes that read only outer values run once, before the loop (Constants are Invariants'), if
        they cannot fail: a loop may run no trip."""
        moving = []
        for node in self.loop.body.nodes:
            if node.op == "Constant" or self.loop.condition in node.outputs or not _cannot_fail(node):
                continue
            if all(v is None or v not in self.inner for v in node.inputs):
                moving.append(node)
                self.inner.difference_update(v for v in node.outputs)
        if moving:
            self.outer.insert_before(self.loop, moving)
        return len(moving)

    # --------------------------------------------------------------------------------- before

    def _before(self) -> int | None:
        loop = self.loop
        spaces: dict[Value, _Space] = {}
        for it in loop.iterators:
            spaces[it.param] = _Space(_length(it), it.reverse)
        part: list[Node] = []
        for node in loop.body.nodes:
            if node.subgraphs() or not batchable(node) or loop.condition in node.outputs or not _cannot_fail(node):
                continue
            reads = [spaces.get(v) for v in node.inputs if v is not None and v in self.inner
                     and v not in self.steady]
            if not reads or any(s is None for s in reads) or len(set(reads)) != 1:
                continue  # reads the core, or nothing stacked, or iterators that do not line up
            part.append(node)
            spaces.update((v, reads[0]) for v in node.outputs)  # type: ignore[misc]
        if not any(traits(n.op).matrix_product for n in part):
            return 0
        emitted: list[Node] = []
        b = Builder(self.outer, emitted)
        stacked = {it.param: _trips_first(b, it) for it in loop.iterators}
        for node in part:
            made = _batched(b, node, self._outside(b, node, stacked), stacked, spaces[node.outputs[0]].length)
            if made is None:  # leave the loop as it is (nothing was inserted yet)
                return declined(f"{node.op} has no form that runs all trips at once, so the work before it "
                                "stays in the loop", at=node)
            stacked.update(zip(node.outputs, made))
        if not all(_fits(stacked[v]) for n in part for v in n.outputs):
            return declined(f"the work on all trips at once would hold more than {MAX_BATCHED_BYTES >> 20} MiB",
                            at=loop)
        self.outer.insert_before(loop, emitted)
        in_part = {n for n in part}
        for node in part:
            for value in node.outputs:
                if all(u.user in in_part for u in value.uses()):
                    continue
                param = b.value(f"{value.name}_iter", value.dtype, value.shape)
                self.inner.add(param)
                value.replace_all_uses_with(param)
                loop.add_iterator(LoopIterator(param, stacked[value], 0, spaces[value].reverse))
        for node in reversed(part):
            loop.body.remove(node)
        return len(part)

    # ---------------------------------------------------------------------------------- after

    def _after(self) -> int | None:
        loop = self.loop
        part: list[Node] = []
        in_part: set[Node] = set()
        for node in reversed(loop.body.nodes):
            if node.subgraphs() or not batchable(node):
                continue
            if all(value.uses() and all(self._feeds_after(u.user, in_part, value) for u in value.uses())
                   for value in node.outputs):
                part.append(node)
                in_part.add(node)
        part.reverse()
        if not any(traits(n.op).matrix_product for n in part):
            return 0
        results = {v for n in part for v in n.outputs}
        kinds = {o.kind for o in loop.loop_outputs if o.value in results}
        if len(kinds) != 1:
            return declined("the per-trip work after the loop's core feeds outputs collected in different ways",
                            at=loop)
        kind = kinds.pop()
        # each per-trip operand the part reads from the loop: emitted stacked by the loop
        emitted: list[Node] = []
        b = Builder(self.outer, emitted)
        stacked: dict[Value, Value] = {}
        new_outputs: list[LoopOutput] = []
        for node in part:
            for v in node.inputs:
                if v is not None and v in self.inner and v not in results and v not in stacked \
                        and v not in self.steady:
                    rows = b.value(f"{v.name}_rows", v.dtype, None if v.shape is None else (None, *v.shape))
                    new_outputs.append(LoopOutput(kind, v, rows, 0))
                    stacked[v] = rows
        for node in part:
            made = _batched(b, node, self._outside(b, node, stacked), stacked, None)
            if made is None:
                return declined(f"{node.op} has no form that runs all trips at once, so the work after it "
                                "stays in the loop", at=node)
            stacked.update(zip(node.outputs, made))
        replaced: list[tuple[LoopOutput, Value]] = []
        for out in loop.loop_outputs:
            if out.value in results:
                whole = stacked[out.value]
                if out.axis != 0:
                    whole = _trips_to(b, whole, out.axis, out.result)
                replaced.append((out, whole))
        for out in new_outputs:
            loop.add_output(out)
        self.outer.insert_after(loop, emitted)
        for out, whole in replaced:
            loop.remove_output(out)
            out.result.replace_all_uses_with(whole)
        for node in reversed(part):
            loop.body.remove(node)
        return len(part)

    def _outside(self, b: Builder, node: Node, stacked: dict[Value, Value]) -> list[Value | None]:
        """``node``'s operands as the batched nodes outside the loop read them: stacked, or steady ones copied out
        (a body Constant among them)."""
        return [None if v is None else stacked[v] if v in stacked else self._copied(b, v) for v in node.inputs]

    def _feeds_after(self, user: object, in_part: set[Node], value: Value) -> bool:
        """A use that keeps ``value`` in the after part: a node of the part, or concatenated outputs only."""
        if isinstance(user, Node):
            return user in in_part
        loop = self.loop
        return user is loop.body and value is not loop.condition and all(r.next is not value for r in loop.recurrences) \
            and all(o.kind != "last" for o in loop.loop_outputs if o.value is value)


def _batched(b: Builder, node: Node, inputs: list[Value | None], stacked: dict[Value, Value],
             trips: object) -> list[Value] | None:
    """``node`` on ``inputs``, its operands as read outside the loop (``stacked`` tells which hold all trips)."""
    flags = [v is not None and v in stacked for v in node.inputs]
    return batch_node(b, node, inputs, flags, trips if isinstance(trips, (int, str)) else None)


def _length(it: LoopIterator) -> object:
    """The iterator's length, as far as its source's type knows it; two unknown lengths are equal only
    when they are the same source's same axis."""
    shape = it.source.shape
    dim = shape[it.axis] if shape is not None and it.axis < len(shape) else None
    return dim if dim is not None else (it.source, it.axis)


def _trips_first(b: Builder, it: LoopIterator) -> Value:
    """The iterator's source with its iterated axis first (a Transpose made with ``b`` when it is not)."""
    if it.axis == 0:
        return it.source
    shape = it.source.shape
    assert shape is not None  # the part's nodes needed the param's rank
    rank = len(shape)
    perm = [it.axis] + [a for a in range(rank) if a != it.axis]
    return b.op("Transpose", [it.source], {"perm": perm}, name=f"{it.source.name}_trips_first", dtype=it.source.dtype,
                shape=tuple(shape[a] for a in perm))


def _trips_to(b: Builder, value: Value, axis: int, like: Value) -> Value:
    """A stacked value with its trip axis moved from the front to ``axis`` (a concat output's axis)."""
    rank = len(value.shape) if value.shape is not None else (len(like.shape) if like.shape is not None else None)
    assert rank is not None
    perm = list(range(1, rank))
    perm.insert(axis, 0)
    return b.op("Transpose", [value], {"perm": perm}, name=f"{like.name}_placed", dtype=value.dtype, shape=like.shape)


def _cannot_fail(node: Node) -> bool:
    """Whether ``node`` may run for trips that never run (or in a loop that runs none): a node with a
    rule for stacked operands, or one that reads only shapes, that cannot trap on any values its
    operands may hold. An integer Div or Mod may divide by zero on a trip the loop would not run; a
    Gather is checked on its indices. A shape trap (a Reshape to a wrong size) is accepted: the
    shapes and shape operands of what moves are the same on every trip, so such a node fails on the
    trips that run too (only a loop running no trip would not have failed)."""
    if node.subgraphs() or not (batchable(node) or traits(node.op).shape_only):
        return False
    trap = may_trap(node.op, [v.dtype if v is not None else None for v in node.inputs])
    if Trap.ZERO_DIVISOR in trap:
        return False
    if Trap.INDEX not in trap:
        return True
    if node.op != "Gather":
        return False
    data, indices = node.inputs[0], constant_value(node.inputs[1])
    if data is None or data.shape is None or indices is None:
        return False
    length = data.shape[int(attr(node, "axis")) % len(data.shape)]
    return isinstance(length, int) and bool(np.all((-length <= indices) & (indices < length)))


def _fits(value: Value) -> bool:
    dims = [d for d in value.shape or () if isinstance(d, int)]
    if value.shape is None or value.dtype is None or len(dims) != len(value.shape):
        return True  # unknown sizes come from the model's inputs, as the iterated source's do
    return int(np.prod(dims, dtype=np.int64)) * value.dtype.itemsize <= MAX_BATCHED_BYTES

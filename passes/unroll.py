"""Unroll a loop with a small constant trip count whose carried shapes change from trip to trip.

TensorRT recurrences keep one shape, so ``out = cat([out, f(x[i], out[-1:])])`` read inside the
loop cannot stay a loop. With a constant trip count the loop is just a sequence of bodies: trip
``i`` binds the counter to ``i``, each iterator to ``Gather(source, i)`` (``-1 - i`` reversed),
each state to the previous trip's next value; "last" outputs are the final states, concatenated
outputs are the trips' values unsqueezed and concatenated in order (reversed for "reverse").
"""

from __future__ import annotations

import numpy as np

from loopc.errors import PassError
from loopc.ir import Graph, Loop, Node, Recurrence, Value
from loopc.ir.builder import Builder
from loopc.passes._util import constant_trips, reordered
from loopc.passes.manager import PassResult

#: Most trips a loop may run to be unrolled (one copy of its body per trip).
MAX_UNROLLED_TRIPS = 64


class Unroll:
    name = "unroll"

    def __call__(self, graph: Graph) -> PassResult:
        unrolled = 0
        for g, node in graph.structured():
            if isinstance(node, Loop) and self._wanted(node):
                unroll(g, node)
                unrolled += 1
        return PassResult(graph, unrolled > 0, {"loops": unrolled} if unrolled else {})

    def _wanted(self, loop: Loop) -> bool:
        """Whether to unroll ``loop``; a carried value that grows where unrolling can't help is refused."""
        changing = [r for r in loop.recurrences if _grows(r) or _shape_changes(r.init, r.next)]
        if not changing:
            return False
        reason = cannot_unroll(loop)
        if reason is None:
            return True
        growing = next((r for r in changing if _grows(r)), None)
        if growing is not None:
            assert growing.next.producer is not None
            raise PassError(f"{loop.describe()}: carried value {growing.state.name!r} grows on every trip "
                            f"({growing.next.producer.describe()} concatenates onto it) and is read inside the loop; "
                            "a TensorRT loop carries values of one shape, and loopc unrolls such a loop only "
                            f"when {reason}")
        return False


def unroll(outer: Graph, loop: Loop) -> None:
    """Replace ``loop`` (constant trip count, no condition, no nested graphs) by its trips' bodies in ``outer``."""
    trips = constant_trips(loop)
    assert trips is not None  # cannot_unroll(loop) is None
    emitted: list[Node] = []
    b = Builder(outer, emitted)
    states = [r.init for r in loop.recurrences]
    collected: list[list[Value]] = [[] for _ in loop.loop_outputs]
    for i in range(trips):
        value_on_trip = b.trip(loop, i, states)
        for values, out in zip(collected, loop.loop_outputs):
            values.append(value_on_trip(out.value))
        states = [value_on_trip(r.next) for r in loop.recurrences]
    finals = dict(zip((r.state for r in loop.recurrences), states))
    results: list[tuple[Value, Value]] = []
    for values, out in zip(collected, loop.loop_outputs):
        if out.kind == "last":
            results.append((out.result, finals[out.value]))
            continue
        ordered = values[::-1] if out.kind == "reverse" else values
        axes = b.const(np.array([out.axis], np.int64), name=f"{out.result.name}_axes")
        pieces = [b.op("Unsqueeze", [v, axes], name=f"{out.result.name}_{k}", dtype=v.dtype)
                  for k, v in enumerate(ordered)]
        joined = b.op("Concat", pieces, {"axis": out.axis}, name=f"{out.result.name}_unrolled",
                      dtype=out.result.dtype, shape=out.result.shape)
        results.append((out.result, joined))
    outer.insert_before(loop, emitted)
    for old, new in results:
        old.replace_all_uses_with(new)
    outer.remove(loop)


def cannot_unroll(loop: Loop) -> str | None:
    """Why ``loop`` cannot be unrolled here, or None."""
    count = constant_trips(loop)
    if count is None or loop.condition is not None:
        return "its trip count is a constant and it cannot stop early"
    if not 1 <= count <= MAX_UNROLLED_TRIPS:
        return f"it runs at most {MAX_UNROLLED_TRIPS} trips"
    if any(node.subgraphs() for node in loop.body.nodes):
        return "its body holds no nested loops or conditionals"  # cloning them is not done here
    return None


def _grows(rec: Recurrence) -> bool:
    """The next value concatenates something onto the state, or onto a reordering of it that keeps
    its length on the concatenation axis (a beam search's ``cat([history[beams], token])``), through
    any chain of Concats (``cat([cat([acc, a]), b])``)."""
    stack, seen = [rec.next], set()
    while stack:
        producer = stack.pop().producer
        if producer is None or producer.op != "Concat" or len(producer.inputs) < 2 or producer in seen:
            continue
        seen.add(producer)
        axis = int(producer.attrs.get("axis", 0))
        if any(v is rec.state or reordered(v, rec.state, axis) for v in producer.inputs):
            return True
        stack.extend(v for v in producer.inputs if v is not None)
    return False


def _shape_changes(init: Value, nxt: Value) -> bool:
    """Known to change: ranks differ, or a static dim meets a different static or symbolic one
    (shape inference names a dim symbolically when the trips disagree). Unknown is not evidence."""
    if init.shape is None or nxt.shape is None:
        return False
    if len(init.shape) != len(nxt.shape):
        return True
    return any(a != b for a, b in zip(init.shape, nxt.shape) if a is not None and b is not None)


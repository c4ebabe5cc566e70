"""Unroll a loop with a small constant trip count that no other rule could make legal for TensorRT.

The rule of last resort (see :mod:`loopc.passes.legalize`): a copy of the body per trip. TensorRT recurrences
keep one shape, so ``out = cat([out, f(x[i], out[-1:])])`` read inside the
loop cannot stay a loop. With a constant trip count the loop is just a sequence of bodies: trip
``i`` binds the counter to ``i``, each iterator to ``Gather(source, i)`` (``-1 - i`` reversed),
each state to the previous trip's next value; "last" outputs are the final states, concatenated
outputs are the trips' values unsqueezed and concatenated in order (reversed for "reverse").
"""

from __future__ import annotations

import numpy as np

from loopc.ir import Graph, Loop, Node, Value
from loopc.ir.builder import Builder
from loopc.ir.target import loop_violations
from loopc.passes._util import constant_trips
from loopc.passes._why import legalized, no
from loopc.passes.manager import PassResult

#: Most trips a loop may run to be unrolled (one copy of its body per trip).
MAX_UNROLLED_TRIPS = 64


class Unroll:
    name = "unroll"
    benefit = 0  # see loopc.passes.legalize

    def __call__(self, graph: Graph) -> PassResult:
        unrolled = 0
        for g, node in graph.structured():
            if isinstance(node, Loop) and self._wanted(node):
                legalized(node, f"unrolled into {constant_trips(node)} copies of its body")
                unroll(g, node)
                unrolled += 1
        return PassResult(graph, unrolled > 0, {"loops": unrolled} if unrolled else {})

    def _wanted(self, loop: Loop) -> bool:
        """Whether to unroll ``loop``: it is illegal for TensorRT (the rules before this one could not make it
        legal), and it can be unrolled."""
        if next(loop_violations(loop), None) is None:
            return False  # nothing to make legal: no rewrite declined
        reason = cannot_unroll(loop)
        if reason is not None:
            return no(f"it unrolls a loop only when {reason}", at=loop)
        return True


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

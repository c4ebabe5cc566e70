"""Canonicalize trip limits into what TensorRT's ITripLimitLayer takes.

- A condition that is a loop-invariant constant true adds nothing to a counted loop: drop it
  (then the loop needs no kWHILE limit). Without a trip count such a loop never ends: refuse it.
- A counted loop whose condition is carried, starts as an outer value ``c`` and is then always true
  (tf2onnx's ``while i < n``, once counted-loops has moved ``i < n`` into the trip count) runs
  ``M`` trips if ``c``, else none: its trip count becomes ``c ? M : 0`` and the condition goes,
  when ``c`` is computed from dims and integer inputs (the count is a shape tensor). A kWHILE limit
  would make its scan outputs padded ones cut after the loop by a counter, a size computed from
  data, which TensorRT's builder fails on when the loop is inside another loop.
- A constant trip count must fit TensorRT's INT32 kCOUNT input; negative counts mean zero trips.
"""

from __future__ import annotations

import numpy as np

from loopc.errors import PassError
from loopc.ir import Graph, Loop, Node, Value
from loopc.ir.builder import Builder
from loopc.ir.ops import traits
from loopc.loop_rules import MAX_TRIPS
from loopc.ir import constant_value
from loopc.passes._util import computed_from, constant_trips
from loopc.passes._why import declined
from loopc.passes.manager import PassResult, broken



class TripLimits:
    name = "trip-limits"

    def __call__(self, graph: Graph) -> PassResult:
        stats = {"conditions_dropped": 0, "conditions_folded": 0, "counts_clamped": 0}
        for g, node in graph.structured():
            if isinstance(node, Loop):
                self._condition(node, stats)
                self._first_check(g, node, stats)
                self._count(g, node, stats)
        return PassResult(graph, any(stats.values()), {k: v for k, v in stats.items() if v})

    def ensures(self, graph: Graph) -> None:
        """Every constant trip count is one TensorRT takes: 0 … MAX_TRIPS."""
        for _, node in graph.structured():
            count = constant_trips(node) if isinstance(node, Loop) else None
            if count is not None and not 0 <= count <= MAX_TRIPS:
                raise broken(self, node, f"trip count {count} is left out of range")

    def _condition(self, loop: Loop, stats: dict[str, int]) -> None:
        if loop.condition is None or not always_true(loop, loop.condition):
            return
        if loop.trip_count is None:
            raise PassError(f"{loop.describe()}: the loop never ends (its condition is always true and it has no trip count)")
        loop.set_condition(None)
        stats["conditions_dropped"] += 1

    def _first_check(self, graph: Graph, loop: Loop, stats: dict[str, int]) -> None:
        """``c ? M : 0`` trips for a condition that starts as ``c`` and stays true (see the module's doc)."""
        if loop.condition is None or loop.trip_count is None:
            return
        rec = next((r for r in loop.recurrences if r.state is loop.condition), None)
        if rec is None or rec.init.shape not in ((), (1,)) or not always_true(loop, rec.next, frozenset({rec.state})):
            return
        if not _known_at_start(rec.init):
            declined(f"its condition starts as {rec.init.name!r}, computed from data, so the loop keeps a while "
                     "limit", at=loop)
            return
        count = loop.trip_count
        nodes: list[Node] = []
        b = Builder(graph, nodes)
        zero = b.const(np.zeros((), count.dtype), name=f"{loop.name}_no_trips")
        trips = b.op("Where", [rec.init, count, zero], name=f"{loop.name}_trips_if_first", dtype=count.dtype,
                     shape=rec.init.shape if count.shape == () else count.shape)
        graph.insert_before(loop, nodes)
        loop.set_trip_count(trips)
        loop.set_condition(None)
        stats["conditions_folded"] += 1

    def _count(self, graph: Graph, loop: Loop, stats: dict[str, int]) -> None:
        count = constant_trips(loop)
        if count is None:
            return
        if count > MAX_TRIPS:
            raise PassError(f"{loop.describe()}: trip count {count} exceeds TensorRT's INT32 limit")
        if count < 0 and loop.trip_count is not None:
            made: list[Node] = []
            zero = Builder(graph, made).const(np.array(0, np.int64), name=f"{loop.trip_count.name}_clamped")
            graph.insert_before(loop, made)
            loop.set_trip_count(zero)
            stats["counts_clamped"] += 1


def _known_at_start(flag: Value) -> bool:
    """Whether ``flag`` is computed from dims and integer inputs only (a shape calculation), nothing read
    from data: TensorRT takes no bool network input, nor data, in a trip count."""
    for current in computed_from(flag):
        node = current.producer
        if node is None:
            if current.dtype is None or np.dtype(current.dtype).kind not in "iu" or current.shape is None \
                    or len(current.shape) > 1:
                return False
        elif not traits(node.op).shape_arithmetic:
            return False
    return True


def always_true(loop: Loop, value: Value, seen: frozenset[Value] = frozenset()) -> bool:
    """A constant true, possibly through Identity, or a carried flag that starts and stays true."""
    while value.producer is not None and value.producer.op == "Identity" and value.producer.inputs[0] is not None:
        value = value.producer.inputs[0]
    constant = constant_value(value)
    if constant is not None:
        return bool(np.all(constant))
    rec = next((r for r in loop.recurrences if r.state is value), None)
    if rec is None:
        return False
    if rec.state in seen:
        return True  # a flag passed on unchanged keeps the value the rest of the chain gives it
    return always_true(loop, rec.init) and always_true(loop, rec.next, seen | {rec.state})

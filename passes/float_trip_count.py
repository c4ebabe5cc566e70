"""A trip count computed from floating-point values becomes a while condition under a user bound.

TensorRT's kCOUNT limit (and the length of a concatenated output) is a shape tensor, and shape
tensors are integer computations only: a trip count like ``ceil((limit - start) / delta)`` on
float inputs cannot be one. Inside the loop, though, ``i < M`` is ordinary arithmetic, so the
loop becomes ``while i < M`` (and its old condition, if any) — which needs --max-trips for the
length of its concatenated outputs, and the while-outputs pass cuts them to the trips run.
"""

from __future__ import annotations

import numpy as np

from loopc.errors import PassError, located
from loopc.ir import Graph, Loop, Node, Recurrence, Value
from loopc.ir.builder import I64, Builder
from loopc.ir.printer import float_kind
from loopc.loop_rules import bound_hint
from loopc.passes._util import computed_from
from loopc.passes.manager import PassResult, broken

BOOL = np.dtype(np.bool_)


class FloatTripCount:
    name = "float-trip-count"

    def __init__(self, max_trips: int | None = None) -> None:
        self.max_trips = max_trips

    def __call__(self, graph: Graph) -> PassResult:
        rewritten = 0
        for outer, node in graph.structured():
            if isinstance(node, Loop) and node.trip_count is not None and _from_floats(node.trip_count):
                self._rewrite(outer, node)
                rewritten += 1
        return PassResult(graph, rewritten > 0, {"loops": rewritten} if rewritten else {})

    def ensures(self, graph: Graph) -> None:
        """No trip count is computed from floating-point values."""
        for _, node in graph.structured():
            if isinstance(node, Loop) and node.trip_count is not None and _from_floats(node.trip_count):
                raise broken(self, node, "a trip count computed from floats is left")

    def _rewrite(self, outer: Graph, loop: Loop) -> None:
        if self.max_trips is None:
            raise located(PassError, loop.describe(), "its trip count is computed from floating-point values, which "
                          "TensorRT cannot use as a trip count", bound_hint())
        count = loop.trip_count
        assert count is not None
        before: list[Node] = []
        b = Builder(outer, before)
        zero = b.const(np.array(0, np.int64), name=f"{loop.name}_i0")
        bound = b.const(np.array(self.max_trips, np.int64), name=f"{loop.name}_max_trips")
        outer.insert_before(loop, before)
        body = Builder(loop.body)
        i = body.value(f"{loop.name}_i", I64, ())
        i_next = body.op("Add", [i, body.const(np.array(1, np.int64), name=f"{loop.name}_i_step")],
                         name=f"{loop.name}_i_next")
        condition = below = body.op("Less", [i, count], name=f"{loop.name}_below_count", dtype=BOOL, shape=())
        if loop.condition is not None:
            condition = body.op("And", [loop.condition, below], name=f"{loop.name}_keep_going", dtype=BOOL, shape=())
        loop.add_recurrence(Recurrence(i, zero, i_next))
        loop.set_trip_count(None)
        loop.set_condition(condition)
        loop.set_max_trips(bound)


def _from_floats(value: Value) -> bool:
    """Whether ``value`` is computed from a floating-point input (a value no node produces).

    TensorRT does carry float arithmetic inside shape calculations that start from integers (a
    Range on int32 bounds casts through float); what it cannot do is start one from float data."""
    return any(v.producer is None and v.dtype is not None and float_kind(v.dtype) for v in computed_from(value))

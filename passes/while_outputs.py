"""Give a while loop's concatenated outputs TensorRT's shape, then cut them to the trips run.

TensorRT's kCONCATENATE output is as long as its length input (the trip count M or the user's
--max-trips bound) and padded past the trips run; ONNX's scan outputs hold exactly the trips
run. So the loop carries a trip counter, and each such output is sliced to its final value
after the loop. Runs after trip-limit canonicalization and counted-loops, so a condition that
is always true, or a trip count hidden in the condition, costs nothing and needs no bound.

A while loop with neither a trip count nor a bound of the user's has no length TensorRT could
size such an output by: that is refused here, naming the user's loop and --max-trips, since loopc never
guesses one.
"""

from __future__ import annotations

import numpy as np

from loopc.errors import PassError, located
from loopc.ir import Graph, Loop, LoopOutput, Node, Value, constant_int
from loopc.ir.builder import Builder
from loopc.loop_rules import bound_hint
from loopc.passes._util import first_rows, rows_cut, trips_run
from loopc.passes._why import recorded
from loopc.passes.manager import PassResult, broken


#: Why a while loop with collected outputs and no trip count or bound is refused (``bound_hint()`` says what to do).
UNBOUNDED = ("the loop collects a value on every trip and ends on its condition, after a number of trips loopc "
             "cannot tell before it runs, so TensorRT has no length for the collected output")


class WhileOutputs:
    """``max_trips`` is the user's --max-trips: the length of outputs of loops with no trip count."""

    name = "while-outputs"
    #: a loop's count may be found later in the round that first sees it (a list's length read in its condition)
    refusals_wait = True

    def __init__(self, max_trips: int | None = None) -> None:
        self.max_trips = max_trips

    def __call__(self, graph: Graph) -> PassResult:
        cut = padded = 0
        for g, node in graph.structured():
            if not isinstance(node, Loop) or node.padded or node.condition is None:
                continue
            stacked = [o for o in node.loop_outputs if o.kind != "last"]
            unbounded = bool(stacked) and node.trip_count is None and node.max_trips is None
            if unbounded and self.max_trips is None:  # before any edit, so that the refusal may wait
                uncounted = recorded("counted-loops", node)
                raise located(PassError, node.describe(), UNBOUNDED + (
                    f" (counted-loops: {'; '.join(uncounted)})" if uncounted else ""), bound_hint())
            if any(o.kind == "reverse" for o in stacked):
                raise PassError(f"{node.describe()}: a reversed output of a loop that can stop early is not supported")
            node.set_padded(True)
            padded += 1
            if not stacked:
                continue
            if unbounded:
                self._bound(g, node)
            length = constant_int(node.max_trips if node.max_trips is not None else node.trip_count)
            for out in stacked:
                if out.result.shape is not None:  # now as long as the length input, not the trips run
                    dims = list(out.result.shape)
                    dims[out.axis] = length
                    out.result.shape = tuple(dims)
            counted = _trips_counted(node)
            stacked = [o for o in stacked if not _already_cut(o, counted)]
            if not stacked:
                continue
            trips = trips_run(g, node)
            for out in reversed(stacked):
                nodes: list[Node] = []
                exact = first_rows(Builder(g, nodes), out.result, trips, out.axis)
                out.result.replace_all_uses_with(exact)
                g.insert_after(node, nodes)
            cut += len(stacked)
        stats = {k: v for k, v in (("loops", padded), ("outputs", cut)) if v}
        return PassResult(graph, padded > 0, stats)

    def ensures(self, graph: Graph) -> None:
        """Every loop that can stop early has TensorRT's padded outputs, sized by a trip count or bound."""
        for _, node in graph.structured():
            if isinstance(node, Loop) and node.condition is not None and not node.padded:
                raise broken(self, node, "a loop that can stop early is left unpadded")

    def _bound(self, outer: Graph, loop: Loop) -> None:
        before: list[Node] = []
        loop.set_max_trips(Builder(outer, before).const(np.array(self.max_trips, np.int64), name=f"{loop.name}_max_trips"))
        outer.insert_before(loop, before)


def _trips_counted(loop: Loop) -> set[Value]:
    """The "last" outputs of ``loop`` that count its trips: a recurrence from 0 stepping by 1 (:func:`trips_run`)."""
    counters = {rec.state for rec in loop.recurrences if constant_int(rec.init) == 0 and rec.next.producer is not None
                and rec.next.producer.op == "Add" and rec.next.producer.inputs[0] is rec.state
                and constant_int(rec.next.producer.inputs[1]) == 1}
    return {o.result for o in loop.loop_outputs if o.kind == "last" and o.value in counters}


def _already_cut(out: LoopOutput, counted: set[Value]) -> bool:
    """Whether every reader of ``out`` already cuts it to the trips run (:func:`first_rows`), as a model this pass
    once ran on does (a ``loopc export``, read back): cutting again would only add a second Slice."""
    uses = out.result.uses()
    cuts = [rows_cut(use.user.outputs[0]) if isinstance(use.user, Node) and use.user.outputs else None for use in uses]
    return bool(uses) and all(cut is not None and cut[0] is out.result and cut[1] in counted and cut[2] == out.axis
                              for cut in cuts)

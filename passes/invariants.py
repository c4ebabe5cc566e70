"""Loop invariants: constants in a body, and carried values that never change.

A Constant node in a loop body moves out of it (before the loop), where other passes can see it
as the invariant it is (an iterator's source must be outside the loop, for one) — except the loop's
condition, which TensorRT reads from the body. Loops are
visited inner first, so a constant nested N loops deep is out of all of them in one call.

A carried value that never changes (its next value is its own state) is a loop invariant (unless
it is the loop's condition, which must stay a body value: trip-limits settles a constant one).

Reads of the state inside the body become reads of the initial value, which TensorRT uses
directly inside the loop; a "last" output of it is the initial value too (after any number of
trips, including zero). The recurrence and that output are then removed.
"""

from __future__ import annotations

from loopc.ir import Graph, Loop
from loopc.passes.manager import PassResult, broken


class Invariants:
    name = "invariants"

    def __call__(self, graph: Graph) -> PassResult:
        hoisted = moved = 0
        # inner loops first: a constant leaves every level it is nested in within one call
        for outer, node in reversed(graph.structured()):
            if not isinstance(node, Loop):
                continue
            # the condition stays: TensorRT's kWHILE limit reads a body value (trip-limits drops a constant one)
            constants = [n for g, n in node.body.find("Constant") if g is node.body and node.condition not in n.outputs]
            outer.insert_before(node, constants)  # moves them
            moved += len(constants)
            for rec in [r for r in node.recurrences if r.next is r.state and r.state is not node.condition]:
                for out in [o for o in node.loop_outputs if o.value is rec.state and o.kind == "last"]:
                    node.remove_output(out)
                    out.result.replace_all_uses_with(rec.init)
                node.remove_recurrence(rec)
                rec.state.replace_all_uses_with(rec.init)
                hoisted += 1
        stats = {k: v for k, v in (("recurrences", hoisted), ("constants", moved)) if v}
        return PassResult(graph, bool(stats), stats)

    def ensures(self, graph: Graph) -> None:
        """No loop body holds a Constant other than its condition."""
        for body, node in graph.find("Constant"):
            loop = body.owner
            if isinstance(loop, Loop) and loop.condition not in node.outputs:
                raise broken(self, node, "a constant is left in a loop body")

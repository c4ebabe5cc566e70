"""Give a while loop's concatenated outputs TensorRT's shape, then cut them to the trips run.

TensorRT's kCONCATENATE output is as long as its length input (the trip count M or the user's
--max-trips bound) and padded past the trips run; ONNX's scan outputs hold exactly the trips
run. So the loop carries a trip counter, and each such output is sliced to its final value
after the loop. Runs after trip-limit canonicalization, so a condition that is always true
(and so no early exit) costs nothing.
"""

from __future__ import annotations

from loopc.errors import PassError
from loopc.ir import Graph, Loop
from loopc.passes._util import first_rows, replace_uses, trips_run
from loopc.passes.manager import PassResult


class WhileOutputs:
    name = "while-outputs"

    def __call__(self, graph: Graph) -> PassResult:
        cut = 0
        for g, node in list(graph.walk()):
            if not isinstance(node, Loop) or node.padded or node.condition is None:
                continue
            stacked = [o for o in node.loop_outputs if o.kind != "last"]
            node.padded = True
            if not stacked:
                continue
            if any(o.kind == "reverse" for o in stacked):
                raise PassError(f"{node.describe()}: a reversed output of a loop that can stop early is not supported")
            trips = trips_run(g, node)
            after = g.nodes.index(node) + 1
            for out in stacked:
                nodes: list = []
                exact = first_rows(nodes, out.result, trips, out.axis)
                for made in nodes:
                    made.origin = f"{node.describe()}, cutting {out.result.name!r} to the trips run"
                replace_uses(graph, out.result, exact)
                g.nodes[after:after] = nodes
                after += len(nodes)
            cut += len(stacked)
        return PassResult(graph, cut > 0, {"outputs": cut} if cut else {})

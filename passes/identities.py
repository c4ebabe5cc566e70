"""Identity nodes are names, not work: reads of an Identity's output read its input instead.

Exporters emit them to name loop-body outputs; as TensorRT layers they only add a copy per trip.
Output names survive: the model keeps its output names apart from the values (``Model.output_names``).
"""

from __future__ import annotations

from loopc.ir import Graph
from loopc.passes._util import replace_uses
from loopc.passes.manager import PassResult


class Identities:
    name = "identities"

    def __call__(self, graph: Graph) -> PassResult:
        removed = 0
        for g, node in list(graph.walk()):
            if node.op != "Identity" or node.inputs[0] is None or node.inputs[0].dtype != node.outputs[0].dtype:
                continue
            g.nodes.remove(node)
            replace_uses(graph, node.outputs[0], node.inputs[0])
            removed += 1
        return PassResult(graph, removed > 0, {"nodes": removed} if removed else {})

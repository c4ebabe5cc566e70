"""Identity nodes are names, not work: reads of an Identity's output read its input instead.

Exporters emit them to name loop-body outputs; as TensorRT layers they only add a copy per trip.
Output names survive: the model keeps its output names apart from the values (``Model.output_names``).
"""

from __future__ import annotations

from loopc.ir import Graph
from loopc.passes.manager import PassResult, broken


class Identities:
    name = "identities"

    def __call__(self, graph: Graph) -> PassResult:
        dropped = 0
        for g, node in list(graph.walk()):
            source = node.inputs[0] if node.op == "Identity" and node.inputs else None
            if source is None or source.dtype != node.outputs[0].dtype:
                continue
            node.outputs[0].replace_all_uses_with(source)
            g.remove(node)
            dropped += 1
        return PassResult(graph, dropped > 0, {"nodes": dropped} if dropped else {})

    def ensures(self, graph: Graph) -> None:
        """No Identity that only renames is left."""
        for _, node in graph.walk():
            if node.op == "Identity" and node.inputs and node.inputs[0] is not None \
                    and node.inputs[0].dtype == node.outputs[0].dtype:
                raise broken(self, node, "an Identity is left")

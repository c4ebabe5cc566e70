"""Nodes that compute their input unchanged are names, not work: their readers read the input instead.

Exporters emit Identity nodes to name loop-body outputs; as TensorRT layers they only add a copy per
trip. The other such nodes take back a size-1 axis an Unsqueeze just added: a Squeeze of the same
axis, or a Gather of index 0 on it (what an ONNX LSTM/GRU/RNN's ``initial_h[0]`` is when a PyTorch
cell hands it ``h.unsqueeze(0)``). The Gather would be a kernel on the recurrence's critical path.
Output names survive: the model keeps its output names apart from the values (``Model.output_names``).
"""

from __future__ import annotations

import numpy as np

from loopc.ir import Graph, Node, Value, constant_value
from loopc.passes.manager import PassResult, broken


class Identities:
    name = "identities"

    def __call__(self, graph: Graph) -> PassResult:
        dropped = 0
        for g, node in list(graph.walk()):
            source = same_value(node)
            if source is None:
                continue
            node.outputs[0].replace_all_uses_with(source)
            g.remove(node)
            dropped += 1
        return PassResult(graph, dropped > 0, {"nodes": dropped} if dropped else {})

    def ensures(self, graph: Graph) -> None:
        """No node that computes its input unchanged is left."""
        for _, node in graph.walk():
            if same_value(node) is not None:
                raise broken(self, node, "a node that computes its input unchanged is left")


def same_value(node: Node) -> Value | None:
    """The value ``node`` computes unchanged, if it computes one."""
    source = node.inputs[0] if node.inputs else None
    if source is None or source.dtype != node.outputs[0].dtype:
        return None
    if node.op == "Identity":
        return source
    added = source.producer
    if node.op not in ("Squeeze", "Gather") or added is None or added.op != "Unsqueeze" or len(node.inputs) < 2:
        return None
    rank = len(source.shape) if source.shape is not None else None
    axis = _one_axis(constant_value(added.inputs[1]) if len(added.inputs) > 1 else None, rank)
    if node.op == "Squeeze":
        taken = _one_axis(constant_value(node.inputs[1]), rank)
    else:
        index = constant_value(node.inputs[1])
        scalar_zero = index is not None and np.ndim(index) == 0 and int(index) in (0, -1)
        taken = _one_axis(np.array([node.attrs.get("axis", 0)]), rank) if scalar_zero else None
    return added.inputs[0] if axis is not None and axis == taken else None


def _one_axis(axes: object, rank: int | None) -> int | None:
    """The single axis ``axes`` holds, made non-negative for a value of ``rank``; None otherwise."""
    if axes is None or np.size(axes) != 1:  # type: ignore[arg-type]
        return None
    axis = int(np.asarray(axes).reshape(-1)[0])
    if axis >= 0:
        return axis
    return axis + rank if rank is not None else None

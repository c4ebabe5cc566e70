"""Nodes that compute their input unchanged are names, not work: their readers read the input instead.

Exporters emit Identity nodes to name loop-body outputs, and TorchScript casts a carried value to the
type it has (torchvision's ``torch.cat((acc.to(torch.float32), piece), 0)``); as TensorRT layers they
only add a copy per trip, and a Cast hides a growing concatenation from the pass that turns it into a
loop output. A Where whose condition is known to be all true or all false is the branch it takes. The other
such nodes take back a size-1 axis an Unsqueeze just added: a Squeeze of the same
axis, or a Gather of index 0 on it (what an ONNX LSTM/GRU/RNN's ``initial_h[0]`` is when a PyTorch
cell hands it ``h.unsqueeze(0)``). The Gather would be a kernel on the recurrence's critical path.
Output names survive: the model keeps its output names apart from the values (``Model.output_names``).
"""

from __future__ import annotations

import numpy as np

from loopc.ir import Graph, Node, Value, constant_value
from loopc.passes._why import declined
from loopc.passes.manager import PassResult, broken
from loopc.semantics.attributes import attr


#: The ops :func:`same_value` can find computing their input unchanged.
_MAY_PASS_ON = ("Where", "Identity", "Cast", "Squeeze", "Gather")


class Identities:
    name = "identities"

    def __call__(self, graph: Graph) -> PassResult:
        dropped = 0
        for g, node in list(graph.find(*_MAY_PASS_ON)):
            source = same_value(node)
            if source is None:
                continue
            node.outputs[0].replace_all_uses_with(source)
            g.remove(node)
            dropped += 1
        return PassResult(graph, dropped > 0, {"nodes": dropped} if dropped else {})

    def ensures(self, graph: Graph) -> None:
        """No node that computes its input unchanged is left."""
        for _, node in graph.find(*_MAY_PASS_ON):
            if same_value(node) is not None:
                raise broken(self, node, "a node that computes its input unchanged is left")


def same_value(node: Node) -> Value | None:
    """The value ``node`` computes unchanged, if it computes one."""
    if node.op == "Where":
        return _picked(node)
    source = node.inputs[0] if node.inputs else None
    if source is None or source.dtype != node.outputs[0].dtype:
        return None  # no operand, or a Cast that converts
    if node.op in ("Identity", "Cast"):  # a Cast to the type its input has already
        return source
    added = source.producer
    if node.op not in ("Squeeze", "Gather") or added is None or added.op != "Unsqueeze" or len(node.inputs) < 2:
        return None  # takes back no axis an Unsqueeze added
    rank = len(source.shape) if source.shape is not None else None
    axis = _one_axis(constant_value(added.inputs[1]) if len(added.inputs) > 1 else None, rank)
    if node.op == "Squeeze":
        taken = _one_axis(constant_value(node.inputs[1]), rank)
    else:
        index = constant_value(node.inputs[1])
        scalar_zero = index is not None and np.ndim(index) == 0 and int(index) in (0, -1)
        taken = _one_axis(np.array([attr(node, "axis")]), rank) if scalar_zero else None
    if axis is not None and axis == taken:
        return added.inputs[0]
    if rank is None and (axis is None or taken is None):  # a negative axis, on a value of unknown rank
        return declined(f"it may take back the axis {added.name!r} adds, but the rank of {source.name!r} is "
                        "unknown", at=node)
    return None  # another axis, or more than one


def _picked(node: Node) -> Value | None:
    """The branch a Where with a condition of one known value takes, when it is the output as it is (same
    dims, no broadcast): tf2onnx's strided slices mask their bounds with conditions that are all false."""
    cond, yes, no = (list(node.inputs) + [None, None, None])[:3]
    known = _known_all(cond) if cond is not None else None
    taken = None if known is None else yes if known else no
    out = node.outputs[0]
    if taken is None:
        return None  # a condition that varies (or is not known)
    if taken.dtype != out.dtype or taken.shape is None or taken.shape != out.shape or None in taken.shape:
        # an unknown dim equal to an unknown dim proves nothing: the branch might be broadcast to the output
        return declined(f"its condition is known, but the branch {taken.name!r} it takes may be broadcast to "
                        f"its result", at=node)
    return taken


def _known_all(flags: Value, depth: int = 0) -> bool | None:
    """True (False) when every element of the bool ``flags`` is true (false), through And and Or."""
    array = constant_value(flags)
    if array is not None:
        values = np.asarray(array)
        return bool(values.all()) if values.all() or not values.any() else None
    node = flags.producer
    if node is None or node.op not in ("And", "Or") or depth > 8 or None in node.inputs:
        return None
    sides = [_known_all(v, depth + 1) for v in node.inputs if v is not None]
    absorbing = node.op == "Or"  # true absorbs Or, false absorbs And
    if absorbing in sides:
        return absorbing
    return (not absorbing) if all(side is not None for side in sides) else None


def _one_axis(axes: object, rank: int | None) -> int | None:
    """The single axis ``axes`` holds, made non-negative for a value of ``rank``; None otherwise."""
    if axes is None or np.size(axes) != 1:  # type: ignore[arg-type]
        return None
    axis = int(np.asarray(axes).reshape(-1)[0])
    if axis >= 0:
        return axis
    return axis + rank if rank is not None else None

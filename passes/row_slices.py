"""``x[i:i+1]`` at an index an ArgMax, ArgMin or TopK computed is a Gather of that row.

PyTorch code picks the best entry with ``i = int(torch.argmax(s))`` and reads ``x[i:i + 1]`` (a greedy NMS
loop writing a detection row); the exporter writes a Slice from ``Unsqueeze(i)`` to ``Unsqueeze(i + 1)``, and
OpenVINO's converter makes the same read ``Squeeze(TopK(s, 1).indices)`` and ends it at ``Unsqueeze(i) + 1``.
In general a Slice's length follows its bounds' values (ONNX clamps them to the axis), and a length computed
from data inside a loop fails TensorRT's builder (``makeScopeNodesContiguous``). Here it cannot vary: an
ArgMax, ArgMin or TopK index over an axis of static length L is ``0 <= i <= L - 1``, so on an axis at least L
long the bounds need no clamping and the Slice is exactly ``Gather(x, [i])``, whose length is static.
"""

from __future__ import annotations

import numpy as np

from loopc.ir import Graph, Node, Value, constant_value
from loopc.ir.builder import Builder
from loopc.passes._offending import Offending
from loopc.passes._why import declined, kept_if
from loopc.passes.manager import PassResult
from loopc.semantics.attributes import attr


class RowSlices:
    name = "row-slices"
    benefit = 100  # see loopc.passes.legalize

    def __call__(self, graph: Graph) -> PassResult:
        rewritten, offending = 0, Offending()
        for g, node in list(graph.find("Slice")):
            with kept_if(lambda: offending.node(node)):
                axis = row_at_an_arg_index(node)
            if axis is None:
                continue
            old = node.outputs[0]
            made: list[Node] = []
            b = Builder(g, made)
            row = b.value(f"{old.name}_row", old.dtype, old.shape)
            b.node("Gather", node.inputs[:2], [row], {"axis": axis}, name=f"{node.name}_row")
            g.insert_before(node, made)
            old.replace_all_uses_with(row)
            g.remove(node)
            offending.changed()
            rewritten += 1
        return PassResult(graph, rewritten > 0, {"slices": rewritten} if rewritten else {})


def row_at_an_arg_index(node: Node) -> int | None:
    """The axis when ``node`` is ``Slice(x, [i], [i + 1], [axis], [1])`` with ``i`` in range by construction;
    else None, saying why when ``node`` is a Slice."""
    if node.op != "Slice":
        return None
    axis = _one_unit_axis(node)
    if axis is None:
        return None
    data, starts, ends = node.inputs[:3]
    assert data is not None and data.shape is not None and starts is not None and ends is not None
    dim = data.shape[axis]
    if not isinstance(dim, int):
        return declined(f"the slice's data has no static length along axis {axis}", at=node)
    index = _unsqueezed_scalar(starts)
    end = _unsqueezed_scalar(ends)
    if index is None or not (_is_plus_one(ends, starts) or (end is not None and _is_plus_one(end, index))):
        return declined("the slice's bounds are not [i] and [i + 1] for one scalar i", at=node)
    length = _index_range(index)
    if length is None:
        return declined("the slice's start is not an ArgMax/ArgMin/TopK index over an axis of static length",
                        at=node)
    if length > dim:
        return declined(f"the slice's start indexes {length} entries, more than the {dim} rows of its data",
                        at=node)
    return axis


def _one_unit_axis(node: Node) -> int | None:
    """The one axis the Slice ``node`` cuts with unit step, its data's rank known; else None, saying why."""
    if len(node.inputs) < 4 or any(v is None for v in node.inputs[:4]):
        return declined("the slice names no axes", at=node)
    data, axes = node.inputs[0], node.inputs[3]
    steps = constant_value(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else np.ones(1)
    axes_value = constant_value(axes)
    if data is None or data.shape is None:
        return declined("the slice's data has no known rank", at=node)
    if axes_value is None or np.size(axes_value) != 1:
        return declined("the slice does not cut one constant axis", at=node)
    if steps is None or np.size(steps) != 1 or int(np.asarray(steps).reshape(-1)[0]) != 1:
        return declined("the slice's step is not a constant 1", at=node)
    axis = int(np.asarray(axes_value).reshape(-1)[0])
    axis = axis + len(data.shape) if axis < 0 else axis
    if not 0 <= axis < len(data.shape):
        return declined(f"the slice's axis {axis} is not an axis of its data", at=node)
    return axis


def _unsqueezed_scalar(value: Value) -> Value | None:
    """``s`` when ``value`` is ``Unsqueeze(s, [0])`` of a 0-d ``s``."""
    node = value.producer
    if node is None or node.op != "Unsqueeze" or len(node.inputs) < 2 or node.inputs[0] is None:
        return None
    axes = constant_value(node.inputs[1]) if node.inputs[1] is not None else None
    scalar = node.inputs[0]
    if axes is None or np.size(axes) != 1 or int(np.asarray(axes).reshape(-1)[0]) not in (0, -1):
        return None
    return scalar if scalar.shape == () else None


def _is_plus_one(end: Value, start: Value) -> bool:
    """Whether ``end`` is ``start + 1`` (either operand order)."""
    node = end.producer
    if node is None or node.op != "Add" or len(node.inputs) != 2:
        return False
    for a, b in (node.inputs, node.inputs[::-1]):
        one = constant_value(b) if b is not None else None
        if a is start and one is not None and np.size(one) == 1 and int(np.asarray(one).reshape(-1)[0]) == 1:
            return True
    return False


def _index_range(index: Value) -> int | None:
    """L when the 0-d ``index`` is an index into an axis of static length L: ArgMax/ArgMin (keepdims 0), or
    the one index of a TopK squeezed."""
    node = index.producer
    if node is not None and node.op == "Squeeze" and node.inputs[0] is not None:
        topk = node.inputs[0].producer
        if topk is None or topk.op != "TopK" or node.inputs[0] is not topk.outputs[1] or node.inputs[0].shape != (1,):
            return None
        node = topk
    elif node is None or node.op not in ("ArgMax", "ArgMin") or attr(node, "keepdims") != 0:
        return None
    shape = node.inputs[0].shape if node.inputs[0] is not None else None
    if shape is None or len(shape) != 1:
        return None
    axis = int(attr(node, "axis"))
    axis = axis + len(shape) if axis < 0 else axis
    dim = shape[axis] if 0 <= axis < len(shape) else None
    return dim if isinstance(dim, int) and dim > 0 else None

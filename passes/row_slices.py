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
from loopc.passes.manager import PassResult


class RowSlices:
    name = "row-slices"

    def __call__(self, graph: Graph) -> PassResult:
        rewritten = 0
        for g, node in list(graph.walk()):
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
            rewritten += 1
        return PassResult(graph, rewritten > 0, {"slices": rewritten} if rewritten else {})


def row_at_an_arg_index(node: Node) -> int | None:
    """The axis when ``node`` is ``Slice(x, [i], [i + 1], [axis], [1])`` with ``i`` in range by construction."""
    if node.op != "Slice" or len(node.inputs) < 4:
        return None
    data, starts, ends, axes = node.inputs[:4]
    if data is None or starts is None or ends is None or axes is None:
        return None
    steps = constant_value(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else np.ones(1)
    axes_value = constant_value(axes)
    if data.shape is None or axes_value is None or np.size(axes_value) != 1 or steps is None or np.size(steps) != 1:
        return None
    if int(np.asarray(steps).reshape(-1)[0]) != 1:
        return None
    axis = int(np.asarray(axes_value).reshape(-1)[0])
    axis = axis + len(data.shape) if axis < 0 else axis
    dim = data.shape[axis] if 0 <= axis < len(data.shape) else None
    if not isinstance(dim, int):
        return None
    index = _unsqueezed_scalar(starts)
    end = _unsqueezed_scalar(ends)
    if index is None or not (_is_plus_one(ends, starts) or (end is not None and _is_plus_one(end, index))):
        return None
    length = _index_range(index)
    return axis if length is not None and length <= dim else None


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
    elif node is None or node.op not in ("ArgMax", "ArgMin") or node.attrs.get("keepdims", 1) != 0:
        return None
    shape = node.inputs[0].shape if node.inputs[0] is not None else None
    if shape is None or len(shape) != 1:
        return None
    axis = int(node.attrs.get("axis", 0 if node.op != "TopK" else -1))
    axis = axis + len(shape) if axis < 0 else axis
    dim = shape[axis] if 0 <= axis < len(shape) else None
    return dim if isinstance(dim, int) and dim > 0 else None

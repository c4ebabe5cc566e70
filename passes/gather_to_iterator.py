"""``x[i]`` inside a loop — a loop-invariant tensor indexed by the iteration counter — is an iterator.

ONNX Loop bodies read their inputs by the iteration number: ``Gather(x, i)`` (``x[i]``) or
``Slice(x, [i], [i + 1], [a])`` (``x[i:i+1]``, PyTorch's export of slicing). TensorRT iterates
natively with IIteratorLayer, which streams slices instead of indexing each trip (and its builder
rejects some counter-indexed slices outright). The rewrite is exact: both read slice ``i`` along
the same axis (the Slice form keeps the axis, so an Unsqueeze restores it), and both are errors
when ``i`` is past the end.
"""

from __future__ import annotations

import numpy as np

from loopc.ir import Graph, Loop, LoopIterator, Node, Value
from loopc.passes._util import constant, constant_value, replace_uses
from loopc.passes.manager import PassResult


class GatherToIterator:
    name = "gather-to-iterator"

    def __call__(self, graph: Graph) -> PassResult:
        rewritten = 0
        for _, node in list(graph.walk()):
            if isinstance(node, Loop) and node.counter is not None:
                rewritten += self._rewrite(graph, node)
        return PassResult(graph, rewritten > 0, {"iterators": rewritten} if rewritten else {})

    def _rewrite(self, graph: Graph, loop: Loop) -> int:
        inner = {id(v) for v in loop.body.inputs} | {id(v) for _, n in loop.body.walk() for v in n.outputs}
        rewritten = 0
        for node in list(loop.body.nodes):
            data = node.inputs[0] if node.inputs else None
            if data is None or id(data) in inner or node.op not in ("Gather", "Slice"):
                continue
            axis = _gather_axis(loop, node) if node.op == "Gather" else _slice_axis(loop, node)
            rank = len(data.shape) if data.shape is not None else None
            if axis is None or (axis < 0 and rank is None):
                continue
            axis = axis + rank if axis < 0 and rank is not None else axis
            out = node.outputs[0]
            element = Value(f"{out.name}_iter", out.dtype, None if data.shape is None else
                            data.shape[:axis] + data.shape[axis + 1:])
            loop.iterators.append(LoopIterator(element, data, axis))
            at = loop.body.nodes.index(node)
            loop.body.nodes.remove(node)
            if node.op == "Slice":  # x[i:i+1] keeps the axis x[i] drops
                restored: list[Node] = []
                axes = constant(restored, f"{out.name}_axis", np.array([axis], np.int64))
                kept = Value(f"{out.name}_kept", out.dtype, out.shape)
                restored.append(Node("Unsqueeze", [element, axes], [kept], origin=node.origin))
                loop.body.nodes[at:at] = restored
                element = kept
            loop.sync()
            replace_uses(graph, out, element)
            rewritten += 1
        return rewritten


def _gather_axis(loop: Loop, node: Node) -> int | None:
    index = node.inputs[1]
    if index is not loop.counter or index.shape != ():
        return None
    return int(node.attrs.get("axis", 0))


def _slice_axis(loop: Loop, node: Node) -> int | None:
    """The axis of ``Slice(x, [i], [i + 1], [axis], [1])``, else None."""
    starts, ends = node.inputs[1], node.inputs[2]
    axes = node.inputs[3] if len(node.inputs) > 3 else None
    steps = node.inputs[4] if len(node.inputs) > 4 else None
    if not (_unsqueezed(starts) is loop.counter and _plus_one(_unsqueezed(ends)) is loop.counter):
        return None
    if steps is not None and not _is(steps, [1]):
        return None
    if axes is None:
        return 0
    value = constant_value(axes)
    return int(np.asarray(value).reshape(-1)[0]) if value is not None and np.asarray(value).size == 1 else None


def _unsqueezed(value: Value | None) -> Value | None:
    """``v`` when ``value`` is ``Unsqueeze(v, [0])`` (or a Reshape to one element) of a scalar."""
    node = value.producer if value is not None else None
    if node is None or node.op not in ("Unsqueeze", "Reshape") or node.inputs[0] is None:
        return None
    return node.inputs[0] if node.inputs[0].shape == () else None


def _plus_one(value: Value | None) -> Value | None:
    node = value.producer if value is not None else None
    if node is None or node.op != "Add":
        return None
    a, b = node.inputs
    if _is(b, 1):
        return a
    return b if _is(a, 1) else None


def _is(value: Value | None, expected: object) -> bool:
    found = constant_value(value)
    return found is not None and np.array_equal(np.asarray(found).reshape(-1), np.asarray(expected).reshape(-1))

"""A Range whose element count is a constant is a constant range shifted by its start.

An attention step's causal mask numbers its queries ``Range(n - q, n - q + q, 1)`` (PyTorch's
``arange(n - q, n)``), where ``n``, the key cache's length, changes on every trip and ``q``, the new tokens,
is a constant. As written the count comes from the data, so TensorRT's builder computes the Range's shape
from values a loop makes in each trip, which it cannot order inside a loop. ``start + Range(0, k, step)``
has the same values and a shape fixed when the model is built.

Integer ranges only: the count of a float range is ``ceil((end - start) / step)`` in rounded arithmetic,
which need not be ``k / step`` exactly.
"""

from __future__ import annotations

import numpy as np

from loopc.ir import Graph, Node, Value, constant_int
from loopc.ir.builder import Builder
from loopc.passes.manager import PassResult


class FixedRanges:
    name = "fixed-ranges"

    def __call__(self, graph: Graph) -> PassResult:
        fixed = 0
        for g, node in list(graph.walk()):
            if node.op != "Range" or node.graph is None:
                continue
            count = _constant_span(node)
            step = constant_int(node.inputs[2])
            out, start = node.outputs[0], node.inputs[0]
            if count is None or not step or out.dtype is None or out.dtype.kind not in "iu" or start is None:
                continue
            made: list[Node] = []
            b = Builder(g, made).standing_for(node)
            offsets = b.const(np.arange(0, count, step, dtype=out.dtype), name=f"{out.name}_offsets")
            shifted = b.op("Add", [start, offsets], name=f"{out.name}_fixed", dtype=out.dtype)
            g.insert_before(node, made)
            out.replace_all_uses_with(shifted)
            g.remove(node)
            fixed += 1
        return PassResult(graph, fixed > 0, {"ranges": fixed} if fixed else {})


def _constant_span(node: Node) -> int | None:
    """``end - start`` of the Range ``node`` when its operands show it is a constant ``k``: the end is
    ``start + k`` (or ``k + start``), or the start is ``end - k``."""
    start, end = node.inputs[0], node.inputs[1]
    if end is not None and end.producer is not None and end.producer.op == "Add":
        left, right = end.producer.inputs
        if left is start:
            return _int(right)
        if right is start:
            return _int(left)
    if start is not None and start.producer is not None and start.producer.op == "Sub":
        left, right = start.producer.inputs
        if left is end:
            return _int(right)
    return None


def _int(value: Value | None) -> int | None:
    """A constant non-negative integer scalar."""
    k = constant_int(value)
    return k if k is not None and k >= 0 and value is not None and value.shape == () else None

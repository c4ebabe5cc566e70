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
from loopc.passes._offending import Offending
from loopc.passes._why import declined, kept_if
from loopc.passes.manager import PassResult


class FixedRanges:
    name = "fixed-ranges"
    benefit = 100  # see loopc.passes.legalize

    def __call__(self, graph: Graph) -> PassResult:
        fixed, offending = 0, Offending()
        for g, node in list(graph.find("Range")):
            if node.graph is None:
                continue
            with kept_if(lambda: offending.node(node)):
                fixed_count = _fixed_count(node)
            out, start = node.outputs[0], node.inputs[0]
            if fixed_count is None or start is None:
                continue
            count, step = fixed_count
            made: list[Node] = []
            b = Builder(g, made).standing_for(node)
            offsets = b.const(np.arange(0, count, step, dtype=out.dtype), name=f"{out.name}_offsets")
            shifted = b.op("Add", [start, offsets], name=f"{out.name}_fixed", dtype=out.dtype)
            g.insert_before(node, made)
            out.replace_all_uses_with(shifted)
            g.remove(node)
            offending.changed()
            fixed += 1
        return PassResult(graph, fixed > 0, {"ranges": fixed} if fixed else {})


def _fixed_count(node: Node) -> tuple[int, int] | None:
    """The constant span ``k`` of the integer Range ``node`` (see :func:`_span`) and its delta, when that is a
    nonzero constant too; else None, saying why."""
    out, start, step = node.outputs[0], node.inputs[0], constant_int(node.inputs[2])
    if start is None:
        return declined("the Range has no start", at=node)
    span = _span(node)
    if span is None:
        return declined("the Range's count depends on data: its limit is not its start plus a constant, nor its "
                        "start its limit minus a constant", at=node)
    count = _int(span)
    if count is None:
        return declined(f"the Range's limit is its start plus '{span.name}', which is not a constant "
                        "non-negative integer scalar", at=node)
    if not step:
        return declined("the Range's delta is not a nonzero constant", at=node)
    if out.dtype is None or out.dtype.kind not in "iu":
        return declined("the Range counts in floats, whose count need not be its span over its delta exactly",
                        at=node)
    return count, step


def _span(node: Node) -> Value | None:
    """``k`` when the Range ``node``'s end is ``start + k`` (or ``k + start``), or its start is ``end - k``."""
    start, end = node.inputs[0], node.inputs[1]
    if end is not None and end.producer is not None and end.producer.op == "Add":
        left, right = end.producer.inputs
        if left is start:
            return right
        if right is start:
            return left
    sub = start.producer if start is not None else None
    return sub.inputs[1] if sub is not None and sub.op == "Sub" and sub.inputs[0] is end else None


def _int(value: Value | None) -> int | None:
    """A constant non-negative integer scalar."""
    k = constant_int(value)
    return k if k is not None and k >= 0 and value is not None and value.shape == () else None

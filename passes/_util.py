"""Small IR queries and edits the passes share."""

from __future__ import annotations

from typing import Any

from loopc.ir import Graph, Loop, Value


def read_counts(graph: Graph) -> dict[int, int]:
    """How many times each value (by id) is read anywhere in ``graph``: node inputs and graph outputs.

    Loop roles count through ``Loop.inputs`` (outer reads) and ``body.outputs`` (inner reads),
    which :meth:`Loop.sync` keeps equal to the role lists.
    """
    counts: dict[int, int] = {}

    def visit(g: Graph) -> None:
        for value in g.outputs:
            counts[id(value)] = counts.get(id(value), 0) + 1
        for node in g.nodes:
            for value in node.inputs:
                if value is not None:
                    counts[id(value)] = counts.get(id(value), 0) + 1
            for sub in node.subgraphs():
                visit(sub)

    visit(graph)
    return counts


def replace_uses(graph: Graph, old: Value, new: Value) -> int:
    """Make every read of ``old`` in ``graph`` (at any depth, loop roles included) read ``new``."""
    changed = 0

    def swap(value: Any) -> Any:
        nonlocal changed
        if value is old:
            changed += 1
            return new
        return value

    for _, node in graph.walk():
        if isinstance(node, Loop):
            node.trip_count, node.condition, node.max_trips = (
                swap(node.trip_count), swap(node.condition), swap(node.max_trips)
            )
            for it in node.iterators:
                it.source = swap(it.source)
            for rec in node.recurrences:
                rec.init, rec.next = swap(rec.init), swap(rec.next)
            for out in node.loop_outputs:
                out.value = swap(out.value)
            node.sync()
        else:
            node.inputs = [swap(v) for v in node.inputs]
            for sub in node.subgraphs():
                sub.outputs = [swap(v) for v in sub.outputs]
    graph.outputs = [swap(v) for v in graph.outputs]
    return changed


def constant_value(value: Value | None) -> Any:
    """The array held by the Constant node that produces ``value``, else None."""
    if value is None or value.producer is None or value.producer.op != "Constant":
        return None
    return value.producer.attrs.get("value")

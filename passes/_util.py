"""Small IR queries and edits the passes share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from loopc.ir import Graph, Loop, LoopOutput, Node, Recurrence, Value, constant_value

I64 = np.dtype(np.int64)


def recurrences(graph: Graph) -> list[tuple[Graph, Loop, Recurrence]]:
    """Every (enclosing graph, loop, recurrence) at any depth, listed up front so passes may edit."""
    return [(g, node, rec) for g, node in graph.structured() if isinstance(node, Loop) for rec in list(node.recurrences)]


def replace_all(replacements: dict[Value, Value]) -> int:
    """Every read of a key of ``replacements`` reads its replacement instead (through the use lists, so
    the cost is the number of reads moved). Chains resolve to their end: ``{a: b, b: c}`` makes reads of
    ``a`` read ``c``."""
    moved = 0
    for old, new in replacements.items():
        seen = 0
        while new in replacements and seen <= len(replacements):
            new, seen = replacements[new], seen + 1
        moved += old.replace_all_uses_with(new)
    return moved


def constant_trips(loop: Loop) -> int | None:
    """``loop``'s trip count when it is a constant (as written: not yet saturated), else None."""
    value = constant_value(loop.trip_count)
    return None if value is None else int(np.asarray(value).reshape(-1)[0])


def constant(nodes: list[Node] | Graph, name: str, array: Any) -> Value:
    """Append a Constant node holding ``array`` to ``nodes`` (a list being built, or a graph); return its value."""
    value = np.asarray(array)
    result = Value(name, value.dtype, tuple(value.shape))
    nodes.append(Node("Constant", [], [result], {"value": value}))
    return result


def trips_run(outer: Graph, loop: Loop) -> Value:
    """The number of trips ``loop`` ran, as a value after it: a carried counter's last value."""
    before: list[Node] = []
    zero = constant(before, f"{loop.name}_trips0", np.array(0, np.int64))
    outer.insert_before(loop, before)
    state = Value(f"{loop.name}_trips", I64, ())
    one = constant(loop.body, f"{loop.name}_one", np.array(1, np.int64))
    step = Value(f"{loop.name}_trips_next", I64, ())
    loop.body.add(Node("Add", [state, one], [step]))
    loop.recurrences.append(Recurrence(state, zero, step))
    final = Value(f"{loop.name}_trips_run", I64, ())
    loop.loop_outputs.append(LoopOutput("last", state, final))
    return final


def first_rows(nodes: list[Node], padded: Value, count: Value, axis: int) -> Value:
    """Append ``padded[..., :count, ...]`` (along ``axis``) to ``nodes``: a while loop's concatenated
    output cut from its padded length to the trips actually run."""
    end = Value(f"{padded.name}_end", I64, (1,))
    axes = constant(nodes, f"{padded.name}_axes", np.array([axis], np.int64))
    nodes.append(Node("Unsqueeze", [count, constant(nodes, f"{padded.name}_dim0", np.array([0], np.int64))], [end]))
    cut = Value(f"{padded.name}_cut", padded.dtype, None)
    start = constant(nodes, f"{padded.name}_start", np.array([0], np.int64))
    nodes.append(Node("Slice", [padded, start, end, axes], [cut]))
    return cut


def merge_stacked_axis(nodes: list[Node], stacked: Value, piece: Value, axis: int, name: str) -> Value:
    """Append nodes that merge axes ``axis`` and ``axis + 1`` of ``stacked`` (pieces of ``piece``'s shape
    stacked on a new ``axis``): concatenating the pieces along ``axis``. ``piece`` needs a known rank."""
    assert piece.shape is not None
    rank = len(piece.shape)
    merged = Value(f"{name}_merged", piece.dtype, None)
    sizes = [d for d in piece.shape if isinstance(d, int)]
    if len(sizes) == rank:
        sizes[axis] = -1
        nodes.append(Node("Reshape", [stacked, constant(nodes, f"{name}_dims", np.array(sizes, np.int64))], [merged]))
        return merged
    shape = Value(f"{name}_shape", I64, (rank + 1,))
    nodes.append(Node("Shape", [stacked], [shape]))
    parts = []
    for part, (start, end) in (("head", (0, axis)), ("tail", (axis + 2, rank + 1))):
        dims = Value(f"{name}_{part}", I64, (end - start,))
        starts = constant(nodes, f"{name}_{part}_start", np.array([start], np.int64))
        ends = constant(nodes, f"{name}_{part}_end", np.array([end], np.int64))
        nodes.append(Node("Slice", [shape, starts, ends], [dims]))
        parts.append(dims)
    target = Value(f"{name}_dims", I64, (rank,))
    nodes.append(Node("Concat", [parts[0], constant(nodes, f"{name}_joined", np.array([-1], np.int64)), parts[1]],
                      [target], {"axis": 0}))
    nodes.append(Node("Reshape", [stacked, target], [merged]))
    return merged


def computed_from(value: Value) -> Iterator[Value]:
    """``value`` and every value it is computed from, each once; the walk stops at ``Shape``/``Size``,
    whose results are a tensor's dims, not its data (what TensorRT's shape calculations may read)."""
    seen: set[int] = set()
    stack = [value]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        node = current.producer
        if node is not None and node.op not in ("Shape", "Size"):
            stack.extend(v for v in node.inputs if v is not None)

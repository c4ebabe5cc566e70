"""The IR as readable text: what ``loopc inspect`` and ``--dump-ir`` print.

    graph main(%x: f32[5,3]) -> (%total, %partials)
      %n = Squeeze(%n1)
      %total: f32[3], %partials: f32[?,3] = loop count=%n {
        counter %i
        iterator %row = %x[axis 0]
        recurrence %sum = %init -> %sum_out
        %sum_out: f32[3] = Add(%sum, %row)
        last %total = %sum
        concat %partials = %sum_out axis 0
      }
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.ir.core import Graph, Node, Value, type_text
from loopc.ir.loop import If, Loop


def format_graph(graph: Graph, indent: int = 0) -> str:
    """The whole graph, nested graphs indented."""
    lines: list[str] = []
    params = ", ".join(f"%{v.name}: {type_text(v)}" for v in graph.inputs)
    results = ", ".join(f"%{v.name}" for v in graph.outputs)
    lines.append(f"{' ' * indent}graph {graph.name}({params}) -> ({results})")
    _nodes(graph, indent + 2, lines)
    return "\n".join(lines)


def format_loop(loop: Loop, indent: int = 0) -> str:
    """One loop's structure: roles first, then its body."""
    lines: list[str] = []
    _node(loop, indent, lines)
    return "\n".join(lines)


def _nodes(graph: Graph, indent: int, lines: list[str]) -> None:
    for node in graph.nodes:
        _node(node, indent, lines)


def _results(node: Node) -> str:
    return ", ".join(f"%{v.name}: {type_text(v)}" for v in node.outputs)


def _node(node: Node, indent: int, lines: list[str]) -> None:
    pad = " " * indent
    if isinstance(node, Loop):
        limits = []
        if node.trip_count is not None:
            limits.append(f"count=%{node.trip_count.name}")
        if node.condition is not None:
            limits.append(f"while=%{node.condition.name}")
        if node.max_trips is not None:
            limits.append(f"max_trips=%{node.max_trips.name}")
        lines.append(f"{pad}{_results(node)} = loop {' '.join(limits)} {{  # {node.describe()}")
        inner = pad + "  "
        if node.counter is not None:
            lines.append(f"{inner}counter %{node.counter.name}")
        for it in node.iterators:
            rev = " reverse" if it.reverse else ""
            lines.append(f"{inner}iterator %{it.param.name} = %{it.source.name}[axis {it.axis}{rev}]")
        for rec in node.recurrences:
            lines.append(f"{inner}recurrence %{rec.state.name} = %{rec.init.name} -> %{rec.next.name}")
        _nodes(node.body, indent + 2, lines)
        for out in node.loop_outputs:
            axis = "" if out.kind == "last" else f" axis {out.axis}"
            lines.append(f"{inner}{out.kind} %{out.result.name} = %{out.value.name}{axis}")
        lines.append(f"{pad}}}")
    elif isinstance(node, If):
        lines.append(f"{pad}{_results(node)} = if %{_name(node.inputs[0])} {{")
        for branch in node.subgraphs():
            lines.append(f"{pad}  {branch.name}:")
            _nodes(branch, indent + 4, lines)
            lines.append(f"{pad}    yield " + ", ".join(f"%{v.name}" for v in branch.outputs))
        lines.append(f"{pad}}}")
    else:
        args = ", ".join("_" if v is None else f"%{v.name}" for v in node.inputs)
        attrs = "".join(f" {k}={_attr(v)}" for k, v in sorted(node.attrs.items()))
        lines.append(f"{pad}{_results(node)} = {node.op}({args}){attrs}")


def _name(value: Value | None) -> str:
    return "_" if value is None else value.name


def _attr(value: Any) -> str:
    if isinstance(value, np.ndarray):
        if value.size <= 8:
            return np.array2string(value.reshape(-1), separator=",").replace("\n", "")
        return f"<{value.dtype} {list(value.shape)}>"
    return repr(value)

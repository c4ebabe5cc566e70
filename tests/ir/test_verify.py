"""The IR verifier names the node and the rule a malformed graph breaks."""

from __future__ import annotations

import numpy as np
import pytest

from loopc.ir import Graph, Loop, LoopIterator, LoopOutput, Node, Recurrence, Value, format_graph, verify
from loopc.ir.verify import VerificationError

F32 = np.dtype(np.float32)
I64 = np.dtype(np.int64)


def running_sum(trip_count: bool = True, condition: Value | None = None) -> Graph:
    x, n, init = Value("x", F32, (5, 3)), Value("n", I64, ()), Value("init", F32, (3,))
    row, state, nxt = Value("row", F32, (3,)), Value("sum", F32, (3,)), Value("sum_out", F32, (3,))
    body = Graph("body")
    body.add(Node("Add", [state, row], [nxt]))
    total, partials = Value("total", F32, (3,)), Value("partials", F32, (None, 3))
    loop = Loop(
        body,
        trip_count=n if trip_count else None,
        condition=condition,
        iterators=[LoopIterator(row, x)],
        recurrences=[Recurrence(state, init, nxt)],
        loop_outputs=[LoopOutput("last", state, total), LoopOutput("concat", nxt, partials)],
    )
    return Graph("main", [x, n, init], [total, partials], [loop])


def test_well_formed_loop_passes_and_prints_its_roles() -> None:
    graph = running_sum()
    verify(graph)
    text = format_graph(graph)
    assert "iterator %row = %x[axis 0]" in text
    assert "recurrence %sum = %init -> %sum_out" in text
    assert "concat %partials = %sum_out axis 0" in text


def test_unbounded_loop_is_rejected() -> None:
    with pytest.raises(VerificationError, match="neither a trip count nor a condition"):
        verify(running_sum(trip_count=False))


def test_last_output_must_read_a_recurrence() -> None:
    graph = running_sum()
    loop = graph.nodes[0]
    assert isinstance(loop, Loop)
    loop.loop_outputs[0].value = loop.iterators[0].param
    with pytest.raises(VerificationError, match="'last' output must read a recurrence state"):
        verify(graph, after="a pass")


def test_use_before_definition_names_the_node() -> None:
    a, b = Value("a", F32, (1,)), Value("b", F32, (1,))
    graph = Graph("g", [a], [b], [Node("Neg", [Value("ghost", F32, (1,))], [b], name="neg")])
    with pytest.raises(VerificationError, match="node 'neg' \\(Neg\\) reads 'ghost' before it is defined"):
        verify(graph)


def test_value_defined_twice() -> None:
    a, b = Value("a", F32, (1,)), Value("b", F32, (1,))
    graph = Graph("g", [a, b], [b], [Node("Neg", [a], [b])])
    with pytest.raises(VerificationError, match="'b' is defined twice"):
        verify(graph)

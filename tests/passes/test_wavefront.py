"""The wavefront schedule on stacks of ONNX LSTM/GRU/RNN layers: every output (each layer's Y, Y_h and
Y_c) simulated against onnxruntime with and without it, the stack fused into one loop, the trips at
its edges run outside it without the idle layer's work, and the stacks it must leave alone."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest

from loopc.compiler import compile
from loopc.ir import Graph, Loop, LoopIterator, LoopOutput, Node, Recurrence, Value
from loopc.passes import PassManager
from loopc.passes._batching import row_wise
from loopc.passes.wavefront import Wavefront
from tests.passes.stacks import SEQ, run, stack

@pytest.mark.parametrize(("op", "lbr"), [("LSTM", 0), ("GRU", 0), ("GRU", 1), ("RNN", 0)])
@pytest.mark.parametrize("layers", [2, 3])
def test_a_forward_stack_runs_as_one_loop(op: str, lbr: int, layers: int, tmp_path: Any) -> None:
    fused, _ = run(stack(op, layers, lbr=lbr), tmp_path)
    plain, _ = run(stack(op, layers, lbr=lbr), tmp_path, disabled=("wavefront",))
    assert (len(fused), len(plain)) == (1, layers)
    # trips at the edges (where a layer idles) run outside: SEQ + layers − 1 trips, less 2·(layers − 1)
    assert fused[0].trip_count is not None and fused[0].trip_count.producer is not None
    assert int(fused[0].trip_count.producer.attrs["value"]) == SEQ - layers + 1


def test_edge_trips_do_no_idle_work(tmp_path: Any) -> None:
    """Of the products outside the loop, the edges hold only the working layers': trip 0 runs layer 0
    alone (h·R₀ᵀ), the last trip layer 1 alone (x·W₁ᵀ and h·R₁ᵀ); the rest is layer 0's batched X·W₀ᵀ."""
    _, outside = run(stack("LSTM", 2), tmp_path)
    assert outside == 1 + 1 + 2


def test_sequence_lens_and_the_counter(tmp_path: Any) -> None:
    """With sequence_lens each layer reads the loop counter (its step), which the skew offsets."""
    fused, _ = run(stack("LSTM", 2, lens=True), tmp_path)
    assert len(fused) == 1


@pytest.mark.parametrize(("kwargs", "loops"), [
    ({"direction": "bidirectional"}, 2),  # layer 2's first step needs layer 1's last reverse step
    ({"between": "flip"}, 2),  # the sequence reversed between the layers: not row by row
    ({"chained_state": True}, 2),  # layer 2 starts from layer 1's final state
])
def test_stacks_that_cannot_be_skewed_are_left_alone(kwargs: dict[str, Any], loops: int, tmp_path: Any) -> None:
    found, _ = run(stack("GRU", 2, **kwargs), tmp_path)
    assert len(found) == loops


@pytest.mark.parametrize(("kwargs", "reason"), [
    ({"direction": "bidirectional"}, "it iterates backwards"),
    ({"between": "flip"}, "through work that is not row by row"),
    ({"chained_state": True}, "other than through its iterators"),
])
def test_a_stack_left_alone_says_why(kwargs: dict[str, Any], reason: str, tmp_path: Any) -> None:
    path = tmp_path / "stack.onnx"
    onnx.save(stack("GRU", 2, **kwargs), path)
    [(layer, found)] = [(where, [r for r in reasons if r.startswith("wavefront: ")])
                        for where, reasons in compile(str(path)).report.declined.items()
                        if any(r.startswith("wavefront: ") for r in reasons)]
    assert "gru1" in layer and len(found) == 1 and reason in found[0]


def _two_loops(stops_early: bool) -> Graph:
    """A loop stacking a running sum of 4 rows and a second loop that iterates over them (with a condition
    of its own when ``stops_early``): a layer over the rows of the one before."""
    f32, i64 = np.dtype(np.float32), np.dtype(np.int64)
    graph = Graph("g")

    def const(g: Graph, name: str, array: np.ndarray) -> Value:
        value = Value(name, array.dtype, array.shape)
        g.add(Node("Constant", [], [value], {"value": array}))
        return value

    count, zero = const(graph, "count", np.array(4, i64)), const(graph, "zero", np.zeros(2, np.float32))
    body = Graph("producer_body")
    h, h_next = Value("h", f32, (2,)), Value("h_next", f32, (2,))
    body.add(Node("Add", [h, const(body, "one", np.ones(2, np.float32))], [h_next]))
    rows = Value("rows", f32, (4, 2))
    graph.add(Loop(body, trip_count=count, recurrences=[Recurrence(h, zero, h_next)],
                   loop_outputs=[LoopOutput("concat", h_next, rows)], name="producer"))
    body = Graph("consumer_body")
    x, s, s_next, go = Value("x", f32, (2,)), Value("s", f32, (2,)), Value("s_next", f32, (2,)), None
    body.add(Node("Add", [s, x], [s_next]))
    if stops_early:
        go = const(body, "go", np.array(True))
    total = Value("total", f32, (2,))
    graph.add(Loop(body, trip_count=count, condition=go, iterators=[LoopIterator(x, rows)],
                   recurrences=[Recurrence(s, zero, s_next)], loop_outputs=[LoopOutput("last", s, total)],
                   name="consumer"))
    graph.set_outputs([total])
    return graph


@pytest.mark.parametrize("stops_early", [False, True])
def test_a_layer_that_can_stop_early_is_not_skewed_and_says_so(stops_early: bool) -> None:
    graph = _two_loops(stops_early)
    manager = PassManager([Wavefront()])
    manager.run(graph)
    loops = [node for node in graph.nodes if isinstance(node, Loop)]
    assert len(loops) == (2 if stops_early else 1)
    assert [d.reason for d in manager.declines] == (
        ["'consumer' can stop early (it has a condition), so it and 'producer' cannot run one trip apart"]
        if stops_early else [])


def _node(op: str, shapes: list[tuple[int, ...] | None], out: tuple[int, ...], consts: dict[int, Any] | None = None,
          **attrs: Any) -> Node:
    """``op`` on values of ``shapes`` (``consts``: operands that are Constants, by position)."""
    inputs = []
    for k, shape in enumerate(shapes):
        value = Value(f"in{k}", np.dtype(np.float32), shape)
        if consts and k in consts:
            array = np.asarray(consts[k])
            value = Value(f"in{k}", array.dtype, array.shape)
            Node("Constant", [], [value], {"value": array})
        inputs.append(value)
    return Node(op, inputs, [Value("out", np.dtype(np.float32), out)], attrs)


@pytest.mark.parametrize(("node", "stacked", "expected"), [
    # elementwise: an operand without the trip axis broadcasts along the rows
    (_node("Add", [(7, 2, 4), (4,)], (7, 2, 4)), [True, False], True),
    (_node("Add", [(7, 2, 4), (1, 2, 4)], (7, 2, 4)), [True, False], True),
    (_node("Add", [(7, 2, 4), (7, 2, 4)], (7, 2, 4)), [True, False], False),  # row k meets the other's row k
    # MatMul by a matrix, not by a stack of them
    (_node("MatMul", [(7, 2, 4), (4, 5)], (7, 2, 5)), [True, False], True),
    (_node("MatMul", [(7, 4), (4, 5)], (7, 5)), [True, False], True),
    (_node("MatMul", [(3, 7), (7, 4)], (3, 4)), [False, True], False),  # sums over the rows
    (_node("Transpose", [(7, 2, 4)], (7, 4, 2), perm=[0, 2, 1]), [True], True),
    (_node("Transpose", [(7, 2, 4)], (2, 7, 4), perm=[1, 0, 2]), [True], False),
    (_node("Reshape", [(7, 2, 4), None], (7, 8), consts={1: np.array([0, -1], np.int64)}), [True, False], True),
    (_node("Reshape", [(7, 2, 4), None], (14, 4), consts={1: np.array([-1, 4], np.int64)}), [True, False], False),
    (_node("ReduceSum", [(7, 2, 4), None], (7, 2, 1), consts={1: np.array([2], np.int64)}), [True, False], True),
    (_node("ReduceSum", [(7, 2, 4), None], (1, 2, 4), consts={1: np.array([0], np.int64)}), [True, False], False),
    (_node("Softmax", [(7, 2, 4)], (7, 2, 4), axis=-1), [True], True),
    (_node("Softmax", [(7, 2, 4)], (7, 2, 4), axis=0), [True], False),
    (_node("Gather", [(7, 2, 4), None], (7, 2, 4), consts={1: np.arange(7)[::-1].copy()}, axis=0), [True, False], False),
])
def test_row_wise(node: Node, stacked: list[bool], expected: bool) -> None:
    assert row_wise(node, stacked) is expected

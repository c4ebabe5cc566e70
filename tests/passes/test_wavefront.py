"""The wavefront schedule on stacks of ONNX LSTM/GRU/RNN layers: every output (each layer's Y, Y_h and
Y_c) simulated against onnxruntime with and without it, the stack fused into one loop, the trips at
its edges run outside it without the idle layer's work, and the stacks it must leave alone."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from loopc.ir import Node, Value
from loopc.passes._batching import row_wise
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

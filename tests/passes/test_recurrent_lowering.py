"""The recurrent ops' two optimizations that are not about stacks, with and without them, on ONNX
LSTM/GRU/RNN layers simulated against onnxruntime: ``stack-directions`` (both directions of a
bidirectional op in one loop) and ``narrow-products`` (GRU with ``linear_before_reset=0`` multiplies
the state by Rz and Rr only: H·Rhᵀ is never read)."""

from __future__ import annotations

from typing import Any

import pytest

from loopc.ir import Loop
from tests.passes.stacks import GATES, HIDDEN, run, stack


@pytest.mark.parametrize(("op", "lbr"), [("LSTM", 0), ("GRU", 0), ("GRU", 1), ("RNN", 0)])
@pytest.mark.parametrize("lens", [False, True], ids=["full", "sequence_lens"])
def test_both_directions_in_one_loop(op: str, lbr: int, lens: bool, tmp_path: Any) -> None:
    model = stack(op, 1, lbr=lbr, direction="bidirectional", lens=lens)
    stacked, _ = run(model, tmp_path)
    apart, _ = run(model, tmp_path, disabled=("stack-directions",))
    assert (len(stacked), len(apart)) == (1, 2)
    # one product h·Rᵀ a trip for both directions: its state is [2, batch, H]
    product, = _state_products(stacked[0])
    assert product.inputs[0].shape is not None and len(product.inputs[0].shape) == 3


def _state_products(loop: Loop) -> list[Any]:
    """The body's MatMuls that read a carried state."""
    states = {id(rec.state) for rec in loop.recurrences}
    return [node for node in loop.body.nodes if node.op == "MatMul" and id(node.inputs[0]) in states]


def _columns(loop: Loop) -> list[int]:
    """Columns of each product of the carried state (their right operand's last axis)."""
    return sorted(int(node.inputs[1].shape[-1]) for node in _state_products(loop))


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_gru_multiplies_the_state_by_the_read_columns_only(direction: str, tmp_path: Any) -> None:
    """H·[Rz Rr]ᵀ (2H columns) instead of H·Rᵀ (3H), whose h third the step never reads."""
    model = stack("GRU", 1, lbr=0, direction=direction)
    narrow, _ = run(model, tmp_path)
    plain, _ = run(model, tmp_path, disabled=("narrow-products",))
    assert _columns(narrow[0]) == [2 * HIDDEN]
    assert _columns(plain[0]) == [GATES["GRU"] * HIDDEN]


@pytest.mark.parametrize(("op", "lbr"), [("LSTM", 0), ("GRU", 1), ("RNN", 0)])
def test_products_read_whole_are_left_alone(op: str, lbr: int, tmp_path: Any) -> None:
    loops, _ = run(stack(op, 1, lbr=lbr), tmp_path)
    assert _columns(loops[0]) == [GATES[op] * HIDDEN]

"""The opset an export is stamped with: the oldest whose schemas read every node as the IR writes it (checked
against ONNX's own schemas, which say when an op's inputs and attributes last changed)."""

from __future__ import annotations

from onnx import helper

from loopc.backend.onnx.opset import FLOOR, export_opset


def test_plain_ops_get_the_floor() -> None:
    assert export_opset([helper.make_node("Add", ["a", "b"], ["c"]), helper.make_node("Tanh", ["c"], ["d"])]) == FLOOR


def test_reductions_with_axes_as_an_input_need_opset_18() -> None:
    """ReduceMean took its axes as an attribute until opset 18."""
    assert export_opset([helper.make_node("ReduceMean", ["x", "axes"], ["y"], keepdims=0)]) == 18


def test_split_into_a_count_of_outputs_needs_opset_18() -> None:
    assert export_opset([helper.make_node("Split", ["x"], ["a", "b"], axis=0, num_outputs=2)]) == 18


def test_attention_needs_the_opset_that_has_its_inputs() -> None:
    assert export_opset([helper.make_node("Attention", ["q", "k", "v"], ["y"])]) >= 23


def test_quantized_types_need_the_opset_that_admits_them() -> None:
    """DequantizeLinear reads int8 since opset 10, float8 since 19 and int4 since 21 (ONNX's type constraints);
    a Cast to float8 needs 19 for its result's type."""
    dq = helper.make_node("DequantizeLinear", ["w", "s"], ["y"], axis=0)

    def typed(weight: str) -> dict[str, str]:
        return {"w": f"tensor({weight})", "s": "tensor(float)", "y": "tensor(float)"}

    assert export_opset([dq], typed("int8")) == FLOOR
    assert export_opset([dq], typed("float8e4m3fn")) == 19
    assert export_opset([dq], typed("int4")) == 21
    cast = helper.make_node("Cast", ["x"], ["y"], to=17)
    assert export_opset([cast], {"x": "tensor(float)", "y": "tensor(float8e4m3fn)"}) == 19

"""Ops ONNX defines as functions, expanded into ONNX's own definition when loopc has no converter:
compared with the node tests' expected outputs (built with the real builder, simulated) and with
onnxruntime, and checked to leave alone what loopc converts itself."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conformance import node_test_cases
from loopc.frontend.onnx.functions import expand_functions
from tests.backend.trt.oracle import check_onnx
from tests.frontend.onnx.helpers import imported, parse
from tests.onnx_cases import loopc_failures


def _ops(graph: object) -> list[str]:
    return [n.op for n in graph.nodes]  # type: ignore[attr-defined]


@pytest.mark.parametrize("pattern, count", [
    ("test_linear_attention", 14),  # a Scan over the tokens in ONNX's definition: a TensorRT loop
    ("test_sce_mean_weight", 8),     # SoftmaxCrossEntropyLoss → LogSoftmax + NegativeLogLikelihoodLoss → ...
    ("test_center_crop_pad_crop", 5),
])
def test_node_tests_of_function_ops_match(pattern: str, count: int) -> None:
    cases = [c for c in node_test_cases(pattern) if "expanded" not in c.name]
    assert len(cases) == count
    wrong = loopc_failures(cases)
    assert not wrong, "\n".join(wrong)


def test_an_op_with_a_converter_is_not_expanded() -> None:
    """HardSwish has a function body and a converter of loopc's: the converter wins."""
    model = imported("""<ir_version: 8, opset_import: ["" : 22]>
        g (float[4] x) => (float[4] y) { y = HardSwish (x) }""")
    assert _ops(model.graph) == ["HardSwish"]


def test_expansion_reaches_loop_bodies_and_matches_onnxruntime() -> None:
    """A loss inside a Loop body: expanded twice over (the loss's body holds another function op)."""
    check_onnx("""<ir_version: 8, opset_import: ["" : 17]>
        g (float[3,2,4] x, int64[2] labels, int64 n) => (float[3] losses) {
            losses = Loop (n, "") <body = b (int64 i, bool c_in) => (bool c_out, float y) {
                row = Gather <axis = 0> (x, i)
                y = SoftmaxCrossEntropyLoss <reduction = "mean"> (row, labels)
                c_out = Identity (c_in)
            }>
        }""", {"x": np.random.default_rng(0).standard_normal((3, 2, 4)).astype(np.float32),
               "labels": np.array([1, 3], np.int64), "n": np.array(3, np.int64)})


def test_the_model_given_is_left_as_it_was() -> None:
    model = parse("""<ir_version: 8, opset_import: ["" : 18]>
        g (float[2,5,5] x, int64[2] shape) => (float[2,3,3] y) {
            y = CenterCropPad <axes = [1, 2]> (x, shape)
        }""")
    before = model.SerializeToString()
    expanded = expand_functions(model, 18, lambda op: op != "CenterCropPad")
    assert model.SerializeToString() == before
    ops = {n.op_type for n in expanded.graph.node}
    assert "CenterCropPad" not in ops and {"Slice", "Pad"} <= ops
    assert list(expanded.graph.value_info) == list(model.graph.value_info)


def test_an_op_without_a_function_is_left_for_the_backend_to_refuse() -> None:
    model = parse("""<ir_version: 8, opset_import: ["" : 17]>
        g (float[3,3] x) => (float y) { y = Det (x) }""")
    expanded = expand_functions(model, 17, lambda op: False)
    assert [n.op_type for n in expanded.graph.node] == ["Det"]

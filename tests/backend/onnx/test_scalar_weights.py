"""A 0-d quantized weight (onnxruntime's quantizer writes them for scalar operands) is exported as ``[1]`` with its
DequantizeLinear reshaped back to 0-d: TensorRT's parser reshapes a 0-d one with a Shuffle layer, and its builder
refuses a quantized constant read by anything but a Dequantize layer."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from loopc.errors import BackendError
from loopc.exporter import export_model
from loopc.trt.onnx_parser import parse_onnx
from tests.backend.onnx.cases import onnxruntime_outputs
from tests.corpus import parser_plan
from tests.test_quantized_corpus import quantized_weight_layers

SCALE = np.float32(0.25)
WEIGHT = np.int8(-7)


def scalar_weight_model() -> onnx.ModelProto:
    """``y = x + DequantizeLinear(-7, 0.25)``, the weight a 0-d int8 initializer."""
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["w", "w_scale"], ["w_dq"]),
         helper.make_node("Add", ["x", "w_dq"], ["y"])],
        "scalar_weight",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [3])],
        [numpy_helper.from_array(np.array(WEIGHT), "w"), numpy_helper.from_array(np.array(SCALE), "w_scale")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


def test_a_scalar_weight_is_exported_as_one_element_and_reshaped_back() -> None:
    model, _ = export_model(scalar_weight_model())
    onnx.checker.check_model(model, full_check=True)
    dq = next(n for n in model.graph.node if n.op_type == "DequantizeLinear")
    weight = next(t for t in model.graph.initializer if t.name == dq.input[0])
    assert (weight.data_type, list(weight.dims)) == (onnx.TensorProto.INT8, [1])
    assert [n.op_type for n in model.graph.node if dq.output[0] in n.input] == ["Reshape"]
    x = np.array([1.0, -2.0, 3.5], np.float32)
    got = onnxruntime_outputs(model, {"x": x})["y"]
    assert got.shape == (3,)
    np.testing.assert_array_equal(got, x + np.float32(WEIGHT) * SCALE)


def test_the_parser_builds_the_export_with_the_weight_int8() -> None:
    model, _ = export_model(scalar_weight_model())
    assert [layer.get_input(0).dtype.name for layer in quantized_weight_layers(parse_onnx(model).network)] == ["INT8"]
    assert parser_plan(model)


def test_the_parser_cannot_build_the_0d_form() -> None:
    """Why the export writes ``[1]``: should TensorRT's parser learn to, this fails and the detour can go."""
    with pytest.raises(BackendError, match="Quantized constant .* is only allowed before DQ"):
        parser_plan(scalar_weight_model())

"""Nodes listed before what they read (onnxruntime's quantizer writes a Loop before a value its body reads)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from loopc.frontend.onnx.order import in_dependence_order
from tests.frontend.onnx.helpers import check_against_ort

BODY = """
    <ir_version: 8, opset_import: ["" : 17]>
    g (int64 n, float[2] s0, float[2] x) => (float[2] s_final) {
        twice = Add(x, x)
        s_final = Loop(n, , s0) <body = body (int64 i, bool c_in, float[2] s_in) => (bool c_out, float[2] s_out) {
            c_out = Identity(c_in)
            s_out = Add(s_in, twice)
        }>
    }"""
FEEDS = {"n": np.array(3, np.int64), "s0": np.array([1.0, 2.0], np.float32), "x": np.array([0.5, -1.0], np.float32)}


def _loop_first() -> onnx.ModelProto:
    """The model with its Loop listed before the Add whose result the loop body reads."""
    model = onnx.parser.parse_model(BODY)
    add, loop = model.graph.node
    del model.graph.node[:]
    model.graph.node.extend([loop, add])
    return model


def test_a_loop_listed_before_a_value_its_body_reads_is_read_in_dependence_order() -> None:
    model = _loop_first()
    import onnxruntime as ort

    runs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = runs.run(None, FEEDS)[0]
    np.testing.assert_allclose(expected, [4.0, -4.0])  # s0 + 3 * 2x, by hand
    assert [n.op_type for n in in_dependence_order(model).graph.node] == ["Add", "Loop"]
    assert [n.op_type for n in model.graph.node] == ["Loop", "Add"]  # the caller's model stays as given
    check_against_ort(model, FEEDS)


def test_a_model_in_order_is_left_untouched() -> None:
    model = onnx.parser.parse_model(BODY)
    assert in_dependence_order(model) is model


def test_only_what_must_move_moves() -> None:
    """Independent nodes keep their listed order; a cycle is left for the validator to name."""
    nodes = [helper.make_node("Neg", ["b"], ["c"]), helper.make_node("Relu", ["x"], ["y"]),
             helper.make_node("Abs", ["x"], ["b"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info(v, onnx.TensorProto.FLOAT, [1]) for v in ("c", "y")])
    model = helper.make_model(graph)
    assert [n.op_type for n in in_dependence_order(model).graph.node] == ["Relu", "Abs", "Neg"]
    cycle = [helper.make_node("Neg", ["b"], ["c"]), helper.make_node("Abs", ["c"], ["b"])]
    looped = helper.make_model(helper.make_graph(cycle, "g", [], [helper.make_tensor_value_info(
        "c", onnx.TensorProto.FLOAT, [1])]))
    assert in_dependence_order(looped) is looped

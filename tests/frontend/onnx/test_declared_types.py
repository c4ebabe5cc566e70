"""Declared shapes that contradict what the graph computes (as graph tools write them): onnxruntime warns and
runs what the nodes compute, and so does loopc, with one warning naming the value and both types; what
onnxruntime refuses, loopc refuses."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnx.parser
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from loopc import api
from loopc.errors import FrontendError
from tests.frontend.onnx.helpers import check_against_ort, refused

H17 = '<ir_version: 8, opset_import: ["" : 17]>\n'
#: A Loop carrying a [2,3] state: the body's output and its scanned copy declared [3] (rank 1), computed [2,3].
LOOP = H17 + """g (float[2,3] x, int64 n) => (float[2,3] y, float[N,2,3] ys) {
    go = Constant<value = bool {1}>()
    y, ys = Loop(n, go, x) <body = body (int64 i, bool c, float[2,3] h) => (bool c_out, float[3] h_next, float[3] s) {
        c_out = Identity(c)
        t = Tanh(h)
        h_next = Add(t, h)
        s = Identity(h_next)
    }>
}"""
FEEDS = {"x": np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32), "n": np.array(3, np.int64)}


def with_body_value_info(text: str, name: str, dims: list[int]) -> onnx.ModelProto:
    proto = onnx.parser.parse_model(text)
    body = next(a.g for a in proto.graph.node[-1].attribute if a.name == "body")
    body.value_info.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, dims))
    return proto


def ort_outputs(proto: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def test_a_loop_body_value_and_output_of_another_rank_are_corrected_and_match_onnxruntime() -> None:
    proto = with_body_value_info(LOOP, "t", [6])
    expected = ort_outputs(proto, FEEDS)
    assert [e.shape for e in expected] == [(2, 3), (3, 2, 3)]  # onnxruntime goes by what is computed
    with pytest.warns(UserWarning) as caught:
        got = api.run(proto, FEEDS)  # the TensorRT network loopc builds, simulated
    messages = [str(w.message) for w in caught]
    for fragment in ("value 't' in the body of Loop 'y' is declared float32[6], but the graph computes float32[?,?]",
                     "body output 'h_next' in the body of Loop 'y' is declared float32[3], but the graph computes "
                     "float32[?,?]",
                     "body output 's' in the body of Loop 'y' is declared float32[3]"):
        assert sum(fragment in m for m in messages) == 1, messages
    for name, want in zip(("y", "ys"), expected):
        np.testing.assert_allclose(np.asarray(got[name]), want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_a_carried_body_input_of_another_rank_stays_refused() -> None:
    """onnxruntime types a body by its carried inputs' declarations: it runs this model (the body type-checks at
    [2,1]) and refuses others (a fuzzed decoder whose body then adds [2] to a scalar). loopc does not tell the two
    apart, so it refuses both, naming the node, rather than run one that onnxruntime refuses."""
    text = H17 + """g (int64 n, bool go, float[2] s0) => (float[2] s, float[N,2] ys) {
        s, ys = Loop(n, go, s0) <body = body (int64 i, bool c_in, float[2,1] s_in) => (bool c_out, float[2] s_out,
                                                                                      float[2] y) {
            c_out = Identity(c_in)
            s_out = Add(s_in, s_in)
            y = Identity(s_in)
        }>
    }"""
    with pytest.raises(FrontendError, match=r"node 's_out' \(Add, opset 17\): output 's_out' is declared rank 1, "
                                            r"but the node computes rank 2"):
        api.compile(onnx.parser.parse_model(text))


def test_a_graph_output_declared_with_another_dim() -> None:
    """test_lstm_batchwise with Y's first dim declared 1: onnxruntime returns the [5,1,2,4] it computes."""
    text = H17 + """g (float[5,2,3] x, float[1,16,3] w, float[1,16,4] r) => (float[1,1,2,4] y) {
        y = LSTM<hidden_size = 4>(x, w, r)
    }"""
    rng = np.random.default_rng(0)
    feeds = {k: rng.standard_normal(shape).astype(np.float32) for k, shape in
             (("x", (5, 2, 3)), ("w", (1, 16, 3)), ("r", (1, 16, 4)))}
    with pytest.warns(UserWarning, match=r"graph output 'y' is declared float32\[1,1,2,4\], but the graph computes "
                      r"float32\[5,1,2,4\]; loopc uses the computed shape"):
        ir = check_against_ort(onnx.parser.parse_model(text), feeds)
    assert ir.graph.outputs[0].shape == (5, 1, 2, 4)


def test_a_model_whose_declarations_agree_warns_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_against_ort(onnx.parser.parse_model(LOOP.replace("float[3] h_next, float[3] s", "float[2,3] h_next, "
                                                               "float[2,3] s")), FEEDS)


def test_what_onnxruntime_refuses_stays_refused() -> None:
    """A Scan body's state output of another rank: onnxruntime's Scan needs its declared shape and fails."""
    text = H17 + """g (float[2] s0, float[3,2] x) => (float[2] s, float[3,2] ys) {
        s, ys = Scan(s0, x) <num_scan_inputs = 1, body = body (float[2] s_in, float[2] xe) => (float s_out,
                                                                                              float[2] y) {
            s_out = Add(s_in, xe)
            y = Identity(s_out)
        }>
    }"""
    proto = onnx.parser.parse_model(text)
    with pytest.raises(Exception, match="Subgraph must have the shape set for all outputs"):
        ort_outputs(proto, {"s0": np.ones(2, np.float32), "x": np.ones((3, 2), np.float32)})
    refused(proto, FrontendError, "output 's_out' is declared rank 0, but the node computes rank 1")


def test_a_contradicted_element_type_stays_refused() -> None:
    """The body's value ``t`` declared float64 (and the shapes wrong too, which alone would be corrected)."""
    proto = with_body_value_info(LOOP, "t", [2, 3])
    next(a.g for a in proto.graph.node[-1].attribute).value_info[0].type.tensor_type.elem_type = TensorProto.DOUBLE
    with pytest.raises(Exception, match="(?i)type"):
        ort_outputs(proto, FEEDS)
    with pytest.warns(UserWarning, match="body output 'h_next'"):
        refused(proto, FrontendError, "node 'y' (Loop, opset 17)", "inconsistent type", "onnxruntime refuses this too")

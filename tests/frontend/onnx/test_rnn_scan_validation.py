"""LSTM/GRU/RNN and Scan attributes checked against their operands' shapes: what used to run with the
wrong directions, a contradicted hidden_size or a state scanned by mistake is one error naming the node.

Each mutant is the valid model below with one thing changed; the valid models themselves match
onnxruntime, so what the checks accept is not merely importable but right.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from typing import Any

import numpy as np
import onnx
import onnx.parser
import pytest
from onnx import TensorProto, helper

from loopc.errors import FrontendError, LimitError
from tests.frontend.onnx.helpers import check_against_ort, refused

SEQ, BATCH, INPUT, HIDDEN = 5, 2, 3, 4
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
F = TensorProto.FLOAT


def weight(name: str, shape: list[int], seed: int) -> onnx.TensorProto:
    data = np.random.default_rng(seed).normal(scale=0.4, size=shape).astype(np.float32)
    return helper.make_tensor(name, F, shape, data.ravel())


def recurrent(op: str = "LSTM", direction: str = "forward", *, dirs: int | None = None,
              **shapes: Any) -> onnx.ModelProto:
    """``op`` over X [SEQ, BATCH, INPUT] with W, R, B (and P for LSTM) as initializers and initial_h and
    sequence_lens as inputs; ``dirs`` sets the weights' num_directions, ``shapes`` overrides any shape
    (None drops the operand), ``hidden_size=...`` the attribute."""
    g = GATES[op]
    d = dirs if dirs is not None else (2 if direction == "bidirectional" else 1)
    hidden = shapes.pop("hidden_size", HIDDEN)
    wanted = {"W": [d, g * HIDDEN, INPUT], "R": [d, g * HIDDEN, HIDDEN], "B": [d, 2 * g * HIDDEN],
              "lens": [BATCH], "h0": [d, BATCH, HIDDEN], "P": [d, 3 * HIDDEN] if op == "LSTM" else None}
    wanted.update(shapes)
    inits = [weight(name, wanted[name], seed) for seed, name in enumerate(("W", "R", "B", "P")) if wanted[name]]
    inputs = [helper.make_tensor_value_info("X", F, [SEQ, BATCH, INPUT])]
    if wanted["lens"]:
        inputs.append(helper.make_tensor_value_info("lens", TensorProto.INT32, wanted["lens"]))
    if wanted["h0"]:
        inputs.append(helper.make_tensor_value_info("h0", F, wanted["h0"]))
    operands = ["X", "W", "R", "B" if wanted["B"] else "", "lens" if wanted["lens"] else "",
                "h0" if wanted["h0"] else "", "", "P" if wanted["P"] else ""][: 8 if op == "LSTM" else 6]
    node = helper.make_node(op, operands, ["Y", "Y_h"], name="rnn", hidden_size=hidden, direction=direction)
    outputs = [helper.make_tensor_value_info(name, F, None) for name in ("Y", "Y_h")]
    graph = helper.make_graph([node], "g", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def rnn_feeds(direction: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    d = 2 if direction == "bidirectional" else 1
    return {"X": rng.normal(size=(SEQ, BATCH, INPUT)).astype(np.float32),
            "lens": np.array([SEQ, 3], np.int32), "h0": rng.normal(size=(d, BATCH, HIDDEN)).astype(np.float32)}


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_the_unmutated_models_match_onnxruntime(op: str, direction: str) -> None:
    check_against_ort(recurrent(op, direction), rnn_feeds(direction))


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_forward_with_weights_for_two_directions(op: str) -> None:
    error = refused(recurrent(op, "forward", dirs=2, h0=[1, BATCH, HIDDEN]), FrontendError,
                    f"node 'rnn' ({op}, opset 14)", "W 'W' has shape [2, ",
                    "direction='forward' (1 direction)", f"needs [1, {GATES[op] * HIDDEN}, {INPUT}]")
    assert (error.node, error.op, error.opset) == ("rnn", op, 14)


def test_bidirectional_with_weights_for_one_direction() -> None:
    refused(recurrent("GRU", "bidirectional", dirs=1, h0=[2, BATCH, HIDDEN]), FrontendError,
            "W 'W' has shape [1, 12, 3]", "direction='bidirectional' (2 directions)", "needs [2, 12, 3]")


def test_hidden_size_contradicting_the_weights() -> None:
    refused(recurrent("LSTM", hidden_size=8), FrontendError,
            "node 'rnn' (LSTM, opset 14): W 'W' has shape [1, 16, 3]", "hidden_size 8", "needs [1, 32, 3]")


@pytest.mark.parametrize(("operand", "shape", "fragment"), [
    ("R", [1, 16, 5], "R 'R' has shape [1, 16, 5], but LSTM"),
    ("B", [1, 16], "B 'B' has shape [1, 16], but LSTM"),
    ("h0", [1, 3, HIDDEN], "initial_h 'h0' has shape [1, 3, 4]"),
    ("lens", [3], "sequence_lens 'lens' has shape [3]"),
    ("P", [1, 8], "P 'P' has shape [1, 8]"),
    ("W", [16, 3], "W 'W' has shape [16, 3]; LSTM takes a rank-3 W"),
    ("h0", [BATCH, HIDDEN], "initial_h 'h0' has shape [2, 4]; LSTM takes a rank-3 initial_h"),
])
def test_operand_of_the_wrong_shape(operand: str, shape: list[int], fragment: str) -> None:
    refused(recurrent("LSTM", **{operand: shape}), FrontendError, "node 'rnn' (LSTM, opset 14)", fragment)


def test_non_positive_hidden_size() -> None:
    refused(recurrent("RNN", hidden_size=0), FrontendError, "hidden_size=0 must be positive")


def test_hidden_size_as_floats() -> None:
    model = recurrent("LSTM")
    attr = next(a for a in model.graph.node[0].attribute if a.name == "hidden_size")
    attr.CopyFrom(helper.make_attribute("hidden_size", [4.0]))
    refused(model, FrontendError, "node 'rnn' (LSTM, opset 14): attribute 'hidden_size' is FLOATS; LSTM takes it "
            "as INT")


def huge_hidden(tmp: pathlib.Path, weights: list[Any]) -> pathlib.Path:
    """LSTM with hidden_size 2**31 whose W and R are model inputs of the given dims."""
    inputs = [helper.make_tensor_value_info("X", F, [SEQ, BATCH, INPUT]),
              helper.make_tensor_value_info("W", F, weights[0]), helper.make_tensor_value_info("R", F, weights[1])]
    node = helper.make_node("LSTM", ["X", "W", "R"], ["", "Y_h"], name="rnn", hidden_size=2**31)
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("Y_h", F, None)])
    path = tmp / "huge_hidden.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), path)
    return path


def test_huge_hidden_size_with_dynamic_weights_allocates_nothing(tmp_path: pathlib.Path) -> None:
    """The weights' own dims size the state (they are known when it runs), never the attribute:
    compiling to a TensorRT network fits in 3 GiB (it used to fold a 16 GiB zero state)."""
    path = huge_hidden(tmp_path, [[1, None, INPUT], [1, None, None]])
    script = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
              "import loopc; loopc.compile(sys.argv[1])")
    result = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert result.returncode == 0, result.stderr[-2000:]


def test_huge_hidden_size_with_weights_declaring_it(tmp_path: pathlib.Path) -> None:
    path = huge_hidden(tmp_path, [[1, 4 * 2**31, INPUT], [1, 4 * 2**31, 2**31]])
    refused(str(path), LimitError, "node 'rnn' (LSTM, opset 14): the zero initial state: shape [2, 2147483648]",
            "above loopc's limit")


# ------------------------------------------------------------------------------------------- Scan

SCAN9 = """
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] a0, float[2] b0, float[3,2] x) => (float[2] a, float[2] b, float[3,2] ys) {
    a, b, ys = Scan(a0, b0, x) <num_scan_inputs = NUM, ATTRS
        body = body (float[2] a_in, float[2] b_in, float[2] xe) => (float[2] a_out, float[2] b_out, float[2] y) {
            a_out = Add(a_in, xe)
            b_out = Mul(b_in, xe)
            y = Sub(a_out, b_out)
        }>
}"""


def scan9(num: int = 1, attrs: str = "") -> str:
    return SCAN9.replace("NUM", str(num)).replace("ATTRS", attrs + ("," if attrs else ""))


def test_the_unmutated_scan_matches_onnxruntime() -> None:
    rng = np.random.default_rng(0)
    feeds = {"a0": rng.normal(size=2).astype(np.float32), "b0": rng.normal(size=2).astype(np.float32),
             "x": rng.normal(size=(3, 2)).astype(np.float32)}
    check_against_ort(scan9(1, "scan_input_directions = [1]"), feeds)


def test_num_scan_inputs_that_makes_a_state_a_scan_input() -> None:
    refused(scan9(2), FrontendError, "node 'a' (Scan, opset 17): scan input 'b0' has rank 1, so the body's input "
            "'b_in' must have rank 0, not 1", "check num_scan_inputs=2")


def test_num_scan_inputs_beyond_the_inputs() -> None:
    refused(scan9(4), FrontendError, "node 'a' (Scan, opset 17): num_scan_inputs=4, but the node has 3")


@pytest.mark.parametrize(("attrs", "fragment"), [
    ("scan_input_axes = [0, 0]", "2 scan input axes for 1 scan inputs"),
    ("scan_input_axes = [2]", "scan input axis 2 is out of range for 'x' of rank 2"),
    ("scan_input_axes = [-3]", "scan input axis -3 is out of range for rank 2"),
    ("scan_input_directions = [2]", "scan input directions [2] must each be 0 (forward) or 1 (reverse)"),
    ("scan_output_axes = [2]", "scan output axis 2 is out of range for 'y' stacked to rank 2"),
    ("scan_output_directions = [0, 1]", "2 scan output directions for 1 scan outputs"),
])
def test_scan_axes_and_directions(attrs: str, fragment: str) -> None:
    refused(scan9(1, attrs), FrontendError, "node 'a' (Scan, opset 17)", fragment)


def test_scan_inputs_of_different_lengths() -> None:
    text = """
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] s0, float[3,2] x, float[4,2] z) => (float[2] s) {
        s = Scan(s0, x, z) <num_scan_inputs = 2,
            body = body (float[2] s_in, float[2] xe, float[2] ze) => (float[2] s_out) {
                t = Add(xe, ze)
                s_out = Add(s_in, t)
            }>
    }"""
    refused(text, FrontendError, "node 's' (Scan, opset 17): scan inputs 'x' and 'z' differ in length", "(3 and 4)")


SCAN8 = """
<ir_version: 3, opset_import: ["" : 8]>
g (float[2,2] a0, float[2,2] b0, float[2,3,2] x) => (float[2,2] a, float[2,2] b) {
    a, b = Scan("", a0, b0, x) <num_scan_inputs = NUM,
        body = body (float[2] a_in, float[2] b_in, float[2] xe) => (float[2] a_out, float[2] b_out) {
            a_out = Add(a_in, xe)
            b_out = Mul(b_in, xe)
        }>
}"""


def test_scan8_num_scan_inputs_that_makes_a_state_a_scan_input() -> None:
    refused(SCAN8.replace("NUM", "2"), FrontendError, "node 'a' (Scan, opset 8): scan input", "'b_in' must have "
            "rank 0, not 1", "check num_scan_inputs=2")


def test_scan8_unmutated_matches_onnxruntime() -> None:
    rng = np.random.default_rng(1)
    feeds = {"a0": rng.normal(size=(2, 2)).astype(np.float32), "b0": rng.normal(size=(2, 2)).astype(np.float32),
             "x": rng.normal(size=(2, 3, 2)).astype(np.float32)}
    check_against_ort(SCAN8.replace("NUM", "1"), feeds)

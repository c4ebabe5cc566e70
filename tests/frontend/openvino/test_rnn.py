"""LSTM/GRU/RNN Sequence-5 and the Cell ops against OpenVINO's CPU plugin: every direction, ragged
sequence_lengths, activations, clip, GRU's linear_before_reset, weights that are not constants, f16
weights, an LSTMSequence inside a Loop body, IRs converted from ONNX; and the LSTMCell-1 extras loopc
refuses."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import openvino as ov
import openvino.opset1 as ops1
import openvino.opset3 as ops3
import openvino.opset4 as ops4
import openvino.opset13 as ops
import pytest
from onnx import TensorProto, helper, numpy_helper
from openvino.utils.node_factory import NodeFactory

from loopc.errors import UnsupportedOpError
from loopc.frontend.openvino import import_ir
from tests.frontend.openvino.harness import check, save

RNG = np.random.default_rng(11)
N, T, I, H = 2, 5, 3, 4
GATES = {"lstm": 4, "gru": 3, "rnn": 1}
DIRS = {"forward": 1, "reverse": 1, "bidirectional": 2}


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def sequence(kind: str, direction: str, lens: ov.Node | np.ndarray | None = None, weights_as_inputs: bool = False,
             x_shape: list[int] | None = None, **attrs) -> tuple[ov.Model, dict[str, np.ndarray]]:
    """An ``*Sequence-5`` with X, the initial states and (by default) sequence_lengths as inputs."""
    d, g = DIRS[direction], GATES[kind]
    x = ops.parameter(x_shape or [N, T, I], np.float32, name="x")
    h0 = ops.parameter([N, d, H], np.float32, name="h0")
    c0 = ops.parameter([N, d, H], np.float32, name="c0")
    params = [x, h0] + ([c0] if kind == "lstm" else [])
    feeds = {"x": f32(N, T, I), "h0": f32(N, d, H), "c0": f32(N, d, H), "lens": np.array([T, 2], np.int32)}
    if lens is None:
        lens = ops.parameter([N], np.int32, name="lens")
        params.append(lens)
    b_cols = 4 * H if kind == "gru" and attrs.get("linear_before_reset") else g * H
    weights = {"w": f32(d, g * H, I), "r": f32(d, g * H, H), "b": f32(d, b_cols)}
    if weights_as_inputs:
        feeds.update(weights)
        made = {k: ops.parameter(list(v.shape), np.float32, name=k) for k, v in weights.items()}
        params += made.values()
        w, r, b = made.values()
    else:
        w, r, b = weights.values()
    if kind == "lstm":
        node = ops.lstm_sequence(x, h0, c0, lens, w, r, b, H, direction, **attrs)
    elif kind == "gru":
        node = ops.gru_sequence(x, h0, lens, w, r, b, H, direction, **attrs)
    else:
        node = ops.rnn_sequence(x, h0, lens, w, r, b, H, direction, **attrs)
    model = ov.Model(list(node.outputs()), params, kind)
    return model, {p.get_friendly_name(): feeds[p.get_friendly_name()] for p in params}


@pytest.mark.parametrize("direction", list(DIRS))
@pytest.mark.parametrize("kind", list(GATES))
def test_sequence_ragged_lengths(kind: str, direction: str, tmp_path: Path) -> None:
    """lengths [T, 2]: the short item's state holds and its Y is zeros past step 2; reversed, it reads
    its own first 2 steps backwards."""
    check(*sequence(kind, direction), tmp_path)


@pytest.mark.parametrize("kind", list(GATES))
def test_bidirectional_sequence_with_a_loop_per_direction(kind: str, tmp_path: Path) -> None:
    """``--disable stack-directions``: each direction in its own loop, ragged lengths included."""
    check(*sequence(kind, "bidirectional"), tmp_path, stack_directions=False)


@pytest.mark.parametrize("lens", [[T, T], [3, 1]])
def test_sequence_constant_lengths(lens: list[int], tmp_path: Path) -> None:
    """A constant full-length sequence_lengths (as converters write it) and a constant ragged one."""
    check(*sequence("lstm", "bidirectional", lens=np.array(lens, np.int64)), tmp_path)


@pytest.mark.parametrize("kind, direction, attrs", [
    ("lstm", "bidirectional", {"activations": ["tanh", "relu", "sigmoid"], "clip": 0.7}),
    ("lstm", "forward", {"activations": ["sigmoid", "tanh", "relu"], "activations_alpha": [2.0],
                         "activations_beta": [3.0]}),
    ("gru", "bidirectional", {"activations": ["tanh", "relu"], "clip": 0.5}),
    ("rnn", "reverse", {"activations": ["relu"], "clip": 1.5}),
    ("rnn", "forward", {"activations": ["sigmoid"]}),
])
def test_sequence_activations_and_clip(kind: str, direction: str, attrs: dict, tmp_path: Path) -> None:
    check(*sequence(kind, direction, **attrs), tmp_path)


@pytest.mark.parametrize("direction", list(DIRS))
def test_gru_linear_before_reset(direction: str, tmp_path: Path) -> None:
    """B is [dirs, 4H] = [bz, br, Wbh, Rbh], and Rbh goes inside r ⊙ (H·Rhᵀ + Rbh)."""
    check(*sequence("gru", direction, linear_before_reset=True), tmp_path)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_sequence_weights_as_inputs(kind: str, tmp_path: Path) -> None:
    """Gate reordering and bias layout on weights known only at run time (nothing folds)."""
    check(*sequence(kind, "bidirectional", weights_as_inputs=True), tmp_path)


def test_sequence_f16_weights_and_dynamic_dims(tmp_path: Path) -> None:
    """The default save: f16 Consts decompressed by Convert; batch and seq dynamic. Full lengths only:
    with a dynamic X, OpenVINO 2026.4's CPU plugin ignores sequence_lengths (ragged ones run to the end)."""
    model, feeds = sequence("lstm", "reverse", x_shape=[-1, -1, I])
    feeds["lens"] = np.array([T, T], np.int32)
    check(model, feeds, tmp_path, compress=True)


def test_lstm_sequence_in_loop_body(tmp_path: Path) -> None:
    """LSTMSequence-5 inside a Loop body; the states are carried between trips. (A
    concatenated output of the outer loop is left out: TensorRT-RTX's builder refuses it, "No scan
    input/output tensor to derive shape", when the inner loop iterates over an input.)"""
    x = ops.parameter([N, T, I], np.float32, name="x")
    h0 = ops.parameter([N, 1, H], np.float32, name="h0")
    c0 = ops.parameter([N, 1, H], np.float32, name="c0")
    bx = ops.parameter([N, T, I], np.float32, name="bx")
    bh = ops.parameter([N, 1, H], np.float32, name="bh")
    bc = ops.parameter([N, 1, H], np.float32, name="bc")
    seq = ops.lstm_sequence(bx, bh, bc, np.array([T, 3], np.int32), f32(1, 4 * H, I), f32(1, 4 * H, H),
                            f32(1, 4 * H), H, "forward")
    r_cond, r_h, r_c = ops.result(ops.constant(True)), ops.result(seq.output(1)), ops.result(seq.output(2))
    r_y = ops.result(seq.output(0))
    loop = ops.loop(ops.constant(np.int64(3)), ops.constant(True))
    loop.set_function(ov.Model([r_cond, r_h, r_c, r_y], [bx, bh, bc]))
    loop.set_special_body_ports([-1, 0])
    loop.set_invariant_input(bx, x.output(0))
    loop.set_merged_input(bh, h0.output(0), r_h.output(0))
    loop.set_merged_input(bc, c0.output(0), r_c.output(0))
    outs = [loop.get_iter_value(r.output(0), -1) for r in (r_h, r_c, r_y)]
    model = ov.Model([ops.result(o) for o in outs], [x, h0, c0], "loop_lstm")
    check(model, {"x": f32(N, T, I), "h0": f32(N, 1, H), "c0": f32(N, 1, H)}, tmp_path)


@pytest.mark.parametrize("onnx_op, attrs", [("LSTM", {}), ("GRU", {"linear_before_reset": 1}), ("RNN", {})])
def test_converted_from_onnx(onnx_op: str, attrs: dict, tmp_path: Path) -> None:
    """What OpenVINO's converter writes for an ONNX RNN: Transposes around the *Sequence-5 and
    sequence_lengths computed from X's shape (ShapeOf, Gather, Broadcast)."""
    g = GATES[onnx_op.lower()]
    weights = [numpy_helper.from_array(f32(*shape), name) for name, shape in
               (("W", (2, g * H, I)), ("R", (2, g * H, H)), ("B", (2, 2 * g * H)))]
    node = helper.make_node(onnx_op, ["x", "W", "R", "B"], ["y", "y_h"], hidden_size=H, direction="bidirectional",
                            **attrs)
    graph = helper.make_graph([node], "rnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [T, N, I])],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "y_h")],
                              weights)
    onnx_path = tmp_path / "rnn.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), onnx_path)
    xml = save(ov.convert_model(onnx_path), tmp_path / "rnn.xml")
    assert f'type="{onnx_op}Sequence" version="opset5"' in xml.read_text()
    check(xml, {"x": f32(T, N, I)}, tmp_path)


# -------------------------------------------------------------------------------------------- cells


def cell_inputs(state: bool = True) -> tuple[list[ov.Node], dict[str, np.ndarray]]:
    x = ops.parameter([N, I], np.float32, name="x")
    h = ops.parameter([N, H], np.float32, name="h")
    c = ops.parameter([N, H], np.float32, name="c")
    params = [x, h, c] if state else [x, h]
    return params, {p.get_friendly_name(): f32(N, I if p is x else H) for p in params}


@pytest.mark.parametrize("opset, attrs", [
    (ops4, {}),
    (ops4, {"activations": ["relu", "tanh", "sigmoid"], "clip": 0.6}),
    (ops1, {}),
    (ops1, {"activations": ["tanh", "sigmoid", "relu"], "clip": 0.9}),
])
def test_lstm_cell(opset, attrs: dict, tmp_path: Path) -> None:
    (x, h, c), feeds = cell_inputs()
    node = opset.lstm_cell(x, h, c, f32(4 * H, I), f32(4 * H, H), f32(4 * H), H, **attrs)
    xml = save(ov.Model(list(node.outputs()), [x, h, c], "cell"), tmp_path / "cell.xml")
    version = "opset1" if opset is ops1 else "opset4"
    assert f'type="LSTMCell" version="{version}"' in xml.read_text()
    check(xml, feeds, tmp_path)


@pytest.mark.parametrize("attrs", [{}, {"linear_before_reset": True}, {"activations": ["tanh", "relu"], "clip": 0.8}])
def test_gru_cell(attrs: dict, tmp_path: Path) -> None:
    (x, h), feeds = cell_inputs(state=False)
    b = f32(4 * H if attrs.get("linear_before_reset") else 3 * H)
    node = ops3.gru_cell(x, h, f32(3 * H, I), f32(3 * H, H), b, H, **attrs)
    check(ov.Model([node.output(0)], [x, h], "cell"), feeds, tmp_path)


@pytest.mark.parametrize("version, activation", [("opset1", "tanh"), ("opset3", "relu")])
def test_rnn_cell(version: str, activation: str, tmp_path: Path) -> None:
    """RNNCell is written as opset1; OpenVINO reads opset3 as the same op."""
    (x, h), feeds = cell_inputs(state=False)
    node = ops3.rnn_cell(x, h, f32(H, I), f32(H, H), f32(H), H, [activation], [], [], 1.2)
    xml = save(ov.Model([node.output(0)], [x, h], "cell"), tmp_path / "cell.xml")
    text = xml.read_text()
    assert 'type="RNNCell" version="opset1"' in text
    xml.write_text(text.replace('type="RNNCell" version="opset1"', f'type="RNNCell" version="{version}"'))
    check(xml, feeds, tmp_path)


# ------------------------------------------------------------------------------------------ refused


def lstm_cell_v1(tmp_path: Path, peepholes: np.ndarray | None = None, **attrs) -> Path:
    """LSTMCell-1 with attributes beyond its spec; ``peepholes`` wired in as input 6 by editing the XML
    (OpenVINO's serializer leaves that input out)."""
    (x, h, c), _ = cell_inputs()
    inputs = [x, h, c] + [ops.constant(a) for a in (f32(4 * H, I), f32(4 * H, H), f32(4 * H))]
    if peepholes is not None:
        inputs.append(ops.constant(peepholes))
    values = {"hidden_size": H, "activations": ["sigmoid", "tanh", "tanh"], "activations_alpha": [],
              "activations_beta": [], "clip": 0.0, "input_forget": False, "weights_format": "fico", **attrs}
    node = NodeFactory("opset1").create("LSTMCell", inputs, values)
    xml = save(ov.Model(list(node.outputs()), [x, h, c], "cell"), tmp_path / "cell.xml")
    if peepholes is not None:
        text = xml.read_text()
        cell_id = re.search(r'<layer id="(\d+)"[^>]*type="LSTMCell"', text).group(1)
        p_id = re.search(r'<layer id="(\d+)"[^>]*type="Const"[^>]*>\s*<data [^>]*shape="12"', text).group(1)
        text = re.sub(r'(type="LSTMCell".*?<port id="5"[^>]*>.*?</port>)',
                      r'\1<port id="6" precision="FP32"><dim>12</dim></port>', text, count=1, flags=re.S)
        text = text.replace("</edges>", f'<edge from-layer="{p_id}" from-port="0" to-layer="{cell_id}" '
                                        f'to-port="6" /></edges>')
        xml.write_text(text)
    return xml


@pytest.mark.parametrize("peepholes, attrs, message", [
    (np.full(3 * H, 0.5, np.float32), {}, "peepholes P"),
    (None, {"input_forget": True}, "input_forget=true"),
    (None, {"weights_format": "ifco"}, "weights_format='ifco'"),
])
def test_lstm_cell_v1_extras_refused(peepholes, attrs: dict, message: str, tmp_path: Path) -> None:
    xml = lstm_cell_v1(tmp_path, peepholes, **attrs)
    with pytest.raises(UnsupportedOpError, match=re.escape(message)) as err:
        import_ir(xml)
    assert "LSTMCell" in str(err.value)


def test_lstm_cell_v1_zero_peepholes(tmp_path: Path) -> None:
    """Zero peepholes change nothing, so they are accepted."""
    xml = lstm_cell_v1(tmp_path, np.zeros(3 * H, np.float32))
    assert 'to-port="6"' in xml.read_text()
    _, feeds = cell_inputs()
    check(xml, feeds, tmp_path)


def test_activation_outside_spec_refused(tmp_path: Path) -> None:
    model, _ = sequence("lstm", "forward", activations=["hardsigmoid", "tanh", "tanh"])
    with pytest.raises(UnsupportedOpError, match="activation 'hardsigmoid' is not one of relu, sigmoid, tanh"):
        import_ir(save(model, tmp_path / "model.xml"))

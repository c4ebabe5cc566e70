"""LSTM, GRU and RNN lowered into IR loops of ordinary ops, compared with onnxruntime across the
attributes the specs define: directions, layouts, biases, initial states, sequence_lens,
peepholes, input_forget, clip, linear_before_reset, and activations with alpha/beta."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from loopc.ir import Loop
from loopc.ir.interpret import interpret
from tests.frontend.onnx.helpers import check_against_ort, imported, loops

SEQ, BATCH, INPUT, HIDDEN = 4, 3, 5, 6
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def recurrent_model(op: str, *, direction: str = "forward", layout: int = 0, bias: bool = True,
                    initial: bool = False, lens: bool = False, peepholes: bool = False, opset: int = 22,
                    **attrs: Any) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    rng = np.random.default_rng(len(op) + layout + 7 * lens)
    dirs = 2 if direction == "bidirectional" else 1
    g = GATES[op]
    x_shape = [SEQ, BATCH, INPUT] if layout == 0 else [BATCH, SEQ, INPUT]
    state_shape = [dirs, BATCH, HIDDEN] if layout == 0 else [BATCH, dirs, HIDDEN]
    feeds = {"X": rng.normal(size=x_shape).astype(np.float32)}
    inits = [helper.make_tensor("W", TensorProto.FLOAT, [dirs, g * HIDDEN, INPUT],
                                rng.normal(scale=0.5, size=(dirs, g * HIDDEN, INPUT)).astype(np.float32).ravel()),
             helper.make_tensor("R", TensorProto.FLOAT, [dirs, g * HIDDEN, HIDDEN],
                                rng.normal(scale=0.5, size=(dirs, g * HIDDEN, HIDDEN)).astype(np.float32).ravel())]
    inputs = ["X", "W", "R", "", "", "", "", ""]
    graph_inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)]
    if bias:
        inits.append(helper.make_tensor("B", TensorProto.FLOAT, [dirs, 2 * g * HIDDEN],
                                        rng.normal(size=(dirs, 2 * g * HIDDEN)).astype(np.float32).ravel()))
        inputs[3] = "B"
    if lens:
        feeds["lens"] = np.array([SEQ, 1, 3], np.int32)
        graph_inputs.append(helper.make_tensor_value_info("lens", TensorProto.INT32, [BATCH]))
        inputs[4] = "lens"
    if initial:
        for k, name in ((5, "h0"), (6, "c0"))[: 2 if op == "LSTM" else 1]:
            feeds[name] = rng.normal(size=state_shape).astype(np.float32)
            graph_inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, state_shape))
            inputs[k] = name
    if peepholes:
        inits.append(helper.make_tensor("P", TensorProto.FLOAT, [dirs, 3 * HIDDEN],
                                        rng.normal(size=(dirs, 3 * HIDDEN)).astype(np.float32).ravel()))
        inputs[7] = "P"
    while inputs[-1] == "":
        inputs.pop()
    outputs = ["Y", "Y_h", "Y_c"][: 3 if op == "LSTM" else 2]
    if layout:
        attrs["layout"] = 1
    node = helper.make_node(op, inputs, outputs, hidden_size=HIDDEN, direction=direction, **attrs)
    graph = helper.make_graph([node], "g", graph_inputs, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                                                          for o in outputs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model, feeds


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_directions(op: str, direction: str) -> None:
    ir = check_against_ort(*recurrent_model(op, direction=direction, initial=True))
    [loop] = loops(ir.graph)  # both directions of a bidirectional op share one loop
    reverse = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}[direction]
    assert [it.reverse for it in loop.iterators] == reverse
    # Y comes out in time order: iterating backwards, the reverse direction emits with kREVERSE.
    ys = [out for out in loop.loop_outputs if out.kind != "last"]
    assert [out.kind for out in ys] == [("reverse" if r else "concat") for r in reverse]
    # One product h·Rᵀ a trip for all directions: the states are stacked on a directions axis.
    assert sum(node.op == "MatMul" for node in loop.body.nodes) == (2 if op == "GRU" else 1)
    assert all(rec.state.shape is not None and len(rec.state.shape) == (3 if direction == "bidirectional" else 2)
               for rec in loop.recurrences)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_sequence_lens_and_layout_1(op: str, direction: str) -> None:
    model, feeds = recurrent_model(op, direction=direction, lens=True, initial=True)
    check_against_ort(model, feeds)
    # onnxruntime refuses layout 1 (batch first): compare with its layout-0 answer, transposed.
    import onnxruntime as ort

    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    model.graph.node[0].attribute.append(helper.make_attribute("layout", 1))
    for vi in model.graph.input:
        if vi.name != "lens":
            dims = vi.type.tensor_type.shape.dim
            dims[0].dim_value, dims[1].dim_value = dims[1].dim_value, dims[0].dim_value
    batch_first = {k: v if k == "lens" else v.swapaxes(0, 1) for k, v in feeds.items()}
    ir = imported(model)
    got = interpret(ir.graph, batch_first)
    np.testing.assert_allclose(got[0], expected[0].transpose(2, 0, 1, 3), rtol=1e-4, atol=1e-5)
    for g, e in zip(got[1:], expected[1:]):
        np.testing.assert_allclose(g, e.swapaxes(0, 1), rtol=1e-4, atol=1e-5)
    for loop in loops(ir.graph):
        assert loop.counter is not None  # the mask t < len[b]
        assert loop.iterators[0].axis == 1 and not loop.iterators[0].reverse


def test_sequence_lens_reverse_uses_reverse_sequence() -> None:
    ir = check_against_ort(*recurrent_model("GRU", direction="reverse", lens=True))
    assert sum(node.op == "ReverseSequence" for node in ir.graph.nodes) == 2


def test_lstm_peepholes_clip_and_input_forget() -> None:
    check_against_ort(*recurrent_model("LSTM", direction="bidirectional", peepholes=True, clip=0.7, lens=True,
                                       initial=True))
    check_against_ort(*recurrent_model("LSTM", peepholes=True, input_forget=1))


@pytest.mark.parametrize("lbr", [0, 1])
def test_gru_linear_before_reset(lbr: int) -> None:
    check_against_ort(*recurrent_model("GRU", direction="bidirectional", linear_before_reset=lbr, initial=True))
    check_against_ort(*recurrent_model("GRU", bias=False, linear_before_reset=lbr))


def test_activations_with_alpha_and_beta() -> None:
    check_against_ort(*recurrent_model(
        "LSTM", direction="bidirectional", activations=["HardSigmoid", "LeakyRelu", "ScaledTanh",
                                                        "Sigmoid", "Affine", "Elu"],
        activation_alpha=[0.3, 0.05, 0.8, 0.9], activation_beta=[0.4, 1.2, 0.1]))
    check_against_ort(*recurrent_model("GRU", activations=["Sigmoid", "Softsign"]))
    # Directions with different activations cannot share one pointwise chain: one loop each.
    ir = check_against_ort(*recurrent_model("RNN", direction="bidirectional", activations=["Relu", "Tanh"]))
    assert len(loops(ir.graph)) == 2


def test_old_opsets_and_unused_outputs() -> None:
    model, feeds = recurrent_model("GRU", opset=7)
    check_against_ort(model, feeds)
    model.graph.node[0].output[0] = ""  # no Y: the loops need no concat output
    del model.graph.output[0]
    ir = check_against_ort(model, feeds)
    (loop,) = loops(ir.graph)
    assert [o.kind for o in loop.loop_outputs] == ["last"]


def test_recurrent_ops_become_ordinary_ops_only() -> None:
    ir = check_against_ort(*recurrent_model("LSTM", direction="bidirectional", lens=True, peepholes=True))
    ops = {node.op for _, node in ir.graph.walk()}
    assert not ops & {"LSTM", "GRU", "RNN", "Scan"}
    assert all(isinstance(n, Loop) or n.op in ops for _, n in ir.graph.walk())

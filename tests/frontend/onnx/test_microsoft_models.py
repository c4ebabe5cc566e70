"""Models as onnxruntime's own tools write them (``tests/models/microsoft``, made by its ``make_models.py``):
each built by loopc (the real builder, then simulated) and compared with onnxruntime on the same inputs."""

from __future__ import annotations

import pathlib

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from loopc.fileio import load_arrays
from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import build_and_simulate

MODELS = pathlib.Path(__file__).resolve().parents[2] / "models" / "microsoft"


def run_both(name: str, proto: onnx.ModelProto | None = None) -> tuple[dict[str, np.ndarray], list[np.ndarray], list[str]]:
    """loopc's simulated outputs of the committed model, and onnxruntime's outputs of ``proto`` (default: the same
    model) on its committed inputs."""
    path = MODELS / f"{name}.onnx"
    feeds = load_arrays(MODELS / f"{name}.inputs.npz")
    _, got = build_and_simulate(import_model(str(path)), feeds)
    oracle = ort.InferenceSession((proto or onnx.load(path)).SerializeToString(), providers=["CPUExecutionProvider"])
    return got, oracle.run(None, feeds), [o.name for o in oracle.get_outputs()]


@pytest.mark.parametrize("name", ["bert_attention", "bert_multi_head_attention", "gpt2_fast_gelu",
                                  "mlp_matmul_nbits"])
def test_model_matches_onnxruntime(name: str) -> None:
    got, want, names = run_both(name)
    for output, expected in zip(names, want):
        np.testing.assert_allclose(got[output], expected, rtol=1e-4, atol=1e-5, err_msg=output)


def _float_lstm(proto: onnx.ModelProto) -> onnx.ModelProto:
    """``proto`` with each DynamicQuantizeLSTM replaced by ONNX's LSTM over its weights dequantized in NumPy."""
    inits = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    model = onnx.ModelProto()
    model.CopyFrom(proto)
    for k, node in enumerate(model.graph.node):
        if node.op_type != "DynamicQuantizeLSTM":
            continue
        names = list(node.input)
        for index, scale, zero in ((1, 8, 9), (2, 10, 11)):
            q, s, z = (inits[names[i]].astype(np.float64) for i in (index, scale, zero))
            wide = (q - z.reshape(z.shape[0], 1, -1)) * s.reshape(s.shape[0], 1, -1)
            dequantized = numpy_helper.from_array(wide.transpose(0, 2, 1).astype(np.float32), f"{names[index]}_float")
            model.graph.initializer.append(dequantized)
            names[index] = dequantized.name
        lstm = helper.make_node("LSTM", names[:8], list(node.output), name=node.name)
        lstm.attribute.extend(node.attribute)
        model.graph.node.remove(node)
        model.graph.node.insert(k, lstm)
    return model


@pytest.mark.parametrize("name", ["lstm_quantized", "bilstm_quantized_per_channel"])
def test_dynamically_quantized_lstm(name: str) -> None:
    """loopc dequantizes the weights and runs the LSTM in float; onnxruntime's kernel also quantizes the input and
    the hidden state to uint8 at each step. So: equal to onnxruntime on the model with its weights dequantized, and
    within onnxruntime's own quantization error of the quantized model (a few uint8 steps of the activations)."""
    model = onnx.load(MODELS / f"{name}.onnx")
    got, want, names = run_both(name, _float_lstm(model))
    np.testing.assert_allclose(got[names[0]], want[0], rtol=1e-4, atol=1e-5)
    _, quantized, _ = run_both(name)
    scale = float(np.abs(quantized[0]).max())
    np.testing.assert_allclose(got[names[0]], quantized[0], atol=0.05 * scale)

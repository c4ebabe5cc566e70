"""The frontend analyses a model without its weights (:mod:`loopc.frontend.onnx.weightless`), and that changes
nothing it finds: the types ONNX's inference gives every value, the IR it translates, and the numbers the
engine computes."""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import onnx
import onnx.inliner
import onnx.shape_inference
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from loopc.frontend.onnx import import_model, newer_opsets, validate, weightless
from loopc.frontend.onnx.contrib import expand_contrib
from loopc.frontend.onnx.functions import built_directly, expand_functions
from loopc.frontend.onnx.value_types import infer_types
from loopc.ir import format_model
from tests.backend.trt.oracle import build_and_simulate

ROOT = pathlib.Path(__file__).resolve().parents[3]
#: Real exports from every exporter family in the corpus, with loops, RNNs, contrib ops and quantized weights.
MODELS = [f"tests/models/{name}.onnx" for name in (
    "torch/gpt2_greedy", "gpt2_family/gpt2_kv_pairs", "gpt2_family/gpt2_while_loop", "whisper_family/whisper_stacked",
    "tacotron_family/tacotron2_espnet", "tf2onnx/keras_bidirectional_lstm", "paddle/paddle_lstm",
    "jax2onnx/jax_while_greedy", "microsoft/mlp_matmul_nbits", "microsoft/lstm_quantized",
    "quantized/modelopt_int4_gru", "quantized/ort_int8_gru_body", "outside/onnxslim_greedy_decoder",
    "outside/rapidocr_cls_mobile_v2", "torch_whole/yolo_nms", "torch_whole/unet_ddim")]
MODELS.append("samples/greedy_gru_decoder.onnx")


def _present(paths: list[str]) -> list[str]:
    found = [p for p in paths if (ROOT / p).exists()]
    assert len(found) >= 6, f"the corpus models moved: {sorted(set(paths) - set(found))}"
    return found


def _types_before_translation(proto: onnx.ModelProto, weights: weightless.Weights) -> tuple[dict[str, bytes], Any]:
    """What the importer's inference finds, by value name, run as the importer runs it."""
    opset = validate.default_opset(proto, "<model>")
    proto = weightless.strip(expand_contrib(proto, opset, weights), weights)
    proto = newer_opsets.declare_added_outputs(expand_functions(proto, opset, built_directly), opset)
    types, inferred, refusal = infer_types(proto, "<model>", opset)
    values = {vi.name: vi.type.SerializeToString() for g in _graphs(inferred.graph)
              for vi in [*g.input, *g.value_info, *g.output]}
    return {name: tp.SerializeToString() for name, tp in types.items()} | {"/": b""}, (values, str(refusal))


def _graphs(graph: onnx.GraphProto) -> Any:
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            yield from [attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs


@pytest.mark.parametrize("path", _present(MODELS))
def test_inference_finds_the_same_types_without_the_weights(path: str) -> None:
    model = onnx.load(str(ROOT / path))
    weights = weightless.Weights()
    stripped = weightless.strip(model, weights)
    assert weights.sources, "nothing was large enough to strip: the comparison would prove nothing"
    assert _types_before_translation(stripped, weights) == _types_before_translation(model, weightless.Weights())


@pytest.mark.parametrize("path", _present(MODELS))
def test_the_ir_is_the_same_without_the_weights(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every value's type and shape, every node and every constant's values, as translated."""
    def text_and_constants() -> tuple[str, dict[str, bytes]]:
        constants: dict[str, np.ndarray] = {}
        text = format_model(import_model(str(ROOT / path)), constants=constants)
        return text, {k: v.dtype.str.encode() + v.tobytes() for k, v in constants.items()}

    stripped = text_and_constants()
    monkeypatch.setattr(weightless, "KEEP_ELEMENTS", 2**62)  # nothing is left out
    assert stripped == text_and_constants()


def _loop_model() -> onnx.ModelProto:
    """x [2, 64] → MatMul by W [64, 64] → CenterCropPad to [2, 48] (expanded from ONNX's function) → FastGelu
    (onnxruntime's, expanded) → a Loop of 3 trips whose body reads W's crop, a Constant [48, 48] of its own and an
    initializer [2, 48] of its own."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 64)).astype(np.float32) / 8
    c = rng.standard_normal((48, 48)).astype(np.float32) / 8
    body = helper.make_graph(
        [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(c, "c_value")),
         helper.make_node("MatMul", ["h", "c"], ["hc"]),
         helper.make_node("Add", ["hc", "b"], ["hb"]),
         helper.make_node("Tanh", ["hb"], ["h_next"]),
         helper.make_node("Identity", ["cond"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [2, 48])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_next", TensorProto.FLOAT, [2, 48])],
        [numpy_helper.from_array(rng.standard_normal((2, 48)).astype(np.float32), "b")])
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["xw"]),
         helper.make_node("CenterCropPad", ["xw", "crop"], ["cropped"]),
         helper.make_node("FastGelu", ["cropped"], ["g"], domain="com.microsoft"),
         helper.make_node("Loop", ["trips", "", "g"], ["h_final"], body=body)],
        "weights",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
        [helper.make_tensor_value_info("h_final", TensorProto.FLOAT, [2, 48])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(np.array([2, 48], np.int64), "crop"),
         numpy_helper.from_array(np.array(3, np.int64), "trips")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model


def test_no_analysis_sees_a_weight_and_the_engine_computes_with_all_of_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """ONNX's inference, checker and inliner each get models far smaller than one weight; the original is left
    as it was; and the engine's outputs are onnxruntime's, so every weight arrived."""
    model = _loop_model()
    before = model.SerializeToString()
    seen: dict[str, list[int]] = {"infer_shapes": [], "check_model": [], "inline_selected_functions": []}

    def recording(module: Any, name: str) -> None:
        original = getattr(module, name)

        def call(proto: Any, *args: Any, **kwargs: Any) -> Any:
            seen[name].append(proto.ByteSize())
            return original(proto, *args, **kwargs)

        monkeypatch.setattr(module, name, call)

    recording(onnx.shape_inference, "infer_shapes")
    recording(onnx.checker, "check_model")
    recording(onnx.inliner, "inline_selected_functions")
    ir = import_model(model)
    smallest_weight = 48 * 48 * 4
    assert all(seen.values()), seen
    assert max(max(sizes) for sizes in seen.values()) < smallest_weight / 2, seen
    assert model.SerializeToString() == before

    x = np.random.default_rng(1).standard_normal((2, 64)).astype(np.float32)
    _, got = build_and_simulate(ir, {"x": x})
    want = ort.InferenceSession(before, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got["h_final"], want, rtol=1e-5, atol=1e-5)


def test_a_malformed_weight_is_still_refused_by_its_own_data() -> None:
    """The tensor checks read the original behind the stand-in: raw data short of the dims is an error."""
    model = _loop_model()
    model.graph.initializer[0].raw_data = model.graph.initializer[0].raw_data[:-4]
    with pytest.raises(Exception, match="initializer 'W' has shape \\[64, 64\\].*holds 16380 bytes"):
        import_model(model)


def test_shapes_and_small_tensors_stay_whole() -> None:
    """What inference reads by value: int64 shapes of any length, and a few elements of any type."""
    model = _loop_model()
    model.graph.initializer.extend([numpy_helper.from_array(np.arange(1000, dtype=np.int64), "long_shape"),
                                    numpy_helper.from_array(np.ones(64, np.float32), "scales")])
    weights = weightless.Weights()
    stripped = weightless.strip(model, weights)
    assert sorted(t.name for t in weights.sources if isinstance(t, TensorProto)) == ["W", "b", "c_value"]
    kept = {t.name: t for t in stripped.graph.initializer}
    assert kept["long_shape"] == model.graph.initializer[3] and kept["scales"] == model.graph.initializer[4]
    assert list(kept["W"].dims) == [64, 64] and not kept["W"].raw_data
    np.testing.assert_array_equal(weights.array(kept["W"], "W"), numpy_helper.to_array(model.graph.initializer[0]))


def test_a_key_written_in_the_file_names_no_other_weight(tmp_path: pathlib.Path) -> None:
    """A tensor of the file carrying a stand-in's key of its own is read as written, never as the weight the key
    would name: keys hold a token of the run."""
    model = _loop_model()
    forged = model.graph.initializer[1]  # the crop's shape [2, 48]
    forged.external_data.add(key=weightless.KEY, value="0")
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    weights = weightless.Weights()
    from loopc.frontend.onnx.importer import load

    proto = load(str(path), weights)
    assert weights.array(next(t for t in proto.graph.initializer if t.name == "crop"), "crop").tolist() == [2, 48]
    assert import_model(str(path)).graph.outputs[0].shape == (2, 48)

"""onnxruntime's contrib ops, one small graph each, built by loopc (real builder, simulated) and compared with
onnxruntime running the same graph: activations, normalizations, attention, quantized products."""

from __future__ import annotations

import math

import numpy as np
import onnx.parser
import onnxruntime as ort
import pytest
from onnx.reference import ReferenceEvaluator

from loopc.errors import UnsupportedOpError
from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import build_and_simulate, check_onnx
from tests.frontend.onnx.helpers import refused

RNG = np.random.default_rng(36)


def header(opset: int = 17) -> str:
    return f'<ir_version: 8, opset_import: ["" : {opset}, "com.microsoft" : 1]>'


def normal(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


X = normal(2, 3, 8, scale=2.0)


def check_unchecked(text: str, feeds: dict[str, np.ndarray], rtol: float, atol: float) -> None:
    """As ``check_onnx``, for a model onnx.checker refuses (ops onnxruntime adds to the default domain)."""
    proto = onnx.parser.parse_model(text)
    _, got = build_and_simulate(import_model(proto), feeds)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    for output, want in zip(session.get_outputs(), session.run(None, feeds)):
        np.testing.assert_allclose(got[output.name], want, rtol=rtol, atol=atol, err_msg=output.name)


@pytest.mark.parametrize("opset", [14, 20])  # written out before Gelu exists (opset 20), Gelu itself after
@pytest.mark.parametrize("op, attrs", [("Gelu", ""), ("FastGelu", ""), ("QuickGelu", ""),
                                       ("QuickGelu", "<alpha = 1.25>")])
def test_activation(op: str, attrs: str, opset: int) -> None:
    check_onnx(f"""{header(opset)}
        g (float[2,3,8] x) => (float[2,3,8] y) {{
            y = com.microsoft.{op} {attrs} (x)
        }}""", {"x": X})


@pytest.mark.parametrize("op", ["BiasGelu", "FastGelu"])
def test_biased_activation(op: str) -> None:
    check_onnx(f"""{header()}
        g (float[2,3,8] x, float[8] b) => (float[2,3,8] y) {{
            y = com.microsoft.{op} (x, b)
        }}""", {"x": X, "b": normal(8)})


def test_bias_add_and_bias_split_gelu_against_their_formulas() -> None:
    """onnxruntime runs these two on CUDA only: the oracle is their schemas' formulas in NumPy."""
    proto = onnx.parser.parse_model(f"""{header()}
        g (float[2,3,8] x, float[8] b, float[2,3,8] skip) => (float[2,3,8] y, float[2,3,4] z) {{
            y = com.microsoft.BiasAdd (x, b, skip)
            z = com.microsoft.BiasSplitGelu (x, b)
        }}""")
    feeds = {"x": X, "b": normal(8), "skip": normal(2, 3, 8)}
    _, got = build_and_simulate(import_model(proto), feeds)
    biased = (X + feeds["b"]).astype(np.float64)
    right = biased[..., 4:]
    gelu = 0.5 * right * (1 + np.vectorize(math.erf)(right / math.sqrt(2)))
    np.testing.assert_allclose(got["y"], biased + feeds["skip"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["z"], biased[..., :4] * gelu, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opset", [14, 17])  # LayerNormalization written out, and ONNX's own
def test_skip_layer_normalization_with_bias_and_sum(opset: int) -> None:
    check_onnx(f"""{header(opset)}
        g (float[2,3,8] x, float[2,3,8] skip, float[8] gamma, float[8] beta, float[8] bias)
          => (float[2,3,8] y, float[2,3,8] total) {{
            y, mean, inv, total = com.microsoft.SkipLayerNormalization <epsilon = 0.001> (x, skip, gamma, beta, bias)
        }}""", {"x": X, "skip": normal(2, 3, 8), "gamma": normal(8), "beta": normal(8), "bias": normal(8)},
        rtol=1e-4, atol=1e-5)


def test_skip_simplified_layer_normalization() -> None:
    check_onnx(f"""{header()}
        g (float[2,3,8] x, float[3,8] skip, float[8] gamma) => (float[2,3,8] y, float[2,3,8] total) {{
            y, mean, inv, total = com.microsoft.SkipSimplifiedLayerNormalization (x, skip, gamma)
        }}""", {"x": X, "skip": normal(3, 8), "gamma": normal(8)}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("opset", [14, 16])
def test_default_domain_normalizations_onnxruntime_defines(opset: int) -> None:
    """SimplifiedLayerNormalization, and LayerNormalization before ONNX had it (opset 17), in the default domain."""
    check_unchecked(f"""<ir_version: 8, opset_import: ["" : {opset}]>
        g (float[2,3,8] x, float[3,8] scale, float[8] gamma, float[8] beta) => (float[2,3,8] y, float[2,3,8] z) {{
            y = SimplifiedLayerNormalization <axis = 1, epsilon = 0.01> (x, scale)
            z = LayerNormalization (x, gamma, beta)
        }}""", {"x": X, "scale": normal(3, 8), "gamma": normal(8), "beta": normal(8)}, rtol=1e-4, atol=1e-5)


def test_embed_layer_normalization_with_positions_and_mask() -> None:
    check_onnx(f"""{header()}
        g (int32[2,5] ids, int32[2,5] segments, int32[2,5] mask, int32[1,5] positions, float[10,8] words,
           float[7,8] table, float[2,8] segment_table, float[8] gamma, float[8] beta)
          => (float[2,5,8] y, int32[2] index, float[2,5,8] total) {{
            y, index, total = com.microsoft.EmbedLayerNormalization
                (ids, segments, words, table, segment_table, gamma, beta, mask, positions)
        }}""", {"ids": RNG.integers(0, 10, (2, 5)).astype(np.int32),
                "segments": RNG.integers(0, 2, (2, 5)).astype(np.int32),
                "mask": np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 1]], np.int32),
                "positions": np.array([[6, 0, 3, 2, 1]], np.int32), "words": normal(10, 8), "table": normal(7, 8),
                "segment_table": normal(2, 8), "gamma": normal(8), "beta": normal(8)}, rtol=1e-4, atol=1e-5)


def _attention(mask_type: str, attrs: str, mask: np.ndarray | None, past: bool = False) -> None:
    mask_in = ", int32" + mask_type + " mask" if mask is not None else ""
    feeds = {"x": normal(2, 4, 8), "w": normal(8, 24, scale=0.5), "b": normal(24)}
    if mask is not None:
        feeds["mask"] = mask
    past_in, outs, call = "", "float[2,4,8] y", "y = com.microsoft.Attention <num_heads = 2" + attrs + "> (x, w, b"
    call += ", mask" if mask is not None else (", " if past else "")
    if past:
        past_in = ", float[2,2,2,3,4] past"
        outs += ", float[2,2,2,7,4] present"
        call = call.replace("y = ", "y, present = ") + ", past"
        feeds["past"] = normal(2, 2, 2, 3, 4)
    check_onnx(f"""{header()}
        g (float[2,4,8] x, float[8,24] w, float[24] b{mask_in}{past_in}) => ({outs}) {{
            {call})
        }}""", feeds, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mask_type, mask", [
    ("[2,4]", np.array([[1, 1, 0, 1], [1, 1, 1, 0]], np.int32)),  # raw 0/1 per key
    ("[2,4,4]", RNG.integers(0, 2, (2, 4, 4)).astype(np.int32)),  # raw per query and key
    ("[2]", np.array([3, 1], np.int32)),  # each row's end
    ("[4]", np.array([3, 4, 1, 2], np.int32)),  # ends, then starts
])
def test_attention_masks(mask_type: str, mask: np.ndarray) -> None:
    _attention(mask_type, "", mask)


def test_attention_unidirectional_with_scale_and_filter_value() -> None:
    _attention("[2,4]", ", unidirectional = 1, scale = 0.3, mask_filter_value = -50.0",
               np.array([[1, 1, 0, 1], [1, 1, 1, 1]], np.int32))


def test_attention_with_past_state_is_causal_after_the_past() -> None:
    _attention("", ", unidirectional = 1", None, past=True)


def test_multi_head_attention_with_bias_padding_mask_and_cache() -> None:
    check_onnx(f"""{header()}
        g (float[2,3,8] q, float[2,5,8] k, float[2,5,8] v, float[24] b, int32[2,7] mask, float[1,2,3,7] bias,
           float[2,2,2,4] past_k, float[2,2,2,4] past_v)
          => (float[2,3,8] y, float[2,2,7,4] present_k, float[2,2,7,4] present_v) {{
            y, present_k, present_v = com.microsoft.MultiHeadAttention <num_heads = 2>
                (q, k, v, b, mask, bias, past_k, past_v)
        }}""", {"q": normal(2, 3, 8), "k": normal(2, 5, 8), "v": normal(2, 5, 8), "b": normal(24),
                "mask": np.array([[1] * 7, [1, 1, 1, 1, 0, 0, 1]], np.int32), "bias": normal(1, 2, 3, 7),
                "past_k": normal(2, 2, 2, 4), "past_v": normal(2, 2, 2, 4)}, rtol=1e-4, atol=1e-5)


def test_multi_head_attention_unidirectional() -> None:
    check_onnx(f"""{header()}
        g (float[2,4,8] q, float[2,4,8] k, float[2,4,8] v) => (float[2,4,8] y) {{
            y = com.microsoft.MultiHeadAttention <num_heads = 4, unidirectional = 1> (q, k, v)
        }}""", {"q": normal(2, 4, 8), "k": normal(2, 4, 8), "v": normal(2, 4, 8)}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("attrs", ["", "<transA = 1, alpha = 0.5>", "<transB = 1>", "<transA = 1, transB = 1>"])
def test_fused_matmul(attrs: str) -> None:
    check_onnx(f"""{header()}
        g (float[2,6,6] a, float[6,6] b) => (float[2,6,6] y) {{
            y = com.microsoft.FusedMatMul {attrs} (a, b)
        }}""", {"a": normal(2, 6, 6), "b": normal(6, 6)}, rtol=1e-4, atol=1e-5)


def test_matmul_integer_with_zero_points() -> None:
    """Against ONNX's reference evaluator: onnxruntime's uint8 × int8 kernel saturates 16-bit pair sums on x86 (its
    quantization docs say so), which full-range operands reach."""
    proto = onnx.parser.parse_model(f"""<ir_version: 8, opset_import: ["" : 17]>
        g (uint8[2,3,5] a, uint8 az) => (int32[2,3,4] y, int32[2,3,4] plain) {{
            b = Constant <value = int8[5,4] {{{", ".join(str(v) for v in RNG.integers(-128, 128, 20))}}}> ()
            bz = Constant <value = int8[4] {{3, -2, 0, 100}}> ()
            y = MatMulInteger (a, b, az, bz)
            plain = MatMulInteger (a, b)
        }}""")
    feeds = {"a": RNG.integers(0, 256, (2, 3, 5)).astype(np.uint8), "az": np.array(131, np.uint8)}
    _, got = build_and_simulate(import_model(proto), feeds)
    for name, want in zip(["y", "plain"], ReferenceEvaluator(proto).run(None, feeds)):
        np.testing.assert_array_equal(got[name], want, err_msg=name)


def test_matmul_integer_to_float_and_dynamic_quantize_matmul() -> None:
    weights = ", ".join(str(v) for v in RNG.integers(-63, 64, 32))  # no 16-bit saturation in onnxruntime
    check_onnx(f"""{header()}
        g (float[3,8] x, uint8[3,8] a, float a_scale, uint8 a_zero) => (float[3,4] y, float[3,4] z) {{
            b = Constant <value = int8[8,4] {{{weights}}}> ()
            scale = Constant <value = float[4] {{0.01, 0.02, 0.005, 0.03}}> ()
            zero = Constant <value = int8[4] {{0, 1, -3, 0}}> ()
            bias = Constant <value = float[4] {{0.5, -1.0, 0.0, 2.0}}> ()
            y = com.microsoft.DynamicQuantizeMatMul (x, b, scale, zero, bias)
            z = com.microsoft.MatMulIntegerToFloat (a, b, a_scale, scale, a_zero, zero, bias)
        }}""", {"x": normal(3, 8), "a": RNG.integers(0, 256, (3, 8)).astype(np.uint8),
                "a_scale": np.array(0.05, np.float32), "a_zero": np.array(120, np.uint8)}, rtol=1e-4, atol=1e-4)


def _nbits(bits: int, k: int, n: int, block: int, zero_points: str) -> tuple[str, str]:
    """A MatMulNBits node's initializers (random packed weights, scales, zero points) as ONNX text."""
    blocks = -(-k // block)
    packed = RNG.integers(0, 256, (n, blocks, block * bits // 8))
    lines = [f"uint8[{n},{blocks},{block * bits // 8}] w = {{{', '.join(map(str, packed.flat))}}}",
             f"float[{n},{blocks}] s = {{{', '.join(f'{v:.4f}' for v in RNG.uniform(0.01, 0.1, n * blocks))}}}"]
    if zero_points == "packed":
        width = -(-blocks * bits // 8)
        lines.append(f"uint8[{n},{width}] z = {{{', '.join(map(str, RNG.integers(0, 256, n * width)))}}}")
    elif zero_points == "float":
        lines.append(f"float[{n},{blocks}] z = {{{', '.join(f'{v:.2f}' for v in RNG.uniform(0, 2 ** bits, n * blocks))}}}")
    return ", ".join(lines), ", z" if zero_points else ""


@pytest.mark.parametrize("opset", [17, 21])  # per row of blocks, and per block (DequantizeLinear-21)
@pytest.mark.parametrize("bits, k, zero_points", [(4, 64, "packed"), (4, 40, ""), (8, 32, "packed"),
                                                  (2, 64, "packed"), (4, 32, "float")])
def test_matmul_nbits(bits: int, k: int, zero_points: str, opset: int) -> None:
    n, block = 6, 16
    initializers, zero = _nbits(bits, k, n, block, zero_points)
    check_onnx(f"""{header(opset)}
        g (float[2,3,{k}] a, float[{n}] bias) => (float[2,3,{n}] y) <{initializers}> {{
            y = com.microsoft.MatMulNBits <K = {k}, N = {n}, bits = {bits}, block_size = {block}>
                (a, w, s{zero or ', '}, , bias)
        }}""", {"a": normal(2, 3, k), "bias": normal(n)}, rtol=1e-4, atol=1e-4)


def test_an_unknown_contrib_op_is_refused_naming_its_domain() -> None:
    refused(f"""{header()}
        g (float[2] x) => (float[2] y) {{
            y = com.microsoft.Inverse (x)
        }}""", UnsupportedOpError, "'Inverse' of domain 'com.microsoft'", "onnxruntime")


def test_an_unsupported_form_is_refused_naming_the_node() -> None:
    refused(f"""{header()}
        g (float[2,3,8] x, float[8,24] w) => (float[2,3,8] y) {{
            y = com.microsoft.Attention <num_heads = 2, do_rotary = 1> (x, w)
        }}""", UnsupportedOpError, "Attention", "do_rotary")

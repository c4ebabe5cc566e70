"""QuantizeLinear and DequantizeLinear against onnxruntime: TensorRT's Q/DQ layers where the node is
symmetric int8 or float8, elementwise arithmetic for zero points and uint8, refusals for the rest."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx.parser
import onnx.printer
import pytest

from loopc.backend.trt import to_network
from loopc.errors import UnsupportedConversionError
from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import check_onnx
from tests.onnx_cases import loopc_failures

HEADER = '<ir_version: 10, opset_import: ["" : 21]>'
RNG = np.random.default_rng(7)
X = (RNG.standard_normal((2, 3, 4)) * 60).astype(np.float32)
X.flat[:4] = [1.0, 3.0, -5.0, 2.5]  # exact halves after scaling: rounding half to even shows


def test_uint8_with_zero_point_per_tensor():
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x) => (uint8[2,3,4] y) {{
            s = Constant <value = float {{2.0}}> ()
            z = Constant <value = uint8 {{128}}> ()
            y = QuantizeLinear (x, s, z)
        }}""", {"x": X})


def test_int8_symmetric_per_axis_is_a_quantize_layer():
    got = check_onnx(f"""{HEADER}
        g (float[2,3,4] x) => (int8[2,3,4] y) {{
            s = Constant <value = float[3] {{0.5, 1.0, 2.0}}> ()
            z = Constant <value = int8[3] {{0, 0, 0}}> ()
            y = QuantizeLinear <axis = 1> (x, s, z)
        }}""", {"x": X})
    assert got["y"].dtype == np.int8


def test_int8_with_zero_point_from_an_input():
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x, float s, int8 z) => (int8[2,3,4] y) {{
            y = QuantizeLinear (x, s, z)
        }}""", {"x": X, "s": np.array(1.5, np.float32), "z": np.array(-7, np.int8)})


def test_float8_quantize_saturates():
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x) => (float[2,3,4] y) {{
            s = Constant <value = float {{0.25}}> ()
            z = Constant <value = float8e4m3fn {{0}}> ()
            q = QuantizeLinear (x, s, z)
            one = Constant <value = float {{1.0}}> ()
            y = DequantizeLinear (q, one)
        }}""", {"x": X})  # onnxruntime hands float8 back as bytes: compare the values


def test_float8_round_trip():
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x, float s) => (float[2,3,4] y) {{
            q = QuantizeLinear <output_dtype = 17> (x, s)
            y = DequantizeLinear (q, s)
        }}""", {"x": X, "s": np.array(0.1, np.float32)})


def test_uint8_dequantize_per_block():
    q = RNG.integers(0, 256, (2, 4, 3)).astype(np.uint8)
    check_onnx(f"""{HEADER}
        g (uint8[2,4,3] q, float[2,2,3] s, uint8[2,2,3] z) => (float[2,4,3] y) {{
            y = DequantizeLinear <axis = 1, block_size = 2> (q, s, z)
        }}""", {"q": q, "s": RNG.uniform(0.1, 2, (2, 2, 3)).astype(np.float32),
                "z": RNG.integers(0, 256, (2, 2, 3)).astype(np.uint8)})


def test_int8_dequantize_per_axis_is_a_dequantize_layer():
    q = RNG.integers(-128, 128, (2, 3, 4)).astype(np.int8)
    check_onnx(f"""{HEADER}
        g (int8[2,3,4] q) => (float[2,3,4] y) {{
            s = Constant <value = float[4] {{0.5, 1.0, 2.0, 0.125}}> ()
            y = DequantizeLinear <axis = -1> (q, s)
        }}""", {"q": q})


def test_float8_dequantize_with_half_scale():
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x, float16 s) => (float16[2,3,4] y) {{
            one = Constant <value = float {{1.0}}> ()
            q = QuantizeLinear <output_dtype = 17> (x, one)
            y = DequantizeLinear (q, s)
        }}""", {"x": X, "s": np.array(0.5, np.float16)}, rtol=1e-3)


@pytest.mark.parametrize("dtype, attrs, reason", [
    ("uint4", "output_dtype = 21", "uint4"),
    ("float8e4m3fn", "output_dtype = 17, saturate = 0", "saturate=0"),
])
def test_refusals_name_the_form(dtype, attrs, reason):
    model = import_model(onnx.parser.parse_model(f"""{HEADER}
        g (float[4] x, float s) => ({dtype}[4] y) {{ y = QuantizeLinear <{attrs}> (x, s) }}"""))
    with pytest.raises(UnsupportedConversionError, match=reason):
        to_network(model)


def test_uint8_quantize_dequantize_pair_inside_the_network():
    """TensorRT has uint8 only at the network's edges: the pair's uint8 values are carried as int32."""
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x) => (float[2,3,4] y) {{
            s = Constant <value = float {{0.75}}> ()
            z = Constant <value = uint8 {{100}}> ()
            q = QuantizeLinear (x, s, z)
            y = DequantizeLinear (q, s, z)
        }}""", {"x": X})


def test_int8_pair_with_a_zero_point_inside_the_network():
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x) => (float[2,3,4] y) {{
            s = Constant <value = float[3] {{0.5, 1.0, 2.0}}> ()
            z = Constant <value = int8[3] {{-3, 0, 7}}> ()
            q = QuantizeLinear <axis = 1> (x, s, z)
            y = DequantizeLinear <axis = 1> (q, s, z)
        }}""", {"x": X})


@pytest.mark.parametrize("rows, block, x, expected", [
    # blocks of 2 rows: rows 0-1 scaled by [1, 0.5], rows 2-3 by [0.25, 2]; y = clip(round(x / s), -8, 7) * s
    # (half to even): -4 / 0.5 = -8 -> -4; 5 / 0.25 = 20 -> 7 -> 1.75; 0.5 / 2 = 0.25 -> 0
    (4, 2, [[1, 2], [3, -4], [5, 6], [-1, 0.5]], [[1, 2], [3, -4], [1.75, 6], [-1, 0]]),
    # blocks of 4 over 6 rows, the last one short: rows 0-3 by [1, 0.5], rows 4-5 by [0.25, 2];
    # 6 / 0.5 = 12 -> 7 -> 3.5; 3 / 2 = 1.5 -> 2 -> 4; -9 / 0.25 = -36 -> -8 -> -2; -7 / 2 = -3.5 -> -4 -> -8
    (6, 4, [[1, 2], [3, -4], [5, 6], [-1, 0.5], [2, 3], [-9, -7]],
     [[1, 2], [3, -4], [5, 3.5], [-1, 0.5], [1.75, 4], [-2, -8]]),
], ids=["whole-blocks", "short-last-block"])
def test_int4_pair_per_block(rows, block, x, expected):
    """INT4 per block: whole blocks are a Quantize and a Dequantize layer with no block shape (TensorRT infers the
    blocks from the scale's shape; TensorRT-RTX refuses INT4 with one set), as TensorRT's ONNX parser makes them; a
    short last block, which TensorRT would infer otherwise, is arithmetic in float."""
    text = f"""{HEADER}
        g (float[{rows},2] x) => (float[{rows},2] y) {{
            s = Constant <value = float[2,2] {{1, 0.5, 0.25, 2}}> ()
            q = QuantizeLinear <axis = 0, block_size = {block}, output_dtype = 22> (x, s)
            y = DequantizeLinear <axis = 0, block_size = {block}> (q, s)
        }}"""
    got = check_onnx(text, {"x": np.array(x, np.float32)})
    np.testing.assert_array_equal(got["y"], np.array(expected, np.float32))
    _, network = to_network(import_model(onnx.parser.parse_model(text)))
    layers = [network.get_layer(i) for i in range(network.num_layers)]
    scales = [len(layer.get_input(1).shape) for layer in layers if layer.type.name in ("QUANTIZE", "DEQUANTIZE")]
    arithmetic = [layer.name for layer in layers if layer.type.name == "ELEMENTWISE"]
    if rows % block == 0:
        assert scales == [2, 2] and not arithmetic
    else:
        assert 2 not in scales and arithmetic


def test_float4_round_trip_builds_for_blackwell():
    """FP4 exists only on Blackwell targets (sm89's builder refuses it); values worked out by hand:
    x / 0.5 = [0, 2.4, 5.2, -6.2, 10, 200, -0.5, 1.5] rounds to e2m1's {0, .5, 1, 1.5, 2, 3, 4, 6}
    as [0, 2, 6, -6, 6, 6, -0.5, 1.5] (saturating at 6), times 0.5 back."""
    from loopc.sim import simulate
    from loopc.trt.config import build_serialized, builder_config

    model = import_model(onnx.parser.parse_model(f"""<ir_version: 10, opset_import: ["" : 23]>
        g (float[8] x) => (float[8] y) {{
            s = Constant <value = float {{0.5}}> ()
            q = QuantizeLinear <output_dtype = 23> (x, s)
            y = DequantizeLinear (q, s)
        }}"""))
    session, network = to_network(model)
    build_serialized(session, network, builder_config(session, "sm120"))
    x = np.array([0, 1.2, 2.6, -3.1, 5, 100, -0.25, 0.75], np.float32)
    np.testing.assert_array_equal(simulate(network, {"x": x})["y"], [0, 1, 3, -3, 3, 3, -0.25, 0.75])


def test_uint8_without_a_zero_point():
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x) => (uint8[2,3,4] y) {{
            s = Constant <value = float {{0.5}}> ()
            y = QuantizeLinear (x, s)
        }}""", {"x": X})


#: ONNX's Q/DQ node tests loopc refuses, and the words of its reason: types TensorRT lacks (float8 e5m2,
#: 2-bit and unsigned 4-bit integers) and 4-bit tensors of odd length, which TensorRT cannot pack.
#: (16-bit integers are computed in int32, as loopc computes those types everywhere.)
REFUSED = {
    **{f"test_{op}_{t}": "no data type" for op in ("quantizelinear", "dequantizelinear")
       for t in ("e5m2", "uint4", "uint2", "int2")},
    **{f"test_{op}_{t}": "odd number of elements" for op in ("quantizelinear", "dequantizelinear")
       for t in ("int4", "float4e2m1")},
}


def test_node_tests_match_or_are_refused_by_name():
    from tests.conformance import node_test_cases

    cases = node_test_cases("quantizelinear")
    assert len(cases) >= 27
    wrong = loopc_failures(cases, REFUSED)
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("shift", [0.0, 50.0, -50.0])
def test_dynamic_quantize_linear(shift):
    """The range includes 0 whatever the data: all-positive and all-negative data move the zero point."""
    check_onnx("""<ir_version: 8, opset_import: ["" : 11]>
        g (float[3,4] x) => (uint8[3,4] y, float s, uint8 z) {
            y, s, z = DynamicQuantizeLinear (x)
        }""", {"x": (RNG.standard_normal((3, 4)) * 20 + shift).astype(np.float32)})


ONNX_TYPES = {"int8": 3, "uint8": 2, "float8e4m3fn": 17}


@pytest.mark.parametrize("dtype, zero", [("int8", ""), ("float8e4m3fn", ""), ("uint8", ", z")])
def test_fake_quantization_inside_a_loop(dtype, zero):
    """A quantize-dequantize pair on a loop's carried state (quantization-aware exports put them in
    bodies): the Q/DQ layers, or the arithmetic for uint8, inside a TensorRT loop."""
    check_onnx(f"""{HEADER}
        g (int64 n, float[2,3,4] x) => (float[2,3,4] final) {{
            t = Constant <value = bool {{1}}> ()
            final = Loop(n, t, x) <body = b (int64 i, bool c, float[2,3,4] s) => (bool c2, float[2,3,4] s2) {{
                scale = Constant <value = float {{0.125}}> ()
                z = Constant <value = uint8 {{128}}> ()
                half = Constant <value = float {{0.5}}> ()
                q = QuantizeLinear <output_dtype = {ONNX_TYPES[dtype]}> (s, scale{zero})
                d = DequantizeLinear (q, scale{zero})
                s2 = Mul(d, half)
                c2 = Identity(c)
            }}>
        }}""", {"n": np.array(3, np.int64), "x": X / 4})


def test_casts_through_float8_are_quantize_and_dequantize_layers():
    """Cast to float8 rounds to nearest even and saturates at 448 (ONNX's saturate=1), back exactly."""
    x = np.concatenate([X.reshape(-1)[:20] * 10, np.array([500, -1000, 17, 19], np.float32)]).reshape(2, 3, 4)
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x) => (float[2,3,4] y) {{
            e = Cast <to = 17> (x)
            y = Cast <to = 1> (e)
        }}""", {"x": x})


def test_qdq_matmul_with_int8_weights():
    """The pattern quantization tools write: activations through a Q/DQ pair, int8 weights through a
    per-column DequantizeLinear, then a float MatMul (TensorRT fuses such pairs into int8 kernels)."""
    w = RNG.integers(-127, 128, (4, 5)).astype(np.int8)
    w_text = ", ".join(str(int(v)) for v in w.reshape(-1))
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x) => (float[2,3,5] y) {{
            sx = Constant <value = float {{0.05}}> ()
            zx = Constant <value = int8 {{0}}> ()
            q = QuantizeLinear (x, sx, zx)
            xd = DequantizeLinear (q, sx, zx)
            w = Constant <value = int8[4,5] {{{w_text}}}> ()
            sw = Constant <value = float[5] {{0.01, 0.02, 0.03, 0.04, 0.05}}> ()
            wd = DequantizeLinear <axis = 1> (w, sw)
            y = MatMul (xd, wd)
        }}""", {"x": X / 20}, rtol=1e-5, atol=1e-5)


def test_half_input_divided_in_the_scales_float32():
    """Since opset 23 the division is in the scale's type (float32 here), not the half input's."""
    check_onnx(f"""<ir_version: 10, opset_import: ["" : 23]>
        g (float16[2,3,4] x) => (uint8[2,3,4] y) {{
            s = Constant <value = float {{0.3}}> ()
            z = Constant <value = uint8 {{128}}> ()
            y = QuantizeLinear (x, s, z)
        }}""", {"x": X.astype(np.float16)})


def test_float8_cast_node_tests():
    """ONNX's Cast/CastLike node tests to and from float8 e4m3fn match; saturate=0 is refused by name."""
    from tests.conformance import node_test_cases

    cases = [c for c in node_test_cases("FLOAT8E4M3FN") if "FNUZ" not in c.name and c.name.startswith("test_cast")]
    assert len(cases) >= 12
    wrong = loopc_failures(cases, {c.name: "saturate=0" for c in cases if "no_saturate" in c.name})
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("activation_type", ["int8", "uint8"])
def test_qdq_conv_with_per_channel_int8_weights(activation_type):
    """A quantized convolution as quantization tools export it: symmetric int8 (TensorRT's Q/DQ layers) or
    uint8 activations with a zero point (the arithmetic), per-output-channel int8 weights."""
    w = RNG.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    w_text = ", ".join(str(int(v)) for v in w.reshape(-1))
    zero = "0" if activation_type == "int8" else "128"
    check_onnx(f"""{HEADER}
        g (float[1,3,6,6] x) => (float[1,4,4,4] y) {{
            sx = Constant <value = float {{0.02}}> ()
            zx = Constant <value = {activation_type} {{{zero}}}> ()
            q = QuantizeLinear (x, sx, zx)
            xd = DequantizeLinear (q, sx, zx)
            w = Constant <value = int8[4,3,3,3] {{{w_text}}}> ()
            sw = Constant <value = float[4] {{0.01, 0.02, 0.03, 0.04}}> ()
            wd = DequantizeLinear <axis = 0> (w, sw)
            y = Conv (xd, wd)
        }}""", {"x": RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)}, rtol=1e-4, atol=1e-4)


def test_float8_weights_dequantized_into_a_matmul():
    """float8 weights stored in the model: a float32 constant quantized with scale 1 (exact), then the
    model's DequantizeLinear."""
    from onnx import TensorProto, helper, numpy_helper

    w = (RNG.standard_normal((4, 5)) * 8).astype(ml_dtypes.float8_e4m3fn)
    nodes = [helper.make_node("Constant", [], ["w"], value=numpy_helper.from_array(w, "w")),
             helper.make_node("Constant", [], ["s"], value=numpy_helper.from_array(np.array(0.05, np.float32))),
             helper.make_node("DequantizeLinear", ["w", "s"], ["wd"]),
             helper.make_node("MatMul", ["x", "wd"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    check_onnx(onnx.printer.to_text(model), {"x": RNG.standard_normal((2, 4)).astype(np.float32)})


def test_int32_bias_dequantized_and_int16_quantization():
    """A quantized bias (int32, as quantizers store it) and 16-bit quantization, computed in int32 (so the
    int16 values are compared after their DequantizeLinear: loopc's int16 tensors are int32 ones)."""
    check_onnx(f"""{HEADER}
        g (int32[5] b, float[2,5] x) => (float[2,5] y, float[2,5] back) {{
            s = Constant <value = float {{0.001}}> ()
            bias = DequantizeLinear (b, s)
            y = Add (x, bias)
            s16 = Constant <value = float {{0.01}}> ()
            z16 = Constant <value = int16 {{-100}}> ()
            q = QuantizeLinear (y, s16, z16)
            back = DequantizeLinear (q, s16, z16)
        }}""", {"b": np.array([-70000, -1, 0, 12345, 2**20], np.int32),
                "x": (RNG.standard_normal((2, 5)) * 400).astype(np.float32)})


def test_a_uint8_quantized_value_read_inside_the_network_stays_int32():
    """QuantizeLinear's uint8 result feeding a Cast (not a DequantizeLinear): TensorRT refused it as a UINT8
    tensor inside the network; held as INT32 its values 0..255 are the same."""
    check_onnx(f"""{HEADER}
        g (float[2,3] x) => (float[2,3] y) {{
            s = Constant <value = float {{0.05}}> ()
            z = Constant <value = uint8 {{128}}> ()
            q = QuantizeLinear (x, s, z)
            y = Cast <to = 1> (q)
        }}""", {"x": np.linspace(-8, 8, 6, dtype=np.float32).reshape(2, 3)})

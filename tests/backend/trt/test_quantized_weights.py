"""Quantized weights reach TensorRT quantized: a DequantizeLinear of an int8, float8 or int4 constant (uint8 shifted
into int8) is an IDequantizeLayer reading an IConstantLayer of INT8, FP8 or INT4, not a float constant, before a
loop and in its body; a ModelOpt weight (float initializer -> QuantizeLinear -> DequantizeLinear) folds to such a
constant; an int32 bias folds to a float one. Each model is built with the real builder and simulated, and the
simulator's outputs agree with onnxruntime's (graph optimizations off) within one quantization step: one step of
a weight at the largest activation, plus one step of the activation at the largest weight where the activation is
quantized too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from loopc.compiler import compile
from loopc.frontend.onnx import import_model
from loopc.ir import constant_value
from loopc.passes import ConstantFolding, PassManager
from loopc.sim import simulate
from loopc.trt import trt
from loopc.trt.config import build_serialized, builder_config, pin_profile

K = 64  #: weights are [K, K] (a recurrence's), [in, out]
RNG = np.random.default_rng(2024)


@dataclass
class Case:
    """A weight as an exporter writes it: its initializers, and the nodes that make the float weight ``w`` from them
    given the name of the activation it multiplies (nodes that quantize that activation make ``h_dq``, which the
    product then reads)."""

    initializers: list[Any]
    nodes: Callable[[str], list[Any]]
    held: str  #: the TensorRT type of the constant the weight's IDequantizeLayer reads
    values: np.ndarray  #: the float weight, as onnxruntime dequantizes it
    step: float  #: one quantization step of the weight (its largest scale)
    activation_step: float = 0.0  #: one step of the activation, when it is quantized too
    bias: np.ndarray | None = field(default=None)  #: an int32 bias behind a DequantizeLinear, added after the product


def _init(name: str, array: np.ndarray) -> Any:
    return numpy_helper.from_array(array, name)


def _dequantize(*operands: str, **attrs: Any) -> Callable[[str], list[Any]]:
    """The nodes of a weight that is one DequantizeLinear of ``operands``."""
    return lambda h: [helper.make_node("DequantizeLinear", list(operands), ["w"], **attrs)]


def _scales(n: int) -> np.ndarray:
    return RNG.uniform(0.01, 0.03, n).astype(np.float32) / 8


def int8_per_channel() -> Case:
    q, s = RNG.integers(-127, 128, (K, K)).astype(np.int8), _scales(K)
    return Case([_init("W", q), _init("s", s)], _dequantize("W", "s", axis=1), "INT8", q.astype(np.float32) * s,
                float(s.max()))


def modelopt_int8() -> Case:
    """ModelOpt's form: the weight a float initializer, quantized per output channel (int8 zero points of 0);
    the activation quantized per tensor, so both operands of the product are int8."""
    w = (RNG.standard_normal((K, K)) / 8).astype(np.float32)
    s = (np.abs(w).max(axis=0) / 127).astype(np.float32)
    zero, a_scale = np.zeros(K, np.int8), np.float32(1 / 127)

    def nodes(h: str) -> list[Any]:
        return [helper.make_node("QuantizeLinear", ["Wf", "s", "z"], ["wq"], axis=1),
                helper.make_node("DequantizeLinear", ["wq", "s", "z"], ["w"], axis=1),
                helper.make_node("QuantizeLinear", [h, "sa", "za"], ["h_q"]),
                helper.make_node("DequantizeLinear", ["h_q", "sa", "za"], ["h_dq"])]
    values = np.clip(np.rint(w / s), -128, 127) * s
    return Case([_init("Wf", w), _init("s", s), _init("z", zero), _init("sa", np.array(a_scale)),
                 _init("za", np.array(0, np.int8))], nodes, "INT8", values.astype(np.float32), float(s.max()),
                float(a_scale))


def fp8_e4m3() -> Case:
    """A float8 weight with one scale, its activation quantized to float8 too (ModelOpt's fp8 form)."""
    q = (RNG.standard_normal((K, K)) * 64).clip(-448, 448).astype(ml_dtypes.float8_e4m3fn)
    s, a_scale = np.float32(1 / 2048), np.float32(1 / 256)

    def nodes(h: str) -> list[Any]:
        return [helper.make_node("DequantizeLinear", ["W", "s"], ["w"]),
                helper.make_node("QuantizeLinear", [h, "sa"], ["h_q"], output_dtype=TensorProto.FLOAT8E4M3FN),
                helper.make_node("DequantizeLinear", ["h_q", "sa"], ["h_dq"])]
    # one float8 step is relative: an eighth of the largest value's power of two
    step = float(s) * 2.0 ** np.floor(np.log2(float(np.abs(q.astype(np.float32)).max()))) / 8
    return Case([_init("W", q), _init("s", np.array(s)), _init("sa", np.array(a_scale))], nodes, "FP8",
                q.astype(np.float32) * s, step, float(a_scale) * 32)


def int4_per_channel() -> Case:
    q, s = RNG.integers(-8, 8, (K, K)).astype(ml_dtypes.int4), _scales(K) * 16
    return Case([_init("W", q), _init("s", s)], _dequantize("W", "s", axis=1), "INT4", q.astype(np.float32) * s,
                float(s.max()))


def int4_per_block() -> Case:
    """Blocks of 32 along the input axis, as onnxruntime's MatMulNBits quantizer writes them: one Dequantize layer
    with no block shape (TensorRT infers the blocks from the scale's shape; TensorRT-RTX refuses INT4 with one
    set), as TensorRT's ONNX parser makes it."""
    q, s = RNG.integers(-8, 8, (K, K)).astype(ml_dtypes.int4), (_scales(K * K // 32) * 16).reshape(K // 32, K)
    return Case([_init("W", q), _init("s", s)], _dequantize("W", "s", axis=0, block_size=32), "INT4",
                q.astype(np.float32) * np.repeat(s, 32, axis=0), float(s.max()))


def int4_per_block_int8_activation() -> Case:
    """The same weight beside an int8 activation (W4A8). Held ``[out, in]`` (the weight-layout pass), its block
    scales are applied in float after a Dequantize of scale 1: TensorRT-RTX fails to build that product with the
    scales in the Dequantize layer ("MyelinCheckException: CHECK(is_constant()) failed")."""
    case = int4_per_block()
    a_scale = np.float32(1 / 127)
    weight = case.nodes

    def nodes(h: str) -> list[Any]:
        return [*weight(h), helper.make_node("QuantizeLinear", [h, "sa", "za"], ["h_q"]),
                helper.make_node("DequantizeLinear", ["h_q", "sa", "za"], ["h_dq"])]
    case.nodes, case.activation_step = nodes, float(a_scale)
    case.initializers += [_init("sa", np.array(a_scale)), _init("za", np.array(0, np.int8))]
    return case


def uint4_per_block_with_zero_points() -> Case:
    """onnxruntime's MatMulNBits quantizer's default (asymmetric): uint4 with a zero point per block of 32; held as
    INT4 (q - 8), its zero points and scales applied in float after a Dequantize of scale 1."""
    q = RNG.integers(0, 16, (K, K)).astype(ml_dtypes.uint4)
    s, zero = (_scales(K * K // 32) * 16).reshape(K // 32, K), RNG.integers(0, 16, (K // 32, K)).astype(ml_dtypes.uint4)
    values = (q.astype(np.float32) - np.repeat(zero, 32, axis=0).astype(np.float32)) * np.repeat(s, 32, axis=0)
    return Case([_init("W", q), _init("s", s), _init("z", zero)], _dequantize("W", "s", "z", axis=0, block_size=32),
                "INT4", values, float(s.max()))


def uint8_with_zero_points() -> Case:
    """onnxruntime's asymmetric uint8 weight: one zero point per output channel, not 128, so ``q - zero_point``
    spans more than int8; held as INT8 (q - 128), its zero point subtracted after a Dequantize of scale 1."""
    q, s = RNG.integers(0, 256, (K, K)).astype(np.uint8), _scales(K)
    zero = RNG.integers(100, 156, K).astype(np.uint8)
    return Case([_init("W", q), _init("s", s), _init("z", zero)], _dequantize("W", "s", "z", axis=1), "INT8",
                (q.astype(np.float32) - zero) * s, float(s.max()))


def uint8_symmetric() -> Case:
    """uint8 with every zero point 128: shifted by 128, a symmetric int8 weight under one Dequantize layer."""
    q, s = RNG.integers(1, 256, (K, K)).astype(np.uint8), _scales(K)
    return Case([_init("W", q), _init("s", s), _init("z", np.full(K, 128, np.uint8))],
                _dequantize("W", "s", "z", axis=1), "INT8", (q.astype(np.float32) - 128) * s, float(s.max()))


def int8_with_int32_bias() -> Case:
    """onnxruntime's quantize_static writes a bias as int32 behind a DequantizeLinear (scale: the activation's
    times the weight's): it folds to a float bias (TensorRT wants float biases), the weight stays INT8."""
    case = int8_per_channel()
    bias = RNG.integers(-5000, 5000, K).astype(np.int32)
    scale = np.full(K, 1 / 4096, np.float32)
    case.initializers += [_init("b", bias), _init("bs", scale)]
    case.bias = bias.astype(np.float32) * scale
    return case


CASES = {f.__name__: f for f in (int8_per_channel, modelopt_int8, fp8_e4m3, int4_per_channel, int4_per_block,
                                 int4_per_block_int8_activation, uint4_per_block_with_zero_points,
                                 uint8_with_zero_points, uint8_symmetric, int8_with_int32_bias)}


def _product(case: Case, h: str, out: str) -> list[Any]:
    """``out = h @ w`` (+ bias): the weight's nodes, then the MatMul (reading the quantized activation if any)."""
    nodes = case.nodes(h)
    operand = "h_dq" if any("h_dq" in n.output for n in nodes) else h
    if case.bias is None:
        return [*nodes, helper.make_node("MatMul", [operand, "w"], [out])]
    return [*nodes, helper.make_node("MatMul", [operand, "w"], ["product"]),
            helper.make_node("DequantizeLinear", ["b", "bs"], ["bias"], axis=0),
            helper.make_node("Add", ["product", "bias"], [out])]


def plain_model(case: Case) -> onnx.ModelProto:
    graph = helper.make_graph(_product(case, "x", "y"), "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                           [2, K])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, K])], case.initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def loop_model(case: Case) -> onnx.ModelProto:
    """``for _ in range(n): h = tanh(h @ w)``, the weight's nodes inside the Loop body (its initializers outside)."""
    body = helper.make_graph(
        [*_product(case, "h", "pre"), helper.make_node("Tanh", ["pre"], ["h_next"]),
         helper.make_node("Identity", ["cond"], ["cond_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, K])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_next", TensorProto.FLOAT, [1, K])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "", "h0"], ["h_last"], body=body)], "g",
        [helper.make_tensor_value_info("n", TensorProto.INT64, []),
         helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, K])],
        [helper.make_tensor_value_info("h_last", TensorProto.FLOAT, [1, K])], case.initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def _dequantized_constants(network: Any) -> list[str]:
    """The type of each IConstantLayer an IDequantizeLayer reads (its input 0)."""
    T = trt()
    producers = {}
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        for k in range(layer.num_outputs):
            producers[layer.get_output(k).name] = layer
    found = []
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        if layer.type == T.LayerType.DEQUANTIZE:
            source = producers.get(layer.get_input(0).name)
            if source is not None and source.type == T.LayerType.CONSTANT:
                found.append(source.get_output(0).dtype.name)
    return found


def _float_constants(network: Any, elements: int) -> list[str]:
    """Names of FLOAT constants of ``elements`` elements (a weight stored in float would be one)."""
    T = trt()
    found = []
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        out = layer.get_output(0) if layer.num_outputs else None
        if layer.type == T.LayerType.CONSTANT and out.dtype == T.float32 and int(np.prod(out.shape)) == elements:
            found.append(layer.name)
    return found


def _onnxruntime(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # Q/DQ op by op, as ONNX defines
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


@pytest.mark.parametrize("where", ["plain", "loop"])
@pytest.mark.parametrize("name", list(CASES))
def test_quantized_weight_is_held_quantized_and_computes_as_onnxruntime(name: str, where: str) -> None:
    case = CASES[name]()
    if where == "plain":
        model, inputs = plain_model(case), {"x": RNG.standard_normal((2, K)).astype(np.float32)}
    else:
        model, inputs = loop_model(case), {"n": np.array(5, np.int64),
                                           "h0": RNG.uniform(-1, 1, (1, K)).astype(np.float32)}
    onnx.checker.check_model(model, full_check=True)
    compiled = compile(model)
    network = compiled.network

    assert case.held in _dequantized_constants(network)
    assert "INT32" not in _dequantized_constants(network)  # an int32 bias is folded to a float one
    assert not _float_constants(network, K * K), "the weight is also stored in float"
    cfg = builder_config(compiled.session)
    pin_profile(compiled.session, network, cfg, inputs)
    build_serialized(compiled.session, network, cfg)

    (want,) = _onnxruntime(model, inputs)
    got = simulate(network, inputs)[network.get_output(0).name]
    largest = max(float(np.abs(a).max()) for a in inputs.values() if a.dtype == np.float32)
    tolerance = case.step * largest + case.activation_step * float(np.abs(case.values).max())
    np.testing.assert_allclose(got, want, rtol=0, atol=tolerance)
    # the float weight onnxruntime dequantizes is the one the test meant: the model is what it says
    if where == "plain" and case.activation_step == 0:
        expected = inputs["x"] @ case.values + (0 if case.bias is None else case.bias)
        np.testing.assert_allclose(want, expected, rtol=0, atol=tolerance)


# -- INT4 per block, small enough to work out by hand ---------------------------------------------------------------

INT4_W = [[1, -2], [3, 4], [-8, 7], [5, -6]]
BLOCK_SCALES = [[1, 0.5], [0.25, -2]]  #: per block of 2 rows; a negative scale, as onnxruntime's quantizer writes


@pytest.mark.parametrize(("q", "scale", "zero", "block", "layered", "expected"), [
    # blocks of 2 rows: y[i, j] = q[i, j] * s[i // 2, j]
    (np.array(INT4_W, ml_dtypes.int4), np.array(BLOCK_SCALES, np.float32), None, 2, True,
     [[1, -1], [3, 2], [-2, -14], [1.25, 12]]),
    # uint4 with zero point 8 (symmetric, shifted into int4): y[i, j] = (q[i, j] - 8) * s[i // 2, j]
    ((np.array(INT4_W) + 8).astype(ml_dtypes.uint4), np.array(BLOCK_SCALES, np.float32),
     np.full((2, 2), 8, ml_dtypes.uint4), 2, True, [[1, -1], [3, 2], [-2, -14], [1.25, 12]]),
    # one block of 8 over 4 rows (ModelOpt's block of 128 on a shorter weight): y[i, j] = q[i, j] * s[0, j]
    (np.array(INT4_W, ml_dtypes.int4), np.array([[0.5, 0.25]], np.float32), None, 8, True,
     [[0.5, -0.5], [1.5, 1], [-4, 1.75], [2.5, -1.5]]),
    # blocks of 4 over 6 rows, the last one short: TensorRT would infer blocks of 3, so the scales are applied in
    # float after a Dequantize of scale 1: rows 0-3 times s[0], rows 4-5 times s[1]
    (np.array([*INT4_W, [2, -1], [-3, 6]], ml_dtypes.int4), np.array(BLOCK_SCALES, np.float32), None, 4, False,
     [[1, -1], [3, 2], [-8, 3.5], [5, -3], [0.5, 2], [-0.75, -12]]),
], ids=["int4-blocks-of-2", "uint4-zero-point-8", "int4-one-short-block", "int4-short-last-block"])
def test_an_int4_block_weight_is_one_dequantize_layer_with_the_blocks_inferred(
        q: np.ndarray, scale: np.ndarray, zero: np.ndarray | None, block: int, layered: bool,
        expected: list[list[float]]) -> None:
    """``y = x @ DequantizeLinear(W, s[, z]; axis 0, block_size)`` with x the identity, so y is the dequantized
    weight: TensorRT's ONNX parser's form (the INT4 constant and its block scales under one Dequantize layer with no
    block shape, nothing after it but the product) wherever TensorRT's inferred blocks are ONNX's; the values worked
    out by hand from ONNX's ``(q - z) * s``, and onnxruntime's agree."""
    rows = q.shape[0]
    initializers = [_init("W", q), _init("s", scale)] + ([_init("z", zero)] if zero is not None else [])
    operands = ["W", "s"] + (["z"] if zero is not None else [])
    model = helper.make_model(helper.make_graph(
        [helper.make_node("DequantizeLinear", operands, ["w"], axis=0, block_size=block),
         helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, rows])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, 2])], initializers),
        opset_imports=[helper.make_opsetid("", 21)])
    onnx.checker.check_model(model, full_check=True)
    inputs = {"x": np.eye(rows, dtype=np.float32)}
    compiled = compile(model)
    network = compiled.network
    T = trt()
    (dq,) = [network.get_layer(i) for i in range(network.num_layers)
             if network.get_layer(i).type == T.LayerType.DEQUANTIZE]
    dq.__class__ = T.IDequantizeLayer
    assert dq.get_input(0).dtype == T.int4
    elementwise = [network.get_layer(i).name for i in range(network.num_layers)
                   if network.get_layer(i).type == T.LayerType.ELEMENTWISE]
    if layered:  # the block scales are the layer's: a rank-2 scale, no block shape, no float arithmetic after it
        assert len(dq.get_input(1).shape) == 2 and not elementwise
        with pytest.raises(RuntimeError):  # TensorRT's binding: "Could not get block_shape." when none is set
            dq.block_shape  # noqa: B018
    else:
        assert tuple(dq.get_input(1).shape) == () and elementwise
    cfg = builder_config(compiled.session)
    pin_profile(compiled.session, network, cfg, inputs)
    build_serialized(compiled.session, network, cfg)
    got = simulate(network, inputs)[network.get_output(0).name]
    np.testing.assert_array_equal(got, np.array(expected, np.float32))
    (want,) = _onnxruntime(model, inputs)
    np.testing.assert_array_equal(want, np.array(expected, np.float32))


# -- constant folding: what stays quantized, and what folds exactly ------------------------------------------------

def _folded(nodes: list[Any], initializers: list[Any], outputs: list[str]) -> tuple[Any, list[str]]:
    """The graph of ``nodes`` after constant folding, and the reasons recorded for what did not fold."""
    graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None)
                                              for o in outputs], initializers)
    model = import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]))
    manager = PassManager([ConstantFolding()])
    manager.run(model.graph)
    return model.graph, [d.reason for d in manager.declines]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.float8_e4m3fn])
def test_a_dequantized_quantized_constant_stays_and_says_why(dtype: Any) -> None:
    q = np.arange(4).reshape(2, 2).astype(dtype)
    graph, reasons = _folded([helper.make_node("DequantizeLinear", ["q", "s"], ["y"])],
                             [_init("q", q), _init("s", np.array(0.5, np.float32))], ["y"])
    assert [n.op for n in graph.nodes if n.op != "Constant"] == ["DequantizeLinear"]
    assert reasons == ["a quantized weight stays quantized: TensorRT fuses its dequantize with the layer that reads it"]


@pytest.mark.parametrize(("dtype", "values", "expected"), [
    (np.int32, [-70000, 3], [-35000, 1.5]),  # a quantized bias: TensorRT wants float biases
    (np.int16, [-32768, 7], [-16384, 3.5]),
])
def test_an_int32_or_16_bit_dequantize_folds(dtype: Any, values: list[int], expected: list[float]) -> None:
    graph, reasons = _folded([helper.make_node("DequantizeLinear", ["q", "s"], ["y"])],
                             [_init("q", np.array(values, dtype)), _init("s", np.array(0.5, np.float32))], ["y"])
    assert all(n.op == "Constant" for n in graph.nodes) and not reasons
    np.testing.assert_array_equal(constant_value(graph.outputs[0]), np.array(expected, np.float32))


X = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 17, 19, 300, -300, 1e6], np.float32)


@pytest.mark.parametrize(("attrs", "zero", "expected"), [
    # round half to even, then saturate
    ({}, np.array(0, np.int8), [0, 2, 2, 0, -2, 17, 19, 127, -128, 127]),
    ({}, np.array(128, np.uint8), [128, 130, 130, 128, 126, 145, 147, 255, 0, 255]),
    ({}, np.array(0, ml_dtypes.int4), [0, 2, 2, 0, -2, 7, 7, 7, -8, 7]),
    ({}, np.array(8, ml_dtypes.uint4), [8, 10, 10, 8, 6, 15, 15, 15, 0, 15]),
    # the nearest float8, ties to the even mantissa (17 between 16 and 18: 16; 19 between 18 and 20: 20), saturated
    ({"output_dtype": TensorProto.FLOAT8E4M3FN}, None, [0.5, 1.5, 2.5, -0.5, -2.5, 16, 20, 288, -288, 448]),
    ({"output_dtype": TensorProto.FLOAT8E5M2}, None, [0.5, 1.5, 2.5, -0.5, -2.5, 16, 20, 320, -320, 57344]),
], ids=["int8", "uint8", "int4", "uint4", "float8e4m3fn", "float8e5m2"])
def test_a_quantized_float_constant_folds_as_onnx_defines(attrs: dict[str, Any], zero: np.ndarray | None,
                                                          expected: list[float]) -> None:
    """ModelOpt's float weight -> QuantizeLinear folds to the quantized constant, exactly as ONNX defines it."""
    operands = ["x", "s"] + (["z"] if zero is not None else [])
    initializers = [_init("x", X), _init("s", np.array(1, np.float32))] + ([_init("z", zero)] if zero is not None
                                                                          else [])
    node = helper.make_node("QuantizeLinear", operands, ["y"], **attrs)
    graph, reasons = _folded([node], initializers, ["y"])
    assert all(n.op == "Constant" for n in graph.nodes) and not reasons
    got = constant_value(graph.outputs[0])
    np.testing.assert_array_equal(got.astype(np.float64), np.array(expected))
    # onnxruntime hands 4-bit and float8 results back to no NumPy type: its oracle reads them through a
    # DequantizeLinear of scale 1 (no zero point: the stored values)
    widen = helper.make_node("DequantizeLinear", ["y", "s"], ["wide"])
    oracle = helper.make_model(helper.make_graph(
        [node, widen], "g", [], [helper.make_tensor_value_info("wide", TensorProto.FLOAT, list(X.shape))],
        initializers), opset_imports=[helper.make_opsetid("", 21)])
    (want,) = ort.InferenceSession(oracle.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {})
    np.testing.assert_array_equal(got.astype(np.float64), want)


def test_a_quotient_beyond_int32_is_left_to_tensorrt() -> None:
    """ONNX's reference evaluator converts x / scale to int32 before it saturates: 1e10 would become -128 there.
    Such a QuantizeLinear is not folded; TensorRT's Quantize layer saturates it to 127."""
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])
    graph, reasons = _folded([node], [_init("x", np.array([1e10, 1], np.float32)), _init("s", np.array(1, np.float32)),
                                      _init("z", np.array(0, np.int8))], ["y"])
    assert [n.op for n in graph.nodes if n.op != "Constant"] == ["QuantizeLinear"]
    assert reasons[0].startswith("a quotient x / scale is not finite or beyond int32")

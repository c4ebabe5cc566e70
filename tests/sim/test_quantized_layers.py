"""Quantized constants and products in the simulator, against values worked out by hand.

INT8, FP8 and INT4 constants are read back (FP8 and INT4 from what the backend recorded: TensorRT's API does not
give their bytes back) under Dequantize layers per tensor, per channel and per block; INT4 per block with no block
shape set (TensorRT-RTX refuses INT4 with one; its ONNX parser sets none), the blocks inferred from the scale's
shape as the builder infers them, and refused where the builder refuses them. A MatrixMultiply whose two
operands are dequantized INT8 (or FP8) is computed as TensorRT's fused Q/DQ product: the quantized values
multiplied and summed (int32; float32 for FP8), then scaled by ``scale_a * scale_w``. Half outputs show it: the
dequantized operands, rounded to half first, give another result.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

from loopc.backend.trt.context import ConversionContext
from loopc.errors import BackendError, SimulationError
from loopc.sim import Simulator, simulate

FP8 = ml_dtypes.float8_e4m3fn
INT4 = ml_dtypes.int4


def _constant(nb: Any, values: np.ndarray) -> Any:
    """A constant made as the backend makes it (FP8 and INT4 as raw bytes, their values recorded)."""
    return ConversionContext(nb.session, nb.network).constant(values, "w")


def _quantized_product(nb: Any, qa: np.ndarray, scale_a: np.ndarray, qw: np.ndarray, scale_w: np.ndarray, kind: Any,
                       weight_axis: int = 1, block: tuple[int, ...] | None = None) -> Any:
    """y = DQ(Q(x, scale_a)) @ DQ(qw, scale_w), each Dequantize giving half; x is qa * scale_a (exactly qa back)."""
    half = nb.trt.float16
    x = nb.input("x", nb.trt.float32, qa.shape)
    sa = nb.const(scale_a)
    q = nb.network.add_quantize(x, sa, kind)
    a = nb.network.add_dequantize(q.get_output(0), sa, half)
    w = nb.network.add_dequantize(_constant(nb, qw), nb.const(scale_w), half)
    if scale_w.size > 1:
        w.axis = weight_axis
    if block is not None:
        w.block_shape = block
    op = nb.trt.MatrixOperation.NONE
    nb.output(nb.network.add_matrix_multiply(a.get_output(0), op, w.get_output(0), op).get_output(0), "y")
    return {"x": (qa.astype(np.float32) * scale_a).astype(np.float32)}


def _half(x: np.ndarray) -> np.ndarray:
    """``x`` rounded to half, as float32 (what a half layer stores, read widened)."""
    return x.astype(np.float16).astype(np.float32)


def _dequantized_first(qa: np.ndarray, sa: Any, qw: np.ndarray, sw: Any) -> np.ndarray:
    """What multiplying the Dequantize layers' half outputs would give (products summed in float32)."""
    return (_half(qa.astype(np.float32) * sa) @ _half(qw.astype(np.float32) * sw)).astype(np.float16)


def test_int8_product_sums_the_integers_then_scales(nb: Any) -> None:
    qa = np.array([[127, -101, 77], [3, 5, -7]], np.int8)
    qw = np.array([[113, -90], [-127, 71], [99, 127]], np.int8)
    sa, sw = np.array(0.0173, np.float32), np.array([0.0091, 0.0237], np.float32)
    inputs = _quantized_product(nb, qa, sa, qw, sw, nb.trt.int8)
    got = nb.build_and_simulate(inputs)["y"]
    # by hand: 127*113 + (-101)(-127) + 77*99 = 34801, 127*(-90) + (-101)*71 + 77*127 = -8822,
    # 3*113 + 5*(-127) + (-7)*99 = -989, 3*(-90) + 5*71 + (-7)*127 = -804
    total = np.array([[34801, -8822], [-989, -804]], np.float32)
    expected = (total * (sa * sw)).astype(np.float16)  # 5.479 -> 5.48 in half (5.4787...)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, expected)
    assert got[0, 0] != _dequantized_first(qa, sa, qw, sw)[0, 0]  # 5.477: the int32 sum is visible


def test_fp8_product_sums_in_float32_then_scales(nb: Any) -> None:
    qa = np.array([[1.75, -3.25, 0.625], [14, -0.1875, 5.5]], FP8)
    qw = np.array([[2.5, -1.125], [-7, 0.8125], [0.34375, 13]], FP8)
    sa, sw = np.array(0.3, np.float32), np.array(0.7, np.float32)
    inputs = _quantized_product(nb, qa, sa, qw, sw, nb.trt.fp8)
    got = nb.build_and_simulate(inputs)["y"]
    # by hand: 1.75*2.5 + (-3.25)(-7) + 0.625*0.34375 = 27.33984375 (each product exact in float32), ...
    total = np.array([[27.33984375, 3.515625], [38.203125, 55.59765625]], np.float32)
    expected = (total * (sa * sw)).astype(np.float16)
    np.testing.assert_array_equal(got, expected)
    assert not np.array_equal(got, _dequantized_first(qa, sa, qw, sw))  # [0, 0]: 5.742, not 5.74


def test_a_block_scaled_weight_is_multiplied_dequantized(nb: Any) -> None:
    """Scales per block along the summed axis do not factor out of the sum: no fused product."""
    qa = np.array([[127, -101, 77, 12], [3, 5, -7, -128]], np.int8)
    qw = np.array([[113, -90], [-127, 71], [99, 127], [-5, 64]], np.int8)
    sa = np.array(0.0173, np.float32)
    sw = np.array([[0.0091, 0.0237], [0.0113, 0.0071]], np.float16)  # TensorRT gives half from half scales per block
    inputs = _quantized_product(nb, qa, sa, qw, sw, nb.trt.int8, weight_axis=0, block=(2, 1))
    nb.serialize(inputs)
    sim = Simulator(nb.network)
    assert all(layer.reads is None for layer in sim.network.layers)
    got = sim.run(inputs)["y"]
    w = qw.astype(np.float32) * np.repeat(sw, 2, axis=0).astype(np.float32)
    a = qa.astype(np.float32) * sa
    np.testing.assert_array_equal(got, (_half(a) @ _half(w)).astype(np.float16))


def test_a_weight_only_product_is_float(nb: Any) -> None:
    """Only the weight dequantized (the activation float): the product is of floats."""
    x = nb.input("x", nb.trt.float32, (1, 3))
    qw = np.array([[113, -90], [-127, 71], [99, 127]], np.int8)
    w = nb.network.add_dequantize(_constant(nb, qw), nb.const(np.array([0.5, 0.25], np.float32)), nb.trt.float32)
    w.axis = 1
    op = nb.trt.MatrixOperation.NONE
    nb.output(nb.network.add_matrix_multiply(x, op, w.get_output(0), op).get_output(0), "y")
    got = nb.build_and_simulate({"x": np.array([[1, 2, -1]], np.float32)})["y"]
    np.testing.assert_array_equal(got, [[(113 - 254 - 99) * 0.5, (-90 + 142 - 127) * 0.25]])  # [[-120, -18.75]]


@pytest.mark.parametrize(("values", "scale", "axis", "block", "expected"), [
    # INT4 per tensor: values -8..7 times 0.5
    (np.array([[-8, 7], [3, -1]], INT4), np.array(0.5, np.float32), None, None, [[-4, 3.5], [1.5, -0.5]]),
    # INT4 per channel (axis 1)
    (np.array([[-8, 7], [3, -1]], INT4), np.array([1, 0.25], np.float32), 1, None, [[-8, 1.75], [3, -0.25]]),
    # FP8 per channel (axis 0)
    (np.array([[448, -0.375], [1.5, 20]], FP8), np.array([0.5, 2], np.float32), 0, None, [[224, -0.1875], [3, 40]]),
    # INT8 per block of 2 along axis 0: scale[i, j] covers rows 2i, 2i+1 of column j
    (np.array([[1, -2], [3, 4], [-128, 127], [5, 6]], np.int8), np.array([[1, 0.5], [0.25, 2]], np.float32), 0,
     (2, 1), [[1, -1], [3, 2], [-32, 254], [1.25, 12]]),
], ids=["int4-per-tensor", "int4-per-channel", "fp8-per-channel", "int8-per-block"])
def test_a_quantized_constant_is_read_back_and_dequantized(nb: Any, values: np.ndarray, scale: np.ndarray,
                                                            axis: int | None, block: tuple[int, ...] | None,
                                                            expected: list[list[float]]) -> None:
    x = nb.input("x", nb.trt.float32, values.shape)  # the network needs an input: add it to the constant
    dq = nb.network.add_dequantize(_constant(nb, values), nb.const(scale), nb.trt.float32)
    if axis is not None:
        dq.axis = axis
    if block is not None:
        dq.block_shape = block
    total = nb.network.add_elementwise(dq.get_output(0), x, nb.trt.ElementWiseOperation.SUM)
    nb.output(total.get_output(0), "y")
    got = nb.build_and_simulate({"x": np.zeros(values.shape, np.float32)})["y"]
    np.testing.assert_array_equal(got, np.array(expected, np.float32))


def _int4_block_dequantize(nb: Any, values: np.ndarray, scale: np.ndarray, axis: int) -> dict[str, np.ndarray]:
    """``y = DQ(values, scale) + x`` with no block shape set, as TensorRT's ONNX parser makes a block-wise INT4
    weight's layer (TensorRT-RTX refuses INT4 with one set); x is zeros."""
    x = nb.input("x", nb.trt.float32, values.shape)
    dq = nb.network.add_dequantize(_constant(nb, values), nb.const(scale), nb.trt.float32)
    dq.axis = axis
    nb.output(nb.network.add_elementwise(dq.get_output(0), x, nb.trt.ElementWiseOperation.SUM).get_output(0), "y")
    return {"x": np.zeros(values.shape, np.float32)}


@pytest.mark.parametrize(("values", "scale", "axis", "expected"), [
    # blocks of 2 along axis 0 (onnxruntime's MatMulNBits form, [in, out]): y[i, j] = q[i, j] * s[i // 2, j];
    # a negative scale as that quantizer writes them
    (np.array([[1, -2], [3, 4], [-8, 7], [5, -6]], INT4), np.array([[1, 0.5], [0.25, -2]], np.float32), 0,
     [[1, -1], [3, 2], [-2, -14], [1.25, 12]]),
    # the same blocks, with axis 1: the builder infers them from the shapes whatever the axis (it builds both
    # into the same engine, measured)
    (np.array([[1, -2], [3, 4], [-8, 7], [5, -6]], INT4), np.array([[1, 0.5], [0.25, -2]], np.float32), 1,
     [[1, -1], [3, 2], [-2, -14], [1.25, 12]]),
    # blocks of 2 along axis 1 (the weight held [out, in]): y[i, j] = q[i, j] * s[i, j // 2]
    (np.array([[1, -2, 3, 4], [-8, 7, 5, -6]], INT4), np.array([[1, 0.25], [0.5, -2]], np.float32), 1,
     [[1, -2, 0.75, 1], [-4, 3.5, -10, 12]]),
    # one block covering axis 0 (ModelOpt's block of 128 on a weight of fewer rows): y[i, j] = q[i, j] * s[0, j]
    (np.array([[1, -2], [3, 4], [-8, 7], [5, -6]], INT4), np.array([[0.5, 0.25]], np.float32), 0,
     [[0.5, -0.5], [1.5, 1], [-4, 1.75], [2.5, -1.5]]),
    # rank 3, blocks of 2 along the second to last axis: y[b, i, j] = q[b, i, j] * s[b, i // 2, j]
    (np.array([[[1, -2], [3, 4]], [[-8, 7], [5, -6]]], INT4), np.array([[[0.5, 2]], [[0.25, -1]]], np.float32), 1,
     [[[0.5, -4], [1.5, 8]], [[-2, -7], [1.25, 6]]]),
], ids=["axis0-blocks-of-2", "axis-ignored", "axis1-blocks-of-2", "one-short-block", "rank3"])
def test_an_int4_block_scale_sets_the_blocks_by_its_shape(nb: Any, values: np.ndarray, scale: np.ndarray,
                                                          axis: int, expected: list[Any]) -> None:
    inputs = _int4_block_dequantize(nb, values, scale, axis)
    got = nb.build_and_simulate(inputs)["y"]
    np.testing.assert_array_equal(got, np.array(expected, np.float32))


@pytest.mark.parametrize(("shape", "scale_shape", "reason"), [
    ((4, 4), (2, 2), "Only a single blocking dimension is allowed"),
    ((4, 2), (4, 2), "Only a single blocking dimension is allowed"),  # no axis blocked
    ((2, 4, 2), (1, 4, 2), "The blocking dimension must be the last or second to last dimension"),
    ((6, 2), (4, 2), "Inferred block size is not an integer"),
], ids=["two-axes", "none", "first-of-three", "not-whole"])
def test_an_int4_block_scale_whose_blocks_cannot_be_inferred_is_refused(
        nb: Any, shape: tuple[int, ...], scale_shape: tuple[int, ...], reason: str) -> None:
    """The builder refuses it, and so does the simulator (TensorRT's shape analysis, which it asks, already)."""
    values = (np.arange(int(np.prod(shape))) % 16 - 8).reshape(shape).astype(INT4)
    inputs = _int4_block_dequantize(nb, values, np.full(scale_shape, 0.5, np.float32), len(shape) - 2)
    with pytest.raises(BackendError, match=reason):
        nb.serialize(inputs)
    with pytest.raises(SimulationError):
        simulate(nb.network, inputs)


def _int4_block_round_trip(nb: Any) -> None:
    """``DQ(Q(x, s), s)`` to INT4 with no block shape, x of dynamic rows: the blocks along axis 0 are known only
    when the layers run (rows / 2), so the simulator's kernel infers them, not TensorRT's shape analysis."""
    x = nb.input("x", nb.trt.float32, (-1, 2))
    s = nb.const(np.array([[1, 0.5], [0.25, 2]], np.float32))
    q = nb.network.add_quantize(x, s, nb.trt.int4)
    dq = nb.network.add_dequantize(q.get_output(0), s, nb.trt.float32)
    q.axis = dq.axis = 0
    nb.output(dq.get_output(0), "y")


def test_int4_blocks_of_a_dynamic_axis_are_inferred_when_the_layers_run(nb: Any) -> None:
    _int4_block_round_trip(nb)
    x = np.array([[1, 2], [3, -4], [5, 6], [-1, 0.5], [2, 3], [7, -7]], np.float32)
    got = nb.build_and_simulate({"x": x})["y"]
    # blocks of 3 rows: rows 0-2 scaled by [1, 0.5], rows 3-5 by [0.25, 2]; y = clamp(round(x / s), -8, 7) * s
    # (half to even): 6 / 0.5 = 12 -> 7 -> 3.5; 0.5 / 2 -> 0; 2 / 0.25 = 8 -> 7 -> 1.75; 3 / 2 = 1.5 -> 2 -> 4;
    # -7 / 2 = -3.5 -> -4 -> -8
    np.testing.assert_array_equal(got, [[1, 2], [3, -4], [5, 3.5], [-1, 0], [1.75, 4], [1.75, -8]])


def test_int4_blocks_of_a_dynamic_axis_that_do_not_divide_it_are_refused(nb: Any) -> None:
    _int4_block_round_trip(nb)
    inputs = {"x": np.zeros((5, 2), np.float32)}
    with pytest.raises(BackendError):  # Myelin: the rows are not a multiple of the scale's
        nb.serialize(inputs)
    with pytest.raises(SimulationError, match="Inferred block size is not an integer"):
        simulate(nb.network, inputs)


def test_an_fp8_constant_nobody_recorded_cannot_be_read(nb: Any) -> None:
    """An FP8 constant made from raw bytes outside loopc (TensorRT's own parser does so): TensorRT's API gives its
    values back to no one, and the simulator says so."""
    raw = np.array([1.5, -2], FP8).view(np.uint8)
    constant = nb.network.add_constant((2,), nb.trt.Weights(nb.trt.fp8, raw.ctypes.data, 2))
    dq = nb.network.add_dequantize(constant.get_output(0), nb.const(np.array(1, np.float32)), nb.trt.float32)
    nb.output(dq.get_output(0), "y")
    with pytest.raises(SimulationError, match="does not give back the values of an FP8 constant, and this network was not made by loopc"):
        simulate(nb.network, {})

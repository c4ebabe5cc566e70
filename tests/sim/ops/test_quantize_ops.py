"""Quantize and Dequantize kernels against TensorRT's documented semantics, worked out by hand."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

FP8 = ml_dtypes.float8_e4m3fn


def test_int8_quantize_rounds_half_to_even_and_clamps(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (8,))
    layer = nb.network.add_quantize(x, nb.const(np.array(2.0, np.float32)), nb.trt.int8)
    nb.output(layer.get_output(0), "y")
    values = np.array([1, 3, 5, -1, -3, 300, -300, 0.9], np.float32)  # /2: .5 1.5 2.5 -.5 -1.5 150 -150 .45
    got = nb.build_and_simulate({"x": values})["y"]
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, [0, 2, 2, 0, -2, 127, -128, 0])


def test_int8_quantize_per_axis(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (2, 3))
    layer = nb.network.add_quantize(x, nb.const(np.array([1, 2, 4], np.float32)), nb.trt.int8)
    layer.axis = 1
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"x": np.array([[4, 4, 4], [-6, 7, 10]], np.float32)})["y"]
    np.testing.assert_array_equal(got, [[4, 2, 1], [-6, 4, 2]])  # 3.5 -> 4, 2.5 -> 2


def test_int8_quantize_per_block(nb: Any) -> None:
    """Blocks of 2 along axis 1: scale[i, j] covers x[i, 2j:2j+2]."""
    x = nb.input("x", nb.trt.float32, (2, 4))
    scale = np.array([[1, 10], [2, 0.5]], np.float32)
    layer = nb.network.add_quantize(x, nb.const(scale), nb.trt.int8)
    layer.axis = 1
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"x": np.array([[3, -3, 30, 55], [8, 2, 1, -1.25]], np.float32)})["y"]
    np.testing.assert_array_equal(got, [[3, -3, 3, 6], [4, 1, 2, -2]])  # 5.5 -> 6, -2.5 -> -2


def test_fp8_quantize_saturates_and_rounds_to_nearest_even(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (6,))
    layer = nb.network.add_quantize(x, nb.const(np.array(0.5, np.float32)), nb.trt.fp8)
    nb.output(layer.get_output(0), "y")
    # /0.5: 1000 -> saturates at 448; -0.3 -> -0.6, whose neighbours in [0.5, 1) are 1/16 apart: -0.625
    # 8.5 -> 17 -> between 16 and 18 (steps of 2): half-way, to even mantissa 16; 9.5 -> 19 -> half-way, to 20
    values = np.array([500, -500, -0.3, 8.5, 9.5, 0], np.float32)
    got = nb.build_and_simulate({"x": values})["y"]
    assert got.dtype == FP8
    np.testing.assert_array_equal(got.astype(np.float32), [448, -448, -0.625, 16, 20, 0])


def test_fp8_dequantize(nb: Any) -> None:
    x = nb.input("x", nb.trt.fp8, (4,))
    layer = nb.network.add_dequantize(x, nb.const(np.array(3.0, np.float32)), nb.trt.float32)
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"x": np.array([1.5, -448, 0.125, 0], FP8)})["y"]
    np.testing.assert_array_equal(got, [4.5, -1344, 0.375, 0])


def test_int8_dequantize_per_axis_to_half(nb: Any) -> None:
    x = nb.input("x", nb.trt.int8, (3, 2))
    layer = nb.network.add_dequantize(x, nb.const(np.array([0.5, 2, -1], np.float32)), nb.trt.float16)
    layer.axis = 0
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"x": np.array([[1, -128], [3, 127], [7, 0]], np.int8)})["y"]
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, [[0.5, -64], [6, 254], [-7, 0]])


def test_int4_quantize_clamps_to_four_bits(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (4,))
    scale = nb.const(np.array(1.0, np.float32))
    q = nb.network.add_quantize(x, scale, nb.trt.int4)
    dq = nb.network.add_dequantize(q.get_output(0), scale, nb.trt.float32)
    nb.output(dq.get_output(0), "y")
    got = nb.build_and_simulate({"x": np.array([9, -9, 2.5, -3.5], np.float32)})["y"]
    np.testing.assert_array_equal(got, [7, -8, 2, -4])


def test_fp4_quantize_rounds_to_e2m1_and_saturates_at_six() -> None:
    """FP4 builds only for Blackwell targets, so the kernel is run on a read-back network built for sm120:
    /1: 2.5 -> 2 and 5 -> 4 (ties to the even mantissa), 0.75 -> 1, 7 -> 6 (saturated), -0.2 -> 0 (-0)."""
    from loopc.sim import simulate
    from loopc.trt import trt
    from loopc.trt.config import Session, build_serialized, builder_config

    t = trt()
    session = Session()
    network = session.create_network()
    x = network.add_input("x", t.float32, (6,))
    scale = np.array(1.0, np.float32)
    q = network.add_quantize(x, network.add_constant((), scale).get_output(0), t.fp4)
    dq = network.add_dequantize(q.get_output(0), network.add_constant((), scale).get_output(0), t.float32)
    dq.get_output(0).name = "y"
    network.mark_output(dq.get_output(0))
    build_serialized(session, network, builder_config(session, "sm120"))
    got = simulate(network, {"x": np.array([2.5, 5, 0.75, 7, -0.2, -100], np.float32)})["y"]
    np.testing.assert_array_equal(got, [2, 4, 1, 6, 0, -6])

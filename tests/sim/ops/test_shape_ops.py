"""Shuffle, Squeeze, Unsqueeze, Concatenation, Slice, Padding, ReverseSequence and Fill kernels
against TensorRT's documented semantics."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from loopc.errors import SimulationError
from loopc.sim import simulate
from loopc.sim.ops.shuffle import resolve_reshape




X234 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


# -- Shuffle ------------------------------------------------------------------------------------


def test_shuffle_transpose_reshape_transpose(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (2, 3, 4))
    layer = nb.network.add_shuffle(x)
    layer.first_transpose = (2, 0, 1)  # -> (4, 2, 3)
    layer.reshape_dims = (0, -1)  # 0 copies dim 0 (4), -1 infers 6
    layer.second_transpose = (1, 0)  # -> (6, 4)
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"x": X234})["y"]
    expect = X234.transpose(2, 0, 1).reshape(4, 6).T
    np.testing.assert_array_equal(got, expect)


def test_shuffle_placeholder_zeros_align_with_leading_dims(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (2, 3, 4))
    layer = nb.network.add_shuffle(x)
    layer.reshape_dims = (0, 0, 2, 2)  # (2, 3, 2, 2)
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"x": X234})["y"]
    np.testing.assert_array_equal(got, X234.reshape(2, 3, 2, 2))


def test_shuffle_dynamic_reshape_input(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (2, 3, 4))
    layer = nb.network.add_shuffle(x)
    layer.set_input(1, nb.const([0, -1, 3], np.int64))  # 0 is still a placeholder: (2, 4, 3)
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"x": X234})["y"]
    np.testing.assert_array_equal(got, X234.reshape(2, 4, 3))


def test_shuffle_zero_is_a_real_zero_without_placeholder(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (0, 3))
    layer = nb.network.add_shuffle(x)
    layer.zero_is_placeholder = False
    layer.reshape_dims = (3, 0)
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"x": np.zeros((0, 3), np.float32)})["y"]
    assert got.shape == (3, 0)


@pytest.mark.parametrize(
    "shape, target, message",
    [((2, 3), (4, -1), "cannot infer"), ((2, 3), (5,), "cannot reshape"), ((2, 3), (-1, -1), "invalid")],
)
def test_reshape_errors_are_user_errors(shape: tuple[int, ...], target: tuple[int, ...], message: str) -> None:
    with pytest.raises(SimulationError, match=message):
        resolve_reshape(shape, target, True)


# -- Squeeze / Unsqueeze / Concatenation --------------------------------------------------------


def test_squeeze_and_unsqueeze_with_axes_inputs(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (1, 3, 1, 4))
    squeezed = nb.network.add_squeeze(x, nb.const([-2, 0], np.int64)).get_output(0)  # (3, 4)
    unsqueezed = nb.network.add_unsqueeze(squeezed, nb.const([-1, 1], np.int64)).get_output(0)  # (3, 1, 4, 1)
    nb.output(squeezed, "s")
    nb.output(unsqueezed, "u")
    value = np.arange(12, dtype=np.float32).reshape(1, 3, 1, 4)
    got = nb.build_and_simulate({"x": value})
    np.testing.assert_array_equal(got["s"], value.reshape(3, 4))
    np.testing.assert_array_equal(got["u"], value.reshape(3, 1, 4, 1))


def test_squeeze_without_axes_removes_static_unit_dims(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (1, 3, 1))
    nb.output(nb.network.add_squeeze(x).get_output(0), "y")
    got = nb.build_and_simulate({"x": np.array([[[1], [2], [3]]], np.float32)})["y"]
    np.testing.assert_array_equal(got, [1, 2, 3])


def test_concatenation_on_axis_1(nb: Any) -> None:
    a = nb.input("a", nb.trt.int32, (2, 1))
    b = nb.const([[10, 11, 12], [13, 14, 15]], np.int32)
    layer = nb.network.add_concatenation([a, b, a])
    layer.axis = 1
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"a": np.array([[1], [2]], np.int32)})["y"]
    np.testing.assert_array_equal(got, [[1, 10, 11, 12, 1], [2, 13, 14, 15, 2]])


# -- Slice --------------------------------------------------------------------------------------

ROW = np.array([10, 20, 30, 40], dtype=np.float32)  # d = 4


@pytest.mark.parametrize(
    "mode, start, size, stride, expect",
    [
        # x_i = start + i * stride; WRAP reads x mod 4
        ("WRAP", -3, 7, 1, [20, 30, 40, 10, 20, 30, 40]),
        ("WRAP", 5, 4, -1, [20, 10, 40, 30]),
        # CLAMP reads min(max(x, 0), 3)
        ("CLAMP", -2, 8, 1, [10, 10, 10, 20, 30, 40, 40, 40]),
        # REFLECT: c = |x| mod 6, z = 6 - c when c >= 4
        ("REFLECT", -3, 8, 1, [40, 30, 20, 10, 20, 30, 40, 30]),
        ("REFLECT", 6, 3, -2, [10, 30, 30]),
        # FILL writes the fill value (input 4) wherever x is outside [0, 4)
        ("FILL", -2, 7, 1, [-1, -1, 10, 20, 30, 40, -1]),
        ("FILL", 4, 3, -2, [-1, 30, 10]),
    ],
)
def test_slice_sample_modes_with_dynamic_parameters(
    nb: Any, mode: str, start: int, size: int, stride: int, expect: list[float]
) -> None:
    x = nb.input("x", nb.trt.float32, (4,))
    layer = nb.network.add_slice(x, (0,), (1,), (1,))
    layer.mode = getattr(nb.trt.SampleMode, mode)
    layer.set_input(1, nb.const([start], np.int64))
    layer.set_input(2, nb.const([size], np.int64))
    layer.set_input(3, nb.const([stride], np.int64))
    if mode == "FILL":
        layer.set_input(4, nb.const(-1.0, np.float32))
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"x": ROW})["y"]
    np.testing.assert_array_equal(got, np.array(expect, np.float32))


def test_slice_wrap_from_zero_tiles_in_two_dims(nb: Any) -> None:
    """Tile's lowering: start 0, size = shape x repeats, stride 1, WRAP; NumPy's tile is the oracle."""
    x = nb.input("x", nb.trt.float32, (-1, 3))
    layer = nb.network.add_slice(x, (0, 0), (1, 1), (1, 1))
    layer.mode = nb.trt.SampleMode.WRAP
    shape = nb.network.add_shape(x).get_output(0)
    size = nb.network.add_elementwise(shape, nb.const([3, 2], np.int64), nb.trt.ElementWiseOperation.PROD)
    layer.set_input(2, size.get_output(0))
    nb.output(layer.get_output(0), "y")
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(nb.build_and_simulate({"x": value})["y"], np.tile(value, (3, 2)))


@pytest.mark.parametrize("mode, numpy_mode", [("FILL", "constant"), ("REFLECT", "reflect"), ("CLAMP", "edge"),
                                              ("WRAP", "wrap")])
def test_slice_modes_pad_one_axis_as_numpy_pads(nb: Any, mode: str, numpy_mode: str) -> None:
    """Pad's lowering on axis 1 only (axes input): start -before, size d + before + after."""
    x = nb.input("x", nb.trt.float32, (2, 3, 4))
    layer = nb.network.add_slice(x, (0,), (1,), (1,))
    layer.mode = getattr(nb.trt.SampleMode, mode)
    layer.set_input(1, nb.const([-2], np.int64))
    layer.set_input(2, nb.const([3 + 2 + 1], np.int64))
    layer.set_input(3, nb.const([1], np.int64))
    layer.set_input(5, nb.const([1], np.int64))
    if mode == "FILL":
        layer.set_input(4, nb.const(7.5, np.float32))
    nb.output(layer.get_output(0), "y")
    extra = {"constant_values": 7.5} if numpy_mode == "constant" else {}
    expect = np.pad(X234, [(0, 0), (2, 1), (0, 0)], mode=numpy_mode, **extra)
    np.testing.assert_array_equal(nb.build_and_simulate({"x": X234})["y"], expect)


def test_slice_negative_stride_in_two_dims(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (2, 3, 4))
    layer = nb.network.add_slice(x, (1, 2, 3), (2, 2, 2), (-1, -2, -2))
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"x": X234})["y"]
    expect = [[[X234[b, r, c] for c in (3, 1)] for r in (2, 0)] for b in (1, 0)]
    np.testing.assert_array_equal(got, expect)


def test_slice_with_axes_input_keeps_other_axes_whole(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (2, 3, 4))
    layer = nb.network.add_slice(x, (0,), (1,), (1,))
    layer.set_input(1, nb.const([1], np.int32))
    layer.set_input(2, nb.const([2], np.int32))
    layer.set_input(3, nb.const([2], np.int32))
    layer.set_input(5, nb.const([-1], np.int32))  # the last axis
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"x": X234})["y"]
    np.testing.assert_array_equal(got, X234[:, :, [1, 3]])


def test_slice_strict_bounds_rejects_out_of_range_coordinates(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (4,))
    layer = nb.network.add_slice(x, (2,), (3,), (1,))  # reads x[4]; the builder rejects it too
    nb.output(layer.get_output(0), "y")
    with pytest.raises(SimulationError, match="out of bounds"):
        simulate(nb.network, {"x": ROW})


# -- Padding ------------------------------------------------------------------------------------


def test_padding_pads_with_zeros_and_crops_negative_amounts(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (1, 2, 3, 4))
    layer = nb.network.add_padding_nd(x, (1, -1), (-1, 2))  # H: +1 before, -1 after; W: -1 before, +2 after
    nb.output(layer.get_output(0), "y")
    value = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4) + 1
    got = nb.build_and_simulate({"x": value})["y"]
    assert got.shape == (1, 2, 3, 5)
    expect = np.zeros((1, 2, 3, 5), np.float32)
    expect[:, :, 1:, :3] = value[:, :, :2, 1:]  # rows 0..1 of x land at 1..2; columns 1..3 at 0..2
    np.testing.assert_array_equal(got, expect)


# -- ReverseSequence ----------------------------------------------------------------------------


def test_reverse_sequence_reverses_each_prefix(nb: Any) -> None:
    x = nb.input("x", nb.trt.int32, (4, 3))  # [time, batch]
    lens = nb.input("lens", nb.trt.int32, (3,))
    layer = nb.network.add_reverse_sequence(x, lens)  # defaults: batch_axis 1, sequence_axis 0
    nb.output(layer.get_output(0), "y")
    value = np.array([[0, 10, 20], [1, 11, 21], [2, 12, 22], [3, 13, 23]], np.int32)
    got = nb.build_and_simulate({"x": value, "lens": np.array([4, 1, 2], np.int32)})["y"]
    np.testing.assert_array_equal(got, [[3, 10, 21], [2, 11, 20], [1, 12, 22], [0, 13, 23]])


def test_reverse_sequence_batch_first(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (2, 3, 2))  # [batch, time, feature]
    lens = nb.input("lens", nb.trt.int32, (2,))
    layer = nb.network.add_reverse_sequence(x, lens)
    layer.batch_axis, layer.sequence_axis = 0, 1
    nb.output(layer.get_output(0), "y")
    value = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    got = nb.build_and_simulate({"x": value, "lens": np.array([3, 2], np.int32)})["y"]
    expect = value.copy()
    expect[0] = value[0, ::-1]
    expect[1, :2] = value[1, 1::-1]
    np.testing.assert_array_equal(got, expect)


# -- Fill ---------------------------------------------------------------------------------------


def test_fill_linspace_2d_with_dynamic_alpha_and_beta(nb: Any) -> None:
    layer = nb.network.add_fill((3, 4), nb.trt.FillOperation.LINSPACE, nb.trt.float32)
    layer.set_input(1, nb.const(1.0, np.float32))
    layer.set_input(2, nb.const([100.0, 10.0], np.float32))
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({})["y"]
    # TensorRT's example: element [i, j] is alpha + beta[0] * i + beta[1] * j
    np.testing.assert_array_equal(got, [[1, 11, 21, 31], [101, 111, 121, 131], [201, 211, 221, 231]])


def test_fill_linspace_static_int64(nb: Any) -> None:
    layer = nb.network.add_fill((5,), nb.trt.FillOperation.LINSPACE, nb.trt.int64)
    layer.alpha, layer.beta = 7, -3
    assert layer.is_alpha_beta_int64()
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({})["y"]
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, [7, 4, 1, -2, -5])


def test_fill_with_dynamic_shape_input(nb: Any) -> None:
    layer = nb.network.add_fill((1,), nb.trt.FillOperation.LINSPACE, nb.trt.int32)
    layer.set_input(0, nb.const([2, 3], np.int64))
    layer.set_input(1, nb.const(5, np.int32))
    layer.set_input(2, nb.const([3, -1], np.int32))
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({})["y"]
    np.testing.assert_array_equal(got, [[5, 4, 3], [8, 7, 6]])

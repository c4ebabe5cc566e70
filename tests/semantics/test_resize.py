"""Resize's formulas against values worked out by hand: Keys' kernel, the roundings, both coordinate maps."""

from __future__ import annotations

import numpy as np
import pytest

from loopc.semantics.resize import (NEAREST, TRT_ROUNDING, keys, keys_taps, onnx_coordinates, rounded,
                                    trt_coordinates)


def test_keys_kernel_is_catmull_rom_at_a_minus_half() -> None:
    """a = -0.5 is Catmull-Rom: w(0) = 1, w(0.5) = 9/16, w(1) = 0, w(1.5) = -1/16, w(2) = 0."""
    d = np.array([0.0, 0.5, -0.5, 1.0, 1.5, -1.5, 2.0, 3.0])
    np.testing.assert_allclose(keys(d, -0.5), [1, 0.5625, 0.5625, 0, -0.0625, -0.0625, 0, 0], atol=1e-15)


def test_keys_taps_sum_to_one() -> None:
    t = np.linspace(0, 0.95, 20)
    np.testing.assert_allclose(keys_taps(t, -0.75).sum(axis=0), 1.0, atol=1e-12)
    np.testing.assert_allclose(keys_taps(np.array([0.5]), -0.5)[:, 0], [-0.0625, 0.5625, 0.5625, -0.0625])


@pytest.mark.parametrize(("mode", "want"), [("round_prefer_floor", [1, 1, 2, 2, 3]), ("round_prefer_ceil", [1, 2, 2, 3, 3]),
                                            ("floor", [1, 1, 2, 2, 2]), ("ceil", [1, 2, 2, 3, 3])])
def test_onnx_nearest_modes(mode: str, want: list[int]) -> None:
    np.testing.assert_array_equal(rounded(np.array([1.0, 1.5, 2.0, 2.5, 2.75]), NEAREST[mode]), want)


def test_trt_roundings_break_ties_as_named() -> None:
    ties = np.array([0.5, 1.5, -0.5])
    np.testing.assert_array_equal(rounded(ties, TRT_ROUNDING["HALF_UP"]), [1, 2, 0])
    np.testing.assert_array_equal(rounded(ties, TRT_ROUNDING["HALF_DOWN"]), [0, 1, -1])


def test_coordinate_maps() -> None:
    """4 → 8: half_pixel (x + 0.5) / 2 - 0.5, align_corners x · 3/7, asymmetric x / 2; TensorRT's by the lengths."""
    x = np.arange(8.0)
    np.testing.assert_allclose(onnx_coordinates("half_pixel", 4, 8, 2.0, 8), (x + 0.5) / 2 - 0.5)
    np.testing.assert_allclose(onnx_coordinates("align_corners", 4, 8, 2.0, 8), x * 3 / 7)
    np.testing.assert_allclose(onnx_coordinates("asymmetric", 4, 8, 2.0, 8), x / 2)
    np.testing.assert_allclose(onnx_coordinates("pytorch_half_pixel", 4, 1, 0.25, 1), [-0.5])
    np.testing.assert_allclose(trt_coordinates("HALF_PIXEL", "FORMULA", 4, 8), (x + 0.5) / 2 - 0.5)
    np.testing.assert_allclose(trt_coordinates("ALIGN_CORNERS", "FORMULA", 4, 8), x * 3 / 7)
    np.testing.assert_allclose(trt_coordinates("HALF_PIXEL", "UPPER", 4, 1), [0.0])

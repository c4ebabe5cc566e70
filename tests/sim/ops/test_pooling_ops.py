"""The POOLING kernel against IPoolingLayer's documented semantics: literal cases worked by hand, and
random ones against a naive reference that walks the output positions one by one."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

ROW = np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 1, 4)


def _pool(nb: Any, x: np.ndarray, kind: str, window: tuple[int, ...], stride: tuple[int, ...] | None = None,
          pre: tuple[int, ...] | None = None, post: tuple[int, ...] | None = None, mode: str | None = None,
          exclude: bool = True, blend: float | None = None) -> np.ndarray:
    """One pooling layer over input ``x``, built with the real builder, then simulated."""
    trt = nb.trt
    layer = nb.network.add_pooling_nd(nb.input("x", trt.float32 if x.dtype == np.float32 else trt.float16, x.shape),
                                      getattr(trt.PoolingType, kind), window)
    if stride is not None:
        layer.stride_nd = stride
    if pre is not None:
        layer.pre_padding = pre
    if post is not None:
        layer.post_padding = post
    if mode is not None:
        layer.padding_mode = getattr(trt.PaddingMode, mode)
    layer.average_count_excludes_padding = exclude
    if blend is not None:
        layer.blend_factor = blend
    nb.output(layer.get_output(0), "y")
    return nb.build_and_simulate({"x": x})["y"]


# -- worked by hand -----------------------------------------------------------------------------


def test_max_of_2x2_windows_with_stride_2(nb: Any) -> None:
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    np.testing.assert_array_equal(_pool(nb, x, "MAX", (2, 2), (2, 2)), [[[[5, 7], [13, 15]]]])


@pytest.mark.parametrize("exclude, want", [
    (True, [[1, 1.5, 2], [2, 2.5, 3], [3, 3.5, 4]]),  # each sum over the input cells the window covers
    (False, [[0.25, 0.75, 0.5], [1, 2.5, 1.5], [0.75, 1.75, 1]]),  # each sum over 4
])
def test_average_counts_padding_or_not(nb: Any, exclude: bool, want: list[list[float]]) -> None:
    x = np.array([[[[1, 2], [3, 4]]]], np.float32)
    got = _pool(nb, x, "AVERAGE", (2, 2), pre=(1, 1), post=(1, 1), exclude=exclude)
    np.testing.assert_allclose(got[0, 0], want, rtol=1e-6)


def test_padding_never_wins_a_max(nb: Any) -> None:
    x = -np.array([[[[1, 2], [3, 4]]]], np.float32)
    got = _pool(nb, x, "MAX", (2, 2), pre=(1, 1), post=(1, 1))
    np.testing.assert_array_equal(got[0, 0], [[-1, -1, -2], [-1, -1, -2], [-3, -3, -4]])


@pytest.mark.parametrize("mode, kind, want", [
    ("EXPLICIT_ROUND_DOWN", "MAX", [2, 4]),  # floor((5 - 2) / 2) + 1 = 2 windows
    ("EXPLICIT_ROUND_UP", "MAX", [2, 4, 5]),  # ceil((5 - 2) / 2) + 1 = 3: the last covers 5 only
    ("EXPLICIT_ROUND_UP", "AVERAGE", [1.5, 3.5, 5]),
])
def test_rounding_up_adds_a_window_past_the_end(nb: Any, mode: str, kind: str, want: list[float]) -> None:
    x = np.array([1, 2, 3, 4, 5], np.float32).reshape(1, 1, 1, 5)
    got = _pool(nb, x, kind, (1, 2), (1, 2), mode=mode)
    np.testing.assert_allclose(got.ravel(), want)


def test_a_window_past_the_padding_averages_over_the_padded_input(nb: Any) -> None:
    # padded input [0, 1, 2, 3, 4, 5]; windows of 3, stride 2, rounded up: [0 1 2] [2 3 4] [4 5 (past)]
    x = np.array([1, 2, 3, 4, 5], np.float32).reshape(1, 1, 1, 5)
    got = _pool(nb, x, "AVERAGE", (1, 3), (1, 2), pre=(0, 1), post=(0, 0), mode="EXPLICIT_ROUND_UP", exclude=False)
    np.testing.assert_allclose(got.ravel(), [3 / 3, 9 / 3, 9 / 2])


@pytest.mark.parametrize("mode, kind, want", [
    ("SAME_UPPER", "MAX", [2, 3, 4, 4]),  # P = 3 + 2 - 4 = 1, at the end
    ("SAME_UPPER", "AVERAGE", [1.5, 2.5, 3.5, 4]),
    ("SAME_LOWER", "MAX", [1, 2, 3, 4]),  # the one pad at the start
    ("SAME_LOWER", "AVERAGE", [1, 1.5, 2.5, 3.5]),
])
def test_same_padding_modes(nb: Any, mode: str, kind: str, want: list[float]) -> None:
    got = _pool(nb, ROW, kind, (1, 2), mode=mode, pre=(0, 5), post=(0, 5))  # explicit padding is ignored
    np.testing.assert_allclose(got.ravel(), want)


def test_same_upper_with_stride_2_outputs_ceil_of_half(nb: Any) -> None:
    # I = 5, S = 2, F = 3: O = 3, P = 2 * 2 + 3 - 5 = 2, one pad each side: [p 1 2] [2 3 4] [4 5 p]
    x = np.array([1, 2, 3, 4, 5], np.float32).reshape(1, 1, 1, 5)
    got = _pool(nb, x, "AVERAGE", (1, 3), (1, 2), mode="SAME_UPPER", exclude=False)
    np.testing.assert_allclose(got.ravel(), [3 / 3, 9 / 3, 9 / 3])


def test_max_average_blend(nb: Any) -> None:
    got = _pool(nb, ROW, "MAX_AVERAGE_BLEND", (1, 4), blend=0.25)
    np.testing.assert_allclose(got.ravel(), [0.75 * 4 + 0.25 * 2.5])


def test_half_inputs_pool_in_half(nb: Any) -> None:
    x = np.array([[[[1, 2], [3, 4]]]], np.float16)
    got = _pool(nb, x, "AVERAGE", (2, 2))
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got.ravel(), [2.5])


# -- against a naive reference ------------------------------------------------------------------


def _naive(x: np.ndarray, kind: str, window: tuple[int, ...], stride: tuple[int, ...], pre: tuple[int, ...],
           post: tuple[int, ...], mode: str, exclude: bool, blend: float) -> np.ndarray:
    """IPoolingLayer, one output at a time from its documented formulas."""
    k = len(window)
    spatial = x.shape[-k:]
    outs, begins, ends = [], [], []
    for i, f, s, b, a in zip(spatial, window, stride, pre, post):
        if mode.startswith("SAME"):
            p = math.floor((i - 1) / s) * s + f - i
            b = p // 2 if mode == "SAME_UPPER" else p - p // 2
            a = p - b
            o = math.ceil(i / s)
        else:
            rounding = math.floor if mode == "EXPLICIT_ROUND_DOWN" else math.ceil
            o = rounding((i + b + a - f) / s) + 1
        outs.append(o)
        begins.append(b)
        ends.append(a)
    y = np.zeros(x.shape[:-k] + tuple(outs), np.float64)
    for lead in itertools.product(*(range(d) for d in x.shape[:-k])):
        for pos in itertools.product(*(range(o) for o in outs)):
            values, padded_cells = [], 0
            for off in itertools.product(*(range(f) for f in window)):
                at = [p * s - b + t for p, s, b, t in zip(pos, stride, begins, off)]
                if all(0 <= c < n for c, n in zip(at, spatial)):
                    values.append(float(x[lead + tuple(at)]))
                elif all(-b <= c < n + a for c, n, b, a in zip(at, spatial, begins, ends)):
                    padded_cells += 1
            biggest = max(values, default=-np.inf)
            mean = sum(values) / (len(values) + (0 if exclude else padded_cells))
            blended = (1 - blend) * biggest + blend * mean
            y[lead + pos] = {"MAX": biggest, "AVERAGE": mean, "MAX_AVERAGE_BLEND": blended}[kind]
    return y


CASES = [
    # kind, shape, window, stride, pre, post, mode, exclude
    ("MAX", (2, 3, 7, 6), (3, 2), (2, 1), (1, 0), (2, 1), "EXPLICIT_ROUND_DOWN", True),
    ("AVERAGE", (2, 3, 7, 6), (3, 2), (2, 3), (1, 1), (0, 1), "EXPLICIT_ROUND_UP", True),
    ("AVERAGE", (2, 3, 7, 6), (3, 2), (2, 3), (1, 1), (0, 1), "EXPLICIT_ROUND_UP", False),
    ("AVERAGE", (1, 2, 9, 5), (4, 3), (3, 2), (0, 0), (0, 0), "SAME_LOWER", False),
    ("MAX", (1, 2, 9, 5), (4, 3), (3, 2), (0, 0), (0, 0), "SAME_UPPER", True),
    ("MAX_AVERAGE_BLEND", (1, 2, 6, 6), (2, 3), (2, 2), (1, 1), (1, 1), "EXPLICIT_ROUND_DOWN", False),
    ("MAX", (1, 2, 5, 6, 4), (2, 3, 2), (1, 2, 2), (1, 0, 1), (0, 1, 1), "EXPLICIT_ROUND_UP", True),
    ("AVERAGE", (1, 2, 5, 6, 4), (3, 2, 2), (2, 1, 3), (1, 1, 0), (1, 0, 1), "EXPLICIT_ROUND_DOWN", True),
    ("AVERAGE", (1, 1, 5, 7, 6), (2, 4, 3), (2, 3, 2), (0, 0, 0), (0, 0, 0), "SAME_UPPER", False),
]


@pytest.mark.parametrize("kind, shape, window, stride, pre, post, mode, exclude", CASES)
def test_against_a_naive_reference(nb: Any, kind: str, shape: tuple[int, ...], window: tuple[int, ...],
                                   stride: tuple[int, ...], pre: tuple[int, ...], post: tuple[int, ...], mode: str,
                                   exclude: bool) -> None:
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    got = _pool(nb, x, kind, window, stride, pre, post, mode, exclude, blend=0.3)
    want = _naive(x, kind, window, stride, pre, post, mode, exclude, 0.3)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)

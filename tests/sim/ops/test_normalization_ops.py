"""The LRN kernel against TensorRT's documented semantics: its operator reference's worked example,
and a naive loop over channels written from the formula."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest


def _lrn(nb: Any, data: np.ndarray, window: int, alpha: float, beta: float, k: float) -> np.ndarray:
    x = nb.input("x", nb.trt.float32, data.shape)
    nb.output(nb.network.add_lrn(x, window, alpha, beta, k).get_output(0), "y")
    return nb.build_and_simulate({"x": data})["y"]


def test_lrn_reproduces_tensorrts_worked_example(nb: Any) -> None:
    """TensorRT's operator reference: window 3, alpha 1, beta 1, k 0.1 on channels holding 0..4."""
    data = np.broadcast_to(np.arange(5, dtype=np.float32)[None, :, None, None], (1, 5, 2, 2)).copy()
    got = _lrn(nb, data, 3, 1.0, 1.0, 0.1)
    documented = [0.0, 0.56603765, 0.4195804, 0.3071672, 0.47430828]
    np.testing.assert_allclose(got, np.broadcast_to(np.array(documented)[None, :, None, None], data.shape),
                               rtol=1e-6)


def test_lrn_by_hand_at_the_edges(nb: Any) -> None:
    """Channel values 1, 2, 3 at one pixel, window 3, alpha 3 (so alpha / window = 1), beta 0.5, k 1:
    y_c = x_c / sqrt(1 + sum of the squares of c's neighbours and itself)."""
    data = np.array([1.0, 2.0, 3.0], np.float32).reshape(1, 3, 1, 1)
    got = _lrn(nb, data, 3, 3.0, 0.5, 1.0).ravel()
    want = [1 / np.sqrt(1 + 1 + 4), 2 / np.sqrt(1 + 1 + 4 + 9), 3 / np.sqrt(1 + 4 + 9)]
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("window", [1, 5, 7])
def test_lrn_against_a_loop_over_channels(nb: Any, window: int) -> None:
    rng = np.random.default_rng(window)
    data = rng.standard_normal((2, 6, 3, 4)).astype(np.float32) * 3
    alpha, beta, k = 0.7, 0.75, 2.0
    got = _lrn(nb, data, window, alpha, beta, k)
    x = data.astype(np.float64)
    want = np.empty_like(x)
    half = (window - 1) // 2
    for c in range(x.shape[1]):
        lo, hi = max(0, c - half), min(x.shape[1] - 1, c + half)
        square_sum = (x[:, lo:hi + 1] ** 2).sum(axis=1)
        want[:, c] = x[:, c] / (k + alpha / window * square_sum) ** beta
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_lrn_of_rank_5_runs_over_the_third_axis_from_last(nb: Any) -> None:
    """The channel axis is D_{n-2}: in a rank-5 input that is axis 2, not axis 1."""
    data = np.zeros((1, 2, 3, 1, 1), np.float32)
    data[0, 0, :, 0, 0] = [1.0, 2.0, 3.0]
    data[0, 1, :, 0, 0] = [4.0, 0.0, 0.0]
    got = _lrn(nb, data, 3, 3.0, 1.0, 1.0)
    want = np.zeros_like(data)
    want[0, 0, :, 0, 0] = [1 / (1 + 1 + 4), 2 / (1 + 1 + 4 + 9), 3 / (1 + 4 + 9)]
    want[0, 1, :, 0, 0] = [4 / (1 + 16), 0.0, 0.0]
    np.testing.assert_allclose(got, want, rtol=1e-6)

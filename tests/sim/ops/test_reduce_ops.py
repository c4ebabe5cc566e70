"""Reduce, SoftMax, Normalization, Cumulative and TopK kernels against TensorRT's documented semantics."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from loopc.errors import SimulationError
from loopc.sim import simulate




# -- Reduce -------------------------------------------------------------------------------------

X234 = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7 - 1


@pytest.mark.parametrize(
    "op, expect",
    [
        ("SUM", lambda x: x[0].sum(axis=1) + x[1].sum(axis=1)),
        ("PROD", lambda x: np.prod(x[0], axis=1) * np.prod(x[1], axis=1)),
        ("MAX", lambda x: np.maximum(x[0].max(axis=1), x[1].max(axis=1))),
        ("MIN", lambda x: np.minimum(x[0].min(axis=1), x[1].min(axis=1))),
        ("AVG", lambda x: (x[0].sum(axis=1) + x[1].sum(axis=1)) / 8),
    ],
)
def test_reduce_two_axes_without_keep_dims(nb: Any, op: str, expect: Any) -> None:
    x = nb.input("x", nb.trt.float32, (2, 3, 4))
    layer = nb.network.add_reduce(x, getattr(nb.trt.ReduceOperation, op), 0b101, False)
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"x": X234})["y"]
    assert got.shape == (3,)
    np.testing.assert_allclose(got, expect(X234.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_reduce_keep_dims_keeps_unit_axes(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (2, 3, 4))
    layer = nb.network.add_reduce(x, nb.trt.ReduceOperation.MAX, 0b110, True)
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"x": X234})["y"]
    assert got.shape == (2, 1, 1)
    np.testing.assert_array_equal(got.ravel(), [X234[0, 2, 3], X234[1, 2, 3]])


def test_reduce_integer_avg_truncates_toward_zero(nb: Any) -> None:
    x = nb.input("x", nb.trt.int32, (4, 2))
    layer = nb.network.add_reduce(x, nb.trt.ReduceOperation.AVG, 0b10, False)
    nb.output(layer.get_output(0), "y")
    data = np.array([[-7, 0], [7, 0], [5, 6], [-1, 0]], dtype=np.int32)
    got = nb.build_and_simulate({"x": data})["y"]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, [-3, 3, 5, 0])


def test_reduce_integer_sum_and_min(nb: Any) -> None:
    x = nb.input("x", nb.trt.int64, (2, 3))
    total = nb.network.add_reduce(x, nb.trt.ReduceOperation.SUM, 0b01, False)
    least = nb.network.add_reduce(x, nb.trt.ReduceOperation.MIN, 0b11, True)
    nb.output(total.get_output(0), "sum")
    nb.output(least.get_output(0), "min")
    data = np.array([[1, -5, 3], [10, 20, -30]], dtype=np.int64)
    got = nb.build_and_simulate({"x": data})
    np.testing.assert_array_equal(got["sum"], [11, 15, -27])
    np.testing.assert_array_equal(got["min"], [[-30]])


@pytest.mark.parametrize(
    "dtype, op, want",
    [
        (np.float32, "SUM", 0.0),
        (np.float32, "PROD", 1.0),
        (np.float32, "MAX", -np.inf),
        (np.float32, "MIN", np.inf),
        (np.float32, "AVG", np.nan),
        (np.int32, "MAX", np.iinfo(np.int32).min),
        (np.int32, "MIN", np.iinfo(np.int32).max),
        (np.int32, "AVG", 0),
    ],
)
def test_reduce_over_empty_volume_gives_documented_identity(nb: Any, dtype: Any, op: str, want: float) -> None:
    trt_type = nb.trt.float32 if dtype == np.float32 else nb.trt.int32
    x = nb.input("x", trt_type, (2, -1))
    layer = nb.network.add_reduce(x, getattr(nb.trt.ReduceOperation, op), 0b10, False)
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"x": np.zeros((2, 0), dtype=dtype)})["y"]
    np.testing.assert_array_equal(got, np.full(2, want, dtype=dtype))


# -- SoftMax ------------------------------------------------------------------------------------


def test_softmax_by_hand(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (1, 3))
    layer = nb.network.add_softmax(x)
    layer.axes = 1 << 1
    nb.output(layer.get_output(0), "y")
    # exp(log 1), exp(log 2), exp(log 3) normalise to 1/6, 2/6, 3/6
    data = np.log(np.array([[1.0, 2.0, 3.0]], dtype=np.float32)) + np.float32(50)
    got = nb.build_and_simulate({"x": data})["y"]
    np.testing.assert_allclose(got, [[1 / 6, 2 / 6, 3 / 6]], rtol=1e-5)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_softmax_along_each_axis(nb: Any, axis: int) -> None:
    x = nb.input("x", nb.trt.float32, (2, 3, 4))
    layer = nb.network.add_softmax(x)
    layer.axes = 1 << axis
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"x": X234})["y"]
    e = np.exp(X234.astype(np.float64))
    np.testing.assert_allclose(got, e / e.sum(axis=axis, keepdims=True), rtol=1e-5)


# -- Normalization ------------------------------------------------------------------------------


def _stats_normalize(block: np.ndarray, eps: float) -> np.ndarray:
    mean = block.mean()
    var = ((block - mean) ** 2).mean()
    return (block - mean) / np.sqrt(var + eps)


def test_layer_normalization_by_hand(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (1, 4))
    one, zero = nb.const(np.ones((1, 1), np.float32)), nb.const(np.zeros((1, 1), np.float32))
    layer = nb.network.add_normalization(x, one, zero, 1 << 1)
    layer.epsilon = 0.0
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"x": np.array([[1, 2, 3, 4]], np.float32)})["y"]
    # mean 2.5, variance 1.25
    np.testing.assert_allclose(got, [[-1.5, -0.5, 0.5, 1.5]] / np.sqrt(1.25), rtol=1e-5)


def test_layer_normalization_over_last_axis_with_scale_and_bias(nb: Any) -> None:
    scale = np.array([1.0, -2.0, 0.5, 3.0], np.float32).reshape(1, 1, 4)
    bias = np.array([0.0, 1.0, -1.0, 2.0], np.float32).reshape(1, 1, 4)
    x = nb.input("x", nb.trt.float32, (2, 3, 4))
    layer = nb.network.add_normalization_v2(x, nb.const(scale), nb.const(bias), 1 << 2)
    layer.epsilon = 1e-3
    nb.output(layer.get_output(0), "y")
    data = X234 * X234
    got = nb.build_and_simulate({"x": data})["y"]
    want = np.empty_like(data, dtype=np.float64)
    for i in range(2):
        for j in range(3):
            want[i, j] = _stats_normalize(data[i, j].astype(np.float64), 1e-3) * scale[0, 0] + bias[0, 0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("v2", [False, True], ids=["per-group-scale", "v2-per-channel-scale"])
def test_group_normalization(nb: Any, v2: bool) -> None:
    n, c, w, groups, eps = 2, 4, 3, 2, 1e-2
    if v2:
        scale = np.array([1.0, 2.0, -1.0, 0.5], np.float32).reshape(1, c, 1)
        bias = np.array([0.0, 0.5, 1.0, -1.0], np.float32).reshape(1, c, 1)
    else:
        scale = np.array([2.0, -1.0], np.float32).reshape(1, groups, 1)
        bias = np.array([0.5, 1.0], np.float32).reshape(1, groups, 1)
    x = nb.input("x", nb.trt.float32, (n, c, w))
    add = nb.network.add_normalization_v2 if v2 else nb.network.add_normalization
    layer = add(x, nb.const(scale), nb.const(bias), 1 << 2)  # every axis after the channel
    layer.num_groups = groups
    layer.epsilon = eps
    nb.output(layer.get_output(0), "y")
    data = (np.arange(n * c * w, dtype=np.float32).reshape(n, c, w) % 5) * np.float32(0.7)
    got = nb.build_and_simulate({"x": data})["y"]
    size = c // groups
    want = np.empty((n, c, w))
    for i in range(n):
        for g in range(groups):
            block = slice(g * size, (g + 1) * size)
            y = _stats_normalize(data[i, block].astype(np.float64), eps)
            if v2:
                want[i, block] = y * scale[0, block] + bias[0, block]
            else:
                want[i, block] = y * scale[0, g] + bias[0, g]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_instance_normalization(nb: Any) -> None:
    scale = np.array([1.0, 2.0, 3.0], np.float32).reshape(1, 3, 1, 1)
    bias = np.array([-1.0, 0.0, 1.0], np.float32).reshape(1, 3, 1, 1)
    x = nb.input("x", nb.trt.float32, (2, 3, 2, 2))
    layer = nb.network.add_normalization(x, nb.const(scale), nb.const(bias), 0b1100)
    nb.output(layer.get_output(0), "y")
    data = np.sin(np.arange(24, dtype=np.float32)).reshape(2, 3, 2, 2)
    got = nb.build_and_simulate({"x": data})["y"]
    want = np.empty((2, 3, 2, 2))
    for i in range(2):
        for ch in range(3):
            want[i, ch] = _stats_normalize(data[i, ch].astype(np.float64), 1e-5) * scale[0, ch] + bias[0, ch]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# -- Cumulative ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "exclusive, reverse, want",
    [
        (False, False, [1, 3, 6, 10]),  # 0..j
        (False, True, [10, 9, 7, 4]),  # j..n-1
        (True, False, [0, 1, 3, 6]),  # 0..j-1
        (True, True, [9, 7, 4, 0]),  # j+1..n-1
    ],
)
def test_cumulative_sum_variants(nb: Any, exclusive: bool, reverse: bool, want: list[int]) -> None:
    x = nb.input("x", nb.trt.float32, (2, 4))
    layer = nb.network.add_cumulative(x, nb.const(1, np.int32), nb.trt.CumulativeOperation.SUM, exclusive, reverse)
    nb.output(layer.get_output(0), "y")
    data = np.array([[1, 2, 3, 4], [10, 20, 30, 40]], np.float32)
    got = nb.build_and_simulate({"x": data})["y"]
    np.testing.assert_array_equal(got, [want, [10 * v for v in want]])


def test_cumulative_integer_negative_axis(nb: Any) -> None:
    x = nb.input("x", nb.trt.int32, (3, 2))
    layer = nb.network.add_cumulative(
        x, nb.const(-2, np.int64), nb.trt.CumulativeOperation.SUM, True, True
    )
    nb.output(layer.get_output(0), "y")
    data = np.array([[1, 2], [3, 4], [5, 6]], np.int32)
    got = nb.build_and_simulate({"x": data})["y"]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, [[8, 10], [5, 6], [0, 0]])


# -- TopK ---------------------------------------------------------------------------------------


def test_topk_min_with_dynamic_k_breaks_ties_by_lower_index(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (2, 5))
    k = nb.input("k", nb.trt.int32, ())
    layer = nb.network.add_topk(x, nb.trt.TopKOperation.MIN, 1, 1 << 1)
    layer.set_input(1, k)
    nb.output(layer.get_output(0), "values")
    nb.output(layer.get_output(1), "indices")
    data = np.array([[3, 1, 2, 1, 5], [0, 0, -1, 4, 0]], np.float32)
    got = nb.build_and_simulate({"x": data, "k": np.array(3, np.int32)})
    np.testing.assert_array_equal(got["values"], [[1, 1, 2], [-1, 0, 0]])
    np.testing.assert_array_equal(got["indices"], [[1, 3, 2], [2, 0, 1]])
    assert got["indices"].dtype == np.int32


def test_topk_max_on_first_axis_with_int64_indices(nb: Any) -> None:
    x = nb.input("x", nb.trt.int32, (4, 2))
    layer = nb.network.add_topk(x, nb.trt.TopKOperation.MAX, 2, 1 << 0, nb.trt.int64)
    nb.output(layer.get_output(0), "values")
    nb.output(layer.get_output(1), "indices")
    data = np.array([[3, 7], [5, 7], [5, 1], [2, 9]], np.int32)
    got = nb.build_and_simulate({"x": data})
    np.testing.assert_array_equal(got["values"], [[5, 9], [5, 7]])
    np.testing.assert_array_equal(got["indices"], [[1, 3], [2, 0]])
    assert got["indices"].dtype == np.int64


def test_topk_dynamic_k_larger_than_axis_is_an_error(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (1, 3))
    k = nb.input("k", nb.trt.int32, ())
    layer = nb.network.add_topk(x, nb.trt.TopKOperation.MAX, 1, 1 << 1)
    layer.set_input(1, k)
    nb.output(layer.get_output(0), "values")
    nb.output(layer.get_output(1), "indices")
    data = np.zeros((1, 3), np.float32)
    nb.serialize({"x": data, "k": np.array(2, np.int32)})
    with pytest.raises(SimulationError, match="k = 4"):
        simulate(nb.network, {"x": data, "k": np.array(4, np.int32)})

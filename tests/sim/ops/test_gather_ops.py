"""Gather, Scatter, OneHot and NonZero kernels against TensorRT's documented semantics."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from loopc.errors import BackendError, SimulationError
from loopc.sim import simulate




DATA = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


# -- Gather -------------------------------------------------------------------------------------


def test_gather_default_with_negative_indices(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (2, 3, 4))
    idx = nb.input("i", nb.trt.int32, (2, 2))
    nb.output(nb.network.add_gather(x, idx, 2).get_output(0), "y")
    indices = np.array([[0, -1], [-4, 2]], np.int32)  # -1 reads 3, -4 reads 0
    got = nb.build_and_simulate({"x": DATA, "i": indices})["y"]
    assert got.shape == (2, 3, 2, 2)
    np.testing.assert_array_equal(got, DATA[:, :, [[0, 3], [0, 2]]])


def test_gather_default_one_elementwise_dim(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (2, 3, 4))
    idx = nb.input("i", nb.trt.int32, (2, 2))
    layer = nb.network.add_gather(x, idx, 1)
    layer.num_elementwise_dims = 1
    nb.output(layer.get_output(0), "y")
    indices = np.array([[2, 0], [1, -1]], np.int32)
    got = nb.build_and_simulate({"x": DATA, "i": indices})["y"]
    # output[b, j, :] = data[b, indices[b, j], :]: entry b of data pairs with entry b of indices
    expect = np.stack([DATA[0][[2, 0]], DATA[1][[1, 2]]])
    np.testing.assert_array_equal(got, expect)


def test_gather_element_replaces_the_axis_subscript(nb: Any) -> None:
    x = nb.input("x", nb.trt.int32, (2, 3))
    idx = nb.input("i", nb.trt.int32, (2, 3))
    layer = nb.network.add_gather_v2(x, idx, nb.trt.GatherMode.ELEMENT)
    layer.axis = 0
    nb.output(layer.get_output(0), "y")
    data = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    indices = np.array([[1, 0, -1], [0, 0, 1]], np.int32)
    got = nb.build_and_simulate({"x": data, "i": indices})["y"]
    # output[j0, j1] = data[indices[j0, j1], j1]
    np.testing.assert_array_equal(got, [[4, 2, 6], [1, 2, 6]])


def test_gather_nd_with_batch_dims(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (2, 3, 4))
    idx = nb.input("i", nb.trt.int32, (2, 2, 2))
    layer = nb.network.add_gather_v2(x, idx, nb.trt.GatherMode.ND)
    layer.num_elementwise_dims = 1
    nb.output(layer.get_output(0), "y")
    indices = np.array([[[0, 1], [2, 3]], [[1, -1], [0, 0]]], np.int32)
    got = nb.build_and_simulate({"x": DATA, "i": indices})["y"]
    # output[b, n] = data[b, indices[b, n, 0], indices[b, n, 1]]
    expect = [[DATA[0, 0, 1], DATA[0, 2, 3]], [DATA[1, 1, 3], DATA[1, 0, 0]]]
    np.testing.assert_array_equal(got, expect)


def test_gather_nd_slices(nb: Any) -> None:
    x = nb.input("x", nb.trt.float32, (2, 3, 4))
    idx = nb.input("i", nb.trt.int32, (3, 1))
    nb.output(nb.network.add_gather_v2(x, idx, nb.trt.GatherMode.ND).get_output(0), "y")
    got = nb.build_and_simulate({"x": DATA, "i": np.array([[1], [0], [-1]], np.int32)})["y"]
    np.testing.assert_array_equal(got, DATA[[1, 0, 1]])


@pytest.mark.parametrize("bad", [4, -5])
def test_gather_out_of_range_index_is_a_simulation_error(nb: Any, bad: int) -> None:
    x = nb.input("x", nb.trt.float32, (4,))
    idx = nb.input("i", nb.trt.int32, (2,))
    nb.output(nb.network.add_gather(x, idx, 0).get_output(0), "y")
    inputs = {"x": np.arange(4, dtype=np.float32), "i": np.array([0, bad], np.int32)}
    nb.serialize(inputs)
    with pytest.raises(SimulationError, match="out of range"):
        simulate(nb.network, inputs)


# -- Scatter ------------------------------------------------------------------------------------


def test_scatter_element_on_axis_1(nb: Any) -> None:
    data = nb.input("d", nb.trt.float32, (2, 4))
    idx = nb.input("i", nb.trt.int32, (2, 2))
    upd = nb.input("u", nb.trt.float32, (2, 2))
    layer = nb.network.add_scatter(data, idx, upd, nb.trt.ScatterMode.ELEMENT)
    layer.axis = 1
    nb.output(layer.get_output(0), "y")
    indices = np.array([[3, 0], [1, 2]], np.int32)
    updates = np.array([[-1, -2], [-3, -4]], np.float32)
    got = nb.build_and_simulate({"d": np.zeros((2, 4), np.float32), "i": indices, "u": updates})["y"]
    # output[j0, indices[j0, j1]] = updates[j0, j1]
    np.testing.assert_array_equal(got, [[-2, 0, 0, -1], [0, -3, -4, 0]])


def test_scatter_nd_rows_and_elements(nb: Any) -> None:
    data = nb.input("d", nb.trt.int32, (3, 3))
    rows = nb.network.add_scatter(
        data, nb.const([[2], [0]], np.int32), nb.const([[7, 8, 9], [1, 2, 3]], np.int32), nb.trt.ScatterMode.ND
    ).get_output(0)
    elems = nb.network.add_scatter(
        rows, nb.const([[1, 1], [2, 0]], np.int32), nb.const([50, 60], np.int32), nb.trt.ScatterMode.ND
    ).get_output(0)
    nb.output(elems, "y")
    got = nb.build_and_simulate({"d": np.full((3, 3), -1, np.int32)})["y"]
    np.testing.assert_array_equal(got, [[1, 2, 3], [-1, 50, -1], [60, 8, 9]])


def test_scatter_duplicate_writes_are_poisoned(nb: Any) -> None:
    data = nb.input("d", nb.trt.float32, (3,))
    idx = nb.input("i", nb.trt.int32, (2, 1))
    upd = nb.input("u", nb.trt.float32, (2,))
    nb.output(nb.network.add_scatter(data, idx, upd, nb.trt.ScatterMode.ND).get_output(0), "y")
    inputs = {"d": np.zeros(3, np.float32), "i": np.array([[1], [1]], np.int32), "u": np.array([5, 6], np.float32)}
    got = nb.build_and_simulate(inputs)["y"]  # TensorRT leaves an element written twice undefined
    assert got[0] == 0 and got[2] == 0 and np.isnan(got[1])


# -- OneHot -------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_one_hot_axes_and_negative_indices(nb: Any, axis: int) -> None:
    idx = nb.input("i", nb.trt.int32, (2, 3))
    values = nb.const([0.5, 9.0], np.float32)
    depth = nb.const(4, np.int32)
    nb.output(nb.network.add_one_hot(idx, values, depth, axis).get_output(0), "y")
    indices = np.array([[0, 3, -1], [-4, 7, 2]], np.int32)  # -1 -> 3, -4 -> 0, 7 is out of range
    got = nb.build_and_simulate({"i": indices})["y"]
    where = axis % 3
    expect = np.full((2, 3, 4), 0.5, np.float32)  # one-hot axis last, moved below
    for i, j in itertools.product(range(2), range(3)):
        k = int(indices[i, j])
        k = k + 4 if k < 0 else k
        if 0 <= k < 4:
            expect[i, j, k] = 9.0
    np.testing.assert_array_equal(got, np.moveaxis(expect, -1, where))


# -- NonZero ------------------------------------------------------------------------------------


@pytest.mark.parametrize("index_type", ["int32", "int64"])
def test_non_zero_columns_in_row_major_order(nb: Any, index_type: str) -> None:
    x = nb.input("x", nb.trt.float32, (2, 3))
    layer = nb.network.add_non_zero(x, getattr(nb.trt, index_type))
    nb.output(layer.get_output(0), "y")
    value = np.array([[0, 1.5, 0], [-2, 0, 3]], np.float32)
    try:
        nb.serialize({"x": value})
    except BackendError as exc:  # TensorRT-RTX has no NonZero implementation; datacenter TensorRT does
        assert "NonZero" in str(exc)
    got = simulate(nb.network, {"x": value})["y"]
    assert got.dtype == np.dtype(index_type)
    np.testing.assert_array_equal(got, [[0, 1, 1], [1, 0, 2]])

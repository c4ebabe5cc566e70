"""MatrixMultiply and Einsum kernels against TensorRT's documented semantics."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from loopc.errors import SimulationError
from loopc.sim import simulate



def data(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, size=shape).astype(np.float32)


def matmul_net(nb: Any, a: np.ndarray, op0: str, b: np.ndarray, op1: str) -> dict[str, np.ndarray]:
    ops = nb.trt.MatrixOperation
    x = nb.input("a", nb.trt.float32, a.shape)
    y = nb.input("b", nb.trt.float32, b.shape)
    layer = nb.network.add_matrix_multiply(x, getattr(ops, op0), y, getattr(ops, op1))
    nb.output(layer.get_output(0), "c")
    return nb.build_and_simulate({"a": a, "b": b})


def test_matmul_by_hand(nb: Any) -> None:
    a = np.array([[1, 2], [3, 4]], np.float32)
    b = np.array([[5, 6], [7, 8]], np.float32)
    got = matmul_net(nb, a, "NONE", b, "NONE")["c"]
    np.testing.assert_array_equal(got, [[19, 22], [43, 50]])


def test_matmul_broadcasts_unit_batch_dims(nb: Any) -> None:
    a, b = data((2, 1, 2, 3), 1), data((1, 3, 3, 4), 2)
    got = matmul_net(nb, a, "NONE", b, "NONE")["c"]
    assert got.shape == (2, 3, 2, 4)
    for i in range(2):
        for j in range(3):
            np.testing.assert_allclose(got[i, j], a[i, 0] @ b[0, j], rtol=1e-5, atol=1e-5)


def test_matmul_transposes_last_two_dims(nb: Any) -> None:
    a, b = data((2, 3, 2), 3), data((1, 4, 3), 4)
    got = matmul_net(nb, a, "TRANSPOSE", b, "TRANSPOSE")["c"]
    assert got.shape == (2, 2, 4)
    for i in range(2):
        np.testing.assert_allclose(got[i], a[i].T @ b[0].T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "a_shape, op0, b_shape, op1, out_shape, expect",
    [
        # matrix * vector -> vector
        ((2, 3, 4), "NONE", (2, 4), "VECTOR", (2, 3), lambda a, b, i: a[i] @ b[i]),
        # transposed matrix * vector
        ((2, 4, 3), "TRANSPOSE", (2, 4), "VECTOR", (2, 3), lambda a, b, i: a[i].T @ b[i]),
        # vector * matrix -> vector
        ((2, 3), "VECTOR", (2, 3, 4), "NONE", (2, 4), lambda a, b, i: b[i].T @ a[i]),
        # vector * vector -> scalar, one per collection element
        ((2, 4), "VECTOR", (2, 4), "VECTOR", (2,), lambda a, b, i: np.sum(a[i] * b[i])),
        # a collection of one vector is broadcast against three matrices
        ((1, 4), "VECTOR", (3, 4, 5), "NONE", (3, 5), lambda a, b, i: b[i].T @ a[0]),
        # vector * transposed matrix broadcasts the matrix
        ((3, 4), "VECTOR", (1, 5, 4), "TRANSPOSE", (3, 5), lambda a, b, i: b[0] @ a[i]),
    ],
)
def test_matmul_vector_operands(
    nb: Any, a_shape: tuple[int, ...], op0: str, b_shape: tuple[int, ...], op1: str, out_shape: Any, expect: Any
) -> None:
    a, b = data(a_shape, 5), data(b_shape, 6)
    got = matmul_net(nb, a, op0, b, op1)["c"]
    assert got.shape == out_shape
    for i in range(out_shape[0]):
        np.testing.assert_allclose(got[i], expect(a, b, i), rtol=1e-5, atol=1e-5)


def test_matmul_single_vectors_give_a_scalar(nb: Any) -> None:
    a = np.array([1, 2, 3], np.float32)
    b = np.array([4, -5, 6], np.float32)
    got = matmul_net(nb, a, "VECTOR", b, "VECTOR")["c"]
    assert got.shape == ()
    assert got == 12


def test_matmul_half_computes_in_float32(nb: Any) -> None:
    # The simulator computes half in float32 and rounds once on output (loopc.sim.ops._common.widen):
    # 2048 + 1 + 1 accumulated in half would lose both ones; float32 keeps them.
    a = np.array([[2048, 1, 1]], np.float16)
    b = np.ones((3, 1), np.float16)
    x = nb.input("a", nb.trt.float16, a.shape)
    y = nb.input("b", nb.trt.float16, b.shape)
    none = nb.trt.MatrixOperation.NONE
    layer = nb.network.add_matrix_multiply(x, none, y, none)
    nb.output(layer.get_output(0), "c")
    got = nb.build_and_simulate({"a": a, "b": b})["c"]
    assert got.dtype == np.float16
    assert got[0, 0] == 2050


def test_matmul_mismatched_batch_dims_at_run_time(nb: Any) -> None:
    none = nb.trt.MatrixOperation.NONE
    x = nb.input("a", nb.trt.float32, (-1, 2, 3))
    y = nb.input("b", nb.trt.float32, (-1, 3, 4))
    layer = nb.network.add_matrix_multiply(x, none, y, none)
    nb.output(layer.get_output(0), "c")
    nb.serialize({"a": data((2, 2, 3), 7), "b": data((2, 3, 4), 8)})
    with pytest.raises(SimulationError, match="do not broadcast"):
        simulate(nb.network, {"a": data((2, 2, 3), 7), "b": data((3, 3, 4), 8)})


# -- Einsum -------------------------------------------------------------------------------------

A23, B34, C24 = data((2, 3), 10), data((3, 4), 11), data((2, 4), 12)
BATCH_A, BATCH_B = data((2, 2, 3), 13), data((2, 3, 4), 14)


@pytest.mark.parametrize(
    "equation, operands, want",
    [
        ("ij,jk->ik", [A23, B34], A23 @ B34),
        ("ij,jk", [A23, B34], A23 @ B34),  # implicit output: labels used once, alphabetically
        ("ij->ji", [A23], A23.T),
        ("ij->", [A23], A23.sum()),
        ("ij->j", [A23], A23[0] + A23[1]),
        ("ij,ij->i", [C24, C24], (C24 * C24).sum(axis=1)),
        ("bij,bjk->bik", [BATCH_A, BATCH_B], np.stack([BATCH_A[0] @ BATCH_B[0], BATCH_A[1] @ BATCH_B[1]])),
        ("ij,kl->ijkl", [A23, C24], A23[:, :, None, None] * C24[None, None, :, :]),
    ],
)
def test_einsum(nb: Any, equation: str, operands: list[np.ndarray], want: np.ndarray) -> None:
    names = [f"x{i}" for i in range(len(operands))]
    tensors = [nb.input(n, nb.trt.float32, a.shape) for n, a in zip(names, operands)]
    layer = nb.network.add_einsum(tensors, equation)
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate(dict(zip(names, operands)))["y"]
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

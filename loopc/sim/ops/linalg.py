"""Products of tensors: MatrixMultiply and Einsum."""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.errors import SimulationError
from loopc.sim.ops._common import widen
from loopc.sim.registry import Kernel, simulates


def _operand(x: np.ndarray, op: str, which: str) -> tuple[np.ndarray, tuple[int, ...]]:
    """The operand as a stack of matrices for np.matmul, and its batch (collection) dims.

    A VECTOR operand is a collection of vectors along its last axis: input 0 becomes a stack of
    1 x K rows, input 1 a stack of K x 1 columns; the unit axis is dropped from the result.
    """
    if op == "VECTOR":
        if x.ndim < 1:
            raise SimulationError(f"a VECTOR operand needs rank >= 1, got a scalar as {which}")
        return (x[..., None, :] if which == "input 0" else x[..., :, None]), x.shape[:-1]
    if x.ndim < 2:
        raise SimulationError(f"{which} has rank {x.ndim}; a matrix operand needs rank >= 2")
    return (np.swapaxes(x, -1, -2) if op == "TRANSPOSE" else x), x.shape[:-2]


def _operands(x: np.ndarray, op0: str, y: np.ndarray, op1: str) -> tuple[np.ndarray, np.ndarray]:
    """Both operands as stacks of matrices (see :func:`_operand`), checked to multiply."""
    a, batch_a = _operand(x, op0, "input 0")
    b, batch_b = _operand(y, op1, "input 1")
    if len(batch_a) != len(batch_b):
        raise SimulationError(
            f"the inputs have {len(batch_a)} and {len(batch_b)} collection dims; TensorRT needs them equal"
        )
    if any(p != q and 1 not in (p, q) for p, q in zip(batch_a, batch_b)):
        raise SimulationError(f"collection dims {batch_a} and {batch_b} do not broadcast")
    if a.shape[-1] != b.shape[-2]:
        raise SimulationError(f"inner dimensions differ: {a.shape[-1]} and {b.shape[-2]}")
    return a, b


@simulates("MATRIX_MULTIPLY")
def matrix_multiply(layer: Any) -> Kernel:
    """op(A) * op(B) over collections of matrices or vectors.

    The collection dims of A and B must be equally many; each pair must match or one of them be 1,
    which is broadcast. Integer operands are multiplied exactly (int64), floats in float32 or wider.
    """
    op0, op1 = layer.op0.name, layer.op1.name

    def run(ins: Any) -> list[np.ndarray]:
        a, b = _operands(widen(ins[0]), op0, widen(ins[1]), op1)
        if a.dtype.kind in "iu":
            a, b = a.astype(np.int64), b.astype(np.int64)
        out = np.matmul(a, b)
        if op1 == "VECTOR":
            out = out[..., 0]
        if op0 == "VECTOR":
            out = out[..., 0] if op1 == "VECTOR" else out[..., 0, :]
        return [out]

    return run


@simulates("EINSUM")
def einsum(layer: Any) -> Kernel:
    """Einstein summation as NumPy defines it; TensorRT documents the same convention (no ellipsis)."""
    equation = "".join(str(layer.equation).split())

    def run(ins: Any) -> list[np.ndarray]:
        operands = [widen(x) for x in ins]
        try:
            return [np.einsum(equation, *operands)]
        except ValueError as exc:
            raise SimulationError(f"einsum {equation!r}: {exc}") from exc

    return run


def quantized_product(ops: tuple[str, str], axes: tuple[int, int]) -> Kernel:
    """A MatrixMultiply fused with the Dequantize layers of both its operands (:mod:`loopc.sim.fusion` says
    when), as TensorRT computes it: the quantized values are multiplied, INT8 by INT8 summed in int32 (exact),
    FP8 by FP8 (each product exact in float32) summed in float32; the sum, as a float32, is then multiplied by
    ``scale_a * scale_b`` (a float32: one scale per tensor, or per row of A / column of B) and rounded to the
    layer's output type. Multiplying the dequantized values instead rounds each of them to the Dequantize's
    output type first, which a half network shows.

    Its inputs are ``(q_a, q_b, scale_a, scale_b)``; ``axes`` tells, per operand, whether its scale is one
    value (-1) or one per index of the axis that is not summed.
    """
    op0, op1 = ops

    def run(ins: Any) -> list[np.ndarray]:
        a, b = _operands(ins[0], op0, ins[1], op1)
        if a.dtype.kind == "i":
            total = np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(np.float32)
        else:
            total = np.matmul(a.astype(np.float32), b.astype(np.float32))
        scale_a = ins[2].astype(np.float32).reshape((-1, 1) if axes[0] >= 0 else ())
        scale_b = ins[3].astype(np.float32).reshape((1, -1) if axes[1] >= 0 else ())
        return [total * (scale_a * scale_b)]

    return run

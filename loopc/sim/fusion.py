"""Layers TensorRT's builder fuses and then computes otherwise than one by one.

A MatrixMultiply both of whose operands come from Dequantize layers of INT8 (or both of FP8) is a quantized
product: the builder fuses the two dequantizes into it (TensorRT Developer Guide, "Working with Quantized
Types", explicit quantization: Q/DQ fusion into the following MatMul or Convolution), so it multiplies the
quantized values and rescales the sum, rather than multiplying dequantized floats. That is only possible when
each scale is constant along the summed axis: one per tensor, or one per row of A / per column of B (per
output channel of a weight). Any other scale layout, a zero point, or one operand in float (weight-only
quantization) leaves the product in float, as the Dequantize layers compute it. The rule itself, the
arithmetic, is :func:`loopc.sim.ops.linalg.quantized_product`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import ml_dtypes
import numpy as np

if TYPE_CHECKING:
    from loopc.trt.read_back import Layer, Tensor

#: Quantized operand types whose products TensorRT computes as such (both operands of one type).
_PRODUCT_TYPES = (np.dtype(np.int8), np.dtype(ml_dtypes.float8_e4m3fn))


def fuse(layers: list[Layer]) -> None:
    """Give each quantized product among ``layers`` its fused kernel and what that reads: the quantized
    operands in the inputs' places (so an observer sees the product's shapes), then their scales."""
    for layer in layers:
        if layer.type != "MATRIX_MULTIPLY":
            continue
        ops = (layer.api.op0.name, layer.api.op1.name)
        a, b = (_dequantized(t.producer if t is not None else None) for t in layer.inputs[:2])
        if a is None or b is None or a[0].dtype != b[0].dtype or "VECTOR" in ops:
            continue
        axis_a = _scale_axis(a, _free_axis(len(a[0].shape), ops[0], first=True))
        axis_b = _scale_axis(b, _free_axis(len(b[0].shape), ops[1], first=False))
        if axis_a is None or axis_b is None:
            continue
        from loopc.sim.ops.linalg import quantized_product  # the kernels load on first use, as their registry's do

        layer.reads = [a[0], b[0], a[1], b[1]]
        layer.kernel = quantized_product(ops, (axis_a, axis_b))


def _dequantized(layer: Layer | None) -> tuple[Tensor, Tensor, int] | None:
    """(quantized values, scale, axis) of ``layer`` when it is a Dequantize of an INT8 or FP8 tensor without a zero
    point."""
    if layer is None or layer.type != "DEQUANTIZE" or len(layer.inputs) < 2:
        return None
    values, scale = layer.inputs[0], layer.inputs[1]
    if values is None or scale is None or values.dtype not in _PRODUCT_TYPES:
        return None
    if len(layer.inputs) > 2 and layer.inputs[2] is not None:
        return None
    return values, scale, int(layer.api.axis)


def _free_axis(rank: int, op: str, first: bool) -> int:
    """The axis of an operand that is not summed: A's rows, B's columns (after its transpose, if any)."""
    rows, columns = rank - 2, rank - 1
    if first:
        return columns if op == "TRANSPOSE" else rows
    return rows if op == "TRANSPOSE" else columns


def _scale_axis(dequantized: tuple[Tensor, Tensor, int], free: int) -> int | None:
    """-1 when the scale is one value; ``free`` when it is one per index of that axis; None otherwise (per
    block, or along the summed axis)."""
    values, scale, axis = dequantized
    if int(np.prod(scale.shape)) == 1 and len(scale.shape) <= 1:
        return -1
    if len(scale.shape) != 1:
        return None
    return free if axis % len(values.shape) == free else None

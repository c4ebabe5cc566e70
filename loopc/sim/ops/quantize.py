"""Quantize and Dequantize, as TensorRT documents them.

Quantize: ``clamp(round(x / scale) + zeroPt)`` with rounding half to even, clamping to the integer
type's range (INT8 [-128, 127], INT4 [-8, 7]); to FP8 (e4m3fn) and FP4 (e2m1) the quotient is
rounded to the nearest representable value, saturating at the type's largest finite value.
Dequantize: ``(x - zeroPt) * scale``. A scale is one value (per tensor), a 1-D tensor along
``axis`` (per channel), or a tensor of the input's rank whose every element covers one block
(``block_shape``, a -1 in it the whole axis). With no block shape set, the builder infers the blocks from
the shapes, as TensorRT's ONNX parser relies on for block-wise INT4 weights (TensorRT-RTX 1.7 refuses an
INT4 layer with a block shape set, measured): the scale's shape is the input's but along one axis, one of
the last two, whose extent it divides; the block spans ``input.shape[i] / scale.shape[i]`` there, 1 elsewhere,
whatever ``axis`` says. The builder refuses any other scale, with the reasons the simulator gives.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from loopc.errors import SimulationError
from loopc.sim.dtypes import is_float, to_numpy
from loopc.sim.registry import Kernel, simulates

#: Integer targets and the range TensorRT clamps to.
_INT_RANGES = {np.dtype(np.int8): (-128, 127), np.dtype(ml_dtypes.int4): (-8, 7)}
#: Float targets and their largest finite value (what out-of-range quotients saturate to).
_FLOAT_MAX = {np.dtype(ml_dtypes.float8_e4m3fn): 448.0, np.dtype(ml_dtypes.float4_e2m1fn): 6.0}


def _block_shape(layer: Any) -> tuple[int, ...] | None:
    try:
        return tuple(int(d) for d in layer.block_shape)
    except (RuntimeError, ValueError, TypeError):  # unset: TensorRT derives it from the shapes
        return None


def _expand(coeff: np.ndarray, x: np.ndarray, axis: int, block: tuple[int, ...] | None) -> np.ndarray:
    """A scale or zero point broadcast against ``x``: one value, one per index of ``axis``, or one per block."""
    if coeff.size == 1 and coeff.ndim <= 1:
        return coeff.reshape(())
    if coeff.ndim == 1:
        if x.ndim == 0 or not -x.ndim <= axis < x.ndim or coeff.shape[0] != x.shape[axis]:
            raise SimulationError(f"a per-axis scale of shape {list(coeff.shape)} does not fit axis {axis} of "
                                  f"an input of shape {list(x.shape)}")
        shape = [1] * x.ndim
        shape[axis] = -1
        return coeff.reshape(shape)
    if coeff.ndim != x.ndim:
        raise SimulationError(f"a block scale of rank {coeff.ndim} for an input of rank {x.ndim}")
    if not block:
        sizes = _inferred_blocks(coeff.shape, x.shape)
    else:
        sizes = tuple(n if size == -1 else size for n, size in zip(x.shape, block))
    for i, size in enumerate(sizes):
        if coeff.shape[i] * size != x.shape[i]:
            raise SimulationError(f"a block scale of shape {list(coeff.shape)} with blocks {list(sizes)} does not "
                                  f"cover an input of shape {list(x.shape)}")
        if size > 1:
            coeff = np.repeat(coeff, size, axis=i)
    return coeff


def _inferred_blocks(scale: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """The block TensorRT infers when no block shape is set (see the module's docstring); its refusals are the
    builder's own words."""
    blocked = [i for i, (n, m) in enumerate(zip(shape, scale)) if n != m]
    where = f"(a scale of shape {list(scale)} for an input of shape {list(shape)})"
    if len(blocked) > 1:
        raise SimulationError(f"Only a single blocking dimension is allowed {where}")
    if not blocked:  # a dynamic blocked axis whose extent is the scale's this time: blocks of one
        return (1,) * len(shape)
    (axis,) = blocked
    if axis < len(shape) - 2:
        raise SimulationError(f"The blocking dimension must be the last or second to last dimension {where}")
    if scale[axis] == 0 or shape[axis] % scale[axis]:
        raise SimulationError(f"Inferred block size is not an integer {where}")
    return tuple(shape[axis] // scale[axis] if i == axis else 1 for i in range(len(shape)))


@simulates("QUANTIZE")
def quantize(layer: Any) -> Kernel:
    target = to_numpy(layer.get_output(0).dtype)
    axis, block = int(layer.axis), _block_shape(layer)
    if target not in _INT_RANGES and target not in _FLOAT_MAX:
        raise SimulationError(f"Quantize to {target.name}; TensorRT quantizes to INT8, INT4, FP8 and FP4")

    def run(ins: Any) -> list[np.ndarray]:
        x = ins[0].astype(np.float32)
        scale = _expand(ins[1].astype(np.float32), x, axis, block)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = x / scale
        if target in _FLOAT_MAX:
            top = _FLOAT_MAX[target]
            return [np.clip(q, -top, top).astype(target)]  # NaN stays NaN; ml_dtypes rounds half to even
        q = np.rint(q)
        if len(ins) > 2 and ins[2] is not None:
            q = q + _expand(ins[2].astype(np.float32), x, axis, block)
        low, high = _INT_RANGES[target]
        with np.errstate(invalid="ignore"):
            return [np.clip(q, low, high).astype(target)]

    return run


@simulates("DEQUANTIZE")
def dequantize(layer: Any) -> Kernel:
    target = to_numpy(layer.get_output(0).dtype)
    axis, block = int(layer.axis), _block_shape(layer)
    if not is_float(target):
        raise SimulationError(f"Dequantize to {target.name}; TensorRT dequantizes to float types")

    def run(ins: Any) -> list[np.ndarray]:
        x = ins[0].astype(np.float32)
        if len(ins) > 2 and ins[2] is not None:
            x = x - _expand(ins[2].astype(np.float32), x, axis, block)
        return [(x * _expand(ins[1].astype(np.float32), x, axis, block)).astype(target)]

    return run

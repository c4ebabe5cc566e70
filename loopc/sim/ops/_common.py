"""Helpers shared by kernel families: compute precision and reading attributes."""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.sim.dtypes import is_float


def widen(x: np.ndarray) -> np.ndarray:
    """Floats narrower than float32 are computed in float32 (and rounded back on output)."""
    if is_float(x.dtype) and x.dtype.itemsize < 4:
        return x.astype(np.float32)
    return x


def int_attr(value: Any) -> int:
    """An integer attribute that pybind may hand back as an enum or a NumPy scalar."""
    return int(value)


def dims(value: Any) -> tuple[int, ...]:
    """A ``trt.Dims`` (or any sequence of ints) as a tuple."""
    return tuple(int(d) for d in value)


def axes_from_mask(mask: int, rank: int) -> tuple[int, ...]:
    """TensorRT encodes reduction / softmax axes as a bit mask."""
    return tuple(i for i in range(rank) if mask & (1 << i))

"""TensorRT data types as NumPy dtypes."""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.errors import SimulationError
from loopc.trt import enum_name
from loopc.trt.dtypes import BY_NAME

def to_numpy(dtype: Any) -> np.dtype[Any]:
    """NumPy dtype of a ``trt.DataType``."""
    name = enum_name(dtype)
    try:
        return BY_NAME[name].dtype
    except KeyError:
        raise SimulationError(f"TensorRT data type {name} has no NumPy equivalent") from None


def is_float(dtype: np.dtype[Any]) -> bool:
    """True for every floating type, including the ml_dtypes ones NumPy does not classify."""
    return dtype.kind == "f" or dtype in _ML_FLOATS


#: The floating types NumPy knows only through ml_dtypes (and does not classify as such).
_ML_FLOATS = frozenset(BY_NAME[name].dtype for name in ("BF16", "FP8", "FP4", "E8M0"))

"""TensorRT data types as NumPy dtypes."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from loopc.errors import SimulationError
from loopc.trt import enum_name

_BY_NAME: dict[str, np.dtype[Any]] = {
    "FLOAT": np.dtype(np.float32),
    "HALF": np.dtype(np.float16),
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "INT8": np.dtype(np.int8),
    "UINT8": np.dtype(np.uint8),
    "INT32": np.dtype(np.int32),
    "INT64": np.dtype(np.int64),
    "BOOL": np.dtype(np.bool_),
    "FP8": np.dtype(ml_dtypes.float8_e4m3fn),
    "INT4": np.dtype(ml_dtypes.int4),
    "FP4": np.dtype(ml_dtypes.float4_e2m1fn),
    "E8M0": np.dtype(ml_dtypes.float8_e8m0fnu),
}


def to_numpy(dtype: Any) -> np.dtype[Any]:
    """NumPy dtype of a ``trt.DataType``."""
    name = enum_name(dtype)
    try:
        return _BY_NAME[name]
    except KeyError:
        raise SimulationError(f"TensorRT data type {name} has no NumPy equivalent") from None


def is_float(dtype: np.dtype[Any]) -> bool:
    """True for every floating type, including the ml_dtypes ones NumPy does not classify."""
    return dtype.kind == "f" or dtype in (_BY_NAME["BF16"], _BY_NAME["FP8"], _BY_NAME["FP4"], _BY_NAME["E8M0"])

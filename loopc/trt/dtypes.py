"""TensorRT's data types, stated once: each one's NumPy dtype and width, and which quantized types TensorRT holds.

The backend maps values to TensorRT types with it, the simulator and the build report read a network back with it,
constant folding and the ONNX export decide what stays quantized with it. It imports no TensorRT module (passes
read it), so types are named by their ``trt.DataType`` member names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class DataType:
    """One ``trt.DataType``: its member name, the NumPy dtype of its values and its width in bits (4-bit types are
    packed two to a byte, the first element in the low nibble)."""

    name: str
    dtype: np.dtype[Any]
    bits: int


TYPES = tuple(DataType(name, np.dtype(dtype), bits) for name, dtype, bits in (
    ("FLOAT", np.float32, 32), ("HALF", np.float16, 16), ("BF16", ml_dtypes.bfloat16, 16),
    ("INT8", np.int8, 8), ("UINT8", np.uint8, 8), ("INT32", np.int32, 32), ("INT64", np.int64, 64),
    ("BOOL", np.bool_, 8), ("FP8", ml_dtypes.float8_e4m3fn, 8), ("INT4", ml_dtypes.int4, 4),
    ("FP4", ml_dtypes.float4_e2m1fn, 4), ("E8M0", ml_dtypes.float8_e8m0fnu, 8)))
BY_NAME = {t.name: t for t in TYPES}
BY_DTYPE = {t.dtype: t for t in TYPES}

#: Quantized types whose constants a Dequantize layer reads as they are: a DequantizeLinear of one stays (uint8 and
#: uint4 are held shifted, as int8 and int4). TensorRT has no float8 e5m2, and FP4 only on Blackwell targets.
HELD_QUANTIZED = frozenset(np.dtype(t) for t in (np.int8, np.uint8, ml_dtypes.int4, ml_dtypes.uint4,
                                                  ml_dtypes.float8_e4m3fn))
#: NumPy types of 4 bits (ml_dtypes keeps one element a byte): ONNX and TensorRT both pack them two to a byte.
FOUR_BIT = frozenset(np.dtype(t) for t in (ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.float4_e2m1fn))
#: Types only TensorRT's Quantize layer makes (a Cast does not), whose constants its Python API takes only as bytes.
QUANTIZE_ONLY = frozenset(BY_NAME[name].dtype for name in ("FP8", "INT4", "FP4"))


def held_bytes(name: str, count: int) -> int:
    """The bytes TensorRT holds ``count`` elements of the type named ``name`` in (packed types rounded up)."""
    return (count * BY_NAME[name].bits + 7) // 8

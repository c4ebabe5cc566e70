"""``Const`` layers' data from the ``.bin``, memory-mapped and bounds-checked.

A Const says ``element_type``, ``shape`` (``"2, 3"``: OpenVINO writes ``", "``), ``offset`` and
``size``. Regions may be unaligned and shared between Consts (OpenVINO deduplicates identical
bytes), so both are normal; what is not is a region past the end of the file, or a size that
disagrees with shape × element type — OpenVINO accepts a larger size, loopc does not.
"""

from __future__ import annotations

import math
import mmap
import os
from typing import Any

import ml_dtypes
import numpy as np

from loopc.errors import FrontendError, UnsupportedOpError, located
from loopc.limits import check_constant

#: OpenVINO element type → (NumPy dtype, bits per element in the .bin).
ELEMENT_TYPES: dict[str, tuple[np.dtype[Any], int]] = {
    "f64": (np.dtype(np.float64), 64), "f32": (np.dtype(np.float32), 32), "f16": (np.dtype(np.float16), 16),
    "bf16": (np.dtype(ml_dtypes.bfloat16), 16),
    "i64": (np.dtype(np.int64), 64), "i32": (np.dtype(np.int32), 32), "i16": (np.dtype(np.int16), 16),
    "i8": (np.dtype(np.int8), 8), "u64": (np.dtype(np.uint64), 64), "u32": (np.dtype(np.uint32), 32),
    "u16": (np.dtype(np.uint16), 16), "u8": (np.dtype(np.uint8), 8), "boolean": (np.dtype(np.bool_), 8),
    "u4": (np.dtype(np.uint8), 4), "i4": (np.dtype(np.int8), 4),
}
#: Dims, offsets and sizes are int64 in OpenVINO and TensorRT alike.
INT64_MAX = 2**63 - 1
#: Most elements one Const may hold (a 4 GiB f32 tensor): bounds memory before anything is allocated.
def element_type(text: str, what: str) -> np.dtype[Any]:
    """The NumPy dtype of an OpenVINO element type (``f32``, ``boolean``, ...)."""
    if text == "string":
        raise located(UnsupportedOpError, what, "string tensors are not supported (TensorRT has no string type)")
    if text not in ELEMENT_TYPES:
        raise located(UnsupportedOpError, what, f"element type {text!r} is not supported")
    dtype, bits = ELEMENT_TYPES[text]
    if bits == 4:
        return np.dtype(np.int32)  # unpacked nibbles are widened: TensorRT has no 4-bit integer arithmetic
    return dtype


def parse_shape(text: str, what: str) -> tuple[int | None, ...]:
    """``"2, 3"``/``"2,3"`` → (2, 3); ``""`` → (); ``?``, ``-1`` and bounded ``1..10`` dims → None."""
    dims: list[int | None] = []
    for part in text.split(",") if text.strip() else []:
        part = part.strip()
        if part in ("?", "-1") or ".." in part:
            dims.append(None)
            continue
        dims.append(_size(part, f"{what}: shape {text[:60]!r} has dimension"))
    return tuple(dims)


class Weights:
    """The model's ``.bin``, mapped once; :meth:`array` cuts one Const's region out of it."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._map: mmap.mmap | None = None
        self.size = 0
        if path is None or not os.path.isfile(path):
            return  # an IR without Consts needs no .bin (OpenVINO reads it so); a Const says what is missing
        self.size = os.path.getsize(path)
        if self.size:
            with open(path, "rb") as handle:
                self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)

    def array(self, data: dict[str, str], what: str) -> np.ndarray:
        """The Const's value; its region must lie inside the file and match shape × element type exactly."""
        kind = data.get("element_type", "")
        if kind == "":
            raise located(FrontendError, what, "Const has no 'element_type'")
        dtype = element_type(kind, what)  # refuses types loopc has no dtype for (string, ...)
        shape = parse_shape(data.get("shape", ""), what)
        if any(d is None for d in shape):
            raise located(FrontendError, what, f"Const shape {data.get('shape')!r} is not static")
        dims = tuple(d for d in shape if d is not None)
        check_constant(dims, dtype, what)
        count = math.prod(dims)
        bits = ELEMENT_TYPES[kind][1]
        offset = _field(data, "offset", what)
        size = _field(data, "size", what)
        needed = (count * bits + 7) // 8
        if size != needed and not (needed == 0 and size == 1):  # OpenVINO stores an empty Const as 1 byte
            raise located(FrontendError, what, f"Const size {size} bytes disagrees with shape {list(shape)} × "
                          f"{kind} ({needed} bytes)")
        if self._map is None and needed:
            raise located(FrontendError, what, f"Const needs {needed} bytes of weights but {self._absence()}")
        if offset + size > self.size:
            raise located(FrontendError, what, f"Const region [{offset}, {offset + size}) runs past the end "
                          f"of {self.path} ({self.size} bytes)")
        raw = self._map[offset:offset + needed] if self._map is not None else b""
        if bits == 4:
            return _unpack_nibbles(raw, count, signed=kind == "i4").reshape(dims)
        if kind == "boolean":
            return (np.frombuffer(raw, dtype=np.uint8) != 0).reshape(dims)
        return np.frombuffer(raw, dtype=ELEMENT_TYPES[kind][0]).reshape(dims).copy()

    def _absence(self) -> str:
        """Why there are no bytes to read, for a Const that needs some."""
        if self.path is None:
            return "no .bin was given"
        if os.path.isfile(self.path):
            return f"{self.path} is empty"
        return f"{self.path} does not exist (give the IR's .bin with --weights)"


def _unpack_nibbles(raw: bytes, count: int, signed: bool) -> np.ndarray:
    """u4/i4: two values per byte, low nibble first."""
    packed = np.frombuffer(raw, dtype=np.uint8)
    nibbles = np.empty(packed.size * 2, dtype=np.int32)
    nibbles[0::2] = packed & 0x0F
    nibbles[1::2] = packed >> 4
    nibbles = nibbles[:count]
    if signed:
        nibbles = np.where(nibbles >= 8, nibbles - 16, nibbles)
    return nibbles.astype(np.int32)


def _field(data: dict[str, str], key: str, what: str) -> int:
    text = data.get(key)
    if text is None:
        raise located(FrontendError, what, f"Const has no {key!r}")
    return _size(text, f"{what}: Const {key}")


def _size(text: str, what: str) -> int:
    """A non-negative int64 (a dim, an offset, a size); ``what`` starts the error that names it."""
    try:
        value = int(text)
    except ValueError:
        raise FrontendError(f"{what} {text[:30]!r} is not an integer") from None
    if value < 0:
        raise FrontendError(f"{what} {value} is negative")
    if value > INT64_MAX:
        raise FrontendError(f"{what} {text[:30]!r} does not fit a 64-bit integer")
    return value

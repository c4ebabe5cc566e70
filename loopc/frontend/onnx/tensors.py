"""Tensors an ONNX file declares (initializers, Constant values, external data), checked before use.

A TensorProto states its type and dims, and separately holds its data; an untrusted file may make
the two disagree, declare 2**40 elements, or point its external data anywhere. Everything here
compares the declared size with the data (in Python integers, never allocating) and calls
:func:`loopc.limits.check_constant` before a tensor is materialized, so a bad file costs an error.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from loopc.errors import FrontendError, UnsupportedOpError, located
from loopc.limits import check_constant

@dataclass(frozen=True)
class _Element:
    """How one ONNX element type is stored: NumPy type, bits when packed, typed field, entries per element."""

    dtype: np.dtype[Any]
    bits: int  # 0: a whole number of bytes (dtype.itemsize)
    field: str
    per_element: int


def _element(data_type: int) -> _Element:
    packed: dict[int, int] = {TensorProto.INT4: 4, TensorProto.UINT4: 4, TensorProto.FLOAT4E2M1: 4, TensorProto.INT2: 2,
                              TensorProto.UINT2: 2, TensorProto.FLOAT6E2M3: 6, TensorProto.FLOAT6E3M2: 6}
    bits = packed.get(data_type, 0)
    per = 2 if data_type in (TensorProto.COMPLEX64, TensorProto.COMPLEX128) else 1
    return _Element(np.dtype(helper.tensor_dtype_to_np_dtype(data_type)), bits,
                    helper.tensor_dtype_to_field(data_type), per)


_ELEMENTS = {v: _element(v) for v in TensorProto.DataType.values()
             if v not in (TensorProto.UNDEFINED, TensorProto.STRING)}


def all_tensors(graph: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
    """Every dense tensor ``graph`` holds at any depth: initializers, sparse ones' parts, attributes."""
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield from (sparse.values, sparse.indices)
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            for sparse in [attr.sparse_tensor] * attr.HasField("sparse_tensor") + list(attr.sparse_tensors):
                yield from (sparse.values, sparse.indices)
            for sub in [attr.g] * attr.HasField("g") + list(attr.graphs):
                yield from all_tensors(sub)


def _element_of(tensor: onnx.TensorProto, what: str) -> _Element:
    element = _ELEMENTS.get(tensor.data_type)
    if element is None:
        if tensor.data_type == TensorProto.STRING:
            raise UnsupportedOpError(f"{what} holds strings, which TensorRT has no type for")
        raise FrontendError(f"{what} has data type {tensor.data_type}, which is not an ONNX tensor type")
    return element


def _dims(tensor: onnx.TensorProto, what: str) -> list[int]:
    dims = list(tensor.dims)
    if any(d < 0 for d in dims):
        raise FrontendError(f"{what} has a negative dim in its shape {dims}")
    return dims


def data_bytes(tensor: onnx.TensorProto, what: str) -> int:
    """How many bytes of raw data ``tensor``'s type and dims call for (no data is read)."""
    element = _element_of(tensor, what)
    count = math.prod(_dims(tensor, what))
    return (count * element.bits + 7) // 8 if element.bits else count * element.dtype.itemsize


#: Raw data up to this size is measured when the tensor is checked; larger data where it is read
#: (:func:`to_array`), since reading it from the message copies it.
EAGER_RAW_BYTES = 64 << 10


def check_tensor(tensor: onnx.TensorProto, what: str) -> int:
    """``tensor`` is one loopc can materialize: a known type, data matching its dims, within the limit.

    Returns the bytes its type and dims call for.
    """
    if tensor.HasField("segment"):
        raise UnsupportedOpError(f"{what} is stored in segments, which loopc does not read")
    if tensor.data_location == TensorProto.EXTERNAL:
        raise FrontendError(f"{what} keeps its data in an external file that was not loaded",
                            hint="pass the model's path, so that loopc reads the data beside it")
    element = _element_of(tensor, what)
    dims = _dims(tensor, what)
    count = math.prod(dims)
    needed = (count * element.bits + 7) // 8 if element.bits else count * element.dtype.itemsize
    if tensor.HasField("raw_data"):
        if needed <= EAGER_RAW_BYTES:
            _check_raw(tensor, what, element, needed, len(tensor.raw_data))
    else:
        values = count * element.per_element
        if element.bits in (2, 4):
            values = (values * element.bits + 7) // 8  # packed into the int32 entries a byte at a time
        have = len(getattr(tensor, element.field))
        if have != values:
            raise FrontendError(f"{what} has shape {dims} ({element.dtype.name}), which takes {values} values, "
                                f"but holds {have} in {element.field}")
    check_constant(dims, element.dtype, what)
    return needed


def _check_raw(tensor: onnx.TensorProto, what: str, element: _Element, needed: int, have: int) -> None:
    if have != needed:
        raise FrontendError(f"{what} has shape {list(tensor.dims)} ({element.dtype.name}), which takes {needed} "
                            f"bytes, but holds {have} bytes of raw data")


def check_span(tensor: onnx.TensorProto, length: int, what: str) -> None:
    """``tensor`` (a header: name, type, dims) is one loopc can materialize from ``length`` bytes in a file."""
    element = _element_of(tensor, what)
    _check_raw(tensor, what, element, data_bytes(tensor, what), length)
    check_constant(_dims(tensor, what), element.dtype, what)


def read_span(tensor: onnx.TensorProto, path: str, offset: int, length: int, what: str) -> np.ndarray:
    """The values ``tensor`` (a header) declares, read from ``length`` bytes at ``offset`` in ``path`` straight into
    their array (read-only, as an array of a message's raw data is)."""
    check_span(tensor, length, what)
    element = _element_of(tensor, what)
    with open(path, "rb") as handle:
        handle.seek(offset)
        if element.bits or sys.byteorder != "little":
            whole = onnx.TensorProto()
            whole.CopyFrom(tensor)
            del whole.external_data[:]
            whole.raw_data = handle.read(length)
            return to_array(whole, what)
        array = np.fromfile(handle, element.dtype, length // element.dtype.itemsize)
    if array.nbytes != length:
        raise FrontendError(f"{what}: {path} ends {length - array.nbytes} bytes short of its data")
    array = array.reshape(tuple(tensor.dims))
    array.flags.writeable = False
    return array


def to_array(tensor: onnx.TensorProto, what: str) -> np.ndarray:
    """``tensor`` as an array (after :func:`check_tensor`), its raw data checked against its dims first."""
    if tensor.HasField("raw_data"):
        data = tensor.raw_data
        element = _element_of(tensor, what)
        _check_raw(tensor, what, element, data_bytes(tensor, what), len(data))
        if not element.bits and sys.byteorder == "little":
            return np.frombuffer(data, element.dtype).reshape(tuple(tensor.dims))
    try:
        return numpy_helper.to_array(tensor)
    except Exception as exc:
        raise located(FrontendError, what, f"unreadable tensor data ({exc})") from None


def load_external_data(proto: onnx.ModelProto, path: str, keep: Callable[[onnx.TensorProto, str, int, int], bool]) \
        -> None:
    """Read every external tensor's bytes into it, from files inside the model's folder only; or, where
    ``keep(tensor, file, offset, length)`` says so, leave them there (it made the tensor a stand-in for them).

    Each tensor reads exactly the bytes its type and dims call for, after checking that they lie
    within the file and within loopc's limit; onnx's own loader would read to the end of the file
    when ``length`` is absent.
    """
    base = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    for tensor in all_tensors(proto.graph):
        if tensor.data_location != TensorProto.EXTERNAL:
            continue
        what = f"{path}: tensor {tensor.name!r}"
        info = {entry.key: entry.value for entry in tensor.external_data}
        location = info.get("location", "")
        target = _inside(base, location, what)
        dims = _dims(tensor, what)
        needed = data_bytes(tensor, what)
        check_constant(dims, _element_of(tensor, what).dtype, what)
        offset = _external_int(info, "offset", what) or 0
        length = _external_int(info, "length", what)
        if length is not None and length != needed:
            raise located(FrontendError, what, f"external data length {length} does not match its shape {dims}, "
                          f"which takes {needed} bytes")
        size = os.path.getsize(target)
        if offset + needed > size:
            raise located(FrontendError, what, f"external data at offset {offset} needs {needed} bytes, but "
                          f"{location} has only {size}")
        if keep(tensor, target, offset, needed):
            continue
        with open(target, "rb") as handle:
            handle.seek(offset)
            tensor.raw_data = handle.read(needed)
        tensor.data_location = TensorProto.DEFAULT
        del tensor.external_data[:]


def _inside(base: str, location: str, what: str) -> str:
    """The external file's real path; it must be a file inside ``base`` (no climbing out, no links out)."""
    if not location:
        raise FrontendError(f"{what} is marked external but names no location")
    try:
        target = os.path.realpath(os.path.join(base, location))
    except (ValueError, OSError):
        raise located(FrontendError, what, f"external data location {location!r} is not a valid path") from None
    if os.path.commonpath([target, base]) != base:
        raise FrontendError(f"{what} points outside the model's folder ({location})")
    if not os.path.isfile(target):
        raise located(FrontendError, what, f"external data file missing: {location}")
    return target


def _external_int(info: dict[str, str], key: str, what: str) -> int | None:
    if key not in info:
        return None
    try:
        value = int(info[key])
    except ValueError:
        value = -1
    if value < 0:
        raise located(FrontendError, what, f"external data {key} {info[key]!r} is not a non-negative integer")
    return value

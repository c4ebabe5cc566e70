"""An ONNX file read without its weights' bytes: they stay in the file until each is read into its array.

``onnx.load`` copies every weight twice before loopc holds an array of it (the file into memory, then protobuf's
parse into the message), and reading a message's ``raw_data`` copies it once more. :func:`read` walks the file's
protobuf encoding instead (the main graph, its initializers and nodes, and the bodies and Constant values they
hold, at every depth), and gives protobuf a copy of the file without the ``raw_data`` of each large tensor
(:func:`loopc.frontend.onnx.weightless.large`): that tensor keeps its name, type and dims and becomes the stand-in
for its bytes where they lie (:class:`~loopc.frontend.onnx.weightless.Span`). Everything else is copied as
written, so the message protobuf parses is the model, stripped.

The walk checks every length against the bytes around it; any encoding it does not take apart as expected
(:class:`Malformed`) is left to ``onnx.load``, whose own error then says what is wrong.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable, Iterator
from typing import Any, Optional, Union

import onnx
from onnx import TensorProto

from loopc.frontend.onnx.weightless import KEY, Span, Weights, large

_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5
#: Bodies nested deeper than this are not taken apart (protobuf itself refuses 100 levels of messages).
MAX_DEPTH = 32


def _number(message: Any, name: str) -> int:
    """The field number of ``message``'s field ``name`` (as onnx.proto declares it)."""
    return int(message.DESCRIPTOR.fields_by_name[name].number)


_MODEL_GRAPH = _number(onnx.ModelProto, "graph")
_GRAPH_NODE, _GRAPH_INITIALIZER = _number(onnx.GraphProto, "node"), _number(onnx.GraphProto, "initializer")
_NODE_OP, _NODE_ATTRIBUTE = _number(onnx.NodeProto, "op_type"), _number(onnx.NodeProto, "attribute")
_ATTR_NAME, _ATTR_T = _number(onnx.AttributeProto, "name"), _number(onnx.AttributeProto, "t")
_ATTR_G, _ATTR_GRAPHS = _number(onnx.AttributeProto, "g"), _number(onnx.AttributeProto, "graphs")
_TENSOR_DIMS, _TENSOR_TYPE = _number(TensorProto, "dims"), _number(TensorProto, "data_type")
_TENSOR_RAW, _TENSOR_LOCATION = _number(TensorProto, "raw_data"), _number(TensorProto, "data_location")
_TENSOR_SEGMENT, _TENSOR_EXTERNAL = _number(TensorProto, "segment"), _number(TensorProto, "external_data")


#: A message's encoding as pieces: slices of the file and bytes made anew.
Chunks = list[Union[memoryview, bytes]]
#: Rewrites the message at [start, end) of the file, or leaves it (None).
Rewrite = Callable[[int, int], Optional[Chunks]]


class Malformed(Exception):
    """The bytes are not the protobuf encoding the walk expects."""


def read(path: str, weights: Weights) -> onnx.ModelProto:
    """The model in ``path`` with each large tensor stored in the file a stand-in for its bytes, recorded in
    ``weights``; raises :class:`Malformed` (nothing recorded) where the walk cannot take the file apart, and
    protobuf's own error where it cannot parse what the walk made."""
    spans: list[Span] = []
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        with memoryview(mapped) as view:
            chunks = _Walk(view, path, spans, lambda k: weights.key(len(weights.sources) + k)).model()
            slim = bytes(view) if chunks is None else b"".join(chunks)
            del chunks  # slices of the mapping: released before it closes
    proto = onnx.ModelProto()
    proto.ParseFromString(slim)
    weights.sources.extend(spans)
    return proto


class _Walk:
    """Rewrites the messages that hold weights; ``None`` from a method: the message is unchanged."""

    def __init__(self, buf: memoryview, path: str, spans: list[Span], key: Callable[[int], str]) -> None:
        self.buf, self.path, self.spans, self.key = buf, path, spans, key  # key: of the k-th span found

    def model(self) -> Chunks | None:
        return self._rewrite(0, len(self.buf), {_MODEL_GRAPH: lambda a, b: self._graph(a, b, 0)})

    def _graph(self, start: int, end: int, depth: int) -> Chunks | None:
        if depth > MAX_DEPTH:
            raise Malformed("bodies nested too deep")
        return self._rewrite(start, end, {_GRAPH_NODE: lambda a, b: self._node(a, b, depth),
                                          _GRAPH_INITIALIZER: self._tensor})

    def _node(self, start: int, end: int, depth: int) -> Chunks | None:
        op = next((bytes(self.buf[a:b]) for number, wire, a, b, _ in _fields(self.buf, start, end)
                   if number == _NODE_OP and wire == _LENGTH), b"")
        return self._rewrite(start, end, {_NODE_ATTRIBUTE: lambda a, b: self._attribute(a, b, depth, op)})

    def _attribute(self, start: int, end: int, depth: int, op: bytes) -> Chunks | None:
        name = next((bytes(self.buf[a:b]) for number, wire, a, b, _ in _fields(self.buf, start, end)
                     if number == _ATTR_NAME and wire == _LENGTH), b"")
        inner: dict[int, Rewrite] = {_ATTR_G: lambda a, b: self._graph(a, b, depth + 1),
                                     _ATTR_GRAPHS: lambda a, b: self._graph(a, b, depth + 1)}
        if (op, name) == (b"Constant", b"value"):
            inner[_ATTR_T] = self._tensor
        return self._rewrite(start, end, inner)

    def _tensor(self, start: int, end: int) -> Chunks | None:
        """The tensor without its raw data, marked, when it is large and holds its bytes in the file."""
        header, raw = TensorProto(), []
        for number, wire, a, b, _ in _fields(self.buf, start, end):
            if number == _TENSOR_RAW and wire == _LENGTH:
                raw.append((a, b))
            elif number in (_TENSOR_SEGMENT, _TENSOR_EXTERNAL) or number == _TENSOR_LOCATION and not (
                    wire == _VARINT and _varint(self.buf, a, b)[0] == TensorProto.DEFAULT):
                return None  # stored another way: read as written
            elif number == _TENSOR_TYPE and wire == _VARINT:
                header.data_type = _varint(self.buf, a, b)[0]
            elif number == _TENSOR_DIMS:
                packed = wire == _LENGTH
                header.dims.extend(_varints(self.buf, a, b) if packed else [_signed(_varint(self.buf, a, b)[0])])
        if len(raw) != 1 or not large(header):
            return None
        (a, b), = raw
        entry = onnx.StringStringEntryProto(key=KEY, value=self.key(len(self.spans))).SerializeToString()
        self.spans.append(Span(self.path, a, b - a))
        kept = [self.buf[f:e] for number, _, _, e, f in _fields(self.buf, start, end) if number != _TENSOR_RAW]
        return [*kept, _key(_TENSOR_EXTERNAL, _LENGTH), _encode(len(entry)), entry]

    def _rewrite(self, start: int, end: int, inner: dict[int, Rewrite]) -> Chunks | None:
        """The message's fields, each of ``inner``'s rewritten by its function (length-delimited ones only)."""
        out: Chunks = []
        changed = False
        for number, wire, a, b, field_start in _fields(self.buf, start, end):
            rewrite = inner.get(number) if wire == _LENGTH else None
            made = rewrite(a, b) if rewrite is not None else None
            if made is None:
                out.append(self.buf[field_start:b])
                continue
            changed = True
            out += [_key(number, _LENGTH), _encode(sum(len(c) for c in made)), *made]
        return out if changed else None


def _fields(buf: memoryview, start: int, end: int) -> Iterator[tuple[int, int, int, int, int]]:
    """Each field of the message in ``buf[start:end]``: (number, wire type, value start, value end, field start)."""
    at = start
    while at < end:
        field_start = at
        tag, at = _varint(buf, at, end)
        number, wire = tag >> 3, tag & 7
        if wire == _VARINT:
            value_end = _varint(buf, at, end)[1]
        elif wire == _FIXED64:
            value_end = at + 8
        elif wire == _LENGTH:
            length, at = _varint(buf, at, end)
            value_end = at + length
        elif wire == _FIXED32:
            value_end = at + 4
        else:
            raise Malformed(f"wire type {wire} at byte {field_start}")
        if number == 0 or value_end > end:
            raise Malformed(f"a field at byte {field_start} runs past its message")
        yield number, wire, at, value_end, field_start
        at = value_end


def _varint(buf: memoryview, at: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= end or shift > 63:
            raise Malformed(f"a varint at byte {at} runs past its message")
        byte = buf[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _varints(buf: memoryview, start: int, end: int) -> list[int]:
    """A packed repeated int64."""
    found, at = [], start
    while at < end:
        value, at = _varint(buf, at, end)
        found.append(_signed(value))
    return found


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _key(number: int, wire: int) -> bytes:
    return _encode(number << 3 | wire)


def _encode(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)

"""Weights beside the model, as ONNX's external data: for an export past protobuf's 2 GiB limit on one file
(a decoder's embedding and projections), or asked for (``loopc export --external-data``).

The export's initializers all live in its main graph (see :func:`loopc.backend.onnx.to_onnx`); each one of
at least :data:`MIN_BYTES` moves to one data file, at an offset aligned to :data:`ALIGNMENT` so that a
runtime may map it. Smaller ones (shapes, indices, scalars) stay in the model, where a reader's shape
inference sees them.
"""

from __future__ import annotations

from collections.abc import Iterator

import onnx
from onnx import numpy_helper

#: Tensors smaller than this stay in the model: onnx's own saver's default threshold.
MIN_BYTES = 1024
#: Where each tensor starts in the data file.
ALIGNMENT = 64


def move_weights(proto: onnx.ModelProto, location: str) -> list[bytes]:
    """Move the main graph's large initializers out of ``proto`` to a file named ``location`` (a name beside
    the model); the file's bytes, in pieces to be written in order."""
    pieces: list[bytes] = []
    offset = 0
    for tensor in _movable(proto.graph):
        data = tensor.raw_data if tensor.HasField("raw_data") else numpy_helper.to_array(tensor).tobytes()
        pad = -offset % ALIGNMENT
        if pad:
            pieces.append(bytes(pad))
            offset += pad
        onnx.external_data_helper.set_external_data(tensor, location, offset=offset, length=len(data))
        tensor.data_location = onnx.TensorProto.EXTERNAL
        _clear_data(tensor)
        pieces.append(data)
        offset += len(data)
    return pieces


def _movable(graph: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
    for tensor in graph.initializer:
        if tensor.data_type != onnx.TensorProto.STRING and tensor.data_location != onnx.TensorProto.EXTERNAL \
                and tensor.ByteSize() >= MIN_BYTES:
            yield tensor


def _clear_data(tensor: onnx.TensorProto) -> None:
    for name in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
        tensor.ClearField(name)

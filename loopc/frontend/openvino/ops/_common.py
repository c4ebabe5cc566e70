"""Operand helpers the op translators share.

OpenVINO lets axes, shapes and indices be i32 or i64, scalars or vectors; the ONNX ops they lower
to want int64 vectors, and TensorRT wants axes known when it builds. These helpers say so once.
"""

from __future__ import annotations

import numpy as np
from onnx import helper

from loopc.frontend.openvino.importer import Op, static_value
from loopc.ir import Node, Value

I64 = np.dtype(np.int64)


def const_ints(op: Op, k: int, role: str) -> list[int]:
    """Input ``k`` as a flat list of ints; it must be computable now (TensorRT needs it to build)."""
    array = op.require_constant(k, role)
    if array.dtype.kind not in "iub":
        raise op.error(f"input {k} ({role}) must be integers, not {array.dtype}")
    return [int(v) for v in np.asarray(array).reshape(-1)]


def i64(op: Op, value: Value, vector: bool = False) -> Value:
    """``value`` as int64 (a new constant when it is one, else a Cast); ``vector`` makes a scalar [1]."""
    known = static_value(value)
    if known is not None:
        array = np.asarray(known).astype(np.int64)
        return op.const(array.reshape(-1) if vector else array, np.int64)
    value = cast(op, value, I64)
    if vector and value.shape is not None and len(value.shape) == 0:
        value = op.op("Reshape", [value, op.const([1], np.int64)])
    return value


def axis(op: Op, value: int, rank: int, what: str = "axis") -> int:
    """``value`` made non-negative for a rank-``rank`` tensor; out of range is the model's error."""
    if not -rank <= value < max(rank, 1):
        raise op.error(f"{what} {value} is out of range for a rank-{rank} input")
    return value % max(rank, 1)


def axes(op: Op, values: list[int], rank: int, what: str = "axes") -> list[int]:
    normalized = [axis(op, v, rank, what) for v in values]
    if len(set(normalized)) != len(normalized):
        raise op.error(f"{what} {values} name an axis twice")
    return normalized


def dim(value: Value, k: int) -> int | None:
    """The static length of ``value`` along axis ``k``, or None when it is not known."""
    if value.shape is None:
        return None
    d = value.shape[k]
    return d if isinstance(d, int) else None


def cast(op: Op, value: Value, dtype: np.dtype) -> Value:
    """``value`` as ``dtype`` (no node when it already is), one Cast per value and type in a graph: a shape that
    several Broadcasts read (TensorFlow's frontend broadcasts every TensorList of a ``tf.scan`` to one target) stays
    one value, which is what lets ``broadcast-carries`` see each buffer's target as its own."""
    if value.dtype == dtype:
        return value
    to = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    for use in value.uses():
        user = use.user
        if isinstance(user, Node) and user.op == "Cast" and user.attrs.get("to") == to and user.graph is op.em.graph:
            return user.outputs[0]
    return op.op("Cast", [value], {"to": to})


def optional_input(op: Op, k: int) -> Value | None:
    return op.inputs[k] if k < len(op.inputs) else None


def output_used(op: Op, k: int) -> bool:
    """Whether any layer reads output ``k`` (an output nothing reads need not be computed)."""
    port = op.layer.outputs[k].id
    return any(e.from_layer == op.layer.id and e.from_port == port for e in op.net.edges)

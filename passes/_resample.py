"""A Resize axis as taps computed in the graph, for resizes whose lengths are only known at run time.

Resizing one axis from length n to length L reads, for output position j, a few input positions with
weights: ``out[j] = Σ_t w_t[j] · x[k_t[j]]``. When L is a value a loop computes in each trip, TensorRT
cannot build the resize layer there, but it can build the same sum as gathers at static-length index
vectors whose entries are computed: the positions asked for are static in number even though L is
not. The roundings and Keys' cubic kernel are ONNX's, from :mod:`loopc.semantics.resize` (the backend
and the simulator read them there too); the coordinate transformations are ONNX's in float32 with the
ratio n / L taken first, as PyTorch's ``interpolate`` does, and a one-long output read at position 0
(ONNX's text and onnxruntime; ONNX's reference takes -0.5 for pytorch_half_pixel). Indices outside
``[0, n)`` are clamped, which is ONNX's edge padding and PyTorch's clamped reads.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from onnx import helper

from loopc.ir.builder import Builder
from loopc.ir import Graph, Loop, Node, Value
from loopc.ir.target import per_trip_values
from loopc.passes._util import concat_piece
from loopc.semantics.attributes import attr, text
from loopc.semantics.resize import NEAREST, from_lengths, keys_far, keys_near

F32 = np.dtype(np.float32)
I64 = np.dtype(np.int64)

TRANSFORMS = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric")
MODES = ("nearest", "linear", "cubic")

Tap = tuple[Value, "Value | None"]


def resizes_changing_per_trip(graph: Graph) -> list[tuple[Graph, Node]]:
    """Every Resize in a loop body, at any depth, whose sizes change between trips (the ones TensorRT's
    builder cannot build), with its body; listed up front so that passes may edit."""
    found = []
    varying: dict[Loop, set[Value]] = {}
    for g, node in graph.find("Resize"):
        sizes = node.inputs[3] if len(node.inputs) > 3 else None
        loop = g.owner
        if sizes is not None and isinstance(loop, Loop):
            if loop not in varying:
                varying[loop] = per_trip_values(loop)
            if sizes in varying[loop]:
                found.append((g, node))
    return found


def emitter(scratch: Graph, label: str, origin: str, counter: itertools.count[int]) -> Builder:
    """A builder into ``scratch`` (nodes to move into place) naming results ``<label>_<op>__N`` from
    ``counter``."""
    return Builder(scratch, label=label, origin=origin, names=lambda base: f"{base}__{next(counter)}")


def tensor_type(dtype: np.dtype) -> int:
    """ONNX's number for ``dtype`` (a Cast's ``to``)."""
    return int(helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))


def unsupported(node: Node) -> str | None:
    """Why ``node``'s Resize cannot be taps computed here, or None when it can."""
    mode, transform = text(node, "mode"), text(node, "coordinate_transformation_mode")
    if mode not in MODES:
        return f"mode {mode!r}"
    if transform not in TRANSFORMS:
        return f"coordinate_transformation_mode {transform!r}"
    if mode == "nearest" and text(node, "nearest_mode") not in NEAREST:
        return f"nearest_mode {text(node, 'nearest_mode')!r}"
    if attr(node, "exclude_outside") or attr(node, "antialias") or node.attrs.get("axes"):
        return "exclude_outside, antialias or axes"
    if text(node, "keep_aspect_ratio_policy") != "stretch":
        return "keep_aspect_ratio_policy"
    return None


def axis_taps(em: Builder, node: Node, position: Value, n_in: Value, n_out: Value) -> list[Tap]:
    """The (index, weight) taps of output ``position`` (int64 vector) of one axis resized by ``node``
    from ``n_in`` to ``n_out`` (int64 scalars); a weight of None is 1 (nearest)."""
    mode = text(node, "mode")
    x = _source(em, text(node, "coordinate_transformation_mode"), position, n_in, n_out)
    last = em.op("Sub", [n_in, em.const(1, np.int64)], dtype=I64, shape=())
    if mode == "nearest":
        shift, rounding = NEAREST[text(node, "nearest_mode")]
        moved = em.op("Add", [x, em.const(shift, np.float32)], dtype=F32) if shift else x
        return [(_index(em, em.op(rounding, [moved], dtype=F32), 0, last), None)]
    if mode == "linear":  # past an edge both taps read the edge: clamped, its weight is exactly 1
        last_f = em.op("Cast", [last], {"to": tensor_type(F32)}, dtype=F32, shape=())
        x = em.op("Min", [em.op("Max", [x, em.const(0.0, np.float32)], dtype=F32), last_f], dtype=F32)
    floor = em.op("Floor", [x], dtype=F32)
    t = em.op("Sub", [x, floor], dtype=F32)
    if mode == "linear":
        one_minus_t = em.op("Sub", [em.const(1.0, np.float32), t], dtype=F32)
        return [(_index(em, floor, 0, last), one_minus_t), (_index(em, floor, 1, last), t)]
    a = float(attr(node, "cubic_coeff_a"))
    distances = [(-1, keys_far, 1.0, 1.0), (0, keys_near, 0.0, 1.0), (1, keys_near, 1.0, -1.0),
                 (2, keys_far, 2.0, -1.0)]
    taps: list[Tap] = []
    for offset, kernel, base, sign in distances:  # distance from the tap = base + sign · t
        d = em.op("Add", [em.const(base, np.float32), em.op("Mul", [t, em.const(sign, np.float32)], dtype=F32)],
                  dtype=F32)
        taps.append((_index(em, floor, offset, last), kernel(_Built(em, d), a).value))
    return taps


def resample(em: Builder, data: Value, axis: int, rank: int, taps: list[Tap]) -> Value:
    """``Σ_t w_t · Gather(data, k_t, axis)``, the weights broadcast along ``axis`` of ``data`` (rank ``rank``)."""
    assert data.dtype is not None
    total: Value | None = None
    dims = em.const([1] * axis + [-1] + [1] * (rank - axis - 1), np.int64)
    for index, weight in taps:
        picked = em.op("Gather", [data, index], {"axis": axis}, dtype=data.dtype)
        if weight is not None:
            if weight.dtype != data.dtype:
                weight = em.op("Cast", [weight], {"to": tensor_type(data.dtype)}, dtype=data.dtype)
            picked = em.op("Mul", [picked, em.op("Reshape", [weight, dims], dtype=weight.dtype)], dtype=data.dtype)
        total = picked if total is None else em.op("Add", [total, picked], dtype=data.dtype)
    assert total is not None
    return total


def size_entry(em: Builder, vector: Value | None, index: int) -> Value:
    """Entry ``index`` of a shape vector as an int64 scalar, read from the scalar the vector was built from
    where it was: a vector also lists Shapes of tensors a rewrite removes, which must not stay read."""
    assert vector is not None
    node = vector.producer
    found = concat_piece(node, index) if node is not None and node.op == "Concat" else None
    if found is not None:
        return size_entry(em, *found)
    if node is not None and node.op == "Unsqueeze" and node.inputs[0] is not None and node.inputs[0].shape == ():
        return node.inputs[0] if node.inputs[0].dtype == I64 else em.op(
            "Cast", [node.inputs[0]], {"to": tensor_type(I64)}, dtype=I64, shape=())
    if node is not None and node.op == "Cast" and node.outputs[0].dtype == I64:
        return size_entry(em, node.inputs[0], index)
    picked = em.op("Gather", [vector, em.const(index, np.int64)], {"axis": 0}, dtype=vector.dtype, shape=())
    return picked if vector.dtype == I64 else em.op("Cast", [picked], {"to": tensor_type(I64)}, dtype=I64, shape=())


def _source(em: Builder, transform: str, position: Value, n_in: Value, n_out: Value) -> Value:
    """The input coordinate (float32) each output position maps to (:func:`loopc.semantics.resize.from_lengths`)."""
    def floats(value: Value, shape: tuple[int, ...] | None = ()) -> _Built:
        return _Built(em, em.op("Cast", [value], {"to": tensor_type(F32)}, dtype=F32, shape=shape))

    def maximum(a: _Built, b: float) -> _Built:
        return _Built(em, em.op("Max", [a.value, em.const(b, np.float32)], dtype=F32))

    def zero_unless_longer(length: _Built, x: _Built) -> _Built:
        longer = em.op("Greater", [length.value, em.const(1.0, np.float32)], dtype=np.dtype(bool))
        return _Built(em, em.op("Where", [longer, x.value, em.const(0.0, np.float32)], dtype=F32))

    return from_lengths(transform, floats(position, None), floats(n_in), floats(n_out), maximum,
                        zero_unless_longer).value


def _index(em: Builder, floor: Value, offset: int, last: Value) -> Value:
    """``clamp(floor + offset, 0, last)`` as int64: the input position a tap reads (edges repeat)."""
    index = em.op("Cast", [floor], {"to": tensor_type(I64)}, dtype=I64)
    if offset:
        index = em.op("Add", [index, em.const(offset, np.int64)], dtype=I64)
    return em.op("Min", [em.op("Max", [index, em.const(0, np.int64)], dtype=I64), last], dtype=I64)


class _Built:
    """A float32 graph value whose ``+``, ``-``, ``*`` and ``/`` (with another or a number) build Add, Sub, Mul and Div
    nodes, so that formulas written for NumPy (Keys' kernel, the coordinate transforms) build the same arithmetic in
    the graph."""

    def __init__(self, em: Builder, value: Value) -> None:
        self.em, self.value = em, value

    def __add__(self, other: Any) -> _Built:
        return self._op("Add", other)

    def __sub__(self, other: Any) -> _Built:
        return self._op("Sub", other)

    def __mul__(self, other: Any) -> _Built:
        return self._op("Mul", other)

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> _Built:
        return self._op("Div", other)

    def _op(self, op: str, other: Any) -> _Built:
        operand = other.value if isinstance(other, _Built) else self.em.const(float(other), np.float32)
        return _Built(self.em, self.em.op(op, [self.value, operand], dtype=F32))

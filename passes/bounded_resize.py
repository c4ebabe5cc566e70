"""A Resize to a size a loop computes, read by shape-blind readers, is a canvas at the size's bound.

torchvision finds keypoints this way (``heatmaps_to_keypoints`` when exported): per detection, resize the
heatmaps to the roi's size (bicubic), take the ArgMax of each flattened map, turn it into x and y with the
map's width, and read the score there. Every trip resizes to another size, and TensorRT's builder cannot
build a loop layer whose shape changes between trips (``makeScopeNodesContiguous``). But the size has a
bound (the rois are clipped to the image: ``loopc.ir.bounds``), and the readers need only the resized
values at positions inside it: so the resize becomes taps (``passes._resample``) at every position up to
the bound, a canvas of static shape, and each reader is rewritten to read the canvas with the true size
beside it:

- ``Shape`` gives the true size (the computed one along the resized axes);
- ``Gather`` at an index along a resized axis reads the same entry of the canvas (a negative index counts
  from the true end); along another axis it gathers the canvas and the result is a canvas too;
- ``Slice`` of the other axes slices the canvas;
- ``ArgMax``/``ArgMin`` of a ``Reshape`` that flattens the trailing axes (the leading ones provably kept)
  takes the canvas with its padding at -inf/+inf, flattened the same way, and turns the flat index on the
  canvas into the flat index on the true size (ties go to the first, in the same row-major order).

A reader outside these leaves the graph as it was. The kept dims of the Resize (its size there is the
input's own dim) stay as they are.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from loopc.ir.builder import Builder
from loopc.ir import Graph, Node, Value, constant_value
from loopc.ir.bounds import Bounder
from loopc.passes._resample import (I64, axis_taps, emitter, resample, resizes_changing_per_trip, size_entry,
                                    tensor_type, unsupported)
from loopc.passes._util import same_dim, shape_entry_source
from loopc.passes.manager import PassResult

BOOL = np.dtype(bool)
#: Most positions a canvas may hold along its resized axes together (per slice of the others): 2048 x 2048.
MAX_CANVAS = 1 << 22
#: Makes an emitter whose nodes go just before the given node.
EmitBefore = Callable[[Node], Builder]


class BoundedResize:
    name = "bounded-resize"

    def __call__(self, graph: Graph) -> PassResult:
        rewritten = sum(_rewrite(g, node) for g, node in resizes_changing_per_trip(graph))
        return PassResult(graph, rewritten > 0, {"resizes": rewritten} if rewritten else {})


@dataclass
class _Canvas:
    """A tensor held at its bound: ``canvas`` agrees with it inside ``extents`` (true lengths by axis)."""

    canvas: Value
    extents: dict[int, Value]


class _Unsupported(Exception):
    """A reader this pass cannot rewrite: the Resize stays."""


def _rewrite(graph: Graph, resize: Node) -> int:
    """Hold ``resize``'s result as a canvas and rewrite its readers; 1 if done, 0 if left as it was."""
    sizes, data = resize.inputs[3], resize.inputs[0]
    if data is None or data.shape is None or sizes is None or unsupported(resize) is not None or sizes.shape != (
            len(data.shape),):
        return 0
    rank = len(data.shape)
    resized = [a for a in range(rank) if not same_dim(shape_entry_source(sizes, a), data, a)]
    bounds = Bounder().entries(sizes)
    if not resized or bounds is None or any(bounds[a] is None for a in resized):
        return 0
    lengths = {a: int(bounds[a] or 0) for a in resized}
    if math.prod(lengths.values()) > MAX_CANVAS:
        return 0
    counter = itertools.count()
    plan: list[tuple[Node, Graph]] = []  # new nodes to put before each node
    exits: dict[Value, Value] = {}  # a result no longer a canvas: what replaces it

    def emitter_before(anchor: Node) -> Builder:
        scratch = Graph(f"{resize.name}_canvas")
        plan.append((anchor, scratch))
        return emitter(scratch, f"{resize.name or 'resize'}_canvas", resize.origin, counter)

    try:
        em = emitter_before(resize)
        extents = {a: size_entry(em, sizes, a) for a in resized}
        canvas = data
        for a in resized:
            position = em.const(np.arange(lengths[a]), np.int64)
            canvas = resample(em, canvas, a, rank, axis_taps(em, resize, position, em.dim(data, a), extents[a]))
        _follow(resize.outputs[0], _Canvas(canvas, extents), emitter_before, exits)
    except _Unsupported:
        for _, scratch in reversed(plan):  # later nodes read earlier ones
            for node in reversed(list(scratch.nodes)):
                scratch.remove(node)
        return 0
    for anchor, scratch in plan:
        graph.insert_before(anchor, list(scratch.nodes))
    for old, new in exits.items():
        old.replace_all_uses_with(new)
    return 1


def _follow(value: Value, held: _Canvas, emitter: EmitBefore, exits: dict[Value, Value]) -> None:
    """Rewrite every reader of ``value`` (held as ``held``) to read the canvas."""
    for use in value.uses():
        reader = use.user
        if isinstance(reader, Graph) or use.slot != 0 or reader.inputs.count(value) != 1:
            raise _Unsupported
        rule = _RULES.get(reader.op)
        if rule is None:
            raise _Unsupported
        rule(reader, held, emitter(reader), emitter, exits)


def _shape(node: Node, held: _Canvas, em: Builder, emitter: EmitBefore, exits: dict[Value, Value]) -> None:
    if node.attrs.get("start") or node.attrs.get("end") is not None:
        raise _Unsupported
    rank = len(held.canvas.shape or ())
    axis0 = em.const([0], np.int64)
    parts = []
    for a in range(rank):
        if a in held.extents:
            parts.append(em.op("Unsqueeze", [held.extents[a], axis0], dtype=I64, shape=(1,)))
        else:
            parts.append(em.dim(held.canvas, a, keep_1d=True))
    exits[node.outputs[0]] = em.op("Concat", parts, {"axis": 0}, dtype=I64, shape=(rank,))


def _slice(node: Node, held: _Canvas, em: Builder, emitter: EmitBefore, exits: dict[Value, Value]) -> None:
    operands = node.inputs[1:]
    axes = constant_value(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] is not None else None
    rank = len(held.canvas.shape or ())
    if axes is None or any(v is not None and constant_value(v) is None for v in operands) or any(
            int(a) % rank in held.extents for a in np.asarray(axes).reshape(-1)):
        raise _Unsupported
    cut = em.op("Slice", [held.canvas, *operands], dtype=held.canvas.dtype)
    _follow(node.outputs[0], _Canvas(cut, held.extents), emitter, exits)


def _gather(node: Node, held: _Canvas, em: Builder, emitter: EmitBefore, exits: dict[Value, Value]) -> None:
    index = node.inputs[1]
    rank = len(held.canvas.shape or ())
    if index is None or index.shape is None or index.dtype is None:
        raise _Unsupported
    axis, width = int(node.attrs.get("axis", 0)) % rank, len(index.shape)
    if axis in held.extents:  # a negative index counts from the true end
        end = held.extents[axis]
        if end.dtype != index.dtype:
            end = em.op("Cast", [end], {"to": tensor_type(index.dtype)}, dtype=index.dtype, shape=())
        negative = em.op("Less", [index, em.const(0, index.dtype)], dtype=BOOL)
        index = em.op("Where", [negative, em.op("Add", [index, end], dtype=index.dtype), index], dtype=index.dtype)
    picked = em.op("Gather", [held.canvas, index], {"axis": axis}, dtype=held.canvas.dtype)
    extents = {(a if a < axis else a + width - 1): e for a, e in held.extents.items() if a != axis}
    if extents:
        _follow(node.outputs[0], _Canvas(picked, extents), emitter, exits)
    else:
        exits[node.outputs[0]] = picked


def _reshape(node: Node, held: _Canvas, em: Builder, emitter: EmitBefore, exits: dict[Value, Value]) -> None:
    """A flattening Reshape read only by one ArgMax/ArgMin of the flattened axis (see the module's docstring)."""
    target, flat = node.inputs[1], node.outputs[0]
    readers = [u.user for u in flat.uses()]
    data = node.inputs[0]
    if (target is None or target.shape is None or not isinstance(target.shape[0], int) or len(readers) != 1
            or isinstance(readers[0], Graph) or readers[0].op not in ("ArgMax", "ArgMin") or data is None):
        raise _Unsupported
    pick, kept, rank = readers[0], int(target.shape[0]) - 1, len(held.canvas.shape or ())
    if (kept < 0 or min(held.extents) < kept or pick.attrs.get("select_last_index", 0)
            or int(pick.attrs.get("axis", 0)) % (kept + 1) != kept
            or not all(same_dim(shape_entry_source(target, a), data, a) for a in range(kept))):
        raise _Unsupported
    fill = -np.inf if pick.op == "ArgMax" else np.inf
    canvas = _filled(em, held, rank, fill)
    leading = [em.dim(held.canvas, a, keep_1d=True) for a in range(kept)]
    flat_dims = em.op("Concat", [*leading, em.const([-1], np.int64)], {"axis": 0}, dtype=I64, shape=(kept + 1,))
    flattened = em.op("Reshape", [canvas, flat_dims], dtype=canvas.dtype)
    where = em.op(pick.op, [flattened], dict(pick.attrs), dtype=I64)
    rest, position, stride = where, None, None
    for a in reversed(range(kept, rank)):  # unravel on the canvas, ravel on the true size
        size = em.dim(held.canvas, a)
        coordinate = em.op("Mod", [rest, size], dtype=I64)
        rest = em.op("Div", [rest, size], dtype=I64)
        term = coordinate if stride is None else em.op("Mul", [coordinate, stride], dtype=I64)
        position = term if position is None else em.op("Add", [position, term], dtype=I64)
        true = held.extents.get(a, size)
        stride = true if stride is None else em.op("Mul", [stride, true], dtype=I64, shape=())
    assert position is not None
    exits[pick.outputs[0]] = position


def _filled(em: Builder, held: _Canvas, rank: int, fill: float) -> Value:
    """The canvas with ``fill`` outside the true size."""
    inside: Value | None = None
    for a, extent in held.extents.items():
        length = held.canvas.shape[a] if held.canvas.shape is not None else None
        if not isinstance(length, int):
            raise _Unsupported
        within = em.op("Less", [em.const(np.arange(length), np.int64), extent], dtype=BOOL, shape=(length,))
        within = em.op("Reshape", [within, em.const([1] * a + [-1] + [1] * (rank - a - 1), np.int64)], dtype=BOOL)
        inside = within if inside is None else em.op("And", [inside, within], dtype=BOOL)
    assert inside is not None and held.canvas.dtype is not None
    return em.op("Where", [inside, held.canvas, em.const(fill, held.canvas.dtype)], dtype=held.canvas.dtype)


_RULES = {"Shape": _shape, "Slice": _slice, "Gather": _gather, "Reshape": _reshape}

"""A Resize to a size a loop computes, cropped and pasted into a static frame, is gathers into the frame.

torchvision pastes each detection's mask into the image this way (``paste_masks_in_image`` when
exported): resize the mask to its box's size, crop the part inside the image with Slices whose bounds
are computed, pad it back to the image with Concats of computed-size zeros, cut the result to the
image's size. Every trip resizes to another size, and TensorRT's builder cannot build a loop layer whose
shape changes between trips (``makeScopeNodesContiguous``). But the chain ends at a static shape (the
frame), and each step maps frame positions to positions of the step before by adding a computed
offset, or picks a fill: so every frame position is a computed position of the resized tensor, or zero,
and the resize at those positions is taps of the resize's input (``passes._resample``). The frame is
then one gather-and-weigh per axis of the input, static in shape, with zero weights where the chain
pads.

The chain is walked from the Resize through ops each of whose readers it knows: Gather of a constant
index, Slice (step 1), Concat of the chain's tensor with zero fills (``ConstantOfShape``), Unsqueeze,
Cast and Identity; Shape reads of the chain's tensors are allowed (they size the fills and die with
them). The frame's static shape is what the model declares for it (for torchvision, the image every
mask is stacked into), so positions inside it are in range by the model's own validity: each Slice
and Concat is applied exactly as ONNX defines it, negative and clamped bounds included.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from loopc.ir.builder import Builder
from loopc.ir import Graph, Node, Value, constant_value
from loopc.passes._resample import (I64, axis_taps, emitter, resample, resizes_changing_per_trip, size_entry,
                                    tensor_type, unsupported)
from loopc.passes._why import declined
from loopc.passes.manager import PassResult
from loopc.semantics.attributes import attr

#: The steps from the Resize to the frame this pass maps positions through: its own rule table (each op has its
#: case in :func:`_step_ok` and :class:`_Paster`), not a fact about the ops.
_CHAIN_OPS = {"Gather", "Slice", "Concat", "Unsqueeze", "Cast", "Identity"}


class PastedResize:
    name = "pasted-resize"
    benefit = 70  # see loopc.passes.legalize

    def __call__(self, graph: Graph) -> PassResult:
        rewritten = 0
        for g, node in resizes_changing_per_trip(graph):
            chain = _chain(node)
            if chain is not None:
                _paste(g, chain)
                rewritten += 1
        return PassResult(graph, rewritten > 0, {"resizes": rewritten} if rewritten else {})


@dataclass
class _Chain:
    resize: Node
    steps: list[Node]  # from the Resize's reader to the frame's producer
    frame: Value


def _chain(resize: Node) -> _Chain | None:
    """The chain from ``resize`` (sized by a computed ``sizes``) to a static-shaped frame, or None."""
    sizes, data = resize.inputs[3], resize.inputs[0]
    if data is None or data.shape is None or sizes is None or sizes.shape != (len(data.shape),):
        return declined("its sizes are not one entry per axis of data of a known rank", at=resize)
    why = unsupported(resize)
    if why is not None:
        return declined(f"loopc cannot compute its {why} as taps", at=resize)
    value, steps = resize.outputs[0], []
    while not _static(value):
        readers = [u.user for u in value.uses()]
        if any(isinstance(r, Graph) for r in readers):
            return declined(f"{value.name!r}, of a size each trip computes, is a result of the body", at=resize)
        onward = [r for r in readers if isinstance(r, Node) and r.op != "Shape"]
        if len(onward) != 1:
            return declined(f"{value.name!r} is read by {len(onward)} nodes besides Shapes, not one chain to a "
                            "frame of a static shape", at=resize)
        if not _step_ok(onward[0], value):
            return declined(f"{onward[0].describe()} is not a step it maps positions through (Gather of a "
                            "constant index, Slice of step 1, Concat with zero fills, Unsqueeze, Cast, Identity)",
                            at=resize)
        steps.append(onward[0])
        value = onward[0].outputs[0]
    return _Chain(resize, steps, value) if steps else declined("its result already has a static shape", at=resize)


def _static(value: Value) -> bool:
    return value.shape is not None and all(isinstance(d, int) for d in value.shape)


def _step_ok(node: Node, value: Value) -> bool:
    """Whether ``node`` reading the chain's ``value`` is a step this pass can map positions through."""
    if node.op not in _CHAIN_OPS or value.shape is None:
        return False
    if node.op == "Concat":
        others = [v for v in node.inputs if v is not value]
        return node.inputs.count(value) == 1 and all(_zero_fill(v) for v in others)
    if node.inputs[0] is not value or value in node.inputs[1:]:
        return False
    if node.op == "Gather":
        index = constant_value(node.inputs[1])
        return index is not None and np.ndim(index) == 0
    if node.op == "Slice":
        axes = constant_value(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] is not None else None
        steps = constant_value(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else None
        starts = node.inputs[1]
        return (axes is not None and starts is not None and starts.shape == (np.size(axes),)
                and (steps is None or bool(np.all(np.asarray(steps) == 1))))
    if node.op == "Unsqueeze":
        return len(node.inputs) > 1 and constant_value(node.inputs[1]) is not None
    return True


def _zero_fill(value: Value | None) -> bool:
    node = value.producer if value is not None else None
    if node is None or node.op != "ConstantOfShape" or node.inputs[0] is None or node.inputs[0].shape is None:
        return False
    fill = node.attrs.get("value")
    return fill is None or not np.any(np.asarray(fill))


@dataclass
class _Axis:
    """Along one axis of the tensor being walked: the position each frame position reads (int64 vector; one
    entry for an axis a Gather fixed), and where the chain pads instead (``keep`` false)."""

    position: Value
    keep: list[Value] = field(default_factory=list)


class _Paster:
    """Maps frame positions back through the chain; the chain's lengths come from its own arithmetic."""

    def __init__(self, em: Builder, chain: _Chain) -> None:
        self.em = em
        self.chain = chain
        self._extents: dict[tuple[Value, int], Value] = {}
        self._bounds: dict[Node, dict[int, tuple[Value, Value]]] = {}

    def extent(self, value: Value, axis: int) -> Value:
        """``value``'s length along ``axis`` (int64 scalar) from the chain's arithmetic, never from a Shape of
        a tensor whose shape changes between trips."""
        key = (value, axis)
        if key not in self._extents:
            self._extents[key] = self._extent(value, axis)
        return self._extents[key]

    def _extent(self, value: Value, axis: int) -> Value:
        em, node = self.em, value.producer
        assert value.shape is not None and node is not None
        static = value.shape[axis]
        if isinstance(static, int):
            return em.const(static, np.int64)
        if node is self.chain.resize:
            return self.entry(node.inputs[3], axis)
        if node.op == "ConstantOfShape":
            return self.entry(node.inputs[0], axis)
        if node.op in ("Cast", "Identity"):
            return self.extent(_in(node), axis)
        if node.op == "Gather":
            dropped = _axis(node, _in(node))
            return self.extent(_in(node), axis if axis < dropped else axis + 1)
        if node.op == "Unsqueeze":
            added = _unsqueezed(node)
            return self.extent(_in(node), axis - sum(1 for a in added if a < axis))
        if node.op == "Concat":
            along = _axis(node, value)
            if axis != along:
                return self.extent(_data_piece(node), axis)
            total = self.extent(_in(node), axis)
            for piece in node.inputs[1:]:
                assert piece is not None
                total = em.op("Add", [total, self.extent(piece, axis)], dtype=I64, shape=())
            return total
        bounds = self.slice_bounds(node)
        if axis not in bounds:
            return self.extent(_in(node), axis)
        start, end = bounds[axis]
        return em.op("Max", [em.op("Sub", [end, start], dtype=I64, shape=()), em.const(0, np.int64)], dtype=I64,
                     shape=())

    def entry(self, vector: Value | None, index: int) -> Value:
        return size_entry(self.em, vector, index)

    def slice_bounds(self, node: Node) -> dict[int, tuple[Value, Value]]:
        """Per sliced axis, ONNX's effective (start, end): a negative bound counts from the end, then both
        are clamped to ``[0, length]``."""
        if node not in self._bounds:
            self._bounds[node] = self._slice_bounds(node)
        return self._bounds[node]

    def _slice_bounds(self, node: Node) -> dict[int, tuple[Value, Value]]:
        data = _in(node)
        assert data.shape is not None
        axes = [int(a) % len(data.shape) for a in np.asarray(constant_value(node.inputs[3])).reshape(-1)]
        bounds = {}
        for k, axis in enumerate(axes):
            length = self.extent(data, axis)
            start, end = (self._clamped(self.entry(node.inputs[slot], k), length) for slot in (1, 2))
            bounds[axis] = (start, end)
        return bounds

    def _clamped(self, bound: Value, length: Value) -> Value:
        em = self.em
        negative = em.op("Less", [bound, em.const(0, np.int64)], dtype=np.dtype(bool), shape=())
        counted = em.op("Where", [negative, em.op("Add", [bound, length], dtype=I64, shape=()), bound], dtype=I64,
                        shape=())
        return em.op("Min", [em.op("Max", [counted, em.const(0, np.int64)], dtype=I64, shape=()), length],
                     dtype=I64, shape=())

    def back_through(self, node: Node, axes: list[_Axis]) -> list[_Axis]:
        """The frame positions along the axes of ``node``'s chain input, from those along its output's."""
        em = self.em
        if node.op in ("Cast", "Identity"):
            return axes
        if node.op == "Unsqueeze":
            added = set(_unsqueezed(node))
            return [a for k, a in enumerate(axes) if k not in added]
        if node.op == "Gather":
            data = _in(node)
            dropped = _axis(node, data)
            index = int(np.asarray(constant_value(node.inputs[1])))
            fixed = em.const([index], np.int64)
            if index < 0:
                fixed = em.op("Add", [fixed, self.extent(data, dropped)], dtype=I64, shape=(1,))
            return axes[:dropped] + [_Axis(fixed)] + axes[dropped:]
        if node.op == "Concat":
            along = _axis(node, node.outputs[0])
            data = _data_piece(node)
            before = em.const(0, np.int64)
            for piece in node.inputs[:node.inputs.index(data)]:
                assert piece is not None
                before = em.op("Add", [before, self.extent(piece, along)], dtype=I64, shape=())
            axis = axes[along]
            after = em.op("Add", [before, self.extent(data, along)], dtype=I64, shape=())
            inside = em.op("And", [em.op("GreaterOrEqual", [axis.position, before], dtype=np.dtype(bool)),
                                   em.op("Less", [axis.position, after], dtype=np.dtype(bool))], dtype=np.dtype(bool))
            moved = em.op("Sub", [axis.position, before], dtype=I64)
            return axes[:along] + [_Axis(moved, axis.keep + [inside])] + axes[along + 1:]
        out = list(axes)
        for k, (start, _) in self.slice_bounds(node).items():
            out[k] = _Axis(em.op("Add", [axes[k].position, start], dtype=I64), axes[k].keep)
        return out


def _paste(graph: Graph, chain: _Chain) -> None:
    """Compute ``chain.frame`` from the Resize's input by gathers, before the frame's producer."""
    scratch = Graph(f"{chain.resize.name}_frame")
    em = emitter(scratch, f"{chain.resize.name or 'resize'}_frame", chain.resize.origin, itertools.count())
    paster = _Paster(em, chain)
    frame = chain.frame
    assert frame.shape is not None and frame.dtype is not None
    axes = [_Axis(em.const(np.arange(d), np.int64)) for d in frame.shape]  # type: ignore[arg-type]
    for node in reversed(chain.steps):
        axes = paster.back_through(node, axes)
    resize, data = chain.resize, chain.resize.inputs[0]
    assert data is not None and data.shape is not None
    result = data
    for k, axis in enumerate(axes):
        n_in = em.dim(data, k)
        taps = axis_taps(em, resize, axis.position, n_in, paster.entry(resize.inputs[3], k))
        if axis.keep:
            taps = [(index, _kept(em, weight, axis.keep)) for index, weight in taps]
        result = resample(em, result, k, len(data.shape), taps)
    for node in chain.steps:  # Casts after the Resize, in order (a zero fill casts to zero)
        if node.op == "Cast":
            result = em.op("Cast", [result], dict(node.attrs), dtype=node.outputs[0].dtype)
    pasted = em.op("Reshape", [result, em.const(list(frame.shape), np.int64)], dtype=frame.dtype,
                   shape=frame.shape, name=f"{frame.name}_pasted")
    graph.insert_before(chain.steps[-1], list(scratch.nodes))
    frame.replace_all_uses_with(pasted)


def _kept(em: Builder, weight: Value | None, keep: list[Value]) -> Value:
    """``weight`` zeroed where the chain pads (a None weight is 1)."""
    inside = keep[0]
    for more in keep[1:]:
        inside = em.op("And", [inside, more], dtype=np.dtype(bool))
    mask = em.op("Cast", [inside], {"to": tensor_type(np.dtype(np.float32))}, dtype=np.dtype(np.float32))
    return mask if weight is None else em.op("Mul", [weight, mask], dtype=np.dtype(np.float32))


def _in(node: Node) -> Value:
    value = node.inputs[0]
    assert value is not None
    return value


def _axis(node: Node, value: Value) -> int:
    assert value.shape is not None
    return int(attr(node, "axis")) % len(value.shape)


def _unsqueezed(node: Node) -> list[int]:
    """The axes an Unsqueeze adds, in its result's numbering."""
    axes = np.asarray(constant_value(node.inputs[1])).reshape(-1)
    rank = len(_in(node).shape or ()) + axes.size
    return sorted(int(a) % rank for a in axes)


def _data_piece(node: Node) -> Value:
    """The one operand of a chain Concat that is not a zero fill."""
    return next(v for v in node.inputs if v is not None and not _zero_fill(v))

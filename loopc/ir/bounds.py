"""Upper bounds of dims whose size the data decides (NonZero, NonMaxSuppression, and what follows them).

A TensorRT loop cannot hold a tensor whose shape is data-dependent, but such a tensor usually has a
static ceiling: NonZero of a [160] mask has at most 160 positions, a gather by those positions as many
rows, a slice ``[:20]`` at most 20. Padding to that ceiling gives the loop a static shape. Each rule
below bounds an op's result dims by its operands' bounds and constant operands; an op without a rule
gives no bound, so a bound is only ever one the ONNX semantics guarantee.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from loopc.ir.core import Node, Value, constant_value

Bounds = tuple[int | None, ...]

#: Ops whose result has their first operand's shape.
SAME_SHAPE = {"Abs", "Cast", "Ceil", "Clip", "Erf", "Exp", "Floor", "Identity", "IsInf", "IsNaN", "LeakyRelu",
              "Log", "LogSoftmax", "Neg", "Not", "Reciprocal", "Relu", "Round", "Sigmoid", "Sign", "Softmax",
              "Sqrt", "Tanh"}
#: Ops whose result is their operands broadcast NumPy-style.
BROADCAST = {"Add", "And", "Div", "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "Max", "Min", "Mod",
             "Mul", "Or", "Pow", "Sub", "Where", "Xor"}


def dim_bound(value: Value, axis: int) -> int | None:
    """A size that ``value``'s dim ``axis`` never exceeds, or None when none is known."""
    bounds = Bounder().of(value)
    return bounds[axis] if bounds is not None and -len(bounds) <= axis < len(bounds) else None


class Bounder:
    """Bounds of values, each computed once (a graph's values share their producers' chains)."""

    def __init__(self) -> None:
        self._seen: dict[Value, Bounds | None] = {}

    def of(self, value: Value | None) -> Bounds | None:
        """Per-dim upper bounds of ``value`` (None for a dim with none), or None when its rank is unknown."""
        if value is None or value.shape is None:
            return None
        if value in self._seen:
            return self._seen[value]
        self._seen[value] = None  # a cycle (none in SSA, but be safe) bounds nothing
        known = tuple(d if isinstance(d, int) else None for d in value.shape)
        found: Bounds | None = None
        if None in known and value.producer is not None:
            rule = RULES.get(value.producer.op)
            if value.producer.op in SAME_SHAPE:
                rule = _same_shape
            elif value.producer.op in BROADCAST:
                rule = _broadcast
            try:
                found = rule(self, value.producer, value.producer.outputs.index(value)) if rule else None
            except (IndexError, TypeError, ValueError, RecursionError):  # malformed operands: no bound, not an error here
                found = None
        result = known if found is None or len(found) != len(known) else tuple(
            k if k is not None else f for k, f in zip(known, found))
        self._seen[value] = result
        return result

    def entries(self, value: Value | None) -> Bounds | None:
        """Upper bounds of a small 1-D integer ``value``'s entries (a shape being computed), or None."""
        if value is None:
            return None
        array = constant_value(value)
        if array is not None:
            return tuple(int(x) for x in np.asarray(array).reshape(-1)) if np.asarray(array).ndim <= 1 else None
        node = value.producer
        if node is None:
            return None
        if node.op == "Shape" and not node.attrs.get("start") and node.attrs.get("end") is None:
            return self.of(node.inputs[0])
        if node.op in ("Cast", "Identity", "Squeeze", "Unsqueeze", "Reshape", "Flatten"):
            return self.entries(node.inputs[0])  # the same entries in the same order
        if node.op == "ReduceMin" and not node.attrs.get("axes") and len(node.inputs) == 1:
            known = [e for e in self.entries(node.inputs[0]) or () if e is not None]
            return (min(known),) if known else None  # a minimum is at most any one entry
        if node.op in ("Min", "Max"):
            parts = [self.entries(v) for v in node.inputs]
            if len(parts) == 2 and all(p is not None and len(p) == 1 for p in parts):
                a, b = parts[0][0], parts[1][0]  # type: ignore[index]
                if node.op == "Min":
                    return (a if b is None else b if a is None else min(a, b),)
                return (None if a is None or b is None else max(a, b),)
            return None
        if node.op == "Concat":
            parts = [self.entries(v) for v in node.inputs]
            return None if any(p is None for p in parts) else tuple(x for p in parts if p is not None for x in p)
        if node.op == "Gather":
            source, picks = self.entries(node.inputs[0]), _ints(node.inputs[1])
            return None if source is None or picks is None else tuple(source[i] for i in picks)
        return None

    def numel(self, value: Value | None) -> int | None:
        """A bound of ``value``'s element count."""
        bounds = self.of(value)
        if bounds is None:
            return None
        if 0 in bounds:
            return 0
        if None in bounds:
            return _reshaped_numel(self, value)
        return math.prod(b for b in bounds if b is not None)


def _reshaped_numel(bounder: Bounder, value: Value | None) -> int | None:
    """A reshape keeps the element count: bound it by its input's."""
    node = value.producer if value is not None else None
    if node is not None and node.op in {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose"} | SAME_SHAPE:
        return bounder.numel(node.inputs[0])
    return None


def _ints(value: Value | None) -> list[int] | None:
    array = constant_value(value) if value is not None else None
    return None if array is None else [int(x) for x in np.asarray(array).reshape(-1)]


def _same_shape(b: Bounder, node: Node, k: int) -> Bounds | None:
    return b.of(node.inputs[0])


def _broadcast(b: Bounder, node: Node, k: int) -> Bounds | None:
    operands = [b.of(v) for v in node.inputs if v is not None]
    if any(o is None for o in operands):
        return None
    rank = max(len(o) for o in operands if o is not None)
    out: list[int | None] = []
    for axis in range(rank):
        dims = [o[axis - rank + len(o)] for o in operands if o is not None and axis - rank + len(o) >= 0]
        out.append(None if None in dims else max(d for d in dims if d is not None))
    return tuple(out)


def _nonzero(b: Bounder, node: Node, k: int) -> Bounds | None:
    source = node.inputs[0]
    return None if source is None or source.shape is None else (len(source.shape), b.numel(source))


def _nms(b: Bounder, node: Node, k: int) -> Bounds | None:
    boxes, scores = b.of(node.inputs[0]), b.of(node.inputs[1])
    if boxes is None or scores is None or None in (scores[0], scores[1], boxes[1]):
        return None
    return (scores[0] * scores[1] * boxes[1], 3)  # type: ignore[operator]


def _gather(b: Bounder, node: Node, k: int) -> Bounds | None:
    data, indices = b.of(node.inputs[0]), b.of(node.inputs[1])
    if data is None or indices is None:
        return None
    axis = int(node.attrs.get("axis", 0)) % len(data)
    return data[:axis] + indices + data[axis + 1:]


def _gather_nd(b: Bounder, node: Node, k: int) -> Bounds | None:
    """indices' leading dims, then data's dims past the batch dims and the indexed ones."""
    data, indices = b.of(node.inputs[0]), b.of(node.inputs[1])
    if data is None or indices is None or indices[-1] is None:
        return None
    return indices[:-1] + data[int(node.attrs.get("batch_dims", 0)) + indices[-1]:]


def _slice(b: Bounder, node: Node, k: int) -> Bounds | None:
    data = b.of(node.inputs[0])
    if data is None:
        return None
    starts, ends = _ints(node.inputs[1]), _ints(node.inputs[2])
    axes = _ints(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] is not None else None
    steps = _ints(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else None
    out = list(data)
    if starts is None or ends is None:
        return tuple(out)  # a slice is never longer than its input
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps if steps is not None else [1] * len(starts)
    for axis, start, end, step in zip(axes, starts, ends, steps):
        if step == 1 and 0 <= start <= end:  # forward from a non-negative start: at most end - start
            limit = end - start
            out[axis % len(out)] = limit if out[axis % len(out)] is None else min(limit, out[axis % len(out)])  # type: ignore[type-var]
    return tuple(out)


def _squeeze(b: Bounder, node: Node, k: int) -> Bounds | None:
    data = b.of(node.inputs[0])
    axes = _ints(node.inputs[1]) if len(node.inputs) > 1 else None
    if data is None or axes is None:
        return None
    drop = {a % len(data) for a in axes}
    return tuple(d for a, d in enumerate(data) if a not in drop)


def _unsqueeze(b: Bounder, node: Node, k: int) -> Bounds | None:
    data = b.of(node.inputs[0])
    axes = _ints(node.inputs[1]) if len(node.inputs) > 1 else None
    if data is None or axes is None:
        return None
    rank = len(data) + len(axes)
    out: list[int | None] = list(data)
    for a in sorted(x % rank for x in axes):
        out.insert(a, 1)
    return tuple(out)


def _transpose(b: Bounder, node: Node, k: int) -> Bounds | None:
    data = b.of(node.inputs[0])
    if data is None:
        return None
    perm = node.attrs.get("perm") or list(range(len(data)))[::-1]
    return tuple(data[int(p)] for p in perm)


def _concat(b: Bounder, node: Node, k: int) -> Bounds | None:
    parts = [b.of(v) for v in node.inputs if v is not None]
    if not parts or any(p is None for p in parts):
        return None
    axis = int(node.attrs["axis"]) % len(parts[0])  # type: ignore[arg-type]
    out = list(_broadcast_like(parts))
    sizes = [p[axis] for p in parts if p is not None]
    out[axis] = None if None in sizes else sum(s for s in sizes if s is not None)
    return tuple(out)


def _broadcast_like(parts: Sequence[Bounds | None]) -> Bounds:
    """Dims that must agree: any operand's known dim bounds them."""
    rank = len(parts[0] or ())
    return tuple(next((p[a] for p in parts if p is not None and p[a] is not None), None) for a in range(rank))


def _split(b: Bounder, node: Node, k: int) -> Bounds | None:
    data = b.of(node.inputs[0])
    return data  # each piece is at most the whole along the split axis, and equal elsewhere


def _topk(b: Bounder, node: Node, k: int) -> Bounds | None:
    """k along the axis (torchvision's min(candidates, n) bounded by the constant), the input's elsewhere."""
    data = b.of(node.inputs[0])
    count = b.entries(node.inputs[1])
    if data is None:
        return None
    out = list(data)
    if count is not None and len(count) == 1 and count[0] is not None:
        axis = int(node.attrs.get("axis", -1)) % len(out)
        out[axis] = count[0] if out[axis] is None else min(count[0], out[axis])  # type: ignore[type-var]
    return tuple(out)


def _reshape(b: Bounder, node: Node, k: int) -> Bounds | None:
    """Per target entry: a -1 is the element count over the other dims (ONNX requires their product to be
    positive); a computed entry is at most its bound, or the input's dim when it is 0 (which copies it); with
    the target unknown, a dim whose others are all static and positive is the element count over them."""
    total = b.numel(node.inputs[0])
    data, out_shape = b.of(node.inputs[0]), node.outputs[0].shape
    if out_shape is None:
        return None
    target = _ints(node.inputs[1])
    entries = b.entries(node.inputs[1])
    out: list[int | None] = []
    for axis, d in enumerate(out_shape):
        others = [x for a, x in enumerate(out_shape) if a != axis]
        static_others = math.prod(x for x in others if isinstance(x, int) and x > 0)
        if isinstance(d, int):
            out.append(d)
        elif target is not None and target[axis] == -1:
            out.append(None if total is None else total // static_others)
        elif (entries is not None and len(entries) == len(out_shape) and (entry := entries[axis]) is not None
              and entry >= 0):  # a -1 entry is inferred from the element count: the next rule bounds it
            beyond = data is not None and axis >= len(data)  # no input dim to copy: the entry is not 0
            copied = data[axis] if data is not None and not beyond else None
            allow_zero = bool(node.attrs.get("allowzero", 0)) or beyond
            out.append(entry if allow_zero else None if copied is None else max(entry, copied))
        elif total is not None and all(isinstance(x, int) and x > 0 for x in others):
            out.append(total // static_others)
        else:
            out.append(None)
    return tuple(out)


def _flatten(b: Bounder, node: Node, k: int) -> Bounds | None:
    data = b.of(node.inputs[0])
    if data is None:
        return None
    axis = int(node.attrs.get("axis", 1)) % (len(data) + 1)
    head, tail = data[:axis], data[axis:]
    return (None if None in head else math.prod(h for h in head if h is not None),
            None if None in tail else math.prod(t for t in tail if t is not None))


def _first_dim(b: Bounder, node: Node, k: int) -> Bounds | None:
    """Ops that keep their first operand's leading dim (batch, or Gemm's rows) and have static others."""
    data = b.of(node.inputs[0])
    out = node.outputs[k].shape
    if data is None or out is None or int(node.attrs.get("transA", 0)):
        return None
    return (data[0],) + tuple(d if isinstance(d, int) else None for d in out[1:])


def _roi_align(b: Bounder, node: Node, k: int) -> Bounds | None:
    rois = b.of(node.inputs[1])
    out = node.outputs[0].shape
    if rois is None or out is None:
        return None
    return (rois[0],) + tuple(d if isinstance(d, int) else None for d in out[1:])


def _constant_of_shape(b: Bounder, node: Node, k: int) -> Bounds | None:
    return b.entries(node.inputs[0])


def _expand(b: Bounder, node: Node, k: int) -> Bounds | None:
    """Each result dim is the operand's or the shape's (the other being 1): at most the larger bound."""
    data, shape = b.of(node.inputs[0]), b.entries(node.inputs[1])
    if data is None or shape is None:
        return None
    rank = max(len(data), len(shape))
    padded = (1,) * (rank - len(data)) + data, (1,) * (rank - len(shape)) + shape
    return tuple(None if None in (x, y) else max(x, y) for x, y in zip(*padded))  # type: ignore[type-var]


def _scatter(b: Bounder, node: Node, k: int) -> Bounds | None:
    return b.of(node.inputs[0])


RULES: dict[str, Callable[[Bounder, Node, int], Bounds | None]] = {
    "NonZero": _nonzero, "NonMaxSuppression": _nms, "Gather": _gather, "GatherND": _gather_nd, "Slice": _slice, "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze, "Transpose": _transpose, "Concat": _concat, "Split": _split, "TopK": _topk,
    "Reshape": _reshape, "Flatten": _flatten, "Gemm": _first_dim, "Conv": _first_dim,
    "ConvTranspose": _first_dim, "MaxPool": _first_dim, "AveragePool": _first_dim, "RoiAlign": _roi_align,
    "ConstantOfShape": _constant_of_shape, "Expand": _expand, "ScatterElements": _scatter, "ScatterND": _scatter,
}

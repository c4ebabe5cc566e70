"""Upper bounds of dims whose size the data decides (NonZero, NonMaxSuppression, and what follows them).

A TensorRT loop cannot hold a tensor whose shape is data-dependent, but such a tensor usually has a
static ceiling: NonZero of a [160] mask has at most 160 positions, a gather by those positions as many
rows, a slice ``[:20]`` at most 20. Padding to that ceiling gives the loop a static shape. Each rule
below bounds an op's result dims by its operands' bounds and constant operands; an op without a rule
gives no bound, so a bound is only ever one the ONNX semantics guarantee.

The same holds for the ranges of elements (:meth:`Bounder.interval`): a Resize size computed from a box's
clipped height is at most the image's height. Ends are computed exactly (fractions, Python ints) and rounded
outward to the result's float type; a rule that cannot rule out an integer's wrapping knows nothing. NaN is
left out: a run that makes one promises no size.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np

from loopc.ir.core import Graph, Node, Value, constant_value
from loopc.ir.loop import Loop, Recurrence
from loopc.ir.ops import traits
from loopc.loop_rules import MAX_TRIPS
from loopc.semantics.attributes import attr

Bounds = tuple[int | None, ...]
#: A closed interval ``(lo, hi)``; an end may be infinite. Integer values keep int ends (exact past 2**53).
Interval = tuple[float, float]


def dim_bound(value: Value, axis: int) -> int | None:
    """A size that ``value``'s dim ``axis`` never exceeds, or None when none is known."""
    bounds = Bounder().of(value)
    return bounds[axis] if bounds is not None and -len(bounds) <= axis < len(bounds) else None


class Bounder:
    """Bounds of values, each computed once (a graph's values share their producers' chains)."""

    def __init__(self, assumed: dict[Value, Interval | None] | None = None) -> None:
        self._seen: dict[Value, Bounds | None] = {}
        #: Ranges taken as given: loop states while their invariance is being checked (see ``_state``).
        self._assumed = dict(assumed or {})
        self._ranges: dict[Value, Interval | None] = dict(self._assumed)

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
            facts = traits(value.producer.op)
            rule = RULES.get(value.producer.op)
            if facts.same_shape:
                rule = _same_shape
            elif facts.broadcast == "multi":
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
        """Upper bounds of a small 1-D integer ``value``'s entries (a shape being computed), or None.

        The rules below follow the entries one by one; when they know nothing and the value is never negative,
        every entry is at most the top of its range (a box's clipped height, cast to a Resize size)."""
        found = self._entries(value)
        return found if found is not None else self._entries_by_range(value)

    def _entries_by_range(self, value: Value | None) -> Bounds | None:
        if value is None or value.shape is None or len(value.shape) > 1 or value.dtype is None:
            return None
        count = value.shape[0] if value.shape else 1
        if not isinstance(count, int) or value.dtype.kind not in "iuf":
            return None
        span = self.interval(value)  # rounded up: an integer bound of a float entry, and of a Cast's truncation
        if span is None or span[0] < 0 or not _finite(span[1]):  # a -1 would be Reshape's, bounding nothing
            return None
        return (math.ceil(span[1]),) * count

    def _entries(self, value: Value | None) -> Bounds | None:
        if value is None:
            return None
        array = constant_value(value)
        if array is not None:
            return tuple(int(x) for x in np.asarray(array).reshape(-1)) if np.asarray(array).ndim <= 1 else None
        node = value.producer
        if node is None:
            return None
        if node.op == "Shape":  # ONNX clamps start and end as a Python slice does
            dims = self.of(node.inputs[0])
            end = node.attrs.get("end")
            return None if dims is None else dims[int(attr(node, "start")):None if end is None else int(end)]
        if traits(node.op).reshapes or node.op == "Cast":
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
        if node.op == "Concat":  # a part of known length but unknown entries leaves those entries unbounded
            parts = [self.entries(v) if v is not None else None for v in node.inputs]
            parts = [p if p is not None or v is None or v.shape is None or len(v.shape) != 1
                     or not isinstance(v.shape[0], int) else (None,) * v.shape[0] for p, v in zip(parts, node.inputs)]
            return None if any(p is None for p in parts) else tuple(x for p in parts if p is not None for x in p)
        if node.op == "Gather":
            source, picks = self.entries(node.inputs[0]), _ints(node.inputs[1])
            return None if source is None or picks is None else tuple(source[i] for i in picks)
        return None

    def interval(self, value: Value | None) -> Interval | None:
        """A closed interval holding every element of ``value`` in any run, or None when none is known.

        NaN belongs to no interval: the runs meant are those in which no NaN arises (a clipped NaN box is no
        size, and a NaN cast to an integer is undefined). So an operand with no known range is any number."""
        if value is None:
            return None
        if value in self._ranges:
            return self._ranges[value]
        self._ranges[value] = None  # a cycle bounds nothing
        found: Interval | None = None
        array = constant_value(value)
        node = value.producer
        try:
            if array is not None:
                found = _array_interval(np.asarray(array))
            elif node is None:
                found = _parameter(self, value)
            elif traits(node.op).copies:
                found = self.interval(node.inputs[0])
            elif node.op in RANGE_RULES:
                found = RANGE_RULES[node.op](self, node, node.outputs.index(value))
        except (ArithmeticError, IndexError, KeyError, TypeError, ValueError, RecursionError):  # malformed: unknown
            found = None
        if found == ANY:
            found = None  # says nothing
        self._ranges[value] = found
        return found

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
    facts = traits(node.op) if node is not None else None
    if node is not None and facts is not None and (facts.reshapes or facts.permutes or facts.same_shape):
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
    axis = int(attr(node, "axis")) % len(data)
    return data[:axis] + indices + data[axis + 1:]


def _gather_nd(b: Bounder, node: Node, k: int) -> Bounds | None:
    """indices' leading dims, then data's dims past the batch dims and the indexed ones."""
    data, indices = b.of(node.inputs[0]), b.of(node.inputs[1])
    if data is None or indices is None or indices[-1] is None:
        return None
    return indices[:-1] + data[int(attr(node, "batch_dims")) + indices[-1]:]


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
        axis = int(attr(node, "axis")) % len(out)
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
            allow_zero = bool(attr(node, "allowzero")) or beyond
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
    axis = int(attr(node, "axis")) % (len(data) + 1)
    head, tail = data[:axis], data[axis:]
    return (None if None in head else math.prod(h for h in head if h is not None),
            None if None in tail else math.prod(t for t in tail if t is not None))


def _first_dim(b: Bounder, node: Node, k: int) -> Bounds | None:
    """Ops that keep their first operand's leading dim (batch, or Gemm's rows) and have static others."""
    data = b.of(node.inputs[0])
    out = node.outputs[k].shape
    if data is None or out is None or (node.op == "Gemm" and int(attr(node, "transA"))):
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


# --- value ranges ----------------------------------------------------------------------------------------------

#: How far a computed exp may be from the true one, relative, before its rounding to the result type: far more
#: than any implementation's few ulps.
EXP_SLACK = 2.0**-6

End = float | Fraction
#: Any number: what an operand with no known range holds, as far as Max, Min and Clip go.
ANY: Interval = (-math.inf, math.inf)


def _finite(x: End) -> bool:
    return not isinstance(x, float) or math.isfinite(x)


def _array_interval(array: np.ndarray[Any, Any]) -> Interval | None:
    if array.size == 0 or array.dtype.kind not in "biufV":
        return None
    if array.dtype.kind in "biu":
        return int(array.min()), int(array.max())
    wide = array.astype(np.float64)  # exact for every float type
    return None if np.isnan(wide).any() else (float(wide.min()), float(wide.max()))


def _fit(dtype: np.dtype[Any] | None, lo: End, hi: End) -> Interval | None:
    """Exact ends as ``dtype`` holds its results: a float type's ends rounded outward to its grid (IEEE rounding
    is monotone, so a rounded result never passes a rounded end); an integer type's that could wrap refused."""
    if dtype is None:
        return None
    if dtype.kind in "iu":
        if not (_finite(lo) and _finite(hi)):
            return None
        info = np.iinfo(dtype)
        low, high = math.floor(lo), math.ceil(hi)
        return (low, high) if info.min <= low and high <= info.max else None
    if dtype.kind == "f" or dtype == ml_dtypes.bfloat16:
        grid = ml_dtypes.finfo(dtype)
        return _snap(lo, grid, up=False), _snap(hi, grid, up=True)
    return None


def _snap(x: End, grid: Any, up: bool) -> float:
    """The nearest value of the float type described by ``grid`` (an finfo) at or beyond ``x``."""
    if not _finite(x) or x == 0:
        return float(x)
    q = Fraction(x)
    size = abs(q)
    exp = size.numerator.bit_length() - size.denominator.bit_length()
    exp -= Fraction(2) ** exp > size  # now 2**exp <= size < 2**(exp + 1)
    step = Fraction(2) ** (max(exp, grid.minexp) - grid.nmant)  # subnormals share the smallest exponent's step
    snapped = (math.ceil(q / step) if up else math.floor(q / step)) * step
    top = Fraction(float(grid.max))
    if snapped > top:
        return math.inf if up else float(top)
    if snapped < -top:
        return -float(top) if up else -math.inf
    return float(snapped)


def _corners(op: Callable[[Fraction, Fraction], Fraction]) -> Callable[[Bounder, Node, int], Interval | None]:
    """Add, Sub, Mul, Div: monotone in each operand over a box, so extreme at its corners. Ends must be finite
    (inf - inf and 0 * inf are NaN) and a divisor's range must leave out 0."""
    def rule(b: Bounder, node: Node, k: int) -> Interval | None:
        x, y = b.interval(node.inputs[0]), b.interval(node.inputs[1])
        if x is None or y is None or not all(_finite(e) for e in x + y):
            return None
        if op is operator.truediv and y[0] <= 0 <= y[1]:
            return None
        ends = [op(Fraction(p), Fraction(q)) for p in x for q in y]
        return _fit(node.outputs[0].dtype, min(ends), max(ends))  # an integer Div's floor or trunc stays inside
    return rule


def _ends(fn: Callable[[float], float]) -> Callable[[Bounder, Node, int], Interval | None]:
    """Ceil, Floor, Round: non-decreasing and exact on a float type, so applied to the finite ends."""
    def rule(b: Bounder, node: Node, k: int) -> Interval | None:
        x = b.interval(node.inputs[0])
        return None if x is None else (fn(x[0]) if _finite(x[0]) else x[0], fn(x[1]) if _finite(x[1]) else x[1])
    return rule


def _relu(b: Bounder, node: Node, k: int) -> Interval | None:
    x = b.interval(node.inputs[0])
    return None if x is None else (max(x[0], 0), max(x[1], 0))


def _neg(b: Bounder, node: Node, k: int) -> Interval | None:
    x = b.interval(node.inputs[0])
    return None if x is None else _fit(node.outputs[0].dtype, -x[1], -x[0])  # an integer minimum wraps: refused


def _abs(b: Bounder, node: Node, k: int) -> Interval | None:
    x = b.interval(node.inputs[0])
    if x is None:
        return None
    lo, hi = x
    low, high = (lo, hi) if lo >= 0 else (-hi, -lo) if hi <= 0 else (0, max(-lo, hi))
    return _fit(node.outputs[0].dtype, low, high)


def _sqrt(b: Bounder, node: Node, k: int) -> Interval | None:
    x = b.interval(node.inputs[0])
    if x is None or x[0] < 0:  # a negative operand: nothing claimed
        return None
    return _fit(node.outputs[0].dtype, _root(x[0], up=False), _root(x[1], up=True))


def _root(x: float, up: bool) -> float:
    """math.sqrt is correctly rounded: one step outward when inexact covers the true root."""
    r = math.sqrt(x)
    return r if not math.isfinite(r) or Fraction(r) ** 2 == Fraction(x) else math.nextafter(r, math.inf if up else 0.0)


def _exp(b: Bounder, node: Node, k: int) -> Interval | None:
    x = b.interval(node.inputs[0])
    if x is None:
        return None
    return _fit(node.outputs[0].dtype, max(_exp_end(x[0]) * (1 - EXP_SLACK), 0.0), _exp_end(x[1]) * (1 + EXP_SLACK))


def _exp_end(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _fixed(low: float, high: float) -> Callable[[Bounder, Node, int], Interval | None]:
    """Sigmoid, Tanh, Softmax: a fixed range whatever the operand."""
    return lambda b, node, k: (low, high)


def _extreme(pick: Callable[..., float]) -> Callable[[Bounder, Node, int], Interval | None]:
    """Max and Min elementwise: each end is that of the operands' ends (torchvision's boxes clamped to an image
    by a Max with 0 and a Min with its size are in it, whatever the boxes)."""
    def rule(b: Bounder, node: Node, k: int) -> Interval | None:
        parts = [b.interval(v) or ANY for v in node.inputs if v is not None]
        return (pick(p[0] for p in parts), pick(p[1] for p in parts)) if parts else None
    return rule


def _union(first: int, last: int | None = None) -> Callable[[Bounder, Node, int], Interval | None]:
    """Where (either branch) and Concat (every operand): the elements come from the operands ``[first:last]``."""
    def rule(b: Bounder, node: Node, k: int) -> Interval | None:
        parts = [b.interval(v) for v in node.inputs[first:last] if v is not None]
        if not parts or any(p is None for p in parts):
            return None
        return min(p[0] for p in parts if p), max(p[1] for p in parts if p)
    return rule


def _clip(b: Bounder, node: Node, k: int) -> Interval | None:
    """min(max(x, low), high), as ONNX defines Clip: an absent bound does not clamp, an unknown one may."""
    x, low, high = node.input(0), node.input(1), node.input(2)
    lo, hi = b.interval(x) or ANY
    if low is not None:
        at_least = b.interval(low) or ANY
        lo, hi = max(lo, at_least[0]), max(hi, at_least[1])
    if high is not None:
        at_most = b.interval(high) or ANY
        lo, hi = min(lo, at_most[0]), min(hi, at_most[1])
    return lo, hi


def _reduce(b: Bounder, node: Node, k: int) -> Interval | None:
    """ReduceMax and ReduceMin pick an element, but an empty reduction gives the identity (-inf or the type's
    minimum for ReduceMax): without a static non-empty input, the far end is open."""
    x = b.interval(node.inputs[0])
    shape = node.inputs[0].shape if node.inputs[0] is not None else None
    if x is None or (shape is not None and all(isinstance(d, int) and d > 0 for d in shape)):
        return x
    return (-math.inf, x[1]) if node.op == "ReduceMax" else (x[0], math.inf)


def _cast(b: Bounder, node: Node, k: int) -> Interval | None:
    """To bool: 0 or 1. To an integer type: truncated toward zero, refused if it might not fit (wrapping or
    undefined). To a float type: rounded to its grid."""
    to, source = node.outputs[0].dtype, node.inputs[0]
    if to is not None and to.kind == "b":
        return 0, 1
    x = (0, 1) if source is not None and source.dtype is not None and source.dtype.kind == "b" else b.interval(source)
    if x is None or to is None:
        return None
    if to.kind in "iu":
        return _fit(to, math.trunc(x[0]), math.trunc(x[1])) if _finite(x[0]) and _finite(x[1]) else None
    return _fit(to, *x)


def _positions(bounds: Bounds | None) -> Interval:
    """A position along dims of these bounds: [0, largest - 1], or [0, inf) when one is unknown."""
    if not bounds or None in bounds:
        return 0, math.inf
    return 0, max(max(d for d in bounds if d is not None) - 1, 0)


def _shape(b: Bounder, node: Node, k: int) -> Interval | None:
    dims = b.of(node.inputs[0])
    return None if not dims or None in dims else (0, max(d for d in dims if d is not None))


def _size(b: Bounder, node: Node, k: int) -> Interval | None:
    count = b.numel(node.inputs[0])
    return None if count is None else (0, count)


def _arg(b: Bounder, node: Node, k: int) -> Interval | None:
    """ArgMax, ArgMin, TopK's indices: a position along the axis. TopK's values are some of its data."""
    if node.op == "TopK" and k == 0:
        return b.interval(node.inputs[0])
    dims = b.of(node.inputs[0])
    axis = int(attr(node, "axis"))
    return _positions(None if dims is None else (dims[axis],))


def _nonzero_positions(b: Bounder, node: Node, k: int) -> Interval | None:
    return _positions(b.of(node.inputs[0]))


def _range(b: Bounder, node: Node, k: int) -> Interval | None:
    """An integer Range stops short of its limit (a float one may round past it: nothing known)."""
    start, limit, delta = (b.interval(v) for v in node.inputs[:3])
    dtype = node.outputs[0].dtype
    if start is None or limit is None or delta is None or dtype is None or dtype.kind not in "iu":
        return None
    if delta[0] > 0:
        return start[0], max(limit[1] - 1, start[0])
    if delta[1] < 0:
        return min(limit[0] + 1, start[1]), start[1]
    return None


def _loop_result(b: Bounder, node: Node, k: int) -> Interval | None:
    """A last result is a state (its init after no trip); a stacked one holds the trips' values, and once
    padded also a padding nothing here knows."""
    if not isinstance(node, Loop):
        return None
    out = node.loop_outputs[k]
    if out.kind == "last":
        return b.interval(out.value) if any(r.state is out.value for r in node.recurrences) else None
    return None if node.padded else b.interval(out.value)


def _parameter(b: Bounder, value: Value) -> Interval | None:
    """A loop body's parameter: the trip counter counts the trips, an iterator's element is one of its source's,
    a recurrence's state stays in a range its next keeps."""
    loop = _loop_of(value)
    if loop is None:
        return None
    if value is loop.counter:
        trips = b.interval(loop.trip_count)
        if trips is None or not _finite(trips[1]):
            return 0, math.inf
        return 0, max(min(math.ceil(trips[1]), MAX_TRIPS) - 1, 0)  # at most MAX_TRIPS trips run
    for it in loop.iterators:
        if it.param is value:
            return b.interval(it.source)
    return next((_state(b, loop, r) for r in loop.recurrences if r.state is value), None)


def _state(b: Bounder, loop: Loop, rec: Recurrence) -> Interval | None:
    """A range holding ``init`` that ``next`` stays in whenever the state is in it: by induction, every trip's
    state. Tried as init's range, then widened once by what next reaches from it (a running maximum, a state
    set from an iterator); next is bounded with the loop's other states taken as unknown."""
    span = b.interval(rec.init)
    for _ in range(2):
        if span is None:
            return None
        others: dict[Value, Interval | None] = {r.state: None for r in loop.recurrences}
        reached = Bounder({**b._assumed, **others, rec.state: span}).interval(rec.next)
        if reached is None:
            return None
        if span[0] <= reached[0] and reached[1] <= span[1]:
            return span
        span = min(span[0], reached[0]), max(span[1], reached[1])
    return None


def _loop_of(value: Value) -> Loop | None:
    """The loop whose body takes ``value`` as a parameter, found from a read of it (a value has no graph)."""
    for use in value.uses():
        graph: Graph | None = use.user if isinstance(use.user, Graph) else use.user.graph
        while graph is not None and value not in graph.inputs:
            graph = graph.parent()
        if graph is not None:
            return graph.owner if isinstance(graph.owner, Loop) else None
    return None


RANGE_RULES: dict[str, Callable[[Bounder, Node, int], Interval | None]] = {
    "Add": _corners(operator.add), "Sub": _corners(operator.sub), "Mul": _corners(operator.mul),
    "Div": _corners(operator.truediv), "Neg": _neg, "Abs": _abs, "Sqrt": _sqrt, "Exp": _exp,
    "Ceil": _ends(lambda v: float(math.ceil(v))), "Floor": _ends(lambda v: float(math.floor(v))),
    "Round": _ends(lambda v: float(round(v))), "Relu": _relu,  # Python's round is half to even, as ONNX's
    "Sigmoid": _fixed(0.0, 1.0), "Tanh": _fixed(-1.0, 1.0), "Softmax": _fixed(0.0, 1.0),
    "Max": _extreme(max), "Min": _extreme(min), "Clip": _clip, "Where": _union(1, 3), "Concat": _union(0),
    "ReduceMax": _reduce, "ReduceMin": _reduce, "Cast": _cast, "Shape": _shape, "Size": _size, "ArgMax": _arg,
    "ArgMin": _arg, "TopK": _arg, "NonZero": _nonzero_positions, "Range": _range, "Loop": _loop_result,
}

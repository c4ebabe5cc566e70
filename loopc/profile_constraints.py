"""What a model's graph requires of its dynamic input dims, and the default profile chosen inside that.

loopc's default range (1 / 8 / 64 for every dynamic dim) is one many models cannot take: a text recognizer's
height feeds a Reshape whose product a Linear's weight fixes (48 and no other), a voice detector's window must
hold the kernel of its first Conv, a Gather of element 5 needs an axis of 6. What a dim must be is a property of
the graph's shape arithmetic, which is floors and products through Conv, Pool, Pad, Slice and Reshape: rather
than solve it symbolically, :class:`Probe` runs it. Given one size for every dynamic dim it computes every
value's shape (and the values of the small integer tensors that shapes are made of) with ONNX's own shape
functions, and checks what each op requires of what it is given:

* equal dims where an op needs them (Concat, elementwise ops, MatMul/Gemm inner dims, a Conv's channels, a
  recurrence's state), including a weight's fixed dims, as ONNX's shape functions refuse them;
* a Reshape whose target fits the element count (a ``-1`` with a solution);
* a Gather's constant index inside its axis, a Slice or Pool or Conv that leaves something (an empty tensor
  made from non-empty ones is refused, as TensorRT refuses a gather from an empty axis), a reflect Pad
  narrower than its axis;
* the dims the IR already knows for a value (its frontend proved them for every valid input).

:func:`choose` then searches sizes: the default when the graph takes it at min, opt and max; else the opt
repaired dim by dim towards 8, and min and max moved from it as far as the graph allows, so that each of the
three points TensorRT checks is one the graph takes. Each dim moved off the default says why (the node and
its complaint at the default), which is the line a user reads.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from loopc.ir import Graph, Node, Value, constant_value
from loopc.ir.builder import result_names, shape_function
from loopc.ir.interpret import InterpretError, evaluate
from loopc.ir.loop import If, Loop
from loopc.semantics.attributes import attr

log = logging.getLogger(__name__)

#: A concrete shape; None for a dim (or a whole shape) the probe cannot tell.
Concrete = tuple[int | None, ...] | None
#: Integer tensors up to this many elements are computed (shape arithmetic); larger ones only shaped.
MAX_KNOWN = 64
#: Sizes a dim is tried at: every size to 16, then coarser steps (a window of 192 samples, a height of 48).
CANDIDATES = (*range(1, 17), *range(20, 65, 4), *range(80, 257, 16), *range(320, 1025, 64), *range(1280, 4097, 256))
#: The search stops trying after this many probes (a large graph); what it found by then is used. A count, not
#: a time: the same model gets the same profile on a fast machine and a loaded one.
MAX_PROBES = 3000


@dataclass(frozen=True)
class Violation:
    """What one node refuses of the shapes it is given, and where it stands in the walk (later is better)."""

    where: str
    reason: str
    position: int = 0

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class _State:
    shapes: dict[Value, Concrete] = field(default_factory=dict)
    values: dict[Value, np.ndarray] = field(default_factory=dict)
    position: int = 0


class Probe:
    """Runs a graph's shape arithmetic at given input shapes: the first :class:`Violation`, or None.

    Input shapes not given (a shape tensor, an input of static shape) are read from the IR; values of inputs
    are never known (a sample rate that picks a branch leaves both branches checked, as TensorRT builds both).
    Node results are cached by what the node was shown, so trying one dim at many sizes redoes only the nodes
    that dim reaches.
    """

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self._cache: dict[tuple[Any, ...], tuple[list[Concrete], list[np.ndarray | None], str | None]] = {}
        self.count = 0

    def __call__(self, shapes: Mapping[str, Sequence[int]]) -> Violation | None:
        self.count += 1
        state = _State()
        for value in self.graph.inputs:
            given = shapes.get(value.name)
            state.shapes[value] = tuple(given) if given is not None else _declared(value)
        try:
            self._walk(self.graph, state)
        except _Stop as stop:
            return stop.violation
        return None

    # --- walking -------------------------------------------------------------------------------------

    def _walk(self, graph: Graph, state: _State) -> None:
        for node in graph.nodes:
            state.position += 1
            if isinstance(node, Loop):
                self._loop(node, state)
            elif isinstance(node, If):
                self._if(node, state)
            else:
                self._node(node, state)

    def _node(self, node: Node, state: _State) -> None:
        shapes = [None if v is None else _shape_of(v, state) for v in node.inputs]
        values = [None if v is None else _value_of(v, state) for v in node.inputs]
        key = (node, *(_key(s, a) for s, a in zip(shapes, values)))
        if key not in self._cache:
            self._cache[key] = _evaluate(node, shapes, values)
        out_shapes, out_values, refusal = self._cache[key]
        if refusal is not None:
            raise _Stop(Violation(node.describe(), refusal, state.position))
        for value, shape, array in zip(node.outputs, out_shapes, out_values):
            state.shapes[value] = shape
            if array is not None:
                state.values[value] = array

    def _loop(self, loop: Loop, state: _State) -> None:
        trips = _trips(loop, state)
        if loop.counter is not None:
            state.shapes[loop.counter] = ()
        for it in loop.iterators:
            source = _shape_of(it.source, state)
            state.shapes[it.param] = (None if source is None or it.axis >= len(source)
                                      else source[:it.axis] + source[it.axis + 1:])
        for rec in loop.recurrences:
            state.shapes[rec.state] = _shape_of(rec.init, state)
        self._walk(loop.body, state)
        for rec in loop.recurrences:
            init, after = _shape_of(rec.init, state), _shape_of(rec.next, state)
            if init is not None and after is not None and _conflict(init, after):
                raise _Stop(Violation(loop.describe(), f"loop state {rec.state.name!r} starts as {_text(init)} and "
                                                       f"becomes {_text(after)}", state.position))
        for out in loop.loop_outputs:
            shape = _shape_of(out.value, state)
            if out.kind != "last" and shape is not None:
                shape = shape[:out.axis] + (trips,) + shape[out.axis:]
            state.shapes[out.result] = _merged(shape, _declared(out.result))

    def _if(self, node: If, state: _State) -> None:
        branches = []
        for branch in node.subgraphs():  # TensorRT builds both branches, whichever runs
            self._walk(branch, state)
            branches.append([_shape_of(v, state) for v in branch.outputs])
        for k, out in enumerate(node.outputs):
            then, other = branches[0][k], branches[1][k]
            same = then if then is not None and other is not None and len(then) == len(other) else None
            if same is not None:
                same = tuple(a if a == b else None for a, b in zip(then, other))  # type: ignore[arg-type]
            state.shapes[out] = _merged(same, _declared(out))


class _Stop(Exception):
    def __init__(self, violation: Violation) -> None:
        super().__init__(str(violation))
        self.violation = violation


# --- one node ----------------------------------------------------------------------------------------------

def _evaluate(node: Node, shapes: list[Concrete], values: list[np.ndarray | None]
              ) -> tuple[list[Concrete], list[np.ndarray | None], str | None]:
    """A node's result shapes and small integer values at these operand shapes, or why it refuses them."""
    nothing: list[Concrete] = [_declared(v) for v in node.outputs]
    try:
        _check(node, shapes, values)
        computed = _compute(node, shapes, values)
        if computed is not None:
            found: list[Concrete] = [tuple(a.shape) for a in computed]
            arrays: list[np.ndarray | None] = [a if _small_int(a) else None for a in computed]
        else:
            found, arrays = _infer(node, shapes, values), [None] * len(node.outputs)
        for value, shape in zip(node.outputs, found):
            _agree(value, shape)
        _not_emptied(node, shapes, found)
    except _Refused as refusal:
        return nothing, [None] * len(node.outputs), refusal.reason
    return [_merged(s, d) for s, d in zip(found, nothing)], arrays, None


def _infer(node: Node, shapes: list[Concrete], values: list[np.ndarray | None]) -> list[Concrete]:
    """ONNX's shape function for ``node`` at these operand shapes; it refusing fully known shapes is a refusal."""
    try:
        found = shape_function(node, shapes, values)
    except Exception as exc:  # noqa: BLE001  (ONNX raises its own error types, and plain ones)
        if all(s is not None and None not in s for s, v in zip(shapes, node.inputs) if v is not None):
            raise _Refused(_first_line(exc)) from None
        found = None
    if found is None:
        return [None] * len(node.outputs)
    return [_concrete(found.get(name)) for name in result_names(node)]


def _compute(node: Node, shapes: list[Concrete], values: list[np.ndarray | None]) -> list[np.ndarray] | None:
    """The results' values when they are shape arithmetic: a Shape of a known shape, or an op on small
    known integer operands (computed as the interpreter computes them)."""
    if node.op == "Shape" and shapes and shapes[0] is not None and None not in shapes[0]:
        rank = len(shapes[0])
        start, end = node.attrs.get("start", 0), node.attrs.get("end", rank)
        return [np.array(shapes[0][slice(start, end)], np.int64)]
    if node.op == "Size" and shapes and shapes[0] is not None and None not in shapes[0]:
        return [np.array(math.prod(shapes[0]), np.int64)]  # type: ignore[arg-type]
    present = [a for a, v in zip(values, node.inputs) if v is not None]
    if not present or any(a is None for a in present) or node.subgraphs() or node.op == "Constant":
        return None
    try:
        results = evaluate(node, values)
    except InterpretError as exc:  # a shape computation that fails at these sizes, in the op's own words
        raise _Refused(_first_line(exc.__cause__ or exc)) from None
    arrays = [np.asarray(r) for r in results]
    return arrays if all(a.size <= MAX_KNOWN for a in arrays) else None


def _check(node: Node, shapes: list[Concrete], values: list[np.ndarray | None]) -> None:
    """What ONNX's shape functions let pass but a run (and TensorRT's builder) refuses."""
    rule = _RULES.get(node.op)
    if rule is not None and shapes and shapes[0] is not None:
        rule(node, shapes, values)


def _gather(node: Node, shapes: list[Concrete], values: list[np.ndarray | None]) -> None:
    data, indices = shapes[0], values[1] if len(values) > 1 else None
    assert data is not None
    axis = attr(node, "axis")
    axis = axis + len(data) if axis < 0 else axis
    if indices is None or not 0 <= axis < len(data) or data[axis] is None:
        return
    size, flat = data[axis], np.asarray(indices).ravel()
    if flat.size and (flat.max() >= size or flat.min() < -size):
        picked = int(flat.max() if flat.max() >= size else flat.min())
        raise _Refused(f"gathers index {picked} from an axis of {size}")


def _reshape(node: Node, shapes: list[Concrete], values: list[np.ndarray | None]) -> None:
    data, target = shapes[0], values[1] if len(values) > 1 else None
    assert data is not None
    if target is None or None in data:
        return
    dims = [int(d) for d in np.asarray(target).ravel()]
    allowzero = node.attrs.get("allowzero", 0)
    dims = [data[k] if d == 0 and not allowzero and k < len(data) else d for k, d in enumerate(dims)]  # type: ignore
    total, known = math.prod(data), math.prod(d for d in dims if d != -1)  # type: ignore[arg-type]
    if -1 in dims and (known == 0 or total % known):
        raise _Refused(f"cannot reshape {_text(data)} ({total} elements) to {_text(dims)}: the -1 has no solution")
    if -1 not in dims and known != total:
        raise _Refused(f"cannot reshape {_text(data)} ({total} elements) to {_text(dims)}")


def _pad(node: Node, shapes: list[Concrete], values: list[np.ndarray | None]) -> None:
    data, pads = shapes[0], values[1] if len(values) > 1 else None
    assert data is not None
    mode = node.attrs.get("mode", "constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode != "reflect" or pads is None or len(values) > 3 and node.inputs[3] is not None:
        return
    flat = [int(p) for p in np.asarray(pads).ravel()]
    rank = len(data)
    for k, size in enumerate(data):
        if size is not None and len(flat) == 2 * rank and max(flat[k], flat[k + rank]) >= size:
            raise _Refused(f"reflect-pads axis {k} of {size} by {max(flat[k], flat[k + rank])}")


def _window(node: Node, shapes: list[Concrete], values: list[np.ndarray | None]) -> None:
    """A Conv's or Pool's window must fit in its padded input (ONNX's shape functions give such a result
    size 1; TensorRT refuses it, and the model computes nothing there)."""
    data = shapes[0]
    assert data is not None
    weight = shapes[1] if node.op == "Conv" and len(shapes) > 1 else None
    kernel = node.attrs.get("kernel_shape") or (weight[2:] if weight is not None else None)
    auto_pad = node.attrs.get("auto_pad", "NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    if kernel is None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return
    spatial = data[2:]
    pads = list(node.attrs.get("pads") or [0] * 2 * len(spatial)) if auto_pad != "VALID" else [0] * 2 * len(spatial)
    dilations = list(node.attrs.get("dilations") or [1] * len(spatial))
    for k, (size, width) in enumerate(zip(spatial, kernel)):
        if size is None or width is None or len(pads) != 2 * len(spatial) or k >= len(dilations):
            continue
        span = dilations[k] * (int(width) - 1) + 1
        if size + pads[k] + pads[k + len(spatial)] < span:
            raise _Refused(f"its window of {span} does not fit axis {k + 2} of {size} (padded by "
                           f"{pads[k] + pads[k + len(spatial)]})")


def _matmul(node: Node, shapes: list[Concrete], values: list[np.ndarray | None]) -> None:
    """Inner dims, with the sizes (ONNX's shape function refuses them without saying which)."""
    a, b = shapes[0], shapes[1] if len(shapes) > 1 else None
    if node.op == "Gemm" and a is not None and b is not None and len(a) == 2 and len(b) == 2:
        a = a[::-1] if node.attrs.get("transA", 0) else a
        b = b[::-1] if node.attrs.get("transB", 0) else b
    if a is None or b is None or len(a) < 1 or len(b) < 1:
        return
    inner_a, inner_b = a[-1], b[-2] if len(b) >= 2 else b[0]
    if inner_a is not None and inner_b is not None and inner_a != inner_b:
        raise _Refused(f"multiplies {_text(a)} by {_text(b)}: inner dims {inner_a} and {inner_b}")


_RULES = {"MatMul": _matmul, "Gemm": _matmul, "Gather": _gather, "Reshape": _reshape, "Pad": _pad, "Conv": _window,
          "MaxPool": _window, "AveragePool": _window, "LpPool": _window}


def _not_emptied(node: Node, shapes: list[Concrete], found: list[Concrete]) -> None:
    """An op that makes an empty tensor of non-empty ones (a Slice past the end, a Conv wider than its input)
    leaves nothing for what follows: TensorRT refuses a gather from an empty axis, and no default should be
    a size the model computes nothing at."""
    if any(s is not None and 0 in s for s in shapes):
        return
    for k, shape in enumerate(found):
        if shape is not None and any(d is not None and d <= 0 for d in shape):
            raise _Refused(f"result {k} would be {_text(shape)}, empty")


def _agree(value: Value, shape: Concrete) -> None:
    """The IR's own static dims for a value hold for every valid input: a size that gives another is not one."""
    declared = _declared(value)
    if shape is not None and declared is not None and _conflict(declared, shape):
        raise _Refused(f"gives {value.name!r} the shape {_text(shape)} where the graph has {_text(declared)}")


# --- small helpers ---------------------------------------------------------------------------------------

def _declared(value: Value) -> Concrete:
    if value.shape is None:
        array = constant_value(value)
        return None if array is None else tuple(np.shape(array))
    return tuple(d if isinstance(d, int) else None for d in value.shape)


def _shape_of(value: Value, state: _State) -> Concrete:
    if value in state.shapes:
        return state.shapes[value]
    array = constant_value(value)
    return tuple(np.shape(array)) if array is not None else _declared(value)


def _value_of(value: Value, state: _State) -> np.ndarray | None:
    if value in state.values:
        return state.values[value]
    array = constant_value(value)
    return np.asarray(array) if array is not None and _small_int(np.asarray(array)) else None


def _small_int(array: np.ndarray) -> bool:
    return array.size <= MAX_KNOWN and array.dtype.kind in "iub"


def _key(shape: Concrete, array: np.ndarray | None) -> tuple[Any, ...]:
    return (shape, None if array is None else (array.dtype.str, array.shape, array.tobytes()))


def _concrete(found: onnx.TypeProto | None) -> Concrete:
    if found is None or not found.HasField("tensor_type") or not found.tensor_type.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") else None for d in found.tensor_type.shape.dim)


def _merged(shape: Concrete, declared: Concrete) -> Concrete:
    if shape is None or declared is None or len(shape) != len(declared):
        return shape if shape is not None else declared
    return tuple(s if s is not None else d for s, d in zip(shape, declared))


def _conflict(a: Sequence[int | None], b: Sequence[int | None]) -> bool:
    return len(a) != len(b) or any(x is not None and y is not None and x != y for x, y in zip(a, b))


def _trips(loop: Loop, state: _State) -> int | None:
    count = _value_of(loop.trip_count, state) if loop.trip_count is not None else None
    if count is not None and count.size == 1 and loop.condition is None:
        return max(0, int(count.ravel()[0]))
    for it in loop.iterators:
        source = _shape_of(it.source, state)
        if source is not None and it.axis < len(source) and loop.condition is None:
            return source[it.axis]
    return None


def _text(dims: Sequence[Any]) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[-1] if text else type(exc).__name__
    return line if len(line) <= 200 else line[:199] + "…"


# --- the search -------------------------------------------------------------------------------------------

#: A dynamic dim the search sizes: a symbolic name shared by every dim so named, or (input, axis).
Var = str | tuple[str, int]
POINTS = ("min", "opt", "max")


@dataclass
class Choice:
    """The sizes chosen for each dim at min, opt and max, and for each dim moved off the default, why."""

    sizes: dict[str, dict[Var, int]]
    why: dict[Var, str] = field(default_factory=dict)
    #: False when no sizes were found that the graph takes (the default is then used, and TensorRT says why).
    fits: bool = True


def variables(dynamic: Mapping[str, Sequence[int | str | None]]) -> dict[str, list[Var | int]]:
    """Each input's dims as the search sees them: an int where static, else the dim's variable."""
    return {name: [d if isinstance(d, int) and d >= 0 else (d if isinstance(d, str) and d else (name, k))
                   for k, d in enumerate(dims)] for name, dims in dynamic.items()}


def choose(graph: Graph, dims: Mapping[str, Sequence[Var | int]], default: tuple[int, int, int],
           given: Mapping[str, tuple[Sequence[int], Sequence[int], Sequence[int]]] | None = None) -> Choice:
    """Sizes for every variable of ``dims`` at min, opt and max that the graph takes, with inputs in
    ``given`` at the user's shapes; ``default`` when the graph takes it."""
    search = _Search(Probe(graph), dims, given or {}, default)
    return search.run()


class _Search:
    def __init__(self, probe: Probe, dims: Mapping[str, Sequence[Var | int]],
                 given: Mapping[str, tuple[Sequence[int], Sequence[int], Sequence[int]]],
                 default: tuple[int, int, int]) -> None:
        self.probe, self.dims, self.given, self.default = probe, dims, given, default
        self.vars: list[Var] = list(dict.fromkeys(d for ds in dims.values() for d in ds if not isinstance(d, int)))

    def spent(self) -> bool:
        return self.probe.count >= MAX_PROBES

    def check(self, sizes: Mapping[Var, int], point: int) -> Violation | None:
        shapes = {name: tuple(d if isinstance(d, int) else sizes[d] for d in ds) for name, ds in self.dims.items()}
        shapes.update({name: tuple(bounds[point]) for name, bounds in self.given.items()})
        return self.probe(shapes)

    def run(self) -> Choice:
        plain = {point: {v: self.default[k] for v in self.vars} for k, point in enumerate(POINTS)}
        failures = {k: self.check(plain[point], k) for k, point in enumerate(POINTS)}
        if not any(failures.values()):
            return Choice(plain)
        opt, why = self.repair(plain["opt"], failures[1])
        if opt is None:
            log.debug("no dim sizes the graph takes: %s", failures[1])
            return Choice(plain, fits=False)
        low = self.extend(opt, 0, down=True, why=why)
        high = self.extend(opt, 2, down=False, why=why)
        log.debug("profile search: %d probes", self.probe.count)
        return Choice({"min": low, "opt": opt, "max": high}, why)

    def repair(self, sizes: dict[Var, int], failure: Violation | None) -> tuple[dict[Var, int] | None, dict[Var, str]]:
        """Move dims off the opt, one at a time and each as little as it can, until the graph takes them all."""
        why: dict[Var, str] = {}
        for _ in range(2 * len(self.vars) + 2):
            if failure is None:
                return sizes, why
            best: tuple[int, Var, int, Violation | None] | None = None
            for var in self.vars:
                for size in sorted(CANDIDATES, key=lambda c: (abs(c - sizes[var]), c)):
                    if size == sizes[var] or self.spent():
                        continue
                    after = self.check({**sizes, var: size}, 1)
                    reach = math.inf if after is None else after.position
                    if reach > failure.position and (best is None or reach > best[0]):
                        best = (int(min(reach, 1 << 30)), var, size, after)
                    if after is None:
                        break
                if best is not None and best[3] is None:
                    break
            if best is None:
                return None, why
            _, var, size, after = best
            why.setdefault(var, f"at {sizes[var]}, {failure}")
            sizes, failure = {**sizes, var: size}, after
        return (sizes, why) if failure is None else (None, why)

    def extend(self, opt: dict[Var, int], point: int, down: bool, why: dict[Var, str]) -> dict[Var, int]:
        """From the opt, move each dim towards the default's min (or past its max) as far as the graph takes.
        Dims the graph needs equal (a batch named differently in two inputs) move together."""
        sizes, moved = dict(opt), set()
        for var in self.vars:
            if var in moved:
                continue
            goal = self.default[point] if down else max(self.default[point], 8 * opt[var])
            tried = [c for c in CANDIDATES if (goal <= c < opt[var] if down else opt[var] < c <= goal)]
            tied = [v for v in self.vars if v != var and v not in moved and sizes[v] == sizes[var]]
            blocked = None
            for size in (tried if down else reversed(tried)):
                if self.spent():
                    break
                failure = self.check({**sizes, var: size}, point)
                group = [var] if failure is None else self.together(sizes, var, tied, size, point)
                if group:
                    sizes.update({v: size for v in group})
                    moved.update(group)
                    break
                blocked = blocked or f"at {size}, {failure}"
            if sizes[var] != goal and blocked is not None and var not in why:
                why[var] = blocked
        return sizes

    def together(self, sizes: dict[Var, int], var: Var, tied: list[Var], size: int, point: int) -> list[Var]:
        """The dims that, moved to ``size`` with ``var``, make a size the graph takes: one other, else all."""
        for other in tied:
            if self.check({**sizes, var: size, other: size}, point) is None:
                return [var, other]
        if len(tied) > 1 and self.check({**sizes, var: size, **{v: size for v in tied}}, point) is None:
            return [var, *tied]
        return []


def spans(choice: Choice, dims: Mapping[str, Sequence[Var | int]]) -> Iterator[tuple[str, list[int], list[int], list[int]]]:
    """Each input's min, opt and max dims under ``choice``."""
    for name, ds in dims.items():
        yield name, *([d if isinstance(d, int) else choice.sizes[p][d] for d in ds] for p in POINTS)  # type: ignore

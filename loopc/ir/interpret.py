"""The IR's reference semantics: run a graph on NumPy arrays, loops and conditionals included.

This is what a graph *means*, written once, from the reference loop in :mod:`loopc.ir.loop`. Passes
are checked against it (interpret before a pass, interpret after, same outputs), and frontends
compare it with their source's own runtime. Plain nodes keep newest-opset ONNX forms, so ONNX's
reference evaluator runs them as they are; loops and conditionals run here::

    count = clamp(trip_count, 0, MAX_TRIPS)             # None: a while loop (stopped by max_iterations)
    states = [r.init for r in recurrences]
    for i in range(count):
        bind counter = i (0-D, the counter's dtype, else int64), states,
             iterator params = take(source, i or len-1-i if reversed, axis)
        if condition is not None and not condition: break   # only the nodes it needs have run
        run the body; keep each concat/reverse output's value
        states = [r.next for r in recurrences]
    last = the final state; concat = the kept values stacked at the output's axis; reverse = reversed
    padded loops: concat/reverse outputs as long as max_trips (else the count), filled past the trips run

Trip counts, the iteration cap and padding follow :mod:`loopc.loop_rules`, as the simulator does: counts
saturate to [0, MAX_TRIPS] (a negative count runs no trips), and padding holds a value no correct
computation makes, so anything that reads it shows up as a mismatch.

A loop that ran no trips still has concat outputs: length 0 along the axis, the element shape from
the body value's static type, or else from running the body once on trip 0's bindings (an empty
iterator gives zeros of its slice's shape) and throwing the results away; if neither tells the
shape, the interpreter refuses rather than guess.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from onnx import helper
from onnx.defs import onnx_opset_version
from onnx.reference import ReferenceEvaluator

from loopc.errors import LoopcError
from loopc.ir.core import Graph, Model, Node, Value, type_text
from loopc.ir.loop import If, Loop, LoopIterator, LoopOutput
from loopc.ir.builder import node_proto, operand_names
from loopc.loop_rules import DEFAULT_MAX_ITERATIONS, endless, no_trips, padded, saturate_trips
from loopc.semantics.attributes import attr

Kernel = Callable[[list[Any]], Sequence[Any]]


class InterpretError(LoopcError):
    """The interpreter cannot run the IR on these inputs; the message names the node."""


def interpret(
    graph_or_model: Graph | Model,
    feeds: Mapping[str, Any],
    *,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    check_types: bool = True,
) -> list[Any]:
    """The outputs of ``graph_or_model`` on ``feeds`` (arrays by graph input name), in output order.

    A loop that reaches ``max_iterations`` trips raises :class:`InterpretError` instead of running on.
    With ``check_types``, every value computed (and every input and loop parameter bound) must have
    its declared dtype and static dims: a type is a claim about every run, and passes and the
    backend rely on it.
    """
    graph = graph_or_model.graph if isinstance(graph_or_model, Model) else graph_or_model
    return _Interpreter(max_iterations, check_types).run(graph, feeds)


class _Interpreter:
    """One run: values by the Value object that names them, in one table for every scope.

    Values are SSA and a body reads only its own values and those of enclosing graphs, so one table
    serves all scopes: each trip overwrites the body's values of the trip before.
    """

    def __init__(self, max_iterations: int, check_types: bool) -> None:
        self.max_iterations = max_iterations
        self.check_types = check_types
        self.env: dict[Value, Any] = {}
        self._kernels: dict[Node, Kernel] = {}
        self._plans: dict[Loop, tuple[list[Node], list[Node]]] = {}

    def run(self, graph: Graph, feeds: Mapping[str, Any]) -> list[Any]:
        for value in graph.inputs:
            if value.name not in feeds:
                raise InterpretError(f"graph {graph.name!r}: no value given for input {value.name!r}")
            self.set(value, np.asarray(feeds[value.name]), f"graph {graph.name!r}: input")
        self.nodes(graph.nodes)
        return [self.read(value, f"graph {graph.name!r}: output") for value in graph.outputs]

    def nodes(self, nodes: Iterable[Node]) -> None:
        for node in nodes:
            if isinstance(node, Loop):
                self.loop(node)
            elif isinstance(node, If):
                self.conditional(node)
            else:
                self.plain(node)

    def set(self, value: Value, result: Any, what: str) -> None:
        """Bind ``value`` to ``result``, checking its type when asked: a node whose type says one thing
        while it computes another is wrong wherever the type is used."""
        if self.check_types and isinstance(result, np.ndarray) and not _fits(value, result):
            raise InterpretError(f"{what} {value.name!r} is {_type_of(result)} when run, but its type says "
                                 f"{type_text(value)}")
        self.env[value] = result

    def read(self, value: Value, what: str) -> Any:
        try:
            return self.env[value]
        except KeyError:
            raise _unset(value, what) from None

    # --- plain nodes -------------------------------------------------------------------------------

    def plain(self, node: Node) -> None:
        kernel = self._kernels.get(node)
        if kernel is None:
            kernel = self._kernels[node] = _kernel(node)
        env = self.env
        try:
            args = [None if v is None else env[v] for v in node.inputs]
        except KeyError:
            missing = next(v for v in node.inputs if v is not None and v not in env)
            raise _unset(missing, f"{node.describe()}: input") from None
        for out, array in zip(node.outputs, _run(node, kernel, args)):
            if self.check_types and isinstance(array, np.ndarray) and not _fits(out, array):
                self.set(out, array, f"{node.describe()}: output")  # raises, naming the node
            env[out] = array

    # --- conditionals ------------------------------------------------------------------------------

    def conditional(self, node: If) -> None:
        cond = node.inputs[0]
        if cond is None:
            raise InterpretError(f"{node.describe()}: the conditional has no condition")
        holds = _flag(self.read(cond, f"{node.describe()}: condition"), f"{node.describe()}: the condition")
        taken = node.then_branch if holds else node.else_branch
        if len(taken.outputs) != len(node.outputs):
            raise InterpretError(f"{node.describe()}: branch {taken.name!r} has {len(taken.outputs)} outputs, "
                                 f"the node {len(node.outputs)}")
        self.nodes(taken.nodes)
        for out, value in zip(node.outputs, taken.outputs):
            self.set(out, self.read(value, f"{node.describe()}: branch {taken.name!r} output"),
                     f"{node.describe()}: output")

    # --- loops -------------------------------------------------------------------------------------

    def loop(self, loop: Loop) -> None:
        what = loop.describe()
        count = self.count(loop.trip_count, f"{what}: the trip count")
        bound = self.count(loop.max_trips, f"{what}: max_trips")
        sources = [self.read(it.source, f"{what}: iterator source") for it in loop.iterators]
        for it, source in zip(loop.iterators, sources):
            if not 0 <= it.axis < np.ndim(source):
                raise InterpretError(f"{what}: iterator {it.param.name!r} slices axis {it.axis} of "
                                     f"{it.source.name!r}, which has rank {np.ndim(source)}")
        first, rest = self._plan(loop)
        states = [self.read(r.init, f"{what}: recurrence init") for r in loop.recurrences]
        initial = list(states)
        stacked: dict[LoopOutput, list[Any]] = {o: [] for o in loop.loop_outputs if o.kind != "last"}
        trips = 0
        while count is None or trips < count:
            if trips >= self.max_iterations:
                raise InterpretError(endless(what, self.max_iterations))
            short = self.bind(loop, trips, sources, states)
            if loop.condition is not None:
                self.nodes(first)
                if not _flag(self.read(loop.condition, f"{what}: condition"), f"{what}: the condition"):
                    break
            if short is not None:
                raise InterpretError(f"{what}: trip {trips} needs slice {trips} of iterator source "
                                     f"{short.source.name!r} along axis {short.axis}, which is shorter")
            self.nodes(rest)
            for out, items in stacked.items():
                items.append(self.read(out.value, f"{what}: output value"))
            states = [self.read(r.next, f"{what}: recurrence next value") for r in loop.recurrences]
            trips += 1
        if bound is not None and stacked and trips > bound:
            raise InterpretError(f"{what} ran {trips} trips, more than its max_trips {bound}: its concatenated "
                                 "outputs cannot hold them")
        finals = {r.state: s for r, s in zip(loop.recurrences, states)}
        for out in loop.loop_outputs:
            if out.kind == "last":
                if out.value not in finals:
                    raise InterpretError(f"{what}: 'last' output {out.result.name!r} reads {out.value.name!r}, "
                                         "not a recurrence state")
                self.set(out.result, finals[out.value], f"{what}: output")
            else:
                items = stacked[out]
                if not items:
                    items = [self.empty_element(loop, out, sources, initial)]
                result = self.stack(loop, out, items, trips == 0)
                if loop.padded:
                    result = self.pad(loop, out, result, trips, bound if bound is not None else count)
                self.set(out.result, result, f"{what}: output")

    def count(self, value: Value | None, what: str) -> int | None:
        """A trip count or max_trips, saturated to [0, MAX_TRIPS] as loopc's backend does."""
        if value is None:
            return None
        array = np.asarray(self.read(value, what))
        if array.size != 1 or array.dtype.kind not in "iu":
            raise InterpretError(f"{what} {value.name!r} must be one integer, not {array.dtype} of shape "
                                 f"{list(array.shape)}")
        return saturate_trips(int(array.reshape(())))

    def bind(self, loop: Loop, trip: int, sources: list[Any], states: list[Any]) -> LoopIterator | None:
        """Bind trip ``trip``'s parameters; returns an iterator whose source is too short, else None
        (an error only once the condition, if any, has let the trip run)."""
        what = loop.describe()
        short: LoopIterator | None = None
        if loop.counter is not None:
            dtype = loop.counter.dtype if loop.counter.dtype is not None else np.dtype(np.int64)
            self.set(loop.counter, np.array(trip, dtype), f"{what}: counter")
        for it, source in zip(loop.iterators, sources):
            length = np.shape(source)[it.axis]
            if trip >= length:
                short = short or it
                self.env.pop(it.param, None)
                continue
            element = np.take(source, length - 1 - trip if it.reverse else trip, axis=it.axis)
            self.set(it.param, element, f"{what}: on trip {trip}, iterator parameter")
        for rec, state in zip(loop.recurrences, states):
            self.set(rec.state, state, f"{what}: on trip {trip}, recurrence state")
        return short

    def _plan(self, loop: Loop) -> tuple[list[Node], list[Node]]:
        """The body split in two: the nodes the condition needs (run before it is tested), the rest."""
        plan = self._plans.get(loop)
        if plan is None:
            first = loop.condition_nodes()
            chosen = set(first)
            plan = self._plans[loop] = (first, [n for n in loop.body.nodes if n not in chosen])
        return plan

    def empty_element(self, loop: Loop, out: LoopOutput, sources: list[Any], inits: list[Any]) -> Any:
        """A stand-in for one trip's value of ``out`` when the loop ran none: only its shape and dtype count."""
        what = f"{loop.describe()}: output {out.result.name!r}"
        defined = set(loop.body.inputs) | {v for n in loop.body.nodes for v in n.outputs}
        dtype = out.result.dtype if out.result.dtype is not None else out.value.dtype
        if out.value not in defined:  # an outer value, the same on every trip
            return self.read(out.value, f"{what}: value")
        shape = out.value.shape
        if dtype is not None and shape is not None and all(isinstance(d, int) for d in shape):
            return np.zeros(shape, dtype)
        try:
            trial = [np.zeros(np.delete(np.shape(s), it.axis), np.asarray(s).dtype) if np.shape(s)[it.axis] == 0
                     else None for it, s in zip(loop.iterators, sources)]
            self.bind(loop, 0, sources, inits)
            for it, zeros in zip(loop.iterators, trial):
                if zeros is not None:
                    self.env[it.param] = zeros
            self.nodes(loop.body.nodes)
            element = np.asarray(self.read(out.value, f"{what}: value"))
        except LoopcError as exc:
            raise InterpretError(f"{what}: the loop ran no trips and the type {shape} of {out.value.name!r} does "
                                 f"not give its element shape; running the body on trip 0's bindings to find it "
                                 f"failed: {exc}") from exc
        return np.zeros(element.shape, dtype if dtype is not None else element.dtype)

    def stack(self, loop: Loop, out: LoopOutput, items: list[Any], empty: bool) -> Any:
        rank = np.ndim(items[0])
        if not 0 <= out.axis <= rank:
            raise InterpretError(f"{loop.describe()}: output {out.result.name!r} stacks at axis {out.axis}, beyond "
                                 f"the rank {rank} of its value")
        if empty:
            return no_trips(np.shape(items[0]), out.axis, np.asarray(items[0]).dtype)
        try:
            return np.stack(items[::-1] if out.kind == "reverse" else items, axis=out.axis)
        except ValueError as exc:
            raise InterpretError(f"{loop.describe()}: output {out.result.name!r} cannot stack its trips' values: "
                                 f"{_one_line(exc)}") from exc

    def pad(self, loop: Loop, out: LoopOutput, result: Any, trips: int, length: int | None) -> Any:
        """A padded loop's concat output, as long as its length input whatever the trips run."""
        what = f"{loop.describe()}: output {out.result.name!r}"
        if length is None:
            raise InterpretError(f"{what}: a padded loop's concatenated output needs max_trips or a trip count")
        return padded(result, out.axis, trips, length, what, InterpretError)


# --- plain nodes: ONNX's reference evaluator, one per distinct node form ----------------------------


def evaluate(node: Node, args: Sequence[Any]) -> list[Any]:
    """``node``'s results on ``args`` (one array, sequence or None per input), computed as :func:`interpret`
    computes them: the one node evaluator, so that what is folded at compile time is what the graph means.

    Raises :class:`InterpretError` (naming the node) when the node cannot run on these operands.
    """
    return _run(node, _kernel(node), list(args))


def _run(node: Node, kernel: Kernel, args: list[Any]) -> list[Any]:
    """``kernel``'s results for ``node``, one per output (NumPy scalars made 0-D arrays); any failure an
    :class:`InterpretError` that names the node."""
    try:
        results = kernel(args)
    except LoopcError:
        raise
    except Exception as exc:  # ONNX's reference ops raise anything; say which node failed
        raise InterpretError(f"{node.describe()}: cannot run {node.op}: {_one_line(exc)}") from exc
    if len(results) < len(node.outputs):
        raise InterpretError(f"{node.describe()}: {node.op} gave {len(results)} results for "
                             f"{len(node.outputs)} outputs")
    return [np.asarray(r) if isinstance(r, (np.generic, int, float, bool)) else r for r in results]


_EVALUATORS: dict[tuple[Any, ...], ReferenceEvaluator] = {}
_MAX_EVALUATORS = 4096


def _kernel(node: Node) -> Kernel:
    """How to run ``node``: a Constant is its value; any other op, ONNX's reference implementation."""
    if node.op == "Constant" and "value" in node.attrs and len(node.attrs) == 1:
        value = np.asarray(node.attrs["value"])
        return lambda args: [value]
    if node.op == "ConvTranspose" and int(attr(node, "group")) > 1:
        return _grouped_conv_transpose(node)
    if node.op == "LRN":
        return _lrn(node)
    if node.op == "SequenceInsert":
        return _sequence_insert
    present = tuple(v is not None for v in node.inputs)
    types = tuple(str(v.dtype) for v in node.inputs if v is not None)
    key: tuple[Any, ...] | None = (node.op, _frozen(node.attrs), present, len(node.outputs), types)
    try:
        evaluator = _EVALUATORS.get(key)  # type: ignore[arg-type]
    except TypeError:  # an attribute of a form _frozen does not know: this node gets its own
        evaluator, key = None, None
    if evaluator is None:
        evaluator = _evaluator(node)
        if key is not None:
            if len(_EVALUATORS) >= _MAX_EVALUATORS:
                _EVALUATORS.clear()
            _EVALUATORS[key] = evaluator
    names = [name for name in operand_names(node) if name]

    def run(args: list[Any]) -> Sequence[Any]:
        results = evaluator.run(None, dict(zip(names, (a for a in args if a is not None))))
        return list(results)

    return run


def _grouped_conv_transpose(node: Node) -> Kernel:
    """ONNX's reference ConvTranspose slices W ``[C_in, C_out / group, k...]`` by output channels when
    ``group > 1`` (wrong unless both counts agree): run each group as a one-group ConvTranspose instead."""
    group = int(node.attrs["group"])
    single = Node("ConvTranspose", [Value("x"), Value("w")], [Value("y")], {**node.attrs, "group": 1})
    run_one = _kernel(single)

    def run(args: list[Any]) -> Sequence[Any]:
        x, w = args[0], args[1]
        bias = args[2] if len(args) > 2 else None
        pieces = [run_one([xs, ws])[0] for xs, ws in zip(np.split(x, group, axis=1), np.split(w, group, axis=0))]
        y = np.concatenate(pieces, axis=1)
        if bias is not None:
            y = y + bias.reshape((1, -1) + (1,) * (y.ndim - 2)).astype(y.dtype)
        return [y]

    return run


def _lrn(node: Node) -> Kernel:
    """ONNX's LRN (ONNX's reference walks the batch axis instead of the channels, and takes 4-D only):
    ``x / (bias + alpha / size * sum of x² over channels [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta``."""
    size = int(node.attrs["size"])
    alpha, beta, bias = (float(attr(node, k)) for k in ("alpha", "beta", "bias"))
    below, above = (size - 1) // 2, size // 2

    def run(args: list[Any]) -> Sequence[Any]:
        x = args[0]
        channels = x.shape[1]
        widths = [(0, 0), (below, above)] + [(0, 0)] * (x.ndim - 2)
        squares = np.pad(x.astype(np.float64) ** 2, widths)
        total = sum(squares[:, k:k + channels] for k in range(size))
        return [(x / (bias + alpha / size * total) ** beta).astype(x.dtype)]

    return run


def _sequence_insert(args: list[Any]) -> Sequence[Any]:
    """ONNX's SequenceInsert: at ``position`` in [-n, n] (from the end when negative), else at the end. ONNX's
    reference wraps position n to 0, which puts ``ks[-1] = k`` (an erase, then an insert at n) first."""
    held, tensor = list(args[0]), args[1]
    n = len(held)
    at = n if len(args) < 3 or args[2] is None else int(np.asarray(args[2]).reshape(()))
    if not -n <= at <= n:
        raise InterpretError(f"SequenceInsert at position {at} of a sequence of {n} (it takes -{n} to {n})")
    held.insert(at + n if at < 0 else at, tensor)
    return [held]


def _evaluator(node: Node) -> ReferenceEvaluator:
    try:
        proto = node_proto(node)
        if node.op in _FUNCTION_OPS:
            return _typed_evaluator(node, proto)
        return ReferenceEvaluator(proto)
    except Exception as exc:  # an op or attribute ONNX's reference does not know
        raise InterpretError(f"{node.describe()}: ONNX's reference evaluator cannot run {node.op}: "
                             f"{_one_line(exc)}") from exc


#: Ops ONNX's reference runs only as their function body, which needs the operands' element types.
_FUNCTION_OPS = frozenset({"GroupNormalization"})


def _typed_evaluator(node: Node, proto: Any) -> ReferenceEvaluator:
    """``proto`` in a one-node model whose inputs carry ``node``'s element types."""
    inputs = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(value.dtype), None)
              for name, value in zip(proto.input, node.inputs) if name and value is not None and value.dtype]
    outputs = [helper.make_tensor_value_info(name, 0, None) for name in proto.output]
    model = helper.make_model(helper.make_graph([proto], "node", inputs, outputs),
                              opset_imports=[helper.make_opsetid("", onnx_opset_version())])
    return ReferenceEvaluator(model)


def _frozen(value: Any) -> Any:
    """A hashable stand-in for an attribute value (arrays by dtype, shape and bytes)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        return ("array", array.dtype.str, array.shape, array.tobytes())
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


def _unset(value: Value, what: str) -> InterpretError:
    return InterpretError(f"{what} {value.name!r} has no value (read before it is computed, or outside its scope)")


def _fits(value: Value, array: np.ndarray) -> bool:
    """Whether ``array`` has ``value``'s dtype and static dims (where the type states them)."""
    if value.dtype is not None and array.dtype != value.dtype:
        return False
    if value.shape is None:
        return True
    return len(value.shape) == array.ndim and all(not isinstance(d, int) or d == n
                                                  for d, n in zip(value.shape, array.shape))


def _type_of(array: np.ndarray) -> str:
    return type_text(Value("", array.dtype, tuple(array.shape)))


def _flag(value: Any, what: str) -> bool:
    array = np.asarray(value)
    if array.size != 1:
        raise InterpretError(f"{what} must be one value, not an array of shape {list(array.shape)}")
    return bool(array.reshape(()))


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."


__all__ = ["DEFAULT_MAX_ITERATIONS", "InterpretError", "evaluate", "interpret"]

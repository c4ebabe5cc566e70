"""Half precision (``--fp16`` / ``--bf16``): the IR retyped so that a strongly typed TensorRT network (TensorRT-RTX
builds no other kind) computes in half what may be, and in float32 what must not be.

TensorRT-RTX has no precision flag: a layer computes in its inputs' types. So this pass decides the type of
every float32 value, stores the weights in half and puts a ``Cast`` wherever a value meets a reader that wants
the other type. Its rules, stated once here:

1. **The interface stays.** The model's inputs and outputs keep their types; casts sit at the edges.
2. **Each op computes in its registry type** (:data:`loopc.ir.ops.Precision`): products, arithmetic and
   activations in half; what accumulates many terms (sums, means, norms, cumulative sums), normalizations'
   statistics and softmax in float32, as TensorRT's guidance for strongly typed networks has it; what moves,
   selects or compares elements in its operands' type. The terms a float32 reduction sums (the elementwise
   work feeding it: a written-out variance's squares, a softmax's exponentials) are float32 too.
3. **Shape work stays float32.** A value computed only from shapes, sizes, loop counters and constants (a
   resize's scale, a position, a diffusion step's time) is no activation; it keeps full precision.
4. **What decides control flow stays float32.** A float value a loop's trip count or condition, or a
   conditional's test, is computed from, and every float value it is computed from in turn (up to the first
   integer), is computed in float32: a convergence test in half would change how many trips run. A decoder's
   stop test reads an integer token, so its network stays in half.
5. **Loop-carried float state stays float32** unless ``half_state``, and so does its update: the elementwise
   and element-moving nodes on a path from a state to its next value (an LSTM's ``c = f*c + i*g``, a beam's
   running score) compute in float32, so the rounding of one trip is not carried into the next (a recurrence
   accumulates it over hundreds of trips). The products that read the state (``h @ W``) still run in half,
   on a half copy of it. With ``half_state`` the state and its update are half too.
6. **Weights are stored in half.** A float constant read in half gets a half copy (one per constant); the
   float32 original goes with dead code when nothing else reads it. A node reading a constant the half type
   cannot hold (a -1e9 mask fill is -inf in float16) computes in float32 instead, and so does a node reading
   32- or 64-bit integers cast to float (an int32 MatMulInteger sum before its dequantizing scale).
7. **Casts cross a loop at its edges.** A slice a body reads in the other type is a slice of the source cast
   before the loop (a second iterator), and a reshaped or transposed slice is the same move of that slice; a
   concatenated loop output whose value is a cast to float32 of a half value (or a reshape of one) carries the
   half value, and the cast is made after the loop. The result is the same; TensorRT-RTX's builder (Myelin)
   refuses a Cast beside a Shuffle at a loop's iterator or output (``Error Code 1: Myelin``: a reshape of the
   whole unsliced tensor, ``out->dim_count() == perm.size()``, ``ssa_validation``), which linear-attention
   loops (``y_t = (q_t S_t) * scale`` with ``S_t`` float32) made every time.

:attr:`HalfPrecision.kept` lists, after a run, each node left computing in float32 and why, for the report.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
import onnx
from onnx import helper

from loopc.ir import Graph, If, Loop, LoopIterator, Node, Value, constant_value
from loopc.ir.ops import traits
from loopc.passes.manager import PassResult

F32 = np.dtype(np.float32)
#: The half types, by the names the command line uses.
HALF_TYPES: dict[str, np.dtype[Any]] = {"fp16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16)}

#: Why a node computes in float32, by rule (see the module docstring).
CONTROL = "decides control flow (a loop's trips or condition, or a branch)"
SHAPE_WORK = "shape work (computed from shapes, counters and constants only)"
STATE = "loop-carried state (kept in float32; --fp16-state puts it in half)"
FLOAT_OP = "accumulates or normalizes (computed in float32)"
SUMMED = "a large term of a float32 sum (a square, an exponential) or a statistic (a mean, a variance)"
FOLLOWS = "reads float32 values"
OUT_OF_RANGE = "reads a constant the half type cannot hold (a -1e9 mask fill in float16)"
WIDE_INTEGERS = "reads 32- or 64-bit integers converted to float (an integer product's sums pass 65504)"


@dataclass(frozen=True)
class Kept:
    """A node (or loop state) left in float32."""

    node: str
    op: str
    reason: str


class HalfPrecision:
    name = "half-precision"

    def __init__(self, half: str = "fp16", half_state: bool = False) -> None:
        if half not in HALF_TYPES:
            raise ValueError(f"unknown half type {half!r}: {', '.join(HALF_TYPES)}")
        self.half = HALF_TYPES[half]
        self.half_state = half_state
        self.kept: list[Kept] = []
        self.stats: dict[str, int] = {}

    def __call__(self, graph: Graph) -> PassResult:
        retyping = _Retyping(graph, self.half, self.half_state)
        retyping.run()
        self.kept = retyping.kept
        self.stats = {k: v for k, v in (("half_nodes", retyping.half_nodes), ("casts", retyping.casts),
                                        ("weights", retyping.weights)) if v}
        return PassResult(graph, bool(self.stats), dict(self.stats))


class _Retyping:
    """One run of the pass over one graph (see the module docstring for the rules)."""

    def __init__(self, graph: Graph, half: np.dtype[Any], half_state: bool) -> None:
        self.graph = graph
        self.half = half
        self.half_state = half_state
        self.kept: list[Kept] = []
        self.half_nodes = self.casts = self.weights = 0
        self._casts: dict[tuple[Value, np.dtype[Any]], Value] = {}
        self._home: dict[Value, Graph] = {v: graph for v in graph.inputs}
        #: Each iterator's param, with its loop and role: a cast of a slice is a slice of the cast source (rule 7).
        self._iterated: dict[Value, tuple[Loop, LoopIterator]] = {}
        self.static = _static_values(graph, self._home)
        self.control = _control_values(graph)
        self.carried = set() if half_state else _carried_values(graph)
        self.summed = _summed_values(graph)

    def run(self) -> None:
        interface = [(k, v, v.dtype) for k, v in enumerate(self.graph.outputs)]
        self._graph(self.graph)
        for slot, value, dtype in interface:
            current = self.graph.outputs[slot]
            if current.dtype != dtype and dtype == F32:
                cast = self._cast(current, F32)
                name = value.name  # the output keeps its name: the engine's outputs are the model's
                current.name, cast.name = f"{name}_{self._tag(current.dtype)}", name
                self.graph.set_output(slot, cast)

    # --- graphs and nodes -----------------------------------------------------------------------------

    def _graph(self, graph: Graph) -> None:
        for node in list(graph.nodes):
            if isinstance(node, Loop):
                self._loop(node)
            elif isinstance(node, If):
                self._conditional(node)
            elif node.op == "Cast":
                self._cast_node(node)
            elif node.op != "Constant":
                self._node(node)

    def _node(self, node: Node) -> None:
        ins, outs = _type_params(node.op, len(node.inputs), len(node.outputs))
        for param in {p for p in [*ins, *outs] if p is not None}:
            operands = [k for k, p in enumerate(ins) if p == param and node.inputs[k] is not None]
            results = [k for k, p in enumerate(outs) if p == param]
            members = [node.inputs[k] for k in operands] + [node.outputs[k] for k in results]
            if not any(_is_float(v) for v in members):
                continue
            dtype, reason = self._compute_type(node, [node.inputs[k] for k in operands], [node.outputs[k] for k in results])
            for k in operands:
                operand = node.inputs[k]
                if operand is not None and _is_float(operand) and operand.dtype != dtype:
                    node.set_input(k, self._as(operand, dtype))
            for k in results:
                if _is_float(node.outputs[k]):
                    node.outputs[k].retype(dtype)
            if dtype == self.half:
                self.half_nodes += 1
            elif reason and results:
                self.kept.append(Kept(node.name or node.outputs[0].name, node.op, reason))

    def _compute_type(self, node: Node, operands: list[Value | None], results: list[Value]) -> tuple[np.dtype[Any], str]:
        """The type ``node`` computes one type param's members in, and why, when it is float32."""
        values = [v for v in [*operands, *results] if v is not None]
        if any(v in self.control for v in values):
            return F32, CONTROL
        if any(v in self.carried for v in results):
            return F32, STATE
        if any(v in self.summed for v in results):
            return F32, SUMMED
        data = [v for v in operands if v is not None and constant_value(v) is None and v not in self.static]
        if not data:
            return F32, SHAPE_WORK
        if any(not _fits(constant_value(v), self.half) for v in operands if v is not None):
            return F32, OUT_OF_RANGE
        if any(_from_wide_integers(v) for v in operands):
            return F32, WIDE_INTEGERS
        precision = traits(node.op).precision
        if precision == "half":
            return self.half, ""
        if precision == "follow":
            return (self.half, "") if any(v.dtype == self.half for v in data) else (F32, FOLLOWS)
        return F32, FLOAT_OP

    def _cast_node(self, node: Node) -> None:
        """A model's Cast to float32 of a float value now in half casts to half (it asked for the model's float
        type), unless its result is shape work or decides control flow; any other Cast stays as it is."""
        source, out = node.inputs[0], node.outputs[0]
        if not is_f32(out) or source is None or source.dtype != self.half:
            return
        if out in self.control or out in self.static:
            self.kept.append(Kept(node.name or out.name, node.op, CONTROL if out in self.control else SHAPE_WORK))
            return
        out.retype(self.half)
        node.set_attr("to", helper.np_dtype_to_tensor_dtype(self.half))

    # --- loops and conditionals -----------------------------------------------------------------------

    def _loop(self, loop: Loop) -> None:
        for param in loop.body.inputs:
            self._home[param] = loop.body
        for it in loop.iterators:
            self._iterated[it.param] = (loop, it)
            if _is_float(it.param):
                it.param.retype(it.source.dtype)
        states = {}
        for rec in loop.recurrences:
            if not is_f32(rec.state):
                continue
            keep = rec.state in self.control or rec.state in self.static or not self.half_state
            dtype = F32 if keep else self.half
            if keep:
                why = CONTROL if rec.state in self.control else SHAPE_WORK if rec.state in self.static else STATE
                self.kept.append(Kept(rec.state.name, "recurrence", why))
            if rec.init.dtype != dtype:
                loop.update(rec, init=self._as(rec.init, dtype))
            rec.state.retype(dtype)
            states[rec] = dtype
        self._graph(loop.body)
        for rec, dtype in states.items():
            if rec.next.dtype != dtype:
                loop.update(rec, next=self._cast(rec.next, dtype))
        for out in loop.loop_outputs:
            if out.kind != "last" and is_f32(out.value) and out.value not in self.control | self.static and (
                    computed := self._uncast(out.value)) is not None:
                loop.update(out, value=computed)
            if _is_float(out.result):
                out.result.retype(out.value.dtype)

    def _conditional(self, node: If) -> None:
        for branch in node.subgraphs():
            self._graph(branch)
        for k, result in enumerate(node.outputs):
            if not _is_float(result):
                continue
            types = {branch.outputs[k].dtype for branch in node.subgraphs()}
            dtype = F32
            if len(types) == 1 and (only := types.pop()) is not None:
                dtype = only
            for branch in node.subgraphs():
                if branch.outputs[k].dtype != dtype:
                    branch.set_output(k, self._cast(branch.outputs[k], dtype))
            result.retype(dtype)

    # --- casts and weights ----------------------------------------------------------------------------

    def _as(self, value: Value, dtype: np.dtype[Any]) -> Value:
        """``value`` in ``dtype``: a converted copy of a constant (the weights), else a cast."""
        array = constant_value(value)
        if array is None:
            return self._cast(value, dtype)
        key = (value, dtype)
        if key not in self._casts:
            producer = value.producer
            assert producer is not None and producer.graph is not None
            copy = Value(f"{value.name}_{self._tag(dtype)}", dtype, value.shape)
            made = Node("Constant", [], [copy], {"value": np.asarray(array).astype(dtype)}, origin=producer.origin)
            producer.graph.insert_after(producer, [made])
            self._casts[key] = copy
            self.weights += 1
        return self._casts[key]

    def _cast(self, value: Value, dtype: np.dtype[Any]) -> Value:
        """A ``Cast`` of ``value`` to ``dtype``, made once, where ``value`` is made: every reader in that graph
        and the graphs nested in it shares it (a loop reads an outer value's cast made outside the loop)."""
        key = (value, dtype)
        if key in self._casts:
            return self._casts[key]
        if value in self._iterated:
            return self._sliced_cast(value, dtype)
        if _moved(value, lambda v: v in self._iterated):
            return self._moved_cast(value, dtype)
        cast = Value(f"{value.name}_{self._tag(dtype)}", dtype, value.shape)
        node = Node("Cast", [value], [cast], {"to": helper.np_dtype_to_tensor_dtype(dtype)},
                    origin=value.producer.origin if value.producer is not None else "")
        if value.producer is not None and value.producer.graph is not None:
            value.producer.graph.insert_after(value.producer, [node])
        else:
            home = self._home.get(value, self.graph)
            if len(home.nodes):
                home.insert_before(home.nodes[0], [node])
            else:
                home.add(node)
        self._casts[key] = cast
        self.casts += 1
        return cast

    def _sliced_cast(self, param: Value, dtype: np.dtype[Any]) -> Value:
        """An iterator's slice in ``dtype``: a new iterator of the loop over the source in ``dtype``, cast outside
        the loop (rule 7)."""
        loop, it = self._iterated[param]
        sliced = Value(f"{param.name}_{self._tag(dtype)}", dtype, param.shape)
        twin = LoopIterator(sliced, self._as(it.source, dtype), it.axis, it.reverse)
        loop.add_iterator(twin)
        self._home[sliced] = loop.body
        self._iterated[sliced] = (loop, twin)
        self._casts[(param, dtype)] = sliced
        return sliced

    def _moved_cast(self, value: Value, dtype: np.dtype[Any]) -> Value:
        """A moved slice (``Unsqueeze(x_t)``) in ``dtype``: the same move of the slice in ``dtype`` (rule 7)."""
        assert value.producer is not None and value.producer.inputs[0] is not None
        return self._moved(value, self._cast(value.producer.inputs[0], dtype))

    def _uncast(self, value: Value) -> Value | None:
        """``value``, a cast to float32 of a half value (or a move of one), computed in half (rule 7): the cast
        goes after the loop. None when ``value`` is no such thing."""
        producer = value.producer
        if producer is None or producer.graph is None or not producer.inputs or producer.inputs[0] is None:
            return None
        source = producer.inputs[0]
        if producer.op in ("Cast", "CastLike"):
            return source if source.dtype == self.half else None
        if not _is_mover(producer) or (computed := self._uncast(source)) is None:
            return None
        return self._moved(value, computed)

    def _moved(self, value: Value, source: Value) -> Value:
        """``value``'s move (its producer, a reshape or transpose) applied to ``source``, once, in its type."""
        dtype, mover = source.dtype, value.producer
        assert dtype is not None and mover is not None and mover.graph is not None
        key = (value, dtype)
        if key not in self._casts:
            moved = Value(f"{value.name}_{self._tag(dtype)}", dtype, value.shape)
            mover.graph.insert_after(mover, [Node(mover.op, [source, *mover.inputs[1:]], [moved], dict(mover.attrs),
                                                  origin=mover.origin)])
            self._casts[key] = moved
        return self._casts[key]

    def _tag(self, dtype: np.dtype[Any] | None) -> str:
        return "f32" if dtype == F32 else ("f16" if dtype == np.dtype(np.float16) else "bf16")


def is_f32(value: Value | None) -> bool:
    return value is not None and value.dtype == F32


def _is_float(value: Value | None) -> bool:
    return value is not None and value.dtype is not None and value.dtype in (F32, *HALF_TYPES.values())


# --- what the rules ask of the graph -----------------------------------------------------------------------

def _static_values(graph: Graph, home: dict[Value, Graph]) -> set[Value]:
    """Values computed only from shapes, sizes, loop counters and constants (rule 3)."""
    static: set[Value] = set()
    for _, node in graph.walk():
        if isinstance(node, Loop):
            for sub in node.subgraphs():
                home.update((param, sub) for param in sub.inputs)
            if node.counter is not None:
                static.add(node.counter)
            continue
        if node.subgraphs() or node.op == "Constant":
            continue
        if traits(node.op).shape_only or all(
                v is None or v in static or constant_value(v) is not None for v in node.inputs):
            static.update(node.outputs)
    return static


def _control_values(graph: Graph) -> set[Value]:
    """Float and boolean values a loop's trip count or condition, or a conditional's test, is computed from
    (rule 4): followed back through nodes, loop states, iterators and results, up to the first integer."""
    roles: dict[Value, list[Value]] = {}
    roots: list[Value] = []
    for _, node in graph.structured():
        if isinstance(node, Loop):
            roots += [v for v in (node.trip_count, node.max_trips, node.condition) if v is not None]
            for rec in node.recurrences:
                roles[rec.state] = [rec.init, rec.next]
            for it in node.iterators:
                roles[it.param] = [it.source]
            for out in node.loop_outputs:
                roles[out.result] = [out.value]
        elif isinstance(node, If):
            roots.append(node.inputs[0])  # type: ignore[arg-type]
            for k, result in enumerate(node.outputs):
                roles[result] = [branch.outputs[k] for branch in node.subgraphs()]
    found: set[Value] = set()
    stack = [v for v in roots if v is not None]
    while stack:
        value = stack.pop()
        if value in found or value.dtype is None or value.dtype.kind not in "fb" and not _is_float(value):
            continue
        found.add(value)
        producer = value.producer
        if value in roles:
            stack += roles[value]
        elif producer is not None and not producer.subgraphs():
            stack += [v for v in producer.inputs if v is not None]
    return {v for v in found if _is_float(v)}


def _is_mover(node: Node) -> bool:
    """Whether ``node`` only moves its first operand's elements (a reshape or a transpose), in any type."""
    facts = traits(node.op)
    return not node.subgraphs() and len(node.outputs) == 1 and (facts.reshapes or facts.permutes)


def _moved(value: Value, root: Any) -> bool:
    """Whether ``value`` is made by moves (:func:`_is_mover`) of a value ``root`` holds true of."""
    producer = value.producer
    while producer is not None and _is_mover(producer) and producer.inputs and producer.inputs[0] is not None:
        if root(producer.inputs[0]):
            return True
        producer = producer.inputs[0].producer
    return False


def _from_wide_integers(value: Value | None) -> bool:
    """Whether ``value`` is a Cast of a 32- or 64-bit integer tensor (rule 6): MatMulInteger's and ConvInteger's
    int32 sums, which a dequantizing Mul scales down, reach millions; float16 holds 65504."""
    producer = value.producer if value is not None else None
    source = producer.inputs[0] if producer is not None and producer.op == "Cast" and producer.inputs else None
    return source is not None and source.dtype is not None and source.dtype.kind in "iu" and source.dtype.itemsize >= 4


def _fits(array: Any, dtype: np.dtype[Any]) -> bool:
    """Whether a constant (None: not one) keeps its finite values finite in ``dtype``."""
    if array is None or np.asarray(array).dtype.kind != "f" or np.asarray(array).size == 0:
        return True
    finite = np.asarray(array)[np.isfinite(array)]
    return finite.size == 0 or float(np.max(np.abs(finite))) <= float(ml_dtypes.finfo(dtype).max)


def _carried_values(graph: Graph) -> set[Value]:
    """The values on a path from a float loop state to its next value through elementwise and element-moving
    nodes of the body (rule 5): the recurrence's update."""
    carried: set[Value] = set()
    for _, loop in graph.structured():
        if not isinstance(loop, Loop):
            continue
        for rec in loop.recurrences:
            if not _is_float(rec.state):
                continue
            reached = {rec.state}
            for node in loop.body.nodes:
                if _updates(node) and any(v in reached for v in node.inputs):
                    reached.update(node.outputs)
            back, stack = set(), [rec.next]
            while stack:
                value = stack.pop()
                if value in back or value not in reached:
                    continue
                back.add(value)
                if value.producer is not None and value.producer.graph is loop.body and _updates(value.producer):
                    stack += [v for v in value.producer.inputs if v is not None]
            carried |= {v for v in back if _is_float(v)}
    return carried


def _summed_values(graph: Graph) -> set[Value]:
    """A float32 reduction's large terms and its statistics (rule 2). Large terms: the values on an elementwise
    path into it from a node that squares or multiplies activations or exponentiates (``x*x``, ``exp(x)``), where
    float16 passes 65504 though the sum is float32. Statistics: the values computed from reductions' results and
    constants alone (a mean, a variance, its inverse root). A normalization written out subtracts
    ``mean(x)**2`` from ``mean(x*x)``: in float16 the squares overflow and the difference cancels."""
    reductions = [node for _, node in graph.walk() if node.inputs and node.inputs[0] is not None
                  and traits(node.op).reduction and traits(node.op).precision == "float"]
    fed: set[Value] = set()  # on an elementwise path into a reduction
    stack = [node.inputs[0] for node in reductions]
    while stack:
        value = stack.pop()  # type: ignore[assignment]
        if value is None or value in fed or not _is_float(value) or value.producer is None or not _updates(
                value.producer):
            continue
        fed.add(value)
        stack += value.producer.inputs
    grown: dict[Value, bool] = {}  # whether a value is, or is computed elementwise from, a grower's result

    def grows(value: Value) -> bool:
        if value not in grown:
            producer = value.producer
            grown[value] = value in fed and producer is not None and (_grows(producer) or any(
                grows(v) for v in producer.inputs if v is not None))
        return grown[value]

    summed = {v for v in fed if grows(v)}
    statistics = {v for node in reductions for v in node.outputs}
    for _, node in graph.walk():
        data = [v for v in node.inputs if v is not None and _is_float(v) and constant_value(v) is None]
        if _updates(node) and data and all(v in statistics for v in data):
            statistics.update(v for v in node.outputs if _is_float(v))
    return summed | (statistics - {v for node in reductions for v in node.outputs})  # those are float32 anyway


def _grows(node: Node) -> bool:
    """Whether ``node`` may take an activation far past its own size: a product of two computed values, or an
    exponential."""
    data = [v for v in node.inputs if v is not None and constant_value(v) is None]
    return node.op == "Exp" or (node.op == "Mul" and len(data) == 2)


def _updates(node: Node) -> bool:
    """Whether ``node`` may be part of a state's update: elementwise, or moving elements (no product)."""
    facts = traits(node.op)
    return not node.subgraphs() and (facts.elementwise or facts.precision == "follow")


@functools.lru_cache(maxsize=None)
def _type_params(op: str, n_in: int, n_out: int) -> tuple[tuple[str | None, ...], tuple[str | None, ...]]:
    """For each operand and result of a node of ``op``, the type parameter ONNX's schema gives it (``T``),
    None for a fixed type (Resize's ``scales``): values of one parameter share their type. An op without
    a schema puts all its values in one parameter."""
    try:
        schema = onnx.defs.get_schema(op, onnx.defs.onnx_opset_version())
    except onnx.defs.SchemaError:
        return ("*",) * n_in, ("*",) * n_out
    params = {c.type_param_str for c in schema.type_constraints}

    def at(formals: Any, k: int) -> str | None:
        if k < len(formals):
            formal = formals[k]
        elif formals and formals[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic:
            formal = formals[-1]
        else:
            return None
        return formal.type_str if formal.type_str in params else None

    return tuple(at(schema.inputs, k) for k in range(n_in)), tuple(at(schema.outputs, k) for k in range(n_out))

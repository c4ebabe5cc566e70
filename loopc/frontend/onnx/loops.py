"""ONNX ``Loop`` and ``Scan`` into :class:`loopc.ir.Loop`.

Both translate role for role into TensorRT's loop language (the roles of :class:`loopc.ir.Loop`):
``M`` is the trip count, ``cond`` a recurrence whose state is the while condition, loop-carried
values and Scan states are recurrences with "last" outputs, scan outputs are "concat" (or
"reverse") outputs, Scan inputs are iterators. Outer-scope reads need no translation: the body is
translated in a child :class:`Scope`, so such a name resolves to the outer value itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx

from loopc.errors import FrontendError, UnsupportedOpError, located
from loopc.ir.builder import I64, Builder
from loopc.frontend.onnx.importer import Context, Scope, lookup, translate_graph
from loopc.frontend.onnx.registry import translates
from loopc.frontend.onnx.validate import iteration_rank
from loopc.frontend.onnx.value_types import type_of
from loopc.ir import Graph, Loop, LoopIterator, LoopOutput, Recurrence, Value, constant_int
from loopc.loop_rules import MAX_TRIPS
from loopc.ir.core import Shape

BOOL = np.dtype(np.bool_)

UNBOUNDED = "unbounded: the loop has neither a trip count M nor a condition"


def emitter(ctx: Context, node: onnx.NodeProto, graph: Graph) -> Builder:
    """The emitter for the nodes ``node`` lowers to (named after its name or first output)."""
    label = node.name or next((o for o in node.output if o), node.op_type.lower())
    return Builder(graph, label=label, origin=ctx.describe(node), names=ctx.fresh)


def graph_attr(ctx: Context, node: onnx.NodeProto, name: str) -> onnx.GraphProto:
    for attr in node.attribute:
        if attr.name == name and attr.type == onnx.AttributeProto.GRAPH:
            return attr.g
    raise located(FrontendError, ctx.describe(node), f"missing graph attribute {name!r}")


def int_attr(node: onnx.NodeProto, name: str, default: int) -> int:
    for attr in node.attribute:
        if attr.name == name:
            return int(attr.i)
    return default


def ints_attr(node: onnx.NodeProto, name: str) -> list[int] | None:
    for attr in node.attribute:
        if attr.name == name:
            return [int(v) for v in attr.ints]
    return None


def declared_type(ctx: Context, vi: onnx.ValueInfoProto) -> tuple[np.dtype[Any] | None, Shape | None]:
    """A body input's type: shape inference's answer, else what the body declares (often nothing)."""
    inferred = ctx.value(vi.name)
    declared = Value(vi.name)
    if vi.type.HasField("tensor_type"):
        declared.dtype, declared.shape = type_of(vi.type)
    return inferred.dtype or declared.dtype, inferred.shape if inferred.shape is not None else declared.shape


def param(ctx: Context, vi: onnx.ValueInfoProto, dtype: np.dtype[Any] | None = None, shape: Shape | None = None) -> Value:
    """A body parameter for ``vi``; the outer type fills what the body leaves undeclared."""
    own_dtype, own_shape = declared_type(ctx, vi)
    return Value(vi.name, own_dtype or dtype, own_shape if own_shape is not None else shape)


def result_value(ctx: Context, name: str, dtype: np.dtype[Any] | None, shape: Shape | None) -> Value:
    """The outer value a loop output binds, typed by shape inference or else by what the loop knows."""
    value = ctx.value(name) if name else Value(ctx.fresh("unused"))
    value.dtype = value.dtype or dtype
    if value.shape is None:
        value.shape = shape
    return value


def stacked(shape: Shape | None, axis: int, length: Any = None) -> Shape | None:
    """The shape of per-trip values of ``shape`` stacked along ``axis``."""
    if shape is None:
        return None
    dims = list(shape)
    dims.insert(axis, length if isinstance(length, int) else None)
    return tuple(dims)


def carried_shape(rec: Recurrence) -> Shape | None:
    """The state's dims: a dim unknown inside the body is ``d`` when both the initial value and the
    next value (computed with that dim unknown) have ``d`` there — so every trip has it; a declared
    dim that the initial or the next value contradicts (a carried value that grows) is unknown."""
    state, init, nxt = rec.state.shape, rec.init.shape, rec.next.shape
    if state is None or init is None or nxt is None or not len(state) == len(init) == len(nxt):
        return state
    return tuple(None if isinstance(a, int) and any(isinstance(d, int) and d != a for d in (b, c))
                 else a if isinstance(a, int) or not (isinstance(b, int) and b == c) else b
                 for a, b, c in zip(state, init, nxt))


def translate_body(ctx: Context, body: onnx.GraphProto, scope: Scope, params: list[Value], name: str,
                   prologue: Callable[[Graph, Scope], None] | None = None) -> Graph:
    """The body in a child scope, so outer-scope names resolve to the outer values (loop invariants);
    ``prologue`` adds nodes ahead of the body's own and binds what they compute in that scope."""
    inner = Scope(scope)
    for value in params:
        inner.bind(value.name, value)
    first = (lambda ir: prologue(ir, inner)) if prologue is not None else None
    return translate_graph(ctx, body, inner, name, inputs=params, prologue=first)


def reads(graph: Graph, value: Value) -> bool:
    """Whether anything in ``graph`` (a body whose parameter ``value`` is, so nothing else sees it) reads ``value``."""
    return value.is_used()


# --------------------------------------------------------------------------------------------- Loop


@translates("Loop")
def translate_loop(ctx: Context, node: onnx.NodeProto, scope: Scope, graph: Graph) -> None:
    """ONNX Loop (every opset: 1, 11, 13, 16, 19, 21, 23 share one structure) into an IR loop."""
    what = ctx.describe(node)
    body_proto = graph_attr(ctx, node, "body")
    if len(node.input) < 2:
        raise located(FrontendError, what, f"Loop takes inputs (M, cond, v_initial...), M and cond possibly empty; "
                      f"it has {len(node.input)} input(s)")
    carried = list(node.input[2:])
    n, k = len(carried), len(node.output) - len(carried)
    if k < 0:
        raise located(FrontendError, what, f"{n} loop-carried inputs but only {len(node.output)} outputs")
    if len(body_proto.input) != 2 + n:
        raise located(FrontendError, what, f"the body has {len(body_proto.input)} inputs; a Loop with {n} loop-carried "
                      f"value(s) needs {2 + n} (iteration_num, cond, then the carried values)")
    if len(body_proto.output) != 1 + n + k:
        raise located(FrontendError, what, f"the body has {len(body_proto.output)} outputs; a Loop with {n} carried "
                      f"value(s) and {k} scan output(s) needs {1 + n + k} (cond, carried..., scan...)")
    trip = lookup(ctx, node, scope, node.input[0]) if node.input[0] else None
    cond = lookup(ctx, node, scope, node.input[1]) if node.input[1] else None
    _check_kind(what, trip, "iu", "trip count M", "an integer")
    _check_kind(what, cond, "b", "condition cond", "a bool")
    if cond is not None and (constant_int(trip) or 0) >= MAX_TRIPS:
        trip = None  # exporters write `while cond` as M = INT64_MAX: it bounds nothing TensorRT can count
    if trip is None and cond is None:
        raise located(UnsupportedOpError, what, f"{UNBOUNDED}")
    em = emitter(ctx, node, graph)

    inits = [lookup(ctx, node, scope, name) if name else None for name in carried]
    if any(v is None for v in inits):
        raise located(FrontendError, what, "a loop-carried initial value is empty; ONNX requires each one")
    iteration = body_proto.input[0]
    counter = Value(iteration.name, I64, ())
    prologue = None
    if iteration_rank(iteration) == 1 and _reads_name(body_proto, iteration.name):
        counter = Value(ctx.fresh(f"{iteration.name}_scalar"), I64, ())
        prologue = _counter_as_1d(em, counter, iteration.name)
    cond_param = param(ctx, body_proto.input[1], BOOL, ())
    states = [param(ctx, vi, init.dtype, init.shape) for vi, init in zip(body_proto.input[2:], inits) if init]
    label = node.name or node.output[0]
    body = translate_body(ctx, body_proto, scope, [counter, cond_param, *states], f"{label}_body", prologue)
    cond_out, nexts, scans = body.outputs[0], body.outputs[1:1 + n], body.outputs[1 + n:]
    _check_kind(f"{what}: body output", cond_out, "b", "cond", "a bool")
    if cond is not None:
        cond_out = _like(em.into(body), cond_out, cond)

    recurrences, condition = [], None
    if cond is not None:
        # The condition is read at the start of each trip, before the body: exactly ONNX's
        # `for (i = 0; i < M && cond; ++i) cond = body(...)`, with cond carried from trip to trip.
        recurrences.append(Recurrence(cond_param, cond, cond_out))
        condition = cond_param
    elif reads(body, cond_param):
        # No cond: ONNX ignores the body's cond output for termination, but the body may still read
        # the carried flag, which starts out true.
        recurrences.append(Recurrence(cond_param, em.const(True), cond_out))
    recurrences += [Recurrence(s, init, nxt) for s, init, nxt in zip(states, inits, nexts) if init]
    for rec in recurrences:
        rec.state.shape = carried_shape(rec)

    outputs = [LoopOutput("last", s, result_value(ctx, name, s.dtype or init.dtype, s.shape or init.shape))
               for s, init, name in zip(states, inits, node.output[:n]) if name and init]
    length = None if condition is not None else constant_int(trip)
    outputs += [LoopOutput("concat", v, result_value(ctx, name, v.dtype, stacked(v.shape, 0, length)), 0)
                for v, name in zip(scans, node.output[n:]) if name]
    loop = Loop(body, trip_count=trip, condition=condition, counter=counter if reads(body, counter) else None,
                recurrences=recurrences, loop_outputs=outputs,
                name=ctx.fresh(label), origin=what)
    graph.add(loop)
    for out in outputs:
        scope.bind(out.result.name, out.result)


def _counter_as_1d(em: Builder, counter: Value, name: str) -> Callable[[Graph, Scope], None]:
    """Binds ``name`` in the body to the scalar counter as a [1] tensor: a body that declares its
    iteration number [1] (paddle2onnx does) gets one, as onnxruntime feeds it."""
    def prologue(ir: Graph, inner: Scope) -> None:
        into = em.into(ir)
        inner.bind(name, into.op("Reshape", [counter, into.const([1], np.int64)], out=Value(name, I64, (1,))))

    return prologue


def _reads_name(graph: onnx.GraphProto, name: str) -> bool:
    """Whether any node of ``graph`` (at any depth) or its outputs read ``name``."""
    return any(vi.name == name for vi in graph.output) or any(
        name in node.input or any(_reads_name(attr.g, name) for attr in node.attribute
                                  if attr.type == onnx.AttributeProto.GRAPH)
        for node in graph.node)


def _like(em: Builder, flag: Value, start: Value) -> Value:
    """The body's next condition in the shape of the one it starts from: TorchScript starts a ``while`` with a
    scalar and computes ``bool(x.item() > t)`` of a [1] tensor as a bool[1], both one element (the validator says
    so), which onnxruntime takes alike."""
    if flag.shape is None or start.shape is None or flag.shape == start.shape or \
            not all(isinstance(d, int) for d in start.shape):
        return flag
    return em.op("Reshape", [flag, em.const(np.array(start.shape, np.int64))])


def _check_kind(what: str, value: Value | None, kinds: str, role: str, wanted: str) -> None:
    if value is not None and value.dtype is not None and value.dtype.kind not in kinds:
        raise located(FrontendError, what, f"{role} {value.name!r} must be {wanted} tensor, not {value.dtype}")


# --------------------------------------------------------------------------------------------- Scan


@translates("Scan")
def translate_scan(ctx: Context, node: onnx.NodeProto, scope: Scope, graph: Graph) -> None:
    """Scan-9+ directly; Scan-8 (batch axis 0 on every input and output) as a loop over the batch
    around the per-sequence loop, since TensorRT loops run one trip count for all batch items."""
    if ctx.opset < 9:
        _scan8(ctx, node, scope, graph)
        return
    what = ctx.describe(node)
    m = _num_scan_inputs(ctx, node, len(node.input))
    n = len(node.input) - m
    inputs = [lookup(ctx, node, scope, name) for name in node.input]
    results = _scan_loop(ctx, node, scope, emitter(ctx, node, graph), inputs[:n], inputs[n:],
                         [ctx.value(name) if name else None for name in node.output], what)
    for name, value in zip(node.output, results):
        if name:
            scope.bind(name, value)


def _num_scan_inputs(ctx: Context, node: onnx.NodeProto, available: int) -> int:
    m = int_attr(node, "num_scan_inputs", 0)
    if not 1 <= m <= available:
        raise located(FrontendError, ctx.describe(node), f"num_scan_inputs={m}, but the node has {available} "
                      f"state and scan inputs")
    return m


def _scan_loop(
    ctx: Context,
    node: onnx.NodeProto,
    scope: Scope,
    em: Builder,
    inits: list[Value],
    sources: list[Value],
    results: list[Value | None],
    what: str,
    batch_axis: bool = False,
) -> list[Value]:
    """Emit the loop one Scan runs per sequence into ``em.graph``; return its outputs by position.

    ``results`` are pre-made output values (None where the output is unused and for Scan-8's inner loop).
    """
    body_proto = graph_attr(ctx, node, "body")
    n, m = len(inits), len(sources)
    k = len(node.output) - n
    if len(body_proto.input) != n + m or len(body_proto.output) != n + k or k < 0:
        raise located(FrontendError, what, f"the body has {len(body_proto.input)} inputs and {len(body_proto.output)} "
                      f"outputs; this Scan needs {n + m} ({n} states, {m} scan inputs) and "
                      f"{len(node.output)} ({n} states, {max(k, 0)} scan outputs)")
    if batch_axis:  # Scan-8: one axis attribute for all inputs, always the sequence axis
        in_axes, out_axes, out_dirs = [0] * m, [0] * k, [0] * k
        in_dirs = ints_attr(node, "directions") or [0] * m
    else:
        in_axes = ints_attr(node, "scan_input_axes") or [0] * m
        in_dirs = ints_attr(node, "scan_input_directions") or [0] * m
        out_axes = ints_attr(node, "scan_output_axes") or [0] * k
        out_dirs = ints_attr(node, "scan_output_directions") or [0] * k
    for attr, values, count in (("scan input axes", in_axes, m), ("scan input directions", in_dirs, m),
                                ("scan output axes", out_axes, k), ("scan output directions", out_dirs, k)):
        if len(values) != count:
            raise located(FrontendError, what, f"{len(values)} {attr} for {count} {attr.rsplit(' ', 1)[0]}s")
        if attr.endswith("directions") and any(d not in (0, 1) for d in values):
            raise located(FrontendError, what, f"{attr} {values} must each be 0 (forward) or 1 (reverse)")
    in_axes = [_axis(what, a, _rank(s.shape, vi, 1), "scan input") for a, s, vi in
               zip(in_axes, sources, body_proto.input[n:])]
    _check_roles(ctx, node, inits, sources, in_axes, body_proto, m)
    states = [param(ctx, vi, init.dtype, init.shape) for vi, init in zip(body_proto.input[:n], inits)]
    elems = [param(ctx, vi, s.dtype, _drop(s.shape, a)) for vi, s, a in zip(body_proto.input[n:], sources, in_axes)]
    label = node.name or node.output[0]
    body = translate_body(ctx, body_proto, scope, states + elems, f"{label}_body")
    nexts, scans = body.outputs[:n], body.outputs[n:]
    trip = em.dim(sources[0], in_axes[0])
    outputs: list[LoopOutput] = []
    final: list[Value] = []
    for state, init, result in zip(states, inits, results[:n]):
        out = result or em.value("state")
        out.dtype, out.shape = out.dtype or init.dtype, out.shape if out.shape is not None else init.shape
        outputs.append(LoopOutput("last", state, out))
        final.append(out)
    for value, result, axis, direction, vi in zip(scans, results[n:], out_axes, out_dirs, body_proto.output[n:]):
        rank = len(value.shape) + 1 if value.shape is not None else _rank(None, vi, 1)
        axis = _axis(what, axis, rank, "scan output")
        if rank is not None and axis >= rank:
            raise ctx.error(node, f"scan output axis {axis} is out of range for {vi.name!r} stacked to rank {rank}")
        out = result or em.value("scan")
        out.dtype = out.dtype or value.dtype
        if out.shape is None:
            out.shape = stacked(value.shape, axis, constant_int(trip))
        # ONNX's reverse scan output prepends each trip's value: TensorRT's kREVERSE output.
        outputs.append(LoopOutput("reverse" if direction == 1 else "concat", value, out, axis))
        final.append(out)
    # ONNX's reverse scan input reads the sequence from its end: an iterator with reverse=True.
    iterators = [LoopIterator(p, s, a, d == 1) for p, s, a, d in zip(elems, sources, in_axes, in_dirs)]
    loop = Loop(body, trip_count=trip, iterators=iterators,
                recurrences=[Recurrence(s, i, x) for s, i, x in zip(states, inits, nexts)],
                loop_outputs=outputs, name=ctx.fresh(label), origin=what)
    em.place(loop)
    return final


def _check_roles(ctx: Context, node: onnx.NodeProto, inits: list[Value], sources: list[Value], axes: list[int],
                 body: onnx.GraphProto, m: int) -> None:
    """``num_scan_inputs`` splits the inputs into states and scanned sequences; the body's declared
    inputs must agree (a state keeps its rank, a scanned element has one dim less), or a state would
    silently be scanned. Scanned inputs share their length along their axes."""
    hint = f"check num_scan_inputs={m}: the last {m} inputs are scanned, the others are states"
    for role, outer, vis, less in (("state", inits, body.input[:len(inits)], 0),
                                   ("scan input", sources, body.input[len(inits):], 1)):
        for value, vi in zip(outer, vis):
            dtype, shape = type_of(vi.type) if vi.type.HasField("tensor_type") else (None, None)
            if value.shape is not None and shape is not None and len(shape) != len(value.shape) - less:
                raise ctx.error(node, f"{role} {value.name!r} has rank {len(value.shape)}, so the body's input "
                                f"{vi.name!r} must have rank {len(value.shape) - less}, not {len(shape)}", hint=hint)
            if value.dtype is not None and dtype is not None and value.dtype != dtype:
                raise ctx.error(node, f"{role} {value.name!r} is {value.dtype}, but the body's input {vi.name!r} "
                                f"is {dtype}", hint=hint)
    for value, axis in zip(sources, axes):
        if value.shape is not None and axis >= len(value.shape):
            raise ctx.error(node, f"scan input axis {axis} is out of range for {value.name!r} of rank "
                            f"{len(value.shape)}")
    lengths = [(s.shape[a], s.name) for s, a in zip(sources, axes)
               if s.shape is not None and isinstance(s.shape[a], int)]
    for length, name in lengths[1:]:
        if length != lengths[0][0]:
            raise ctx.error(node, f"scan inputs {lengths[0][1]!r} and {name!r} differ in length along their scan "
                            f"axes ({lengths[0][0]} and {length})")


def _rank(shape: Shape | None, vi: onnx.ValueInfoProto, extra: int) -> int | None:
    """Rank of an outer scan tensor: its own, or its body element's plus the scanned axis."""
    if shape is not None:
        return len(shape)
    if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
        return len(vi.type.tensor_type.shape.dim) + extra
    return None


def _axis(what: str, axis: int, rank: int | None, role: str) -> int:
    if axis >= 0:
        return axis
    if rank is None:
        raise located(UnsupportedOpError, what, f"{role} axis {axis} is negative and the rank is unknown; "
                      f"give the model static ranks (run shape inference) or a non-negative axis")
    if axis < -rank:
        raise located(FrontendError, what, f"{role} axis {axis} is out of range for rank {rank}")
    return axis + rank


def _drop(shape: Shape | None, axis: int) -> Shape | None:
    if shape is None or axis >= len(shape):
        return None
    return shape[:axis] + shape[axis + 1:]


def _scan8(ctx: Context, node: onnx.NodeProto, scope: Scope, graph: Graph) -> None:
    """Scan-8: ``(sequence_lens, states..., scans...)`` with batch axis 0 everywhere.

    The outer loop iterates the batch (axis 0 of every state and scan input) and concatenates
    the inner loop's results on axis 0 again, so each batch item runs the Scan-9 loop on its own.
    """
    what = ctx.describe(node)
    if not node.input:
        raise located(FrontendError, what, "Scan-8 takes (sequence_lens, initial states..., scan inputs...)")
    if node.input[0]:
        raise UnsupportedOpError(
            f"{what}: Scan-8 sequence_lens is not supported: per-batch sequence lengths give each batch "
            f"item its own trip count and padded scan outputs, which one TensorRT loop cannot express; "
            f"export with opset 9+ (Scan without a batch axis) or without sequence_lens")
    m = _num_scan_inputs(ctx, node, len(node.input) - 1)
    inputs = [lookup(ctx, node, scope, name) for name in node.input[1:]]
    n = len(inputs) - m
    outer_em = emitter(ctx, node, graph)
    label = node.name or node.output[0]
    body = Graph(f"{label}_batch")
    params = [Value(ctx.fresh(f"{label}_item"), v.dtype, _drop(v.shape, 0)) for v in inputs]
    inner = _scan_loop(ctx, node, scope, outer_em.into(body), params[:n], params[n:], [None] * len(node.output),
                       what, batch_axis=True)
    batch = outer_em.dim(inputs[-1], 0)
    outputs = []
    for name, value in zip(node.output, inner):
        if name and value is not None:
            result = result_value(ctx, name, value.dtype, stacked(value.shape, 0, constant_int(batch)))
            outputs.append(LoopOutput("concat", value, result, 0))
    loop = Loop(body, trip_count=batch, iterators=[LoopIterator(p, v, 0) for p, v in zip(params, inputs)],
                loop_outputs=outputs, name=ctx.fresh(f"{label}_batch"), origin=what)
    graph.add(loop)
    for out in outputs:
        scope.bind(out.result.name, out.result)

"""An IR :class:`~loopc.ir.Loop` as an ONNX ``Loop``: each role becomes what ONNX spells it with.

* the trip count is ``M``; iterators are ``Gather(source, i)`` reads by the iteration number (``len - 1 - i``
  when reversed); recurrences are loop-carried values, their "last" outputs the carried finals;
* "concat" outputs are scan outputs (moved to their axis by a ``Transpose``), "reverse" ones are scan outputs
  read backwards (a ``Slice`` with step -1);
* the while condition: ONNX tests ``cond`` *before* a trip from the previous trip's ``cond_out``, where the IR
  computes it at the start of the trip from the trip's parameters. A condition that is a recurrence state is
  exactly ONNX's carried ``cond``; any other is computed twice, on the first trip's parameters before the loop
  and on the next trip's at the end of the body.

A padded loop (see :mod:`loopc.passes.while_outputs`) is written as a plain one: its scan outputs then hold
the trips run (ONNX's meaning), as long as the cut the pass put after the loop, so that cut holds both in a
runtime that pads (TensorRT's parser) and in one that does not.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx_graphsurgeon as gs
from onnx import helper

from loopc.backend.onnx.writer import _dims
from loopc.errors import BackendError
from loopc.ir import Loop, LoopIterator, LoopOutput, Recurrence, Value
from loopc.ir.loop import reads
from loopc.passes.gather_to_iterator import trip_long

if TYPE_CHECKING:
    from loopc.backend.onnx.writer import Scope, Writer

I64 = np.dtype(np.int64)
BOOL = np.dtype(np.bool_)
INT64_MIN = np.iinfo(np.int64).min


def write_loop(w: Writer, loop: Loop, scope: Scope, out: list[gs.Node]) -> None:
    """Append ``loop`` (and the little it needs before it: the first trip's condition, index bounds) to ``out``."""
    name = loop.name or "loop"
    what = loop.describe()
    body: list[gs.Node] = []
    inner: Scope = ChainMap({}, scope)
    i = w.variable(f"{name}_i", I64, [])
    cond_in = w.variable(f"{name}_cond", BOOL, loop.condition.shape if loop.condition is not None else [])
    trips = w.read(scope, loop.trip_count, what) if loop.trip_count is not None else gs.Variable.empty()
    if loop.trip_count is not None and loop.trip_count.dtype != I64:
        trips = w.op(out, "Cast", [trips], f"{name}_M", I64, [], {"to": helper.np_dtype_to_tensor_dtype(I64)})
    if loop.counter is not None:
        inner[loop.counter] = _as(w, body, i, loop.counter)
    sources: dict[LoopIterator, gs.Tensor] = {}
    for it in loop.iterators:
        source = sources[it] = w.read(scope, it.source, what)
        if loop.trip_count is not None and not trip_long(it.source, it.axis, loop.trip_count):
            source = sources[it] = _first_rows(w, out, source, it.axis, trips)
        index = w.op(body, "Sub", [_last_index(w, out, source, it.axis), i], f"{it.param.name}_index", I64, []) \
            if it.reverse else i
        inner[it.param] = w.op(body, "Gather", [source, index], it.param.name, it.param.dtype, it.param.shape,
                               {"axis": it.axis})

    lasts = [o for o in loop.loop_outputs if o.kind == "last"]
    cond_rec = next((r for r in loop.recurrences if r.state is loop.condition), None)
    carried = [r for r in loop.recurrences if r is not cond_rec or any(o.value is r.state for o in lasts)]
    if cond_rec is not None:
        inner[cond_rec.state] = cond_in
    states = []
    for rec in carried:
        state = w.typed(rec.state)
        states.append(state)
        inner.setdefault(rec.state, state)

    if cond_rec is not None:
        cond_init = w.read(scope, cond_rec.init, what)
    elif loop.condition is not None:
        cond_init = _condition(w, loop, scope, out, _first_trip(w, loop, sources, scope, out))
    else:  # always true; given rather than omitted, since TensorRT's parser needs the body's cond input bound
        cond_init = w.const(out, np.array(True), f"{name}_true")

    w.nodes(loop.body.nodes, inner, body)

    if cond_rec is not None:
        cond_out = w.read(inner, cond_rec.next, what)
    elif loop.condition is not None:
        cond_out = _condition(w, loop, inner, body, _next_trip(w, loop, sources, inner, body, i, out))
    else:
        cond_out = cond_in
    stacked = [o for o in loop.loop_outputs if o.kind != "last"]
    yields = w.yields(body, [cond_out] + [w.read(inner, r.next, what) for r in carried]
                       + [w.read(inner, o.value, what) for o in stacked], what)

    finals = {}
    for rec in carried:
        first = next((o for o in lasts if o.value is rec.state), None)
        finals[rec.state] = w.typed(first.result) if first is not None else w.variable(f"{rec.state.name}_final",
                                                                                       rec.state.dtype)
    scans = [w.variable(f"{o.result.name}_scan", o.result.dtype) if o.kind == "reverse" or o.axis else
             w.variable(o.result.name, o.result.dtype, _stacked_shape(loop, o)) for o in stacked]
    graph = w.subgraph(loop.body, [i, cond_in, *states], body, yields)
    out.append(gs.Node("Loop", name=w.fresh(name), attrs={"body": graph},
                       inputs=[trips, cond_init, *(w.read(scope, r.init, what) for r in carried)],
                       outputs=[*finals.values(), *scans]))
    for o in lasts:  # the first "last" output of a state is the carried final, any other a copy of it
        final = finals.get(o.value)
        if final is None:
            raise BackendError(f"{what}: 'last' output {o.result.name!r} reads {o.value.name!r}, not a recurrence "
                               "state")
        first = next(f for f in lasts if f.value is o.value)
        scope[o.result] = final if first is o else w.op(out, "Identity", [final], o.result.name, o.result.dtype,
                                                        o.result.shape)
    for o, scan in zip(stacked, scans):
        scope[o.result] = _placed(w, loop, o, scan, out)


def _as(w: Writer, nodes: list[gs.Node], tensor: gs.Tensor, value: Value) -> gs.Tensor:
    """``tensor`` (int64) cast to ``value``'s dtype when that differs."""
    if value.dtype is None or value.dtype == I64:
        return tensor
    return w.op(nodes, "Cast", [tensor], value.name, value.dtype, value.shape,
                {"to": helper.np_dtype_to_tensor_dtype(value.dtype)})


def _first_rows(w: Writer, out: list[gs.Node], source: gs.Tensor, axis: int, trips: gs.Tensor) -> gs.Tensor:
    """``source`` cut to the loop's ``trips`` along ``axis``. The IR's iterators are that long (TensorRT's builder
    wants them so), often by how a pass made them; written out, the cut shows it to whoever reads the export."""
    end = w.op(out, "Reshape", [trips, w.const(out, np.array([1], np.int64), f"{source.name}_trips_dims")],
               f"{source.name}_trips_end", I64, [1])
    starts, axes = (w.const(out, np.array([v], np.int64), f"{source.name}_trips_{part}")
                    for part, v in (("start", 0), ("axis", axis)))
    shape = getattr(source, "shape", None)
    return w.op(out, "Slice", [source, starts, end, axes], f"{source.name}_trips", source.dtype,
                None if shape is None else [None if k == axis else d for k, d in enumerate(shape)])


def _last_index(w: Writer, out: list[gs.Node], source: gs.Tensor, axis: int) -> gs.Tensor:
    """``source.shape[axis] - 1``, computed before the loop."""
    shape = w.op(out, "Shape", [source], f"{source.name}_shape", I64, [None])
    length = w.op(out, "Gather", [shape, w.const(out, np.array(axis, np.int64), f"{source.name}_axis")],
                  f"{source.name}_length", I64, [])
    return w.op(out, "Sub", [length, w.const(out, np.array(1, np.int64), f"{source.name}_one")],
                f"{source.name}_last", I64, [])


def _bound(w: Writer, loop: Loop, sources: dict[LoopIterator, gs.Tensor], nodes: list[gs.Node],
           counter: Callable[[], gs.Tensor], index: Callable[[LoopIterator], gs.Tensor],
           state: Callable[[Recurrence], gs.Tensor], tag: str) -> dict[Value, gs.Tensor]:
    """The parameters the condition reads, bound for one trip: the counter, each iterator's element at
    ``index(it)`` of its source, each recurrence's ``state(rec)``."""
    read = {v for node in loop.condition_nodes() for v in reads(node)} | {loop.condition}
    bound: dict[Value, gs.Tensor] = {}
    if loop.counter is not None and loop.counter in read:
        bound[loop.counter] = counter()
    for it in loop.iterators:
        if it.param in read:
            bound[it.param] = w.op(nodes, "Gather", [sources[it], index(it)], f"{it.param.name}_{tag}", it.param.dtype,
                                   it.param.shape, {"axis": it.axis})
    bound.update({rec.state: state(rec) for rec in loop.recurrences if rec.state in read})
    return bound


def _first_trip(w: Writer, loop: Loop, sources: dict[LoopIterator, gs.Tensor], scope: Scope,
                out: list[gs.Node]) -> dict[Value, gs.Tensor]:
    """The parameters of trip 0 that the condition reads, as tensors before the loop."""
    def counter() -> gs.Tensor:
        assert loop.counter is not None
        return w.const(out, np.array(0, loop.counter.dtype or I64), f"{loop.counter.name}_first")

    def index(it: LoopIterator) -> gs.Tensor:
        return _last_index(w, out, sources[it], it.axis) if it.reverse else w.const(out, np.array(0, np.int64),
                                                                                   f"{it.param.name}_zero")

    return _bound(w, loop, sources, out, counter, index, lambda rec: w.read(scope, rec.init, loop.describe()), "first")


def _next_trip(w: Writer, loop: Loop, sources: dict[LoopIterator, gs.Tensor], inner: Scope, body: list[gs.Node],
               i: gs.Tensor, out: list[gs.Node]) -> dict[Value, gs.Tensor]:
    """The parameters of the next trip that the condition reads, as tensors at the end of this one's body. An
    iterator's next element is read clamped to its source: past the end, no trip is left to test."""
    step = w.op(body, "Add", [i, w.const(body, np.array(1, np.int64), f"{loop.name}_step")], f"{loop.name}_next_i",
                I64, [])

    def counter() -> gs.Tensor:
        assert loop.counter is not None
        return _as(w, body, step, loop.counter)

    def index(it: LoopIterator) -> gs.Tensor:
        last = _last_index(w, out, sources[it], it.axis)
        if not it.reverse:
            return w.op(body, "Min", [step, last], f"{it.param.name}_next_index", I64, [])
        back = w.op(body, "Sub", [last, step], f"{it.param.name}_back", I64, [])
        return w.op(body, "Max", [back, w.const(body, np.array(0, np.int64), f"{it.param.name}_zero")],
                    f"{it.param.name}_next_index", I64, [])

    return _bound(w, loop, sources, body, counter, index, lambda rec: w.read(inner, rec.next, loop.describe()), "next")


def _condition(w: Writer, loop: Loop, scope: Scope, nodes: list[gs.Node], bound: dict[Value, gs.Tensor]) -> gs.Tensor:
    """The condition's nodes written again with the parameters ``bound``; its result as a bool."""
    assert loop.condition is not None
    env: Scope = ChainMap(bound, scope)
    w.nodes(loop.condition_nodes(), env, nodes)
    cond = w.read(env, loop.condition, loop.describe())
    if loop.condition.dtype == BOOL:
        return cond
    return w.op(nodes, "Cast", [cond], f"{loop.condition.name}_bool", BOOL, loop.condition.shape,
                {"to": helper.np_dtype_to_tensor_dtype(BOOL)})


def _stacked_shape(loop: Loop, o: LoopOutput) -> Any:
    """A stacked output's dims, its trips unknown when the loop is padded (ONNX holds only the trips run)."""
    if o.result.shape is None:
        return None
    return _dims(tuple(None if loop.padded and k == o.axis else d for k, d in enumerate(o.result.shape)))


def _placed(w: Writer, loop: Loop, o: LoopOutput, scan: gs.Tensor, out: list[gs.Node]) -> gs.Tensor:
    """A scan output (trips on axis 0, first trip first) as ``o`` stacks them: reversed, on its axis."""
    if o.kind != "reverse" and o.axis == 0:
        return scan
    result = scan
    if o.kind == "reverse":
        consts = [w.const(out, np.array([v], np.int64), f"{o.result.name}_{part}")
                  for part, v in (("start", -1), ("end", INT64_MIN), ("axes", 0), ("steps", -1))]
        last = o.axis == 0
        result = w.op(out, "Slice", [scan, *consts], o.result.name if last else f"{o.result.name}_reversed",
                      o.result.dtype, _stacked_shape(loop, o) if last else None)
    if o.axis != 0:
        if o.value.shape is None:
            raise BackendError(f"{loop.describe()}: output {o.result.name!r} stacks at axis {o.axis} a value of "
                               "unknown rank; ONNX's scan outputs stack on axis 0, and moving it needs the rank")
        rank = len(o.value.shape) + 1
        perm = list(range(1, o.axis + 1)) + [0] + list(range(o.axis + 1, rank))
        result = w.op(out, "Transpose", [result], o.result.name, o.result.dtype, _stacked_shape(loop, o),
                      {"perm": perm})
    return result

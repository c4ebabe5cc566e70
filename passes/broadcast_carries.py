"""A carried value that every trip broadcasts before using it starts broadcast: the loop carries one shape.

OpenVINO's TensorFlow frontend carries a TensorArray's buffer (a ``tf.while_loop`` writing a token per step,
``tf.scan``'s stacked states) as a placeholder, ``[T, 1]``, that each trip broadcasts to the items' shape before
writing one: ``Expand(buf, Concat(Shape(buf)[:1], Shape(item)))``. A TensorRT loop carries a value in one shape,
the placeholder's; with a dynamic batch the steady shape ``[T, B]`` is unknown when compiling, so steady-carries
cannot peel the first trip, and an engine built for a range of batches is right for a batch of 1 only.
Broadcasting the initial value once before the loop, to the shape trip 0 broadcasts it to (computed on a copy of
trip 0, of which dead code keeps what that shape needs), carries the steady shape from the start. The copy reads
the iterators' first rows, padded with a row of zeros so that a loop over nothing has one to read; a loop that may
run no trip must not index rows by its counter on the way to the shape.

Why the loop computes the same: ``Expand(Expand(x, s), s) = Expand(x, s)``, so trip 0's broadcast of the new
initial value is the old one's as long as trip 0's target ``s`` is unchanged. It is when every entry of the target
either does not depend on the carried value or is the carried value's own dim at the same position (the
``Shape(buf)[:1]`` above): broadcasting keeps a dim that the target repeats. Later trips see the same values as
before. Only a loop that may run no trip could tell: it returns its initial value, so its result is chosen by the
trips run, the placeholder again after none.

When: the carried value's readers are that one Expand (as its data), ``Shape`` nodes read only on the way to the
target, and its last value after the loop; its initial value has a dim of at most 1 that the broadcast may widen;
the body holds no nested graphs (trip 0 is copied node by node).
"""

from __future__ import annotations

import numpy as np

from loopc.ir import Graph, Loop, LoopIterator, LoopOutput, Node, Recurrence, Value
from loopc.ir.bounds import Bounder
from loopc.ir.builder import Builder
from loopc.passes._offending import Offending
from loopc.passes._why import declined, kept_if
from loopc.passes._util import I64, computed_from, runs_a_trip, shape_entry_source, trips_run
from loopc.passes.manager import PassResult


class BroadcastCarries:
    name = "broadcast-carries"
    benefit = 20  # see loopc.passes.legalize

    def __call__(self, graph: Graph) -> PassResult:
        hoisted, offending = 0, Offending()
        for outer, node in list(graph.structured()):
            if not isinstance(node, Loop):
                continue
            for rec in list(node.recurrences):
                with kept_if(lambda: offending.carry(node, rec)):
                    expand = broadcast_of(node, rec)
                if expand is not None:
                    _hoist(outer, node, rec, expand)
                    offending.changed()
                    hoisted += 1
        return PassResult(graph, hoisted > 0, {"hoisted": hoisted} if hoisted else {})


def broadcast_of(loop: Loop, rec: Recurrence) -> Node | None:
    """The Expand that broadcasts ``rec``'s state on every trip, when broadcasting its initial value before the
    loop instead computes the same (see the module's docstring); else None, saying why."""
    state, init = rec.state, rec.init
    carried = f"carried value '{state.name}'"
    if any(n.subgraphs() for n in loop.body.nodes):
        return declined("the loop's body holds nested graphs, and trip 0 is copied node by node", at=loop)
    expands = [u.user for u in state.uses() if isinstance(u.user, Node) and u.user.op == "Expand" and u.slot == 0]
    if len(expands) != 1 or init.shape is None or state.shape is None:
        return declined(f"{carried} is not broadcast by one Expand on every trip, from a known rank", at=loop)
    expand = expands[0]
    target, widened = expand.inputs[1], expand.outputs[0].shape
    bounds = Bounder().of(init)
    if target is None or widened is None or bounds is None or len(widened) != len(bounds) or not bounds \
            or not any(d == 1 and w != 1 for d, w in zip(bounds, widened)):
        return declined(f"{carried} starts with no placeholder dim (at most 1 long) for its Expand to widen",
                        at=loop)
    readers = {u.user for u in state.uses() if isinstance(u.user, Node)}
    if any(n is not expand and n.op != "Shape" for n in readers) or _read_otherwise(loop, state):
        return declined(f"{carried} is read other than by its Expand, Shapes and as the loop's last value",
                        at=loop)
    if loop.counter is not None and loop.counter in _values_from(target, loop.body) and not _runs_trip_0(loop):
        # trip 0's copy, run even when no trip is, would read rows by the counter of an empty sequence
        return declined(f"the shape {carried} is broadcast to follows the trip counter, and the loop may run "
                        "no trip", at=loop)
    on_the_way = _computed_from(target, loop.body)
    if not all(_feeds_only(shape, on_the_way, target) for shape in readers if shape is not expand):
        return declined(f"a Shape of {carried} is read other than for the shape it is broadcast to", at=loop)
    for axis in range(len(init.shape)):
        source = shape_entry_source(target, axis)
        if source is None or (source != (state, axis) and not isinstance(source, int)
                              and state in _values_from(source[0], loop.body)):
            return declined(f"entry {axis} of the shape {carried} is broadcast to is not known to be its own "
                            "dim there or independent of it", at=loop)
    return expand


def _runs_trip_0(loop: Loop) -> bool:
    """Whether every run of ``loop`` runs its first trip: no condition to stop it first, at least one trip."""
    return loop.condition is None and runs_a_trip(loop)


def _read_otherwise(loop: Loop, state: Value) -> bool:
    """Whether the loop reads ``state`` other than as its last value: stacked, as the condition, as a next."""
    return loop.condition is state or any(r.next is state for r in loop.recurrences) \
        or any(o.value is state and o.kind != "last" for o in loop.loop_outputs)


def _computed_from(value: Value, body: Graph) -> set[Node]:
    """The nodes of ``body`` that ``value`` is computed from, through ``Shape`` too."""
    return {v.producer for v in _values_from(value, body) if v.producer is not None}


def _values_from(value: Value, body: Graph) -> set[Value]:
    """``value`` and the values of ``body`` (nodes and parameters) it is computed from, through ``Shape`` too."""
    return set(computed_from(value, within=body, through_shapes=True))


def _feeds_only(node: Node, on_the_way: set[Node], target: Value) -> bool:
    """Whether everything computed from ``node`` (a Shape of the state) is on the way to ``target``: the entries
    the target does not repeat change with the new initial value, and nothing else may read them."""
    stack = [node]
    seen: set[Node] = set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if current not in on_the_way:
            return False
        for out in current.outputs:
            if out is target:
                continue
            for use in out.uses():
                if not isinstance(use.user, Node):
                    return False
                stack.append(use.user)
    return True


def _hoist(outer: Graph, loop: Loop, rec: Recurrence, expand: Node) -> None:
    """Broadcast ``rec``'s initial value before ``loop`` to trip 0's target; after a loop that may run no
    trip, its last value is the initial one again when none ran."""
    before: list[Node] = []
    b = Builder(outer, before).standing_for(expand)
    padded = {it: _never_empty(b, it) for it in loop.iterators if not _has_rows(it)}
    row = b.trip(loop, 0, [r.init for r in loop.recurrences])
    for it, source in padded.items():
        read = row(it.param).producer
        if read is not None and read.op == "Gather" and read.inputs[0] is it.source:
            read.set_input(0, source)
    first, target = rec.init, expand.inputs[1]
    assert target is not None
    name = rec.state.name
    steady = b.op("Expand", [first, row(target)], name=f"{name}_broadcast", dtype=first.dtype,
                  shape=expand.outputs[0].shape)
    outer.insert_before(loop, before)
    loop.update(rec, init=steady)
    lasts = [o for o in loop.loop_outputs if o.value is rec.state and o.result.is_used()]
    if not lasts or _runs_trip_0(loop):
        return
    trips = trips_run(outer, loop)
    after: list[Node] = []
    a = Builder(outer, after).standing_for(expand)
    none = a.op("Equal", [trips, a.const(np.array(0, I64), name=f"{name}_no_trips")], name=f"{name}_none_run")
    for out in lasts:
        _unless_none_ran(loop, out, first, none, a)
    outer.insert_after(loop, after)


def _has_rows(it: LoopIterator) -> bool:
    """Whether ``it``'s source has a row to read in every run (a static length of at least one)."""
    length = it.source.shape[it.axis] if it.source.shape is not None else None
    return isinstance(length, int) and length >= 1


def _never_empty(b: Builder, it: LoopIterator) -> Value:
    """``it``'s source with a row of zeros after it (before it, when reversed): the copy of trip 0 reads a row
    even when the loop has none to iterate over (it is kept for the row's shape alone)."""
    source, axis, name = it.source, it.axis, it.param.name
    assert source.shape is not None
    dims = b.op("Shape", [source], name=f"{name}_source_shape", dtype=I64, shape=(len(source.shape),))
    one_row = b.op("ScatterElements", [dims, b.const(np.array([axis], np.int64), name=f"{name}_row_axis"),
                                       b.const(np.array([1], np.int64), name=f"{name}_one_row")], {"axis": 0},
                   name=f"{name}_row_shape", dtype=I64, shape=dims.shape)
    zeros = b.op("ConstantOfShape", [one_row], {"value": np.zeros(1, source.dtype)}, name=f"{name}_zero_row",
                 dtype=source.dtype)
    return b.op("Concat", [zeros, source] if it.reverse else [source, zeros], {"axis": axis},
                name=f"{name}_never_empty", dtype=source.dtype)


def _unless_none_ran(loop: Loop, out: LoopOutput, first: Value, none: Value, b: Builder) -> None:
    """``out``'s readers read ``first`` when no trip ran, else the loop's value: what the loop returned before
    the rewrite. Picked from the two flattened and concatenated (the shapes differ; a TensorRT conditional on a
    loop's result is not what its builder takes), then given the picked one's shape."""
    result = out.result
    name = result.name
    looped = Value(f"{name}_looped", result.dtype, out.value.shape)
    loop.update(out, result=looped)
    flat = b.const(np.array([-1], np.int64), name=f"{name}_flat")
    both = b.op("Concat", [b.op("Reshape", [first, flat], name=f"{name}_first_flat"),
                           b.op("Reshape", [looped, flat], name=f"{name}_looped_flat")], {"axis": 0},
                name=f"{name}_either")
    count = b.op("Reshape", [b.op("Size", [first], name=f"{name}_first_size"), b.const(np.array([1], np.int64),
                 name=f"{name}_one_entry")], name=f"{name}_first_count")
    zero = b.const(np.array([0], np.int64), name=f"{name}_from_start")
    end = b.const(np.array([np.iinfo(np.int64).max], np.int64), name=f"{name}_to_end")
    picked = b.op("Slice", [both, b.op("Where", [none, zero, count], name=f"{name}_pick_start"),
                            b.op("Where", [none, count, end], name=f"{name}_pick_end")], name=f"{name}_picked")
    shape = b.op("Where", [none, b.op("Shape", [first], name=f"{name}_first_shape"),
                           b.op("Shape", [looped], name=f"{name}_looped_shape")], name=f"{name}_shape")
    b.op("Reshape", [picked, shape], {"allowzero": 1}, out=result)

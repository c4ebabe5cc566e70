"""Unroll a loop with a small constant trip count whose carried shapes change from trip to trip.

TensorRT recurrences keep one shape, so ``out = cat([out, f(x[i], out[-1:])])`` read inside the
loop cannot stay a loop. With a constant trip count the loop is just a sequence of bodies: trip
``i`` binds the counter to ``i``, each iterator to ``Gather(source, i)`` (``-1 - i`` reversed),
each state to the previous trip's next value; "last" outputs are the final states, concatenated
outputs are the trips' values unsqueezed and concatenated in order (reversed for "reverse").
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from loopc.errors import PassError
from loopc.ir import Graph, Loop, Node, Recurrence, Value, constant_value
from loopc.ir.ops import traits
from loopc.passes._util import constant, constant_trips
from loopc.passes.manager import PassResult

#: Most trips a loop may run to be unrolled (one copy of its body per trip).
MAX_UNROLLED_TRIPS = 64


class Unroll:
    name = "unroll"

    def __call__(self, graph: Graph) -> PassResult:
        unrolled = 0
        for g, node in graph.structured():
            if isinstance(node, Loop) and self._wanted(node):
                unroll(g, node)
                unrolled += 1
        return PassResult(graph, unrolled > 0, {"loops": unrolled} if unrolled else {})

    def _wanted(self, loop: Loop) -> bool:
        """Whether to unroll ``loop``; a carried value that grows where unrolling can't help is refused."""
        changing = [r for r in loop.recurrences if _grows(r) or _shape_changes(r.init, r.next)]
        if not changing:
            return False
        reason = cannot_unroll(loop)
        if reason is None:
            return True
        growing = next((r for r in changing if _grows(r)), None)
        if growing is not None:
            assert growing.next.producer is not None
            raise PassError(f"{loop.describe()}: carried value {growing.state.name!r} grows on every trip "
                            f"({growing.next.producer.describe()} concatenates onto it) and is read inside the loop; "
                            "a TensorRT loop carries values of one shape, and loopc unrolls such a loop only "
                            f"when {reason}")
        return False


def unroll(outer: Graph, loop: Loop) -> None:
    """Replace ``loop`` (constant trip count, no condition, no nested graphs) by its trips' bodies in ``outer``."""
    trips = constant_trips(loop)
    assert trips is not None  # cannot_unroll(loop) is None
    emitted: list[Node] = []
    states = [r.init for r in loop.recurrences]
    collected: list[list[Value]] = [[] for _ in loop.loop_outputs]
    for i in range(trips):
        value_on_trip = trip_copy(loop, i, states, emitted)
        for values, out in zip(collected, loop.loop_outputs):
            values.append(value_on_trip(out.value))
        states = [value_on_trip(r.next) for r in loop.recurrences]
    finals = {id(r.state): s for r, s in zip(loop.recurrences, states)}
    results: list[tuple[Value, Value]] = []
    for values, out in zip(collected, loop.loop_outputs):
        if out.kind == "last":
            results.append((out.result, finals[id(out.value)]))
            continue
        ordered = values[::-1] if out.kind == "reverse" else values
        axes = constant(emitted, f"{out.result.name}_axes", np.array([out.axis], np.int64))
        pieces = []
        for k, v in enumerate(ordered):
            piece = Value(f"{out.result.name}_{k}", v.dtype, None)
            emitted.append(Node("Unsqueeze", [v, axes], [piece]))
            pieces.append(piece)
        joined = Value(f"{out.result.name}_unrolled", out.result.dtype, out.result.shape)
        emitted.append(Node("Concat", pieces, [joined], {"axis": out.axis}))
        results.append((out.result, joined))
    outer.insert_before(loop, emitted)
    for old, new in results:
        old.replace_all_uses_with(new)
    outer.remove(loop)


def trip_copy(loop: Loop, index: int, states: list[Value], nodes: list[Node]) -> Callable[[Value], Value]:
    """Append to ``nodes`` a copy of trip ``index`` of ``loop``'s body on ``states`` (one per recurrence);
    returns what a body value is on that trip (an outer value is itself).

    The counter is a constant there, so counter arithmetic folds and a Where on a folded test picks
    its side: a peeled trip of a skewed loop (:mod:`loopc.passes.wavefront`) leaves its idle layer's
    work unread, for dead code to remove."""
    mapping: dict[int, Value] = {id(r.state): s for r, s in zip(loop.recurrences, states)}
    name = f"{loop.name}_t{index}"
    if loop.counter is not None:
        mapping[id(loop.counter)] = constant(nodes, f"{name}_counter", np.array(index, np.int64))
    for it in loop.iterators:
        at = constant(nodes, f"{it.param.name}_{name}_at", np.array(-1 - index if it.reverse else index, np.int64))
        element = Value(f"{it.param.name}_{name}", it.param.dtype, it.param.shape)
        nodes.append(Node("Gather", [it.source, at], [element], {"axis": it.axis}))
        mapping[id(it.param)] = element
    for node in loop.body.nodes:
        inputs = [None if v is None else mapping.get(id(v), v) for v in node.inputs]
        known = [constant_value(v) for v in inputs]
        exact = traits(node.op).numpy  # folds the counter arithmetic of a trip's copy (the counter is a constant)
        if node.op == "Where" and known[0] is not None and np.asarray(known[0]).size == 1:
            chosen = inputs[1] if bool(np.asarray(known[0]).reshape(-1)[0]) else inputs[2]
            assert chosen is not None
            mapping[id(node.outputs[0])] = chosen
        elif exact is not None and inputs and all(k is not None for k in known):
            folded = exact(*known)
            mapping[id(node.outputs[0])] = constant(nodes, f"{node.outputs[0].name}_{name}", folded)
        else:
            outputs = [Value(f"{v.name}_{name}", v.dtype, v.shape) for v in node.outputs]
            nodes.append(Node(node.op, inputs, outputs, dict(node.attrs), origin=node.origin))
            mapping.update((id(old), new) for old, new in zip(node.outputs, outputs))
    return lambda value: mapping.get(id(value), value)


def cannot_unroll(loop: Loop) -> str | None:
    """Why ``loop`` cannot be unrolled here, or None."""
    count = constant_trips(loop)
    if count is None or loop.condition is not None:
        return "its trip count is a constant and it cannot stop early"
    if not 1 <= count <= MAX_UNROLLED_TRIPS:
        return f"it runs at most {MAX_UNROLLED_TRIPS} trips"
    if any(node.subgraphs() for node in loop.body.nodes):
        return "its body holds no nested loops or conditionals"  # cloning them is not done here
    return None


def _grows(rec: Recurrence) -> bool:
    """The next value concatenates something onto the state, or onto a reordering of it that keeps
    its length on the concatenation axis (a beam search's ``cat([history[beams], token])``), through
    any chain of Concats (``cat([cat([acc, a]), b])``)."""
    stack, seen = [rec.next], set()
    while stack:
        producer = stack.pop().producer
        if producer is None or producer.op != "Concat" or len(producer.inputs) < 2 or id(producer) in seen:
            continue
        seen.add(id(producer))
        axis = int(producer.attrs.get("axis", 0))
        if any(v is rec.state or _reordered(v, rec.state, axis) for v in producer.inputs):
            return True
        stack.extend(v for v in producer.inputs if v is not None)
    return False


def _reordered(value: Value | None, state: Value, axis: int) -> bool:
    node = value.producer if value is not None else None
    if node is None or node.op != "Gather" or node.inputs[0] is not state or state.shape is None:
        return False
    rank = len(state.shape)
    return int(node.attrs.get("axis", 0)) % rank != axis % rank


def _shape_changes(init: Value, nxt: Value) -> bool:
    """Known to change: ranks differ, or a static dim meets a different static or symbolic one
    (shape inference names a dim symbolically when the trips disagree). Unknown is not evidence."""
    if init.shape is None or nxt.shape is None:
        return False
    if len(init.shape) != len(nxt.shape):
        return True
    return any(a != b for a, b in zip(init.shape, nxt.shape) if a is not None and b is not None)


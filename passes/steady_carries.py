"""A carried value whose shape changes only on the first trip: that trip runs before the loop.

TensorFlow's ``tf.scan`` and Keras RNNs, read through OpenVINO's TensorFlow frontend, carry a buffer
that starts as a small placeholder (``[N, 1, 1]``) and is broadcast to its full size by the first trip
(``[N, T, H]``); a TensorRT loop carries a value in one shape. Peeling trip 0 (see
:mod:`loopc.passes._peeling`) makes the loop start from trip 0's results, which have the steady shape.

Legal when the steady shape is a fixed point, proved with the ops' shape functions on the body
(:func:`trip_shapes`): the states' shapes after a trip from their initial shapes, fed back in, give the
same shapes again; so every later trip keeps them. The loop must run trip 0 (a trip count of at least
one, no condition), iterate forwards and hold no nested graphs (a trip is copied node by node).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from loopc.ir import Graph, Loop, Node, Value
from loopc.ir.builder import MAX_DATA, refine
from loopc.ir.core import Shape
from loopc.ir.ops import traits
from loopc.passes._offending import Offending
from loopc.passes._why import declined, kept_if
from loopc.passes._peeling import peel_first
from loopc.passes._util import runs_a_trip
from loopc.passes.constant_folding import fold
from loopc.passes.manager import PassResult


class SteadyCarries:
    name = "steady-carries"
    benefit = 50  # see loopc.passes.legalize

    def __call__(self, graph: Graph) -> PassResult:
        peeled, offending = 0, Offending()
        for outer, node in graph.structured():
            if isinstance(node, Loop):
                with kept_if(lambda: offending.carries(node)):
                    steady = steady_shapes(node)
                if steady is not None:
                    _peel(outer, node, steady)
                    peeled += 1
        return PassResult(graph, peeled > 0, {"peeled": peeled} if peeled else {})


def steady_shapes(loop: Loop) -> dict[Value, Shape | None] | None:
    """Each body value's shape from the second trip on, when some state's shape changes on the first trip
    only and ``loop`` can be peeled; else None, saying why."""
    why = _unpeelable(loop)
    if why is not None:
        return declined(why, at=loop)
    unknown = next((r for r in loop.recurrences if not _static(r.init.shape)), None)
    if unknown is not None:
        return declined(f"carried value '{unknown.state.name}' starts in a shape not fully known", at=loop)
    if all(r.next.shape == r.init.shape for r in loop.recurrences):  # shape inference proved it for any state
        return declined("every carried value keeps its shape, by shape inference", at=loop)
    first = trip_shapes(loop, {r.state: r.init.shape for r in loop.recurrences if r.init.shape is not None})
    after = {r.state: first.get(r.next, r.next.shape) for r in loop.recurrences}
    unknown = next((r for r in loop.recurrences if not _static(after[r.state])), None)
    if unknown is not None:
        return declined(f"carried value '{unknown.state.name}' has no shape after trip 0 that the ops' shape "
                        "functions know", at=loop)
    if all(after[r.state] == r.init.shape for r in loop.recurrences):
        return declined("every carried value keeps its shape through trip 0, by the ops' shape functions", at=loop)
    steady = trip_shapes(loop, {state: shape for state, shape in after.items() if shape is not None})
    moving = next((r for r in loop.recurrences if steady.get(r.next, r.next.shape) != after[r.state]), None)
    if moving is not None:  # the shape keeps changing: not for peeling one trip
        return declined(f"trip 0's shape is not a fixed point: carried value '{moving.state.name}' has shape "
                        f"{_listed(after[moving.state])} after trip 0 and "
                        f"{_listed(steady.get(moving.next, moving.next.shape))} after trip 1", at=loop)
    return steady


def _unpeelable(loop: Loop) -> str | None:
    """Why trip 0 of ``loop`` cannot be peeled, or None."""
    if loop.condition is not None:
        return "the loop stops on a condition, so trip 0 may not run"
    if not runs_a_trip(loop):
        return "the loop may run no trip, so trip 0 cannot run before it"
    if any(o.kind == "reverse" for o in loop.loop_outputs) or any(it.reverse for it in loop.iterators):
        return "the loop has a reversed iterator or output, which peeling does not handle"
    if any(n.subgraphs() for n in loop.body.nodes):
        return "the loop's body holds nested graphs, and a peeled trip is copied node by node"
    return None


def _listed(shape: Shape | None) -> str:
    return "unknown" if shape is None else str(list(shape))


def trip_shapes(loop: Loop, states: Mapping[Value, Shape]) -> dict[Value, Shape | None]:
    """The shapes ``loop``'s body values take on a trip whose states have the given shapes (and the states'
    own), from each op's shape function, for the values that depend on the states. The body is not
    touched: each node is asked about on a detached copy reading copies of its operands."""
    copies: dict[Value, Value] = {state: Value(state.name, state.dtype, shape) for state, shape in states.items()}
    computed: dict[Value, np.ndarray] = {}
    for node in loop.body.nodes:
        if not any(v in copies for v in node.inputs if v is not None):
            continue
        outputs = [Value(v.name, v.dtype) for v in node.outputs]
        copy = Node(node.op, [None if v is None else copies.get(v, v) for v in node.inputs], outputs, dict(node.attrs))
        copies.update(zip(node.outputs, outputs))
        if node.subgraphs() or not traits(node.op).foldable:
            continue  # its results' shapes stay unknown
        values = fold(copy, computed, MAX_DATA)
        if values is not None:
            computed.update(zip(outputs, values))
        refine(copy, computed)
    return {value: copy.shape for value, copy in copies.items()}


def _peel(outer: Graph, loop: Loop, steady: dict[Value, Shape | None]) -> None:
    """Peel trip 0, then give each body value that depends on a state its steady shape, and each value the
    peeled trip made its shape on trip 0 (the copies keep the body's shapes, which a merged or declared
    state shape may have made wrong for either)."""
    first = trip_shapes(loop, {r.state: r.init.shape for r in loop.recurrences if r.init.shape is not None})
    row, made = peel_first(outer, loop)
    copied = {v for n in made if n.op != "Constant" for v in n.outputs}
    for value, shape in first.items():
        if row(value) in copied and _static(shape):
            row(value).shape = shape
    for value, shape in steady.items():
        if _static(shape):
            value.shape = shape
    for out in loop.loop_outputs:
        if out.kind == "last" and _static(steady.get(out.value)):
            out.result.shape = steady[out.value]


def _static(shape: Shape | None) -> bool:
    return shape is not None and all(isinstance(d, int) for d in shape)

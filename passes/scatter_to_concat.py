"""``out[t] = y`` on a carried buffer becomes a concatenated output.

PyTorch exports ``out = torch.zeros(T, ...); for t in ...: out[t] = y`` as a carried buffer whose next
value is ``ScatterND(out, [[t]], y)``, with the counter ``t`` as the index. As a recurrence, the
whole buffer is rewritten every trip and everything that feeds ``y`` stays on the loop's path; as
a concatenated output of ``y`` the loop only emits rows, and loop distribution can move ``y``'s
producers after the loop.

Exact when the buffer is written at the trip's own counter and read only for its shape (which a
ScatterND keeps): after ``n`` trips its rows ``0..n-1`` are the trips' rows and the rest are still
the initial buffer's, so the result is ``Concat(rows, init[n:])``. The exporter's shape reads
(``Shape(out)``, ``Shape(out[t])``) become reads of the initial buffer's shape, before the loop.
"""

from __future__ import annotations

import numpy as np

from loopc.ir import Graph, Loop, LoopOutput, Node, Recurrence, Value
from loopc.ir.builder import Builder
from loopc.passes._util import I64
from loopc.passes._why import declined
from loopc.passes.manager import PassResult
from loopc.semantics.attributes import attr

_END = np.iinfo(np.int64).max


class ScatterToConcat:
    name = "scatter-to-concat"

    def __call__(self, graph: Graph) -> PassResult:
        rewritten = 0
        for outer, node in graph.structured():
            if isinstance(node, Loop) and node.counter is not None:
                for rec in list(node.recurrences):
                    reads = _buffer_reads(node, rec)
                    if reads is not None:
                        _rewrite(outer, node, rec, *reads)
                        rewritten += 1
        return PassResult(graph, rewritten > 0, {"buffers": rewritten} if rewritten else {})


def _buffer_reads(loop: Loop, rec: Recurrence) -> tuple[Node, list[Node], list[Node]] | None:
    """(the ScatterND, Shape(buffer) nodes, Gather(buffer, t) nodes read only by Shape) when ``rec`` is a
    buffer written at the counter and otherwise read for its shape only; else None."""
    scatter = rec.next.producer
    if scatter is None or scatter.op != "ScatterND" or scatter.graph is not loop.body or scatter.inputs[0] is not rec.state:
        return None  # not a buffer written in each trip
    name = rec.state.name
    if attr(scatter, "reduction") not in ("none", b"none") or len(rec.next.uses()) != 1:
        return declined(f"the buffer {name!r} is written with a reduction, or read in the trip after its write",
                        at=scatter)
    if rec.init.shape is None or not rec.init.shape:
        return declined(f"the rank of the buffer {name!r} is unknown", at=scatter)
    if not _is_counter(scatter.inputs[1], loop.counter):
        return declined(f"the buffer {name!r} is not written at the row of the trip's counter", at=scatter)
    update = scatter.inputs[2]
    if update is None or update.shape is None or len(update.shape) != len(rec.init.shape) or update.shape[0] != 1:
        return declined(f"what is written to the buffer {name!r} is not one row", at=scatter)
    shapes, rows = [], []
    for use in rec.state.uses():
        user = use.user
        if user is scatter and use.slot == 0:
            continue
        if user is loop.body:  # the loop's "last" output of the buffer, and nothing else of the body's
            if rec.state is loop.condition or any(r.next is rec.state for r in loop.recurrences) \
                    or any(o.value is rec.state and o.kind != "last" for o in loop.loop_outputs):
                return declined(f"the buffer {name!r} is also the loop's condition, another state or collected "
                                "every trip", at=scatter)
            continue
        if isinstance(user, Node) and user.op == "Shape" and not user.attrs:
            shapes.append(user)
        elif isinstance(user, Node) and user.op == "Gather" and user.inputs[1] is loop.counter \
                and int(attr(user, "axis")) == 0 \
                and all(isinstance(u.user, Node) and u.user.op == "Shape" and not u.user.attrs
                        for u in user.outputs[0].uses()):
            rows.append(user)
        else:
            return declined(f"the buffer {name!r} is read in the loop for more than its shape", at=user)
    return scatter, shapes, rows


def _is_counter(index: Value | None, counter: Value | None) -> bool:
    """``index`` is ``[[counter]]``: the counter through Unsqueezes, Reshapes and Casts, shaped [1, 1]."""
    if index is None or index.shape != (1, 1):
        return False
    value: Value | None = index
    while value is not None and value is not counter:
        node = value.producer
        if node is None or node.op not in ("Unsqueeze", "Reshape", "Cast"):
            return False
        value = node.inputs[0]
    return value is counter


def _rewrite(outer: Graph, loop: Loop, rec: Recurrence, scatter: Node, shapes: list[Node], rows: list[Node]) -> None:
    name = rec.state.name
    before: list[Node] = []
    b = Builder(outer, before)
    whole_shape = b.op("Shape", [rec.init], name=f"{name}_shape", dtype=I64, shape=(len(rec.init.shape or ()),))
    row_shape = b.op("Slice", [whole_shape, b.const(np.array([1], np.int64), name=f"{name}_one"),
                               b.const(np.array([_END], np.int64), name=f"{name}_end")], name=f"{name}_row_shape")
    outer.insert_before(loop, before)
    for node in shapes:
        node.outputs[0].replace_all_uses_with(whole_shape)
    for gather in rows:
        for use in list(gather.outputs[0].uses()):
            assert isinstance(use.user, Node)
            use.user.outputs[0].replace_all_uses_with(row_shape)
    # the row each trip writes: the update without its leading 1
    update = scatter.inputs[2]
    assert update is not None and update.shape is not None
    squeeze: list[Node] = []
    inside = b.into(squeeze)
    row = inside.op("Squeeze", [update, inside.const(np.array([0], np.int64), name=f"{name}_axis0")],
                    name=f"{name}_row", shape=update.shape[1:])
    loop.body.insert_before(scatter, squeeze)
    stacked = b.value(f"{name}_rows", update.dtype)
    finals = [o for o in loop.loop_outputs if o.value is rec.state and o.kind == "last"]
    for out in finals:
        loop.remove_output(out)
    loop.add_output(LoopOutput("concat", row, stacked, 0))
    readers = [u.user for g in rows for u in list(g.outputs[0].uses()) if isinstance(u.user, Node)]
    for node in [*shapes, *readers, *rows]:
        if node.graph is not None:
            node.graph.remove(node)
    init = rec.init
    loop.remove_recurrence(rec)
    loop.body.remove(scatter)
    # after n trips: rows 0..n-1 written, the rest as initialized
    after: list[Node] = []
    b = Builder(outer, after)
    stacked_shape = b.op("Shape", [stacked], name=f"{name}_rows_shape", dtype=I64)
    count = b.op("Slice", [stacked_shape, b.const(np.array([0], np.int64), name=f"{name}_zero"),
                           b.const(np.array([1], np.int64), name=f"{name}_first")], name=f"{name}_count", shape=(1,))
    rest = b.op("Slice", [init, count, b.const(np.array([_END], np.int64), name=f"{name}_rest_end"),
                          b.const(np.array([0], np.int64), name=f"{name}_rest_axis")], name=f"{name}_rest")
    result = b.op("Concat", [stacked, rest], {"axis": 0}, name=f"{name}_written", dtype=init.dtype,
                  shape=init.shape)
    outer.insert_after(loop, after)
    for out in finals:
        out.result.replace_all_uses_with(result)

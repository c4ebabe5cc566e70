"""Peeling a loop's first trip: it runs once before the loop, which starts at its second.

The peeled trip is a copy of the body on the loop's initial states (:meth:`Builder.trip`), its
results the loop's new initial states; iterators drop the row it read, a counter reads one more, and
each stacked output gets the trip's row back in front.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from loopc.ir import Graph, Loop, LoopOutput, Node, Value, constant_int
from loopc.ir.builder import Builder
from loopc.passes._util import I64, constant_trips

#: A slice end past any length: "to the end".
END = np.iinfo(np.int64).max


def peel_first(outer: Graph, loop: Loop) -> tuple[Callable[[Value], Value], list[Node]]:
    """Run ``loop``'s first trip before it; the loop starts at its second. The caller has made sure the
    loop runs that trip: it has a trip count of at least one and no condition to stop before it.

    Returns what each body value is on the peeled trip (see :meth:`Builder.trip`) and the nodes made
    before the loop."""
    assert loop.trip_count is not None and loop.condition is None
    count = loop.trip_count
    before: list[Node] = []
    b = Builder(outer, before)
    row = b.trip(loop, 0, [r.init for r in loop.recurrences])
    for it in loop.iterators:
        loop.update(it, source=rows(b, it.source, it.axis, (0, -1) if it.reverse else (1, END)))
    for rec in loop.recurrences:
        loop.update(rec, init=row(rec.next))
    if loop.counter is not None and loop.counter.is_used():
        step: list[Node] = []
        inc = Builder(loop.body, step)
        one = inc.const(np.array(1, np.int64), name=f"{loop.name}_one")
        shifted = inc.op("Add", [loop.counter, one], name=f"{loop.counter.name}_from_1")
        loop.body.insert_before(list(loop.body.nodes)[0], step)
        assert shifted.producer is not None
        loop.counter.replace_all_uses_except(shifted, shifted.producer)
    trips = constant_trips(loop)
    dtype = count.dtype if count.dtype is not None else I64
    loop.set_trip_count(b.const(np.array(trips - 1, dtype), name=f"{loop.name}_trips_peeled") if trips is not None
                        else b.op("Sub", [count, b.const(np.array(1, dtype), name=f"{loop.name}_one_trip")],
                                  name=f"{loop.name}_trips_peeled", dtype=dtype, shape=count.shape))
    outer.insert_before(loop, before)
    after: list[Node] = []
    for out in list(loop.loop_outputs):
        if out.kind == "concat":
            add_row(loop, out, row(out.value), b.into(after), first=True)
    outer.insert_after(loop, after)
    return row, before


def rows(b: Builder, source: Value, axis: int, bounds: tuple[int, int], into: Value | None = None) -> Value:
    """Rows ``[start, stop)`` of ``source`` along ``axis`` (a negative bound counts from the end), as
    ``into`` when given."""
    shape = source.shape
    length = shape[axis] if shape is not None else None
    kept = None
    if isinstance(length, int):
        start, stop = (at + length if at < 0 else min(at, length) for at in bounds)
        kept = stop - start
    result = into or b.value(f"{source.name}_rows", source.dtype, None if shape is None else
                             tuple(kept if k == axis else d for k, d in enumerate(shape)))
    ends = [b.const(np.array([at], np.int64), name=f"{result.name}_{t}") for t, at in zip(("start", "stop"), bounds)]
    axes = b.const(np.array([axis], np.int64), name=f"{result.name}_axis")
    return b.op("Slice", [source, *ends, axes], out=result)


def add_row(loop: Loop, out: LoopOutput, value: Value, b: Builder, first: bool) -> None:
    """Put a peeled trip's ``value`` back as the first (or last) row of ``out``'s stack, unless every
    reader is a Slice that drops that row anyway (an idle layer's row): then only the Slices shift."""
    stacked = out.result
    rows = stacked.shape[out.axis] if stacked.shape is not None else None
    bounds = [_row_bounds(u.user, out.axis) if isinstance(u.user, Node) and u.slot == 0 else None
              for u in stacked.uses()]
    shape = None if stacked.shape is None or not isinstance(rows, int) else tuple(
        rows - 1 if k == out.axis else d for k, d in enumerate(stacked.shape))
    inner = b.value(f"{stacked.name}_loop", stacked.dtype, shape)
    loop.update(out, result=inner)
    if isinstance(rows, int) and all(b is not None and (b[0] >= 1 if first else b[1] <= rows - 1) for b in bounds):
        for use, bound in zip(stacked.uses(), bounds):
            assert isinstance(use.user, Node) and bound is not None
            if first:
                use.user.set_input(1, b.const(np.array([bound[0] - 1], np.int64), name=f"{stacked.name}_start"))
                use.user.set_input(2, b.const(np.array([bound[1] - 1], np.int64), name=f"{stacked.name}_stop"))
        stacked.replace_all_uses_with(inner)
        return
    axes = b.const(np.array([out.axis], np.int64), name=f"{stacked.name}_row_axis")
    piece = b.op("Unsqueeze", [value, axes], name=f"{stacked.name}_peeled_row", dtype=value.dtype)
    b.op("Concat", [piece, inner] if first else [inner, piece], {"axis": out.axis}, out=stacked)


def _row_bounds(node: Node, axis: int) -> tuple[int, int] | None:
    """``(start, stop)`` of a Slice with non-negative constant bounds along ``axis`` alone, else None."""
    if node.op != "Slice" or len(node.inputs) != 4:
        return None
    start, stop, at = (constant_int(v) for v in node.inputs[1:])
    if start is None or stop is None or at is None:
        return None
    return (start, stop) if at == axis and 0 <= start <= stop else None

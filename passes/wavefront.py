"""Wavefront schedule: a stacked recurrent layer runs in the loop of the layer below it, one trip behind.

Two loops that run one after another, the second iterating over the rows the first stacks (the
layers of an RNN stack), have a serial chain of 2·T trips. Fused with a skew — trip ``s`` runs the
producer's step ``s`` and the consumer's step ``s − 1``, on the row the producer made the trip
before — the two halves of a trip are independent and the chain is T + 1 trips; L stacked layers
take T + L − 1 instead of L·T. The price: the consumer's work on the producer's rows (its ``x·Wᵀ``,
which loop distribution had batched before it) is back in the loop, one row a trip: more MACs per
trip, the same per run.

Exact by construction:

* The fused loop runs one trip more than the producer. The producer's iterators get a copy of an
  edge row to read on it, its stacked outputs are cut back to the trips it ran, and each final state
  it yields is the one carried into the extra trip (a recurrence delays it by one trip).
* The consumer reads producer row ``j + k`` at its step ``k`` (``j``: the first row its iterators
  see), so its steps run from trip ``j + 1`` on. It reads the row through the producer's state that
  holds it (or a new recurrence), and the nodes between the loops that made its iterated values are
  cloned into the loop to run on that one row. Until its first step its states keep their initial
  values (a Where on the counter); its stacked outputs are cut to the trips it ran.
* Then the edge trips, where some layer idles, are peeled: each runs once outside the loop with
  the counter a constant, so the Where picks its side and the idle layer's work is left unread (dead
  code removes it). A run does exactly the products the layer-after-layer schedule does.

When: both loops at the top level, with constant trip counts and no early exit, iterating forwards
over sources of known length; the consumer's iterators that depend on the producer read its
stacked rows ``[j, j + T)`` (T: the consumer's count, ``j + T`` the producer's) through row-wise
nodes (:func:`loopc.passes._batching.row_wise`); and nothing else the consumer reads depends on the
producer. The producer is the closest loop before the consumer, so a stack fuses bottom up.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from loopc.ir import Graph, Loop, LoopIterator, LoopOutput, Node, Recurrence, Value, constant_value
from loopc.ir.builder import Builder
from loopc.passes._batching import row_wise
from loopc.passes._peeling import END, add_row, peel_first, rows
from loopc.passes._util import I64, constant_trips
from loopc.passes._why import declined
from loopc.passes.manager import PassResult

class Wavefront:
    name = "wavefront"

    def __call__(self, graph: Graph) -> PassResult:
        skews: dict[Loop, int] = {}  # fused loop -> trips at each end where some layer idles
        while (plan := _next_plan(graph)) is not None:
            plan.fuse()
            skews[plan.producer] = skews.pop(plan.producer, 0) + 1
        peeled = 0
        for loop, skew in skews.items():
            trips = constant_trips(loop)
            if trips is not None and trips > 2 * skew and not any(o.kind == "reverse" for o in loop.loop_outputs) \
                    and not any(node.subgraphs() for node in loop.body.nodes):
                for _ in range(skew):
                    peel_first(graph, loop)
                    _peel_last(graph, loop)
                peeled += 2 * skew
        stats = {"fused": sum(skews.values()), "peeled": peeled}
        return PassResult(graph, bool(skews), {k: v for k, v in stats.items() if v})


def _next_plan(graph: Graph) -> _Plan | None:
    """The first pair of top-level loops, one right after the other (other nodes between), that can fuse."""
    previous: Loop | None = None
    since: list[Node] = []
    for node in graph.nodes:
        if isinstance(node, Loop):
            plan = _plan(graph, previous, node, since) if previous is not None else None
            if plan is not None:
                return plan
            previous, since = node, []
        else:
            since.append(node)
    return None


@dataclass
class _Plan:
    """How ``consumer`` joins ``producer``: see the module docstring."""

    graph: Graph
    producer: Loop
    consumer: Loop
    trips: int  #: the producer's count; the fused loop runs one more
    first_row: int  #: j: the producer row the consumer's first step reads
    between: list[Node]  #: the nodes between the two loops that depend on the producer, in order
    chain: list[Node]  #: those of them the consumer's iterated values are made by
    shifts: set[Node]  #: the chain's Slices that drop first rows: a skew in the loop, not a node
    rows: dict[Value, Value]  #: producer result -> the body value stacked into it
    fed: list[LoopIterator]  #: the consumer's iterators over the producer's rows
    before: list[Node] = field(default_factory=list)  #: nodes to run before the fused loop
    after: list[Node] = field(default_factory=list)  #: nodes to run after it
    ahead: Builder = field(init=False)  #: makes ``before``
    behind: Builder = field(init=False)  #: makes ``after``

    def __post_init__(self) -> None:
        self.ahead, self.behind = Builder(self.graph, self.before), Builder(self.graph, self.after)

    def fuse(self) -> None:
        producer, consumer = self.producer, self.consumer
        if producer.counter is None:
            producer.set_counter(Builder(producer.body).value(f"{producer.name}_trip", I64, ()))
        inside = self._rows_in_loop()
        self._extend_producer()
        self._take_consumer(inside)
        self.graph.insert_before(consumer, [*self.before, producer, *self.after, *self.between])
        self.graph.remove(consumer)

    # -- the producer: one trip more ---------------------------------------------------------------

    def _extend_producer(self) -> None:
        loop = self.producer
        count = loop.trip_count
        assert count is not None and count.dtype is not None
        loop.set_trip_count(self.ahead.const(np.array(self.trips + 1, count.dtype), name=f"{loop.name}_trips_wave"))
        for it in loop.iterators:
            loop.update(it, source=_edge_row_added(self.ahead, it.source, it.axis, at_end=not it.reverse))
        for out in list(loop.loop_outputs):
            if out.kind == "last":
                rec = next((r for r in loop.recurrences if r.state is out.value), None)
                if rec is not None:  # the state carried into the extra trip is the one after the last real one
                    delayed = self.ahead.value(f"{rec.state.name}_delayed", rec.state.dtype, rec.state.shape)
                    loop.add_recurrence(Recurrence(delayed, rec.init, rec.state))
                    loop.update(out, value=delayed)
            else:
                first = 0 if out.kind == "concat" else 1
                self._cut(out, first, first + self.trips)

    def _cut(self, out: LoopOutput, start: int, stop: int) -> None:
        """``out``'s stacked result becomes rows ``[start, stop)`` of the fused loop's (along its axis)."""
        kept = out.result
        shape = None if kept.shape is None else tuple(
            self.trips + 1 if k == out.axis else d for k, d in enumerate(kept.shape))
        self.producer.update(out, result=self.behind.value(f"{kept.name}_wave", kept.dtype, shape))
        rows(self.behind, out.result, out.axis, (start, stop), into=kept)

    # -- the consumer: its steps one trip behind, in the producer's body ------------------------------

    def _rows_in_loop(self) -> list[Node]:
        """The chain's nodes cloned to run on one trip's row (axis 0 of length 1), the fed iterators'
        params made from their results; returns the new body nodes."""
        inside: list[Node] = []
        body = Builder(self.producer.body, inside)
        row: dict[Value, Value] = {}
        axis0 = body.const(np.array([0], np.int64), name=f"{self.consumer.name}_row_axis")
        for result, value in self.rows.items():
            row[result] = body.op("Unsqueeze", [self._carried(value), axis0], name=f"{value.name}_row",
                                  dtype=value.dtype, shape=None if value.shape is None else (1, *value.shape))
        for node in self.chain:
            if node in self.shifts:
                source = node.inputs[0]
                assert source is not None
                row[node.outputs[0]] = row[source]
                continue
            outputs = [body.value(f"{v.name}_row", v.dtype, None if v.shape is None else (1, *v.shape[1:]))
                       for v in node.outputs]
            inputs = [row.get(v, v) if v is not None else None for v in node.inputs]
            Builder(self.producer.body, inside).standing_for(node).node(node.op, inputs, outputs, dict(node.attrs))
            row.update(zip(node.outputs, outputs))
        for it in self.fed:
            body.op("Squeeze", [row[it.source], axis0], out=it.param)
        return inside

    def _carried(self, value: Value) -> Value:
        """A body value that holds, on each trip, ``value`` as the trip before computed it."""
        loop = self.producer
        for rec in loop.recurrences:
            if rec.next is value or _held(loop, rec, value, self.first_row):
                return rec.state
        assert value.shape is not None and value.dtype is not None  # checked by the plan
        init = self.ahead.const(np.zeros(value.shape, value.dtype), name=f"{value.name}_before")
        state = self.ahead.value(f"{value.name}_previous", value.dtype, value.shape)
        loop.add_recurrence(Recurrence(state, init, value))
        return state

    def _take_consumer(self, inside: list[Node]) -> None:
        producer, consumer = self.producer, self.consumer
        delay = self.first_row + 1
        counter = producer.counter
        assert counter is not None
        iterators = list(consumer.iterators)
        recurrences = list(consumer.recurrences)
        outputs = list(consumer.loop_outputs)
        own_counter = consumer.counter
        consumer.remove_roles([*iterators, *recurrences, *outputs])
        consumer.set_counter(None)
        body = producer.body
        b = Builder(body, inside)
        if own_counter is not None and own_counter.is_used():
            b.op("Sub", [counter, b.const(np.array(delay, np.int64), name=f"{consumer.name}_delay")], out=own_counter)
        last_idle = b.const(np.array(self.first_row, np.int64), name=f"{consumer.name}_first_row")
        active = b.op("Greater", [counter, last_idle], name=f"{consumer.name}_started")
        holds: list[Node] = []
        hold = b.into(holds)
        for k, rec in enumerate(recurrences):
            held = hold.op("Where", [active, rec.next, rec.state], name=f"{rec.next.name}_held",
                           dtype=rec.next.dtype, shape=rec.next.shape)
            recurrences[k] = replace(rec, next=held)
        body.insert_after(list(body.nodes)[-1], [*inside, *consumer.body.nodes, *holds])
        for rec in recurrences:
            producer.add_recurrence(rec)
        fed = {it for it in self.fed}
        for it in iterators:
            if it not in fed:
                producer.add_iterator(replace(
                    it, source=_edge_row_added(self.ahead, it.source, it.axis, at_end=False, count=delay)))
        for out in outputs:
            producer.add_output(out)
            if out.kind != "last":  # the trips it ran: from its delay on (reversed: the first rows)
                start = delay if out.kind == "concat" else 0
                self._cut(out, start, start + self.trips + 1 - delay)


def _held(loop: Loop, rec: Recurrence, value: Value, first_row: int) -> bool:
    """``rec`` is a fused layer's masked state ``Where(counter > k, value, state)`` with k < ``first_row``:
    it holds ``value`` of the trip before on every trip the new consumer reads it."""
    where = rec.next.producer
    if where is None or where.op != "Where" or where.inputs[1] is not value or where.inputs[2] is not rec.state:
        return False
    test = where.inputs[0].producer if where.inputs[0] is not None else None
    if test is None or test.op != "Greater" or test.inputs[0] is not loop.counter:
        return False
    bound = constant_value(test.inputs[1])
    return bound is not None and int(bound) < first_row


def _edge_row_added(b: Builder, source: Value, axis: int, at_end: bool, count: int = 1) -> Value:
    """``source`` with ``count`` copies of its last (``at_end``) or first row added on that side along ``axis``."""
    edge = rows(b, source, axis, (-1, END) if at_end else (0, 1))
    shape = source.shape
    return b.op("Concat", [source, *[edge] * count] if at_end else [*[edge] * count, source], {"axis": axis},
                name=f"{source.name}_grown", dtype=source.dtype, shape=None if shape is None else tuple(
                    d + count if k == axis and isinstance(d, int) else d for k, d in enumerate(shape)))


# -- the edges: trips where a layer idles run outside the loop, without the idle layer's work ---------

def _peel_last(outer: Graph, loop: Loop) -> None:
    """Run ``loop``'s last trip after it; the loop stops one trip earlier."""
    trips = constant_trips(loop)
    assert trips is not None and loop.trip_count is not None
    after: list[Node] = []
    b = Builder(outer, after)
    finals = []
    for rec in loop.recurrences:
        final = b.value(f"{rec.state.name}_before_last", rec.state.dtype, rec.state.shape)
        loop.add_output(LoopOutput("last", rec.state, final))
        finals.append(final)
    row = b.trip(loop, trips - 1, finals)
    before: list[Node] = []
    ahead = b.into(before)
    for it in loop.iterators:
        loop.update(it, source=rows(ahead, it.source, it.axis, (1, END) if it.reverse else (0, -1)))
    loop.set_trip_count(ahead.const(np.array(trips - 1, loop.trip_count.dtype), name=f"{loop.name}_trips_peeled"))
    outer.insert_before(loop, before)
    nexts = {r.state: row(r.next) for r in loop.recurrences}
    for out in list(loop.loop_outputs):
        if out.kind == "last" and all(out.result is not f for f in finals):
            out.result.replace_all_uses_with(nexts[out.value])
            loop.remove_output(out)
        elif out.kind == "concat":
            add_row(loop, out, row(out.value), b, first=False)
    outer.insert_after(loop, after)


# -- the plan --------------------------------------------------------------------------------------

def _plan(graph: Graph, producer: Loop, consumer: Loop, nodes_between: list[Node]) -> _Plan | None:
    # what depends on the producer, between the two loops; each such value's first producer row
    between: list[Node] = []
    first: dict[Value, int | None] = {}  # value -> first producer row in its row 0 (None: not rows)
    rows: dict[Value, Value] = {}
    for out in producer.loop_outputs:
        stacked = out.kind == "concat" and out.axis == 0
        first[out.result] = 0 if stacked else None
        if stacked:
            rows[out.result] = out.value
    shifts: set[Node] = set()
    for node in nodes_between:
        reads = [first.get(v, -1) if v is not None else -1 for v in node.inputs]
        if any(r != -1 for r in reads) or any(_reads_from(sub, first) for sub in node.subgraphs()):
            between.append(node)
            row = _row_of(node, reads)
            if node.op == "Slice" and row is not None and row != reads[0]:
                shifts.add(node)
            first.update((v, row) for v in node.outputs)
    # the consumer: its fed iterators read rows [j, j + count) of the producer's; nothing else depends on it
    fed, starts = [], set()
    for it in consumer.iterators:
        if it.source in first:
            fed.append(it)
            starts.add(first[it.source])
    if not fed:
        return None  # not a layer over the rows of the one before
    trips, count = constant_trips(producer), constant_trips(consumer)
    if trips is None or count is None:
        return declined(f"it and {producer.name!r} need constant trip counts to run one trip apart", at=consumer)
    unplain = _unplain(producer, trips) or _unplain(consumer, count)
    if unplain is not None:
        return declined(f"{unplain}, so it and {producer.name!r} cannot run one trip apart", at=consumer)
    stateless = next((loop for loop in (producer, consumer) if not loop.recurrences), None)
    if stateless is not None:
        return declined(f"{stateless.name!r} carries no state", at=consumer)
    if any(it.reverse for it in consumer.iterators):
        return declined("it iterates backwards", at=consumer)
    if len(starts) != 1 or None in starts or any(it.axis != 0 for it in fed):
        return declined(f"it reads the rows of {producer.name!r} through work that is not row by row", at=consumer)
    first_row = starts.pop()
    assert first_row is not None
    if first_row + count != trips:
        return declined(f"it does not read the last {count} rows of {producer.name!r}", at=consumer)
    fed_sources = {it.source for it in fed}
    if any(v in first and v not in fed_sources for v in consumer.inputs if v is not None) \
            or _reads_from(consumer.body, first) or any(v in first for v in consumer.body.outputs):
        return declined(f"it reads results of {producer.name!r} other than through its iterators", at=consumer)
    chain = _chain(between, [it.source for it in fed])
    needed = {v for n in chain for v in n.inputs if v is not None} | fed_sources
    rows = {k: v for k, v in rows.items() if k in needed}
    if not all(_can_carry(producer, v, first_row) for v in rows.values()):
        return declined(f"a row of {producer.name!r} it reads has a size unknown before the loop", at=consumer)
    return _Plan(graph, producer, consumer, trips, first_row, between, chain, shifts, rows, fed)


def _unplain(loop: Loop, count: int) -> str | None:
    """Why ``loop`` is not a counted loop without early exit, iterating over sources exactly ``count`` long;
    None when it is."""
    if count < 1:
        return f"{loop.name!r} runs no trip"
    if loop.condition is not None:
        return f"{loop.name!r} can stop early (it has a condition)"
    if loop.max_trips is not None or loop.padded:
        return f"{loop.name!r} runs up to a bound, not a count"
    for it in loop.iterators:
        shape = it.source.shape
        if shape is None or it.axis >= len(shape) or shape[it.axis] != count:
            return f"{loop.name!r} iterates over {it.source.name!r}, not known to be {count} long along axis {it.axis}"
    return None


def _row_of(node: Node, reads: list[int | None]) -> int | None:
    """The first producer row in row 0 of ``node``'s results, from its operands' (-1: not from the
    producer, None: not rows of it), or None when they are not rows of it."""
    from_producer = [r for r in reads if r != -1]
    if None in from_producer or len(set(from_producer)) != 1:
        return None
    start = from_producer[0]
    assert start is not None
    if node.op == "Slice" and reads[0] == start and all(r == -1 for r in reads[1:]):
        shifted = _sliced_start(node, start)
        if shifted is not None:
            return shifted
    return start if row_wise(node, [r != -1 for r in reads]) else None


def _sliced_start(node: Node, start: int) -> int | None:
    """A Slice of rows that keeps every row from some on (axis 0, step 1, to the end): its new first row."""
    begin, end = constant_value(node.inputs[1]), constant_value(node.inputs[2])
    axes = constant_value(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] is not None else [0]
    steps = constant_value(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else [1]
    data = node.inputs[0]
    if begin is None or end is None or axes is None or steps is None or data is None or data.shape is None:
        return None
    begin, end, axes, steps = (np.asarray(a).reshape(-1) for a in (begin, end, axes, steps))
    length = data.shape[0]
    if begin.size != 1 or int(axes[0]) % len(data.shape) != 0 or int(steps[0]) != 1 or not isinstance(length, int):
        return None
    b, e = int(begin[0]), int(end[0])
    b = b + length if b < 0 else b
    if not 0 <= b < length or e < length:
        return None
    return start + b


def _reads_from(graph: Graph, first: dict[Value, int | None]) -> bool:
    """Whether ``graph`` (a body, at any depth) reads a value listed in ``first``."""
    return any(v in first for _, n in graph.walk() for v in n.inputs if v is not None)


def _chain(between: list[Node], sources: list[Value]) -> list[Node]:
    """The nodes of ``between`` that ``sources`` are computed by, in order."""
    wanted = {v for v in sources}
    chain = []
    for node in reversed(between):
        if any(v in wanted for v in node.outputs):
            chain.append(node)
            wanted.update(v for v in node.inputs if v is not None)
    return chain[::-1]


def _can_carry(loop: Loop, value: Value, first_row: int) -> bool:
    """Whether the trip before's ``value`` is at hand: a state holds it, or one can (its type is known)."""
    if any(r.next is value or _held(loop, r, value, first_row) for r in loop.recurrences):
        return True
    return value.shape is not None and value.dtype is not None and all(isinstance(d, int) for d in value.shape)

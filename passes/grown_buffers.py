"""A value that grows on every trip and is read in the same trip becomes a buffer of its longest length.

``cache = cat([cache, piece], axis)`` with ``cache`` also read inside the loop (a decoder's key/value cache,
attended over every step) cannot stay a TensorRT recurrence, whose shape is fixed. When the loop's trips are
bounded by ``T`` (its trip count, ``max_trips`` or ``--max-trips``), the cache is carried as a *buffer* as long as
it can become, ``len(init) + T * len(piece)`` along the axis, beside its *valid length* ``n``; each trip writes its
piece at ``[n, n + len(piece))`` and adds ``len(piece)`` to ``n``. Positions at and past ``n`` are padding: zeros
until written.

Every read of the cache, of the grown value and of what is computed from them is then rewritten by the rule for
its op in the one padder's table (:mod:`loopc.passes._padding`), as XLA's dynamic padder does for dynamic
dimensions: a *padded* value keeps the cache's positions along one axis, its valid length beside it. Caches
stacked in one tensor (``[L, B, H, S, D]``, read per layer by a Gather and stacked again by a Concat of
Unsqueezed layers) grow through each layer's Concat.

The piece is written with a ScatterElements, whose result has the buffer's shape: TensorRT sizes a
conditional's result at run time unless both branches give the same shape, and such a size cannot feed a
recurrence.

A read with no rule leaves the loop alone; unroll then tries it, and refuses naming the op when it cannot. The
loop's last value of the cache is the buffer cut to its length, so results are what the model computes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from loopc.ir import Graph, If, Loop, LoopOutput, Node, Recurrence, Value, constant_int, constant_value
from loopc.ir.builder import I64, Builder
from loopc.ir.target import illegal_carries, loop_violations, reordered
from loopc.loop_rules import MAX_TRIPS
from loopc.passes._padding import Padded, Padder, Refused, along, dim_unknown, with_entry
from loopc.passes._util import TO_THE_END, as_i64, listed_axes
from loopc.passes._why import declined, kept_if, legalized
from loopc.passes.manager import PassResult
from loopc.passes.unroll import cannot_unroll
from loopc.semantics.attributes import attr

GROWING = "a value that grows on every trip"


class GrownBuffers:
    name = "grown-buffers"
    benefit = 40  # see loopc.passes.legalize

    def __init__(self, max_trips: int | None = None) -> None:
        self.max_trips = max_trips

    def __call__(self, graph: Graph) -> PassResult:
        rewritten = 0
        for outer, node in graph.structured():
            if not isinstance(node, Loop):
                continue
            loop = node
            if cannot_unroll(loop) is None:  # a copy per trip keeps every shape exact
                with kept_if(lambda: next(illegal_carries(loop), None) is not None):
                    declined("unrolling suits the loop better (a constant number of trips, at most 64)", at=node)
            else:
                rewritten += self._rewrite(outer, loop)
        return PassResult(graph, rewritten > 0, {"buffers": rewritten} if rewritten else {})

    def _rewrite(self, outer: Graph, loop: Loop) -> int:
        found = padding(outer, loop, self.max_trips)
        if isinstance(found, NotPadded):
            with kept_if(lambda: next(loop_violations(loop), None) is not None):
                declined(found.reason, at=loop)
            return 0
        found.apply()
        legalized(loop, f"{len(found.carried)} grown value(s) carried at their longest length, their valid length "
                        "beside them")
        return len(found.carried)


@dataclass(frozen=True)
class NotPadded:
    """Why :func:`padding` does not apply."""

    reason: str


def padding(outer: Graph, loop: Loop, max_trips: int | None = None) -> _Plan | NotPadded:
    """The padder as a rule of a legalization driver: the rewrite that carries ``loop``'s grown values as
    buffers (nothing changes until its ``apply()``), or why it does not apply. ``max_trips``: the bound the
    user gave (``--max-trips``), used when the loop states none."""
    grown = [(rec, axis) for rec in loop.recurrences if (axis := _growth(rec)) is not None
             and _read_in_body(loop, rec)]
    if not grown:
        return NotPadded("no carried value grows by a Concat and is read in the loop")
    before: list[Node] = []
    bound, derived = _bound(Builder(outer, before), loop, grown, max_trips)
    if bound is None:  # unroll refuses too, asking for --max-trips
        return NotPadded("nothing bounds the loop's trips (a trip count, a maximum, or --max-trips)")
    try:
        plan = _Plan(GROWING, outer=outer, loop=loop, bound=bound, before=before, sets_trip_count=derived)
        for rec, axis in grown:
            plan.carry(rec, axis)
        plan.rewrite_reads()
    except Refused as why:
        return NotPadded(str(why))
    return plan


def _bound(b: Builder, loop: Loop, grown: list[tuple[Recurrence, int]],
           max_trips: int | None) -> tuple[Value | None, bool]:
    """At least the trips ``loop`` runs, as an int64 scalar (None when nothing bounds them), and whether it is
    derived here: a loop that stops once a grown value reaches a length (``if len(mel) == max_steps: break``)
    runs no more trips than that by its own condition, so the bound becomes its trip count when the rewrite
    applies (its other grown outputs need one)."""
    for given in (loop.trip_count, loop.max_trips):
        if given is not None:
            return as_i64(b, f"{loop.name}_bound", given), False
    trips = _trips_to_length(loop, grown)
    if trips is not None:
        return b.const(np.array(trips, np.int64), name=f"{loop.name}_bound"), True
    if max_trips is not None:
        return b.const(np.array(max_trips, np.int64), name=f"{loop.name}_bound"), False
    return None, False


def _trips_to_length(loop: Loop, grown: list[tuple[Recurrence, int]]) -> int | None:
    """The most trips ``loop`` runs when its condition turns false once a grown value's length along its axis
    equals (or passes) a constant ``C``: it starts at a known length and grows by a known step, so it reaches
    ``C`` after ``(C - start) / step`` trips."""
    cond = next((r for r in loop.recurrences if r.state is loop.condition), None)
    if cond is None:
        return None
    for _, node in loop.body.find("Equal", "GreaterOrEqual"):
        if len(node.inputs) != 2:
            continue
        limit = constant_int(node.inputs[1])
        for rec, axis in grown:
            start, step = _start_and_step(rec, axis)
            if limit is None or start is None or step is None or not _is_length(node.inputs[0], rec.next, axis):
                continue
            trips, rest = divmod(limit - start, step)
            if trips >= 1 and rest == 0 and _forces(cond.next, node.outputs[0], False):
                return trips
    return None


def _start_and_step(rec: Recurrence, axis: int) -> tuple[int | None, int | None]:
    """``rec``'s static length along ``axis`` when the loop starts, and the static length of the one piece its
    Concat appends."""
    grow = rec.next.producer
    start = rec.init.shape[axis] if rec.init.shape is not None else None
    piece = grow.inputs[1] if grow is not None and grow.op == "Concat" and len(grow.inputs) == 2 else None
    step = piece.shape[axis] if piece is not None and piece.shape is not None and len(piece.shape) > axis else None
    return (start if isinstance(start, int) else None), (step if isinstance(step, int) and step > 0 else None)


def _is_length(value: Value | None, grown: Value, axis: int) -> bool:
    """``value`` is ``grown``'s length along ``axis``: ``Shape(grown)[axis]``, squeezed, reshaped or cast."""
    node = value.producer if value is not None else None
    while node is not None and node.op in ("Squeeze", "Reshape", "Cast", "Identity", "Unsqueeze"):
        node = node.inputs[0].producer if node.inputs[0] is not None else None
    if node is None or node.op != "Gather" or node.inputs[0] is None:
        return False
    shape = node.inputs[0].producer
    at = constant_int(node.inputs[1])
    rank = len(grown.shape) if grown.shape is not None else None
    return (shape is not None and shape.op == "Shape" and not shape.attrs and shape.inputs[0] is grown
            and at is not None and rank is not None and at % rank == axis)


def _forces(value: Value | None, fact: Value, want: bool) -> bool:
    """Whether ``value`` (a boolean) is ``want`` in every trip where ``fact`` is true: through constants,
    Identity, Cast, Not, And, Or and the branches of an If (a ``break`` taken when the fact holds)."""
    if value is None:
        return False
    if value is fact:
        return want
    node = value.producer
    if node is None:
        return False
    known = constant_value(value)
    if known is not None:
        return np.size(known) == 1 and bool(np.asarray(known).reshape(-1)[0]) == want
    if node.op in ("Identity", "Cast"):
        return _forces(node.inputs[0], fact, want)
    if node.op == "Not":
        return _forces(node.inputs[0], fact, not want)
    if node.op in ("Or", "And"):
        any_one = (node.op == "Or") == want
        found = [_forces(v, fact, want) for v in node.inputs]
        return any(found) if any_one else all(found)
    if isinstance(node, If):
        slot = node.outputs.index(value)
        branches = node.subgraphs()
        for taken, branch in zip((True, False), branches):
            if _forces(node.inputs[0], fact, taken):
                return _forces(branch.outputs[slot], fact, want)
        return all(_forces(branch.outputs[slot], fact, want) for branch in branches)
    return False


def _growth(rec: Recurrence) -> int | None:
    """The axis ``rec`` grows along: its next value is one Concat of the state, or of the state reordered along
    another axis (a beam search's ``cat([history[beams], token])``), and one piece; or the result of an If
    whose branches each yield the state or such a Concat (a ``break`` that skips the step)."""
    if not rec.init.shape:
        return None
    axes = _grown_axes(rec.next, rec.state, len(rec.init.shape))
    return axes.pop() if axes is not None and len(axes) == 1 else None


def _grown_axes(value: Value, state: Value, rank: int) -> set[int] | None:
    """The axes along which ``value`` is ``state`` grown by one Concat (none: ``state`` itself), or None when it
    is something else."""
    if value is state:
        return set()
    node = value.producer
    if isinstance(node, If):
        slot = node.outputs.index(value)
        found = [_grown_axes(branch.outputs[slot], state, rank) for branch in node.subgraphs()]
        return None if any(f is None for f in found) else set().union(*(f for f in found if f is not None))
    if node is not None and node.op == "Gather" and node.inputs[0] is not None:  # grown, then reordered (beams)
        inner = _grown_axes(node.inputs[0], state, rank)
        return inner if inner and len(inner) == 1 and reordered(value, node.inputs[0], min(inner)) else None
    if node is not None and node.op == "Attention" and rank == 4:
        slot = node.outputs.index(value)  # present_key (1) grows past_key (input 4); present_value, past_value
        return {2} if slot in (1, 2) and len(node.inputs) > slot + 3 and node.inputs[slot + 3] is state else None
    if node is not None and node.op == "Concat" and all(v is not None and v.producer is not None
                                                       and v.producer.op == "Unsqueeze" for v in node.inputs):
        return _restacked_axes(node, state, rank)
    if node is None or node.op != "Concat" or len(node.inputs) != 2:
        return None
    axis = int(attr(node, "axis")) % rank
    first = node.inputs[0]
    return {axis} if first is state or reordered(first, state, axis) else None


def _restacked_axes(node: Node, state: Value, rank: int) -> set[int] | None:
    """The axis along which per-layer caches stacked in one tensor grow: ``node`` concatenates, along axis
    ``a``, each layer Unsqueezed at ``a``, each layer being ``state`` read at one layer (a Gather on ``a``)
    grown by one Concat (``torch.stack([torch.cat([past[i], new_i], s) for i ...])``)."""
    stack = int(attr(node, "axis")) % rank
    found: set[int] = set()
    for layer in node.inputs:
        unsqueeze = layer.producer if layer is not None else None
        assert unsqueeze is not None
        grow = unsqueeze.inputs[0].producer if unsqueeze.inputs[0] is not None else None
        if listed_axes(unsqueeze) not in ([stack], [stack - rank]) or grow is None or grow.op != "Concat" \
                or len(grow.inputs) != 2:
            return None
        read = grow.inputs[0].producer if grow.inputs[0] is not None else None
        if read is None or read.op != "Gather" or _whole(read.inputs[0]) is not state \
                or constant_int(read.inputs[1]) is None \
                or read.inputs[1] is None or read.inputs[1].shape != () \
                or int(attr(read, "axis")) % rank != stack:
            return None
        axis = int(attr(grow, "axis")) % (rank - 1)
        found.add(axis + 1 if axis >= stack else axis)
    return found if len(found) == 1 else None


def _whole(value: Value | None) -> Value | None:
    """The value ``value`` is all of: itself, or what a Slice from 0 to the end in steps of 1 slices
    (``past[:, i]`` exports as such a Slice, then a Gather)."""
    node = value.producer if value is not None else None
    if node is None or node.op != "Slice":
        return value
    starts, ends = constant_value(node.input(1)), constant_value(node.input(2))
    steps = constant_value(node.input(4)) if node.input(4) is not None else 1
    if starts is None or ends is None or steps is None or np.any(np.asarray(starts) != 0) \
            or np.any(np.asarray(ends) < TO_THE_END) or np.any(np.asarray(steps) != 1):
        return value
    return node.inputs[0]


def _read_in_body(loop: Loop, rec: Recurrence) -> bool:
    """Something in the body reads the state or the grown value besides the growth itself (else the value is
    growing-concat's, or unused)."""
    grow = rec.next.producer
    if grow is not None and grow.op == "Attention":
        return True  # it attends over the cache it grows
    finals = sum(1 for o in loop.loop_outputs if o.value is rec.state)
    state_readers = [u for u in rec.state.uses() if u.user is not grow]
    return len(state_readers) > finals or len(rec.next.uses()) > 1


@dataclass(eq=False)
class _Carried:
    """A recurrence carried as ``buffer`` and its valid ``length`` (whose ``positions`` the buffer has), growing
    along ``axis`` by ``step`` each trip (known once the Concat that grows it is rewritten)."""

    rec: Recurrence
    buffer: Value
    length: Value
    positions: Value
    axis: int
    step: int | None = None
    #: writes made so far (each trip may write once per layer of stacked caches)
    writes: int = 0


@dataclass
class _Plan(Padder):
    """The rewrite of one loop, made on the side (nothing is in a graph until :meth:`apply`)."""

    outer: Graph = field(default_factory=lambda: Graph("outer"))
    loop: Loop | None = None
    bound: Value | None = None
    before: list[Node] = field(default_factory=list)
    #: the bound is derived from the loop's condition, and becomes its trip count
    sets_trip_count: bool = False
    carried: list[_Carried] = field(default_factory=list)
    #: each write's result: the cache, the value it grew (a layer read from the cache) and the piece
    writes: dict[Value, tuple[_Carried, Value, Value]] = field(default_factory=dict)

    @property
    def body(self) -> Graph:
        assert self.loop is not None
        return self.loop.body

    def carry(self, rec: Recurrence, axis: int) -> None:
        """Carry ``rec`` as a buffer and its valid length: its state becomes a padded view. Its next one is made
        by the rule of the Concat that grows it, which learns the piece's length; the buffer is allocated then."""
        if rec.init.shape is None or len(rec.init.shape) <= axis:
            raise Refused(f"the rank of {rec.init.name!r} is not known")
        name = rec.state.name
        body = Builder(self.body)
        buffer = body.value(f"{name}_buffer", rec.init.dtype, dim_unknown(rec.init.shape, axis))
        length = body.value(f"{name}_length", I64, ())
        positions = Builder(self.outer).value(f"{name}_positions", I64, (None,))  # made by allocate()
        least = rec.init.shape[axis]
        self.views[rec.state] = Padded.along(buffer, axis, length, positions, zero=True,
                                             least=least if isinstance(least, int) else 0)
        self.carried.append(_Carried(rec, buffer, length, positions, axis))

    def allocate(self, grown: _Carried, b: Builder) -> tuple[Value, Value]:
        """Before the loop: the buffer's first value (``init`` then room for every trip's piece), the valid
        length ``init`` has, and the buffer's positions."""
        rec, axis, name = grown.rec, grown.axis, grown.rec.state.name
        assert grown.step is not None and rec.init.shape is not None and self.bound is not None
        length0 = b.dim(rec.init, axis)
        # room for one trip at least: the body of a loop that runs none is still run once to find its types
        least = b.op("Max", [self.bound, b.const(np.array(1, np.int64), name=f"{name}_one_trip")],
                     name=f"{name}_at_least_one")
        # and no more than a loop runs (TensorRT's trip limit is an int32, loopc saturates it to MAX_TRIPS): a
        # bound computed from a shape-tensor input (``max_new_tokens``) is otherwise bounded by TensorRT by the
        # int64 range, and Myelin's codegen refuses a buffer whose length may pass INT32_MAX
        # ("cuda_codegen_fc.cpp: CHECK(bounds[i] < ...int32_t max())").
        trips = b.op("Min", [least, b.const(np.array(MAX_TRIPS, np.int64), name=f"{name}_most_trips")],
                     name=f"{name}_trips")
        room = b.op("Mul", [trips, b.const(np.array(grown.step, np.int64), name=f"{name}_step")],
                    name=f"{name}_room")
        shape = b.op("Shape", [rec.init], name=f"{name}_init_shape", dtype=I64, shape=(len(rec.init.shape),))
        zeros = b.op("ConstantOfShape", [with_entry(b, shape, axis, room, f"{name}_pad_shape")],
                     {"value": np.zeros(1, rec.init.dtype)}, name=f"{name}_padding", dtype=rec.init.dtype)
        buffer0 = b.op("Concat", [rec.init, zeros], {"axis": axis}, name=f"{name}_buffer0", dtype=rec.init.dtype)
        size = b.op("Add", [length0, room], name=f"{name}_size")
        b.op("Range", [b.const(np.array(0, np.int64), name=f"{name}_zero"), size,
                       b.const(np.array(1, np.int64), name=f"{name}_one")], out=grown.positions)
        return buffer0, length0

    def rewrite_reads(self) -> None:
        """Rewrite every body node that reads a padded value, in order, by its op's rule."""
        self.rewrite_graph(self.body)
        for grown in self.carried:
            if grown.rec.next not in self.views:
                raise Refused(f"carried value {grown.rec.state.name!r} grows in a way loopc cannot follow")
        for value in self.views:
            for user, _ in value.uses():
                if user is self.body and not self._own_result(value):
                    raise Refused(f"{value.name!r} grows on every trip and is a result of the loop's body other than "
                                  "its own carried value")

    def cache_of(self, view: Padded) -> _Carried | None:
        """The carried value whose state ``view`` is (or a reordering of it, or one layer of it)."""
        return next((c for c in self.carried if view.length is self.views[c.rec.state].length), None)

    def append(self, b: Builder, node: Node, cache: object, view: Padded, piece: Value) -> Padded | None:
        """``piece`` written into ``view`` (of ``cache``'s buffer) at its valid length, along its axis."""
        assert isinstance(cache, _Carried)
        name, axis = cache.rec.state.name, view.axis
        shape = view.value.shape
        rank = len(shape) if shape is not None else len(cache.rec.init.shape or ())
        if piece in self.views:
            return self.cannot(node, "the piece it appends grows too")
        step = piece.shape[axis] if piece.shape is not None and len(piece.shape) == rank else None
        if not isinstance(step, int):
            raise Refused(f"carried value {name!r} grows by a piece ({piece.name!r}) whose length along axis {axis} "
                          "is not known when the model is built")
        if cache.step is not None and cache.step != step:
            return self.cannot(node, "the carried value grows by pieces of different lengths")
        cache.step = step
        made = self.written(b, cache, view, piece, rank, step)
        if node.op == "Concat" and node.inputs[0] is not None:
            self.writes[node.outputs[0]] = (cache, node.inputs[0], piece)
        return made

    def written(self, b: Builder, cache: _Carried, view: Padded, piece: Value, rank: int, step: int) -> Padded:
        """``piece`` written into ``view`` at its valid length, along its axis."""
        # the first write of a cache is named after it, later ones (one per layer of stacked caches) numbered
        name = cache.rec.state.name + (f"_{cache.writes}" if cache.writes else "")
        cache.writes += 1
        axis, length = view.axis, view.length
        grown_length = self.plus(b, length, step)
        rows = b.const(np.arange(step, dtype=np.int64), name=f"{name}_rows")
        at = b.op("Add", [length, along(b, rows, axis, rank, f"{name}_rows_along")], name=f"{name}_at")
        shape_of_piece = b.op("Shape", [piece], name=f"{name}_piece_shape", dtype=I64, shape=(rank,))
        index = b.op("Expand", [at, shape_of_piece], name=f"{name}_index", dtype=I64, shape=piece.shape)
        # a scatter's result has its data's shape: the buffer's, which TensorRT then sees in both branches of a
        # conditional that grows the cache in one (a broadcasting write would give a shape of its own)
        written = b.op("ScatterElements", [view.value, index, piece], {"axis": axis}, name=f"{name}_buffer_next",
                       dtype=piece.dtype)
        return Padded.along(written, axis, grown_length, view.positions, view.zero, view.least + step)

    def restack(self, b: Builder, node: Node) -> Padded | None:
        """Per-layer caches stacked again (``torch.stack([cat([past[i], new_i], s) for i in range(L)])``): one
        write of the stacked pieces into the stacked buffer, whose result has the buffer's shape (TensorRT sizes
        a conditional's result at run time unless both branches give the same shape, and such a size cannot
        feed a recurrence). Layer ``i`` must be read at ``i`` and every layer stacked, in order."""
        stack = int(attr(node, "axis"))
        layers = [self._layer_write(v, stack, k) for k, v in enumerate(node.inputs)]
        found = [w for w in layers if w is not None]
        if len(found) != len(layers) or not found or len({id(w[0]) for w in found}) != 1:
            return None
        cache = found[0][0]
        state = self.views[cache.rec.state]
        shape = state.value.shape
        if cache.step is None or shape is None or shape[stack % len(shape)] != len(found):
            return None
        name, rank = node.outputs[0].name, len(shape)
        axis0 = b.const(np.array([stack % rank], np.int64), name=f"{name}_stack_axis")
        pieces = [b.op("Unsqueeze", [piece, axis0], name=f"{name}_piece{k}") for k, (_, piece) in enumerate(found)]
        stacked = b.op("Concat", pieces, {"axis": stack % rank}, name=f"{name}_pieces", dtype=state.value.dtype)
        return self.written(b, cache, state, stacked, rank, cache.step)

    def _layer_write(self, value: Value | None, stack: int, k: int) -> tuple[_Carried, Value] | None:
        """(cache, piece) when ``value`` is layer ``k`` of a cache, grown by a write and Unsqueezed at ``stack``."""
        unsqueeze = value.producer if value is not None else None
        if unsqueeze is None or unsqueeze.op != "Unsqueeze" or unsqueeze.inputs[0] not in self.writes:
            return None
        cache, read, piece = self.writes[unsqueeze.inputs[0]]
        gather = read.producer
        if listed_axes(unsqueeze) != [stack] or gather is None or gather.op != "Gather" \
                or _whole(gather.inputs[0]) is not cache.rec.state or constant_int(gather.inputs[1]) != k \
                or int(attr(gather, "axis")) != stack:
            return None
        return cache, piece

    def _own_result(self, value: Value) -> bool:
        return any(value in (c.rec.state, c.rec.next) for c in self.carried)

    def apply(self) -> None:
        loop, outer = self.loop, self.outer
        assert loop is not None
        starts = {grown: self.allocate(grown, Builder(outer, self.before)) for grown in self.carried}
        outer.insert_before(loop, self.before)
        if self.sets_trip_count:
            loop.set_trip_count(self.bound)
        self.finish()
        after: list[Node] = []
        b = Builder(outer, after)
        finals: list[tuple[Value, Value]] = []
        for grown in self.carried:
            rec, axis, nxt = grown.rec, grown.axis, self.views[grown.rec.next]
            buffer0, length0 = starts[grown]
            buffer = Recurrence(grown.buffer, buffer0, nxt.value)
            length = Recurrence(grown.length, length0, nxt.length)
            loop.add_recurrence(buffer)
            loop.add_recurrence(length)
            last_buffer = b.value(f"{rec.state.name}_buffer_last", buffer.state.dtype, buffer.state.shape)
            last_length = b.value(f"{rec.state.name}_length_last", I64, ())
            loop.add_output(LoopOutput("last", buffer.state, last_buffer))
            loop.add_output(LoopOutput("last", length.state, last_length))
            end = b.op("Unsqueeze", [last_length, b.const(np.array([0], np.int64), name=f"{rec.state.name}_dim0")],
                       name=f"{rec.state.name}_end")
            cut = b.op("Slice", [last_buffer, b.const(np.array([0], np.int64), name=f"{rec.state.name}_start"), end,
                                 b.const(np.array([axis], np.int64), name=f"{rec.state.name}_axis")],
                       name=f"{rec.state.name}_final", dtype=buffer.state.dtype)
            finals += [(o.result, cut) for o in loop.loop_outputs if o.value is rec.state]
        outer.insert_after(loop, after)
        self.replace_and_drop()
        for old, new in finals:
            old.replace_all_uses_with(new)
        olds = [c.rec for c in self.carried]
        loop.remove_roles([*olds, *(o for o in loop.loop_outputs if any(o.value is r.state for r in olds))])
        self.drop_dead()

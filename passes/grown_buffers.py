"""A value that grows on every trip and is read in the same trip becomes a buffer of its longest length.

``cache = cat([cache, piece], axis)`` with ``cache`` also read inside the loop (a decoder's key/value cache,
attended over every step) cannot stay a TensorRT recurrence, whose shape is fixed. When the loop's trips are
bounded by ``T`` (its trip count, ``max_trips`` or ``--max-trips``), the cache is carried as a *buffer* as long as
it can become, ``len(init) + T * len(piece)`` along the axis, beside its *valid length* ``n``; each trip writes its
piece at ``[n, n + len(piece))`` and adds ``len(piece)`` to ``n``. Positions at and past ``n`` are padding: zeros
until written.

Every read of the cache, of the grown value and of what is computed from them is then rewritten by a rule for its
op, as XLA's dynamic padder does for dynamic dimensions. A *padded* value keeps the cache's positions along one
axis (its valid length beside it):

* elementwise ops, Unsqueeze, Squeeze, Transpose, and a Gather or a Softmax along another axis carry the padding
  along;
* a Softmax along the padded axis is computed with ``-inf`` in the padding (exact zeros come out there);
* a MatMul whose rows (left) or columns (right) are padded gives padded rows or columns; one that contracts over
  the padded axis of both operands zeroes their padding first and gives an unpadded product;
* ``Shape`` gives the valid length on the padded axis; a Gather of one position along it reads that position
  (a negative one counts from the valid end); ``Range(0, length)`` of that length (a causal mask's keys) is the
  buffer's positions, so the mask is padded as the scores it is applied to;
* an If whose branches yield the cache grown in one and as it was in the other (a ``break`` that skips the
  step) yields the buffer and the length from both.

The piece is written with a ScatterElements, whose result has the buffer's shape: TensorRT sizes a
conditional's result at run time unless both branches give the same shape, and such a size cannot feed a
recurrence.

A read with no rule leaves the loop alone; unroll then tries it, and refuses naming the op when it cannot. The
loop's last value of the cache is the buffer cut to its length, so results are what the model computes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from loopc.errors import PassError
from loopc.ir import Graph, If, Loop, LoopOutput, Node, Recurrence, Value, constant_int, constant_value
from loopc.ir.core import Shape
from loopc.ir.builder import I64, Builder, refine
from loopc.ir.ops import traits
from loopc.passes._resample import tensor_type
from loopc.passes._util import TO_THE_END, as_i64, listed_axes, reordered
from loopc.passes.manager import PassResult
from loopc.passes.unroll import cannot_unroll

BOOL = np.dtype(np.bool_)


@dataclass(frozen=True)
class Padded:
    """A value's stand-in whose dim ``axis`` holds a buffer's ``positions`` (0, 1, ...), valid below ``length``
    (an int64 scalar); ``zero``: the padding holds exact zeros."""

    value: Value
    axis: int
    length: Value
    positions: Value
    zero: bool = False
    #: a length the valid one is known to reach in every run (the initial value's, when static)
    least: int = 0

    def like(self, value: Value, axis: int, zero: bool = False) -> Padded:
        """Another value padded as this one is, along ``axis``."""
        return Padded(value, axis, self.length, self.positions, zero, self.least)


class Refused(Exception):
    """A read of a grown value with no rule (the message names the reader)."""


class GrownBuffers:
    name = "grown-buffers"
    #: a piece's length may become known later in the round that first sees the loop
    refusals_wait = True

    def __init__(self, max_trips: int | None = None) -> None:
        self.max_trips = max_trips

    def __call__(self, graph: Graph) -> PassResult:
        rewritten = 0
        for outer, node in graph.structured():
            if isinstance(node, Loop) and cannot_unroll(node) is not None:
                rewritten += self._rewrite(outer, node)
        return PassResult(graph, rewritten > 0, {"buffers": rewritten} if rewritten else {})

    def _rewrite(self, outer: Graph, loop: Loop) -> int:
        grown = [(rec, axis) for rec in loop.recurrences if (axis := _growth(rec)) is not None
                 and _read_in_body(loop, rec)]
        if not grown:
            return 0
        before: list[Node] = []
        bound = self._bound(Builder(outer, before), loop)
        if bound is None:
            return 0  # unroll refuses, asking for --max-trips
        try:
            plan = _Plan(outer, loop, bound, before)
            for rec, axis in grown:
                plan.carry(rec, axis)
            plan.rewrite_reads()
        except Refused as why:
            if cannot_unroll(loop) is not None:
                raise PassError(f"{loop.describe()}: {why}") from None
            return 0
        plan.apply()
        return len(grown)

    def _bound(self, b: Builder, loop: Loop) -> Value | None:
        """At least the trips ``loop`` runs, as an int64 scalar, or None when nothing bounds them."""
        for given in (loop.trip_count, loop.max_trips):
            if given is not None:
                return as_i64(b, f"{loop.name}_bound", given)
        if self.max_trips is not None:
            return b.const(np.array(self.max_trips, np.int64), name=f"{loop.name}_bound")
        return None


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
    if node is None or node.op != "Concat" or len(node.inputs) != 2:
        return None
    axis = int(node.attrs.get("axis", 0)) % rank
    first = node.inputs[0]
    return {axis} if first is state or reordered(first, state, axis) else None


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


@dataclass
class _Plan:
    """The rewrite of one loop, made on the side (nothing is in a graph until :meth:`apply`)."""

    outer: Graph
    loop: Loop
    bound: Value
    before: list[Node]
    views: dict[Value, Padded] = field(default_factory=dict)
    #: new nodes of the body, each list to go before its anchor node
    batches: list[tuple[Node, list[Node]]] = field(default_factory=list)
    replaced: dict[Value, Value] = field(default_factory=dict)
    #: unpadded values whose dims the rewrite made known
    learned: set[Value] = field(default_factory=set)
    dead: list[Node] = field(default_factory=list)
    carried: list[_Carried] = field(default_factory=list)
    masks: dict[tuple[Value, int, int], Value] = field(default_factory=dict)
    #: shape vectors (unpadded) whose entry ``view.axis`` is a view's valid length, and scalars that are one
    shapes: dict[Value, Padded] = field(default_factory=dict)
    lengths: dict[Value, Padded] = field(default_factory=dict)
    sums: dict[tuple[Value, int, Graph], Value] = field(default_factory=dict)
    #: (If, result slot, the views its branches yield there, the buffer and length results it gets)
    conditionals: list[tuple[If, int, list[Padded], Value, Value]] = field(default_factory=list)

    def carry(self, rec: Recurrence, axis: int) -> None:
        """Carry ``rec`` as a buffer and its valid length: its state becomes a padded view. Its next one is made
        by the rule of the Concat that grows it, which learns the piece's length; the buffer is allocated then."""
        if rec.init.shape is None or len(rec.init.shape) <= axis:
            raise Refused(f"the rank of {rec.init.name!r} is not known")
        name = rec.state.name
        body = Builder(self.loop.body)
        buffer = body.value(f"{name}_buffer", rec.init.dtype, _dim_unknown(rec.init.shape, axis))
        length = body.value(f"{name}_length", I64, ())
        positions = Builder(self.outer).value(f"{name}_positions", I64, (None,))  # made by allocate()
        least = rec.init.shape[axis]
        self.views[rec.state] = Padded(buffer, axis, length, positions, zero=True,
                                       least=least if isinstance(least, int) else 0)
        self.carried.append(_Carried(rec, buffer, length, positions, axis))

    def allocate(self, grown: _Carried, b: Builder) -> tuple[Value, Value]:
        """Before the loop: the buffer's first value (``init`` then room for every trip's piece), the valid
        length ``init`` has, and the buffer's positions."""
        rec, axis, name = grown.rec, grown.axis, grown.rec.state.name
        assert grown.step is not None and rec.init.shape is not None
        length0 = b.dim(rec.init, axis)
        # room for one trip at least: the body of a loop that runs none is still run once to find its types
        trips = b.op("Max", [self.bound, b.const(np.array(1, np.int64), name=f"{name}_one_trip")],
                     name=f"{name}_trips")
        room = b.op("Mul", [trips, b.const(np.array(grown.step, np.int64), name=f"{name}_step")],
                    name=f"{name}_room")
        shape = b.op("Shape", [rec.init], name=f"{name}_init_shape", dtype=I64, shape=(len(rec.init.shape),))
        zeros = b.op("ConstantOfShape", [_with_entry(b, shape, axis, room, f"{name}_pad_shape")],
                     {"value": np.zeros(1, rec.init.dtype)}, name=f"{name}_padding", dtype=rec.init.dtype)
        buffer0 = b.op("Concat", [rec.init, zeros], {"axis": axis}, name=f"{name}_buffer0", dtype=rec.init.dtype)
        size = b.op("Add", [length0, room], name=f"{name}_size")
        b.op("Range", [b.const(np.array(0, np.int64), name=f"{name}_zero"), size,
                       b.const(np.array(1, np.int64), name=f"{name}_one")], out=grown.positions)
        return buffer0, length0

    def rewrite_reads(self) -> None:
        """Rewrite every body node that reads a padded value, in order, by its op's rule."""
        self.rewrite_graph(self.loop.body)
        for grown in self.carried:
            if grown.rec.next not in self.views:
                raise Refused(f"carried value {grown.rec.state.name!r} grows in a way loopc cannot follow")
        for value, view in self.views.items():
            for user, _ in value.uses():
                if user is self.loop.body and not self._own_result(value):
                    raise Refused(f"{value.name!r} grows on every trip and is a result of the loop's body other than "
                                  "its own carried value")

    def rewrite_graph(self, graph: Graph) -> None:
        for node in list(graph.nodes):
            if isinstance(node, If):
                self.conditional(node)
                continue
            if not any(v in self.views for v in node.inputs if v is not None):
                if any(v in self.learned for v in node.inputs) and refine(node):
                    self.learned.update(node.outputs)
                self.follow_length(node)
                continue
            if node.subgraphs():
                raise Refused(f"{node.describe()} reads a value that grows on every trip inside a nested graph")
            b = self.builder(node)
            grown = self.grows(node)
            if grown is not None:
                self.append(b, node, grown)
            else:
                _rule(self, b, node)
            self.dead.append(node)

    def builder(self, node: Node) -> Builder:
        """A builder of nodes to go just before ``node``, in its graph."""
        assert node.graph is not None
        b = Builder(node.graph, []).standing_for(node)
        assert b.nodes is not None
        self.batches.append((node, b.nodes))
        return b

    def grows(self, node: Node) -> _Carried | None:
        """The carried value ``node`` grows: a Concat whose first operand is its state (or the state reordered)."""
        first = node.inputs[0] if node.op == "Concat" and node.inputs else None
        view = self.views.get(first) if first is not None else None
        return None if view is None else self.carried_by(view)

    def conditional(self, node: If) -> None:
        """An If: its branches are rewritten, and a result they yield padded views of one buffer for becomes a
        padded view itself, the If yielding the buffer and the valid length (a ``break`` that skips the step
        yields the cache as it was; the other branch, grown)."""
        for branch in node.subgraphs():
            self.rewrite_graph(branch)
        for slot, out in enumerate(node.outputs):
            yielded = [self.views.get(branch.outputs[slot]) for branch in node.subgraphs()]
            if all(view is None for view in yielded):
                continue
            views = [view for view in yielded if view is not None]
            first = views[0]
            if len(views) != len(yielded) or any(v.positions is not first.positions or v.axis != first.axis
                                                 for v in views):
                raise _no_rule(node, f"its branches yield {out.name!r} padded in one and not the other")
            body = Builder(self.loop.body)
            buffer = body.value(f"{out.name}_buffer", out.dtype, _dim_unknown(out.shape, first.axis))
            length = body.value(f"{out.name}_length", I64, ())
            self.conditionals.append((node, slot, views, buffer, length))
            self.views[out] = Padded(buffer, first.axis, length, first.positions, all(v.zero for v in views),
                                     min(v.least for v in views))

    def append(self, b: Builder, node: Node, grown: _Carried) -> None:
        """The Concat that grows ``grown``: its pieces written at the valid length of its first operand, a view
        of the buffer (the state, or the state reordered along another axis)."""
        view = self.views.get(node.inputs[0]) if node.inputs[0] is not None else None
        pieces = [v for v in node.inputs[1:] if v is not None]
        rank = len(grown.rec.init.shape or ())
        axis = int(node.attrs.get("axis", 0)) % rank
        if view is None or view.length is not self.views[grown.rec.state].length or view.axis != axis or len(pieces) != 1:
            raise _no_rule(node, "it does not append one piece to the carried value along its grown axis")
        self.views[node.outputs[0]] = self.write(b, node, grown, view, self.replaced.get(pieces[0], pieces[0]))

    def write(self, b: Builder, node: Node, grown: _Carried, view: Padded, piece: Value) -> Padded:
        """``piece`` written into ``view`` (of ``grown``'s buffer) at its valid length, along its axis."""
        name, axis = grown.rec.state.name, view.axis
        rank = len(grown.rec.init.shape or ())
        if piece in self.views:
            raise _no_rule(node, "the piece it appends grows too")
        step = piece.shape[axis] if piece.shape is not None and len(piece.shape) == rank else None
        if not isinstance(step, int):
            raise Refused(f"carried value {name!r} grows by a piece ({piece.name!r}) whose length along axis {axis} "
                          "is not known when the model is built")
        if grown.step is not None and grown.step != step:
            raise _no_rule(node, "the carried value grows by pieces of different lengths")
        grown.step, length = step, view.length
        grown_length = self.plus(b, length, step)
        rows = b.const(np.arange(step, dtype=np.int64), name=f"{name}_rows")
        at = b.op("Add", [length, _along(b, rows, axis, rank, f"{name}_rows_along")], name=f"{name}_at")
        shape = b.op("Shape", [piece], name=f"{name}_piece_shape", dtype=I64, shape=(rank,))
        index = b.op("Expand", [at, shape], name=f"{name}_index", dtype=I64, shape=piece.shape)
        # a scatter's result has its data's shape: the buffer's, which TensorRT then sees in both branches of a
        # conditional that grows the cache in one (a broadcasting write would give a shape of its own)
        written = b.op("ScatterElements", [view.value, index, piece], {"axis": axis}, name=f"{name}_buffer_next",
                       dtype=piece.dtype)
        return Padded(written, axis, grown_length, view.positions, view.zero, view.least + step)

    def plus(self, b: Builder, length: Value, rows: int) -> Value:
        """``length + rows``, one value per graph: a write's new length and a mask made from the old length plus
        the rows to come are then the same value, which is how padded values are matched."""
        key = (length, rows, b.graph)
        if key not in self.sums:
            self.sums[key] = b.op("Add", [length, b.const(np.array(rows, np.int64), name=f"{length.name}_plus_{rows}")],
                                  name=f"{length.name}_plus_{rows}_rows")
        return self.sums[key]

    def carried_by(self, view: Padded) -> _Carried | None:
        """The carried value whose state ``view`` is (or a reordering of it)."""
        return next((c for c in self.carried if view.length is self.views[c.rec.state].length), None)

    def follow_length(self, node: Node) -> None:
        """Track a valid length read from a padded value's shape (``Shape(x)[axis]``, cast or not) to a
        ``Range(0, length)`` numbering the valid positions (a causal mask's keys): that Range becomes the
        padded value's positions, so the mask lines up with it."""
        first = node.inputs[0] if node.inputs else None
        if node.op == "Gather" and first in self.shapes:
            view = self.shapes[first]
            at, index = constant_int(node.inputs[1]), node.inputs[1]
            rank = first.shape[0] if first.shape else None
            if at is not None and index is not None and index.shape == () and isinstance(rank, int) \
                    and at % rank == view.axis:
                self.lengths[node.outputs[0]] = view
        elif node.op == "Cast" and first in self.lengths:
            self.lengths[node.outputs[0]] = self.lengths[first]
        elif node.op == "Add" and any(v in self.lengths for v in node.inputs):
            view = next(self.lengths[v] for v in node.inputs if v in self.lengths)
            more = [constant_int(v) for v in node.inputs if v not in self.lengths]
            if len(more) == 1 and more[0] is not None:  # the length a write of ``more`` rows will give
                self.lengths[node.outputs[0]] = replace(view, length=self.plus(self.builder(node), view.length, more[0]))
        elif node.op == "Range" and node.inputs[1] in self.lengths:
            view, out = self.lengths[node.inputs[1]], node.outputs[0]
            if _number(node.inputs[0]) != 0 or _number(node.inputs[2]) != 1:
                raise _no_rule(node, "it does not number the valid positions from 0 in steps of 1")
            b = self.builder(node)
            assert out.dtype is not None
            positions = view.positions
            if out.dtype != positions.dtype:
                positions = b.op("Cast", [positions], {"to": tensor_type(out.dtype)}, name=f"{out.name}_positions",
                                 dtype=out.dtype, shape=positions.shape)
            self.views[out] = view.like(positions, 0)
            self.dead.append(node)

    def replace(self, old: Value, new: Value) -> None:
        """``old`` (unpadded) is ``new`` from now on; what ``new``'s type says beyond ``old``'s is true of
        ``old`` too, and flows on to the readers that :meth:`rewrite_reads` refines."""
        self.replaced[old] = new
        if new.shape is not None and old.shape is not None and len(new.shape) == len(old.shape):
            known = tuple(d if isinstance(d, int) else n for d, n in zip(old.shape, new.shape))
            if known != old.shape:
                old.shape = known
                self.learned.add(old)

    def _own_result(self, value: Value) -> bool:
        return any(value in (c.rec.state, c.rec.next) for c in self.carried)

    def apply(self) -> None:
        loop, outer = self.loop, self.outer
        starts = {grown: self.allocate(grown, Builder(outer, self.before)) for grown in self.carried}
        outer.insert_before(loop, self.before)
        for anchor, nodes in self.batches:
            assert anchor.graph is not None
            anchor.graph.insert_before(anchor, nodes)
        for conditional, slot, yielded, padded, valid in self.conditionals:
            for branch, view in zip(conditional.subgraphs(), yielded):
                branch.set_outputs([*branch.outputs[:slot], view.value, *branch.outputs[slot + 1:], view.length])
            conditional.set_outputs([*conditional.outputs[:slot], padded, *conditional.outputs[slot + 1:], valid])
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
        for old, new in self.replaced.items():
            old.replace_all_uses_with(new)
        for old, new in finals:
            old.replace_all_uses_with(new)
        olds = [c.rec for c in self.carried]
        loop.remove_roles([*olds, *(o for o in loop.loop_outputs if any(o.value is r.state for r in olds))])
        for node in reversed(self.dead):
            assert node.graph is not None
            node.graph.remove(node)

    def mask(self, b: Builder, view: Padded, rank: int) -> Value:
        """True at the valid positions of ``view``'s axis, shaped to broadcast against a value of ``rank``."""
        key = (view.length, view.axis, rank)
        if key not in self.masks:
            valid = b.op("Less", [view.positions, view.length], name=f"{view.value.name}_valid")
            self.masks[key] = _along(b, valid, view.axis, rank, f"{view.value.name}_valid_mask")
        return self.masks[key]

    def zeroed(self, b: Builder, view: Padded, rank: int) -> Value:
        if view.zero:
            return view.value
        zero = b.const(np.zeros((), view.value.dtype), name=f"{view.value.name}_zero")
        return b.op("Where", [self.mask(b, view, rank), view.value, zero], name=f"{view.value.name}_zeroed",
                    dtype=view.value.dtype)


def _rule(plan: _Plan, b: Builder, node: Node) -> None:
    """Rewrite ``node``, which reads padded values, into ``b``: its results become padded views or replacements."""
    views = plan.views
    out = node.outputs[0] if len(node.outputs) == 1 else None
    padded = [(k, views[v]) for k, v in enumerate(node.inputs) if v is not None and v in views]
    operands = [views[v].value if v is not None and v in views else v for v in node.inputs]
    facts = traits(node.op)
    if node.op == "Attention":
        _attention(plan, b, node)
        return
    if out is None:
        raise _no_rule(node)
    rank = _result_rank(node, views)

    def carry(axis: int, zero: bool = False) -> None:
        made = b.op(node.op, operands, dict(node.attrs), name=f"{out.name}_padded", dtype=out.dtype,
                    shape=_dim_unknown(out.shape, axis))
        views[out] = padded[0][1].like(made, axis, zero)

    if facts.elementwise:
        aligned = {view.axis + rank - _rank(node.inputs[k], views) for k, view in padded}
        lengths = {view.length for _, view in padded}
        if len(aligned) != 1 or len(lengths) != 1:
            raise _no_rule(node, "it combines values padded along different axes or to different lengths")
        axis = aligned.pop()
        for v in node.inputs:
            if v is not None and v not in views and not _broadcasts_at(v, axis, rank):
                raise _no_rule(node, f"its operand {v.name!r} is not broadcast along the grown axis")
        carry(axis, zero=node.op == "Mul" and all(view.zero for _, view in padded))
        return
    k, view = padded[0]
    if node.op in ("Unsqueeze", "Squeeze") and k == 0:
        listed = listed_axes(node)
        if listed is None:
            raise _no_rule(node, "its axes are not constants")
        if node.op == "Unsqueeze":
            kept = [a for a in range(rank) if a not in {x % rank for x in listed}]
            carry(kept[view.axis], view.zero)
        else:
            source_rank = _rank(node.inputs[0], views)
            dropped = {x % source_rank for x in listed}
            if view.axis in dropped:
                raise _no_rule(node, "it removes the grown axis")
            carry(view.axis - sum(1 for a in dropped if a < view.axis), view.zero)
        return
    if node.op == "Transpose":
        perm = node.attrs.get("perm")
        order = list(perm) if perm is not None else list(reversed(range(rank)))
        carry(order.index(view.axis), view.zero)
        return
    if node.op in ("Softmax", "LogSoftmax"):
        axis = int(node.attrs.get("axis", -1)) % rank
        if axis != view.axis:
            carry(view.axis)
            return
        low = b.const(np.array(-np.inf, view.value.dtype), name=f"{out.name}_low")
        operands[0] = b.op("Where", [plan.mask(b, view, rank), view.value, low], name=f"{out.name}_masked",
                           dtype=view.value.dtype)
        carry(view.axis, zero=node.op == "Softmax")
        return
    if node.op == "MatMul":
        _matmul(plan, b, node, rank)
        return
    if (facts.reduction or node.op in ("ArgMax", "ArgMin")) and k == 0:
        _reduce(plan, b, node, view, carry)
        return
    if node.op == "Slice" and k == 0:
        _slice(plan, b, node, view, carry)
        return
    if node.op == "Shape" and k == 0 and not node.attrs:
        shape = b.op("Shape", [view.value], name=f"{out.name}_buffer", dtype=I64, shape=out.shape)
        plan.replace(out, _with_entry(b, shape, view.axis, view.length, f"{out.name}_valid"))
        plan.shapes[out] = view
        return
    if node.op == "Gather" and k == 0:
        data_rank = _rank(node.inputs[0], views)
        axis = int(node.attrs.get("axis", 0)) % data_rank
        index = node.inputs[1]
        if axis != view.axis:
            if index is not None and index in views:
                raise _no_rule(node, "its indices grow too")
            shift = _rank(index, views) - 1
            carry(view.axis + shift if view.axis > axis else view.axis, view.zero)
            return
        at = constant_int(index)
        if at is None or index is None or index.shape != ():
            raise _no_rule(node, "it reads the grown axis at positions that are not one constant")
        where = b.const(np.array(at, np.int64), name=f"{out.name}_at")
        if at < 0:
            where = b.op("Add", [view.length, where], name=f"{out.name}_from_end")
        plan.replace(out, b.op("Gather", [view.value, where], dict(node.attrs), name=f"{out.name}_read",
                               dtype=out.dtype, shape=out.shape))
        return
    raise _no_rule(node)


def _matmul(plan: _Plan, b: Builder, node: Node, rank: int) -> None:
    """Rows or columns padded carry their padding; a product over the padded axis zeroes it and is unpadded."""
    views, out = plan.views, node.outputs[0]
    left, right = node.inputs[0], node.inputs[1]
    lv = views.get(left) if left is not None else None
    rv = views.get(right) if right is not None else None
    lr, rr = _rank(left, views), _rank(right, views)
    if lr < 2 or rr < 2:
        raise _no_rule(node, "an operand is a vector")
    rows = lv is not None and lv.axis == lr - 2
    cols = rv is not None and rv.axis == rr - 1
    inner_l = lv is not None and lv.axis == lr - 1
    inner_r = rv is not None and rv.axis == rr - 2
    if inner_l and inner_r and lv is not None and rv is not None:
        product = b.op("MatMul", [plan.zeroed(b, lv, lr), plan.zeroed(b, rv, rr)], name=f"{out.name}_over_valid",
                       dtype=out.dtype, shape=out.shape)
        plan.replace(out, product)
        return
    if inner_l or inner_r or (lv is not None and not rows) or (rv is not None and not cols) or (rows and cols):
        raise _no_rule(node, "it multiplies a grown axis by one that does not grow with it")
    view = lv if rows else rv
    assert view is not None
    operands = [lv.value if lv is not None else left, rv.value if rv is not None else right]
    axis = rank - 2 if rows else rank - 1
    made = b.op("MatMul", operands, name=f"{out.name}_padded", dtype=out.dtype, shape=_dim_unknown(out.shape, axis))
    views[out] = view.like(made, axis, view.zero)


def _attention(plan: _Plan, b: Builder, node: Node) -> None:
    """ONNX's Attention over cached keys and values (``past_key``/``past_value``, grown into ``present_*``): the
    new keys and values are written into the buffers, and the attention reads the buffers with the positions
    past the valid length masked out."""
    views, out = plan.views, node.outputs[0]
    past = [views.get(v) if v is not None else None for v in (node.input(4), node.input(5))]
    if any(v is not None and v in views for v in node.inputs[:3]) or any(view is None for view in past):
        raise _no_rule(node, "it reads the grown value other than as its past keys and values")
    if int(node.attrs.get("is_causal", 0)) or node.input(6) is not None or _rank(node.inputs[0], views) != 4:
        raise _no_rule(node, "it is causal, has padding lengths or takes 3-D inputs")
    if any(o is not None and o.uses() for o in node.outputs[3:]):
        raise _no_rule(node, "its scores are read")
    presents = []
    for view, new, slot in zip(past, node.inputs[1:3], (1, 2)):
        assert view is not None and new is not None
        grown = plan.carried_by(view)
        if grown is None or view.axis != 2:
            raise _no_rule(node, "its past keys or values are not a cache grown along the sequence axis")
        presents.append(plan.write(b, node, grown, view, new))
        if len(node.outputs) > slot:
            views[node.outputs[slot]] = presents[-1]
    keys, values = presents  # of one length: ONNX gives past keys and values one length, new ones another
    valid = b.op("Less", [keys.positions, keys.length], name=f"{out.name}_valid")
    allowed = b.op("Unsqueeze", [valid, b.const(np.array([0], np.int64), name=f"{out.name}_row")],
                   name=f"{out.name}_allowed")
    mask = node.input(3)
    if mask is not None:
        given = views.get(mask)
        if given is None or given.axis != _rank(mask, views) - 1 or given.length is not keys.length:
            raise _no_rule(node, "its mask is not padded as the keys are")
        if given.value.dtype == BOOL:
            allowed = b.op("And", [allowed, given.value], name=f"{out.name}_mask_valid")
        else:
            low = b.const(np.array(-np.inf, given.value.dtype), name=f"{out.name}_low")
            allowed = b.op("Where", [allowed, given.value, low], name=f"{out.name}_mask_valid",
                           dtype=given.value.dtype)
    attended = b.op("Attention", [node.inputs[0], keys.value, values.value, allowed], dict(node.attrs),
                    name=f"{out.name}_over_valid", dtype=out.dtype, shape=out.shape)
    plan.replace(out, attended)


#: What a reduction over the grown axis sees in the padding: the value that changes nothing.
IDENTITY = {"ReduceSum": 0.0, "ReduceL1": 0.0, "ReduceL2": 0.0, "ReduceSumSquare": 0.0, "ReduceMax": -np.inf,
            "ReduceLogSumExp": -np.inf, "ReduceMin": np.inf, "ReduceProd": 1.0, "ArgMax": -np.inf, "ArgMin": np.inf}


def _reduce(plan: _Plan, b: Builder, node: Node, view: Padded, carry: Callable[[int, bool], None]) -> None:
    """A reduction over other axes carries the padding (shifted past the dropped axes); one over the grown
    axis sees the op's identity in the padding (ReduceMean: the sum over the valid length). ArgMax and ArgMin
    see the value no valid element loses to; ties resolve as in the model, the padding being past the end."""
    rank = _rank(node.inputs[0], plan.views)
    keep = int(node.attrs.get("keepdims", 1))
    if node.op in ("ArgMax", "ArgMin"):
        axes = [int(node.attrs.get("axis", 0)) % rank]
    else:
        listed = constant_value(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] is not None else None
        if len(node.inputs) > 1 and node.inputs[1] is not None and listed is None:
            raise _no_rule(node, "its axes are not constants")
        listed = listed if listed is not None else node.attrs.get("axes")
        if listed is None and int(node.attrs.get("noop_with_empty_axes", 0)):
            carry(view.axis, view.zero)
            return
        axes = list(range(rank)) if listed is None else [int(a) % rank for a in np.asarray(listed).reshape(-1)]
    if view.axis not in axes:
        carry(view.axis if keep else view.axis - sum(1 for a in axes if a < view.axis), False)
        return
    out = node.outputs[0]
    source = node.inputs[0]
    assert source is not None
    mean = node.op == "ReduceMean"
    if not mean and node.op not in IDENTITY:
        raise _no_rule(node)
    if mean and axes != [view.axis]:
        raise _no_rule(node, "it averages over the grown axis and others")
    fill = b.const(np.array(0.0 if mean else IDENTITY[node.op], view.value.dtype), name=f"{out.name}_fill")
    filled = b.op("Where", [plan.mask(b, view, rank), view.value, fill], name=f"{out.name}_filled",
                  dtype=view.value.dtype)
    operands = [filled, *node.inputs[1:]]
    if not mean:
        plan.replace(out, b.op(node.op, operands, dict(node.attrs), name=f"{out.name}_over_valid", dtype=out.dtype))
        return
    total = b.op("ReduceSum", operands, dict(node.attrs), name=f"{out.name}_sum", dtype=out.dtype)
    count = b.op("Cast", [view.length], {"to": tensor_type(np.dtype(out.dtype))}, name=f"{out.name}_count", dtype=out.dtype,
                 shape=())
    plan.replace(out, b.op("Div", [total, count], name=f"{out.name}_over_valid", dtype=out.dtype))


def _slice(plan: _Plan, b: Builder, node: Node, view: Padded, carry: Callable[[int, bool], None]) -> None:
    """A Slice of other axes carries the padding; one of the grown axis alone (step 1) reads the valid rows it
    names, counted from the valid end when negative (``x[-1:]`` is the last row written), when their number is
    the same in every run: a TensorRT loop's shapes may not depend on the data."""
    given = [constant_value(node.input(k)) for k in range(1, 5)]
    starts, ends = given[0], given[1]
    if starts is None or ends is None or any(node.input(k) is not None and given[k - 1] is None for k in (3, 4)):
        raise _no_rule(node, "its bounds are not constants")
    rank = _rank(node.inputs[0], plan.views)
    axes = [int(a) % rank for a in np.asarray(given[2] if given[2] is not None else range(np.size(starts))).reshape(-1)]
    steps = [int(v) for v in np.asarray(given[3] if given[3] is not None else np.ones(len(axes))).reshape(-1)]
    if view.axis not in axes:
        carry(view.axis, view.zero)
        return
    if axes != [view.axis] or steps != [1]:
        raise _no_rule(node, "it slices the grown axis with other axes or a step other than 1")
    start, end = int(np.asarray(starts).reshape(-1)[0]), int(np.asarray(ends).reshape(-1)[0])
    end = min(end, TO_THE_END)
    least = view.least
    if start < 0 and (end >= TO_THE_END or end < 0) and least >= -start:
        first, rows = start, (0 if end >= TO_THE_END else end) - start  # from the valid end
    elif 0 <= start <= end <= least:
        first, rows = start, end - start
    else:
        raise _no_rule(node, "the number of rows it reads depends on how many are valid")
    out, name = node.outputs[0], node.outputs[0].name
    at = b.const(np.arange(first, first + rows, dtype=np.int64), name=f"{name}_rows")
    if first < 0:
        at = b.op("Add", [view.length, at], name=f"{name}_rows_from_end")
    plan.replace(out, b.op("Gather", [view.value, at], {"axis": view.axis}, name=f"{name}_valid", dtype=out.dtype))


def _number(value: Value | None) -> float | None:
    """The number a one-element constant holds, of any numeric type."""
    array = constant_value(value)
    return None if array is None or np.size(array) != 1 else float(np.asarray(array).reshape(-1)[0])


def _no_rule(node: Node, why: str = "") -> Refused:
    what = f"loopc has no rule for a {node.op} of a value that grows on every trip"
    return Refused(f"{node.describe()} reads a value that grows on every trip ({what}{': ' + why if why else ''}); "
                   "a TensorRT loop carries values of one shape")


def _result_rank(node: Node, views: dict[Value, Padded]) -> int:
    """The rank of ``node``'s result: declared, else from its operands' (shape refinement may not have run yet)."""
    out = node.outputs[0]
    if out.shape is not None:
        return len(out.shape)
    first = _rank(node.inputs[0], views)
    if node.op == "Shape":
        return 1
    if node.op in ("Unsqueeze", "Squeeze"):
        listed = listed_axes(node)
        if listed is None:
            raise _no_rule(node, "its axes are not constants")
        return first + len(listed) if node.op == "Unsqueeze" else first - len(listed)
    if node.op == "Gather":
        return first + _rank(node.inputs[1], views) - 1
    return max(_rank(v, views) for v in node.inputs if v is not None)


def _rank(value: Value | None, views: dict[Value, Padded]) -> int:
    """``value``'s rank, or its padded stand-in's (whose type the builder inferred)."""
    if value is None:
        raise Refused("an operand is missing")
    shape = value.shape if value.shape is not None or value not in views else views[value].value.shape
    if shape is None:
        raise Refused(f"the rank of {value.name!r} is not known")
    return len(shape)


def _broadcasts_at(value: Value, axis: int, rank: int) -> bool:
    """Whether ``value`` (an operand of a broadcast to ``rank``) is of length 1 or absent at ``axis``."""
    if value.shape is None:
        return False
    at = axis - (rank - len(value.shape))
    return at < 0 or value.shape[at] == 1


def _dim_unknown(shape: Shape | None, axis: int) -> Shape | None:
    return None if shape is None else tuple(None if k == axis else d for k, d in enumerate(shape))


def _along(b: Builder, vector: Value, axis: int, rank: int, name: str) -> Value:
    """A 1-D ``vector`` reshaped to lie along ``axis`` of a value of ``rank`` (length 1 elsewhere)."""
    dims = [1] * rank
    dims[axis] = -1
    return b.op("Reshape", [vector, b.const(np.array(dims, np.int64), name=f"{name}_dims")], name=name)


def _with_entry(b: Builder, shape: Value, axis: int, entry: Value, name: str) -> Value:
    """The shape vector ``shape`` with entry ``axis`` replaced by the int64 scalar ``entry``."""
    index = b.const(np.array([axis], np.int64), name=f"{name}_index")
    update = b.op("Unsqueeze", [entry, b.const(np.array([0], np.int64), name=f"{name}_dim0")], name=f"{name}_entry")
    return b.op("ScatterElements", [shape, index, update], {"axis": 0}, name=name, dtype=I64, shape=shape.shape)

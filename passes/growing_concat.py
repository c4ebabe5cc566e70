"""A carried tensor that only grows by concatenation is a concatenate output.

``acc = cat([acc, piece], axis)`` each trip, with ``acc`` read by nothing else, leaves
``cat([init, piece_0, ..., piece_{n-1}], axis)`` — which TensorRT's own ONNX parser rejects
("inputs to IRecurrenceLayer have different dimensions") because the carried shape changes.
The pieces are a kCONCATENATE output (stacked on a new axis ``axis``), merged back into ``axis``
by a Reshape, and concatenated after ``init`` outside the loop unless ``init`` is statically empty.
Each trip's piece is concatenated to a state with ``init``'s other dims (a Concat keeps them), so in any
run the model allows the piece has them too: its unknown dims off the axis are taken from ``init``.

A chain ``acc = cat([cat([acc, a], axis), b], axis)`` (or one Concat of more inputs) grows by the
piece ``cat([a, b], axis)`` each trip, as long as the inner results are read by nothing else.
"""

from __future__ import annotations

from loopc.ir import Graph, Loop, LoopOutput, Node, Recurrence, Value
from loopc.ir.builder import Builder
from loopc.ir.core import Dim
from loopc.passes._util import merge_stacked_axis, recurrences
from loopc.passes._why import declined
from loopc.passes.manager import PassResult
from loopc.semantics.attributes import attr


class GrowingConcat:
    name = "growing-concat"
    benefit = 80  # see loopc.passes.legalize

    def __call__(self, graph: Graph) -> PassResult:
        rewritten = sum(self._rewrite(g, loop, rec) for g, loop, rec in recurrences(graph))
        return PassResult(graph, rewritten > 0, {"concats": rewritten} if rewritten else {})

    def _rewrite(self, outer: Graph, loop: Loop, rec: Recurrence) -> int:
        found = _chain(rec)
        if found is None:
            return 0  # not grown by Concats: nothing of this pass's
        chain, pieces, axis = found
        finals = [o for o in loop.loop_outputs if o.value is rec.state]
        # the state is read by the concatenation and its own "last" outputs, the grown value only by
        # the recurrence: anything else in the body would need the grown value on every trip
        if len(rec.state.uses()) != 1 + len(finals) or len(rec.next.uses()) != 1:
            return declined(f"carried value {rec.state.name!r} is read inside the loop (grown-buffers pads such "
                            "a value)", at=loop) or 0
        if not finals:
            return declined(f"carried value {rec.state.name!r} is not a result of the loop", at=loop) or 0
        piece = pieces[0]
        if len(pieces) > 1:
            joined: list[Node] = []
            piece = Builder(loop.body, joined).op("Concat", pieces, {"axis": axis}, name=rec.state.name + "_piece",
                                                  dtype=pieces[0].dtype, shape=_joined_shape(pieces, axis))
            loop.body.insert_before(chain[0], joined)
        assert piece.shape is not None
        piece.shape = _off_axis_from(piece.shape, rec.init.shape, axis)
        after: list[Node] = []
        b = Builder(outer, after)
        stacked = b.value(rec.state.name + "_pieces", piece.dtype, piece.shape[:axis] + (None,) + piece.shape[axis:])
        loop.add_output(LoopOutput("concat", piece, stacked, axis))
        for out in finals:
            loop.remove_output(out)
        loop.remove_recurrence(rec)
        for node in chain:  # outermost first: each is unread once the one before is gone
            loop.body.remove(node)
        result = merged = merge_stacked_axis(b, stacked, piece, axis, rec.state.name + "_grown")
        if not _statically_empty(rec.init, axis):
            result = b.op("Concat", [rec.init, merged], {"axis": axis}, name=rec.state.name + "_final",
                          dtype=piece.dtype)
        outer.insert_after(loop, after)
        for out in finals:
            out.result.replace_all_uses_with(result)
        return 1


def _chain(rec: Recurrence) -> tuple[list[Node], list[Value], int] | None:
    """The Concats from ``rec.next`` back to ``rec.state`` through their first inputs (outermost
    first), the pieces they append in order, and their common axis (normalized); None unless the
    next value is such a chain whose intermediate results nothing else reads."""
    chain: list[Node] = []
    pieces: list[Value] = []
    value: Value | None = rec.next
    axis: int | None = None
    while value is not None and value is not rec.state:
        node = value.producer
        if node is None or node.op != "Concat" or len(node.inputs) < 2 or any(v is None for v in node.inputs[1:]):
            return None
        if chain and len(value.uses()) != 1:
            return None  # an intermediate result read elsewhere needs the grown value on every trip
        added = [v for v in node.inputs[1:] if v is not None]
        shapes = [v.shape for v in added if v.shape is not None]
        if len(shapes) != len(added):
            return None  # merging the new axis back needs the pieces' rank
        rank = len(shapes[0])
        here = int(attr(node, "axis"))
        here = here + rank if here < 0 else here
        if any(len(s) != rank for s in shapes) or not 0 <= here < rank or axis not in (None, here):
            return None
        axis = here
        chain.append(node)
        pieces[0:0] = added
        value = node.inputs[0]
    if value is None or axis is None:
        return None
    return chain, pieces, axis


def _joined_shape(pieces: list[Value], axis: int) -> tuple[Dim, ...]:
    """The shape of ``pieces`` concatenated along ``axis`` (their ranks are known and equal)."""
    shapes = [v.shape for v in pieces]
    dims: list[Dim] = []
    for k, column in enumerate(zip(*shapes)):
        if k == axis:
            dims.append(sum(column) if all(isinstance(d, int) for d in column) else None)
        else:
            dims.append(column[0] if all(d == column[0] for d in column) else None)
    return tuple(dims)


def _off_axis_from(shape: tuple[Dim, ...], init: tuple[Dim, ...] | None, axis: int) -> tuple[Dim, ...]:
    """``shape`` with its unknown dims other than ``axis`` taken from ``init``'s static ones."""
    if init is None or len(init) != len(shape):
        return shape
    return tuple(d if k == axis or isinstance(d, int) or not isinstance(i, int) else i
                 for k, (d, i) in enumerate(zip(shape, init)))


def _statically_empty(value: Value, axis: int) -> bool:
    return value.shape is not None and len(value.shape) > axis and value.shape[axis] == 0

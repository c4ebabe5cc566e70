"""A carried tensor that only grows by concatenation is a concatenate output.

``acc = cat([acc, piece], axis)`` each trip, with ``acc`` read by nothing else, leaves
``cat([init, piece_0, ..., piece_{n-1}], axis)`` — which TensorRT's own ONNX parser rejects
("inputs to IRecurrenceLayer have different dimensions") because the carried shape changes.
The pieces are a kCONCATENATE output (stacked on a new axis ``axis``), merged back into ``axis``
by a Reshape, and concatenated after ``init`` outside the loop unless ``init`` is statically empty.
"""

from __future__ import annotations


from loopc.ir import Graph, Loop, LoopOutput, Node, Recurrence, Value
from loopc.passes._util import merge_stacked_axis, read_counts, recurrences, replace_uses
from loopc.passes.manager import PassResult


class GrowingConcat:
    name = "growing-concat"

    def __call__(self, graph: Graph) -> PassResult:
        rewritten = sum(self._rewrite(graph, g, loop, rec) for g, loop, rec in recurrences(graph))
        return PassResult(graph, rewritten > 0, {"concats": rewritten} if rewritten else {})

    def _rewrite(self, root: Graph, outer: Graph, loop: Loop, rec: Recurrence) -> int:
        cat = rec.next.producer
        if cat is None or cat.op != "Concat" or len(cat.inputs) != 2 or cat.inputs[0] is not rec.state:
            return 0
        piece = cat.inputs[1]
        if piece is None or piece.shape is None:
            return 0  # merging the new axis back needs the piece's rank
        finals = [o for o in loop.loop_outputs if o.value is rec.state]
        counts = read_counts(root)
        # the state is read by the concatenation and its own "last" outputs, the grown value only by
        # the recurrence: anything else in the body would need the grown value on every trip
        if counts.get(id(rec.state), 0) != 1 + len(finals) or counts.get(id(rec.next), 0) != 1 or not finals:
            return 0
        rank = len(piece.shape)
        axis = int(cat.attrs.get("axis", 0))
        axis = axis + rank if axis < 0 else axis
        stacked = Value(rec.state.name + "_pieces", piece.dtype, piece.shape[:axis] + (None,) + piece.shape[axis:])
        loop.loop_outputs.append(LoopOutput("concat", piece, stacked, axis))
        loop.recurrences.remove(rec)
        for out in finals:
            loop.loop_outputs.remove(out)
        loop.body.nodes.remove(cat)
        loop.sync()
        new_nodes: list[Node] = []
        result = merged = merge_stacked_axis(new_nodes, stacked, piece, axis, rec.state.name + "_grown")
        if not _statically_empty(rec.init, axis):
            result = Value(rec.state.name + "_final", piece.dtype, None)
            new_nodes.append(Node("Concat", [rec.init, merged], [result], {"axis": axis}))
        at = outer.nodes.index(loop) + 1
        outer.nodes[at:at] = new_nodes
        for out in finals:
            replace_uses(root, out.result, result)
        return 1


def _statically_empty(value: Value, axis: int) -> bool:
    return value.shape is not None and len(value.shape) > axis and value.shape[axis] == 0

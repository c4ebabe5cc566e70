"""A list built up inside a loop and stacked afterwards is a TensorRT concatenate output.

PyTorch exports ``rows.append(h)`` in a loop and ``torch.stack(rows)`` after it as a carried
sequence: init ``SequenceEmpty``, next ``SequenceInsert(state, h)``, and a
``ConcatFromSequence(new_axis=1, axis=a)`` of the loop's final sequence. When the state is
read by nothing else, that final sequence is exactly the trips' ``h`` values in order, so the
stack is ILoopOutputLayer kCONCATENATE on axis ``a``; a ``len(rows)`` (``SequenceLength``) in the body or after
the loop is the count of trips so far, a carried counter. (``new_axis=0`` concatenates along an
existing axis instead: stacked on a new axis, then merged into the next by a Reshape.)
"""

from __future__ import annotations

import numpy as np

from loopc.errors import PassError
from loopc.ir import Graph, If, Loop, LoopOutput, Node, Recurrence, Value
from loopc.ir.builder import Builder
from loopc.passes._util import first_rows, merge_stacked_axis, recurrences, stopping_branch, trip_counter, trips_run
from loopc.passes.manager import PassResult


class SequenceAccumulation:
    name = "sequence-accumulation"

    def __call__(self, graph: Graph) -> PassResult:
        rewritten = sum(self._rewrite(g, loop, rec) for g, loop, rec in recurrences(graph))
        return PassResult(graph, rewritten > 0, {"sequences": rewritten} if rewritten else {})

    def _rewrite(self, outer: Graph, loop: Loop, rec: Recurrence) -> int:
        if isinstance(rec.next.producer, If):
            return self._rewrite_break_first(outer, loop, rec)
        insert, empty = rec.next.producer, rec.init.producer
        if insert is None or insert.op != "SequenceInsert" or len(insert.inputs) != 2 or insert.inputs[0] is not rec.state:
            return 0
        if empty is None or empty.op != "SequenceEmpty":
            return 0
        finals = [o for o in loop.loop_outputs if o.value is rec.state]
        # the state is read by the insert, its own "last" outputs (body.outputs) and its lengths, nothing else
        lengths_before = _lengths(rec.state)
        if len(rec.state.uses()) != 1 + len(finals) + len(lengths_before):
            return 0
        lengths_after = _lengths(insert.outputs[0])  # `while len(rows) < n`: read after the append
        if len(insert.outputs[0].uses()) != 1 + len(lengths_after):
            return 0
        final_reads = [u for f in finals for u in f.result.uses()]
        stacks = [u.user for u in final_reads
                  if isinstance(u.user, Node) and u.user.op == "ConcatFromSequence" and u.slot == 0 and u.user.graph is outer]
        lengths_run = [node for f in finals for node in _lengths(f.result)]
        if not finals or len(stacks) + len(lengths_run) != len(final_reads):
            return 0
        element = insert.inputs[1]
        if element is None:
            return 0
        for stack in stacks:
            if int(stack.attrs.get("new_axis", 0)) not in (0, 1):
                # onnxruntime reads any nonzero value as 1, ONNX's reference only 1: the model must say
                raise PassError(f"{stack.describe()}: new_axis is {stack.attrs['new_axis']}; ConcatFromSequence "
                                "takes 0 (concatenate) or 1 (stack on a new axis)")
        results = [self._stacked(loop, outer, stack, element) for stack in stacks]
        if None in results:
            return 0
        for stack, result in zip(stacks, results):
            assert result is not None
            stack.outputs[0].replace_all_uses_with(result)
            outer.remove(stack)
        if lengths_before or lengths_after or lengths_run:
            # one element a trip from an empty list: its length is the trips counted so far
            counted = trip_counter(outer, loop)
            for nodes, count in ((lengths_before, counted.before), (lengths_after, counted.after),
                                 (lengths_run, counted.run)):
                for node in nodes:
                    node.outputs[0].replace_all_uses_with(count)
                    _remove(node)
        for out in finals:
            loop.remove_output(out)
        loop.remove_recurrence(rec)
        loop.body.remove(insert)
        return 1

    def _rewrite_break_first(self, outer: Graph, loop: Loop, rec: Recurrence) -> int:
        """``if stop: break`` before ``rows.append(x)``: an If whose one branch keeps the list, and ends the loop,
        and whose other appends. Every trip but a last that stopped appends, so the stack is the concatenated
        ``x`` cut to the trips run less that last one (its stop flag carried out of the loop)."""
        branch = rec.next.producer
        empty = rec.init.producer
        if not isinstance(branch, If) or empty is None or empty.op != "SequenceEmpty" or branch.inputs[0] is None:
            return 0
        test = branch.inputs[0]
        k = branch.outputs.index(rec.next)
        kept = [g for g in branch.subgraphs() if g.outputs[k] is rec.state]
        inserts = [g.outputs[k].producer for g in branch.subgraphs() if g.outputs[k] is not rec.state]
        insert = inserts[0] if len(kept) == 1 and len(inserts) == 1 else None
        if insert is None or insert.op != "SequenceInsert" or len(insert.inputs) != 2 or insert.inputs[0] is not rec.state:
            return 0
        element = insert.inputs[1]
        if element is None or element.producer is not None and element.producer.graph is not loop.body:
            return 0  # a concatenated output takes a value of the trip, not of a branch
        if not _ends_the_loop(loop, branch, kept[0]):
            return 0  # a branch that keeps the list and goes on is a `continue`: not one row a trip
        finals = [o for o in loop.loop_outputs if o.value is rec.state]
        if len(rec.state.uses()) != 2 + len(finals) or len(rec.next.uses()) != 1:
            return 0  # read by the insert, the kept branch and its "last" outputs, nothing else
        final_reads = [u for f in finals for u in f.result.uses()]
        stacks = [u.user for u in final_reads if isinstance(u.user, Node) and u.user.op == "ConcatFromSequence"
                  and u.slot == 0 and u.user.graph is outer and int(u.user.attrs.get("new_axis", 0)) == 1]
        if not finals or len(stacks) != len(final_reads):
            return 0
        nodes: list[Node] = []
        b = Builder(outer, nodes)
        stopped = b.into(loop.body).op("Not", [test]) if kept[0] is branch.else_branch else test
        flag = b.value(f"{rec.state.name}_stopped", np.dtype(bool), ())
        stopped_last = b.value(f"{rec.state.name}_stopped_last", np.dtype(bool), ())
        before: list[Node] = []
        loop.add_recurrence(Recurrence(flag, b.into(before).const(np.array(False)), stopped))
        outer.insert_before(loop, before)
        loop.add_output(LoopOutput("last", flag, stopped_last))
        rows = b.op("Sub", [trips_run(outer, loop), b.op("Cast", [stopped_last], {"to": 7})])
        for stack in stacks:
            stacked = self._stacked(loop, outer, stack, element)
            assert stacked is not None  # new_axis=1 needs no rank
            axis = int(stack.attrs.get("axis", 0))
            cut = first_rows(b, stacked, rows, axis if axis >= 0 else axis + len(stacked.shape or ()))
            stack.outputs[0].replace_all_uses_with(cut)
            outer.remove(stack)
        outer.insert_after(loop, nodes)
        for out in finals:
            loop.remove_output(out)
        loop.remove_recurrence(rec)
        rest = [j for j in range(len(branch.outputs)) if j != k]  # the list leaves the If, and its insert
        branch.set_outputs([branch.outputs[j] for j in rest])
        for g in branch.subgraphs():
            g.set_outputs([g.outputs[j] for j in rest])
        _remove(insert)
        return 1

    def _stacked(self, loop: Loop, outer: Graph, stack: Node, element: Value) -> Value | None:
        rank = len(element.shape) if element.shape is not None else None
        axis = int(stack.attrs.get("axis", 0))
        nodes: list[Node] = []
        b = Builder(outer, nodes)
        if int(stack.attrs.get("new_axis", 0)) == 1:
            if axis < 0:
                if rank is None:
                    return None
                axis += rank + 1
            shape = None if element.shape is None else element.shape[:axis] + (None,) + element.shape[axis:]
            result = b.value(stack.outputs[0].name + "_stacked", element.dtype, shape)
            loop.add_output(LoopOutput("concat", element, result, axis))
            return result
        # new_axis=0: concatenate along an existing axis = stack on it, then merge it with the next
        if not element.shape:  # an unknown rank, or a scalar
            return None
        axis = axis + len(element.shape) if axis < 0 else axis
        stacked = b.value(stack.outputs[0].name + "_stacked", element.dtype,
                          element.shape[:axis] + (None,) + element.shape[axis:])
        loop.add_output(LoopOutput("concat", element, stacked, axis))
        merged = merge_stacked_axis(b, stacked, element, axis, stack.outputs[0].name)
        outer.insert_before(stack, nodes)
        return merged


def _lengths(sequence: Value) -> list[Node]:
    """The ``SequenceLength`` nodes reading ``sequence`` (in its graph or one nested in it, a branch's test)."""
    return [u.user for u in sequence.uses() if isinstance(u.user, Node) and u.user.op == "SequenceLength"]


def _ends_the_loop(loop: Loop, branch: If, taken: Graph) -> bool:
    """Whether a trip that takes ``taken`` (a branch of ``branch``) is the loop's last: the loop's condition is
    carried, and its next value is an output of ``branch`` that ``taken`` yields as a constant false (alone, or
    as an operand of an And)."""
    carried = [r for r in loop.recurrences if r.state is loop.condition]
    if len(carried) != 1:
        return False
    nexts: list[Value | None] = [carried[0].next]
    producer = carried[0].next.producer
    if producer is not None and producer.op == "And":
        nexts += list(producer.inputs)
    return any(value is not None and stopping_branch(value) == (branch, taken) for value in nexts)


def _remove(node: Node) -> None:
    """Erase ``node`` from the graph it is in (its results unread by then)."""
    assert node.graph is not None
    node.graph.remove(node)

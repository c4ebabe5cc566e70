"""A list built up inside a loop and stacked afterwards is a TensorRT concatenate output.

PyTorch exports ``rows.append(h)`` in a loop and ``torch.stack(rows)`` after it as a carried
sequence: init ``SequenceEmpty``, next ``SequenceInsert(state, h)``, and a
``ConcatFromSequence(new_axis=1, axis=a)`` of the loop's final sequence. When the state is
read by nothing else, that final sequence is exactly the trips' ``h`` values in order, so the
stack is ILoopOutputLayer kCONCATENATE on axis ``a``; a ``len(rows)`` (``SequenceLength``) in the body or after
the loop is the count of trips so far, a carried counter. (``new_axis=0`` concatenates along an
existing axis instead: stacked on a new axis, then merged into the next by a Reshape.)

A decoder also reads its list back (``mel_outputs[-1]``, or at ``len - 1``, feeds the next step). Read after the
append, the last element is the element just appended; read before it, the one the previous trip appended, or on
the first trip the list's initial last (a go frame: the list starts as ``SequenceConstruct``, whose elements go
ahead of the trips' in the stack): a carried value. A list that starts empty and is read before its first append
fails on the first trip, in onnxruntime too, and is left alone.
"""

from __future__ import annotations

import numpy as np

from loopc.errors import PassError
from loopc.ir import Graph, If, Loop, LoopOutput, Node, Recurrence, Value, constant_int
from loopc.ir.builder import Builder
from loopc.passes._sequence_lengths import common_shape
from loopc.passes._util import first_rows, merge_stacked_axis, recurrences, stopping_branch, trip_counter, trips_run
from loopc.passes._why import declined, no
from loopc.passes.manager import PassResult
from loopc.passes.static_sequences import as_parts
from loopc.semantics.attributes import attr


class SequenceAccumulation:
    name = "sequence-accumulation"

    def __call__(self, graph: Graph) -> PassResult:
        rewritten = sum(self._rewrite(g, loop, rec) for g, loop, rec in recurrences(graph))
        return PassResult(graph, rewritten > 0, {"sequences": rewritten} if rewritten else {})

    def _rewrite(self, outer: Graph, loop: Loop, rec: Recurrence) -> bool:
        if isinstance(rec.next.producer, If):
            return self._rewrite_break_first(outer, loop, rec)
        insert = rec.next.producer
        if insert is None or insert.op != "SequenceInsert" or len(insert.inputs) != 2 or insert.inputs[0] is not rec.state:
            return False  # not a list appended to in each trip
        initial = _initial(rec.init)
        if initial is None:
            return no(f"the list {rec.state.name!r} does not start empty or as a list of tensors", at=loop)
        finals = [o for o in loop.loop_outputs if o.value is rec.state]
        # the state is read by the insert, its own "last" outputs (body.outputs), its lengths and last elements
        lengths_before, last_before = _lengths(rec.state), _last_reads(rec.state)
        if len(rec.state.uses()) != 1 + len(finals) + len(lengths_before) + len(last_before):
            return no(f"the list {rec.state.name!r} is read in the loop other than by its append, len() or [-1]",
                      at=loop)
        if last_before and not initial:
            # the first trip reads the last element of an empty list: onnxruntime fails there too
            return no(f"the list {rec.state.name!r} starts empty and is read at [-1] before its first append",
                      at=last_before[0])
        # `while len(rows) < n`, `prev = rows[-1]`: read after the append
        lengths_after, last_after = _lengths(insert.outputs[0]), _last_reads(insert.outputs[0])
        if len(insert.outputs[0].uses()) != 1 + len(lengths_after) + len(last_after):
            return no(f"the list {rec.state.name!r} is read after its append other than by len() or [-1]", at=insert)
        final_reads = [u for f in finals for u in f.result.uses()]
        stacks = [u.user for u in final_reads
                  if isinstance(u.user, Node) and u.user.op == "ConcatFromSequence" and u.slot == 0 and u.user.graph is outer]
        lengths_run = [node for f in finals for node in _lengths(f.result)]
        if not finals or len(stacks) + len(lengths_run) != len(final_reads):
            return no(f"the list {rec.state.name!r} is read after the loop other than by a stack or len()", at=loop)
        element = insert.inputs[1]
        if element is None:
            return no(f"the insert into {rec.state.name!r} names no element to append", at=insert)
        for stack in stacks:
            if int(attr(stack, "new_axis")) not in (0, 1):
                # onnxruntime reads any nonzero value as 1, ONNX's reference only 1: the model must say
                raise PassError(f"{stack.describe()}: new_axis is {stack.attrs['new_axis']}; ConcatFromSequence "
                                "takes 0 (concatenate) or 1 (stack on a new axis)")
        results = [self._stacked(loop, outer, stack, element) for stack in stacks]
        if None in results:
            return False  # declined in _stacked
        for stack, result in zip(stacks, results):
            assert result is not None
            stack.outputs[0].replace_all_uses_with(_after_initial(outer, stack, initial, result))
            outer.remove(stack)
        _read_last(loop, rec, element, last_before, last_after)
        if lengths_before or lengths_after or lengths_run:
            # one element a trip: the list's length is its initial length and the trips counted so far
            counted = trip_counter(outer, loop)
            for nodes, count in ((lengths_before, counted.before), (lengths_after, counted.after),
                                 (lengths_run, counted.run)):
                for node in nodes:
                    node.outputs[0].replace_all_uses_with(_plus(node, count, len(initial)))
                    _remove(node)
        for out in finals:
            loop.remove_output(out)
        loop.remove_recurrence(rec)
        loop.body.remove(insert)
        return True

    def _rewrite_break_first(self, outer: Graph, loop: Loop, rec: Recurrence) -> bool:
        """``if stop: break`` before ``rows.append(x)``: an If whose one branch keeps the list, and ends the loop,
        and whose other appends. Every trip but a last that stopped appends, so the stack is the concatenated
        ``x`` cut to the trips run less that last one (its stop flag carried out of the loop)."""
        branch = rec.next.producer
        empty = rec.init.producer
        if not isinstance(branch, If) or empty is None or empty.op != "SequenceEmpty" or branch.inputs[0] is None:
            return False  # not a list that starts empty and is kept or appended to by an If
        test = branch.inputs[0]
        k = branch.outputs.index(rec.next)
        kept = [g for g in branch.subgraphs() if g.outputs[k] is rec.state]
        inserts = [g.outputs[k].producer for g in branch.subgraphs() if g.outputs[k] is not rec.state]
        insert = inserts[0] if len(kept) == 1 and len(inserts) == 1 else None
        if insert is None or insert.op != "SequenceInsert" or len(insert.inputs) != 2 or insert.inputs[0] is not rec.state:
            return False  # not one branch keeping the list and the other appending to it
        element = insert.inputs[1]
        if element is None or element.producer is not None and element.producer.graph is not loop.body:
            # a concatenated output takes a value of the trip, not of a branch
            return no(f"the element appended to {rec.state.name!r} is computed inside the If", at=branch)
        if not _ends_the_loop(loop, branch, kept[0]):
            # a branch that keeps the list and goes on is a `continue`: not one row a trip
            return no(f"the branch that skips the append to {rec.state.name!r} does not end the loop", at=branch)
        finals = [o for o in loop.loop_outputs if o.value is rec.state]
        if len(rec.state.uses()) != 2 + len(finals) or len(rec.next.uses()) != 1:
            # read by the insert, the kept branch and its "last" outputs, nothing else
            return no(f"the list {rec.state.name!r} is read in the loop other than by its append", at=loop)
        final_reads = [u for f in finals for u in f.result.uses()]
        stacks = [u.user for u in final_reads if isinstance(u.user, Node) and u.user.op == "ConcatFromSequence"
                  and u.slot == 0 and u.user.graph is outer and int(attr(u.user, "new_axis")) == 1]
        if not finals or len(stacks) != len(final_reads):
            return no(f"the list {rec.state.name!r} is read after the loop other than by a stack (new_axis=1)", at=loop)
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
            axis = int(attr(stack, "axis"))
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
        return True

    def _stacked(self, loop: Loop, outer: Graph, stack: Node, element: Value) -> Value | None:
        rank = len(element.shape) if element.shape is not None else None
        axis = int(attr(stack, "axis"))
        nodes: list[Node] = []
        b = Builder(outer, nodes)
        if int(attr(stack, "new_axis")) == 1:
            if axis < 0:
                if rank is None:
                    return declined(f"the rank of the appended {element.name!r} is unknown", at=stack)
                axis += rank + 1
            shape = None if element.shape is None else element.shape[:axis] + (None,) + element.shape[axis:]
            result = b.value(stack.outputs[0].name + "_stacked", element.dtype, shape)
            loop.add_output(LoopOutput("concat", element, result, axis))
            return result
        # new_axis=0: concatenate along an existing axis = stack on it, then merge it with the next
        if not element.shape:  # an unknown rank, or a scalar
            return declined(f"the appended {element.name!r} is a scalar or of unknown rank", at=stack)
        axis = axis + len(element.shape) if axis < 0 else axis
        stacked = b.value(stack.outputs[0].name + "_stacked", element.dtype,
                          element.shape[:axis] + (None,) + element.shape[axis:])
        loop.add_output(LoopOutput("concat", element, stacked, axis))
        merged = merge_stacked_axis(b, stacked, element, axis, stack.outputs[0].name)
        outer.insert_before(stack, nodes)
        return merged


def _initial(init: Value) -> list[Value] | None:
    """The tensors a list holds when the loop starts: none (``SequenceEmpty``) or those of a
    ``SequenceConstruct`` (a go frame); None for a list made any other way."""
    made = init.producer
    if made is None or made.op not in ("SequenceEmpty", "SequenceConstruct") or None in made.inputs:
        return None
    return [v for v in made.inputs if v is not None]


def _last_reads(sequence: Value) -> list[Node]:
    """The ``SequenceAt`` nodes reading ``sequence``'s last element: at -1, or at ``len(sequence) - 1``."""
    return [u.user for u in sequence.uses() if isinstance(u.user, Node) and u.user.op == "SequenceAt"
            and u.slot == 0 and _is_last(u.user.input(1), sequence)]


def _is_last(at: Value | None, sequence: Value) -> bool:
    if constant_int(at) == -1:
        return True
    minus = at.producer if at is not None else None
    length = minus.input(0) if minus is not None and minus.op == "Sub" and constant_int(minus.input(1)) == 1 else None
    made = length.producer if length is not None else None
    return made is not None and made.op == "SequenceLength" and made.input(0) is sequence


def _read_last(loop: Loop, rec: Recurrence, element: Value, before: list[Node], after: list[Node]) -> None:
    """The last element read after the append is the element appended; read before it, it is the element the
    previous trip appended, or on the first the list's initial last (a carried value of one shape)."""
    for read in after:
        read.outputs[0].replace_all_uses_with(element)
        _remove(read)
    if not before:
        return
    first = rec.init.producer
    assert first is not None and first.inputs  # a list that starts empty was declined
    start = first.inputs[-1]
    assert start is not None
    last = Value(f"{rec.state.name}_last", element.dtype, common_shape(start.shape, element.shape))
    loop.add_recurrence(Recurrence(last, start, element))
    for read in before:
        read.outputs[0].replace_all_uses_with(last)
        _remove(read)


def _after_initial(outer: Graph, stack: Node, initial: list[Value], stacked: Value) -> Value:
    """``stacked`` (the trips' elements stacked as ``stack`` stacks them) after the list's initial elements."""
    if not initial:
        return stacked
    nodes: list[Node] = []
    b = Builder(outer, nodes)
    joined = b.op("Concat", [*as_parts(b, stack, initial), stacked], {"axis": int(stack.attrs["axis"])},
                  name=f"{stack.outputs[0].name}_joined")
    outer.insert_before(stack, nodes)
    return joined


def _plus(node: Node, count: Value, n: int) -> Value:
    """``count + n``, computed where ``node`` is (``count`` itself when ``n`` is 0)."""
    if n == 0:
        return count
    assert node.graph is not None
    made: list[Node] = []
    b = Builder(node.graph, made)
    total = b.op("Add", [count, b.const(np.array(n, np.int64), name=f"{node.outputs[0].name}_initial")],
                 name=f"{node.outputs[0].name}_counted")
    node.graph.insert_before(node, made)
    return total


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

"""A list built up inside a loop and stacked afterwards is a TensorRT concatenate output.

PyTorch exports ``rows.append(h)`` in a loop and ``torch.stack(rows)`` after it as a carried
sequence: init ``SequenceEmpty``, next ``SequenceInsert(state, h)``, and a
``ConcatFromSequence(new_axis=1, axis=a)`` of the loop's final sequence. When the state is
read by nothing else, that final sequence is exactly the trips' ``h`` values in order, so the
stack is ILoopOutputLayer kCONCATENATE on axis ``a``. (``new_axis=0`` concatenates along an
existing axis instead: stacked on a new axis, then merged into the next by a Reshape.)
"""

from __future__ import annotations

from loopc.errors import PassError
from loopc.ir import Graph, Loop, LoopOutput, Node, Recurrence, Value
from loopc.ir.builder import Builder
from loopc.passes._util import merge_stacked_axis, recurrences
from loopc.passes.manager import PassResult


class SequenceAccumulation:
    name = "sequence-accumulation"

    def __call__(self, graph: Graph) -> PassResult:
        rewritten = sum(self._rewrite(g, loop, rec) for g, loop, rec in recurrences(graph))
        return PassResult(graph, rewritten > 0, {"sequences": rewritten} if rewritten else {})

    def _rewrite(self, outer: Graph, loop: Loop, rec: Recurrence) -> int:
        insert, empty = rec.next.producer, rec.init.producer
        if insert is None or insert.op != "SequenceInsert" or len(insert.inputs) != 2 or insert.inputs[0] is not rec.state:
            return 0
        if empty is None or empty.op != "SequenceEmpty":
            return 0
        finals = [o for o in loop.loop_outputs if o.value is rec.state]
        # the state is read by the insert and by its own "last" outputs (body.outputs), nothing else
        if len(rec.state.uses()) != 1 + len(finals):
            return 0
        stacks = [u.user for f in finals for u in f.result.uses()
                  if isinstance(u.user, Node) and u.user.op == "ConcatFromSequence" and u.slot == 0 and u.user.graph is outer]
        if not finals or len(stacks) != sum(len(f.result.uses()) for f in finals):
            return 0
        element = insert.inputs[1]
        if element is None:
            return 0
        for stack in stacks:
            if int(stack.attrs.get("new_axis", 0)) not in (0, 1):
                # onnxruntime reads any nonzero value as 1, ONNX's reference only 1: the model must say
                raise PassError(f"{stack.describe()}: new_axis is {stack.attrs['new_axis']}; ConcatFromSequence "
                                "takes 0 (concatenate) or 1 (stack on a new axis)")
        for stack in stacks:
            result = self._stacked(loop, outer, stack, element)
            if result is None:
                return 0
            stack.outputs[0].replace_all_uses_with(result)
            outer.remove(stack)
        for out in finals:
            loop.remove_output(out)
        loop.remove_recurrence(rec)
        loop.body.remove(insert)
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

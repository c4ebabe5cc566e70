"""A list of tensors whose length is known when compiling (ONNX sequence ops) becomes its tensors.

TorchScript exports a Python list of per-layer caches (``ks[i] = torch.cat([ks[i], k], 2)``) as ONNX
sequences: ``SequenceConstruct``, then ``SequenceAt``, ``SequenceErase`` and ``SequenceInsert`` at
constant positions, carried by the decoding loop and through its ``If``. TensorRT has no sequences, but
a sequence of static length is a list of tensor values known at compile time::

    SequenceConstruct(a, b)     -> [a, b]                SequenceAt(s, p)          -> s[p]
    SequenceEmpty()             -> []                    SequenceLength(s)         -> len(s)
    SplitToSequence(x, split)   -> Split(x) pieces       ConcatFromSequence(s)     -> Concat(s)
    SequenceInsert(s, t, p)     -> s[:p] + [t] + s[p:]   a loop state s            -> one state per element
    SequenceErase(s, p)         -> s[:p] + s[p+1:]       a conditional's result s  -> one result per element

Positions count from the end when negative, and an absent one is the end, as ONNX defines. A list whose
length or positions are not static is left as it is (which values form one list, and when it is static:
:mod:`loopc.passes._sequence_lengths`), but for two steps that make it static on the next run: its
``SequenceLength`` reads become constants when its length is known, and a loop over its elements
(``for i in range(len(caches))``: a constant count, positions computed from the counter) is unrolled, so
that constant folding turns the positions into constants.
"""

from __future__ import annotations

import numpy as np

from loopc.ir import Graph, If, Loop, LoopOutput, Node, Recurrence, Value
from loopc.ir.builder import Builder
from loopc.passes._sequence_lengths import (MAKERS, READERS, SequenceLengths, common_shape, position, sequence_lengths,
                                            split_sizes)
from loopc.passes._util import computed_from
from loopc.passes._why import declined
from loopc.passes.unroll import cannot_unroll, unroll
from loopc.passes.manager import PassResult
from loopc.semantics.attributes import attr

#: Ops that read or edit a sequence at a position.
POSITIONED = ("SequenceAt", "SequenceInsert", "SequenceErase")


class StaticSequences:
    name = "static-sequences"

    def __call__(self, graph: Graph) -> PassResult:
        if next(graph.find(*MAKERS), None) is None:
            return PassResult(graph, False)  # every sequence is made by one of these: the model has none
        lengths = sequence_lengths(graph)
        for member, why in lengths.left_alone().items():
            declined(f"the list stays a sequence: {why}", at=_place(member))
        rewrite = _Rewrite(lengths)
        rewrite.graph(graph)
        for g, node in reversed(rewrite.dead):
            g.remove(node)
        unrolled = 0
        for g, node in graph.structured():
            if isinstance(node, Loop) and node.graph is g and _indexes_by_trip(node, lengths):
                blocked = cannot_unroll(node)
                if blocked is not None:
                    declined(f"it reads a list at positions its counter gives, but is unrolled only when {blocked}",
                             at=node)
                    continue
                unroll(g, node)
                unrolled += 1
        stats = {"sequences": len(rewrite.parts), "reads": rewrite.reads, "carried": rewrite.carried,
                 "unrolled": unrolled}
        stats = {k: v for k, v in stats.items() if v}
        return PassResult(graph, bool(stats), stats)


class _Rewrite:
    """One walk over the model, outer nodes before the graphs nested in them, keeping each static
    sequence value's elements; the sequence nodes are removed once nothing reads them."""

    def __init__(self, lengths: SequenceLengths) -> None:
        self.lengths = lengths
        #: The tensors each static sequence value holds, in order.
        self.parts: dict[Value, list[Value]] = {}
        self.dead: list[tuple[Graph, Node]] = []
        self.reads = 0
        self.carried = 0

    def graph(self, graph: Graph) -> None:
        for node in list(graph.nodes):
            if isinstance(node, Loop):
                self.loop(node)
            elif isinstance(node, If):
                self.conditional(node)
            elif node.op in READERS:
                self.reader(graph, node)
            elif node.outputs and self.lengths.static(node.outputs[0]):
                self.parts[node.outputs[0]] = self.elements(graph, node)
                self.dead.append((graph, node))

    def elements(self, graph: Graph, node: Node) -> list[Value]:
        """The tensors the sequence ``node`` makes holds."""
        if node.op == "SplitToSequence":
            return self.split(graph, node)
        if node.op in MAKERS:
            return [v for v in node.inputs if v is not None]
        source = node.input(0)
        assert source is not None
        held = list(self.parts[source])
        if node.op == "SequenceInsert":
            at = position(node, 2, len(held), inserting=True)
            tensor = node.input(1)
            assert at is not None and tensor is not None
            held.insert(at, tensor)
        elif node.op == "SequenceErase":
            at = position(node, 1, len(held))
            assert at is not None
            del held[at]
        return held

    def split(self, graph: Graph, node: Node) -> list[Value]:
        """SplitToSequence as a Split (each piece squeezed when no split is given and keepdims is 0)."""
        sizes, x, out = split_sizes(node), node.input(0), node.outputs[0]
        assert sizes is not None and x is not None
        if not sizes:
            return []
        axis = int(attr(node, "axis"))
        made: list[Node] = []
        b = Builder(graph, made)
        pieces = [Value(f"{out.name}_{k}", x.dtype) for k in range(len(sizes))]
        b.node("Split", [x, b.const(np.array(sizes, np.int64), name=f"{out.name}_sizes")], pieces, {"axis": axis})
        if node.input(1) is None and int(attr(node, "keepdims")) == 0:
            axes = b.const(np.array([axis], np.int64), name=f"{out.name}_axis")
            pieces = [b.op("Squeeze", [p, axes], name=f"{p.name}_squeezed", dtype=x.dtype) for p in pieces]
        graph.insert_before(node, made)
        return pieces

    def reader(self, graph: Graph, node: Node) -> None:
        """A read of a static sequence as the tensor it gives; of another sequence, only a known length."""
        source, out = node.input(0), node.outputs[0]
        assert source is not None
        made: list[Node] = []
        b = Builder(graph, made)
        if self.lengths.static(source):
            held = self.parts[source]
            if node.op == "SequenceAt":
                at = position(node, 1, len(held))
                assert at is not None
                result = held[at]
            elif node.op == "SequenceLength":
                result = b.const(np.array(len(held), np.int64), name=f"{out.name}_static")
            else:
                result = self.concat(b, node, held)
        else:
            known = self.lengths.trusted_length(source)
            if node.op != "SequenceLength" or known is None:
                return
            result = b.const(np.array(known, np.int64), name=f"{out.name}_static")
        graph.insert_before(node, made)
        out.replace_all_uses_with(result)
        graph.remove(node)
        self.reads += 1

    def concat(self, b: Builder, node: Node, held: list[Value]) -> Value:
        """ConcatFromSequence: along an existing axis, or (new_axis=1) each element unsqueezed there first.
        A negative axis counts from the end of the result for both Unsqueeze and Concat, as it does here."""
        out = node.outputs[0]
        return b.op("Concat", as_parts(b, node, held), {"axis": int(node.attrs["axis"])}, name=f"{out.name}_joined",
                    dtype=out.dtype, shape=out.shape)

    def loop(self, loop: Loop) -> None:
        """A carried static sequence becomes one recurrence per element; its final value, one output each."""
        carried = [rec for rec in loop.recurrences if self.lengths.static(rec.state)]
        for rec in carried:
            self.parts[rec.state] = [Value(f"{rec.state.name}_{k}", v.dtype, v.shape)
                                     for k, v in enumerate(self.parts[rec.init])]
        self.graph(loop.body)
        for rec in carried:
            for state, init, nxt in zip(self.parts[rec.state], self.parts[rec.init], self.parts[rec.next]):
                state.retype(init.dtype if init.dtype is not None else nxt.dtype)
                state.shape = common_shape(init.shape, nxt.shape)
                loop.add_recurrence(Recurrence(state, init, nxt))
        finals = [out for out in loop.loop_outputs if out.value in self.parts]
        for out in finals:
            states = self.parts[out.value]
            results = [Value(f"{out.result.name}_{k}", s.dtype, s.shape) for k, s in enumerate(states)]
            for state, result in zip(states, results):
                loop.add_output(LoopOutput("last", state, result))
            self.parts[out.result] = results
        if carried or finals:
            loop.remove_roles([*carried, *finals])
            self.carried += len(carried)

    def conditional(self, node: If) -> None:
        """A static sequence result becomes one result per element, each branch yielding its elements."""
        branches = node.subgraphs()
        for branch in branches:
            self.graph(branch)
        if not any(self.lengths.static(v) for v in node.outputs):
            return
        outputs: list[Value] = []
        yields: list[list[Value]] = [[] for _ in branches]
        for k, out in enumerate(node.outputs):
            if not self.lengths.static(out):
                outputs.append(out)
                for yielded, branch in zip(yields, branches):
                    yielded.append(branch.outputs[k])
                continue
            held = [self.parts[branch.outputs[k]] for branch in branches]
            results = [Value(f"{out.name}_{j}", first.dtype, common_shape(*(h[j].shape for h in held)))
                       for j, first in enumerate(held[0])]
            self.parts[out] = results
            outputs.extend(results)
            for yielded, elements in zip(yields, held):
                yielded.extend(elements)
        node.set_outputs(outputs)
        for branch, yielded in zip(branches, yields):
            branch.set_outputs(yielded)


def _indexes_by_trip(loop: Loop, lengths: SequenceLengths) -> bool:
    """Whether ``loop``'s body reads or edits a list of known length at a position computed from its counter:
    ``for i in range(len(caches))`` over the layers, whose trips, written out, read constant positions."""
    if loop.counter is None:
        return False
    for node in loop.body.nodes:
        source, at = node.input(0), node.input(2 if node.op == "SequenceInsert" else 1)
        if node.op in POSITIONED and source is not None and lengths.trusted_length(source) is not None and \
                at is not None and loop.counter in computed_from(at):
            return True
    return False


def _place(value: Value) -> Node | Graph | None:
    """Where ``value`` is made, or first read (a graph's input)."""
    if value.producer is not None:
        return value.producer
    uses = value.uses()
    return uses[0].user if uses else None


def as_parts(b: Builder, node: Node, held: list[Value]) -> list[Value]:
    """The operands of the Concat that ConcatFromSequence ``node`` of ``held`` is: each element unsqueezed at the
    axis when it stacks them (new_axis=1), as they are when it concatenates."""
    if int(attr(node, "new_axis")) != 1:
        return held
    out = node.outputs[0]
    axes = b.const(np.array([int(node.attrs["axis"])], np.int64), name=f"{out.name}_axis")
    return [b.op("Unsqueeze", [v, axes], name=f"{out.name}_{k}", dtype=v.dtype) for k, v in enumerate(held)]

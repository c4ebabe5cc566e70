"""Which ONNX sequence values have a length known before the model runs, and which can become tensors.

Sequence values are grouped into *lists*: the values one list becomes as it is edited (an insert's result
and its operand, a loop's state with its init and next value, a conditional's result with its branches'),
since removing one of them means removing all. A list is *static* when every value in it has a known
length, every position it is read or edited at is a constant in range, and every reader has a tensor
form (:data:`READERS`); any other list is left as it is. A loop's state is taken to keep its init's length;
when the next value's length differs the list is not static, and its lengths are not trusted either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from loopc.ir import Graph, If, Loop, Node, Value, constant_int, constant_value
from loopc.ir.core import Shape
from loopc.semantics.attributes import attr

#: Ops making a sequence from the sequence at operand 0 (and a tensor).
EDITS = ("SequenceInsert", "SequenceErase", "Identity")
#: Ops making a sequence from tensors alone.
MAKERS = ("SequenceConstruct", "SequenceEmpty", "SplitToSequence")
#: Ops reading a sequence (operand 0) into a tensor: these have a tensor form for a static list.
READERS = ("SequenceAt", "SequenceLength", "ConcatFromSequence")
#: Every ONNX sequence op loopc reads (sequence-accumulation's are among them): what ``loopc ops`` lists.
SEQUENCE_OPS = tuple(sorted({*MAKERS, *EDITS, *READERS} - {"Identity"}))


@dataclass
class SequenceLengths:
    """The sequence values of a model, their lengths (None: unknown) and the lists they belong to."""

    length: dict[Value, int | None] = field(default_factory=dict)
    _parent: dict[Value, Value] = field(default_factory=dict)
    #: Lists (by a member) with a value or read that has no tensor form, with the first such found.
    _refused: dict[Value, str] = field(default_factory=dict)
    #: Lists (by a member) whose lengths rest on a loop state keeping a length it does not keep.
    _untrusted: dict[Value, str] = field(default_factory=dict)

    def static(self, value: Value) -> bool:
        """Whether ``value``'s list can become tensors."""
        root = self._root(value) if value in self.length else None
        return root is not None and root not in self._refused and root not in self._untrusted

    def left_alone(self) -> dict[Value, str]:
        """Why each list that stays a sequence does (by a member of the list)."""
        return {**self._refused, **self._untrusted}

    def trusted_length(self, value: Value) -> int | None:
        """``value``'s length when it is known, whether or not its list is static."""
        if value not in self.length or self._root(value) in self._untrusted:
            return None
        return self.length[value]

    def _root(self, value: Value) -> Value:
        while (up := self._parent.get(value, value)) is not value:
            self._parent[value] = self._parent.get(up, up)
            value = up
        return value

    def _join(self, a: Value, b: Value) -> None:
        ra, rb = self._root(a), self._root(b)
        if ra is not rb:
            self._parent[rb] = ra
            for marks in (self._refused, self._untrusted):
                if rb in marks:
                    marks.setdefault(ra, marks.pop(rb))

    def _refuse(self, value: Value, why: str) -> None:
        self._refused.setdefault(self._root(value), f"{value.name!r} {why}")

    def _distrust(self, value: Value, why: str) -> None:
        self._untrusted.setdefault(self._root(value), f"{value.name!r} {why}")


def sequence_lengths(graph: Graph) -> SequenceLengths:
    """The sequence values of ``graph`` (at any depth) with their lengths and lists."""
    found = SequenceLengths()
    _visit(found, graph)
    for value in list(found.length):
        if found.length[value] is None:
            found._refuse(value, "has a length known only at run time")
        for user, slot in value.uses():
            if not _understood(found, value, user, slot):
                what = user.describe() if isinstance(user, Node) else f"graph {user.name!r} as an output"
                found._refuse(value, f"is read by {what}, which takes no list of tensors")
    return found


def position(node: Node, slot: int, length: int | None, inserting: bool = False) -> int | None:
    """The position operand ``slot`` of ``node`` names in a sequence of ``length``, counted from the start;
    None when it is not a constant or out of range. An absent position is the end (the last element)."""
    if length is None:
        return None
    if node.input(slot) is None:
        return length if inserting else (length - 1 if length > 0 else None)
    at = constant_int(node.input(slot))
    top = length if inserting else length - 1
    if at is None or not -length <= at <= top:
        return None
    return at + length if at < 0 else at


def split_sizes(node: Node) -> list[int] | None:
    """The sizes a SplitToSequence cuts its input into along its axis, when they are known."""
    x, split = node.input(0), node.input(1)
    axis = int(attr(node, "axis"))
    shape = x.shape if x is not None else None
    dim = shape[axis] if shape is not None and -len(shape) <= axis < len(shape) else None
    if split is None:
        return [1] * dim if isinstance(dim, int) else None
    sizes = constant_value(split)
    if sizes is None:
        return None
    sizes = np.asarray(sizes)
    if sizes.ndim == 1:
        return [int(s) for s in sizes]
    chunk = int(sizes)
    if not isinstance(dim, int) or chunk <= 0 or dim == 0:
        return None
    count = math.ceil(dim / chunk)
    return [chunk] * (count - 1) + [dim - chunk * (count - 1)]


def common_shape(*shapes: Shape | None) -> Shape | None:
    """A shape every one of ``shapes`` has: the dims they agree on, None where they differ."""
    if any(s is None for s in shapes) or len({len(s) for s in shapes if s is not None}) != 1:
        return None
    known = [s for s in shapes if s is not None]
    return tuple(dims[0] if all(d == dims[0] for d in dims) else None for dims in zip(*known))

def _visit(found: SequenceLengths, graph: Graph) -> None:
    for node in graph.nodes:
        if isinstance(node, Loop):
            _visit_loop(found, node)
        elif isinstance(node, If):
            _visit_if(found, node)
        else:
            _visit_node(found, node)


def _visit_node(found: SequenceLengths, node: Node) -> None:
    length = found.length
    source = node.input(0)
    if node.op in MAKERS:
        out = node.outputs[0]
        if node.op == "SequenceConstruct":
            length[out] = len(node.inputs)
        elif node.op == "SequenceEmpty":
            length[out] = 0
        else:
            sizes = split_sizes(node)
            length[out] = None if sizes is None else len(sizes)
    elif node.op in EDITS and source in length:
        assert source is not None
        out = node.outputs[0]
        n = length[source]
        if node.op == "Identity":
            length[out] = n
        else:
            length[out] = None if n is None else n + 1 if node.op == "SequenceInsert" else n - 1
            at = position(node, 2 if node.op == "SequenceInsert" else 1, n, node.op == "SequenceInsert")
            if n is not None and at is None:
                found._refuse(source, f"is edited by {node.describe()} at a position that is no constant in range")
        found._join(source, out)
    elif node.op in READERS and source in length:
        n = length[source]
        if node.op == "SequenceAt" and n is not None and position(node, 1, n) is None:
            found._refuse(source, f"is read by {node.describe()} at a position that is no constant in range")
        if node.op == "ConcatFromSequence" and (n == 0 or int(attr(node, "new_axis")) not in (0, 1)):
            found._refuse(source, f"is concatenated by {node.describe()}, empty or with new_axis not 0 or 1")


def _visit_loop(found: SequenceLengths, loop: Loop) -> None:
    length = found.length
    carried = [rec for rec in loop.recurrences if rec.init in length]
    for rec in carried:
        length[rec.state] = length[rec.init]
        found._join(rec.init, rec.state)
    _visit(found, loop.body)
    for rec in loop.recurrences:
        if rec in carried:
            found._join(rec.state, rec.next)
            if length.get(rec.next) != length[rec.state]:
                found._distrust(rec.state, f"starts {length[rec.state]} long and is {length.get(rec.next)} long "
                                           f"after a trip of {loop.describe()}")
        elif rec.next in length:
            found._refuse(rec.next, f"is carried by {loop.describe()} from a value that is no list")
    for out in loop.loop_outputs:
        if out.value in length:
            length[out.result] = length[out.value]
            found._join(out.value, out.result)
            if out.kind != "last":
                found._refuse(out.value, f"is stacked by {loop.describe()}")


def _visit_if(found: SequenceLengths, node: If) -> None:
    length = found.length
    for branch in node.subgraphs():
        _visit(found, branch)
    for k, out in enumerate(node.outputs):
        results = [branch.outputs[k] for branch in node.subgraphs()]
        if not any(r in length for r in results):
            continue
        known = {length.get(r) if r in length else -1 for r in results}
        length[out] = known.pop() if len(known) == 1 and -1 not in known else None
        for r in results:
            found._join(out, r)


def _understood(found: SequenceLengths, value: Value, user: Node | Graph, slot: int) -> bool:
    """Whether the read of sequence ``value`` by ``user`` (operand or output ``slot``) is one the rewrite knows."""
    if isinstance(user, Graph):
        owner = user.owner
        if isinstance(owner, If):
            return True
        if isinstance(owner, Loop):
            return any(r.next is value for r in owner.recurrences) or any(
                o.value is value and o.kind == "last" for o in owner.loop_outputs)
        return False  # a model output: an engine takes and gives tensors only
    if isinstance(user, Loop):
        return value not in (user.trip_count, user.max_trips) and all(it.source is not value for it in user.iterators)
    return slot == 0 and (user.op in READERS or user.op in EDITS)

"""First-class loops and conditionals, with the operand roles of TensorRT's loop layers.

A :class:`Loop` runs its ``body`` once per trip. The body's ``inputs`` are its parameters — the
iteration counter, one element per iterator, one state per recurrence — and it may read outer
values directly (invariants). Reference semantics, in the style of a docstring interpreter::

    states = [r.init for r in recurrences]
    for i in range(trip_count if trip_count is not None else inf):
        bind counter = i, iterator params = source[i] (or source[len-1-i] if reversed), states
        if condition is not None and not condition: break     # evaluated with this trip's bindings
        run body; collect each concat/reverse output's value
        states = [r.next for r in recurrences]
    last outputs = final states; concat outputs = stacked values (reversed for "reverse")

A loop with a ``condition`` may stop early. Its concat outputs then hold exactly the trips run
(ONNX's meaning) until the ``while-outputs`` pass sets ``padded``: from then on they are
TensorRT's — as long as their length input (``max_trips``, else ``trip_count``), padded past
the trips run — and the pass has cut them back explicitly after the loop.

``condition`` is a body value computed from the parameters alone (in practice a recurrence
state), exactly what TensorRT's kWHILE trip limit reads. ``max_trips`` bounds a while loop's
concatenated outputs, which TensorRT needs as a build-time length.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal

from loopc.errors import InternalError
from loopc.ir.core import Graph, Node, Value

OutputKind = Literal["last", "concat", "reverse"]


@dataclass(frozen=True, eq=False)
class LoopIterator:
    """``param`` takes slice i of ``source`` along ``axis`` (counted from the end when ``reverse``)."""

    param: Value
    source: Value
    axis: int = 0
    reverse: bool = False


@dataclass(frozen=True, eq=False)
class Recurrence:
    """``state`` is ``init`` on the first trip and the previous trip's ``next`` afterwards."""

    state: Value
    init: Value
    next: Value


@dataclass(frozen=True, eq=False)
class LoopOutput:
    """``result`` (outside) is the last ``value`` (a recurrence state) or all trips' values stacked."""

    kind: OutputKind
    value: Value
    result: Value
    axis: int = 0


Role = LoopIterator | Recurrence | LoopOutput


class Loop(Node):
    """A loop node. Its ``inputs`` (the outer values its roles read), ``outputs`` and its body's inputs and
    outputs are laid out from the roles, and change only through the loop's named calls: the ``set_*``
    calls, ``add_*``/``remove_*`` of a role, and :meth:`update` of a role's fields. The roles read as frozen
    dataclasses and tuples of them.

    The layout, which each edit keeps by moving only the operands after the one it changes (adding an
    iterator, a recurrence or an output at the end of its kind costs O(1) amortized, plus the recurrences
    or outputs laid out after it)::

        inputs        = trip_count?, max_trips?, iterator sources..., recurrence inits...
        outputs       = loop output results...
        body.inputs   = counter?, iterator params..., recurrence states...
        body.outputs  = condition?, recurrence nexts..., loop output values...
    """

    def __init__(
        self,
        body: Graph,
        *,
        trip_count: Value | None = None,
        condition: Value | None = None,
        counter: Value | None = None,
        iterators: Iterable[LoopIterator] = (),
        recurrences: Iterable[Recurrence] = (),
        loop_outputs: Iterable[LoopOutput] = (),
        max_trips: Value | None = None,
        padded: bool = False,
        name: str = "",
        origin: str = "",
    ) -> None:
        super().__init__("Loop", [], [], name=name, origin=origin)
        self.body = self._own(body)
        self._trip_count, self._max_trips, self._condition, self._counter = trip_count, max_trips, condition, counter
        self._padded = padded
        self._iterators: list[LoopIterator] = []
        self._recurrences: list[Recurrence] = []
        self._loop_outputs: list[LoopOutput] = []
        #: Each role's position in its kind's list.
        self._index: dict[Role, int] = {}
        self._splice_inputs(0, 0, self._head())
        body._inputs = [] if counter is None else [counter]
        body._splice_outputs(0, len(body._outputs), [] if condition is None else [condition])
        for it in iterators:
            self.add_iterator(it)
        for rec in recurrences:
            self.add_recurrence(rec)
        for out in loop_outputs:
            self.add_output(out)

    # --- reading -----------------------------------------------------------------------------------

    @property
    def trip_count(self) -> Value | None:
        return self._trip_count

    @property
    def max_trips(self) -> Value | None:
        return self._max_trips

    @property
    def condition(self) -> Value | None:
        return self._condition

    @property
    def counter(self) -> Value | None:
        return self._counter

    @property
    def padded(self) -> bool:
        return self._padded

    @property
    def iterators(self) -> tuple[LoopIterator, ...]:
        return tuple(self._iterators)

    @property
    def recurrences(self) -> tuple[Recurrence, ...]:
        return tuple(self._recurrences)

    @property
    def loop_outputs(self) -> tuple[LoopOutput, ...]:
        return tuple(self._loop_outputs)

    def subgraphs(self) -> list[Graph]:
        return [self.body]

    def condition_nodes(self) -> list[Node]:
        """The body nodes the condition is computed by (through the graphs nested in them too), in body order:
        what runs before a trip's condition is tested."""
        if self._condition is None:
            return []
        producers = {out: node for node in self.body.nodes for out in node.outputs}
        needed: set[Node] = set()
        pending = [self._condition]
        while pending:
            node = producers.get(pending.pop())
            if node is not None and node not in needed:
                needed.add(node)
                pending.extend(reads(node))
        return [node for node in self.body.nodes if node in needed]

    # --- the loop's own operands ---------------------------------------------------------------------

    def set_trip_count(self, value: Value | None) -> None:
        before = self._at_sources()
        self._trip_count = value
        self._splice_inputs(0, before, self._head())

    def set_max_trips(self, value: Value | None) -> None:
        before = self._at_sources()
        self._max_trips = value
        self._splice_inputs(0, before, self._head())

    def set_condition(self, value: Value | None) -> None:
        had = 1 if self._condition is not None else 0
        self._condition = value
        self.body._splice_outputs(0, had, [] if value is None else [value])

    def set_counter(self, value: Value | None) -> None:
        had = 1 if self._counter is not None else 0
        self._counter = value
        self.body._inputs[0:had] = [] if value is None else [value]
        self.body.changed()

    def set_padded(self, padded: bool) -> None:
        self._padded = padded
        self.body.changed()

    def _head(self) -> list[Value | None]:
        return [v for v in (self._trip_count, self._max_trips) if v is not None]

    # --- roles ---------------------------------------------------------------------------------------

    def add_iterator(self, it: LoopIterator, index: int | None = None) -> None:
        """Add ``it`` (last, or at ``index`` among the iterators)."""
        k = self._claim(self._iterators, it, index)
        self._splice_inputs(self._at_sources() + k, self._at_sources() + k, [it.source])
        self.body._inputs.insert(self._at_params() + k, it.param)
        self.body.changed()

    def remove_iterator(self, it: LoopIterator) -> None:
        k = self._release(self._iterators, it)
        self._splice_inputs(self._at_sources() + k, self._at_sources() + k + 1, [])
        del self.body._inputs[self._at_params() + k]
        self.body.changed()

    def add_recurrence(self, rec: Recurrence, index: int | None = None) -> None:
        """Add ``rec`` (last, or at ``index`` among the recurrences)."""
        k = self._claim(self._recurrences, rec, index)
        self._splice_inputs(self._at_inits() + k, self._at_inits() + k, [rec.init])
        self.body._inputs.insert(self._at_states() + k, rec.state)
        self.body._splice_outputs(self._at_nexts() + k, self._at_nexts() + k, [rec.next])

    def remove_recurrence(self, rec: Recurrence) -> None:
        k = self._release(self._recurrences, rec)
        self._splice_inputs(self._at_inits() + k, self._at_inits() + k + 1, [])
        del self.body._inputs[self._at_states() + k]
        self.body._splice_outputs(self._at_nexts() + k, self._at_nexts() + k + 1, [])

    def add_output(self, out: LoopOutput, index: int | None = None) -> None:
        """Add ``out`` (last, or at ``index`` among the loop's outputs); the loop produces its ``result``."""
        k = self._claim(self._loop_outputs, out, index)
        self.body._splice_outputs(self._at_values() + k, self._at_values() + k, [out.value])
        self._outputs.insert(k, out.result)
        self._edited()
        out.result.producer = self

    def remove_output(self, out: LoopOutput) -> None:
        k = self._release(self._loop_outputs, out)
        self.body._splice_outputs(self._at_values() + k, self._at_values() + k + 1, [])
        del self._outputs[k]
        self._edited()

    def remove_roles(self, roles: Iterable[Role]) -> None:
        """Remove many roles of any kinds at once: one pass over the operands, however many go."""
        gone = set(roles)
        for role in gone:
            if role not in self._index:
                raise InternalError(f"{role!r} is not a role of {self.describe()}")
            del self._index[role]
        self._iterators = [it for it in self._iterators if it not in gone]
        self._recurrences = [rec for rec in self._recurrences if rec not in gone]
        self._loop_outputs = [out for out in self._loop_outputs if out not in gone]
        for kept in (self._iterators, self._recurrences, self._loop_outputs):
            self._renumber(kept, 0)
        self._splice_inputs(self._at_sources(), len(self._inputs),
                            [*(it.source for it in self._iterators), *(rec.init for rec in self._recurrences)])
        self.body._inputs[self._at_params():] = [it.param for it in self._iterators] + [
            rec.state for rec in self._recurrences]
        self.body._splice_outputs(self._at_nexts(), len(self.body._outputs),
                                  [rec.next for rec in self._recurrences] + [out.value for out in self._loop_outputs])
        self._outputs[:] = [out.result for out in self._loop_outputs]
        self._edited()

    def update(self, role: Role, **changes: Any) -> None:
        """Set fields of one of this loop's roles (``loop.update(rec, next=held)``) and rewire just the
        operands they lay out: O(1)."""
        k = self._index.get(role)
        if k is None or self._list_of(role)[k] is not role:
            raise InternalError(f"{role!r} is not a role of {self.describe()}")
        names = {f.name for f in fields(role)}
        for name, value in changes.items():
            if name not in names:
                raise InternalError(f"{type(role).__name__} has no field {name!r}")
            object.__setattr__(role, name, value)
        if isinstance(role, LoopIterator):
            if "source" in changes:
                self._splice_inputs(self._at_sources() + k, self._at_sources() + k + 1, [role.source])
            if "param" in changes:
                self.body._inputs[self._at_params() + k] = role.param
        elif isinstance(role, Recurrence):
            if "init" in changes:
                self._splice_inputs(self._at_inits() + k, self._at_inits() + k + 1, [role.init])
            if "state" in changes:
                self.body._inputs[self._at_states() + k] = role.state
            if "next" in changes:
                self.body._splice_outputs(self._at_nexts() + k, self._at_nexts() + k + 1, [role.next])
        else:
            if "value" in changes:
                self.body._splice_outputs(self._at_values() + k, self._at_values() + k + 1, [role.value])
            if "result" in changes:
                self._outputs[k] = role.result
                self._edited()
                role.result.producer = self
        self.body.changed()  # an axis, kind or direction changes no operand but is an edit

    def _list_of(self, role: Role) -> list[Any]:
        if isinstance(role, LoopIterator):
            return self._iterators
        return self._recurrences if isinstance(role, Recurrence) else self._loop_outputs

    def _claim(self, roles: list[Any], role: Role, index: int | None) -> int:
        if role in self._index:
            raise InternalError(f"{role!r} is already a role of {self.describe()}")
        k = len(roles) if index is None else index
        roles.insert(k, role)
        self._renumber(roles, k)
        return k

    def _release(self, roles: list[Any], role: Role) -> int:
        k = self._index.pop(role, None)
        if k is None or roles[k] is not role:
            raise InternalError(f"{role!r} is not a role of {self.describe()}")
        del roles[k]
        self._renumber(roles, k)
        return k

    def _renumber(self, roles: Sequence[Role], start: int) -> None:
        for k in range(start, len(roles)):
            self._index[roles[k]] = k

    # where each kind of operand starts
    def _at_sources(self) -> int:
        return len(self._head())

    def _at_inits(self) -> int:
        return len(self._head()) + len(self._iterators)

    def _at_params(self) -> int:
        return 1 if self._counter is not None else 0

    def _at_states(self) -> int:
        return self._at_params() + len(self._iterators)

    def _at_nexts(self) -> int:
        return 1 if self._condition is not None else 0

    def _at_values(self) -> int:
        return self._at_nexts() + len(self._recurrences)

    # --- edits through the generic calls --------------------------------------------------------------

    def set_input(self, slot: int, value: Value | None) -> None:
        """Rewire operand ``slot`` through the role it comes from (inputs follow the roles)."""
        head, sources = self._at_sources(), self._at_inits()
        if slot < head:
            if slot == 0 and self._trip_count is not None:
                self.set_trip_count(value)
            else:
                self.set_max_trips(value)
        elif value is None:
            raise InternalError(f"operand {slot} of {self.describe()} cannot be omitted")
        elif slot < sources:
            self.update(self._iterators[slot - head], source=value)
        else:
            self.update(self._recurrences[slot - sources], init=value)

    def set_inputs(self, values: Iterable[Value | None]) -> None:
        raise InternalError(f"the operands of {self.describe()} follow its roles: edit them through it")

    def set_outputs(self, values: Iterable[Value]) -> None:
        raise InternalError(f"the results of {self.describe()} follow its outputs: edit them through it")

    def _derives(self, graph: Graph) -> bool:
        return graph is self.body

    def _set_body_output(self, slot: int, value: Value) -> None:
        nexts, values = self._at_nexts(), self._at_values()
        if slot < nexts:
            self.set_condition(value)
        elif slot < values:
            self.update(self._recurrences[slot - nexts], next=value)
        else:
            self.update(self._loop_outputs[slot - values], value=value)


def reads(node: Node) -> Iterator[Value]:
    """Every value ``node`` reads: its inputs and, in its nested graphs, every operand and result."""
    yield from (v for v in node.inputs if v is not None)
    for sub in node.subgraphs():
        yield from sub.outputs
        for inner in sub.nodes:
            yield from reads(inner)


class If(Node):
    """``outputs[k]`` is ``then_branch.outputs[k]`` when ``cond`` holds, else ``else_branch.outputs[k]``."""

    def __init__(
        self, cond: Value, then_branch: Graph, else_branch: Graph, outputs: list[Value], name: str = "", origin: str = ""
    ) -> None:
        super().__init__("If", [cond], outputs, name=name, origin=origin)
        self.then_branch = self._own(then_branch)
        self.else_branch = self._own(else_branch)

    def subgraphs(self) -> list[Graph]:
        return [self.then_branch, self.else_branch]


__all__ = ["If", "Loop", "LoopIterator", "LoopOutput", "OutputKind", "Recurrence", "Role"]

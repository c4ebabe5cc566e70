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

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from loopc.ir.core import Graph, Node, Value

OutputKind = Literal["last", "concat", "reverse"]


class _Role:
    """A loop role: setting a field tells the loop that holds it, which then rewires its operands."""

    _loop: Loop | None

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        loop = self.__dict__.get("_loop")
        if loop is not None and not name.startswith("_"):
            loop._sync()


@dataclass(eq=False)
class LoopIterator(_Role):
    """``param`` takes slice i of ``source`` along ``axis`` (counted from the end when ``reverse``)."""

    param: Value
    source: Value
    axis: int = 0
    reverse: bool = False
    _loop: Loop | None = field(default=None, repr=False, compare=False)


@dataclass(eq=False)
class Recurrence(_Role):
    """``state`` is ``init`` on the first trip and the previous trip's ``next`` afterwards."""

    state: Value
    init: Value
    next: Value
    _loop: Loop | None = field(default=None, repr=False, compare=False)


@dataclass(eq=False)
class LoopOutput(_Role):
    """``result`` (outside) is the last ``value`` (a recurrence state) or all trips' values stacked."""

    kind: OutputKind
    value: Value
    result: Value
    axis: int = 0
    _loop: Loop | None = field(default=None, repr=False, compare=False)


R = TypeVar("R", bound=_Role)


class RoleList(list[R]):
    """A loop's list of one kind of role: every edit rewires the loop's operands."""

    def __init__(self, loop: Loop, roles: Iterable[R]) -> None:
        super().__init__(roles)
        self._owner = loop
        for role in self:
            self._claim(role)

    def _claim(self, role: R) -> None:
        if role._loop is not None and role._loop is not self._owner:
            raise ValueError(f"{role!r} already belongs to {role._loop.describe()}")
        object.__setattr__(role, "_loop", self._owner)

    def _edited(self) -> None:
        for role in self:
            self._claim(role)
        self._owner._sync()

    def append(self, role: R) -> None:
        super().append(role)
        self._edited()

    def extend(self, roles: Iterable[R]) -> None:
        super().extend(roles)
        self._edited()

    def insert(self, index: Any, role: R) -> None:
        super().insert(index, role)
        self._edited()

    def remove(self, role: R) -> None:
        super().remove(role)
        object.__setattr__(role, "_loop", None)
        self._edited()

    def pop(self, index: Any = -1) -> R:
        role = super().pop(index)
        object.__setattr__(role, "_loop", None)
        self._edited()
        return role

    def clear(self) -> None:
        for role in self:
            object.__setattr__(role, "_loop", None)
        super().clear()
        self._edited()

    def __setitem__(self, index: Any, value: Any) -> None:
        super().__setitem__(index, value)
        self._edited()

    def __delitem__(self, index: Any) -> None:
        super().__delitem__(index)
        self._edited()

    def __iadd__(self, roles: Iterable[R]) -> RoleList[R]:  # type: ignore[override,misc]
        self.extend(roles)
        return self


class Loop(Node):
    """A loop node. Its ``inputs`` (the outer values its roles read) and its body's inputs and outputs
    follow the roles by themselves: set a role or edit a role list, and the operands are rewired."""

    def __init__(
        self,
        body: Graph,
        *,
        trip_count: Value | None = None,
        condition: Value | None = None,
        counter: Value | None = None,
        iterators: list[LoopIterator] | None = None,
        recurrences: list[Recurrence] | None = None,
        loop_outputs: list[LoopOutput] | None = None,
        max_trips: Value | None = None,
        padded: bool = False,
        name: str = "",
        origin: str = "",
    ) -> None:
        self._ready = False
        super().__init__("Loop", [], [], name=name, origin=origin)
        self.body = self._own(body)
        self.trip_count = trip_count
        self.condition = condition
        self.counter = counter
        self.max_trips = max_trips
        self.padded = padded
        self.iterators = iterators or []
        self.recurrences = recurrences or []
        self.loop_outputs = loop_outputs or []
        self._ready = True
        self._sync()

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _ROLE_LISTS:
            for role in self.__dict__.get(name, ()):
                object.__setattr__(role, "_loop", None)
            value = RoleList(self, value)
        object.__setattr__(self, name, value)
        if name in _ROLES and self.__dict__.get("_ready"):
            self._sync()

    def _sync(self) -> None:
        """Recompute ``inputs``/``outputs``/``body.inputs``/``body.outputs`` from the roles."""
        if not self.__dict__.get("_ready"):
            return
        outer = [self.trip_count, self.max_trips] + [it.source for it in self.iterators]
        outer += [r.init for r in self.recurrences]
        inputs = [v for v in outer if v is not None]
        if not _same(inputs, self.inputs):
            self.inputs = inputs
        self.outputs = [o.result for o in self.loop_outputs]
        params = ([self.counter] if self.counter is not None else []) + [it.param for it in self.iterators]
        self.body.inputs = params + [r.state for r in self.recurrences]
        results = [v for v in [self.condition] if v is not None]
        self.body.outputs = results + [r.next for r in self.recurrences] + [o.value for o in self.loop_outputs]
        self.body.changed()  # a role's axis or kind, or ``padded``, changes no operand but is an edit

    def set_input(self, slot: int, value: Value | None) -> None:
        """Rewire operand ``slot`` through the role it comes from (inputs follow the roles)."""
        holder, field_name = self._outer_roles()[slot]
        setattr(holder, field_name, value)

    def _outer_roles(self) -> list[tuple[object, str]]:
        """(holder, field) of each operand, in ``inputs`` order."""
        roles: list[tuple[object, str]] = [(self, name) for name in ("trip_count", "max_trips")
                                           if getattr(self, name) is not None]
        return roles + [(it, "source") for it in self.iterators] + [(r, "init") for r in self.recurrences]

    def _sets_body_outputs(self, graph: Graph) -> bool:
        return graph is self.body

    def _set_body_output(self, slot: int, value: Value) -> None:
        roles: list[tuple[object, str]] = [(self, "condition")] if self.condition is not None else []
        roles += [(r, "next") for r in self.recurrences] + [(o, "value") for o in self.loop_outputs]
        holder, field_name = roles[slot]
        setattr(holder, field_name, value)

    def subgraphs(self) -> list[Graph]:
        return [self.body]


def _same(a: list[Value], b: list[Value | None]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


_ROLE_LISTS = frozenset({"iterators", "recurrences", "loop_outputs"})
_ROLES = _ROLE_LISTS | {"trip_count", "condition", "counter", "max_trips", "padded"}


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


__all__ = ["If", "Loop", "LoopIterator", "LoopOutput", "OutputKind", "Recurrence", "RoleList"]

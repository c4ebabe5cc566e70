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

from dataclasses import dataclass
from typing import Literal

from loopc.ir.core import Graph, Node, Value

OutputKind = Literal["last", "concat", "reverse"]


@dataclass(eq=False)
class LoopIterator:
    """``param`` takes slice i of ``source`` along ``axis`` (counted from the end when ``reverse``)."""

    param: Value
    source: Value
    axis: int = 0
    reverse: bool = False


@dataclass(eq=False)
class Recurrence:
    """``state`` is ``init`` on the first trip and the previous trip's ``next`` afterwards."""

    state: Value
    init: Value
    next: Value


@dataclass(eq=False)
class LoopOutput:
    """``result`` (outside) is the last ``value`` (a recurrence state) or all trips' values stacked."""

    kind: OutputKind
    value: Value
    result: Value
    axis: int = 0


class Loop(Node):
    """A loop node; its ``inputs`` are kept equal to the outer values its roles read."""

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
        self.body = body
        self.trip_count = trip_count
        self.condition = condition
        self.counter = counter
        self.iterators = iterators or []
        self.recurrences = recurrences or []
        self.loop_outputs = loop_outputs or []
        self.max_trips = max_trips
        self.padded = padded
        super().__init__("Loop", [], [o.result for o in self.loop_outputs], name=name, origin=origin)
        self.sync()

    def sync(self) -> None:
        """Recompute ``inputs``/``outputs``/``body.inputs`` from the role lists after an edit."""
        outer = [self.trip_count, self.max_trips] + [it.source for it in self.iterators]
        outer += [r.init for r in self.recurrences]
        self.inputs = [v for v in outer if v is not None]
        self.outputs = [o.result for o in self.loop_outputs]
        for out in self.outputs:
            out.producer = self
        params = ([self.counter] if self.counter is not None else []) + [it.param for it in self.iterators]
        self.body.inputs = params + [r.state for r in self.recurrences]
        self.body.outputs = [v for v in [self.condition] if v is not None]
        self.body.outputs += [r.next for r in self.recurrences] + [o.value for o in self.loop_outputs]

    def subgraphs(self) -> list[Graph]:
        return [self.body]


class If(Node):
    """``outputs[k]`` is ``then_branch.outputs[k]`` when ``cond`` holds, else ``else_branch.outputs[k]``."""

    def __init__(
        self, cond: Value, then_branch: Graph, else_branch: Graph, outputs: list[Value], name: str = "", origin: str = ""
    ) -> None:
        self.then_branch = then_branch
        self.else_branch = else_branch
        super().__init__("If", [cond], outputs, name=name, origin=origin)

    def subgraphs(self) -> list[Graph]:
        return [self.then_branch, self.else_branch]


__all__ = ["If", "Loop", "LoopIterator", "LoopOutput", "OutputKind", "Recurrence"]

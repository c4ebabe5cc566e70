"""Induction variables: body values that are an affine function of the trip number.

Exporters rarely use the loop's own counter. tf2onnx carries ``i`` and adds 1 each trip;
TorchScript carries a copy of ``i`` beside ``iteration_num``; both then compare or index with it.
A value is *affine in the trip* when its value on trip ``t`` (counting from 0) is
``base + const + step * t``, with ``base`` a loop-invariant integer value (or None) and
``const``/``step`` integers known at compile time:

- the loop counter: ``t``;
- a carried value whose next value is itself plus (minus) a constant ``c``, starting from an
  integer constant or invariant ``k0``: ``k0 + c·t``;
- sums and differences of such values with invariants, products with constants, integer casts,
  and reshapes of one-element tensors (``Unsqueeze(i, [0])`` as exporters write slice bounds).

Casts between integer types are taken as exact: a counter that overflowed its type would have
broken the source model already.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from loopc.ir import Loop, Recurrence, Value
from loopc.ir import constant_int, constant_value
from loopc.ir.ops import traits


@dataclass(frozen=True)
class Affine:
    """``base + const + step * t`` on trip ``t``; ``base`` is an invariant value or None."""

    base: Value | None
    const: int
    step: int

    def plus(self, other: Affine) -> Affine | None:
        if self.base is not None and other.base is not None:
            return None
        return Affine(self.base or other.base, self.const + other.const, self.step + other.step)

    def times(self, factor: int) -> Affine | None:
        if self.base is not None and factor != 1:
            return None
        return Affine(None, self.const * factor, self.step * factor)

    @property
    def is_counter(self) -> bool:
        """Exactly the trip number: what an IIteratorLayer walks."""
        return self.base is None and self.const == 0 and self.step == 1


class Induction:
    """Answers :meth:`affine` for the values of one loop's body (memoized: each value once)."""

    def __init__(self, loop: Loop, continuing: Mapping[Value, Value] | None = None) -> None:
        """``continuing`` maps a recurrence's next value to what it is on every trip after which the loop goes on
        (an If's output, to its branch that does not break): the trips that count are those."""
        self.loop = loop
        self.continuing = continuing or {}
        self.inner = {v for v in loop.body.inputs} | {v for _, n in loop.body.walk() for v in n.outputs}
        self.states = {r.state: r for r in loop.recurrences}
        self._memo: dict[Value, Affine | None] = {}
        self._busy: set[Value] = set()

    def invariant(self, value: Value) -> bool:
        return value not in self.inner

    def affine(self, value: Value | None) -> Affine | None:
        """``value`` as an affine function of the trip, or None when it is not one (or not an integer)."""
        if value is None or not _integer(value):
            return None
        key = value
        if key not in self._memo:
            if key in self._busy:
                return None  # a cycle that is not a simple step
            self._busy.add(key)
            self._memo[key] = self._compute(value)
            self._busy.discard(key)
        return self._memo[key]

    def _compute(self, value: Value) -> Affine | None:
        if constant_value(value) is not None:
            known = constant_int(value)
            return None if known is None else Affine(None, known, 0)
        if value is self.loop.counter:
            return Affine(None, 0, 1)
        if self.invariant(value):
            return Affine(value, 0, 0) if _one_element(value) else None
        if value in self.states:
            return self._carried(self.states[value])
        node = value.producer
        if node is None or len(node.outputs) != 1:
            return None
        args = node.inputs
        if traits(node.op).reshapes or node.op == "Cast":
            return self.affine(args[0]) if _one_element(value) else None
        if node.op == "Add" and len(args) == 2:
            a, b = self.affine(args[0]), self.affine(args[1])
            return a.plus(b) if a and b else None
        if node.op == "Sub" and len(args) == 2:
            a, b = self.affine(args[0]), self.affine(args[1])
            negated = b.times(-1) if b else None
            return a.plus(negated) if a and negated else None
        if node.op == "Mul" and len(args) == 2:
            a, b = self.affine(args[0]), self.affine(args[1])
            if a and b and b.base is None and b.step == 0:
                return a.times(b.const)
            if a and b and a.base is None and a.step == 0:
                return b.times(a.const)
        return None

    def _carried(self, rec: Recurrence) -> Affine | None:
        """``k0 + c·t`` for a carried ``k`` whose next value is ``k + c``."""
        start = self.affine(rec.init)
        if start is None or start.step != 0:
            return None
        step = _constant_step(rec, self.continuing.get(rec.next, rec.next))
        return None if step is None else replace(start, step=step)


def _constant_step(rec: Recurrence, following: Value) -> int | None:
    """``c`` when ``following`` (``rec.next``, or what it is on the trips that go on) is ``rec.state + c`` (or
    ``- c``) with ``c`` an integer constant."""
    node = following.producer
    if node is None or node.op not in ("Add", "Sub") or len(node.inputs) != 2:
        return None
    a, b = node.inputs
    if node.op == "Add" and b is rec.state:
        a, b = b, a
    if a is not rec.state:
        return None
    step = constant_int(b)
    if step is None:
        return None
    return -step if node.op == "Sub" else step


def _integer(value: Value) -> bool:
    return value.dtype is not None and np.dtype(value.dtype).kind in "iu"


def _one_element(value: Value) -> bool:
    return value.shape is not None and all(d == 1 for d in value.shape)

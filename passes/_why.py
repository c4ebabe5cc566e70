"""Why a rewrite did not apply, recorded where it declines (onnxscript's ``MatchResult.fail``, MLIR's
``notifyMatchFailure``): ``loopc build -v`` and ``loopc inspect --why`` then tell a user why their loop kept its
slow form, or which rule could not make it legal.

A pass bails out with ``return declined("its trip count is unknown", at=loop)`` (a function returning
``X | None``) or ``return no("the loop has a condition", at=loop)`` (a predicate): both record the reason
for the pass the :class:`~loopc.passes.manager.PassManager` is running, then return what a bare bail-out
returned. Outside a manager's run nothing is recorded. Recording is cheap (the place is described only when
the reasons are printed), since a pass may decline at every node of every round.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Literal

from loopc.ir import Graph, Loop, Node


@dataclass(frozen=True)
class Decline:
    """One rewrite that did not apply: which, where (a node, a loop or a graph) and why."""

    rewrite: str
    at: Node | Graph | None
    reason: str

    def loop(self) -> Loop | None:
        """The innermost loop the place is in (the loop itself when it is one)."""
        return next(self.loops(), None)

    def loops(self) -> Iterator[Loop]:
        """The loops the place is in, innermost first (the loop itself first when it is one)."""
        place: Node | Graph | None = self.at
        while place is not None:
            if isinstance(place, Loop):
                yield place
            place = place.graph if isinstance(place, Node) else place.owner

    def text(self) -> str:
        """One line: the rewrite, the place unless it is the loop the line is listed under, and why."""
        if self.at is self.loop():
            return f"{self.rewrite}: {self.reason}"
        return f"{self.rewrite}: {self.where()}: {self.reason}"

    def where(self) -> str:
        if isinstance(self.at, Node):
            return self.at.describe()
        return f"graph {self.at.name!r}" if isinstance(self.at, Graph) else "the model"


@dataclass
class Declines:
    """The reasons recorded during a run, by rewrite, each once (passes run again every round and decline
    alike); a rewrite's reasons are those of its last look."""

    found: dict[str, dict[tuple[Node | Graph | None, str], Decline]] = field(default_factory=dict)
    #: loops a rule made legal the slower way (padded, unrolled), by description: how, and why the rules tried
    #: before it did not apply there
    slower: dict[str, str] = field(default_factory=dict)

    def add(self, decline: Decline) -> None:
        self.found.setdefault(decline.rewrite, {}).setdefault((decline.at, decline.reason), decline)

    def forget(self, rewrite: str) -> None:
        """Drop what ``rewrite`` recorded: it is about to look again, and records what still holds."""
        self.found.pop(rewrite, None)

    def __iter__(self) -> Iterator[Decline]:
        return (d for by_rewrite in self.found.values() for d in by_rewrite.values())

    def __len__(self) -> int:
        return sum(len(by_rewrite) for by_rewrite in self.found.values())

    def by_loop(self) -> dict[Loop | None, list[Decline]]:
        """The reasons grouped by the loop they concern (None: outside every loop), in recording order."""
        grouped: dict[Loop | None, list[Decline]] = {}
        for decline in self:
            grouped.setdefault(decline.loop(), []).append(decline)
        return grouped

    def lines(self) -> list[str]:
        """One line a reason, grouped under the loop it concerns."""
        out: list[str] = []
        for loop, declines in self.by_loop().items():
            out.append(f"{loop.describe() if loop is not None else 'outside loops'}:")
            out.extend(f"  {d.text()}" for d in declines)
        return out


_recording: ContextVar[tuple[str, Declines] | None] = ContextVar("loopc_declines", default=None)


@contextmanager
def recording(rewrite: str, into: Declines) -> Iterator[None]:
    """Record what ``rewrite`` declines while the block runs into ``into``."""
    token = _recording.set((rewrite, into))
    try:
        yield
    finally:
        _recording.reset(token)


@contextmanager
def kept_if(relevant: Callable[[], bool]) -> Iterator[None]:
    """Keep what the running rewrite declines inside the block only when ``relevant()``, asked only then
    (a rewrite that applies declines nothing, and the question may cost a walk of the loop)."""
    current = _recording.get()
    held = Declines()
    token = _recording.set((current[0], held) if current is not None else None)
    try:
        yield
    finally:
        _recording.reset(token)
    if current is not None and len(held) and relevant():
        for decline in held:
            current[1].add(decline)


def recorded(rewrite: str, loop: Loop) -> list[str]:
    """The reasons ``rewrite`` last recorded about ``loop`` (or a loop in it) in the running manager's record:
    what a pass that must refuse the loop can cite (empty outside a manager's run)."""
    current = _recording.get()
    if current is None:
        return []
    return [d.reason for d in current[1].found.get(rewrite, {}).values() if any(inner is loop for inner in d.loops())]


def legalized(loop: Loop, how: str) -> None:
    """Record that the running rule made ``loop`` legal the slower way ``how`` (padding to a bound, unrolling),
    with what the others recorded about the loop so far: why the faster ways did not apply."""
    current = _recording.get()
    if current is None:
        return
    rule, declines = current
    before = [d.text() for d in declines if d.rewrite != rule and any(inner is loop for inner in d.loops())]
    declines.slower[loop.describe()] = f"{rule}: {how}" + (f" (before it: {'; '.join(before)})" if before else "")


def declined(reason: str, at: Node | Graph | None = None) -> None:
    """Record that the running rewrite does not apply at ``at`` because ``reason``; returns None."""
    current = _recording.get()
    if current is not None:
        current[1].add(Decline(current[0], at, reason))
    return None


def no(reason: str, at: Node | Graph | None = None) -> Literal[False]:
    """:func:`declined` for a predicate: records ``reason`` and returns False."""
    declined(reason, at)
    return False


__all__ = ["Decline", "Declines", "declined", "kept_if", "legalized", "no", "recorded", "recording"]

"""Running passes: each returns a :class:`PassResult`; the verifier checks the IR after every change.

A pass is a small object with a ``name`` and ``__call__(graph) -> PassResult``. It may also declare
``requires(graph)`` and ``ensures(graph)``: checks of what it needs before it runs and what it
promises after, run around every call (a broken promise raises :func:`broken`: a bug in the pass).

The manager runs the list in order and repeats it while anything changes (passes enable each
other: removing a dead carry can make a counter unused). It is driven by what changed: every edit
of the IR bumps the model's change count (see :meth:`loopc.ir.Graph.changed`), so a pass that last
found nothing to do is not run again until something has changed since, and the verifier runs only
after a pass that changed the graph. The count also keeps passes honest: a pass that edited the IR
but reported ``modified=False`` is a bug, reported as such.

A pass whose refusals depend on what other passes may still make knowable (a Range's count folded, then
the shapes below it refined, later in the same round) says so with ``refusals_wait = True``: its refusal
(a :class:`~loopc.errors.PassError` raised before it edited anything) is final only once the graph settles.
It is asked again after any change, and its refusal is raised when a round changes nothing. Any other
refusal is raised at once, so the first problem found is the one reported.

Passes that move things across loop levels visit inner loops first, so one call settles every
level; the round cap still grows with the nesting depth (``max_rounds`` plus one round per level),
since a rewrite at one level may enable another one level out. A model that ends in the cap is a
pass that keeps undoing another: a bug in loopc, reported with the passes that still changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from loopc.errors import InternalError, PassError
from loopc.gc_pause import gc_paused
from loopc.ir import Graph, If, VerificationError, verify
from loopc.ir.dependence import deciding_hint, input_dependence
from loopc.passes._why import Declines, recording

log = logging.getLogger(__name__)


@dataclass
class PassResult:
    graph: Graph
    modified: bool
    stats: dict[str, int] = field(default_factory=dict)


class Pass(Protocol):
    name: str

    def __call__(self, graph: Graph) -> PassResult: ...


@dataclass(frozen=True)
class Phase:
    """Passes run together to a fixed point before the next phase starts (XLA's ``HloPassFix`` groups):
    canonicalize, legalize, optimize, finalize. ``ensure``, when given, is called once the phase has
    settled, with the graph and the reasons recorded so far: what the phase promises (every loop legal
    after legalizing), raised as the user's error when it does not hold."""

    name: str
    passes: Sequence[Pass]
    ensure: Callable[[Graph, Declines], None] | None = None


@dataclass
class PassManager:
    #: The passes, run to a fixed point as one phase, or the phases, each run to a fixed point in order.
    passes: Sequence[Pass] | Sequence[Phase]
    max_rounds: int = 8
    #: Called as ``dump(pass_name, graph)`` after every pass that changed the graph.
    dump: Callable[[str, Graph], None] | None = None
    stats: dict[str, int] = field(default_factory=dict)
    #: How many times each pass ran (a pass with nothing new to look at is skipped).
    runs: dict[str, int] = field(default_factory=dict)
    #: Why rewrites did not apply, per loop (see :mod:`loopc.passes._why`).
    declines: Declines = field(default_factory=Declines)

    def phases(self) -> list[Phase]:
        if all(isinstance(p, Phase) for p in self.passes):
            return [p for p in self.passes if isinstance(p, Phase)]
        return [Phase("passes", [p for p in self.passes if not isinstance(p, Phase)])]

    @gc_paused()
    def run(self, graph: Graph) -> Graph:
        verify(graph, after="the frontend")
        #: the change count each pass last saw, when that run found nothing to do (a pass in several phases
        #: is not run again in the next one while nothing has changed)
        idle_at: dict[Pass, int] = {}
        for phase in self.phases():
            self._settle(phase, graph, idle_at)
            if phase.ensure is not None:
                phase.ensure(graph, self.declines)
        return graph

    def _settle(self, phase: Phase, graph: Graph, idle_at: dict[Pass, int]) -> None:
        """Run ``phase``'s passes in order, again while any changes the graph."""
        state = graph.model_state()
        rounds = self.max_rounds + nesting_depth(graph)
        changing: list[str] = []
        #: the refusal each pass last raised, while the graph has not settled since
        refused: dict[int, PassError] = {}
        for round_number in range(1, rounds + 1):
            changing = []
            for index, p in enumerate(phase.passes):
                if idle_at.get(p) == state.changes:
                    continue  # nothing changed since this pass last found nothing to do
                before = state.changes
                try:
                    changed = self._run_one(p, graph)
                except PassError as refusal:
                    if state.changes != before or not getattr(p, "refusals_wait", False):
                        raise
                    refused[index], changed = refusal, False
                else:
                    refused.pop(index, None)
                if changed:
                    changing.append(p.name)
                    idle_at.pop(p, None)
                else:
                    idle_at[p] = state.changes
            if not changing:
                if refused:
                    raise refused[min(refused)]
                return
            log.debug("%s round %d changed the graph (%s); running its passes again", phase.name, round_number,
                      changing)
        raise InternalError(f"{phase.name}: passes did not settle after {rounds} rounds; still changing the graph: "
                            f"{changing}")

    def _run_one(self, p: Pass, graph: Graph) -> bool:
        """Run ``p`` with its checks; whether it changed the graph."""
        state = graph.model_state()
        requires = getattr(p, "requires", None)
        if requires is not None:
            requires(graph)
        before = state.changes
        self.declines.forget(p.name)
        with recording(p.name, self.declines):
            result = p(graph)
        if result.graph is not graph:
            raise InternalError(f"pass {p.name} returned another graph; passes edit the graph they are given")
        self.runs[p.name] = self.runs.get(p.name, 0) + 1
        edited = state.changes != before
        if edited and not result.modified:
            raise InternalError(f"pass {p.name} changed the graph but reported modified=False")
        if result.modified:
            state.changes += 1  # edits the IR cannot see itself (a refined shape) count too
            try:
                verify(graph, after=f"pass {p.name}")
            except VerificationError as exc:
                raise _branch_that_cannot_run(graph, exc) or exc
        ensures = getattr(p, "ensures", None)
        if ensures is not None:
            ensures(graph)
        if not result.modified:
            return False
        for key, count in result.stats.items():
            self.stats[f"{p.name}.{key}"] = self.stats.get(f"{p.name}.{key}", 0) + count
        log.info("pass %s changed the graph: %s", p.name, result.stats)
        if self.dump is not None:
            self.dump(p.name, graph)
        return True


def _branch_that_cannot_run(graph: Graph, exc: VerificationError) -> PassError | None:
    """The user's error when the IR broke inside a branch that an input's value chooses: deciding the conditions
    and shapes the build knows made that branch inconsistent, so it cannot run with these shapes, and only
    fixing that input leaves it out (Silero VAD's 8 kHz model, built for 16 kHz chunks). None otherwise."""
    failing = next((node for _, node in graph.walk() if node.describe() == exc.node), None)
    inner = failing.graph if failing is not None else None
    while inner is not None and inner.owner is not None:
        owner = inner.owner
        if isinstance(owner, If) and input_dependence(owner.inputs[0], graph)[0]:
            return PassError(f"{owner.describe()}: a branch cannot run with the shapes this build has "
                             f"({exc.message})", hint=deciding_hint(owner))
        inner = owner.graph
    return None


def broken(p: Pass, node: object, what: str) -> InternalError:
    """The error for a pass whose ``requires``/``ensures`` does not hold at ``node``."""
    where = node.describe() if hasattr(node, "describe") else repr(node)
    return InternalError(f"pass {p.name}: {where}: {what}")


def nesting_depth(graph: Graph) -> int:
    """How many levels of loops and conditionals ``graph`` nests (0 for a graph without any)."""
    depth: dict[Graph, int] = {graph: 0}
    for outer, node in graph.structured():  # outer graphs before the graphs nested in them
        for sub in node.subgraphs():
            depth[sub] = depth[outer] + 1
    return max(depth.values())

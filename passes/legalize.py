"""Legalization: every loop made legal for TensorRT by one driver (MLIR's ``applyPartialConversion``).

The target is stated once in :mod:`loopc.ir.target`: no layer in a loop takes a shape from values that
change between trips, and no carried value changes shape. The rewrites that make a loop legal are *rules*:
passes with a declared ``benefit``, tried in order of it (the cheapest, exact rewrite first; unrolling, which
copies the body once per trip, last), each recording through :mod:`loopc.passes._why` why it does not apply.
The phase runs the rules with the canonicalization passes to a fixed point, then checks the target: a loop
that is still illegal is one error that names the node TensorRT could not build, why, and per rule why it did
not apply, before TensorRT's builder could fail on it with an assertion that names no layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from loopc.errors import PassError
from loopc.ir import Graph, Loop, Node, verify_target
from loopc.ir.target import violations
from loopc.loop_rules import bound_hint
from loopc.passes._why import Declines
from loopc.passes.manager import Pass, Phase


class Rule(Pass, Protocol):
    """A pass that makes loops legal; the driver tries rules with a higher ``benefit`` first."""

    benefit: int


def legalization(canonicalize: Sequence[Pass], rules: Sequence[Rule]) -> Phase:
    """The legalize phase: ``rules`` by benefit (highest first; equal ones as given), after ``canonicalize``."""
    ordered = sorted(rules, key=lambda rule: -rule.benefit)
    names = [rule.name for rule in ordered]
    return Phase("legalize", [*canonicalize, *ordered],
                 ensure=lambda graph, declines: require_legal(graph, declines, names))


def require_legal(graph: Graph, declines: Declines, rules: Sequence[str]) -> None:
    """Raise the user's error for the first loop of ``graph`` that is still illegal, naming per rule (of
    ``rules``) why it did not apply there."""
    for loop, at, why in violations(graph):
        place = at.describe() if isinstance(at, Node) else f"carried value '{at.name}'"
        reason = why if isinstance(at, Node) else why.removeprefix(f"carried value '{at.name}' ")
        unbounded = not isinstance(at, Node) and loop.trip_count is None and loop.max_trips is None
        raise PassError(f"{loop.describe()}: TensorRT cannot build this loop: {place}: {reason}; "
                        f"no rewrite made it legal ({'; '.join(why_not(loop, declines, rules))})",
                        hint=bound_hint() if unbounded else "compute that shape outside the loop")


def legal_at_the_end(graph: Graph, declines: Declines) -> None:
    """The target still holds once every pass has run: a pass after legalization that broke it is loopc's bug,
    caught here with the node named rather than by TensorRT's anonymous assertion. (The IR's other rules were
    verified after the last pass that changed it.)"""
    verify_target(graph, after="the passes")


def why_not(loop: Loop, declines: Declines, rules: Sequence[str]) -> list[str]:
    """Per rule, why it did not apply to ``loop`` (or to a loop it nests), as recorded; the rules that found
    nothing of their form there, together at the end."""
    found: dict[str, list[str]] = {rule: [] for rule in rules}
    for decline in declines:
        reasons = found.get(decline.rewrite)
        if reasons is not None and decline.reason not in reasons and any(d is loop for d in decline.loops()):
            reasons.append(decline.reason)
    said = [f"{rule}: {', '.join(reasons)}" for rule, reasons in found.items() if reasons]
    silent = [rule for rule, reasons in found.items() if not reasons]
    return said + ([f"{', '.join(silent)}: nothing here of the form they rewrite"] if silent else [])


__all__ = ["Rule", "legal_at_the_end", "legalization", "require_legal", "why_not"]

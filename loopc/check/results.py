"""What ``loopc check`` found, as data: the one form every report (JSON, JUnit, Markdown, HTML) is written from.

A run checks each model of a manifest for each of its targets. Each (model, target) pair is a
:class:`TargetResult` holding one :class:`CheckResult` per check:

- ``build``: the model imports, converts and builds into a serialized engine for the target;
- ``numbers``: its outputs match the reference within the model's tolerances;
- ``precision`` (a model built in half precision): each output of the half network or engine against the
  float32 one's, within the model's ``half-tolerance``; ``numbers`` then checks the float32 network;
- ``fingerprint``: its loops, work per iteration, engine size and build time hold against the baseline.

A problem with the manifest itself, or with one model's table in it, is a ``manifest`` check.
The JSON form (:meth:`Report.to_dict`) is also what shards write and ``loopc check --merge`` reads.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from loopc.errors import EXIT_INPUT, EXIT_INTERNAL, LoopcError

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"
#: ``error``: loopc itself failed (an internal error); ``failed``: the model or its files did.
STATUSES = (PASSED, FAILED, ERROR, SKIPPED)
CHECKS = ("manifest", "build", "numbers", "precision", "fingerprint")
FORMAT_VERSION = 1


@dataclass
class CheckResult:
    check: str  #: one of CHECKS
    status: str  #: one of STATUSES
    message: str = ""  #: one line: why it failed or was skipped (empty when it passed)
    details: str = ""  #: more lines for the report: per-output errors, the fingerprint's diff
    seconds: float = 0.0


@dataclass
class OutputComparison:
    """One output against the reference, with Polygraphy's comparator semantics (see ``loopc.check.compare``),
    or a half-precision output against the float32 one, by ``of_scale``."""

    name: str
    passed: bool
    max_abs: float | None = None
    max_rel: float | None = None
    shape: list[int] | None = None
    reason: str = ""  #: why it failed when not by tolerance: missing, shape or dtype differs, NaN
    of_scale: float | None = None  #: the largest error over the float32 output's largest magnitude


@dataclass
class Difference:
    """One fingerprint quantity that differs from the baseline."""

    what: str  #: e.g. "loop /Loop__3: MACs per iteration"
    baseline: Any
    current: Any
    regression: bool  #: True when it breaks a threshold (the check fails); False: a change worth seeing


@dataclass
class TargetResult:
    model: str  #: the model's name in the manifest
    target: str  #: e.g. sm89
    path: str = ""  #: the model file as the manifest gives it
    position: int = 0  #: the model's place in the manifest (shards keep it, so a merge restores the order)
    checks: list[CheckResult] = field(default_factory=list)
    outputs: list[OutputComparison] = field(default_factory=list)
    #: ``NetworkInfo.to_dict()`` (see :mod:`loopc.fingerprint`: "layers", "loops") plus "engine_bytes",
    #: "build_seconds", "build_ratio" (build time over the same run's reference build), "tensorrt", "loopc"
    fingerprint: dict[str, Any] | None = None
    differences: list[Difference] = field(default_factory=list)
    precision: str = "fp32"  #: what the engine computes in (:class:`loopc.precision.Precision` as text)
    against_fp32: list[OutputComparison] = field(default_factory=list)  #: the ``precision`` check's outputs

    @property
    def id(self) -> str:
        return f"{self.model}@{self.target}"

    @property
    def status(self) -> str:
        """The worst status of its checks: error, failed, passed, then skipped."""
        states = {c.status for c in self.checks}
        return next((s for s in (ERROR, FAILED, PASSED) if s in states), SKIPPED)


@dataclass
class Report:
    manifest: str
    loopc: str
    tensorrt: str
    executor: str = "sim"
    shard: str | None = None  #: "K/N" when this report covers one shard
    started: str = ""  #: ISO 8601 time the run began
    seconds: float = 0.0
    results: list[TargetResult] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """How many checks ended in each status."""
        tally = dict.fromkeys(STATUSES, 0)
        for result in self.results:
            for check in result.checks:
                tally[check.status] += 1
        return tally

    def exit_code(self) -> int:
        """0 when everything holds, 1 on a failed check, loopc's internal-error code when loopc failed."""
        counts = self.counts()
        return EXIT_INTERNAL if counts[ERROR] else EXIT_INPUT if counts[FAILED] else 0

    def to_dict(self) -> dict[str, Any]:
        return {"loopc-check-report": FORMAT_VERSION, **asdict(self)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "report") -> Report:
        """Read a report written by :meth:`to_dict`; anything else is a one-line :class:`LoopcError`."""
        if not isinstance(data, dict) or data.get("loopc-check-report") != FORMAT_VERSION:
            raise LoopcError(f"{source}: not a loopc check report (JSON written by `loopc check --json`, "
                             f"format {FORMAT_VERSION})")
        try:
            results = [
                TargetResult(
                    r["model"], r["target"], r.get("path", ""), int(r.get("position", 0)),
                    [CheckResult(**c) for c in r.get("checks", [])],
                    [OutputComparison(**o) for o in r.get("outputs", [])],
                    r.get("fingerprint"),
                    [Difference(**d) for d in r.get("differences", [])],
                    str(r.get("precision", "fp32")),
                    [OutputComparison(**o) for o in r.get("against_fp32", [])],
                )
                for r in data.get("results", [])
            ]
            return cls(data["manifest"], data["loopc"], data["tensorrt"], data.get("executor", "sim"),
                       data.get("shard"), data.get("started", ""), float(data.get("seconds", 0.0)), results)
        except (KeyError, TypeError, ValueError) as exc:
            raise LoopcError(f"{source}: malformed loopc check report ({type(exc).__name__}: {exc})") from None


def merge(reports: list[Report]) -> Report:
    """Shard reports as one: results in manifest order (each shard keeps it), times summed."""
    if not reports:
        raise LoopcError("nothing to merge: give the shards' JSON reports")
    first = reports[0]
    manifests = {r.manifest for r in reports}
    if len(manifests) > 1:
        raise LoopcError(f"the reports come from different manifests: {', '.join(sorted(manifests))}")
    seen: dict[str, str] = {}
    results = []
    for report in reports:
        for result in report.results:
            if result.id in seen:
                raise LoopcError(f"{result.id} is in two reports (shards {seen[result.id]} and {report.shard}); "
                                 "merge each shard once")
            seen[result.id] = report.shard or "?"
            results.append(result)
    results.sort(key=lambda r: r.position)  # stable: a model's targets keep their order
    return Report(first.manifest, first.loopc, first.tensorrt, first.executor, None,
                  min(r.started for r in reports), sum(r.seconds for r in reports), results)

"""Baselines: the fingerprints a team accepted, and what counts as a regression against them.

A baseline file is JSON: ``{"loopc-baseline": 1, "fingerprints": {"model@target": fingerprint}}``,
written by ``loopc check --update-baseline`` and kept in the team's repository. A fingerprint is
``NetworkInfo.to_dict()`` (see :mod:`loopc.fingerprint`) plus the engine's size, its build time over
the same run's reference build (``build_ratio``), and the versions that made it.

Regressions: a loop of the baseline is gone (unrolled or removed); per-iteration layers, MACs (of
matrix products and convolutions alike) or the critical path grew beyond their threshold; the engine
grew beyond ``engine-size``; the build got slower beyond ``build-time`` — a ratio of ratios, each
build timed against a reference network built in its own run, so a faster or busier CI machine does
not move it. Every other change (trip limits, iterators, precision, versions, improvements, MACs
against a baseline recorded before convolutions were counted) is listed but does not fail.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator
from typing import Any

from loopc.check.results import Difference
from loopc.errors import LoopcError
from loopc.fileio import OutputFile, check_readable

FORMAT_VERSION = 1
#: A build less than this much slower than its baseline is never a regression: builds of a fraction of
#: a second vary by more than 2x on a busy machine, whatever the reference says.
BUILD_NOISE_SECONDS = 1.0


def load_baseline(path: pathlib.Path) -> dict[str, dict[str, Any]]:
    """The fingerprints of a baseline file; a missing file is an empty baseline (the first run writes it)."""
    if not path.exists():
        return {}
    check_readable(path, "baseline")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LoopcError(f"baseline {path}: not readable JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("loopc-baseline") != FORMAT_VERSION \
            or not isinstance(data.get("fingerprints"), dict):
        raise LoopcError(f"baseline {path}: not a loopc baseline (written by `loopc check --update-baseline`, "
                         f"format {FORMAT_VERSION})")
    return data["fingerprints"]


def write_baseline(out: OutputFile, fingerprints: dict[str, dict[str, Any]]) -> None:
    text = json.dumps({"loopc-baseline": FORMAT_VERSION, "fingerprints": dict(sorted(fingerprints.items()))},
                      indent=2)
    out.write(lambda handle: handle.write(text.encode() + b"\n"))


def differences(baseline: dict[str, Any], current: dict[str, Any], thresholds: dict[str, float]) -> list[Difference]:
    """What changed from ``baseline`` to ``current``; ``regression`` marks what breaks a threshold."""
    found: list[Difference] = []
    old_loops, new_loops = _loops(baseline), _loops(current)
    pairs, gone = _match(old_loops, new_loops)
    for name in gone:
        found.append(Difference(f"loop {name}", "present", "gone", True))
    if gone and len(new_loops) < len(old_loops):
        found.append(Difference("loops", len(old_loops), len(new_loops), True))
        if current.get("layers", 0) > baseline.get("layers", 0):
            found.append(Difference("layers (a loop gone and layers up: unrolled?)", baseline.get("layers"),
                                    current.get("layers"), True))
    elif len(new_loops) != len(old_loops):
        found.append(Difference("loops", len(old_loops), len(new_loops), False))
    for old, new in pairs:
        where = f"loop {new['name']}"
        _grown(found, f"{where}: layers per iteration", old.get("layers_per_iteration"),
               new.get("layers_per_iteration"), thresholds["layers-per-iteration"])
        _macs(found, where, old, new, thresholds["macs-per-iteration"])
        _grown(found, f"{where}: critical path (layers)", len(old.get("critical_path", [])),
               len(new.get("critical_path", [])), thresholds["critical-path"])
        for key in ("trip_limits", "trip_count"):
            if old.get(key) != new.get(key):
                found.append(Difference(f"{where}: {key.replace('_', ' ')}", old.get(key), new.get(key), False))
        for key in ("iterators", "recurrences", "outputs"):
            if len(old.get(key, [])) != len(new.get(key, [])):
                found.append(Difference(f"{where}: {key}", len(old.get(key, [])), len(new.get(key, [])), False))
    _grown(found, "engine size (bytes)", baseline.get("engine_bytes"), current.get("engine_bytes"),
           thresholds["engine-size"])
    if _slower_by(baseline, current) > BUILD_NOISE_SECONDS:
        _grown(found, "build time (over the reference build)", baseline.get("build_ratio"),
               current.get("build_ratio"), thresholds["build-time"], noisy=True)
    if baseline.get("precision", "fp32") != current.get("precision", "fp32"):
        found.append(Difference("precision", baseline.get("precision", "fp32"), current.get("precision", "fp32"),
                                False))
    for key in ("tensorrt", "loopc"):
        if baseline.get(key) != current.get(key):
            found.append(Difference(f"{key} version", baseline.get(key), current.get(key), False))
    return found


def _macs(found: list[Difference], where: str, old: dict[str, Any], new: dict[str, Any], threshold: float) -> None:
    """MACs per iteration against the baseline's; listed, not failed, when the baseline left out convolutions
    (recorded before they were counted: no ``convolutions_per_iteration``) and this loop has some."""
    before, after = old.get("macs_per_iteration"), new.get("macs_per_iteration")
    if "convolutions_per_iteration" in old or not new.get("convolutions_per_iteration"):
        _grown(found, f"{where}: macs per iteration", before, after, threshold)
    elif before is not None and after is not None and before != after:
        found.append(Difference(f"{where}: macs per iteration (the baseline counted no convolutions: "
                                "--update-baseline counts them)", before, after, False))


def _grown(found: list[Difference], what: str, old: Any, new: Any, threshold: float, noisy: bool = False) -> None:
    """Record a changed quantity: a regression when it grew more than ``threshold`` times (from 0: at all).

    A ``noisy`` quantity (a time) is recorded only when it regresses.
    """
    if old is None or new is None or old == new:
        return
    regression = new > old * threshold if old > 0 else new > 0
    if regression or not noisy:
        found.append(Difference(what, old, new, regression))


def _slower_by(baseline: dict[str, Any], current: dict[str, Any]) -> float:
    """Seconds the current build took beyond the baseline's ratio on this run's reference (0 when unknown)."""
    old, new, seconds = baseline.get("build_ratio"), current.get("build_ratio"), current.get("build_seconds")
    if not old or not new or seconds is None:
        return 0.0
    return seconds - old * (seconds / new)


def _loops(fingerprint: dict[str, Any]) -> list[dict[str, Any]]:
    return list(_walk(fingerprint.get("loops", [])))


def _walk(nodes: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for node in nodes:
        if node.get("kind", "loop") == "loop":
            yield node
        yield from _walk(node.get("children", []))


def _match(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> tuple[list[tuple[dict, dict]], list[str]]:
    """Pair loops by name, then the rest in order (a re-export may rename them); the baseline's leftovers are gone."""
    by_name = {loop["name"]: loop for loop in new}
    pairs, unpaired_old = [], []
    used: set[int] = set()
    for loop in old:
        partner = by_name.get(loop["name"])
        if partner is not None and id(partner) not in used:
            pairs.append((loop, partner))
            used.add(id(partner))
        else:
            unpaired_old.append(loop)
    rest = [loop for loop in new if id(loop) not in used]
    pairs += list(zip(unpaired_old, rest))
    gone = [loop["name"] for loop in unpaired_old[len(rest):]]
    return pairs, gone

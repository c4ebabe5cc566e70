"""The manifest of ``loopc check``: which models to check, against what, for which targets.

A TOML file with one ``[[model]]`` table per model; paths are relative to the manifest::

    [defaults]                          # optional: any model key but name and path
    targets = ["sm80", "sm89"]

    [thresholds]                        # optional: when a change against the baseline is a regression
    engine-size = 1.10                  # current / baseline engine bytes above this fails
    build-time = 2.0                    # current / baseline build time, each over its run's reference build

    [[model]]
    name = "decoder"                    # optional: the file's stem
    path = "decoder.onnx"               # ONNX, or OpenVINO IR .xml (its .bin beside it, or `weights`)
    inputs = "decoder_inputs.npz"       # .npz, or Polygraphy's `--save-inputs` JSON
    reference = "onnxruntime"           # or "openvino", or golden outputs: .npz / `polygraphy run --save-outputs` JSON
    max-trips = 64                      # optional: bound for while loops with scan outputs
    shapes = "x:1x16"                   # optional: trtexec-style shapes (default: from the inputs)
    rtol = 1e-4                         # optional, per output: |a - r| <= atol or |a - r| <= rtol * |r|
    atol = 1e-5
    fp16 = true                         # optional: build in half precision (or bf16 = true), as `loopc build --fp16`
    fp16-state = true                   # optional: loop state in half too (--fp16-state)
    half-tolerance = 1e-2               # optional: each output's largest error against the float32 network, as a
                                        # fraction of that output's largest magnitude (default: fp16 1e-2, bf16 6e-2)
    thresholds = { engine-size = 1.5 }  # optional: this model's own thresholds

A problem in one model's table makes that model's ``manifest`` check fail and leaves the others to run;
a file that is not a readable manifest fails the whole run, both with a one-line reason.
"""

from __future__ import annotations

import math
import pathlib
import tomllib
from dataclasses import dataclass, field
from typing import Any

from loopc.errors import LoopcError
from loopc.fileio import check_readable
from loopc.precision import HALF_TOLERANCE, Precision
from loopc.spelling import spelled

REFERENCES = ("onnxruntime", "openvino")
DEFAULT_TARGETS = ("sm89",)
#: Ratios (current / baseline) above which a fingerprint quantity is a regression.
DEFAULT_THRESHOLDS = {
    "layers-per-iteration": 1.0,
    "macs-per-iteration": 1.0,
    "critical-path": 1.0,
    "engine-size": 1.10,
    "build-time": 2.0,
}
MODEL_KEYS = {"name", "path", "inputs", "reference", "max-trips", "shapes", "targets", "rtol", "atol", "weights",
              "thresholds", "fp16", "bf16", "fp16-state", "half-tolerance"}
TOP_KEYS = {"model", "defaults", "thresholds"}


@dataclass(frozen=True)
class Entry:
    """One model of the manifest, with its paths resolved and its keys checked."""

    name: str
    position: int
    path: pathlib.Path
    source: str  #: ``path`` as the manifest gives it
    inputs: pathlib.Path
    reference: str | pathlib.Path
    targets: tuple[str, ...] = DEFAULT_TARGETS
    max_trips: int | None = None
    shapes: str | None = None
    rtol: float = 1e-4
    atol: float = 1e-5
    weights: pathlib.Path | None = None
    thresholds: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))
    precision: Precision = Precision()
    #: The ``precision`` check's bound: an output's largest error against the float32 network over its largest
    #: magnitude (half entries only).
    half_tolerance: float = 0.0


@dataclass(frozen=True)
class Invalid:
    """A model table that cannot be checked, and why (one line)."""

    name: str
    position: int
    source: str
    reason: str


@dataclass
class Manifest:
    path: pathlib.Path
    entries: list[Entry | Invalid]

    def shard(self, index: int, count: int) -> list[Entry | Invalid]:
        """Shard ``index`` of ``count`` (1-based): every ``count``-th model, so each shard gets a fair share."""
        return [e for e in self.entries if e.position % count == index - 1]


def load_manifest(path: str | pathlib.Path) -> Manifest:
    """Read and check a manifest; raises :class:`LoopcError` (one line) when the file itself is unusable."""
    manifest = pathlib.Path(path)
    check_readable(manifest, "manifest")
    try:
        data = tomllib.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise LoopcError(f"manifest {manifest}: cannot read it ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise LoopcError(f"manifest {manifest}: not valid TOML ({exc})") from None
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise LoopcError(f"manifest {manifest}: unknown top-level key(s) {', '.join(unknown)}; "
                         f"expected {', '.join(sorted(TOP_KEYS))}")
    models = data.get("model")
    if not isinstance(models, list) or not models:
        raise LoopcError(f"manifest {manifest}: no [[model]] tables")
    defaults = _table(data, "defaults", manifest)
    bad = sorted(set(defaults) - (MODEL_KEYS - {"name", "path"}))
    if bad:
        raise LoopcError(f"manifest {manifest}: [defaults] cannot set {', '.join(bad)}")
    thresholds = _thresholds(_table(data, "thresholds", manifest), DEFAULT_THRESHOLDS, "[thresholds]", manifest)
    entries: list[Entry | Invalid] = []
    names: set[str] = set()
    for position, table in enumerate(models):
        entry = _entry(manifest, position, table, defaults, thresholds)
        if entry.name in names:
            entry = Invalid(entry.name, position, entry.source, f"a second model named {entry.name!r}; names must "
                            "be unique (give `name`)")
        names.add(entry.name)
        entries.append(entry)
    return Manifest(manifest, entries)


def _table(data: dict[str, Any], key: str, manifest: pathlib.Path) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise LoopcError(f"manifest {manifest}: {key} must be a table")
    return value


def _entry(manifest: pathlib.Path, position: int, table: Any, defaults: dict[str, Any],
           thresholds: dict[str, float]) -> Entry | Invalid:
    if not isinstance(table, dict):
        return Invalid(f"model #{position + 1}", position, "", "a [[model]] entry must be a table")
    source = table.get("path")
    name = table.get("name") or (pathlib.PurePath(source).stem if isinstance(source, str) else f"model #{position + 1}")
    try:
        return _checked_entry(manifest.parent, position, {**defaults, **table}, str(name), thresholds)
    except _Bad as exc:
        return Invalid(str(name), position, source if isinstance(source, str) else "", str(exc))


class _Bad(Exception):
    """A model table's problem, reported as that model's failed ``manifest`` check."""


def _checked_entry(here: pathlib.Path, position: int, table: dict[str, Any], name: str,
                   thresholds: dict[str, float]) -> Entry:
    unknown = sorted(set(table) - MODEL_KEYS)
    if unknown:
        raise _Bad(f"unknown key(s) {', '.join(unknown)}; a model takes {', '.join(sorted(MODEL_KEYS))}")
    for key in ("path", "inputs", "reference"):
        if key not in table:
            raise _Bad(f"missing key {key!r}")
    model = _file(here, table, "path", "model file")
    inputs = _file(here, table, "inputs", "inputs file")
    reference = _string(table, "reference")
    if reference not in REFERENCES:
        if not reference.endswith((".npz", ".json")):
            raise _Bad(f"reference {reference!r} is neither {' nor '.join(REFERENCES)} nor a .npz or .json file "
                       "of golden outputs")
        reference_path: str | pathlib.Path = _file(here, table, "reference", "reference file")
    else:
        reference_path = reference
        if reference == "onnxruntime" and model.suffix.lower() != ".onnx":
            raise _Bad(f"reference 'onnxruntime' runs ONNX models; {model.name} is not one (use 'openvino')")
    targets = table.get("targets", list(DEFAULT_TARGETS))
    if not isinstance(targets, list) or not targets or not all(isinstance(t, str) and t for t in targets):
        raise _Bad("targets must be a non-empty list of strings, e.g. [\"sm80\", \"sm89\"]")
    if len(set(targets)) != len(targets):
        raise _Bad(f"targets {targets} name one target twice")
    max_trips = table.get("max-trips")
    if max_trips is not None and (not isinstance(max_trips, int) or isinstance(max_trips, bool) or max_trips < 1):
        raise _Bad(f"max-trips must be a positive integer, got {max_trips!r}")
    shapes = table.get("shapes")
    if shapes is not None and not isinstance(shapes, str):
        raise _Bad("shapes must be a string, e.g. \"x:1x16,y:4\"")
    weights = _file(here, table, "weights", "weights file") if "weights" in table else None
    own = table.get("thresholds", {})
    if not isinstance(own, dict):
        raise _Bad("thresholds must be a table, e.g. { engine-size = 1.5 }")
    precision = _precision(table)
    half_tolerance = _tolerance(table, "half-tolerance", HALF_TOLERANCE.get(precision.half or "", 0.0))
    if "half-tolerance" in table and not precision:
        raise _Bad("half-tolerance bounds a half-precision build's error; give fp16 = true or bf16 = true")
    return Entry(name, position, model, str(table["path"]), inputs, reference_path, tuple(targets), max_trips,
                 shapes, _tolerance(table, "rtol", 1e-4), _tolerance(table, "atol", 1e-5), weights,
                 _thresholds(own, thresholds, "thresholds", None), precision, half_tolerance)


def _precision(table: dict[str, Any]) -> Precision:
    flags = {}
    for key in ("fp16", "bf16", "fp16-state"):
        value = table.get(key, False)
        if not isinstance(value, bool):
            raise _Bad(f"{key} must be true or false, got {value!r}")
        flags[key] = value
    try:
        with spelled("manifest"):
            return Precision.of(flags["fp16"], flags["bf16"], flags["fp16-state"])
    except LoopcError as exc:
        raise _Bad(str(exc)) from None


def _string(table: dict[str, Any], key: str) -> str:
    value = table[key]
    if not isinstance(value, str) or not value:
        raise _Bad(f"{key} must be a non-empty string, got {value!r}")
    return value


def _file(here: pathlib.Path, table: dict[str, Any], key: str, what: str) -> pathlib.Path:
    path = here / _string(table, key)
    if not path.exists():
        raise _Bad(f"{what} {table[key]!r} does not exist (paths are relative to the manifest)")
    if not path.is_file():
        raise _Bad(f"{what} {table[key]!r} is not a regular file")
    return path


def _tolerance(table: dict[str, Any], key: str, default: float) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise _Bad(f"{key} must be a finite number >= 0, got {value!r}")
    return float(value)


def _thresholds(given: dict[str, Any], base: dict[str, float], where: str,
                manifest: pathlib.Path | None) -> dict[str, float]:
    merged = dict(base)
    for key, value in given.items():
        problem = None
        if key not in DEFAULT_THRESHOLDS:
            problem = f"{where}: unknown threshold {key!r}; known: {', '.join(DEFAULT_THRESHOLDS)}"
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or not 1.0 <= value < math.inf:
            problem = f"{where}: {key} must be a ratio >= 1.0 (current / baseline), got {value!r}"
        if problem:
            if manifest is not None:
                raise LoopcError(f"manifest {manifest}: {problem}")
            raise _Bad(problem)
        merged[key] = float(value)
    return merged

"""Half precision on the corpus: which models build in float32, fp16 and bf16, and how far each half engine's
outputs are from the oracle's.

    python benchmarks/half_table.py [-k SUBSTRING] [--conformance] [--no-corpus] [--json FILE]

For every case of the corpus (``tests/models``) and, with ``--conformance``, every ONNX node test whose model holds
a Loop, Scan, LSTM, GRU or RNN (ONNX's LinearAttention expansions among them): the model is compiled and its engine built for this machine's default target in float32, then with
``--fp16`` and with ``--bf16`` (the case's stated ``max-trips`` given, as a user must). Each half network that built
is run by loopc's simulator on the case's inputs and compared with the oracle (the framework's outputs for a corpus
case, the test's expected outputs for a node test): a float output by its largest error over the oracle's largest
magnitude, within :data:`loopc.precision.HALF_TOLERANCE`; an integer one (tokens, indices) element by element.

Each case runs in a child process, so a crash of TensorRT's builder is a row ("crashed"), not the end of the table.
Ends with the counts: built in float32, built in each half type, built and within tolerance.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import pathlib
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loopc.precision import HALF_TOLERANCE, Precision  # noqa: E402  (after the path)

CORPUS = ROOT / "tests" / "models"
HALVES = ("fp16", "bf16")


@dataclass
class Attempt:
    """One precision of one case: built or why not; for a half one, its distance from the oracle."""

    built: bool = False
    detail: str = ""
    #: Float outputs: the largest error over the oracle's largest magnitude (None: no float output, or not run).
    of_scale: float | None = None
    #: Integer outputs: the share of elements equal to the oracle's (None: no integer output, or not run).
    equal: float | None = None
    within: bool = False
    seconds: float = 0.0

    def cell(self, width: int = 60) -> str:
        if not self.built:
            text = self.detail.replace("|", "/")
            return "no: " + (text if len(text) <= width else text[: width - 1] + "…")
        parts = [] if self.of_scale is None else [f"{self.of_scale:.1e}"]
        parts += [] if self.equal is None else [f"{self.equal:.0%} equal"]
        verdict = "yes" if self.within or not self.detail else "built, " + self.detail
        return verdict + (f" ({', '.join(parts)})" if parts else "")


@dataclass
class Row:
    case: str
    attempts: dict[str, Attempt] = field(default_factory=dict)


# --- one case ---------------------------------------------------------------------------------------------------

def within_tolerance(got: Mapping[str, np.ndarray], oracle: Mapping[str, np.ndarray], half: str) -> Attempt:
    """The half network's outputs against the oracle's: floats by scale (:data:`HALF_TOLERANCE`), others equal."""
    worst, equal, problems = None, None, []
    for name, want in oracle.items():
        value = np.asarray(got.get(name)) if name in got else None
        if value is None or value.shape != want.shape:
            problems.append(f"{name}: {'missing' if value is None else f'shape {value.shape}, oracle {want.shape}'}")
            continue
        if want.dtype.kind != "f":
            same = float(np.mean(value == want)) if want.size else 1.0
            equal = same if equal is None else min(equal, same)
            if same < 1.0:
                problems.append(f"{name}: {same:.0%} of elements equal")
            continue
        finite = np.isfinite(want)
        if not np.array_equal(np.isfinite(value), finite) or not np.array_equal(value[~finite], want[~finite],
                                                                                 equal_nan=True):
            problems.append(f"{name}: NaN or infinite elements differ")
            continue
        error = float(np.abs(value[finite].astype(np.float64) - want[finite]).max(initial=0.0))
        scale = float(np.abs(want[finite].astype(np.float64)).max(initial=0.0))
        of_scale = error / scale if scale else (0.0 if error == 0 else math.inf)
        worst = of_scale if worst is None else max(worst, of_scale)
        if of_scale > HALF_TOLERANCE[half]:
            problems.append(f"{name}: {of_scale:.1e} of its scale")
    return Attempt(True, "; ".join(problems), worst, equal, not problems)


def attempt(model: Any, inputs: Mapping[str, np.ndarray], oracle: Mapping[str, np.ndarray] | None, half: str | None,
            max_trips: int | None = None, pinned: bool = False) -> Attempt:
    """Compile and build ``model`` in ``half`` (None: float32) and, for a half type with an oracle, simulate and
    compare. ``pinned``: the profile is the inputs' shapes (node tests); else loopc's default profile, as with no
    flags."""
    from loopc.compiler import build_plan, compile
    from loopc.sim import Simulator
    from loopc.spelling import spelled
    from loopc.trt.config import build_serialized, builder_config, pin_profile

    start = time.perf_counter()
    precision = Precision(half)
    with spelled("command line"):
        try:
            compiled = compile(model, max_trips=max_trips, precision=precision)
            if pinned:
                cfg = builder_config(compiled.session, precision=precision)
                names = {compiled.network.get_input(i).name for i in range(compiled.network.num_inputs)}
                pin_profile(compiled.session, compiled.network, cfg, {k: v for k, v in inputs.items() if k in names})
                build_serialized(compiled.session, compiled.network, cfg)
            else:
                build_plan(compiled, warn=lambda message: None)
        except Exception as exc:  # noqa: BLE001  (a refusal or an internal error is a row here)
            return Attempt(False, _one_line(exc), seconds=time.perf_counter() - start)
        if half is None or oracle is None:
            return Attempt(True, within=True, seconds=time.perf_counter() - start)
        try:
            sim = Simulator(compiled.network)
            feeds = {t.name: np.asarray(inputs[t.name]).astype(t.dtype, copy=False) for t in sim.network.inputs}
            got = sim.run(feeds)
        except Exception as exc:  # noqa: BLE001
            return Attempt(True, "simulator: " + _one_line(exc), seconds=time.perf_counter() - start)
    result = within_tolerance(got, oracle, half)
    result.seconds = time.perf_counter() - start
    return result


def corpus_row(case: Any, halves: Iterable[str] = HALVES) -> Row:
    """A corpus case in float32 and each half type (a half type only where float32 built)."""
    from loopc.fileio import load_arrays

    inputs, oracle = load_arrays(case.inputs), load_arrays(case.expected)
    row = Row(case.id, {"fp32": attempt(case.model, inputs, None, None, case.max_trips)})
    for half in halves:
        row.attempts[half] = (attempt(case.model, inputs, oracle, half, case.max_trips) if row.attempts["fp32"].built
                              else Attempt(False, "float32 does not build"))
    return row


def conformance_row(case: Any, halves: Iterable[str] = HALVES) -> Row:
    """An ONNX node test, its profile pinned to the test's inputs and its expected outputs the oracle."""
    from tests.conformance import _as_array

    model = case.model
    inputs, expected = case.data_sets[0]
    initializers = {init.name for init in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initializers]
    feeds = {k: a for k, a in zip(names, map(_as_array, inputs)) if a is not None}
    oracle = {o.name: a for o, a in zip(model.graph.output, map(_as_array, expected)) if a is not None}
    row = Row(f"node/{case.name}", {"fp32": attempt(model, feeds, None, None, pinned=True)})
    for half in halves:
        row.attempts[half] = (attempt(model, feeds, oracle, half, pinned=True) if row.attempts["fp32"].built
                              else Attempt(False, "float32 does not build"))
    return row


def loop_node_tests(pattern: str = "") -> list[Any]:
    """The ONNX node tests whose model holds a Loop, Scan, LSTM, GRU or RNN (as ``benchmarks/loop_conformance.py``
    picks them)."""
    from benchmarks.loop_conformance import has_loop
    from tests.conformance import node_test_cases

    return [c for c in node_test_cases(pattern or None) if has_loop(c)]


# --- a child process per case --------------------------------------------------------------------------------

def _child(kind: str, key: str, queue: Any) -> None:
    import logging

    logging.disable(logging.WARNING)
    if kind == "corpus":
        from tests.corpus import load_corpus

        case = next(c for c in load_corpus(CORPUS) if c.id == key)
        row = corpus_row(case)
    else:
        case = next(c for c in loop_node_tests() if c.name == key)
        row = conformance_row(case)
    queue.put(json.dumps(asdict(row)))


def isolated(kind: str, key: str, name: str, timeout: float = 1800.0) -> Row:
    """One row, computed in a child process: a builder that crashes or hangs costs its row only."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_child, args=(kind, key, queue))
    child.start()
    try:
        data = json.loads(queue.get(timeout=timeout))
    except Exception:  # noqa: BLE001  (the child died or hung)
        child.join(5)
        if child.is_alive():
            child.kill()
        why = f"crashed (exit {child.exitcode})" if child.exitcode else "timed out"
        return Row(name, {p: Attempt(False, why) for p in ("fp32", *HALVES)})
    child.join()
    return Row(data["case"], {k: Attempt(**v) for k, v in data["attempts"].items()})


# --- the table ------------------------------------------------------------------------------------------------

def counts(rows: list[Row]) -> dict[str, int]:
    found = {"cases": len(rows), "fp32 built": sum(r.attempts["fp32"].built for r in rows)}
    for half in HALVES:
        found[f"{half} built"] = sum(r.attempts[half].built for r in rows)
        found[f"{half} within tolerance"] = sum(r.attempts[half].built and r.attempts[half].within for r in rows)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", default="", help="only cases whose id contains this")
    parser.add_argument("--conformance", action="store_true", help="also the ONNX Loop/Scan node tests")
    parser.add_argument("--no-corpus", action="store_true", help="not the corpus (with --conformance)")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    jobs: list[tuple[str, str, str]] = []
    if not args.no_corpus:
        from tests.corpus import load_corpus

        jobs += [("corpus", c.id, c.id) for c in load_corpus(CORPUS) if args.k in c.id]
    if args.conformance:
        jobs += [("node", c.name, f"node/{c.name}") for c in loop_node_tests() if args.k in f"node/{c.name}"]
    tolerance = ", ".join(f"{h} {t:g}" for h, t in HALF_TOLERANCE.items())
    print(f"Half tolerance (largest error over the oracle's largest magnitude): {tolerance}\n")
    print("| case | fp32 built | fp16 | bf16 |")
    print("|---|---|---|---|")
    rows = []
    for kind, key, name in jobs:
        row = isolated(kind, key, name)
        rows.append(row)
        fp32 = row.attempts["fp32"]
        print(f"| {row.case} | {'yes' if fp32.built else fp32.cell()} | {row.attempts['fp16'].cell()} | "
              f"{row.attempts['bf16'].cell()} |", flush=True)
    found = counts(rows)
    print("\n" + ", ".join(f"{k}: {v}" for k, v in found.items()))
    missed = [r.case for r in rows if r.attempts["fp32"].built and not all(r.attempts[h].built for h in HALVES)]
    print("Built in float32 but not in a half type: " + (", ".join(missed) or "none"))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 1 if missed else 0


def _one_line(exc: BaseException) -> str:
    from loopc.errors import LoopcError

    kind = "" if isinstance(exc, LoopcError) else f"internal error: {type(exc).__name__}: "
    text = str(exc).strip().splitlines()
    return kind + (text[0] if text else "")


if __name__ == "__main__":
    sys.exit(main())

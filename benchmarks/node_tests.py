"""The whole ONNX node-test suite, per op: what TensorRT's parser builds, what loopc builds, and whether
loopc's simulated outputs are right — in one run.

For every node test shipped with the ``onnx`` package: TensorRT's own ONNX parser imports it and the real
builder builds it; loopc compiles it and the same builder builds it; loopc's network is then simulated and
compared with the test's expected outputs. Printed per op (the op a test is named after), then the cases
that matter: those the parser builds and loopc does not, and those loopc builds whose numbers are not right
(a wrong number is the worst outcome: every case loopc builds must match, or be refused in one line).

    python benchmarks/node_tests.py [-k NAME_SUBSTRING] [--jobs N] [--save results.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import pathlib
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import asdict
from functools import cache
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # for the tests package

from tests.conformance import INTERNAL_ERROR, MATCH, RANDOM, CaseResult, node_test_cases, run_case  # noqa: E402

#: Outcomes of loopc's side, in the order the table prints them.
CORRECT, REFUSED, WRONG, CRASHED, DRAWN = "correct", "refused", "wrong", "crashed", "random"


@cache
def _schema_names() -> list[str]:
    import onnx.defs

    return sorted({s.name for s in onnx.defs.get_all_schemas_with_history()}, key=len, reverse=True)


def op_of(case: Any) -> str:
    """The op a node test is about: the longest ONNX op name its test name starts with (``test_layer_
    normalization_2d_expanded`` → LayerNormalization), else its one node's op type."""
    stem = case.name.removeprefix("test_").replace("_", "").lower()
    for name in _schema_names():
        if stem.startswith(name.lower()):
            return name
    ops = sorted({n.op_type for n in case.model.graph.node})
    return ops[0] if len(ops) == 1 else "(" + "+".join(ops[:3]) + ")"


def outcome(ours: CaseResult) -> str:
    """loopc's side of one case: correct, refused (a one-line error, nothing built), wrong (built, then a
    mismatch or a simulator failure) or crashed (an internal error: a bug of loopc's)."""
    if ours.status == MATCH:
        return CORRECT
    if ours.status == RANDOM:  # built and simulated; random values compare with nothing
        return DRAWN
    if ours.built:
        return WRONG
    return CRASHED if ours.status == INTERNAL_ERROR else REFUSED


_CASES: list[Any] = []


def _init(pattern: str | None) -> None:
    _CASES.extend(node_test_cases(pattern))


def _run(index: int) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    case = _CASES[index]
    return case.name, op_of(case), asdict(_guarded(case, "trt-onnx")), asdict(_guarded(case, "loopc"))


def _guarded(case: Any, frontend: str) -> CaseResult:
    """One side of a case; anything it raises past its own error types is a crash of that side."""
    try:
        return run_case(case, frontend, judge=frontend != "trt-onnx")
    except Exception as exc:
        return CaseResult(case.name, INTERNAL_ERROR, detail=f"{type(exc).__name__}: {exc}")


def results(pattern: str | None, jobs: int) -> Iterator[tuple[str, str, CaseResult, CaseResult]]:
    """Each case's (name, op, parser's result, loopc's result), in suite order."""
    count = len(node_test_cases(pattern))
    if jobs <= 1:
        _init(pattern)
        rows: Iterator[Any] = map(_run, range(count))
    else:  # TensorRT does not survive fork; each worker loads the suite once, and is renewed now and then
        pool = multiprocessing.get_context("spawn").Pool(jobs, _init, (pattern,), maxtasksperchild=200)
        rows = pool.imap(_run, range(count), chunksize=4)
    for name, op, theirs, ours in rows:
        yield name, op, _result(theirs), _result(ours)


def _result(fields: dict[str, Any]) -> CaseResult:
    fields["layer_types"] = frozenset(fields["layer_types"])
    return CaseResult(**fields)


def table(rows: list[tuple[str, str, CaseResult, CaseResult]]) -> str:
    per_op: dict[str, list[tuple[str, CaseResult, CaseResult]]] = defaultdict(list)
    for name, op, theirs, ours in rows:
        per_op[op].append((name, theirs, ours))
    lines = [f"{'op':<34}{'tests':>6}{'parser built':>14}{'loopc built':>13}{'loopc correct':>15}{'refused':>9}"
             f"{'wrong':>7}{'crashed':>9}{'random':>8}"]
    for op in sorted(per_op):
        cases = per_op[op]
        outcomes = [outcome(o) for _, _, o in cases]
        lines.append(f"{op:<34}{len(cases):>6}{sum(t.built for _, t, _ in cases):>14}"
                     f"{sum(o.built for _, _, o in cases):>13}{outcomes.count(CORRECT):>15}"
                     f"{outcomes.count(REFUSED):>9}{outcomes.count(WRONG):>7}{outcomes.count(CRASHED):>9}"
                     f"{outcomes.count(DRAWN):>8}")
    parser_built = [r for r in rows if r[2].built]
    loopc_built = [r for r in rows if r[3].built]
    missing = [r for r in parser_built if r[3].status not in (MATCH, RANDOM)]
    wrong = [r for r in rows if outcome(r[3]) in (WRONG, CRASHED)]
    drawn = [r for r in loopc_built if r[3].status == RANDOM]
    beyond = [r for r in loopc_built if not r[2].built and r[3].status == MATCH]
    lines += [
        "",
        f"{len(rows)} node tests: TensorRT's parser built {len(parser_built)}; loopc built {len(loopc_built)}, "
        f"correct {sum(r[3].status == MATCH for r in rows)}; loopc built and correct where the parser did not: "
        f"{len(beyond)}",
        f"parser built, loopc not correct: {len(missing)}",
        *(f"  {name} [{op}]: {ours.status}: {ours.detail[:150]}" for name, op, _, ours in missing),
        f"loopc built with outputs not right, or crashed: {len(wrong)}",
        *(f"  {name} [{op}]: {ours.status}: {ours.detail[:150]}" for name, op, _, ours in wrong),
        f"loopc built, outputs random (shapes checked; values tested statistically by the op's tests): {len(drawn)}",
        *(f"  {name} [{op}]" for name, op, _, _ in drawn),
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", dest="pattern", help="only cases whose name contains this")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--save", help="write every case's two results to this JSON file")
    args = parser.parse_args()
    start = time.perf_counter()
    rows = []
    for row in results(args.pattern, args.jobs):
        rows.append(row)
        print(f"{len(rows)} {row[0]}: parser {row[2].status}; loopc {row[3].status}", file=sys.stderr, flush=True)
    print(table(rows))
    print(f"time: {time.perf_counter() - start:.0f} s")
    if args.save:
        with open(args.save, "w") as f:
            json.dump([{"name": n, "op": op, "parser": _plain(t), "loopc": _plain(o)} for n, op, t, o in rows], f,
                      indent=1)
    return 0


def _plain(result: CaseResult) -> dict[str, Any]:
    fields = asdict(result)
    fields["layer_types"] = sorted(fields["layer_types"])
    return fields


if __name__ == "__main__":
    sys.exit(main())

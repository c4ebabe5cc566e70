"""The corpus of real exports (``tests/models``), loopc side by side with TensorRT's own parser.

For each case: did ``loopc build MODEL -o X.plan`` succeed with no flags (or refuse, and why); with
the case's stated flags, do loopc's simulated outputs match the framework's eager outputs; did
TensorRT's parser + builder build it (with the same default profile for dynamic inputs), and do
its simulated outputs match. Ends with the counts and the check that loopc builds every case the
parser builds.

    python benchmarks/corpus_table.py [-k SUBSTRING]
"""

from __future__ import annotations

import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # for the tests package

from tests.corpus import Attempt, Case, build_with_loopc, build_with_parser, load_corpus, run  # noqa: E402

CORPUS = pathlib.Path(__file__).resolve().parents[1] / "tests" / "models"


def row(case: Case) -> tuple[bool, bool, bool, bool, str]:
    no_flags = build_with_loopc(case)
    flagged = no_flags if no_flags.ok or case.max_trips is None else build_with_loopc(case, case.max_trips)
    correct = run(case) if flagged.ok else Attempt(False, "not built")
    parser = build_with_parser(case)
    parser_correct = run(case, "trt-onnx") if parser.ok else Attempt(False, "not built")
    flags = f"--max-trips {case.max_trips}" if case.max_trips is not None else ""
    line = " | ".join([case.id, no_flags.cell(), flags, correct.cell(), parser.cell(), parser_correct.cell()])
    print(f"| {line} |", flush=True)
    return no_flags.ok, flagged.ok and correct.ok, parser.ok, parser_correct.ok, case.id


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only cases whose suite/name contains this")
    args = parser.parse_args()
    cases = [c for c in load_corpus(CORPUS) if args.k in c.id]
    print("| case | loopc, no flags | flags a user must give | loopc correct (max abs error) | "
          "TensorRT parser built | parser correct |")
    print("|---|---|---|---|---|---|")
    rows = [row(case) for case in cases]
    built, correct, parsed, parsed_ok = (sum(r[k] for r in rows) for k in range(4))
    missed = [r[4] for r in rows if r[2] and not r[1]]
    print(f"\n{len(rows)} cases: loopc built {built} with no flags, {correct} built and correct with the stated flags; "
          f"TensorRT's parser built {parsed}, {parsed_ok} correct.")
    print("Cases the parser builds and loopc does not build correctly: " + (", ".join(missed) or "none"))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

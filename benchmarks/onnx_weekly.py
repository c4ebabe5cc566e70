"""The next ONNX release's node tests, stamped with its opset: what loopc builds and gets right, beside
TensorRT's parser.

The ``onnx`` package loopc runs with knows opsets up to some N; the next release (``onnx-weekly`` on PyPI)
defines N + 1. Given a Python that has onnx-weekly installed (a separate virtual environment: the two
packages are one module), its node tests are written out as files (model.onnx, test_data_set_0/*.pb), then:

* the tests stamped with an opset newer than the installed onnx knows (the new ops' tests);
* every test the installed onnx also ships, restamped with the newest opset (and IR version) onnx-weekly
  defines, where none of its ops changed version between the test's opset and the installed onnx's
  newest one (restamped, such a model means what it meant; ``--as-stamped`` runs them as shipped);
* the tests onnx-weekly adds at opsets the installed onnx knows (the release's changed semantics), as shipped.

Each is imported by loopc and by TensorRT's own ONNX parser, built with the real builder, simulated and
compared with the test's expected outputs. Without an onnx-weekly install the script says so and stops.

    python -m venv /path/weekly && /path/weekly/bin/pip install onnx-weekly numpy
    python benchmarks/onnx_weekly.py /path/weekly [-k NAME_SUBSTRING] [--jobs N]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import pathlib
import subprocess
import sys
import tempfile
import time
from collections import Counter
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # for the tests package

#: Run by onnx-weekly's Python: every node test as files, and what the files cannot say.
_WRITE_CASES = r"""
import json, os, sys, warnings
import numpy as np
import onnx
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case.node import collect_testcases

out = sys.argv[1]
with warnings.catch_warnings(), np.errstate(all="ignore"):
    warnings.simplefilter("ignore")
    cases = collect_testcases(None)
facts = {"opset": onnx.defs.onnx_opset_version(), "ir_version": onnx.IR_VERSION, "onnx": onnx.__version__,
         "cases": {}}
for case in cases:
    folder = os.path.join(out, case.name, "test_data_set_0")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(out, case.name, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    inputs, outputs = case.data_sets[0]
    tensors = True
    for kind, values, infos in (("input", inputs, case.model.graph.input), ("output", outputs, case.model.graph.output)):
        for j, value in enumerate(values):
            if isinstance(value, TensorProto):
                tensor = value
            elif isinstance(value, (np.ndarray, np.generic)):
                tensor = numpy_helper.from_array(np.asarray(value), infos[j].name)
            else:
                tensors = False
                continue
            with open(os.path.join(folder, f"{kind}_{j}.pb"), "wb") as f:
                f.write(tensor.SerializeToString())
    facts["cases"][case.name] = {"rtol": case.rtol, "atol": case.atol, "tensors": tensors}
with open(os.path.join(out, "facts.json"), "w") as f:
    json.dump(facts, f)
"""


#: The kinds of case (see the module's docstring).
NEW, SHIPPED, ADDED = "tests of new ops", "tests both onnx releases ship", "tests added at known opsets"


def weekly_python(path: str) -> pathlib.Path | None:
    """The Python of an onnx-weekly install given as a virtual environment or an interpreter; None if none."""
    given = pathlib.Path(path)
    for candidate in (given, given / "bin" / "python", given / "Scripts" / "python.exe"):
        if candidate.is_file():
            return candidate
    return None


def write_cases(python: pathlib.Path, folder: pathlib.Path) -> dict[str, Any]:
    subprocess.run([str(python), "-c", _WRITE_CASES, str(folder)], check=True)
    facts: dict[str, Any] = json.loads((folder / "facts.json").read_text())
    return facts


def load_case(folder: pathlib.Path, facts: dict[str, Any], stamp: tuple[int, int] | None) -> Any:
    """A node-test case as :func:`tests.conformance.run_case` takes it; ``stamp`` = (ir_version, opset)
    restamps its model."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(folder / "model.onnx"))
    if stamp is not None:
        model.ir_version = stamp[0]
        for entry in model.opset_import:
            if entry.domain in ("", "ai.onnx"):
                entry.version = stamp[1]

    def read(kind: str) -> list[Any]:
        files = sorted((folder / "test_data_set_0").glob(f"{kind}_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
        return [numpy_helper.to_array(onnx.load_tensor(str(p))) for p in files]

    return SimpleNamespace(name=folder.name, model=model, data_sets=[(read("input"), read("output"))],
                           rtol=facts["rtol"], atol=facts["atol"])


def restampable(model: Any) -> bool:
    """Whether every default-domain op of ``model`` has the same version at its opset as at the installed
    onnx's newest (so that a newer stamp keeps its meaning)."""
    import onnx

    from loopc.onnx_graphs import all_nodes

    opset = next((e.version for e in model.opset_import if e.domain in ("", "ai.onnx")), 0)
    newest = onnx.defs.onnx_opset_version()
    for node in all_nodes(model.graph):
        if node.domain not in ("", "ai.onnx"):
            continue
        try:
            if onnx.defs.get_schema(node.op_type, opset).since_version != \
                    onnx.defs.get_schema(node.op_type, newest).since_version:
                return False
        except onnx.defs.SchemaError:
            return False
    return True


def _run(job: tuple[str, dict[str, Any], tuple[int, int] | None]) -> tuple[str, tuple[str, bool, str], tuple[str, bool, str]]:
    import warnings

    from tests.conformance import run_case

    path, facts, stamp = job
    warnings.simplefilter("ignore")  # each restamped model warns that its opset is newer than onnx knows
    case = load_case(pathlib.Path(path), facts, stamp)
    ours = run_case(case, "loopc")
    parser = run_case(case, "trt-onnx")
    return case.name, (ours.status, ours.built, ours.detail[:160]), (parser.status, parser.built, parser.detail[:160])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("weekly", nargs="?", help="an onnx-weekly install: its virtual environment or its python")
    parser.add_argument("-k", dest="pattern", help="only cases whose name contains this")
    parser.add_argument("--jobs", type=int, default=1, help="cases run in parallel (default 1)")
    parser.add_argument("--as-stamped", action="store_true",
                        help="run the tests the installed onnx also ships with their own stamp (a baseline)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case's outcome")
    args = parser.parse_args()
    python = weekly_python(args.weekly) if args.weekly else None
    if python is None:
        print("no onnx-weekly install given (a virtual environment or python with `pip install onnx-weekly`): "
              "nothing to measure")
        return 0
    import onnx

    from tests.conformance import MATCH, node_test_cases

    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        facts = write_cases(python, folder)
        installed = onnx.defs.onnx_opset_version()
        if facts["opset"] <= installed:
            print(f"onnx-weekly {facts['onnx']} knows opsets up to {facts['opset']}, the installed onnx "
                  f"{onnx.__version__} as many: nothing newer to measure")
            return 0
        shipped = {c.name for c in node_test_cases()}
        jobs: list[tuple[str, dict[str, Any], tuple[int, int] | None]] = []
        kinds: dict[str, str] = {}
        for name, case_facts in sorted(facts["cases"].items()):
            if args.pattern and args.pattern not in name or not case_facts["tensors"]:
                continue
            model = onnx.load(str(folder / name / "model.onnx"), load_external_data=False)
            opset = next((e.version for e in model.opset_import if e.domain in ("", "ai.onnx")), 0)
            if opset > installed:
                jobs.append((str(folder / name), case_facts, None))
                kinds[name] = NEW
            elif name in shipped and restampable(model):
                stamp = None if args.as_stamped else (facts["ir_version"], facts["opset"])
                jobs.append((str(folder / name), case_facts, stamp))
                kinds[name] = SHIPPED
            elif name not in shipped:
                jobs.append((str(folder / name), case_facts, None))
                kinds[name] = ADDED
        with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
            results = list(pool.imap_unordered(_run, jobs))
    table: Counter[tuple[str, str, str]] = Counter()
    built: Counter[tuple[str, str]] = Counter()
    for name, ours, theirs in sorted(results):
        for who, (status, made, _) in (("loopc", ours), ("parser", theirs)):
            table[(kinds[name], who, status)] += 1
            built[(kinds[name], who)] += made
        if args.verbose:
            print(f"{name} [{kinds[name]}]: loopc {ours[0]} {ours[2]} | parser {theirs[0]} {theirs[2]}")
    print(f"onnx-weekly {facts['onnx']} (opset {facts['opset']}, IR {facts['ir_version']}) beside the installed "
          f"onnx {onnx.__version__} (opset {installed})")
    for kind in (NEW, SHIPPED, ADDED):
        count = sum(k == kind for k in kinds.values())
        how = "as shipped" if kind == ADDED or kind == SHIPPED and args.as_stamped else f"stamped opset {facts['opset']}"
        print(f"\n{kind}, {how}: {count}")
        for who in ("loopc", "parser"):
            row = {status: n for (k, w, status), n in table.items() if k == kind and w == who}
            print(f"  {who:<7} built {built[(kind, who)]:>5}, matched {row.get(MATCH, 0):>5}   "
                  + ", ".join(f"{status}: {n}" for status, n in sorted(row.items())))
    print(f"\ntime: {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``loopc export`` over the samples, the OpenVINO samples and the corpus, next to TensorRT's own ONNX parser.

For each model: did TensorRT's parser (and builder, with loopc's default profile for dynamic inputs) build the
original; did it build loopc's export; does the export match the reference outputs in onnxruntime. Ends with
the counts, and the models whose loops loopc builds but whose export the parser does not, with its reason.

    python benchmarks/export_table.py [-k SUBSTRING]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile

import onnx

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # the tests package holds the model list

from tests.corpus import Attempt, Case, build_with_parser, compare
from loopc.exporter import export_model
from loopc.fileio import load_arrays
from tests.backend.onnx.cases import ExportCase, export_cases, onnxruntime_outputs  # noqa: E402


def parser_case(model: pathlib.Path) -> Case:
    return Case(model.stem, "", model, model, model)


def row(case: ExportCase, folder: pathlib.Path) -> tuple[bool, bool, bool, str]:
    original = build_with_parser(parser_case(case.model))
    try:
        proto, report = export_model(case.model, max_trips=case.max_trips)
    except Exception as exc:  # noqa: BLE001  (a refusal is a result here)
        exported, matched = Attempt(False, str(exc).splitlines()[0]), Attempt(False, "not exported")
    else:
        path = folder / (case.id.replace("/", "__") + ".onnx")
        onnx.save(proto, path)
        exported = build_with_parser(parser_case(path))
        feeds = load_arrays(case.inputs)
        try:
            matched = compare(onnxruntime_outputs(proto, feeds), case.reference(feeds), case.rtol, case.atol)
        except Exception as exc:  # noqa: BLE001
            matched = Attempt(False, str(exc).splitlines()[0])
    print(f"| {case.id} | {original.cell(60)} | {exported.cell(90)} | {matched.cell()} |", flush=True)
    return original.ok, exported.ok, matched.ok, exported.detail


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only models whose id contains this")
    args = parser.parse_args()
    cases = [c for c in export_cases() if args.k in c.id]
    print("| model | TensorRT parser built the original | TensorRT parser built the export | export matches "
          "in onnxruntime (max abs error) |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="loopc-export-table-") as tmp:
        rows = [row(case, pathlib.Path(tmp)) for case in cases]
    originals, exports, matched = (sum(r[k] for r in rows) for k in range(3))
    print(f"\n{len(rows)} models: the parser built {originals} originals and {exports} exports; "
          f"{matched} exports match in onnxruntime.")
    refused = [(c.id, r[3]) for c, r in zip(cases, rows) if not r[1]]
    for model, why in refused:
        print(f"- export not built by the parser: {model}: {why}")
    return 0 if matched == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())

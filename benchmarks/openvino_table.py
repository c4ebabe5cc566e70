"""The OpenVINO IR samples (``samples/openvino/cases.toml``), loopc against OpenVINO's CPU plugin.

For each sample: did ``loopc build MODEL.xml -o X.plan`` succeed with no flags (or with the
sample's ``max-trips``; or, where loopc's default profile for dynamic inputs is one TensorRT cannot
build, with ``--inputs`` pinning the example's shapes), and do loopc's simulated outputs match OpenVINO running the same IR at f32
inference precision (worst absolute difference shown). Samples loopc must refuse say whether the
refusal was the stated one. Ends with the counts.

    python benchmarks/openvino_table.py [-k SUBSTRING]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tomllib

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # for the tests package

from loopc import api  # noqa: E402
from loopc.fileio import load_arrays  # noqa: E402
from tests.corpus import Attempt, Case, build_with_loopc, compare, openvino_outputs  # noqa: E402

SAMPLES = pathlib.Path(__file__).resolve().parents[1] / "samples" / "openvino"


def row(entry: dict) -> str:
    """One sample's line; returns its outcome: built+matched, refused as stated, or failed."""
    inputs_path = SAMPLES / entry.get("inputs", f"{entry['name']}_inputs.npz")
    case = Case(inputs_path.name.removesuffix("_inputs.npz"), "openvino", SAMPLES / f"{entry['name']}.xml",
                inputs_path, inputs_path, entry.get("about", ""), entry.get("rtol", 1e-4), entry.get("atol", 1e-5),
                entry.get("max-trips"))
    built = build_with_loopc(case, case.max_trips)
    pinned = not built.ok and not entry.get("loopc-refuses")
    if pinned:  # a default profile TensorRT cannot build with: give the example's shapes, as the error says
        built = build_with_loopc(case, case.max_trips, pin_inputs=True)
    refusal = entry.get("loopc-refuses")
    expected_refusal = [refusal] if isinstance(refusal, str) else refusal or []
    if expected_refusal:
        stated = not built.ok and all(part in built.detail for part in expected_refusal)
        outcome, matched = ("refused as stated" if stated else "failed"), Attempt(False, "refused")
    else:
        inputs = load_arrays(case.inputs)
        try:
            matched = compare(api.run(case.model, inputs, max_trips=case.max_trips),
                              openvino_outputs(case.model, inputs), case.rtol, case.atol) if built.ok \
                else Attempt(False, "not built")
        except Exception as exc:  # noqa: BLE001  (a failure is a result here)
            matched = Attempt(False, f"{type(exc).__name__}: {exc}".splitlines()[0])
        outcome = "matched" if built.ok and matched.ok else "failed"
    flags = " ".join(([f"--max-trips {case.max_trips}"] if case.max_trips else []) +
                     ([f"--inputs {case.inputs.name}"] if pinned else []))
    forms = ", ".join(entry.get("forms", []))
    print(f"| {case.name} | {forms} | {built.cell()} | {flags} | {matched.cell()} |", flush=True)
    return outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only samples whose name contains this")
    args = parser.parse_args()
    entries = [e for e in tomllib.loads((SAMPLES / "cases.toml").read_text())["sample"] if args.k in e["name"]]
    print("| sample | forms | loopc builds | flags | matches OpenVINO (max abs diff) |")
    print("|---|---|---|---|---|")
    outcomes = [row(entry) for entry in entries]
    print(f"\n{len(entries)} runs: {outcomes.count('matched')} built and matched OpenVINO, "
          f"{outcomes.count('refused as stated')} refused as stated, {outcomes.count('failed')} failed")
    return 0 if "failed" not in outcomes else 1


if __name__ == "__main__":
    sys.exit(main())

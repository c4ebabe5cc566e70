"""The OpenVINO IR samples (samples/openvino/cases.toml): each one builds with the real TensorRT builder
and its simulated outputs match OpenVINO's CPU plugin running the same IR — or loopc refuses it with
the stated reason, where the manifest says so."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from loopc.errors import LoopcError
from tests.frontend.openvino.oracle import compare, run_loopc, run_openvino

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "openvino"
CASES: list[dict[str, Any]] = tomllib.loads((SAMPLES / "cases.toml").read_text())["sample"]

#: Every IR loop form the samples must cover: each port_map form, loop kind and nesting loopc reads, and the
#: RNN ops and file variants (f16 weights, IR v10, converters' output) real IRs have.
REQUIRED_FORMS = {
    "TensorIterator", "Loop", "LSTMCell-4", "GRUCell-3", "RNNCell opset1", "reverse slicing", "reversed concat",
    "part_size 2", "concat axis 0", "concat axis 1", "concat axis 2", "current_iteration i64 scalar",
    "current_iteration i32 [1]", "trip count -1", "execution_condition from data", "trip count input", "zero trips",
    "Loop sliced input", "invariant input", "non-carried last value", "Loop in Loop",
    "trip count from outer iteration", "TI in Loop", "Loop in TI", "If-8 in Loop", "LSTMSequence-5",
    "GRUSequence-5", "RNNSequence-5", "bidirectional", "sequence_lengths", "f16 Const -> Convert", "IR v10",
    "spec example", "convert_model ONNX", "convert_model TorchScript", "break", "growing torch.cat",
}

#: What a form looks like in the XML, for the forms a pattern can show: the manifest must not claim
#: a form its IR does not have.
FORM_PATTERNS = {
    "TensorIterator": r'type="TensorIterator"',
    "Loop": r'type="Loop"',
    "LSTMCell-4": r'type="LSTMCell" version="opset4"',
    "LSTMCell-1": r'type="LSTMCell" version="opset1"',
    "GRUCell-3": r'type="GRUCell" version="opset3"',
    "RNNCell opset1": r'type="RNNCell" version="opset1"',
    "reverse slicing": r'<input axis="\d+"[^>]* stride="-',
    "reversed concat": r'<output axis="\d+"[^>]* stride="-',
    "part_size 2": r'part_size="2"',
    "concat axis 0": r'<output axis="0"',
    "concat axis 1": r'<output axis="1"',
    "concat axis 2": r'<output axis="2"',
    "sliced input axis 0": r'<input axis="0"',
    "sliced input axis 1": r'<input axis="1"',
    "If-8 in Loop": r'type="If" version="opset8"',
    "LSTMSequence-5": r'type="LSTMSequence" version="opset5"',
    "GRUSequence-5": r'type="GRUSequence" version="opset5"',
    "RNNSequence-5": r'type="RNNSequence" version="opset5"',
    "f16 Const -> Convert": r'element_type="f16"',
    "IR v10": r'<net name="[^"]*" version="10"',
}


def inputs_file(case: dict[str, Any]) -> Path:
    return SAMPLES / case.get("inputs", f"{case['name']}_inputs.npz")


def case_id(case: dict[str, Any]) -> str:
    return inputs_file(case).name.removesuffix("_inputs.npz")


def test_manifest_lists_every_sample_and_covers_every_form() -> None:
    ids = [case_id(c) for c in CASES]
    assert len(ids) == len(set(ids)), "two manifest entries run the same IR on the same inputs"
    listed = {c["name"] for c in CASES}
    on_disk = {p.stem for p in SAMPLES.glob("*.xml")}
    assert on_disk == listed, f"IRs without an entry: {on_disk - listed}; entries without an IR: {listed - on_disk}"
    for case in CASES:
        for path in (SAMPLES / f"{case['name']}.xml", SAMPLES / f"{case['name']}.bin", inputs_file(case)):
            assert path.is_file(), f"{case_id(case)}: {path.name} is missing"
    missing = REQUIRED_FORMS - {form for c in CASES for form in c["forms"]}
    assert not missing, f"no sample has the forms {sorted(missing)}"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_manifest_forms_are_in_the_ir(case: dict[str, Any]) -> None:
    xml = (SAMPLES / f"{case['name']}.xml").read_text()
    for form in case["forms"]:
        if form in FORM_PATTERNS:
            assert re.search(FORM_PATTERNS[form], xml), f"{case['name']}.xml has no {form}"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_sample_matches_openvino(case: dict[str, Any]) -> None:
    xml = SAMPLES / f"{case['name']}.xml"
    feeds = dict(np.load(inputs_file(case)))
    want = run_openvino(xml, feeds)
    if "loopc-refuses" in case:
        with pytest.raises(LoopcError) as refusal:
            run_loopc(xml, feeds, case.get("max-trips"))
        expected = case["loopc-refuses"]
        for part in [expected] if isinstance(expected, str) else expected:
            assert part in str(refusal.value), f"loopc's refusal does not say {part!r}: {refusal.value}"
        return
    got = run_loopc(xml, feeds, case.get("max-trips"))
    compare(got, want, rtol=case.get("rtol", 1e-4), atol=case.get("atol", 1e-5))

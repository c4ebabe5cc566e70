"""``loopc check`` of half-precision builds: manifests' ``fp16`` / ``bf16`` / ``fp16-state`` / ``half-tolerance``,
the ``precision`` check (each output against the float32 network's, by scale) and its place in every report.

The comparison is checked on hand-computed arrays; the check on the project's RNN and the greedy decoder,
whose float32 network ``numbers`` still holds to the golden outputs and to onnxruntime.
"""

from __future__ import annotations

import json
import pathlib
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from loopc import api
from loopc.check.baseline import differences
from loopc.check.compare import compare_half
from loopc.check.manifest import DEFAULT_THRESHOLDS, Invalid, load_manifest
from loopc.precision import Precision
from loopc.trt import is_rtx
from tests.check.test_check import PROJECT, check, failures, project  # noqa: F401  (the fixture)

HALF_MANIFEST = """\
[defaults]
targets = ["sm89"]

[[model]]
name = "rnn_fp16"
path = "rnn.onnx"
inputs = "rnn_inputs.npz"
reference = "rnn_golden.npz"
fp16 = true
{rnn_extra}

[[model]]
name = "greedy_bf16"
path = "../../../samples/greedy_gru_decoder.onnx"
inputs = "../../../samples/greedy_gru_decoder_inputs.npz"
reference = "onnxruntime"
bf16 = true
fp16-state = true
"""

rtx_only = pytest.mark.skipif(not is_rtx(), reason="on datacenter TensorRT the builder picks half layers (a GPU "
                                                    "measures them)")


def write_manifest(project: pathlib.Path, rnn_extra: str = "") -> None:
    (project / "manifest.toml").write_text(HALF_MANIFEST.format(rnn_extra=rnn_extra))


# -- the comparison, on hand-computed values ------------------------------------------------------

def test_a_float_output_is_judged_by_its_error_over_its_largest_magnitude() -> None:
    fp32 = {"y": np.array([1.0, 2.0, -4.0], np.float32)}
    half = {"y": np.array([1.0, 2.02, -4.0], np.float32)}  # error 0.02 of scale 4: 0.005
    [passed] = compare_half(half, fp32, 1e-2)
    assert passed.passed and passed.max_abs == pytest.approx(0.02, rel=1e-5)
    assert passed.of_scale == pytest.approx(0.005, rel=1e-5) and passed.max_rel is None
    [failed] = compare_half(half, fp32, 1e-3)
    assert not failed.passed and failed.reason == "beyond 0.001 of its scale"


def test_integer_nonfinite_missing_and_reshaped_outputs() -> None:
    fp32 = {"tokens": np.array([3, 1, 4], np.int64), "nan": np.array([np.nan, 1.0], np.float32),
            "inf": np.array([np.inf, 1.0], np.float32), "gone": np.zeros(2, np.float32),
            "shape": np.zeros((2, 3), np.float32)}
    half = {"tokens": np.array([3, 1, 5], np.int64), "nan": np.array([1.0, 1.0], np.float32),
            "inf": np.array([np.inf, 1.0], np.float32), "shape": np.zeros((3, 2), np.float32)}
    found = {o.name: o for o in compare_half(half, fp32, 1e-2)}
    assert not found["tokens"].passed and found["tokens"].reason == "1 of 3 elements differ"
    assert not found["nan"].passed and "NaN or infinite" in found["nan"].reason
    assert found["inf"].passed and found["inf"].of_scale == 0.0  # the infinities agree; the rest is exact
    assert not found["gone"].passed and "no output 'gone'" in found["gone"].reason
    assert not found["shape"].passed and found["shape"].reason == "float32[3, 2], float32 network float32[2, 3]"
    [same] = compare_half({"t": np.array([7])}, {"t": np.array([7])}, 0.0)
    assert same.passed and same.reason == ""


# -- manifests --------------------------------------------------------------------------------------

@pytest.mark.parametrize("keys, reason", [
    ("fp16 = true\nbf16 = true", "fp16 and bf16 ask for two half types; give one"),
    ("fp16-state = true", "fp16-state puts loop state in the half type, which fp16 or bf16 chooses"),
    ("fp16 = 'yes'", "fp16 must be true or false, got 'yes'"),
    ("half-tolerance = 0.1", "half-tolerance bounds a half-precision build's error; give fp16 = true or bf16 = true"),
    ("fp16 = true\nhalf-tolerance = -1", "half-tolerance must be a finite number >= 0, got -1"),
])
def test_a_bad_precision_key_fails_that_model(tmp_path: pathlib.Path, keys: str, reason: str) -> None:
    (tmp_path / "m.onnx").write_bytes((PROJECT / "rnn.onnx").read_bytes())
    (tmp_path / "i.npz").write_bytes((PROJECT / "rnn_inputs.npz").read_bytes())
    (tmp_path / "manifest.toml").write_text(f"[[model]]\npath = 'm.onnx'\ninputs = 'i.npz'\nreference = "
                                            f"'onnxruntime'\n{keys}\n")
    [entry] = load_manifest(tmp_path / "manifest.toml").entries
    assert isinstance(entry, Invalid) and entry.reason == reason


def test_the_tolerance_defaults_to_the_half_types_own(project: pathlib.Path) -> None:
    write_manifest(project)
    rnn, greedy = load_manifest(project / "manifest.toml").entries
    assert not isinstance(rnn, Invalid) and not isinstance(greedy, Invalid)
    assert (rnn.precision, rnn.half_tolerance) == (Precision("fp16"), 1e-2)
    assert (greedy.precision, greedy.half_tolerance) == (Precision("bf16", half_state=True), 6e-2)


def test_a_change_of_precision_is_listed_against_the_baseline() -> None:
    [change] = differences({"loops": []}, {"loops": [], "precision": "fp16"}, DEFAULT_THRESHOLDS)
    assert (change.what, change.baseline, change.current, change.regression) == ("precision", "fp32", "fp16", False)


# -- the check --------------------------------------------------------------------------------------

@rtx_only
def test_half_builds_pass_their_precision_and_float32_numbers(project: pathlib.Path) -> None:
    write_manifest(project)
    report, markdown = project / "report.json", project / "report.md"
    code, out, junit = check(project, "--json", str(report), "--markdown", str(markdown), "--html",
                             str(project / "report.html"))
    assert code == 0, out
    names = [case.get("name") for case in ET.parse(junit).getroot().iter("testcase")]
    assert names == ["build [sm89]", "numbers [sm89]", "precision [sm89]", "fingerprint [sm89]"] * 2
    rnn, greedy = json.loads(report.read_text())["results"]
    assert (rnn["precision"], greedy["precision"]) == ("fp16", "bf16 (state too)")
    assert rnn["fingerprint"]["precision"] == "fp16"
    # the float32 network's numbers: as tight as an fp32 build's
    assert [o["name"] for o in rnn["outputs"]] == ["h"] and rnn["outputs"][0]["max_abs"] < 1e-5
    # the half network's error is what `loopc run --fp16` and `loopc run` give
    inputs = dict(np.load(PROJECT / "rnn_inputs.npz"))
    half = api.run(PROJECT / "rnn.onnx", inputs, fp16=True)["h"]
    fp32 = api.run(PROJECT / "rnn.onnx", inputs)["h"]
    [h] = rnn["against_fp32"]
    assert h["max_abs"] == pytest.approx(float(np.abs(half.astype(np.float64) - fp32).max()), rel=1e-6)
    assert 0 < h["of_scale"] <= 1e-2
    [tokens] = greedy["against_fp32"]
    assert tokens["passed"] and tokens["max_abs"] is None  # the same tokens
    assert f"fp16: {h['of_scale']:.3g} of scale against float32" in markdown.read_text()
    assert "Outputs in fp16 against the float32 network" in (project / "report.html").read_text()


@rtx_only
def test_a_half_build_beyond_its_tolerance_fails_precision_only(project: pathlib.Path) -> None:
    write_manifest(project, "half-tolerance = 1e-7")
    code, out, junit = check(project)
    assert code == 1
    [(where, (kind, message))] = failures(junit).items()
    assert where == ("loopc.check.rnn_fp16", "precision [sm89]") and kind == "precision"
    assert message.startswith("fp16 output 'h': max abs error ") and message.endswith(
        "of its scale, beyond 1e-07")
    assert "FAILED rnn_fp16@sm89 precision: fp16 output 'h'" in out

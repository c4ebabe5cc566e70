"""``loopc check`` on the test project (``tests/check/project``): it passes, and each kind of regression fails it.

Each regression is made by hand with a known effect: a changed weight (the numbers move, the
golden from onnxruntime does not), the loop unrolled (same numbers, no loop), one more H×H product
per trip (same numbers, H² = 256 more MACs per iteration), a missing model file, a malformed
manifest. The baseline is recorded by ``--update-baseline`` on the untouched project in the same
test, so the test holds on any machine and TensorRT version.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import onnx
import pytest
from click.testing import CliRunner

from loopc.cli import check as _check  # noqa: F401  (registers the subcommand)
from loopc.cli.main import cli
from tests.check.project import make_models

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROJECT = ROOT / "tests" / "check" / "project"
PAIRS = 6  # model × target pairs of the manifest: rnn on two targets, four samples on one


@pytest.fixture()
def project(tmp_path: pathlib.Path) -> pathlib.Path:
    """A copy of the project at the same depth, beside a link to the samples, so its relative paths hold."""
    copy = tmp_path / "tests" / "check" / "project"
    shutil.copytree(PROJECT, copy, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    (tmp_path / "samples").symlink_to(ROOT / "samples")
    return copy


def check(project: pathlib.Path, *args: str) -> tuple[int, str, pathlib.Path]:
    """Run ``loopc check`` on the project's manifest; return the exit code, stdout and the JUnit file."""
    junit = project / "junit.xml"
    result = CliRunner().invoke(cli, ["check", str(project / "manifest.toml"), "--junit", str(junit), *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, junit


def recorded(project: pathlib.Path) -> pathlib.Path:
    baseline = project / "baseline.json"
    code, out, _ = check(project, "--baseline", str(baseline), "--update-baseline")
    assert code == 0, out
    return baseline


def failures(junit: pathlib.Path) -> dict[tuple[str, str], tuple[str, str]]:
    """(classname, testcase name) → (failure type, message) for every failed testcase."""
    found = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        for failure in case.findall("failure"):
            found[(case.get("classname"), case.get("name"))] = (failure.get("type"), failure.get("message"))
    return found


def test_the_project_passes_against_its_baseline(project: pathlib.Path) -> None:
    baseline = recorded(project)
    report = project / "report.json"
    code, out, junit = check(project, "--baseline", str(baseline), "--json", str(report))
    assert code == 0, out
    cases = list(ET.parse(junit).getroot().iter("testcase"))
    assert len(cases) == PAIRS * 3  # build, numbers, fingerprint
    assert failures(junit) == {}
    data = json.loads(report.read_text())
    assert [r["model"] + "@" + r["target"] for r in data["results"]] == [
        "rnn@sm80", "rnn@sm89", "greedy_gru_decoder@sm89", "nested_loops@sm89", "loop_if@sm89",
        "gru_sequence_lengths@sm89"]
    rnn = data["results"][0]["fingerprint"]["loops"][0]
    assert rnn["trip_count"] == make_models.TRIPS
    assert rnn["macs_per_iteration"] == make_models.HIDDEN ** 2  # h (1×H) · R (H×H)
    assert len(rnn["critical_path"]) >= 3  # h → MatMul → Add → Tanh → next h: all serial


def regressed(project: pathlib.Path, variant: onnx.ModelProto, check_name: str) -> tuple[str, str]:
    """Record the baseline, swap in ``variant`` for rnn.onnx, check: exactly rnn's ``check_name`` fails, on both
    targets, as a JUnit failure of that type with a one-line message, which is returned with stdout."""
    baseline = recorded(project)
    onnx.save(variant, project / "rnn.onnx")
    code, out, junit = check(project, "--baseline", str(baseline))
    assert code == 1
    failed = failures(junit)
    assert set(failed) == {("loopc.check.rnn", f"{check_name} [sm80]"), ("loopc.check.rnn", f"{check_name} [sm89]")}
    kind, message = failed[("loopc.check.rnn", f"{check_name} [sm89]")]
    assert kind == check_name and "\n" not in message
    return message, out


def test_a_changed_weight_fails_the_numbers(project: pathlib.Path) -> None:
    message, out = regressed(project, make_models.reweighted(), "numbers")
    assert "output 'h'" in message and "max abs error" in message
    assert "FAILED rnn@sm89 numbers: output 'h'" in out


def test_an_unrolled_loop_fails_the_fingerprint(project: pathlib.Path) -> None:
    message, _ = regressed(project, make_models.unrolled(), "fingerprint")
    assert message.startswith("loop ") and "present -> gone" in message


def test_grown_work_per_iteration_fails_the_fingerprint(project: pathlib.Path) -> None:
    baseline = recorded(project)
    onnx.save(make_models.wider(), project / "rnn.onnx")
    report = project / "report.json"
    code, out, junit = check(project, "--baseline", str(baseline), "--json", str(report))
    assert code == 1
    assert set(failures(junit)) == {("loopc.check.rnn", "fingerprint [sm80]"), ("loopc.check.rnn", "fingerprint [sm89]")}
    rnn = json.loads(report.read_text())["results"][1]
    macs = [d for d in rnn["differences"] if d["what"].endswith("macs per iteration")]
    hidden = make_models.HIDDEN
    assert macs == [{"what": macs[0]["what"], "baseline": hidden ** 2, "current": 2 * hidden ** 2, "regression": True}]
    numbers = next(c for c in rnn["checks"] if c["check"] == "numbers")
    assert numbers["status"] == "passed"  # the identity product changes nothing but the work


def test_a_missing_model_file_fails_that_model_only(project: pathlib.Path) -> None:
    (project / "rnn.onnx").unlink()
    code, out, junit = check(project)
    assert code == 1
    failed = failures(junit)
    assert list(failed) == [("loopc.check.rnn", "manifest [-]")]
    kind, message = failed[("loopc.check.rnn", "manifest [-]")]
    assert kind == "manifest" and message == ("model file 'rnn.onnx' does not exist (paths are relative to the "
                                              "manifest)")
    assert len(list(ET.parse(junit).getroot().iter("testcase"))) == 1 + (PAIRS - 2) * 3


@pytest.mark.parametrize("text, reason", [
    ("[[model]\npath = 'x.onnx'\n", "not valid TOML"),
    ("[[model]]\npath = 'rnn.onnx'\ninputs = 'rnn_inputs.npz'\nreference = 'onnxruntime'\ncolour = 'red'\n",
     "unknown key(s) colour"),
    ("title = 'x'\n", "unknown top-level key(s) title"),
    ("[[model]]\npath = 'rnn.onnx'\ninputs = 'rnn_inputs.npz'\nreference = 'tensorflow'\n", "reference 'tensorflow'"),
    ("[[model]]\npath = 'rnn.onnx'\ninputs = 'rnn_inputs.npz'\nreference = 'onnxruntime'\ntargets = 'sm89'\n",
     "targets must be a non-empty list"),
])
def test_a_malformed_manifest_fails_with_one_line(project: pathlib.Path, text: str, reason: str) -> None:
    (project / "manifest.toml").write_text(text)
    code, out, junit = check(project)
    assert code == 1
    [(kind, message)] = failures(junit).values()
    assert kind == "manifest" and reason in message and "\n" not in message
    assert reason in out


def test_shards_merge_into_the_whole_run(project: pathlib.Path) -> None:
    parts = []
    for k in (1, 2, 3):
        part = project / f"shard{k}.json"
        code, out, _ = check(project, "--shard", f"{k}/3", "--json", str(part))
        assert code == 0, out
        parts.append(part)
    shards = [[r["model"] for r in json.loads(p.read_text())["results"]] for p in parts]
    assert shards == [["rnn", "rnn", "loop_if"], ["greedy_gru_decoder", "gru_sequence_lengths"], ["nested_loops"]]
    merged = project / "merged.json"
    result = CliRunner().invoke(cli, ["check", "--merge", *map(str, parts), "--json", str(merged)])
    assert result.exit_code == 0, result.output
    assert [r["model"] for r in json.loads(merged.read_text())["results"]] == [
        "rnn", "rnn", "greedy_gru_decoder", "nested_loops", "loop_if", "gru_sequence_lengths"]
    twice = CliRunner().invoke(cli, ["check", "--merge", str(parts[0]), str(parts[0])])
    assert twice.exit_code == 1 and "in two reports" in twice.output


@pytest.mark.parametrize("args", [["--shard", "3/2"], ["--shard", "x"], ["--update-baseline"],
                                  ["--merge", "--shard", "1/2"]])
def test_command_line_mistakes_are_usage_errors(project: pathlib.Path, args: list[str]) -> None:
    result = CliRunner().invoke(cli, ["check", str(project / "manifest.toml"), *args])
    assert result.exit_code == 2, result.output


def test_polygraphy_saved_outputs_are_a_reference(project: pathlib.Path) -> None:
    """Goldens from ``polygraphy run --onnxrt --save-outputs`` on the inputs Polygraphy saved from ours."""
    from polygraphy.json import save_json

    with np.load(project / "rnn_inputs.npz") as data:
        save_json([{name: data[name] for name in data.files}], str(project / "inputs.json"))
    polygraphy = pathlib.Path(sys.executable).with_name("polygraphy")
    subprocess.run([str(polygraphy), "run", str(project / "rnn.onnx"), "--onnxrt", "--load-inputs",
                    str(project / "inputs.json"), "--save-outputs", str(project / "golden.json")],
                   check=True, capture_output=True)
    (project / "manifest.toml").write_text(
        "[[model]]\nname = 'rnn'\npath = 'rnn.onnx'\ninputs = 'inputs.json'\nreference = 'golden.json'\n")
    code, out, junit = check(project)
    assert code == 0, out
    onnx.save(make_models.reweighted(), project / "rnn.onnx")  # and the golden still catches a change
    code, out, junit = check(project)
    assert code == 1 and "output 'h'" in out


def test_engines_are_kept_when_asked(project: pathlib.Path) -> None:
    (project / "manifest.toml").write_text(
        "[[model]]\nname = 'rnn'\npath = 'rnn.onnx'\ninputs = 'rnn_inputs.npz'\nreference = 'onnxruntime'\n"
        "targets = ['sm80', 'sm89']\n")
    code, out, _ = check(project, "--engines", str(project / "engines"))
    assert code == 0, out
    assert sorted(p.name for p in (project / "engines").iterdir()) == ["rnn@sm80.plan", "rnn@sm89.plan"]


def test_the_trt_executor_needs_a_gpu(project: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from loopc.trt import gpu

    monkeypatch.setattr(gpu, "available", lambda: False)
    code, out, junit = check(project, "--executor", "trt")
    assert code == 1 and not junit.exists()


@pytest.mark.gpu
def test_the_engines_run_on_the_gpu_through_polygraphy(project: pathlib.Path) -> None:
    """Numbers from the real engine of the target this GPU is; other targets' engines cannot run here."""
    from loopc.trt import gpu

    major, minor = gpu.compute_capability()  # type: ignore[misc]
    here = f"sm{major}{minor}"
    (project / "manifest.toml").write_text(
        "[[model]]\nname = 'rnn'\npath = 'rnn.onnx'\ninputs = 'rnn_inputs.npz'\nreference = 'rnn_golden.npz'\n"
        f"targets = ['{here}', '{'sm80' if here != 'sm80' else 'sm89'}']\n")
    report = project / "report.json"
    code, out, _ = check(project, "--executor", "trt", "--json", str(report))
    assert code == 0, out
    first, other = json.loads(report.read_text())["results"]
    assert [c["status"] for c in first["checks"] if c["check"] == "numbers"] == ["passed"]
    assert [c["status"] for c in other["checks"] if c["check"] == "numbers"] == ["skipped"]

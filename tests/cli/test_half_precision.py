"""``--fp16`` / ``--bf16`` / ``--fp16-state`` on the command line: ``build`` writes a half-precision engine and
says what it left in float32 and the float32 build's size; ``run`` simulates the half network, whose outputs
stay within half's rounding of onnxruntime's float32 ones; contradictory flags are one-line errors."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from click.testing import CliRunner

from loopc.cli import commands  # noqa: F401  (registers the subcommands)
from loopc.cli.main import cli
from loopc.errors import EXIT_INPUT
from loopc.trt import is_rtx
from tests.backend.onnx.cases import onnxruntime_outputs

MODELS = pathlib.Path(__file__).resolve().parents[1] / "models" / "torch"

pytestmark = pytest.mark.skipif(not is_rtx(), reason="datacenter TensorRT's --fp16 is its builder flag")


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_build_fp16_reports_what_stayed_float32_and_the_float32_size(tmp_path: pathlib.Path) -> None:
    plan, report = tmp_path / "lstm.plan", tmp_path / "report.json"
    code, text = invoke("build", str(MODELS / "lstm_cell_loop.onnx"), "-o", str(plan), "--fp16", "--report",
                        str(report))
    assert code == 0, text
    data = json.loads(report.read_text())["precision"]
    assert data["half"] == "fp16" and not data["half_state"] and data["half_nodes"] > 0 and data["weights"] > 0
    assert data["fp32_engine_bytes"] > 0 and plan.stat().st_size == json.loads(report.read_text())["engine_bytes"]
    states = [k for k in data["kept_fp32"] if k["op"] == "recurrence"]
    assert len(states) == 2  # the LSTM's h and c, kept in float32 by default
    assert "fp16:" in text and "left in float32:" in text and "loop-carried state" in text
    code, text = invoke("build", str(MODELS / "lstm_cell_loop.onnx"), "-o", str(plan), "--fp16", "--fp16-state",
                        "--report", str(report))
    assert code == 0, text
    assert not [k for k in json.loads(report.read_text())["precision"]["kept_fp32"] if k["op"] == "recurrence"]


@pytest.mark.parametrize(("flag", "tolerance"), [("--fp16", 1e-2), ("--bf16", 6e-2)])
def test_run_simulates_the_half_network(tmp_path: pathlib.Path, flag: str, tolerance: float) -> None:
    """The half network's outputs against onnxruntime's float32 ones, within half's documented tolerance, and
    not equal to them (the rounding shows)."""
    inputs, out = MODELS / "gru_cell_loop.inputs.npz", tmp_path / "out.npz"
    code, text = invoke("run", str(MODELS / "gru_cell_loop.onnx"), "-i", str(inputs), "-o", str(out), flag)
    assert code == 0, text
    got = dict(np.load(out))
    want = onnxruntime_outputs(MODELS / "gru_cell_loop.onnx", dict(np.load(inputs)))
    for name, expected in want.items():
        error = np.abs(got[name] - expected).max()
        assert 0 < error <= tolerance * np.abs(expected).max(), name


def test_contradictory_flags_are_refused(tmp_path: pathlib.Path) -> None:
    plan = tmp_path / "x.plan"
    code, text = invoke("build", str(MODELS / "lstm_cell_loop.onnx"), "-o", str(plan), "--fp16", "--bf16")
    assert code == EXIT_INPUT and "--fp16 and --bf16 ask for two half types" in text and not plan.exists()
    code, text = invoke("build", str(MODELS / "lstm_cell_loop.onnx"), "-o", str(plan), "--fp16-state")
    assert code == EXIT_INPUT and "--fp16-state puts loop state in the half type" in text and not plan.exists()
    code, text = invoke("run", str(MODELS / "lstm_cell_loop.onnx"), "--frontend", "trt-onnx", "--fp16")
    assert code == EXIT_INPUT and "TensorRT's own parser" in text

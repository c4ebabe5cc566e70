"""``loopc check``'s MAC gate on a convolving loop: a UNet-like step whose channels grow from 8 to 16 fails it.

The step, three trips of ``x ← x + 0.1 · Conv(Relu(Conv(x, w1)), w2)`` on x [1, 3, 8, 8], both 3x3 convolutions
padded 1 (8 x 8 positions out): ``w1`` takes 3 channels to C, ``w2`` C back to 3, so one iteration is
1 · C · 64 · 3 · 9 + 1 · 3 · 64 · C · 9 = 3,456 · C MACs. Engine size is let grow freely here, so that the
MAC gate alone must catch the wider model (before convolutions were counted, only engine size did).
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import onnx
import onnx.parser
from click.testing import CliRunner
import pytest
from onnx import numpy_helper

from loopc.check import runner
from loopc.cli import check as _check  # noqa: F401  (registers the subcommand)
from loopc.cli.main import cli

STEP = """<ir_version: 8, opset_import: ["" : 17]>
g (float[1,3,8,8] x) => (float[1,3,8,8] y) {
    trips = Constant <value = int64 {3}> ()
    y = Loop (trips, "", x) <body = step (int64 i, bool c, float[1,3,8,8] x_in) => (bool c_out, float[1,3,8,8] x_out) {
        h = Conv <pads = [1, 1, 1, 1]> (x_in, w1)
        r = Relu (h)
        d = Conv <pads = [1, 1, 1, 1]> (r, w2)
        tenth = Constant <value = float {0.1}> ()
        scaled = Mul (d, tenth)
        x_out = Add (x_in, scaled)
        c_out = Identity (c)
    }>
}"""

MANIFEST = """[thresholds]
engine-size = 1000.0

[[model]]
name = "unet"
path = "unet.onnx"
inputs = "unet_inputs.npz"
reference = "onnxruntime"
"""


def unet_step(channels: int) -> onnx.ModelProto:
    model = onnx.parser.parse_model(STEP)
    rng = np.random.default_rng(channels)
    model.graph.initializer.extend([
        numpy_helper.from_array((rng.standard_normal((channels, 3, 3, 3)) * 0.1).astype(np.float32), "w1"),
        numpy_helper.from_array((rng.standard_normal((3, channels, 3, 3)) * 0.1).astype(np.float32), "w2"),
    ])
    return model


def check(project: pathlib.Path, *args: str) -> int:
    result = CliRunner().invoke(cli, ["check", str(project / "manifest.toml"), *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code


def test_wider_convolutions_fail_the_mac_gate(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "reference_build_seconds", lambda target: 1.0)  # build time is not checked here
    (tmp_path / "manifest.toml").write_text(MANIFEST)
    np.savez(tmp_path / "unet_inputs.npz", x=np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32))
    onnx.save(unet_step(8), tmp_path / "unet.onnx")
    baseline, report = tmp_path / "baseline.json", tmp_path / "report.json"
    assert check(tmp_path, "--baseline", str(baseline), "--update-baseline") == 0
    (recorded,) = json.loads(baseline.read_text())["fingerprints"].values()
    assert recorded["loops"][0]["macs_per_iteration"] == 3_456 * 8 == 27_648
    assert recorded["loops"][0]["convolutions_per_iteration"] == 2

    onnx.save(unet_step(16), tmp_path / "unet.onnx")
    assert check(tmp_path, "--baseline", str(baseline), "--json", str(report)) == 1

    (result,) = json.loads(report.read_text())["results"]
    failed = [c["check"] for c in result["checks"] if c["status"] == "failed"]
    assert failed == ["fingerprint"]  # the numbers still match onnxruntime's
    regressions = [(d["what"].split(": ")[-1], d["baseline"], d["current"]) for d in result["differences"]
                   if d["regression"]]
    assert regressions == [("macs per iteration", 27_648, 3_456 * 16)]

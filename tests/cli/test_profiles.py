"""``loopc build`` without flags: dynamic inputs get the documented default range, one warning each,
recorded in ``--report``; ``--inputs`` takes the profile from example inputs; the samples' inputs fit."""

from __future__ import annotations

import json
import pathlib
import warnings

import numpy as np
import onnx
import onnx.parser
import pytest
from click.testing import CliRunner

import loopc
from loopc.cli import commands  # noqa: F401  (registers the subcommands)
from loopc.cli.main import cli
from tests.cli.test_shapes import COUNTED  # a loop whose trip count is an input (a shape tensor)

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
#: The documented default: min 1, opt 8, max 64 for each dynamic dim and each shape-tensor value.
LOW, MID, HIGH = 1, 8, 64
OVERRIDE = "set them with --shapes/--min-shapes/--opt-shapes/--max-shapes or --inputs"

#: An RNN-style scan over a [batch, seq, 4] input with a [batch, 4] initial state and a static bias.
DYNAMIC = """<ir_version: 8, opset_import: ["" : 17]>
g (float[batch,seq,4] x, float[batch,4] h0, float[4] bias) => (float[batch,4] h, float[seq,batch,4] hs) {
    xt = Transpose <perm = [1, 0, 2]> (x)
    h, hs = Scan <num_scan_inputs = 1,
                  body = b (float[batch,4] acc, float[batch,4] row) => (float[batch,4] acc_out, float[batch,4] p) {
        s = Add (acc, row)
        t = Add (s, bias)
        acc_out = Tanh (t)
        p = Identity (acc_out)
    }> (h0, xt)
}"""


def save(text: str, path: pathlib.Path) -> pathlib.Path:
    onnx.save(onnx.parser.parse_model(text), path)
    return path


def build(*args: str) -> object:
    return CliRunner().invoke(cli, ["build", *args])


def warnings_in(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("loopc: warning: ")]


def test_dynamic_batch_and_sequence_build_without_flags(tmp_path: pathlib.Path) -> None:
    model = save(DYNAMIC, tmp_path / "rnn.onnx")
    plan, report = tmp_path / "rnn.plan", tmp_path / "rnn.json"
    result = build(str(model), "-o", str(plan), "--report", str(report))
    assert result.exit_code == 0, result.output
    assert plan.stat().st_size > 1000
    assert warnings_in(result.output) == [
        f"loopc: warning: input 'x' has dynamic dims (batch, seq, 4); using min {LOW}x{LOW}x4 opt {MID}x{MID}x4 "
        f"max {HIGH}x{HIGH}x4; {OVERRIDE}",
        f"loopc: warning: input 'h0' has dynamic dims (batch, 4); using min {LOW}x4 opt {MID}x4 max {HIGH}x4; "
        f"{OVERRIDE}",
    ]
    inputs = json.loads(report.read_text())["inputs"]
    assert list(inputs) == ["x", "h0", "bias"]
    assert inputs["x"] == {"source": "default", "dtype": "float32", "declared": ["batch", "seq", 4],
                           "min": [LOW, LOW, 4], "opt": [MID, MID, 4], "max": [HIGH, HIGH, 4],
                           "shape_tensor": False, "values": None}
    assert inputs["bias"]["source"] == "static" and inputs["bias"]["min"] == inputs["bias"]["max"] == [4]


def test_explicit_shapes_win_and_named_dims_follow_them(tmp_path: pathlib.Path) -> None:
    """--shapes x:2x5x4 fixes batch = 2, so h0 (whose first dim is also 'batch') gets 2, not the default."""
    model = save(DYNAMIC, tmp_path / "rnn.onnx")
    report = tmp_path / "rnn.json"
    result = build(str(model), "-o", str(tmp_path / "rnn.plan"), "--shapes", "x:2x5x4", "--report", str(report))
    assert result.exit_code == 0, result.output
    assert [line.split("'")[1] for line in warnings_in(result.output)] == ["h0"]
    inputs = json.loads(report.read_text())["inputs"]
    assert (inputs["x"]["source"], inputs["x"]["min"], inputs["x"]["max"]) == ("shapes", [2, 5, 4], [2, 5, 4])
    assert (inputs["h0"]["source"], inputs["h0"]["min"], inputs["h0"]["max"]) == ("default", [2, 4], [2, 4])


def test_trip_count_input_builds_without_flags(tmp_path: pathlib.Path) -> None:
    model = save(COUNTED, tmp_path / "counted.onnx")
    plan, report = tmp_path / "counted.plan", tmp_path / "counted.json"
    result = build(str(model), "-o", str(plan), "--report", str(report))
    assert result.exit_code == 0, result.output
    assert plan.stat().st_size > 1000
    assert warnings_in(result.output) == [
        "loopc: warning: input 'n' is a shape tensor (TensorRT computes shapes from its values, e.g. a trip count); "
        f"using values min {LOW} opt {MID} max {HIGH}; {OVERRIDE}"
    ]
    n = json.loads(report.read_text())["inputs"]["n"]
    assert n["shape_tensor"] and n["source"] == "default"
    assert n["values"] == {"min": [LOW], "opt": [MID], "max": [HIGH]}


def test_inputs_pin_the_profile_to_the_example(tmp_path: pathlib.Path) -> None:
    model = save(DYNAMIC, tmp_path / "rnn.onnx")
    example = tmp_path / "example.npz"
    np.savez(example, x=np.zeros((3, 7, 4), np.float32), h0=np.zeros((3, 4), np.float32))
    report = tmp_path / "pinned.json"
    result = build(str(model), "-o", str(tmp_path / "pinned.plan"), "--inputs", str(example), "--report", str(report))
    assert result.exit_code == 0, result.output
    assert warnings_in(result.output) == []
    inputs = json.loads(report.read_text())["inputs"]
    assert inputs["x"]["source"] == inputs["h0"]["source"] == "inputs"
    assert inputs["x"]["min"] == inputs["x"]["opt"] == inputs["x"]["max"] == [3, 7, 4]
    assert inputs["h0"]["min"] == inputs["h0"]["opt"] == inputs["h0"]["max"] == [3, 4]


def test_inputs_give_opt_when_min_and_max_shapes_name_the_input(tmp_path: pathlib.Path) -> None:
    model = save(DYNAMIC, tmp_path / "rnn.onnx")
    example = tmp_path / "example.npz"
    np.savez(example, x=np.zeros((3, 7, 4), np.float32))  # h0 is left to the default (batch: x's range)
    report = tmp_path / "ranged.json"
    result = build(str(model), "-o", str(tmp_path / "ranged.plan"), "--inputs", str(example),
                   "--min-shapes", "x:1x1x4", "--max-shapes", "x:16x32x4", "--report", str(report))
    assert result.exit_code == 0, result.output
    inputs = json.loads(report.read_text())["inputs"]
    assert inputs["x"]["source"] == "inputs+shapes"
    assert (inputs["x"]["min"], inputs["x"]["opt"], inputs["x"]["max"]) == ([1, 1, 4], [3, 7, 4], [16, 32, 4])
    assert (inputs["h0"]["min"], inputs["h0"]["opt"], inputs["h0"]["max"]) == ([1, 4], [3, 4], [16, 4])


def test_inputs_give_shape_tensor_values(tmp_path: pathlib.Path) -> None:
    model = save(COUNTED, tmp_path / "counted.onnx")
    example = tmp_path / "example.npz"
    np.savez(example, n=np.array(5), x=np.zeros(3, np.float32))
    report = tmp_path / "counted.json"
    result = build(str(model), "-o", str(tmp_path / "c.plan"), "--inputs", str(example), "--report", str(report))
    assert result.exit_code == 0, result.output
    n = json.loads(report.read_text())["inputs"]["n"]
    assert (n["source"], n["values"]) == ("inputs", {"min": [5], "opt": [5], "max": [5]})


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"y": np.zeros(3, np.float32)}, "--inputs: unknown input 'y'; the model's inputs are x, h0, bias"),
        ({"x": np.zeros((3, 7, 5), np.float32)}, "--inputs: input 'x' has shape 3x7x5; the model expects "
                                                 "(batch, seq, 4)"),
        ({"x": np.zeros((3, 4), np.float32)}, "--inputs: input 'x' has shape 3x4 (rank 2); the model expects rank 3: "
                                              "(batch, seq, 4)"),
        ({"x": np.zeros((3, 7, 4), np.int32)}, "--inputs: input 'x' has int32 data (integers); the model expects "
                                               "float32 (floating point): convert it first"),
    ],
    ids=["unknown-name", "wrong-dim", "wrong-rank", "wrong-kind"],
)
def test_bad_inputs_are_one_line_naming_the_input(tmp_path: pathlib.Path, arrays: dict[str, np.ndarray],
                                                  message: str) -> None:
    model = save(DYNAMIC, tmp_path / "rnn.onnx")
    example, plan = tmp_path / "bad.npz", tmp_path / "bad.plan"
    np.savez(example, **arrays)
    result = build(str(model), "-o", str(plan), "--inputs", str(example))
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == f"loopc: error: {message}"
    assert not plan.exists()


def test_a_failing_build_with_a_default_profile_says_so(tmp_path: pathlib.Path) -> None:
    """No range of shape values can reshape 12 elements; the error names the defaulted input and the fix."""
    model = save('<ir_version: 8, opset_import: ["" : 17]>\n'
                 "g (int64[2] s, float[12] x) => (float[?,?] y) { y = Reshape (x, s) }", tmp_path / "reshape.onnx")
    result = build(str(model), "-o", str(tmp_path / "r.plan"))
    assert result.exit_code == 1
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("loopc: error: TensorRT could not build the network")
    assert last.endswith("(input(s) s had loopc's default profile; give their shapes or values with --shapes "
                         "or --inputs)")


def test_python_build_has_the_same_default(tmp_path: pathlib.Path) -> None:
    model = save(COUNTED, tmp_path / "counted.onnx")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = loopc.build(str(model), str(tmp_path / "api.plan"))
    assert [str(w.message).split(";")[0] for w in caught] == [
        "input 'n' is a shape tensor (TensorRT computes shapes from its values, e.g. a trip count)"]
    assert report.inputs["n"].values == {"min": [LOW], "opt": [MID], "max": [HIGH]}
    pinned = loopc.build(str(model), str(tmp_path / "pinned.plan"), inputs={"n": np.array(3)})
    assert pinned.inputs["n"].values == {"min": [3], "opt": [3], "max": [3]}


@pytest.mark.parametrize("sample", sorted(p.stem for p in SAMPLES.glob("*.onnx")))
def test_samples_build_without_flags_for_their_inputs(sample: str, tmp_path: pathlib.Path) -> None:
    """Each README sample builds with no flags, and its sample inputs lie inside the recorded profile."""
    report = tmp_path / "report.json"
    result = build(str(SAMPLES / f"{sample}.onnx"), "-o", str(tmp_path / "s.plan"), "--report", str(report))
    assert result.exit_code == 0, result.output
    profiles = json.loads(report.read_text())["inputs"]
    with np.load(SAMPLES / f"{sample}_inputs.npz", allow_pickle=False) as data:
        feeds = {name: data[name] for name in data.files}
    assert sorted(feeds) == sorted(profiles)
    for name, value in feeds.items():
        prof = profiles[name]
        assert len(value.shape) == len(prof["min"]), name
        assert all(lo <= d <= hi for lo, d, hi in zip(prof["min"], value.shape, prof["max"])), (name, value.shape)
        if prof["shape_tensor"]:
            flat = [int(v) for v in value.ravel()]
            values = prof["values"]
            assert all(lo <= v <= hi for lo, v, hi in zip(values["min"], flat, values["max"])), (name, flat)

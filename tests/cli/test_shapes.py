"""Dynamic inputs: trtexec-style --shapes / --min/opt/max-shapes, and clear errors for shapes that cannot be."""

from __future__ import annotations

import json
import pathlib

import onnx
import onnx.parser
import pytest
from click.testing import CliRunner

from loopc.cli import commands  # noqa: F401  (registers the subcommands)
from loopc.cli.main import cli
from loopc.errors import LoopcError
from loopc.profiles import parse_shapes

DYNAMIC_SCAN = """<ir_version: 8, opset_import: ["" : 17]>
g (float[T,3] x, float[3] s0) => (float[3] s, float[T,3] partials) {
    s, partials = Scan <num_scan_inputs = 1, body = b (float[3] acc, float[3] row) => (float[3] acc_out, float[3] p) {
        acc_out = Add (acc, row)
        p = Identity (acc_out)
    }> (s0, x)
}"""


@pytest.fixture
def model(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "scan.onnx"
    onnx.save(onnx.parser.parse_model(DYNAMIC_SCAN), path)
    return path


def build(*args: str) -> object:
    return CliRunner().invoke(cli, ["build", *args])


def test_shapes_pin_the_dynamic_dimension(model: pathlib.Path, tmp_path: pathlib.Path) -> None:
    plan = tmp_path / "a.plan"
    result = build(str(model), "-o", str(plan), "--shapes", "x:7x3")
    assert result.exit_code == 0, result.output
    assert plan.stat().st_size > 1000


def test_min_opt_max_shapes(model: pathlib.Path, tmp_path: pathlib.Path) -> None:
    plan = tmp_path / "b.plan"
    result = build(str(model), "-o", str(plan), "--min-shapes", "x:1x3", "--opt-shapes", "x:8x3",
                   "--max-shapes", "x:64x3")
    assert result.exit_code == 0, result.output
    assert plan.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--shapes", "x:7x4"), "--shapes x:7x4 does not fit the input's shape ?x3"),
        (("--shapes", "y:7x3"), "--shapes names y, which the model has no input called"),
        (("--min-shapes", "x:1x3"), "input 'x' needs all of --min-shapes, --opt-shapes and --max-shapes "
                                    "(or an example of it in --inputs)"),
        (("--min-shapes", "x:9x3", "--opt-shapes", "x:8x3", "--max-shapes", "x:64x3"),
         "input 'x': min 9x3, opt 8x3, max 64x3 are not in order (each needs min <= opt <= max)"),
    ],
)
def test_shape_mistakes_are_one_line(model: pathlib.Path, tmp_path: pathlib.Path, args: tuple[str, ...],
                                     message: str) -> None:
    plan = tmp_path / "c.plan"
    result = build(str(model), "-o", str(plan), *args)
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == f"loopc: error: {message}"
    assert not plan.exists()


def test_shape_spec_syntax() -> None:
    assert parse_shapes("x:1x3x224, n:") == {"x": (1, 3, 224), "n": ()}
    with pytest.raises(LoopcError, match="dimensions must be integers"):
        parse_shapes("x:1xAx3")


COUNTED = """<ir_version: 8, opset_import: ["" : 17]>
g (int64 n, float[3] x) => (float[3] y, float[K,3] ys) {
    y, ys = Loop (n, "", x) <body = b (int64 i, bool c, float[3] x_in) => (bool c_out, float[3] x_out, float[3] s) {
        one = Constant <value = float {1}> ()
        x_out = Add (x_in, one)
        s = Identity (x_out)
        c_out = Identity (c)
    }>
}"""


def test_trip_count_input_takes_its_values_from_the_shapes_options(tmp_path: pathlib.Path) -> None:
    """A trip count fed by an input is a shape tensor; as in trtexec, its --shapes entry gives values."""
    path = tmp_path / "counted.onnx"
    onnx.save(onnx.parser.parse_model(COUNTED), path)
    plan, report = tmp_path / "d.plan", tmp_path / "d.json"
    result = build(str(path), "-o", str(plan), "--min-shapes", "n:2", "--opt-shapes", "n:5", "--max-shapes", "n:9",
                   "--report", str(report))
    assert result.exit_code == 0, result.output
    assert plan.stat().st_size > 1000
    assert "warning" not in result.output
    n = json.loads(report.read_text())["inputs"]["n"]
    assert (n["source"], n["shape_tensor"], n["values"]) == ("shapes", True, {"min": [2], "opt": [5], "max": [9]})


def test_shape_tensor_values_must_match_its_size(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "counted.onnx"
    onnx.save(onnx.parser.parse_model(COUNTED), path)
    result = build(str(path), "-o", str(tmp_path / "e.plan"), "--shapes", "n:2x3")
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        "loopc: error: input 'n' is a shape tensor of 1 value(s) (TensorRT computes shapes from them); "
        "2x3 gives 2")

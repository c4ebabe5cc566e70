"""``loopc build``: a sample builds into a .plan with a report; bad input is one line, exit 1, no file."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

from loopc.cli import commands  # noqa: F401  (registers the subcommands)
from loopc.cli.main import cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "running_sum.onnx"
OPSET = 17


def invoke(*args: str) -> object:
    return CliRunner().invoke(cli, list(args))


def save(model: onnx.ModelProto, path: pathlib.Path) -> pathlib.Path:
    onnx.save(model, path)
    return path


def model_of(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto],
             initializers: list[onnx.TensorProto] | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=initializers or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model


def loop_model(trip_dtype: int = TensorProto.INT64, cond_dtype: int = TensorProto.BOOL, body_inputs: int = 3,
               with_trip: bool = True, with_cond: bool = True) -> onnx.ModelProto:
    """x_out = x + 1 per trip, with a scan output of each x; the knobs break it in one way each."""
    f32 = TensorProto.FLOAT
    body_in = [helper.make_tensor_value_info("i", TensorProto.INT64, []),
               helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
               helper.make_tensor_value_info("x_in", f32, [2])][:body_inputs]
    body = helper.make_graph(
        [helper.make_node("Constant", [], ["one"], value=helper.make_tensor("one", f32, [1], [1.0])),
         helper.make_node("Add", ["x_in", "one"], ["x_out"]),
         helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Identity", ["x_out"], ["scan"])],
        "body", body_in,
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", f32, [2]),
         helper.make_tensor_value_info("scan", f32, [2])],
    )
    inits = [helper.make_tensor("M", trip_dtype, [], [3]), helper.make_tensor("cond", cond_dtype, [], [1])]
    loop = helper.make_node("Loop", ["M" if with_trip else "", "cond" if with_cond else "", "x"], ["x_final", "xs"],
                            body=body, name="the_loop")
    return model_of([loop], [helper.make_tensor_value_info("x", f32, [2])],
                    [helper.make_tensor_value_info("x_final", f32, [2]), helper.make_tensor_value_info("xs", f32, None)],
                    inits)


def test_sample_builds_with_a_report(tmp_path: pathlib.Path) -> None:
    plan, report = tmp_path / "m.plan", tmp_path / "build.json"
    result = invoke("build", str(SAMPLE), "-o", str(plan), "--report", str(report))
    assert result.exit_code == 0, result.output
    assert plan.stat().st_size > 1000
    data = json.loads(report.read_text())
    assert len(data["loops"]) == 1
    loop = data["loops"][0]
    assert loop["trip_limits"] == ["kCOUNT"] and len(loop["iterators"]) == 1
    assert sorted(out["kind"] for out in loop["outputs"]) == ["kCONCATENATE", "kLAST_VALUE"]
    assert data["engine_bytes"] == plan.stat().st_size


def broken(tmp_path: pathlib.Path, name: str) -> tuple[pathlib.Path, pathlib.Path]:
    plan = tmp_path / "out.plan"
    plan.write_bytes(b"an earlier engine")
    return tmp_path / name, plan


def assert_refused(result: object, plan: pathlib.Path, *fragments: str) -> None:
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith("loopc: error: "), result.output
    for fragment in fragments:
        assert fragment in lines[-1], lines[-1]
    assert plan.read_bytes() == b"an earlier engine"
    assert [p.name for p in plan.parent.iterdir() if p.name.startswith(".loopc-")] == []


def test_truncated_model(tmp_path: pathlib.Path) -> None:
    path, plan = broken(tmp_path, "cut.onnx")
    path.write_bytes(SAMPLE.read_bytes()[:200])
    assert_refused(invoke("build", str(path), "-o", str(plan)), plan, "cut.onnx", "not a readable ONNX model")


def test_missing_external_data(tmp_path: pathlib.Path) -> None:
    path, plan = broken(tmp_path, "ext.onnx")
    weights = numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "w")  # raw data: can live outside
    model = model_of([helper.make_node("Add", ["x", "w"], ["y"])], [helper.make_tensor_value_info("x", 1, [2])],
                     [helper.make_tensor_value_info("y", 1, [2])], [weights])
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True, location="w.bin",
              size_threshold=0)
    (tmp_path / "w.bin").unlink()
    assert_refused(invoke("build", str(path), "-o", str(plan)), plan, "external data file missing", "w.bin")


def test_unknown_op(tmp_path: pathlib.Path) -> None:
    path, plan = broken(tmp_path, "op.onnx")
    model = model_of([helper.make_node("Det", ["x"], ["y"], name="fourier")],
                     [helper.make_tensor_value_info("x", 1, [2, 4, 4])], [helper.make_tensor_value_info("y", 1, None)])
    save(model, path)
    assert_refused(invoke("build", str(path), "-o", str(plan)), plan, "'fourier'", "Det", f"opset {OPSET}")


@pytest.mark.parametrize(
    ("knobs", "fragment"),
    [
        ({"body_inputs": 2}, "body"),
        ({"cond_dtype": TensorProto.FLOAT}, "cond"),
        ({"trip_dtype": TensorProto.FLOAT}, "trip count"),
        ({"with_trip": False, "with_cond": False}, "unbounded"),
        ({"with_trip": False}, "never ends"),
    ],
    ids=["body-inputs", "cond-not-bool", "trip-not-int", "no-M-no-cond", "while-true-without-M"],
)
def test_malformed_loop(tmp_path: pathlib.Path, knobs: dict[str, object], fragment: str) -> None:
    path, plan = broken(tmp_path, "loop.onnx")
    save(loop_model(**knobs), path)  # type: ignore[arg-type]
    assert_refused(invoke("build", str(path), "-o", str(plan)), plan, "'the_loop'", "Loop", f"opset {OPSET}", fragment)


WHILE_WITH_SCANS = """<ir_version: 8, opset_import: ["" : 17]>
g (float stop, float[3] x) => (float[3] total, float[K,3] sums) {
  go = Constant <value = bool {1}> ()
  zero = Constant <value = float[3] {0, 0, 0}> ()
  total, sums = Loop <body = b (int64 i, bool c, float[3] s) => (bool c_out, float[3] s_next, float[3] s_out) {
    s_next = Add(s, x)
    s_out = Identity(s_next)
    first = ReduceSum <keepdims = 0> (s_next)
    c_out = Less(first, stop)
  }> (, go, zero)
}
"""


def test_a_while_loop_with_a_scan_output_asks_for_max_trips_naming_the_users_node(tmp_path: pathlib.Path) -> None:
    """No trip count M and a condition computed from data: only the user can say how long ``sums`` may get."""
    model = onnx.parser.parse_model(WHILE_WITH_SCANS)
    model.graph.node[2].name = "my_while"
    path, plan = broken(tmp_path, "while.onnx")
    save(model, path)
    result = invoke("build", str(path), "-o", str(plan))
    assert_refused(result, plan)
    assert result.output.strip().splitlines()[-1] == (
        "loopc: error: node 'my_while' (Loop, opset 17): the loop collects a value on every trip and ends on its "
        "condition, after a number of trips loopc cannot tell before it runs, so TensorRT has no length for the "
        "collected output (counted-loops: its trip count cannot be counted: 'c_out' compares no counter that steps "
        "by a constant each trip); give a bound on its trips, at least the most it runs, with --max-trips N")
    assert invoke("build", str(path), "-o", str(plan), "--max-trips", "16").exit_code == 0


def test_a_target_tensorrt_rtx_does_not_build_for_says_what_it_does(tmp_path: pathlib.Path) -> None:
    """Targets as users type them, in numeric order; a datacenter GPU is sent to datacenter TensorRT."""
    from loopc.trt import is_rtx, trt

    if not is_rtx():
        pytest.skip("compute-capability targets are a TensorRT-RTX feature")
    listed = ", ".join(f"sm{int(m)}" for m in sorted(trt().ComputeCapability.__members__.values(), key=int)
                       if m.name.startswith("SM"))
    _, plan = broken(tmp_path, "unused.onnx")
    unknown = invoke("build", str(SAMPLE), "-o", str(plan), "--target", "sm12")
    assert_refused(unknown, plan)
    assert unknown.output.strip().splitlines()[-1] == (
        f"loopc: error: unknown target 'sm12'; TensorRT-RTX builds for {listed} (e.g. --target sm89)")
    hopper = invoke("build", str(SAMPLE), "-o", str(plan), "--target", "sm90")
    assert_refused(hopper, plan)
    assert hopper.output.strip().splitlines()[-1] == (
        f"loopc: error: target 'sm90' (Hopper: H100, H200, GH200) is not one TensorRT-RTX builds for ({listed}); "
        "build for it with datacenter TensorRT (pip install tensorrt; loopc then uses it), which builds for the GPU "
        "present, on a machine with that GPU")

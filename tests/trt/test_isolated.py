"""TensorRT's builder runs in a worker process: a crash of its code is one error line and exit 1, never loopc's
end; what it builds there is the network loopc made, and it still matches onnxruntime.

The crashing model is real: TensorRT-RTX 1.7's builder dies by SIGSEGV on ``shape_where_in_loop.onnx`` (see
``models/make_models.py``). Should a later TensorRT build it, ``test_a_builder_crash_*`` fail saying so: find
another crasher then.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import numpy as np
import onnx
import onnx.parser
import onnxruntime as ort
import pytest

import loopc
from loopc.compiler import compile as compile_model
from loopc.errors import BackendError, InternalError
from loopc.sim import simulate
from loopc.trt import is_rtx
from loopc.trt.isolated import BuilderCrashError, build_engine

MODELS = pathlib.Path(__file__).parent / "models"
CRASHER = MODELS / "shape_where_in_loop.onnx"
REVERSED_RNN = MODELS / "reversed_rnn.onnx"

#: The range the builder crashes on (loopc's default for this input), given explicitly: a crash under loopc's own
#: default may be retried with a narrower one.
RANGE = ("--min-shapes", "x:1x1x16", "--opt-shapes", "x:8x8x16", "--max-shapes", "x:64x64x16")

pytestmark = pytest.mark.skipif(not is_rtx(), reason="the crash is TensorRT-RTX 1.7's")


def test_a_builder_crash_is_one_line_and_exit_1_and_writes_nothing(tmp_path: pathlib.Path) -> None:
    plan = tmp_path / "model.plan"
    plan.write_bytes(b"an older engine")
    loopc_cli = pathlib.Path(sys.executable).with_name("loopc")
    proc = subprocess.run([str(loopc_cli), "build", str(CRASHER), "-o", str(plan), *RANGE], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 1, f"not exit 1 ({proc.returncode}): {proc.stderr[-2000:]}"
    errors = [line for line in proc.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    [line] = errors
    assert line.startswith("loopc: error: building the engine of ") and "shape_where_in_loop.onnx" in line
    assert "TensorRT crashed (SIGSEGV) in build_serialized_network" in line
    assert "nothing was written" in line
    assert plan.read_bytes() == b"an older engine"
    assert [p.name for p in tmp_path.iterdir()] == ["model.plan"]  # no temporary file left behind


def test_a_builder_crash_through_the_api_is_a_backend_error_and_the_next_build_works(tmp_path: pathlib.Path) -> None:
    with pytest.raises(BuilderCrashError) as caught:
        loopc.build(CRASHER, tmp_path / "crash.plan", min_shapes="x:1x1x16", opt_shapes="x:8x8x16",
                    max_shapes="x:64x64x16")
    assert isinstance(caught.value, BackendError)
    assert (caught.value.signal_name, caught.value.phase) == ("SIGSEGV", "build")
    assert not (tmp_path / "crash.plan").exists()
    report = loopc.build(CRASHER, tmp_path / "fixed.plan", shapes="x:5x3x16")  # batch fixed: TensorRT builds it
    assert report.engine_bytes == (tmp_path / "fixed.plan").stat().st_size > 0


def test_the_worker_checks_that_it_made_the_parents_network() -> None:
    rnn, crasher = compile_model(REVERSED_RNN), compile_model(CRASHER)
    with pytest.raises(InternalError, match="not the one the compiler made"):
        build_engine(rnn.model, crasher.network, {})


ONE_COLUMN = """<ir_version: 8, opset_import: ["" : 17]>
g (float[b,k] x) => (float[b,3] y) {
    w = Constant <value = float[1,3] {1,2,3}> ()
    y = MatMul (x, w)
}"""


def test_tensorrts_refusal_in_the_worker_is_its_reason(tmp_path: pathlib.Path) -> None:
    model = tmp_path / "one_column.onnx"
    onnx.save(onnx.parser.parse_model(ONE_COLUMN), model)
    with pytest.raises(BackendError, match="TensorRT could not build the network: .*mismatching dimensions") as caught:
        loopc.build(model, tmp_path / "m.plan", shapes="x:2x8")
    assert not isinstance(caught.value, BuilderCrashError)


def test_the_reversed_time_rnn_builds_under_the_default_profile_and_matches_onnxruntime(tmp_path: pathlib.Path) -> None:
    """TensorRT-RTX's builder crashed on loopc's network for it (an Expand inside the loop whose shape was a select
    on dims == 1); loopc's broadcast is now arithmetic on the dims."""
    report = loopc.build(REVERSED_RNN, tmp_path / "m.plan", warn=lambda message: None)
    assert report.inputs["x"].source == "default" and report.inputs["x"].min[:2] == [1, 1]  # batch 1 is in the range
    oracle = ort.InferenceSession(str(REVERSED_RNN), providers=["CPUExecutionProvider"])
    network = compile_model(REVERSED_RNN).network
    for shape in [(7, 1, 8), (4, 5, 8), (1, 2, 8)]:
        x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
        got = simulate(network, {"x": x})
        for name, expected in zip(("y", "h"), oracle.run(None, {"x": x})):
            np.testing.assert_allclose(got[name], expected, rtol=1e-5, atol=1e-6, err_msg=f"{name} at {shape}")

"""``loopc run``: the README's example against onnxruntime, and one-line errors that write nothing."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import onnxruntime as ort
import pytest
from click.testing import CliRunner

from loopc.cli.main import main as _main  # noqa: F401  (imports register the commands)
from loopc.cli import commands  # noqa: F401
from loopc.cli.main import cli
from loopc.trt import gpu

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "running_sum.onnx"
SAMPLE_INPUTS = ROOT / "samples" / "running_sum_inputs.npz"


def loopc(*args: str) -> subprocess.CompletedProcess[str]:
    exe = pathlib.Path(sys.executable).with_name("loopc")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=300)


def test_readme_example_matches_onnxruntime(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "outputs.npz"
    proc = loopc("run", str(SAMPLE), "-i", str(SAMPLE_INPUTS), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    feeds = dict(np.load(SAMPLE_INPUTS, allow_pickle=False))
    session = ort.InferenceSession(str(SAMPLE), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    expected = dict(zip(names, session.run(None, feeds)))
    got = dict(np.load(out, allow_pickle=False))
    assert sorted(got) == sorted(expected)
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-6)


def invoke(*args: str) -> object:
    return CliRunner().invoke(cli, list(args))


def test_missing_model_is_one_line_exit_1(tmp_path: pathlib.Path) -> None:
    result = invoke("run", str(tmp_path / "absent.onnx"))
    assert result.exit_code == 1
    assert "absent.onnx: no such file" in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize(("frontend", "message"), [("loopc", "not a readable ONNX model"),
                                                   ("trt-onnx", "ONNX parser rejected")])
def test_corrupt_model_is_refused_by_either_frontend(tmp_path: pathlib.Path, frontend: str, message: str) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage that is not a protobuf" * 10)
    result = invoke("run", str(bad), "--frontend", frontend)
    assert result.exit_code == 1
    assert message in result.output


def test_wrong_input_kind_writes_nothing(tmp_path: pathlib.Path) -> None:
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.zeros((5, 3), np.int64))
    out = tmp_path / "out.npz"
    out.write_bytes(b"previous results")
    result = invoke("run", str(SAMPLE), "-i", str(inputs), "-o", str(out))
    assert result.exit_code == 1
    assert result.output.strip() == ("loopc: error: input 'x' has int64 data (integers); the model expects float32 "
                                     "(floating point): convert it first")
    assert out.read_bytes() == b"previous results"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".loopc-")] == []


def test_unreadable_inputs_file(tmp_path: pathlib.Path) -> None:
    inputs = tmp_path / "in.npz"
    inputs.write_text("not an npz")
    result = invoke("run", str(SAMPLE), "-i", str(inputs))
    assert result.exit_code == 1
    assert "in.npz: not an .npz (a zip of .npy arrays)" in result.output


@pytest.mark.skipif(gpu.available(), reason="checks the message shown without a GPU")
def test_trt_executor_without_gpu_says_so() -> None:
    result = invoke("run", str(SAMPLE), "-i", str(SAMPLE_INPUTS), "--executor", "trt")
    assert result.exit_code == 1
    assert "needs an NVIDIA GPU" in result.output


@pytest.mark.gpu
def test_trt_executor_matches_simulator() -> None:
    feeds = dict(np.load(SAMPLE_INPUTS, allow_pickle=False))
    import loopc

    sim = loopc.run(str(SAMPLE), feeds)
    real = loopc.run(str(SAMPLE), feeds, executor="trt")
    for name in sim:
        np.testing.assert_allclose(real[name], sim[name], rtol=1e-5, atol=1e-6)


def test_unknown_tensorrt_module_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    result = subprocess.run(
        [sys.executable, "-c", "from loopc.trt import trt; trt()"],
        capture_output=True,
        text=True,
        env={**os.environ, "LOOPC_TENSORRT": "tensorflow"},
    )
    assert result.returncode != 0
    assert "LOOPC_TENSORRT='tensorflow' is not one of tensorrt, tensorrt_rtx" in result.stderr


def test_ops_lists_converters_and_simulator_layers() -> None:
    from loopc.backend.trt.registry import supported_ops
    from loopc.sim import supported_layer_types

    result = invoke("ops")
    assert result.exit_code == 0
    words = set(result.output.split())
    assert set(supported_ops()) <= words and set(supported_layer_types()) <= words
    # ops built by ONNX's definition of them: a converter of loopc's own would take precedence
    assert {"LinearAttention", "SoftmaxCrossEntropyLoss"} <= words and not {"LinearAttention"} & set(supported_ops())


def test_a_loop_run_past_its_max_trips_names_the_users_node_and_the_flag() -> None:
    """onnxscript's Newton iteration stacks 7 iterates; built for 2 (--max-trips 2), the run says which node ran over."""
    corpus = pathlib.Path(__file__).resolve().parents[1] / "models" / "onnxscript"
    trips = int(np.load(corpus / "onnxscript_while_history.expected.npz")["count_14"])  # NumPy's reference: 7
    result = CliRunner().invoke(cli, ["run", str(corpus / "onnxscript_while_history.onnx"), "-i",
                                      str(corpus / "onnxscript_while_history.inputs.npz"), "--max-trips", "2"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        f"loopc: error: layer 'n6__1/output1' (LOOP_OUTPUT) of node 'n6' (Loop, opset 18): the loop ran {trips} trips, but "
        "this output was built to hold 2 (its length is fixed when the engine is built: the loop's trip count, or for "
        "a while loop with none the bound --max-trips gives); build with a bound on its trips, at least the most it "
        "runs, with --max-trips N")

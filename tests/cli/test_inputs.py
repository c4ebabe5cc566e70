"""``loopc run`` and ``loopc.run`` take data as users have it: float64 and int64 NumPy arrays, bfloat16
from an ``.npz``; data that cannot be the input's type is one line naming the input; no unpickling."""

from __future__ import annotations

import os
import pathlib

import ml_dtypes
import numpy as np
import onnx
import onnx.parser
import onnxruntime as ort
import pytest
from click.testing import CliRunner

import loopc
from loopc.cli import commands  # noqa: F401  (registers the subcommands)
from loopc.cli.main import cli
from loopc.errors import LoopcError

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUNNING_SUM = ROOT / "samples" / "running_sum.onnx"
HEADER = '<ir_version: 8, opset_import: ["" : 17]>\n'

#: A running sum over a float64 sequence: TensorRT has no doubles, so loopc computes it in float32.
DOUBLE_SCAN = HEADER + """g (double[T,3] x, double[3] s0) => (double[3] s, double[T,3] partials) {
    s, partials = Scan <num_scan_inputs = 1,
                        body = b (double[3] acc, double[3] row) => (double[3] acc_out, double[3] p) {
        acc_out = Add (acc, row)
        p = Identity (acc_out)
    }> (s0, x)
}"""
INT32_ADD = HEADER + "g (int32[3] x) => (int32[3] y) { y = Add (x, x) }"
BF16_ADD = HEADER + "g (bfloat16[3] x) => (bfloat16[3] y) { y = Add (x, x) }"
WHERE = HEADER + "g (bool[3] m, float[3] a, float[3] b) => (float[3] y) { y = Where (m, a, b) }"


def save(text: str, path: pathlib.Path) -> pathlib.Path:
    onnx.save(onnx.parser.parse_model(text), path)
    return path


def run(model: pathlib.Path, arrays: dict[str, np.ndarray], tmp_path: pathlib.Path) -> tuple[object, pathlib.Path]:
    inputs, out = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, **arrays)
    return CliRunner().invoke(cli, ["run", str(model), "-i", str(inputs), "-o", str(out)]), out


def onnxruntime(model: pathlib.Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


def test_float64_input_accepts_float64_data(tmp_path: pathlib.Path) -> None:
    model = save(DOUBLE_SCAN, tmp_path / "double.onnx")
    rng = np.random.default_rng(0)
    feeds = {"x": rng.standard_normal((6, 3)), "s0": rng.standard_normal(3)}  # NumPy's float64
    result, out = run(model, feeds, tmp_path)
    assert result.exit_code == 0, result.output
    expected = onnxruntime(model, feeds)
    with np.load(out, allow_pickle=False) as got:
        for name, want in expected.items():
            np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-6, err_msg=name)
    api = loopc.run(str(model), feeds)  # the Python API converts the same way
    for name, want in expected.items():
        np.testing.assert_allclose(api[name], want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_float64_data_for_a_float32_input(tmp_path: pathlib.Path) -> None:
    feeds = {"x": np.linspace(-1.0, 1.0, 15).reshape(5, 3)}
    result, out = run(RUNNING_SUM, feeds, tmp_path)
    assert result.exit_code == 0, result.output
    expected = onnxruntime(RUNNING_SUM, {"x": feeds["x"].astype(np.float32)})
    with np.load(out, allow_pickle=False) as got:
        for name, want in expected.items():
            np.testing.assert_allclose(got[name], want, rtol=1e-6, atol=1e-7, err_msg=name)


def test_int64_data_for_an_int32_input(tmp_path: pathlib.Path) -> None:
    model = save(INT32_ADD, tmp_path / "int32.onnx")
    result, out = run(model, {"x": np.array([1, -2, 2**29])}, tmp_path)  # int64, as np.array makes it
    assert result.exit_code == 0, result.output
    with np.load(out, allow_pickle=False) as got:
        assert got["y"].dtype == np.int32
        np.testing.assert_array_equal(got["y"], [2, -4, 2**30])  # x + x


def test_bfloat16_from_an_npz(tmp_path: pathlib.Path) -> None:
    """NumPy saves a bfloat16 array as raw 2-byte void; read back, it is bfloat16 again when the model says so."""
    model = save(BF16_ADD, tmp_path / "bf16.onnx")
    x = np.array([1.5, 2.25, -3.0], ml_dtypes.bfloat16)
    result, out = run(model, {"x": x}, tmp_path)
    assert result.exit_code == 0, result.output
    with np.load(out, allow_pickle=False) as got:
        y = got["y"].view(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(y.astype(np.float32), [3.0, 4.5, -6.0])  # x + x, exact in bfloat16


@pytest.mark.parametrize(
    ("text", "arrays", "message"),
    [
        (INT32_ADD, {"x": np.array([1.0, 2.0, 3.0])},
         "input 'x' has float64 data (floating point); the model expects int32 (integers): convert it first"),
        (INT32_ADD, {"x": np.array([1, 2, 2**31])},
         "input 'x' has the value 2147483648, which the network's int32 cannot hold (-2147483648..2147483647); "
         "the model expects int32"),
        (INT32_ADD, {"x": np.array([True, False, True])},
         "input 'x' has bool data (booleans); the model expects int32 (integers): convert it first"),
        (WHERE, {"m": np.array([1, 0, 1]), "a": np.zeros(3, np.float32), "b": np.ones(3, np.float32)},
         "input 'm' has int64 data (integers); the model expects bool (booleans): convert it first"),
        (INT32_ADD, {"x": np.array([[1, 2, 3]])}, "input 'x' has shape 1x3 (rank 2); the model expects rank 1: (3)"),
        (INT32_ADD, {"x": np.array([1, 2])}, "input 'x' has shape 2; the model expects (3)"),
        (DOUBLE_SCAN, {"x": np.zeros((2, 3))}, "missing input 's0'; the model's inputs are x, s0"),
        (INT32_ADD, {"x": np.array([1, 2, 3]), "z": np.zeros(1)}, "unknown input 'z'; the model's inputs are x"),
        (DOUBLE_SCAN, {"x": np.zeros((2, 3), ml_dtypes.bfloat16), "s0": np.zeros(3)},
         "input 'x' holds raw 2-byte data (|V2, how NumPy saves bfloat16 and other non-NumPy types); the model "
         "expects float64 (TensorRT computes it in float32)"),
    ],
    ids=["float-for-int", "int32-overflow", "bool-for-int", "int-for-bool", "rank", "dim", "missing", "extra",
         "bf16-for-float64"],
)
def test_data_that_cannot_be_the_input_is_one_line(tmp_path: pathlib.Path, text: str,
                                                   arrays: dict[str, np.ndarray], message: str) -> None:
    model = save(text, tmp_path / "m.onnx")
    result, out = run(model, arrays, tmp_path)
    assert result.exit_code == 1
    assert result.output.strip() == f"loopc: error: {message}"
    assert not out.exists()
    if "raw 2-byte" not in message:  # the API gets arrays, not an .npz: the same check, the same words
        with pytest.raises(LoopcError) as caught:
            loopc.run(str(model), arrays)
        assert str(caught.value) == message


class _Payload:
    """Unpickling this creates a directory: the proof that a pickle ran."""

    def __init__(self, marker: pathlib.Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.mkdir, (str(self.marker),)


def test_an_npz_holding_objects_is_refused_unread(tmp_path: pathlib.Path) -> None:
    marker = tmp_path / "unpickled"
    inputs = tmp_path / "evil.npz"
    np.savez(inputs, x=np.array([_Payload(marker)], dtype=object))
    for command in (["run", str(RUNNING_SUM), "-i", str(inputs)],
                    ["build", str(RUNNING_SUM), "-o", str(tmp_path / "m.plan"), "--inputs", str(inputs)]):
        result = CliRunner().invoke(cli, command)
        assert result.exit_code == 1
        assert result.output.strip() == (f"loopc: error: {inputs}: array 'x' holds Python objects, which loopc does "
                                         "not unpickle; save numeric arrays")
    assert not marker.exists()
    with np.load(inputs, allow_pickle=True) as data:  # the file really carries a pickle that would run
        data["x"]
    assert marker.exists()

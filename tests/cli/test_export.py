"""``loopc export``: writes an ONNX model onnxruntime runs as the original, reports what changed, and takes
``build``'s errors, exit codes and atomic output."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import onnx
from click.testing import CliRunner

from loopc.cli.main import cli
from loopc.errors import EXIT_INPUT
from tests.backend.onnx.cases import SAMPLES, onnxruntime_outputs


def export(*args: str) -> tuple[int, str]:
    from loopc.cli import commands  # noqa: F401  (registers the subcommands)

    result = CliRunner().invoke(cli, ["export", *args])
    return result.exit_code, result.output


def test_export_writes_a_model_that_runs_as_the_original(tmp_path: pathlib.Path) -> None:
    out, report = tmp_path / "out.onnx", tmp_path / "report.json"
    code, text = export(str(SAMPLES / "list_stack.onnx"), "-o", str(out), "--report", str(report))
    assert code == 0, text
    feeds = dict(np.load(SAMPLES / "list_stack_inputs.npz"))
    want = onnxruntime_outputs(SAMPLES / "list_stack.onnx", feeds)
    got = onnxruntime_outputs(onnx.load(out), feeds)
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-6)
    data = json.loads(report.read_text())
    # the sample appends to a list in its loop: the sequence ops are gone from the export
    assert data["before"]["ops"].get("SequenceInsert", 0) >= 1 and "SequenceInsert" not in data["after"]["ops"]
    assert data["op_changes"]["SequenceInsert"] == -data["before"]["ops"]["SequenceInsert"]
    assert f"wrote {out}" in text and "SequenceInsert -" in text


def test_export_reads_openvino_ir(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "ti.onnx"
    code, text = export(str(SAMPLES / "openvino" / "ti_lstm_cell.xml"), "-o", str(out))
    assert code == 0, text
    model = onnx.load(out)
    onnx.checker.check_model(model, full_check=True)
    assert [n.op_type for n in model.graph.node].count("Loop") == 1


def test_shapes_fix_input_dims_and_a_wrong_one_is_refused(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "fixed.onnx"
    code, text = export(str(SAMPLES / "running_sum.onnx"), "-o", str(out), "--shapes", "x:5x3")
    assert code == 0, text
    assert [d.dim_value for d in onnx.load(out).graph.input[0].type.tensor_type.shape.dim] == [5, 3]
    code, text = export(str(SAMPLES / "running_sum.onnx"), "-o", str(tmp_path / "bad.onnx"), "--shapes", "x:5x4")
    assert code == EXIT_INPUT and "--shapes gives input 'x' dims [5, 4]" in text
    assert not (tmp_path / "bad.onnx").exists()


def test_a_model_loopc_refuses_leaves_no_output(tmp_path: pathlib.Path) -> None:
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    out = tmp_path / "out.onnx"
    out.write_bytes(b"kept")
    code, text = export(str(broken), "-o", str(out))
    assert code == EXIT_INPUT and text.startswith("loopc: error:") and len(text.strip().splitlines()) == 1
    assert out.read_bytes() == b"kept"


def test_optimizations_can_be_left_out(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "o0.onnx"
    code, text = export(str(SAMPLES / "running_sum.onnx"), "-o", str(out), "-O0", "--report", str(tmp_path / "r.json"))
    assert code == 0, text
    assert not any(json.loads((tmp_path / "r.json").read_text())["optimizations"].values())


MODELS = pathlib.Path(__file__).resolve().parents[1] / "models"


def test_external_data_puts_the_weights_beside_the_model(tmp_path: pathlib.Path) -> None:
    """``--external-data``: the model keeps its small tensors and names the data file for the rest; ONNX's
    checker, onnxruntime and loopc itself read the pair, and the outputs match the framework's."""
    source = MODELS / "torch" / "lstm_bidir_2layer.onnx"
    out = tmp_path / "lstm.onnx"
    code, text = export(str(source), "-o", str(out), "--external-data")
    assert code == 0, text
    data = tmp_path / "lstm.onnx.data"
    model = onnx.load(out, load_external_data=False)
    external = [t for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    assert external and all(t.ByteSize() < 1024 for t in model.graph.initializer if t not in external)
    assert {e.value for t in external for e in t.external_data if e.key == "location"} == {"lstm.onnx.data"}
    assert f"weights: {data} ({data.stat().st_size} bytes)" in text
    onnx.checker.check_model(str(out), full_check=True)
    feeds = dict(np.load(MODELS / "torch" / "lstm_bidir_2layer.inputs.npz"))
    want = dict(np.load(MODELS / "torch" / "lstm_bidir_2layer.expected.npz"))
    got = onnxruntime_outputs(out, feeds)
    for name, expected in want.items():
        np.testing.assert_allclose(got[name], expected, rtol=1e-4, atol=1e-5)
    again = tmp_path / "again.onnx"
    code, text = export(str(out), "-o", str(again))
    assert code == 0, text
    assert not (tmp_path / "again.onnx.data").exists()
    np.testing.assert_array_equal(onnxruntime_outputs(again, feeds)[next(iter(want))], got[next(iter(want))])


def test_a_model_past_protobufs_limit_gets_external_data(tmp_path: pathlib.Path, monkeypatch) -> None:
    """Past the 2 GiB limit (lowered here, so that the test stays small) the weights go beside the model
    without being asked; an output that cannot have a file beside it is refused."""
    from loopc import exporter

    monkeypatch.setattr(exporter, "PROTOBUF_LIMIT", 65536)
    source = MODELS / "torch_whole" / "tacotron_decoder.onnx"
    out = tmp_path / "big.onnx"
    code, text = export(str(source), "-o", str(out))
    assert code == 0, text
    assert (tmp_path / "big.onnx.data").stat().st_size > 0 and out.stat().st_size < 65536
    code, text = export(str(source), "-o", "/dev/null")
    assert code == EXIT_INPUT and "external weights need the model written to a file" in text

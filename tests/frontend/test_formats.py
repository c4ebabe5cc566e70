"""Another framework's model, or an engine, given where loopc wants a model: one line saying what it is and what to do.

Each file is made as its framework writes it, by hand (the frameworks are not installed here): the layout of
torch.save's zip and legacy pickle, Keras' HDF5 and .keras zip, TFLite's flatbuffer identifier, a SavedModel
folder; the TensorRT-RTX engine is a real one loopc builds from a sample.
"""

from __future__ import annotations

import json
import pathlib
import pickle
import struct
import zipfile

import pytest
from click.testing import CliRunner

from loopc.cli import commands  # noqa: F401  (registers the subcommands)
from loopc.cli.main import cli
from loopc.compiler import compile
from loopc.errors import FrontendError

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "running_sum.onnx"

TORCH = ('not an ONNX model; export the model to ONNX first, with torch.onnx.export(model, example_inputs, '
         '"model.onnx"), and give loopc the .onnx')
RTX_PLAN = ("is a serialized TensorRT-RTX engine (a .plan, as loopc build writes), not a model: loopc's commands take "
            "the model it was built from, ONNX (.onnx) or OpenVINO IR (.xml); a .plan is run by TensorRT-RTX's runtime "
            "on a GPU")
TRT_PLAN = ("is a serialized TensorRT engine (a .plan), not a model: loopc's commands take the model it was built "
            "from, ONNX (.onnx) or OpenVINO IR (.xml); a .plan is run by TensorRT's runtime on a GPU (e.g. trtexec "
            "--loadEngine)")
KERAS = 'convert it to ONNX first with tf2onnx (tf2onnx.convert.from_keras(model, output_path="model.onnx"))'


def zipped(path: pathlib.Path, members: dict[str, bytes]) -> pathlib.Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def torch_zip(path: pathlib.Path) -> pathlib.Path:
    """torch.save's zip: ``<name>/data.pkl``, the tensors' storages under ``<name>/data/``, a version."""
    return zipped(path, {"model/data.pkl": pickle.dumps({"w": 0}, protocol=2), "model/data/0": bytes(16),
                         "model/version": b"3\n", "model/byteorder": b"little"})


def torchscript(path: pathlib.Path) -> pathlib.Path:
    """torch.jit.save's archive: code and constants beside the pickled module."""
    return zipped(path, {"net/data.pkl": pickle.dumps(None, protocol=2), "net/code/__torch__/net.py": b"",
                         "net/constants.pkl": pickle.dumps((), protocol=2), "net/version": b"3\n"})


def written(data: bytes) -> object:
    def make(path: pathlib.Path) -> pathlib.Path:
        path.write_bytes(data)
        return path
    return make


def ultralytics_engine(path: pathlib.Path) -> pathlib.Path:
    """Ultralytics' .engine: the length of a JSON header, the header, then TensorRT's plan."""
    meta = json.dumps({"task": "detect", "imgsz": [640, 640]}).encode()
    path.write_bytes(struct.pack("<I", len(meta)) + meta + b"ftrt" + bytes(64))
    return path


def saved_model(path: pathlib.Path) -> pathlib.Path:
    path.mkdir()
    (path / "variables").mkdir()
    (path / "saved_model.pb").write_bytes(b"\x08\x01")
    return path


CASES = {
    "model.pt": (torch_zip, "looks like a PyTorch checkpoint or TorchScript archive (a zip holding pickled data), "
                            f"{TORCH}"),
    "scripted.pt": (torchscript, "looks like a PyTorch checkpoint or TorchScript archive (a zip holding pickled "
                                 f"data), {TORCH}"),
    "legacy.pth": (written(b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19." + pickle.dumps(1001, 2)),
                   f"looks like a PyTorch checkpoint (torch.save's legacy format), {TORCH}"),
    "weights.pkl": (written(pickle.dumps({"w": [1.0]}, protocol=4)),
                    f"is a Python pickle (a PyTorch .pt/.pth checkpoint?), {TORCH}"),
    "model.h5": (written(b"\x89HDF\r\n\x1a\n" + bytes(64)), f"is an HDF5 file (a Keras .h5 model?), not an ONNX model; "
                                                           f"{KERAS}"),
    "model.keras": (lambda p: zipped(p, {"metadata.json": b"{}", "config.json": b"{}", "model.weights.h5": b""}),
                    f"looks like a Keras model (.keras), not an ONNX model; {KERAS}"),
    "model.tflite": (written(b"\x1c\x00\x00\x00TFL3" + bytes(64)), "is a TensorFlow Lite model, not an ONNX model; "
                     "convert it to ONNX first with tf2onnx: python -m tf2onnx.convert --tflite {path} --output "
                     "model.onnx"),
    "saved": (saved_model, "is a TensorFlow SavedModel, not ONNX or OpenVINO IR, which loopc reads; convert it to ONNX "
                           "first with tf2onnx: python -m tf2onnx.convert --saved-model {path} --output model.onnx"),
    "datacenter.plan": (written(b"ftrt" + bytes(64)), TRT_PLAN),
    "yolo.engine": (ultralytics_engine, TRT_PLAN),
    "inputs.npz": (lambda p: zipped(p, {"x.npy": b"\x93NUMPY"}), "is a NumPy .npz of arrays (a model's inputs or "
                                                                  "outputs), not a model"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_another_frameworks_file_is_named_with_the_step_that_makes_an_onnx_model(tmp_path: pathlib.Path,
                                                                                  name: str) -> None:
    make, said = CASES[name]
    path = make(tmp_path / name)
    with pytest.raises(FrontendError) as refused:
        compile(str(path))
    assert str(refused.value) == f"{path}: " + said.format(path=path)


def test_an_engine_loopc_built_is_named_by_every_command(tmp_path: pathlib.Path) -> None:
    """The real first bytes of a TensorRT-RTX engine, given to build, run (either importer), inspect and export, in
    one line each."""
    plan = tmp_path / "x.plan"
    built = CliRunner().invoke(cli, ["build", str(SAMPLE), "-o", str(plan)])
    assert built.exit_code == 0, built.output
    for args in (["build", str(plan), "-o", str(tmp_path / "y.plan")], ["run", str(plan)], ["inspect", str(plan)],
                 ["export", str(plan), "-o", str(tmp_path / "y.onnx")], ["run", "--frontend", "trt-onnx", str(plan)]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 1, result.output
        assert result.output.strip().splitlines()[-1] == f"loopc: error: {plan}: {RTX_PLAN}", args
    assert not (tmp_path / "y.plan").exists() and not (tmp_path / "y.onnx").exists()


def test_an_engine_named_onnx_is_still_an_engine(tmp_path: pathlib.Path) -> None:
    """The suffix does not decide: the ONNX reader looks at the bytes before protobuf does."""
    path = tmp_path / "model.onnx"
    path.write_bytes(b"vtrt" + bytes(64))
    with pytest.raises(FrontendError, match="is a serialized TensorRT-RTX engine"):
        compile(str(path))


def test_a_pb_that_is_not_onnx_suggests_tensorflows_graphdef(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "frozen.pb"
    path.write_bytes(b"\x0a\x10\x0a\x01x\x12\x0bPlaceholder\x00\x00\x00\x00")  # a GraphDef's first NodeDef
    with pytest.raises(FrontendError) as refused:
        compile(str(path))
    message = str(refused.value)
    assert message.startswith(f"{path}: not a") and "\n" not in message
    assert message.endswith(f"; a .pb that is not ONNX may be a TensorFlow GraphDef: convert it to ONNX first with "
                            f"tf2onnx: python -m tf2onnx.convert --graphdef {path} --inputs ... --outputs ... "
                            "--output model.onnx")


def test_onnx_models_and_other_damage_are_read_as_before(tmp_path: pathlib.Path) -> None:
    """Nothing an ONNX file starts with is taken for another format; a truncated one still says so."""
    compile(str(SAMPLE))
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(SAMPLE.read_bytes()[:200])
    with pytest.raises(FrontendError, match="not a readable ONNX model"):
        compile(str(cut))

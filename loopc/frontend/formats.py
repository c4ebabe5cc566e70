"""Model files of other kinds, recognised from their first bytes, so that giving one to loopc says what it is.

loopc reads ONNX and OpenVINO IR. A PyTorch checkpoint, a TensorFlow or Keras model, or an engine loopc (or
TensorRT) built would otherwise reach the protobuf parser and fail as "not a readable ONNX model"; here each is
named, with the step that makes the model loopc reads (or, for an engine, what runs it). Only a few bytes are
read (and a zip's list of names): nothing of the file is run or unpickled.
"""

from __future__ import annotations

import os
import stat
import struct
import zipfile
from typing import IO

from loopc.errors import FrontendError

#: What loopc reads, as the messages say it.
MODELS_READ = "ONNX (.onnx) or OpenVINO IR (.xml)"
TORCH_EXPORT = ("export the model to ONNX first, with torch.onnx.export(model, example_inputs, \"model.onnx\"), and "
                "give loopc the .onnx")
TF2ONNX = "convert it to ONNX first with tf2onnx"

#: The first bytes of a serialized engine: TensorRT-RTX's, datacenter TensorRT's.
RTX_ENGINE, TRT_ENGINE = b"vtrt", b"ftrt"
_HDF5 = b"\x89HDF\r\n\x1a\n"
#: What ``torch.save`` writes first in its legacy (pre-zip) format: a pickled magic number.
_TORCH_LEGACY = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"
_SAVED_MODEL = ("saved_model.pb", "saved_model.pbtxt")


def check_model_file(path: str) -> None:
    """Refuse ``path``, in one line naming what it is and what to do, when it is a model of another framework
    or a serialized engine; return quietly for anything else (the frontend then reads it or says why not)."""
    what = recognised(path)
    if what is not None:
        raise FrontendError(f"{path}: {what}")


def recognised(path: str) -> str | None:
    """What ``path`` is and what to do, when its first bytes (or a folder's files) say; None otherwise."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISDIR(mode):
        return _folder(path)
    if not stat.S_ISREG(mode) or not os.access(path, os.R_OK):
        return None  # a FIFO or device is never read here: check_readable says what it is
    if os.path.basename(path) in _SAVED_MODEL:
        return _saved_model(os.path.dirname(path) or ".")
    with open(path, "rb") as handle:
        head = handle.read(64)
        return _engine(head, handle) or _by_head(path, head)


def not_onnx(path: str) -> str:
    """What a file that is no readable ONNX model may be, from its name alone, to end the message with; "" if no
    guess."""
    if path.lower().endswith(".pb"):
        return (f"; a .pb that is not ONNX may be a TensorFlow GraphDef: {TF2ONNX}: "
                f"python -m tf2onnx.convert --graphdef {path} --inputs ... --outputs ... --output model.onnx")
    return ""


def _folder(path: str) -> str | None:
    if any(os.path.isfile(os.path.join(path, name)) for name in _SAVED_MODEL):
        return _saved_model(path)
    return None


def _saved_model(folder: str) -> str:
    return (f"is a TensorFlow SavedModel, not ONNX or OpenVINO IR, which loopc reads; {TF2ONNX}: "
            f"python -m tf2onnx.convert --saved-model {folder} --output model.onnx")


def _engine(head: bytes, handle: IO[bytes]) -> str | None:
    """A serialized engine: at the start, or after Ultralytics' prefix (a length, then that much JSON)."""
    magic = head[:4]
    if len(head) >= 8 and head[4:5] == b"{":
        (length,) = struct.unpack("<I", head[:4])
        if length < 1 << 20:
            handle.seek(4 + length)
            magic = handle.read(4)
    if magic == RTX_ENGINE:
        return ("is a serialized TensorRT-RTX engine (a .plan, as loopc build writes), not a model: loopc's commands "
                f"take the model it was built from, {MODELS_READ}; a .plan is run by TensorRT-RTX's runtime on a GPU")
    if magic == TRT_ENGINE:
        return ("is a serialized TensorRT engine (a .plan), not a model: loopc's commands take the model it was built "
                f"from, {MODELS_READ}; a .plan is run by TensorRT's runtime on a GPU (e.g. trtexec --loadEngine)")
    return None


def _by_head(path: str, head: bytes) -> str | None:
    if head.startswith(b"PK\x03\x04"):
        return _zip(path)
    if head.startswith(_TORCH_LEGACY):
        return f"looks like a PyTorch checkpoint (torch.save's legacy format), not an ONNX model; {TORCH_EXPORT}"
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return f"is a Python pickle (a PyTorch .pt/.pth checkpoint?), not an ONNX model; {TORCH_EXPORT}"
    if head.startswith(_HDF5):
        return (f"is an HDF5 file (a Keras .h5 model?), not an ONNX model; {TF2ONNX} "
                "(tf2onnx.convert.from_keras(model, output_path=\"model.onnx\"))")
    if head[4:8] == b"TFL3":
        return (f"is a TensorFlow Lite model, not an ONNX model; {TF2ONNX}: "
                f"python -m tf2onnx.convert --tflite {path} --output model.onnx")
    return None


def _zip(path: str) -> str | None:
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    if any(name.endswith(("data.pkl", "constants.pkl")) or "serialized_exported_program" in name for name in names):
        return ("looks like a PyTorch checkpoint or TorchScript archive (a zip holding pickled data), not an ONNX "
                f"model; {TORCH_EXPORT}")
    if {"config.json", "metadata.json"} <= set(names):
        return (f"looks like a Keras model (.keras), not an ONNX model; {TF2ONNX} "
                "(tf2onnx.convert.from_keras(model, output_path=\"model.onnx\"))")
    if names and all(name.endswith(".npy") for name in names):
        return "is a NumPy .npz of arrays (a model's inputs or outputs), not a model"
    return "is a zip archive, not ONNX or OpenVINO IR, which loopc reads"

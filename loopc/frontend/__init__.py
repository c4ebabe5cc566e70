"""Frontends: model files into loopc's IR. :func:`load` picks one from the file (suffix, then content)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from loopc.errors import FrontendError
from loopc.fileio import check_readable
from loopc.frontend.formats import check_model_file
from loopc.gc_pause import gc_paused

if TYPE_CHECKING:
    from loopc.ir import Model

FRONTENDS = ("onnx", "openvino")


def detect(path: str) -> str:
    """``openvino`` for an ``.xml`` (or a file that starts like XML), ``onnx`` otherwise."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".xml":
        return "openvino"
    if suffix == ".onnx":
        return "onnx"
    check_model_file(path)  # a PyTorch checkpoint, a TensorFlow model or an engine: say which
    check_readable(path)  # before reading: a FIFO would block, /dev/zero never end
    with open(path, "rb") as handle:
        head = handle.read(64).lstrip()
    return "openvino" if head.startswith(b"<") else "onnx"


@gc_paused()
def load(model: Any, frontend: str | None = None, weights: str | os.PathLike[str] | None = None, *,
         stack_directions: bool = True) -> Model:
    """Import ``model`` (a path, or an ``onnx.ModelProto``) with ``frontend`` (default: detected).

    ``weights`` is an OpenVINO IR's ``.bin`` when it is not beside the ``.xml``; ``stack_directions``
    runs both directions of a bidirectional recurrent op in one loop (else one loop each).
    """
    if frontend is not None and frontend not in FRONTENDS:
        raise FrontendError(f"unknown frontend {frontend!r}; choose one of {', '.join(FRONTENDS)}")
    is_path = isinstance(model, (str, os.PathLike))
    chosen = frontend or (detect(os.fspath(model)) if is_path else "onnx")
    if chosen == "openvino":
        if not is_path:
            raise FrontendError("the OpenVINO frontend reads an IR from its .xml path")
        from loopc.frontend.openvino import import_ir

        return import_ir(model, weights, stack_directions=stack_directions)
    if weights is not None:
        raise FrontendError("--weights is for OpenVINO IR; an ONNX model keeps its external data beside it")
    from loopc.frontend.onnx import import_model

    return import_model(model, stack_directions=stack_directions)

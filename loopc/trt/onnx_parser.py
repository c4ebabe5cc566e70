"""Networks from TensorRT's own ONNX parser: the reference importer loopc is compared with."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import onnx

from loopc.errors import FrontendError
from loopc.fileio import check_readable
from loopc.frontend.formats import check_model_file
from loopc.trt import trt
from loopc.trt.config import Session
from loopc.trt.messages import captured, tidy


@dataclass
class ParsedNetwork:
    """A network with the session and parser that own it (they must outlive it)."""

    session: Session
    network: Any
    parser: Any = field(repr=False)


def parse_onnx(model: onnx.ModelProto | str | os.PathLike[str]) -> ParsedNetwork:
    """Import ``model`` with ``trt.OnnxParser``; raise :class:`FrontendError` naming the failing node."""
    session = Session()
    network = session.create_network()
    with captured(session.errors):
        parser = trt().OnnxParser(network, session.logger)
    if isinstance(model, onnx.ModelProto):
        with captured(session.errors):
            ok = parser.parse(model.SerializeToString())
    else:
        path = os.fspath(model)
        check_model_file(path)  # an engine or a PyTorch checkpoint: say so, not "Failed to parse the ONNX model"
        check_readable(path)
        with captured(session.errors):
            ok = parser.parse_from_file(path)
    if not ok:
        errors = [parser.get_error(i) for i in range(parser.num_errors)]
        detail = "; ".join(_describe(e) for e in errors) or "no reason given"
        raise FrontendError(f"TensorRT's ONNX parser rejected the model: {detail}")
    return ParsedNetwork(session, network, parser)


def _describe(error: Any) -> str:
    node = error.node_name() or f"node #{error.node()}"
    op = error.node_operator()
    where = f"{node} ({op})" if op else node
    return f"{where}: {tidy(error.desc())}".replace("\n", " ")

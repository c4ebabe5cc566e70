"""Shared helpers: import + verify, and compare the IR (run by the IR interpreter) with onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.parser
import pytest

from loopc.compiler import load_ir
from loopc.errors import LoopcError
from loopc.frontend.onnx import import_model
from loopc.ir import Graph, Loop, Model, verify
from loopc.ir.interpret import interpret


def parse(text: str) -> onnx.ModelProto:
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model)
    return model


def imported(model: onnx.ModelProto | str) -> Model:
    result = import_model(parse(model) if isinstance(model, str) else model)
    verify(result.graph, after="the ONNX frontend")
    return result


def refused(model: onnx.ModelProto | str, cls: type[LoopcError], *fragments: str) -> LoopcError:
    """``model`` (a proto, a path, or ONNX text) is refused by the real entry point with one line
    holding every fragment."""
    if isinstance(model, str) and model.lstrip().startswith("<"):
        model = onnx.parser.parse_model(model)
    with pytest.raises(cls) as info:
        load_ir(model)
    message = str(info.value)
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message
    return info.value


def loops(graph: Graph) -> list[Loop]:
    return [node for _, node in graph.walk() if isinstance(node, Loop)]


def check_against_ort(model: onnx.ModelProto | str, feeds: dict[str, np.ndarray], rtol: float = 1e-4,
                      optimize: bool = True) -> Model:
    """Import, verify, interpret the IR, and compare every output with onnxruntime's (``optimize=False``:
    with its graph optimizations off, which fold a Shape by the declared type even where it is wrong)."""
    import onnxruntime as ort

    proto = parse(model) if isinstance(model, str) else model
    ir = imported(proto)
    options = ort.SessionOptions()
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    got = interpret(ir.graph, feeds)
    for name, g, e in zip([o.name for o in proto.graph.output], got, expected):
        np.testing.assert_allclose(np.asarray(g), e, rtol=rtol, atol=1e-5, err_msg=f"output {name}")
    return ir

"""One pass run on its own over a small ONNX model, with onnxruntime as the oracle.

A test writes the model as ONNX text, imports it with loopc's frontend, runs the pass under test (after
at most the passes it names as prerequisites) through a :class:`PassManager` of just those passes, so
the verifier and the pass's own ``requires``/``ensures`` run too, and compares the interpreted IR with
onnxruntime on the same inputs.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx
import onnx.parser
import onnxruntime as ort

from loopc.frontend.onnx import import_model
from loopc.ir import Graph, Loop, Model, verify
from loopc.ir.interpret import interpret
from loopc.passes import Pass, PassManager, Phase

HEADER = '<ir_version: 8, opset_import: ["" : 17]>'


def load(text: str) -> tuple[onnx.ModelProto, Model]:
    """The checked ONNX model written in ``text`` (after :data:`HEADER`), and loopc's import of it."""
    proto = onnx.parser.parse_model(HEADER + text)
    onnx.checker.check_model(proto)
    return proto, import_model(proto)


def run_alone(model: Model, *passes: Pass | Phase) -> dict[str, int]:
    """Run ``passes`` (prerequisites first, the pass under test last) until they settle, or the phases given
    one after the other; their statistics."""
    manager = PassManager(list(passes))
    model.graph = manager.run(model.graph)
    verify(model.graph)
    return manager.stats


def assert_matches_onnxruntime(proto: onnx.ModelProto, model: Model, feeds: Mapping[str, np.ndarray],
                               rtol: float = 1e-6, atol: float = 1e-6) -> None:
    """The interpreted IR computes what onnxruntime computes for ``proto`` on ``feeds``, output by output."""
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, dict(feeds))
    got = interpret(model.graph, feeds)
    assert len(got) == len(want)
    for name, value, expected in zip([o.name for o in proto.graph.output], got, want):
        assert np.shape(value) == expected.shape, f"{name}: shape {np.shape(value)} != {expected.shape}"
        np.testing.assert_allclose(value, expected, rtol=rtol, atol=atol, err_msg=name)


def loops(graph: Graph) -> list[Loop]:
    """The loops of ``graph`` at any depth, outermost first."""
    return [node for _, node in graph.structured() if isinstance(node, Loop)]

"""Constant folding computes a node as onnxruntime does: ops on constant operands, folded, against onnxruntime.

Folding runs the interpreter's node evaluator, so an op whose ONNX reference implementation is wrong (LRN walks the
batch axis; grouped ConvTranspose slices the weights by output channels) folds to what the graph means, not to what
that reference computes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as onh
import pytest

from loopc.frontend.onnx import import_model
from loopc.ir import Graph, Node, Value, constant_value
from loopc.passes import ConstantFolding, PassManager
from loopc.passes._why import Decline

ort = pytest.importorskip("onnxruntime")

_RNG = np.random.default_rng(11)


def _f32(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (_RNG.standard_normal(shape) * scale).astype(np.float32)


#: op, constant operands, attributes; every operand a constant, so the whole node folds.
CASES: list[tuple[str, list[np.ndarray], dict[str, Any]]] = [
    ("LRN", [_f32(2, 7, 5, 5, scale=3.0)], {"size": 5, "alpha": 2e-4, "beta": 0.75, "bias": 1.0}),
    ("LRN", [_f32(1, 6, 4, 1)], {"size": 3, "alpha": 0.3, "beta": 0.5, "bias": 2.0}),
    ("LRN", [_f32(1, 4, 3, 3, scale=2.0)], {"size": 3}),  # alpha, beta and bias: ONNX's defaults
    ("ConvTranspose", [_f32(1, 4, 5), _f32(4, 3, 2)], {"group": 2, "strides": [2]}),
    ("GroupNormalization", [_f32(2, 4, 3, 3), _f32(4), _f32(4)], {"num_groups": 2, "epsilon": 1e-5}),
    ("Softmax", [_f32(3, 8, scale=4.0)], {"axis": -1}),
    ("ReduceMean", [_f32(3, 4, 5), np.array([1, 2], np.int64)], {"keepdims": 0}),
    ("Erf", [_f32(4, 6)], {}),
]


def _model(op: str, operands: list[np.ndarray], attrs: dict[str, Any]) -> onnx.ModelProto:
    """One ``op`` node whose operands are Constant nodes; the graph has no inputs."""
    names = [f"c{k}" for k in range(len(operands))]
    consts = [oh.make_node("Constant", [], [n], value=onh.from_array(a, n)) for n, a in zip(names, operands)]
    node = oh.make_node(op, names, ["y"], **attrs)
    graph = oh.make_graph(consts + [node], "g", [], [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 21)])


@pytest.mark.parametrize(("op", "operands", "attrs"), CASES, ids=[f"{c[0]}-{k}" for k, c in enumerate(CASES)])
def test_a_folded_op_matches_onnxruntime(op: str, operands: list[np.ndarray], attrs: dict[str, Any]) -> None:
    proto = _model(op, operands, attrs)
    (want,) = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {})
    model = import_model(proto)
    result = ConstantFolding()(model.graph)
    assert result.modified
    assert all(n.op == "Constant" for n in model.graph.nodes)  # the op itself was folded
    got = constant_value(model.graph.outputs[0])
    assert got is not None
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


def _folded_with_declines(graph: Graph) -> list[Decline]:
    manager = PassManager([ConstantFolding()])
    manager.run(graph)
    return list(manager.declines)


def _const(name: str, array: np.ndarray) -> tuple[Node, Value]:
    value = Value(name, array.dtype, array.shape)
    return Node("Constant", [], [value], {"value": array}), value


def test_a_result_too_large_to_store_stays_and_says_why() -> None:
    """A ConstantOfShape of 2048 x 1024 (past the 2**20 elements folding stores) stays for TensorRT and says
    so; an Add of an input is no folding's concern and records nothing."""
    made, dims = _const("dims", np.array([2048, 1024], np.int64))
    x, big, y = Value("x", np.dtype(np.float32), (2,)), Value("big", np.dtype(np.float32), (2048, 1024)), \
        Value("y", np.dtype(np.float32), (2,))
    graph = Graph("g", [x], [big, y], [made, Node("ConstantOfShape", [dims], [big], name="fill"),
                                       Node("Add", [x, x], [y], name="sum")])
    [found] = _folded_with_declines(graph)
    assert [n.op for n in graph.nodes] == ["Constant", "ConstantOfShape", "Add"]
    assert found.at is big.producer and found.rewrite == "constant-folding"
    assert found.reason.startswith(f"its result would hold {2048 * 1024} elements, more than the {1 << 20}")


def test_an_op_the_evaluator_cannot_run_stays_and_says_why() -> None:
    made, a = _const("a", np.ones(2, np.float32))
    y = Value("y", np.dtype(np.float32), (2,))
    graph = Graph("g", [], [y], [made, Node("Frobnicate", [a], [y], name="frob")])
    [found] = _folded_with_declines(graph)
    assert [n.op for n in graph.nodes] == ["Constant", "Frobnicate"]
    assert found.reason.startswith("loopc's evaluator cannot compute it (") and "Frobnicate" in found.reason
    assert graph.nodes[1].describe() not in found.reason  # the place is shown beside the reason, not in it

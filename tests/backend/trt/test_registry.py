"""The converter registry: coverage, errors that name the node, and layers the simulator can run."""

from __future__ import annotations

import numpy as np
import pytest

from loopc.backend.trt import supported_ops, to_network
from loopc.errors import UnsupportedOpError
from loopc.ir import Graph, Model, Node, Value
from loopc.sim import supported_layer_types

F32 = np.dtype(np.float32)


def test_supported_ops_cover_the_recurrent_model_ops():
    ops = set(supported_ops())
    for op in ("Add", "MatMul", "Gemm", "Slice", "Split", "Loop", "If", "LayerNormalization", "TopK", "CumSum"):
        assert op in ops


def test_unknown_op_names_the_node():
    x, y = Value("x", F32, (2,)), Value("y", F32, (2,))
    graph = Graph("g", [x], [y], [Node("Frobnicate", [x], [y], name="frob", origin="node 'frob' (Frobnicate, opset 18)")])
    with pytest.raises(UnsupportedOpError, match=r"node 'frob' \(Frobnicate, opset 18\)"):
        to_network(Model(graph))


def test_layers_are_named_after_their_nodes_and_simulatable():
    x, y, z = Value("x", F32, (2, 3)), Value("y", F32, (3, 2)), Value("z", F32, (2,))
    axes = Value("axes", np.dtype(np.int64), (1,))
    nodes = [Node("Constant", [], [axes], {"value": np.array([1])}, name="axes"),
             Node("Transpose", [x], [y], name="flip"), Node("ReduceSum", [y, axes], [z], {"keepdims": 0}, name="sum")]
    _, network = to_network(Model(Graph("g", [x], [z], nodes)))
    names = [network.get_layer(i).name for i in range(network.num_layers)]
    assert names == ["axes", "flip", "sum"]
    known = supported_layer_types()
    assert all(network.get_layer(i).type.name in known for i in range(network.num_layers))
    assert network.get_output(0).name == "z"


def test_every_layer_the_backend_adds_has_a_simulator_kernel():
    """Each ``network.add_*`` call in the backend's source names a layer type the simulator runs,
    so a converter cannot emit a layer the simulator lacks unnoticed."""
    import pathlib
    import re

    import loopc.backend.trt as backend

    source = "\n".join(p.read_text() for p in pathlib.Path(backend.__file__).parent.rglob("*.py"))
    calls = set(re.findall(r"network\.add_([a-z_0-9]+)\(", source))
    assert {"reverse_sequence", "one_hot", "non_zero", "slice", "scatter"} <= calls
    renamed = {"gather_v2": "GATHER", "if_conditional": "CONDITION", "input": None, "loop": None}
    known = supported_layer_types()
    kinds = {renamed.get(c, c.upper()) for c in calls} - {None}
    assert kinds <= known, sorted(kinds - known)

"""The converter registry: coverage, refusals that name the node, and layers the simulator can run."""

from __future__ import annotations

import re

import numpy as np
import pytest

from loopc.backend.trt import supported_ops, to_network
from loopc.backend.trt.registry import CONVERTERS, converter_for, node_error
from loopc.errors import BackendError, FrontendError, UnsupportedConversionError, UnsupportedError
from loopc.ir import Graph, Model, Node, Value
from loopc.sim import supported_layer_types

F32 = np.dtype(np.float32)


def test_supported_ops_cover_the_recurrent_model_ops():
    ops = set(supported_ops())
    for op in ("Add", "MatMul", "Gemm", "Slice", "Split", "Loop", "If", "LayerNormalization", "TopK", "CumSum"):
        assert op in ops


def test_loop_and_if_are_registered_like_any_op():
    from loopc.backend.trt.conditionals import convert_if
    from loopc.backend.trt.loops import convert_loop

    assert CONVERTERS.get("Loop") is not None and CONVERTERS.get("Loop").convert is convert_loop  # type: ignore[union-attr]
    assert CONVERTERS.get("If") is not None and CONVERTERS.get("If").convert is convert_if  # type: ignore[union-attr]


def test_unknown_op_is_a_backend_refusal_naming_the_node():
    x, y = Value("x", F32, (2,)), Value("y", F32, (2,))
    graph = Graph("g", [x], [y], [Node("Frobnicate", [x], [y], name="frob", origin="node 'frob' (Frobnicate, opset 18)")])
    with pytest.raises(UnsupportedConversionError) as caught:
        to_network(Model(graph))
    error = caught.value
    assert str(error) == ("node 'frob' (Frobnicate, opset 18): op 'Frobnicate' has no TensorRT converter; "
                          "supported ops are listed by `loopc ops`")
    assert isinstance(error, BackendError) and isinstance(error, UnsupportedError)
    assert not isinstance(error, FrontendError)
    assert (error.node, error.op, error.opset) == ("frob", "Frobnicate", 18)


@pytest.mark.parametrize(("op", "attrs", "reason"), [
    ("ReverseSequence", {"batch_axis": 0, "time_axis": 2}, "batch_axis=0 with time_axis=2 (ONNX allows 0 and 1)"),
    ("ScatterElements", {"reduction": "add"}, "reduction='add'"),
])
def test_a_capability_check_refuses_the_node_by_name(op: str, attrs: dict[str, object], reason: str):
    """The check reads the node alone: the converter is refused before it is called (no network needed)."""
    x, y = Value("x", F32, (2, 3)), Value("y", F32, (2, 3))
    inputs = ([x, Value("lens", np.dtype(np.int64), (2,))] if op == "ReverseSequence"
              else [x, Value("i", np.dtype(np.int64), (2, 3)), Value("u", F32, (2, 3))])
    node = Node(op, inputs, [y], attrs, name="n", origin=f"node 'n' ({op}, opset 18)")
    graph = Graph("g", inputs, [y], [node])
    with pytest.raises(UnsupportedConversionError, match=re.escape(reason)):
        converter_for(node)
    with pytest.raises(UnsupportedConversionError) as caught:
        to_network(Model(graph))
    assert str(caught.value) == f"node 'n' ({op}, opset 18): {reason} is not supported by the TensorRT backend"
    assert (caught.value.node, caught.value.op, caught.value.opset) == ("n", op, 18)


def test_errors_about_a_node_in_an_openvino_body_carry_its_fields():
    """An OpenVINO layer inside a body is named with where it is; the fields are still the layer's."""
    x, y = Value("x", F32, (2,)), Value("y", F32, (2,))
    origin = "layer 7 'cell/add' (Add, opset1) in TensorIterator layer 3 body"
    error = node_error(Node("Add", [x, x], [y], origin=origin), "shapes differ")
    assert str(error) == f"{origin}: shapes differ"
    assert (error.node, error.op, error.opset) == ("cell/add", "Add", "opset1")
    assert isinstance(error, BackendError)


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
    renamed = {"gather_v2": "GATHER", "if_conditional": "CONDITION", "input": None, "loop": None,
               "normalization_v2": "NORMALIZATION", "pooling_nd": "POOLING", "attention_v2": "ATTENTION_INPUT"}
    known = supported_layer_types()
    kinds = {renamed.get(c, c.upper()) for c in calls} - {None}
    assert kinds <= known, sorted(kinds - known)

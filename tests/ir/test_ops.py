"""The op registry: a record for every op the backend converts, facts that agree with ONNX's schemas,
and the facts the passes act on checked against onnxruntime."""

from __future__ import annotations

from textwrap import dedent
from typing import Any

import numpy as np
import onnx
import onnx.defs
import onnxruntime as ort
import pytest
from onnx import AttributeProto, helper

from loopc.backend.trt.registry import supported_ops
from loopc.frontend.onnx.newer_opsets import added_schema, newest_opset
from loopc.ir import Node, parse, verify
from loopc.ir.interpret import interpret
from loopc.ir.ops import Trap, known_ops, may_trap, traits
from loopc.passes.loop_distribution import LoopDistribution

#: Ops whose ``axis`` attribute the registry leaves out, and why.
AXIS_NOT_RECORDED = {
    "QuantizeLinear": "its axis applies only to a per-axis scale",
    "DequantizeLinear": "its axis applies only to a per-axis scale",
    "ConcatFromSequence": "its axis range depends on new_axis",
}


def _run(node: onnx.NodeProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """onnxruntime's results of one node on ``feeds``."""
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
              for k, v in feeds.items()]
    outputs = [helper.make_empty_tensor_value_info(name) for name in node.output]
    model = helper.make_model(helper.make_graph([node], "one", inputs, outputs),
                              opset_imports=[helper.make_opsetid("", 21)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return [np.asarray(r) for r in session.run(None, feeds)]


# ------------------------------------------------------------------------------------ coverage


def test_every_op_the_backend_converts_has_a_record() -> None:
    assert sorted(set(supported_ops()) - set(known_ops())) == []


def test_an_op_without_a_record_claims_nothing() -> None:
    unknown = traits("NoSuchOp")
    assert unknown.op == "NoSuchOp"
    assert not (unknown.elementwise or unknown.same_shape or unknown.copies or unknown.lift or unknown.axes)
    assert may_trap("NoSuchOp") == Trap.ANY


def schema(op: str) -> onnx.defs.OpSchema | None:
    """``op``'s schema in the installed onnx, or in the newer opset that adds it (GroupedMatMul, opset 29)."""
    return onnx.defs.get_schema(op) if onnx.defs.has(op) else added_schema(op, newest_opset())


@pytest.mark.parametrize("op", known_ops())
def test_each_record_is_an_onnx_op(op: str) -> None:
    assert schema(op) is not None


# ------------------------------------------------------------------------ against the schemas


@pytest.mark.parametrize("op", known_ops())
def test_axis_parameters_agree_with_the_schema(op: str) -> None:
    found = schema(op)
    assert found is not None
    for param in traits(op).axes:
        if param.operand is not None:
            assert found.inputs[param.operand].name == param.name
            continue
        attr = found.attributes[param.name]
        assert attr.type == (AttributeProto.INTS if param.many else AttributeProto.INT)
        given = helper.get_attribute_value(attr.default_value) if attr.default_value.name else None
        assert given == (list(param.default) if isinstance(param.default, tuple) else param.default)
    named = {a for a in found.attributes
             if a in ("axis", "axes") or a.endswith(("_axis", "_axes")) and a != "noop_with_empty_axes"}
    recorded = {p.name for p in traits(op).axes if p.operand is None}
    if op not in AXIS_NOT_RECORDED and op != "Scan":  # Scan's axes index its scanned inputs, one each
        assert named == recorded


@pytest.mark.parametrize("op", known_ops())
def test_broadcasting_is_what_the_schema_says(op: str) -> None:
    found = schema(op)
    doc = ((found.doc if found is not None else "") or "").lower()
    facts = traits(op)
    assert (facts.broadcast == "multi") == ("multidirectional" in doc)
    if facts.broadcast == "uni":
        assert "unidirectional" in doc


@pytest.mark.parametrize("op", known_ops())
def test_reductions_are_the_ops_reducing_listed_axes(op: str) -> None:
    found = schema(op)
    assert found is not None and traits(op).reduction == ("noop_with_empty_axes" in found.attributes)


@pytest.mark.parametrize("op", known_ops())
def test_the_facts_are_consistent(op: str) -> None:
    facts = traits(op)
    if facts.elementwise:
        assert facts.lift is not None and facts.lift.rule == "elementwise"
        assert facts.same_shape == (facts.broadcast in (None, "uni"))
    if facts.reshapes or facts.permutes:
        assert facts.copies
    if facts.lift is not None and facts.lift.rule == "axis":
        assert facts.axis is not None
    if facts.lift is not None and facts.lift.rule == "axes":
        assert facts.axes_operand is not None


# ------------------------------------------------------------------------- against onnxruntime

A = np.arange(6, dtype=np.float32).reshape(2, 1, 3) - 2.5
B = np.arange(4, dtype=np.float32).reshape(4, 1) - 1.5


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mean", "Sum", "Equal", "Greater",
                                "GreaterOrEqual", "Less", "LessOrEqual"])
def test_a_broadcasting_op_broadcasts_as_numpy_does(op: str) -> None:
    assert traits(op).broadcast == "multi"
    a, b = (np.abs(A), B) if op == "Pow" else (A, B)
    (got,) = _run(helper.make_node(op, ["a", "b"], ["y"]), {"a": a, "b": b})
    assert got.shape == np.broadcast_shapes(a.shape, b.shape) == (2, 4, 3)
    exact = traits(op).numpy
    if exact is not None:
        np.testing.assert_array_equal(got, exact(a, b))


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_a_logical_op_computes_its_numpy_function(op: str) -> None:
    a, b = A > 0, B > 0
    (got,) = _run(helper.make_node(op, ["a", "b"], ["y"]), {"a": a, "b": b})
    exact = traits(op).numpy
    assert exact is not None
    np.testing.assert_array_equal(got, exact(a, b))


def test_where_broadcasts_all_three_operands() -> None:
    cond = np.array([True, False, True])
    (got,) = _run(helper.make_node("Where", ["c", "a", "b"], ["y"]), {"c": cond, "a": A, "b": B})
    np.testing.assert_array_equal(got, np.where(cond, A, B))


@pytest.mark.parametrize("op, attrs", [("Sin", {}), ("Elu", {}), ("Softmax", {}), ("Hardmax", {"axis": 1}),
                                       ("LpNormalization", {}), ("Shrink", {"lambd": 1.0}), ("Trilu", {})])
def test_a_same_shape_op_keeps_its_operand_shape(op: str, attrs: dict[str, Any]) -> None:
    assert traits(op).same_shape
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
    (got,) = _run(helper.make_node(op, ["x"], ["y"], **attrs), {"x": x})
    assert got.shape == x.shape


def test_a_float_division_by_zero_does_not_trap() -> None:
    assert may_trap("Div", [np.dtype(np.float32)] * 2) == Trap.NONE
    assert may_trap("Mod", [np.dtype(np.float64)] * 2) == Trap.NONE
    zero = np.zeros(2, np.float32)
    (got,) = _run(helper.make_node("Div", ["a", "b"], ["y"]), {"a": np.array([1, -1], np.float32), "b": zero})
    np.testing.assert_array_equal(got, [np.inf, -np.inf])


def test_an_integer_division_may_trap() -> None:
    """Not run: an integer division by zero is a fault in native code."""
    for op in ("Div", "Mod"):
        assert Trap.ZERO_DIVISOR in may_trap(op, [np.dtype(np.int64)] * 2)
        assert Trap.ZERO_DIVISOR in may_trap(op, [np.dtype(np.int32), None])
        assert Trap.ZERO_DIVISOR in may_trap(op)  # operand types unknown


@pytest.mark.parametrize("op, feeds, trap", [
    ("Gather", {"x": np.arange(3, dtype=np.float32), "i": np.array([5], np.int64)}, Trap.INDEX),
    ("GatherElements", {"x": np.arange(3, dtype=np.float32), "i": np.array([3], np.int64)}, Trap.INDEX),
    ("Reshape", {"x": np.arange(6, dtype=np.float32), "i": np.array([4], np.int64)}, Trap.SHAPE),
    ("Expand", {"x": np.arange(3, dtype=np.float32), "i": np.array([2], np.int64)}, Trap.SHAPE),
])
def test_an_op_said_to_trap_raises_for_some_values(op: str, feeds: dict[str, np.ndarray], trap: Trap) -> None:
    assert trap in traits(op).traps
    with pytest.raises(Exception):
        _run(helper.make_node(op, ["x", "i"], ["y"]), feeds)


# ---------------------------------------------------------------------- what the passes rely on

INVARIANT_DIVISION = """
    graph main(%a: {t}[], %b: {t}[], %n: i64[]) -> (%total) {{
      %zero: {t}[] = Constant() value={t}[]:[0]
      %total: {t}[] = loop count=%n {{
        recurrence %s: {t}[] = %zero -> %s_next
        %q: {t}[] = Div(%a, %b)
        %s_next: {t}[] = Add(%s, %q)
        last %total = %s
      }}
    }}
"""


def _loop_division(dtype: str) -> Any:
    graph = parse(dedent(INVARIANT_DIVISION.format(t=dtype)).strip())
    verify(graph)
    LoopDistribution()(graph)
    verify(graph)
    return graph


def test_an_integer_division_stays_in_a_loop_that_may_run_no_trip() -> None:
    graph = _loop_division("i64")
    assert [n.op for n in graph.nodes] == ["Constant", "Loop"]
    feeds = {"a": np.array(7, np.int64), "b": np.array(0, np.int64), "n": np.array(0, np.int64)}
    assert interpret(graph, feeds)[0] == 0  # no trip: no division
    feeds = {"a": np.array(7, np.int64), "b": np.array(2, np.int64), "n": np.array(3, np.int64)}
    assert interpret(graph, feeds)[0] == 9  # 3 trips of 7 // 2


def test_a_float_division_leaves_the_loop() -> None:
    graph = _loop_division("f32")
    assert [n.op for n in graph.nodes] == ["Constant", "Div", "Loop"]
    feeds = {"a": np.array(7, np.float32), "b": np.array(2, np.float32), "n": np.array(3, np.int64)}
    assert interpret(graph, feeds)[0] == pytest.approx(10.5)


def test_the_batching_rule_of_an_op_follows_its_record() -> None:
    from loopc.passes._batching import batchable

    def node(op: str) -> Node:
        return Node(op, [], [])

    assert batchable(node("Acosh")) and batchable(node("MatMul")) and batchable(node("ReduceLogSum"))
    assert not batchable(node("Conv")) and not batchable(node("NoSuchOp"))

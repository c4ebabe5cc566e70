"""Older op forms become the newest-opset form (attributes that became inputs, Softmax's 2-D
coercion, legacy broadcasting) — same numbers as onnxruntime running the original."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.parser
import pytest

from loopc.ir import Graph, If
from loopc.ir.interpret import interpret
from tests.frontend.onnx.helpers import check_against_ort, imported

X = {"x": np.random.default_rng(3).normal(size=(2, 3, 4)).astype(np.float32)}


def model(opset: int, body: str, out: str = "float[A,B,C] y") -> str:
    return f"""
    <ir_version: 7, opset_import: ["" : {opset}]>
    g (float[2,3,4] x) => ({out}) {{ {body} }}"""


def ops(graph: Graph) -> list[str]:
    return [n.op for _, n in graph.walk()]


@pytest.mark.parametrize("axis", [1, 2, -1, 0])
def test_softmax_before_13_coerces_to_2d(axis: int) -> None:
    for op in ("Softmax", "LogSoftmax"):
        ir = check_against_ort(model(11, f"y = {op}<axis = {axis}>(x)"), X)
        if axis in (2, -1):  # already the last axis: no reshaping needed
            assert ops(ir.graph) == [op] and ir.graph.nodes[0].attrs["axis"] == -1
        else:
            assert ops(ir.graph) == ["Flatten", op, "Shape", "Reshape"]


def test_attributes_that_became_inputs() -> None:
    cases = [
        (11, "s = Unsqueeze<axes = [0]>(x)\n y = Squeeze<axes = [0]>(s)"),
        (12, "y = ReduceSum<axes = [1], keepdims = 1>(x)"),
        (17, "y = ReduceMean<axes = [-1], keepdims = 0>(x)", "float[A,B] y"),
        (9, "y = Slice<starts = [0, 1], ends = [2, 3], axes = [1, 2]>(x)"),
        (10, "y = Pad<pads = [0, 1, 0, 0, 2, 1], value = 1.5>(x)"),
        (9, "y, i = TopK<k = 2>(x)", "float[A,B,C] y, int64[A,B,C] i"),
        (6, "y = Clip<min = -0.5, max = 0.25>(x)"),
        (11, "y = Clip(x)"),
    ]
    for opset, body, *out in cases:
        ir = check_against_ort(model(opset, body, *out), X)
        for _, node in ir.graph.walk():
            assert not {"axes", "starts", "pads", "shape", "k", "min"} & node.attrs.keys(), (opset, body)


def test_split_attribute_and_implicit_equal_split() -> None:
    ir = check_against_ort(model(11, "a, b = Split<axis = 2, split = [1, 3]>(x)", "float[A,B,C] a, float[D,E,F] b"), X)
    split = next(n for n in ir.graph.nodes if n.op == "Split")
    assert len(split.inputs) == 2 and "split" not in split.attrs
    ir = check_against_ort(model(13, "a, b = Split<axis = 2>(x)", "float[A,B,C] a, float[D,E,F] b"), X)
    split = next(n for n in ir.graph.nodes if n.op == "Split")
    assert split.attrs["num_outputs"] == 2


def test_legacy_broadcast_with_axis() -> None:
    text = """
    <ir_version: 3, opset_import: ["" : 6]>
    g (float[2,3,4] x, float[3] b) => (float[2,3,4] y) { y = Add<broadcast = 1, axis = 1>(x, b) }"""
    feeds = dict(X, b=np.array([1.0, 2.0, 3.0], np.float32))
    ir = imported(text)  # onnxruntime has no opset-6 Add any more: numpy is the oracle
    (y,) = interpret(ir.graph, feeds)
    np.testing.assert_allclose(y, X["x"] + feeds["b"][None, :, None])
    add = ir.graph.nodes[-1]
    assert add.op == "Add" and not add.attrs and add.inputs[1].producer.op == "Unsqueeze"


def test_opset_1_to_4_forms() -> None:
    text = """
    <ir_version: 3, opset_import: ["" : 4]>
    g (float[2,3,4] x) => (float[4,6] y) { r = Reshape<shape = [4, 6]>(x)  y = Cast<to = "FLOAT">(r) }"""
    ir = imported(onnx.parser.parse_model(text))
    reshape, cast = ir.graph.nodes[-2:]
    assert reshape.op == "Reshape" and reshape.inputs[1].producer.attrs["value"].tolist() == [4, 6]
    assert cast.attrs["to"] == onnx.TensorProto.FLOAT
    (y,) = interpret(ir.graph, X)
    np.testing.assert_array_equal(y, X["x"].reshape(4, 6))


def test_rewrites_reach_into_loop_bodies() -> None:
    text = """
    <ir_version: 7, opset_import: ["" : 11]>
    g (int64 n, float[2,3] x) => (float[2,3] y) {
        y = Loop(n, "", x) <body = b (int64 i, bool c, float[2,3] v) => (bool c_out, float[2,3] v_out) {
            c_out = Identity(c)
            v_out = Softmax<axis = 0>(v)
        }>
    }"""
    feeds = {"n": np.array(2, np.int64), "x": X["x"][0, :2, :3].copy()}
    ir = check_against_ort(text, feeds)
    assert "Flatten" in ops(ir.graph)


def test_if_translates_both_branches_reading_outer_values() -> None:
    text = """
    <ir_version: 8, opset_import: ["" : 17]>
    g (bool c, float[2,3,4] x) => (float[2,3,4] y) {
        y = If(c) <then_branch = t () => (float[2,3,4] a) { a = Neg(x) },
                   else_branch = e () => (float[2,3,4] a) { a = Softmax(x) }>
    }"""
    for cond in (True, False):
        ir = check_against_ort(text, dict(X, c=np.array(cond)))
    conditional = ir.graph.nodes[0]
    assert isinstance(conditional, If)
    assert conditional.then_branch.nodes[0].inputs[0] is ir.graph.inputs[1]
    assert imported(text).graph.outputs[0].shape == (2, 3, 4)


@pytest.mark.parametrize("opset, body", [
    (7, 'y = Upsample<mode = "nearest", scales = [1.0, 2.0, 2.5]>(x)'),
    (9, 's = Constant<value = float[3] {1, 1.5, 2}>()\n y = Upsample<mode = "linear">(x, s)'),
    (10, 's = Constant<value = float[3] {1, 0.6, 0.5}>()\n y = Resize<mode = "nearest">(x, s)'),
    (10, 's = Constant<value = float[3] {1, 2, 3}>()\n y = Resize<mode = "nearest">(x, s)'),
])
def test_upsample_and_resize_10_become_resize(opset: int, body: str) -> None:
    """Asymmetric coordinates; nearest floors when enlarging and takes the ceiling when shrinking
    (0.6 of 3 rows maps rows 0, 1 to 0, 1.67: the ceiling reads row 2)."""
    ir = check_against_ort(model(opset, body), X)
    resize = next(n for n in ir.graph.nodes if n.op not in ("Constant",))
    assert resize.op == "Resize" and resize.attrs["coordinate_transformation_mode"] == "asymmetric"

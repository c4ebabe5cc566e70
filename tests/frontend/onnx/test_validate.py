"""Malformed ONNX models are refused before translation, as onnx.checker and onnxruntime refuse them:
one line naming the node, the op and what is wrong — never an internal error from a pass or TensorRT,
never a silently different model. Each mutant is a small valid model with one thing broken; the
valid ones are compared with onnxruntime, so the checks are seen to let the right models through.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx
import onnx.parser
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

from loopc.compiler import load_ir
from loopc.errors import FrontendError, LimitError, LoopcError, UnsupportedOpError
from loopc.ir.interpret import interpret
from tests.frontend.onnx.helpers import check_against_ort, refused

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto],
          initializers: list[onnx.TensorProto] = (), opset: int = 17, **kwargs: object) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **kwargs)


def tensor(name: str, shape: list[int | None], elem: int = F) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def unary(op: str = "Relu", inputs: tuple[str, ...] = ("x",), outputs: tuple[str, ...] = ("y",), opset: int = 17,
          **attrs: object) -> onnx.ModelProto:
    """``y = op(x)`` on a float [2, 3] input: the smallest model a node mutant fits in."""
    node = helper.make_node(op, list(inputs), list(outputs), name="n", **attrs)
    return model([node], [tensor("x", [2, 3])], [tensor(o, None) for o in outputs if o], opset=opset)


def parsed(text: str) -> onnx.ModelProto:
    return onnx.parser.parse_model(text)


LOOP = """
<ir_version: 8, opset_import: ["" : 17]>
g (int64 n, bool go, float[2] s0) => (float[2] s) {
    s = Loop(n, go, s0) <body = body (int64 i, bool c_in, float[2] s_in) => (bool c_out, float[2] s_out) {
        c_out = Identity(c_in)
        s_out = Add(s_in, s_in)
    }>
}"""


def test_the_unmutated_models_match_onnxruntime() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    check_against_ort(unary("Relu"), {"x": x})
    cast = unary("Cast", to=I64)
    cast.graph.output[0].type.tensor_type.elem_type = I64
    check_against_ort(cast, {"x": x})
    check_against_ort(LOOP, {"n": np.array(3, np.int64), "go": np.array(True), "s0": np.ones(2, np.float32)})


# ------------------------------------------------------------------------------- versions, domains


@pytest.mark.parametrize("ir_version", [2, 0, 99])  # one or two newer: read with a warning (test_newer_opsets.py)
def test_ir_version_out_of_range(ir_version: int) -> None:
    proto = unary()
    proto.ir_version = ir_version
    refused(proto, FrontendError, f"ir_version {ir_version} is not one this onnx package reads")


def test_negative_opset_import() -> None:
    proto = unary()
    proto.opset_import.append(helper.make_opsetid("ai.onnx.ml", -1))
    refused(proto, FrontendError, "opset_import gives domain 'ai.onnx.ml' version -1")


def test_opset_imported_twice() -> None:
    proto = unary()
    proto.opset_import.append(helper.make_opsetid("ai.onnx", 13))
    refused(proto, FrontendError, "opset_import names domain 'ai.onnx' twice")


def test_a_custom_domains_op_is_named_with_its_domain_and_that_domains_opset() -> None:
    proto = unary("MyOp")
    proto.graph.node[0].domain = "com.example"
    proto.opset_import.append(helper.make_opsetid("com.example", 3))
    error = refused(proto, UnsupportedOpError)
    assert str(error) == (
        "node 'n' (MyOp, com.example opset 3): op 'MyOp' of domain 'com.example' is not one loopc reads: loopc "
        "converts the ops of ONNX's default domain that `loopc ops` lists; expand it into standard ONNX ops before "
        "exporting the model (an op only a custom runtime or plugin implements cannot be built)")
    assert (error.node, error.op, error.opset) == ("n", "MyOp", "com.example opset 3")


def test_a_custom_domain_the_model_does_not_import_is_named_as_a_domain() -> None:
    proto = unary("MyOp")
    proto.graph.node[0].domain = "com.example"
    refused(proto, UnsupportedOpError, "node 'n' (MyOp, domain com.example): op 'MyOp' of domain 'com.example'")


def test_onnxruntimes_contrib_ops_are_sent_back_to_before_its_optimizer() -> None:
    proto = unary("FusedGelu")
    proto.graph.node[0].domain = "com.microsoft"
    proto.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    refused(proto, UnsupportedOpError, "node 'n' (FusedGelu, com.microsoft opset 1): op 'FusedGelu' of domain "
            "'com.microsoft' is not one loopc reads", "onnxruntime's contrib ops", "give loopc the model from before")


def test_unknown_op() -> None:
    refused(unary("Frobnicate"), FrontendError, "node 'n' (Frobnicate, opset 17): 'Frobnicate' is not an ONNX op")


def test_op_newer_than_the_opset() -> None:
    refused(unary("Trilu", opset=11), FrontendError,
            "node 'n' (Trilu, opset 11): Trilu does not exist in opset 11; it was added in opset 14")


# ------------------------------------------------------------------------------------ attributes


@pytest.mark.parametrize(("proto", "fragment"), [
    (unary("Cast"), "node 'n' (Cast, opset 17): required attribute 'to' is missing"),
    (unary("Cast", to=999), "node 'n' (Cast, opset 17): attribute to=999 is not an ONNX data type"),
    (unary("Relu", alpha=1.0), "node 'n' (Relu, opset 17): Relu has no attribute 'alpha' (it takes: none)"),
    (unary("Softmax", axis=[1]), "node 'n' (Softmax, opset 17): attribute 'axis' is INTS; Softmax takes it as INT"),
    (unary("Einsum"), "node 'n' (Einsum, opset 17): required attribute 'equation' is missing"),
], ids=["cast-without-to", "cast-to-999", "unknown", "mistyped", "einsum-without-equation"])
def test_attribute_against_the_schema(proto: onnx.ModelProto, fragment: str) -> None:
    refused(proto, FrontendError, fragment)


def test_attribute_given_twice() -> None:
    proto = unary("Softmax", axis=1)
    proto.graph.node[0].attribute.append(helper.make_attribute("axis", 0))
    refused(proto, FrontendError, "node 'n' (Softmax, opset 17): attribute 'axis' is given twice")


def test_attribute_referring_to_a_function_attribute_outside_a_function() -> None:
    proto = unary("Softmax")
    attr = onnx.AttributeProto(name="axis", ref_attr_name="the_axis", type=onnx.AttributeProto.INT)
    proto.graph.node[0].attribute.append(attr)
    refused(proto, FrontendError, "node 'n' (Softmax, opset 17): attribute 'axis' refers to 'the_axis' "
            "(ref_attr_name), which only a node inside a function may do")


# ---------------------------------------------------------------------------------------- arity


@pytest.mark.parametrize(("proto", "fragment"), [
    (unary("Relu", ("x", "x")), "Relu takes exactly 1 input, the node has 2"),
    (unary("Add", ("x",)), "Add takes exactly 2 inputs, the node has 1"),
    (unary("Relu", outputs=("y", "z")), "Relu takes exactly 1 output, the node has 2"),
    (unary("Concat", (), axis=0), "Concat takes at least 1 input, the node has 0"),
    (unary("Where", ("", "x", "x")), "input condition is required, but the node leaves it empty"),
], ids=["extra-input", "missing-input", "extra-output", "no-variadic-input", "empty-required-input"])
def test_inputs_and_outputs_against_the_schema(proto: onnx.ModelProto, fragment: str) -> None:
    refused(proto, FrontendError, "node 'n' (", fragment)


# ------------------------------------------------------------------------------- names (SSA rule)


def test_a_name_defined_twice() -> None:
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="first"), helper.make_node("Neg", ["x"], ["y"], name="second")]
    refused(model(nodes, [tensor("x", [2])], [tensor("y", [2])]), FrontendError,
            "node 'second' (Neg, opset 17): output 'y' is defined twice (first by node 'first')")


def test_a_graph_input_declared_twice() -> None:
    proto = model([helper.make_node("Relu", ["x"], ["y"])], [tensor("x", [2]), tensor("x", [2])], [tensor("y", [2])])
    refused(proto, FrontendError, "the main graph: input 'x' is declared twice")


def test_a_body_redefining_an_outer_name() -> None:
    text = LOOP.replace("s_out = Add(s_in, s_in)", "n = Identity(i)\n        s_out = Add(s_in, s_in)")
    refused(parsed(text), FrontendError, "node 'n' (Identity, opset 17): output 'n' redefines a name of an "
            "enclosing graph (defined there by a graph input)")


def test_an_input_used_before_it_is_defined() -> None:
    """Nodes merely listed out of order are read in dependence order (:mod:`loopc.frontend.onnx.order`); nodes that
    read each other's results in a cycle cannot be."""
    nodes = [helper.make_node("Neg", ["t"], ["y"], name="early"), helper.make_node("Relu", ["y"], ["t"], name="late")]
    refused(model(nodes, [tensor("x", [2])], [tensor("y", [2])]), FrontendError,
            "node 'early' (Neg, opset 17): input 't' is not defined before it is used")


def test_a_graph_input_without_a_type() -> None:
    proto = model([helper.make_node("Relu", ["x"], ["y"])], [helper.make_value_info("x", onnx.TypeProto())],
                  [tensor("y", None)])
    refused(proto, FrontendError, "graph input 'x' declares no type")


# -------------------------------------------------------------------------------------------- types


def test_declared_output_type_the_graph_contradicts() -> None:
    """Was a silent wrong result: the int64 Cast result came out as float32 under the declared type."""
    proto = model([helper.make_node("Cast", ["x"], ["y"], name="c", to=I64)], [tensor("x", [2])], [tensor("y", [2])])
    error = refused(proto, FrontendError, "node 'c' (Cast, opset 17): graph output 'y' is declared float32, but "
                    "the graph computes int64 there")
    assert (error.node, error.op, error.opset) == ("c", "Cast", 17)


def test_operands_of_different_types() -> None:
    proto = model([helper.make_node("Add", ["x", "k"], ["y"], name="n")], [tensor("x", [2]), tensor("k", [2], I64)],
                  [tensor("y", [2])])
    refused(proto, FrontendError, "node 'n' (Add, opset 17): input B 'k' is int64, but input A 'x' is float32; "
            "Add takes one type for both")


def test_operand_of_a_type_the_op_does_not_take() -> None:
    proto = model([helper.make_node("Relu", ["x"], ["y"], name="n")], [tensor("x", [2], TensorProto.BOOL)],
                  [tensor("y", [2], TensorProto.BOOL)])
    refused(proto, FrontendError, "node 'n' (Relu, opset 17): input X 'x' must be a ", "tensor, not bool")


@pytest.mark.parametrize(("old", "new", "fragment"), [
    ("int64 n", "int32 n", "trip count M 'n' must be an int64 tensor, not int32"),
    ("int64 n", "int64[3] n", "trip count M 'n' must hold one element, not shape [3]"),
    ("bool go", "bool[2] go", "condition cond 'go' must hold one element, not shape [2]"),
    ("c_out = Identity(c_in)", "c_out = Cast<to = 1>(c_in)", "the body's cond output 'c_out' must be a bool tensor"),
], ids=["int32-M", "M-of-3", "cond-of-2", "float-next-cond"])
def test_loop_trip_count_and_condition(old: str, new: str, fragment: str) -> None:
    text = LOOP.replace(old, new)
    if "Cast" in new:
        text = text.replace("=> (bool c_out", "=> (float c_out")
    refused(parsed(text), FrontendError, "node 's' (Loop, opset 17): ", fragment)


# ------------------------------------------------------------------------------ tensors and sizes


def initialized(init: onnx.TensorProto) -> onnx.ModelProto:
    return model([helper.make_node("Add", ["x", init.name], ["y"], name="n")], [tensor("x", [1, 2])],
                 [tensor("y", None)], [init])


def test_initializer_declaring_two_to_the_forty_elements_without_data() -> None:
    init = onnx.TensorProto(name="w", data_type=F, dims=[1, 2**40])
    refused(initialized(init), FrontendError, "initializer 'w' has shape [1, 1099511627776] (float32), which takes "
            "1099511627776 values, but holds 0 in float_data")


def test_initializer_declaring_two_to_the_forty_elements_with_a_little_raw_data() -> None:
    init = onnx.TensorProto(name="w", data_type=F, dims=[1, 2**40], raw_data=b"\0" * 8)
    refused(initialized(init), LimitError, "initializer 'w': shape [1, 1099511627776] (float32) would take 4 TiB")


def test_initializer_whose_raw_data_does_not_match_its_shape() -> None:
    init = onnx.TensorProto(name="w", data_type=F, dims=[1, 2], raw_data=b"\0" * 12)
    refused(initialized(init), FrontendError, "initializer 'w' has shape [1, 2] (float32), which takes 8 bytes, "
            "but holds 12 bytes of raw data")


@pytest.mark.parametrize(("init", "cls", "fragment"), [
    (onnx.TensorProto(name="w", data_type=999, dims=[2]), FrontendError, "has data type 999, which is not an ONNX"),
    (onnx.TensorProto(name="w", data_type=F, dims=[-2]), FrontendError, "has a negative dim in its shape [-2]"),
    (helper.make_tensor("w", TensorProto.STRING, [1], [b"a"]), UnsupportedOpError, "holds strings"),
], ids=["type-999", "negative-dim", "strings"])
def test_initializer_of_an_impossible_type_or_shape(init: onnx.TensorProto, cls: type[LoopcError],
                                                    fragment: str) -> None:
    refused(initialized(init), cls, f"initializer 'w' {fragment}")


def test_constant_declaring_two_to_the_forty_elements() -> None:
    value = onnx.TensorProto(name="v", data_type=F, dims=[1, 2**40])
    node = helper.make_node("Constant", [], ["k"], name="big", value=value)
    proto = model([node, helper.make_node("Add", ["x", "k"], ["y"])], [tensor("x", [1, 2])], [tensor("y", None)])
    refused(proto, FrontendError, "node 'big' (Constant, opset 17): attribute 'value' has shape [1, 1099511627776]")


@pytest.mark.parametrize(("attrs", "cls", "fragment"), [
    ({"sparse_value": helper.make_sparse_tensor(helper.make_tensor("v", F, [1], [1.0]),
                                                helper.make_tensor("i", I64, [1], [0]), [2])},
     UnsupportedOpError, "attribute 'sparse_value' is a sparse tensor, which loopc does not read"),
    ({"value_strings": ["a", "b"]}, UnsupportedOpError, "value_strings: string constants are not supported"),
    ({"value_float": 1.0, "value_int": 1}, FrontendError, "this one has value_float, value_int"),
    ({}, FrontendError, "this one has none"),
], ids=["sparse", "strings", "two-values", "no-value"])
def test_constant_values_loopc_does_not_read(attrs: dict[str, object], cls: type[LoopcError], fragment: str) -> None:
    node = helper.make_node("Constant", [], ["k"], name="c", **attrs)
    proto = model([node], [], [tensor("k", None)])
    refused(proto, cls, "node 'c' (Constant, opset 17): ", fragment)


def test_sparse_initializer() -> None:
    proto = unary()
    proto.graph.sparse_initializer.append(helper.make_sparse_tensor(
        helper.make_tensor("sw", F, [1], [1.0]), helper.make_tensor("si", I64, [1], [0]), [2]))
    refused(proto, UnsupportedOpError, "sparse initializer 'sw' is not supported")


# ----------------------------------------------------------------------------------- external data


def external(folder: pathlib.Path, **entries: str) -> pathlib.Path:
    """A model whose initializer w (four float32s) lives in w.bin, its entries changed as given."""
    w = numpy_helper.from_array(np.arange(4, dtype=np.float32).reshape(1, 4), "w")
    proto = initialized(w)
    proto.graph.input[0].CopyFrom(tensor("x", [1, 4]))
    onnx.save(proto, folder / "m.onnx", save_as_external_data=True, location="w.bin", size_threshold=0)
    proto = onnx.load(folder / "m.onnx", load_external_data=False)
    info = proto.graph.initializer[0].external_data
    for key, value in entries.items():
        found = [e for e in info if e.key == key]
        if found:
            found[0].value = value
        else:
            info.add(key=key, value=value)
    onnx.save(proto, folder / "m.onnx")
    return folder / "m.onnx"


def test_external_data_that_matches_loads(tmp_path: pathlib.Path) -> None:
    ir = load_ir(str(external(tmp_path)))
    constant = next(node for node in ir.graph.nodes if node.op == "Constant")
    np.testing.assert_array_equal(constant.attrs["value"], np.arange(4, dtype=np.float32).reshape(1, 4))


@pytest.mark.parametrize(("entries", "fragment"), [
    ({"location": "../outside.bin"}, "tensor 'w' points outside the model's folder (../outside.bin)"),
    ({"location": "/etc/hostname"}, "tensor 'w' points outside the model's folder (/etc/hostname)"),
    ({"location": "w\0.bin"}, "external data location 'w\\x00.bin' is not a valid path"),
    ({"location": "gone.bin"}, "external data file missing: gone.bin"),
    ({"offset": "abc"}, "external data offset 'abc' is not a non-negative integer"),
    ({"offset": "-1"}, "external data offset '-1' is not a non-negative integer"),
    ({"offset": "8"}, "external data at offset 8 needs 16 bytes, but w.bin has only 16"),
    ({"length": "8"}, "external data length 8 does not match its shape [1, 4], which takes 16 bytes"),
], ids=["climbs-out", "absolute", "nul", "missing", "offset-abc", "offset-negative", "past-the-end", "length"])
def test_external_data_checked(tmp_path: pathlib.Path, entries: dict[str, str], fragment: str) -> None:
    (tmp_path / "outside.bin").write_bytes(b"\0" * 16)
    folder = tmp_path / "model"
    folder.mkdir()
    refused(str(external(folder, **entries)), FrontendError, fragment)


def test_external_data_through_a_link_out_of_the_folder(tmp_path: pathlib.Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (tmp_path / "outside.bin").write_bytes(b"\0" * 16)
    os.symlink(tmp_path / "outside.bin", folder / "link.bin")
    refused(str(external(folder, location="link.bin")), FrontendError, "points outside the model's folder (link.bin)")


def test_external_data_above_the_limit_is_not_read(tmp_path: pathlib.Path) -> None:
    """A sparse file of 2 GiB holds the declared data; the limit refuses it before a byte is read."""
    path = external(tmp_path)
    proto = onnx.load(path, load_external_data=False)
    proto.graph.initializer[0].dims[:] = [1, 2**29]
    onnx.save(proto, path)
    with open(tmp_path / "w.bin", "r+b") as handle:
        handle.truncate(2**31)
    refused(str(path), LimitError, "tensor 'w': shape [1, 536870912] (float32) would take 2 GiB")


def test_a_proto_with_external_data_not_loaded(tmp_path: pathlib.Path) -> None:
    proto = onnx.load(external(tmp_path), load_external_data=False)
    refused(proto, FrontendError, "initializer 'w' keeps its data in an external file that was not loaded")


# ---------------------------------------------------------------------------------------- the CLI


def test_the_cli_prints_one_line_and_exits_1(tmp_path: pathlib.Path) -> None:
    from loopc.cli import commands  # noqa: F401  (registers the subcommands)
    from loopc.cli.main import cli

    path = tmp_path / "bad.onnx"
    onnx.save(unary("Cast", to=999), path)
    result = CliRunner().invoke(cli, ["inspect", str(path)])
    assert result.exit_code == 1, result.output
    assert result.output.strip().splitlines()[-1] == (
        "loopc: error: node 'n' (Cast, opset 17): attribute to=999 is not an ONNX data type")


def test_axis_out_of_range_in_a_loop_body() -> None:
    """Was an IndexError from the pass that turns x[i] into an iterator."""
    proto = onnx.load(pathlib.Path(__file__).resolve().parents[3] / "samples" / "running_sum.onnx")
    loop = next(node for node in proto.graph.node if node.op_type == "Loop")
    gather = next(node for node in loop.attribute[0].g.node if node.op_type == "Gather")
    gather.attribute[0].i = 2
    refused(proto, FrontendError, "node 'row' (Gather, opset 17): attribute axis=2 is out of range for input 'x' of "
            "rank 2 (it must lie in [-2, 1])")


@pytest.mark.parametrize(("old", "new", "fragment"), [
    ("bool c_in", "double c_in", "the body's cond input 'c_in' must be a bool tensor, not float64"),
    ("int64 i,", "int32 i,", "the body's iteration number input 'i' must be an int64 tensor, not int32"),
    ("float[2] s_in", "double[2] s_in", "loop-carried 's0' is float32, but the body's input 's_in' is float64"),
], ids=["cond-input", "iteration-number", "carried"])
def test_loop_body_inputs_typed_against_the_node(old: str, new: str, fragment: str) -> None:
    """A body input of another type than the node feeds it (was an IR verifier failure after the frontend)."""
    refused(parsed(LOOP.replace(old, new)), FrontendError, "node 's' (Loop, opset 17): ", fragment)


def test_a_loop_body_without_the_input_its_nodes_read() -> None:
    """The body's signature is checked before its nodes: the cause, not the undefined name it leads to."""
    text = LOOP.replace("bool c_in, float[2] s_in)", "bool c_in)")
    refused(parsed(text), FrontendError, "node 's' (Loop, opset 17): the body has 2 inputs; a Loop with 1 "
            "loop-carried value(s) needs 3")


def test_a_scan_body_with_an_output_too_many() -> None:
    text = """
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2] s0, float[3,2] x) => (float[2] s) {
        s = Scan(s0, x) <num_scan_inputs = 1,
            body = body (float[2] s_in, float[2] xe) => (float[2] s_out, float[2] extra) {
                s_out = Add(s_in, xe)
                extra = Identity(xe)
            }>
    }"""
    refused(parsed(text), FrontendError, "node 's' (Scan, opset 17): the body has 2 inputs and 2 outputs; this Scan "
            "has 2 state and scan inputs and 1 outputs")


# ------------------------------------------------------- contradictions ONNX's strict inference finds


H17 = '<ir_version: 8, opset_import: ["" : 17]>\n'
SCAN = H17 + """g (float[2] s0, float[3,2] x) => (float[2] s, float[3,2] ys) {
    s, ys = Scan(s0, x) <num_scan_inputs = 1, body = body (float[2] s_in, float[2] xe) => (float[2] s_out, float[2] y) {
        s_out = Add(s_in, xe)
        y = Identity(s_out)
    }>
}"""
#: A Loop whose body has two unnamed Identity nodes: the one blamed is found by what it declares.
LOOP_WITH_SCAN_OUTPUT = H17 + """g (int64 n, bool go, float[2] s0) => (float[2] s, float[N,2] ys) {
    s, ys = Loop(n, go, s0) <body = body (int64 i, bool c_in, float[2] s_in)
                                        => (bool c_out, float[2] s_out, float[2] y) {
        c_out = Identity(c_in)
        s_out = Add(s_in, s_in)
        y = Identity(s_in)
    }>
}"""
CONTROL = {"s0": np.array([1, -2], np.float32), "x": np.arange(6, dtype=np.float32).reshape(3, 2),
           "n": np.array(3, np.int64), "go": np.array(True)}


def test_the_unmutated_body_declarations_match_onnxruntime() -> None:
    for text in (SCAN, LOOP_WITH_SCAN_OUTPUT):
        proto = parsed(text)
        check_against_ort(proto, {i.name: CONTROL[i.name] for i in proto.graph.input})


@pytest.mark.parametrize(("text", "old", "new", "fragment"), [
    (SCAN, "float[2] y)", "int8[2] y)", "node 'y' (Identity, opset 17): output 'y' is declared int8, but the node "
     "computes float32 (ONNX shape inference; inside Scan 's')"),
    (SCAN, "float[2] s_out,", "string[2] s_out,", "node 's_out' (Add, opset 17): output 's_out' is declared string, "
     "but the node computes float32 (ONNX shape inference; inside Scan 's')"),
    (LOOP_WITH_SCAN_OUTPUT, "float[2] y)", "uint8[2] y)", "node 'y' (Identity, opset 17): output 'y' is declared "
     "uint8, but the node computes float32 (ONNX shape inference; inside Loop 's')"),
    (SCAN, "float[2] s_out,", "float s_out,", "node 's_out' (Add, opset 17): output 's_out' is declared rank 0, but "
     "the node computes rank 1 (ONNX shape inference; inside Scan 's')"),
], ids=["scan-output-dtype", "scan-state-string", "loop-scan-output-dtype", "scan-state-rank"])
def test_body_declarations_the_body_contradicts(text: str, old: str, new: str, fragment: str) -> None:
    """Were accepted, the declared type or shape silently ignored (fuzz mutants of test_scan9_sum and the samples)."""
    assert old in text
    error = refused(parsed(text.replace(old, new)), FrontendError, fragment)
    assert error.node == fragment.split("'")[1]


def test_a_branch_output_declared_another_type_inside_a_loop() -> None:
    text = H17 + """g (int64 n, bool go, float[2] s0) => (float[2] s, bool[N] flags) {
        s, flags = Loop(n, go, s0) <body = body (int64 i, bool c_in, float[2] s_in) => (bool c_out, float[2] s_out,
                                                                                       bool f) {
            c_out = Identity(c_in)
            s_out = Add(s_in, s_in)
            f = If(c_in) <then_branch = t () => (float16 ft) { ft = Identity(c_in) },
                          else_branch = e () => (bool fe) { fe = Not(c_in) }>
        }>
    }"""
    refused(parsed(text), FrontendError, "node 'ft' (Identity, opset 17): output 'ft' is declared float16, but the "
            "node computes bool (ONNX shape inference; inside If 'f' inside Loop 's')")


def test_a_body_input_of_no_onnx_type() -> None:
    proto = parsed(LOOP)
    proto.graph.node[0].attribute[0].g.input[2].type.tensor_type.elem_type = 999
    refused(proto, FrontendError, "node 's' (Loop, opset 17): the body's input 's_in' is declared data type 999 (not "
            "an ONNX type), but the node computes float32 (ONNX shape inference)")


def test_a_graph_input_type_the_graph_no_longer_fits() -> None:
    """paddle_gru with its input made float64: the Transpose's declared float32 result was ignored."""
    text = H17 + "g (float[2] x) => (float[2] y) <float[2] t> {\n t = Relu(x)\n y = Cast<to = 1>(t)\n}"
    check_against_ort(parsed(text), {"x": np.array([-1, 2], np.float32)})
    refused(parsed(text.replace("(float[2] x)", "(double[2] x)")), FrontendError, "node 't' (Relu, opset 17): output "
            "'t' is declared float32, but the node computes float64 (ONNX shape inference)")


@pytest.mark.parametrize(("text", "fragment"), [
    (LOOP.replace("s_out = Add(s_in, s_in)", "f = Flatten<axis = 3>(s_in)\n        s_out = Add(s_in, s_in)"),
     "node 'f' (Flatten, opset 17): invalid value(3) for attribute 'axis' (ONNX shape inference; inside Loop 's')"),
    ('<ir_version: 4, opset_import: ["" : 9]>\ng (float[4,3] x) => (float[2,3] y) {\n'
     "    y = Slice<axes = [0, 0], starts = [0], ends = [2]>(x)\n}",
     "node 'y' (Slice, opset 9): attribute axes has incorrect length (ONNX shape inference)"),
], ids=["flatten-axis", "slice-axes"])
def test_attributes_the_op_inference_refuses(text: str, fragment: str) -> None:
    refused(parsed(text), FrontendError, fragment)


@pytest.mark.parametrize(("source", "perm", "fragment"), [
    ("k", "[1, 0, 2]", "attribute perm=[1, 0, 2] is not a permutation of the dims of input 'k', which has rank 0; "
     "a rank-0 input takes perm=[] (or none)"),
    ("x", "[1, 1]", "attribute perm=[1, 1] is not a permutation of the dims of input 'x', which has rank 2; give perm "
     "each of 0 to 1 once"),
    ("x", "[0]", "attribute perm=[0] is not a permutation of the dims of input 'x', which has rank 2"),
], ids=["scalar", "repeated", "short"])
def test_transpose_perm_against_its_input(source: str, perm: str, fragment: str) -> None:
    """A scalar transposed with perm {1,0,2} was a ZeroDivisionError in the backend (keras_lstm mutant)."""
    text = H17 + f"""g (float[2,3] x) => (float[3,2] y) {{
        k = Constant<value = float {{1.0}}>()
        y = Transpose<perm = {perm}>({source})
    }}"""
    refused(parsed(text), FrontendError, "node 'y' (Transpose, opset 17): ", fragment)
    check_against_ort(parsed(text.replace(perm, "[1, 0]").replace("(k)", "(x)")),
                      {"x": np.arange(6, dtype=np.float32).reshape(2, 3)})


def test_an_error_inside_a_function_body_blames_no_node_of_the_model() -> None:
    """ONNX's inference of MeanVarianceNormalization fails inside the op's own function body (onnx 1.23):
    onnxruntime runs such a model, so only an entry that names the model's own nodes refuses it."""
    from loopc.frontend.onnx.inference import inference_error

    proto = parsed(LOOP)
    text = ("[ShapeInferenceError] Inference error(s): (op_type:MeanVarianceNormalization): [ShapeInferenceError] "
            "Inference error(s): (op_type:Constant): [ShapeInferenceError] One and only one of the attributes")
    assert inference_error(Exception(text), proto.graph, 17) is None
    named = text.replace("MeanVarianceNormalization", "Loop, node name: s")
    assert inference_error(Exception(named), proto.graph, 17) is None  # the Loop's body holds no Constant
    mvn = model([helper.make_node("MeanVarianceNormalization", ["x"], ["y"])], [tensor("x", [2, 3, 2, 2])],
                [tensor("y", [2, 3, 2, 2])], opset=13)
    check_against_ort(mvn, {"x": np.arange(24, dtype=np.float32).reshape(2, 3, 2, 2)})


# ------------------------------------------------------------------------------ the iteration number


#: Sums rows ``X[i]`` for i < n: with ``i`` declared [1] the row is [1, 4] (onnxruntime feeds i as [1]).
ITERATION = H17 + """g (float[5,4] X, int64 n) => (float[1,4] acc, int64[N,1] seen) {
    acc0 = Constant<value = float[1,4] {0, 0, 0, 0}>()
    acc, seen = Loop(n, "", acc0) <body = body (int64[1] i, bool c_in, float[1,4] a_in)
                                           => (bool c_out, float[1,4] a_out, int64[1] i_out) {
        row = Gather<axis = 0>(X, i)
        a_out = Add(a_in, row)
        c_out = Identity(c_in)
        i_out = Identity(i)
    }>
}"""


def test_an_iteration_number_declared_one_element_1d_is_one() -> None:
    """paddle2onnx declares it [1], and onnxruntime feeds it so; loopc gives it that shape too (was a scalar:
    Gather rows of rank 1, a scan output of shape [N])."""
    feeds = {"X": np.arange(20, dtype=np.float32).reshape(5, 4), "n": np.array(3, np.int64)}
    check_against_ort(parsed(ITERATION), feeds)
    from tests.backend.trt.oracle import check_onnx

    got = check_onnx(ITERATION, feeds)
    np.testing.assert_array_equal(got["seen"], [[0], [1], [2]])  # by hand: trips 0, 1, 2, each a [1]


@pytest.mark.parametrize("declared", ["int64[3]", "int64[1,1]"])
def test_an_iteration_number_declared_another_shape(declared: str) -> None:
    """The spec gives iteration_num as a scalar (onnxruntime feeds [1] whatever rank is declared): any
    other declaration contradicts what the body gets (onnxscript_if_in_loop mutant: i declared [3])."""
    refused(parsed(ITERATION.replace("int64[1] i,", f"{declared} i,")), FrontendError,
            f"node 'acc' (Loop, opset 17): the body's iteration number input 'i' is declared "
            f"{declared[5:].replace(',', ', ')}; ONNX gives iteration_num as a scalar")


def test_external_data_file_cut_in_its_trailing_padding_loads(tmp_path: pathlib.Path) -> None:
    """Every tensor's bytes lie inside the file: a file cut after them is whole (a fuzz mutant judged as cut;
    onnxruntime's refusal of it is its own: it refuses the uncut file too, for an initializer a body reads)."""
    path = external(tmp_path)
    (tmp_path / "w.bin").write_bytes((tmp_path / "w.bin").read_bytes() + b"\0" * 16)
    with open(tmp_path / "w.bin", "r+b") as handle:
        handle.truncate(20)
    constant = next(node for node in load_ir(str(path)).graph.nodes if node.op == "Constant")
    np.testing.assert_array_equal(constant.attrs["value"], np.arange(4, dtype=np.float32).reshape(1, 4))


def test_a_deprecated_op_is_refused_unless_loopc_upgrades_it():
    """Upsample-10 is deprecated and refused by node; GroupNormalization-18, deprecated for its per-group
    scale and bias, is read and rewritten into opset 21's per-channel form."""
    node = helper.make_node("Upsample", ["x", "s"], ["y"], name="up")
    scales = numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "s")
    with pytest.raises(FrontendError, match="Upsample is deprecated in opset 10"):
        load_ir(model([node], [tensor("x", [2, 3])], [tensor("y", None)], [scales], opset=10))
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], name="gn", num_groups=2)
    params = [numpy_helper.from_array(np.ones(2, np.float32), n) for n in ("s", "b")]
    ir = load_ir(model([node], [tensor("x", [2, 4, 3])], [tensor("y", None)], params, opset=18))
    assert "GroupNormalization" in {n.op for n in ir.graph.nodes}


def _weight_repeated_in_a_body(body_values: np.ndarray) -> onnx.ModelProto:
    """``h = h @ W`` three times in a Loop; W is an initializer of the main graph and, as graph tools and ModelOpt
    write it, again of the body under the same name (with ``body_values``)."""
    w = np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h_in", "W"], ["h_out"]), helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [tensor("i", [], TensorProto.INT64), tensor("cond_in", [], TensorProto.BOOL), tensor("h_in", [1, 2])],
        [tensor("cond_out", [], TensorProto.BOOL), tensor("h_out", [1, 2])],
        initializer=[numpy_helper.from_array(body_values, "W")])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "h0"], ["h"], body=body)], "main", [tensor("h0", [1, 2])],
        [tensor("h", [1, 2])],
        initializer=[numpy_helper.from_array(w, "W"), numpy_helper.from_array(np.array(3, np.int64), "M")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_an_outer_initializer_repeated_in_a_body_with_its_values_is_one_value() -> None:
    w = np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)
    h0 = np.array([[1.0, 2.0]], np.float32)
    proto = _weight_repeated_in_a_body(w.copy())
    onnx.checker.check_model(proto, full_check=True)  # onnx.checker's full check accepts it, as onnxruntime does
    check_against_ort(proto, {"h0": h0})
    np.testing.assert_allclose(interpret(load_ir(proto).graph, {"h0": h0})[0], h0 @ w @ w @ w, rtol=1e-6)  # by hand


def test_an_outer_initializer_repeated_in_a_body_with_other_values_is_refused() -> None:
    refused(_weight_repeated_in_a_body(np.eye(2, dtype=np.float32)), FrontendError,
            "initializer 'W' has other values than the initializer of that name in an enclosing graph",
            "rename one of them")


def test_polygraphys_sanitizer_output_builds_and_matches(tmp_path: pathlib.Path) -> None:
    """``polygraphy surgeon sanitize --fold-constants`` copies the outer weights a loop body reads into the body."""
    corpus = pathlib.Path(__file__).resolve().parents[2] / "models" / "torch"
    sanitized = tmp_path / "kv_cache_decoder.sanitized.onnx"
    polygraphy = pathlib.Path(sys.executable).parent / "polygraphy"
    subprocess.run([str(polygraphy), "surgeon", "sanitize", str(corpus / "kv_cache_decoder.onnx"), "--fold-constants",
                    "-o", str(sanitized)], check=True, capture_output=True)
    proto = onnx.load(sanitized)
    outer = {init.name for init in proto.graph.initializer}
    repeated = {init.name for node in proto.graph.node for attr in node.attribute if attr.type == attr.GRAPH
                for init in attr.g.initializer} & outer
    assert repeated, "the sanitizer no longer repeats outer initializers in the loop body"
    feeds = dict(np.load(corpus / "kv_cache_decoder.inputs.npz"))
    check_against_ort(proto, feeds)


def test_a_loop_condition_of_two_elements_is_refused_naming_it() -> None:
    """A one-element condition (TorchScript's bool[1]) is read as its element; two are no condition."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["h_in"], ["h_out"]),
         helper.make_node("Constant", [], ["two"], value=numpy_helper.from_array(np.array([True, False])))],
        "body", [tensor("i", [], TensorProto.INT64), tensor("cond_in", [], TensorProto.BOOL), tensor("h_in", [2])],
        [tensor("two", [2], TensorProto.BOOL), tensor("h_out", [2])])
    graph = helper.make_graph([helper.make_node("Loop", ["M", "", "h0"], ["h"], body=body, name="loop")], "main",
                              [tensor("h0", [2])], [tensor("h", [2])],
                              initializer=[numpy_helper.from_array(np.array(3, np.int64), "M")])
    refused(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), FrontendError,
            "node 'loop' (Loop, opset 17): the body's cond output 'two' must hold one element, not shape [2]")

"""Conv and ConvTranspose against onnxruntime: every form the converters take (groups, depthwise, strides,
dilations, asymmetric pads, each auto_pad, 1-D / 2-D / 3-D, constant and computed weights, ConvTranspose's
output_padding and output_shape), and the forms they refuse, by node."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import onnx.parser
import onnx.printer
import pytest
from onnx.reference import ReferenceEvaluator

from loopc.backend.trt import to_network
from loopc.backend.trt.registry import converter_for
from loopc.errors import UnsupportedConversionError
from loopc.frontend.onnx import import_model
from loopc.ir import Node, Value

from tests.backend.trt.oracle import build_and_simulate, check_onnx
from tests.onnx_cases import loopc_failures

HEADER = '<ir_version: 8, opset_import: ["" : 19]>'
F32 = np.dtype(np.float32)
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}


def data(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, size=shape).astype(np.float32)


def constant(name: str, array: np.ndarray) -> str:
    dims = ",".join(str(d) for d in array.shape)
    values = ", ".join(repr(float(v)) for v in array.reshape(-1))
    return f"{name} = Constant <value = float[{dims}] {{{values}}}> ()"


def dims_text(shape: tuple[int | str, ...]) -> str:
    return ",".join(str(d) for d in shape)


def model(op: str, attrs: str, x_dims: tuple[int | str, ...], w: np.ndarray | None = None,
          b: np.ndarray | None = None, w_dims: tuple[int | str, ...] | None = None) -> str:
    """One Conv / ConvTranspose of input x; weights and bias constants when given, else inputs w (and b)."""
    inputs = [f"float[{dims_text(x_dims)}] x"]
    body = []
    if w is None:
        inputs.append(f"float[{dims_text(w_dims or ())}] w")
    else:
        body.append(constant("w", w))
    operands = "x, w"
    if b is not None:
        body.append(constant("b", b))
        operands += ", b"
    out = ",".join(f"o{i}" for i in range(len(x_dims)))
    attributes = f" <{attrs}>" if attrs else ""
    body.append(f"y = {op}{attributes} ({operands})")
    lines = "\n            ".join(body)
    return f"""{HEADER}
        g ({", ".join(inputs)}) => (float[{out}] y) {{
            {lines}
        }}"""


def check(op: str, attrs: str, x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None,
          x_dims: tuple[int | str, ...] | None = None) -> dict[str, Any]:
    return check_onnx(model(op, attrs, x_dims or x.shape, w, b), {"x": x}, **TOLERANCE)


def refusal(text: str) -> str:
    with pytest.raises(UnsupportedConversionError) as caught:
        to_network(import_model(onnx.parser.parse_model(text)))
    return str(caught.value)


# -- Conv -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("attrs, w_shape", [
    ("", (4, 3, 3, 3)),
    ("pads = [1, 1, 1, 1]", (4, 3, 3, 3)),
    ("pads = [0, 2, 1, 0], strides = [2, 1]", (4, 3, 3, 2)),  # asymmetric
    ("strides = [2, 3], pads = [1, 1, 1, 1]", (4, 3, 3, 3)),
    ("dilations = [2, 1], pads = [2, 0, 1, 1]", (4, 3, 2, 3)),
    ("group = 3", (6, 1, 3, 3)),  # depthwise with a channel multiplier of 2
    ("kernel_shape = [3, 3], auto_pad = \"SAME_UPPER\", strides = [2, 2]", (4, 3, 3, 3)),
    ("auto_pad = \"SAME_UPPER\", strides = [2, 2]", (4, 3, 2, 2)),  # odd padding: the extra one at the end
    ("auto_pad = \"SAME_LOWER\", strides = [2, 2]", (4, 3, 2, 2)),  # ... at the start
    ("auto_pad = \"SAME_UPPER\", strides = [3, 3]", (4, 3, 1, 2)),  # kernels shorter than the stride
    ("auto_pad = \"VALID\", strides = [2, 2]", (4, 3, 3, 3)),
])
def test_conv_2d_with_constant_weights_and_bias(attrs, w_shape):
    check("Conv", attrs, data((2, 3, 7, 8), 1), data(w_shape, 2), data((w_shape[0],), 3))


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_conv_same_padding_of_a_dilated_kernel(auto_pad):
    """onnxruntime refuses auto_pad SAME with dilations; ONNX's reference implementation is the oracle."""
    x, w = data((1, 2, 7, 6), 26), data((3, 2, 2, 3), 27)
    text = model("Conv", f'auto_pad = "{auto_pad}", dilations = [2, 2], strides = [2, 1]', x.shape, w)
    proto = onnx.parser.parse_model(text)
    _, got = build_and_simulate(import_model(proto), {"x": x})
    want = ReferenceEvaluator(proto).run(None, {"x": x})[0]
    assert got["y"].shape == want.shape == (1, 3, 4, 6)
    np.testing.assert_allclose(got["y"], want, **TOLERANCE)


def test_conv_groups_of_several_channels():
    check("Conv", "group = 2, pads = [1, 0, 1, 2]", data((1, 4, 6, 5), 4), data((6, 2, 3, 3), 5))


def test_conv_1d_is_lowered_to_2d():
    got = check("Conv", "strides = [2], pads = [2, 1], dilations = [2]", data((2, 3, 11), 6), data((5, 3, 3), 7),
                data((5,), 8))
    assert got["y"].shape == (2, 5, 5)


def test_conv_1d_depthwise_auto_pad_same():
    check("Conv", "group = 4, auto_pad = \"SAME_UPPER\"", data((1, 4, 9), 9), data((4, 1, 4), 10))


def test_conv_3d():
    check("Conv", "strides = [1, 2, 2], pads = [1, 0, 1, 1, 1, 0], group = 2", data((1, 4, 5, 6, 7), 11),
          data((6, 2, 3, 2, 3), 12), data((6,), 13))


@pytest.mark.parametrize("attrs, kernel", [
    ("auto_pad = \"SAME_UPPER\", strides = [2, 2]", (3, 3)),  # TensorRT's SAME mode on the dynamic axes
    ("auto_pad = \"SAME_LOWER\", strides = [2, 2]", (2, 2)),
    ("auto_pad = \"SAME_UPPER\", strides = [2, 2]", (1, 1)),  # no padding at all
    ("pads = [1, 0, 0, 1]", (3, 3)),
])
@pytest.mark.parametrize("size", [(7, 8), (6, 5)])
def test_conv_of_dynamic_spatial_dims(attrs, kernel, size):
    x = data((2, 3) + size, 14)
    check("Conv", attrs, x, data((4, 3) + kernel, 15), x_dims=("N", 3, "H", "W"))


def test_conv_weights_and_bias_as_inputs():
    """Weights that are network inputs are the layer's inputs 1 and 2 (TensorRT takes a kernel tensor)."""
    text = f"""{HEADER}
        g (float[N,4,6,6] x, float[6,2,3,3] w, float[6] b) => (float[N,6,4,4] y) {{
            y = Conv <group = 2> (x, w, b)
        }}"""
    check_onnx(text, {"x": data((2, 4, 6, 6), 16), "w": data((6, 2, 3, 3), 17), "b": data((6,), 18)}, **TOLERANCE)


def test_conv_of_computed_weights_without_kernel_shape():
    text = f"""{HEADER}
        g (float[1,3,5,5] x, float[4,3,2,2] w) => (float[1,4,4,4] y) {{
            two = Constant <value = float {{2.0}}> ()
            scaled = Mul(w, two)
            y = Conv (x, scaled)
        }}"""
    check_onnx(text, {"x": data((1, 3, 5, 5), 19), "w": data((4, 3, 2, 2), 20)}, **TOLERANCE)


def test_conv_1d_of_computed_weights():
    text = f"""{HEADER}
        g (float[2,3,9] x, float[4,3,3] w, float[4] b) => (float[2,4,9] y) {{
            y = Conv <pads = [1, 1]> (x, w, b)
        }}"""
    check_onnx(text, {"x": data((2, 3, 9), 21), "w": data((4, 3, 3), 22), "b": data((4,), 23)}, **TOLERANCE)


@pytest.mark.parametrize("op, attrs, w_shape, y_shape", [
    ("Conv", "pads = [1, 1, 1, 1]", (3, 2, 3, 3), (1, 3, 6, 6)),
    ("ConvTranspose", "strides = [2, 2], output_padding = [1, 1]", (2, 3, 3, 3), (1, 3, 14, 14)),
])
def test_float16(op, attrs, w_shape, y_shape):
    text = f"""{HEADER}
        g (float16[1,2,6,6] x, float16[{dims_text(w_shape)}] w, float16[3] b) => (float16[{dims_text(y_shape)}] y) {{
            y = {op} <{attrs}> (x, w, b)
        }}"""
    half = {"x": data((1, 2, 6, 6), 24), "w": data(w_shape, 25), "b": data((3,), 26)}
    check_onnx(text, {k: v.astype(np.float16) for k, v in half.items()}, rtol=1e-2, atol=1e-2)
    constants = retyped(onnx.parser.parse_model(model(op, attrs, (1, 2, 6, 6), half["w"], half["b"])),
                        np.dtype(np.float16))
    check_onnx(onnx.printer.to_text(constants), {"x": half["x"].astype(np.float16)}, rtol=1e-2, atol=1e-2)


def retyped(proto: onnx.ModelProto, dtype: np.dtype[Any]) -> onnx.ModelProto:
    """The same float model in float16 or bfloat16 (opset 22, whose Conv and ConvTranspose take it):
    its inputs, outputs and constants."""
    from onnx import helper, numpy_helper

    narrow = onnx.ModelProto()
    narrow.CopyFrom(proto)
    elem = helper.np_dtype_to_tensor_dtype(dtype)
    if elem == onnx.TensorProto.BFLOAT16:
        narrow.ir_version = 10
        narrow.opset_import[0].version = 22
    for value in list(narrow.graph.input) + list(narrow.graph.output):
        value.type.tensor_type.elem_type = elem
    for node in narrow.graph.node:
        for attr in node.attribute:
            if attr.name == "value":
                attr.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(attr.t).astype(dtype), attr.t.name))
    return narrow


@pytest.mark.parametrize("op, attrs, w_shape", [
    ("Conv", "pads = [1, 0, 1, 1]", (3, 2, 3, 3)),
    ("ConvTranspose", "strides = [2, 2], output_padding = [1, 1]", (2, 3, 3, 3)),  # the bias after the slice
    ("ConvTranspose", "strides = [2, 2], dilations = [2, 1]", (2, 3, 3, 3)),
])
def test_bfloat16_with_constant_weights(op, attrs, w_shape):
    """TensorRT wants bfloat16 weights, which its Python API cannot take: they are constant tensors; its
    builder has no bfloat16 deconvolution: that is computed in float32. The oracle is onnxruntime on the
    same values in float32."""
    import ml_dtypes
    import onnxruntime as ort

    def rounded(a: np.ndarray) -> np.ndarray:
        return a.astype(ml_dtypes.bfloat16).astype(np.float32)

    x, w, b = rounded(data((1, 2, 5, 5), 60)), rounded(data(w_shape, 61)), rounded(data((3,), 62))
    wide = onnx.parser.parse_model(model(op, attrs, x.shape, w, b))
    _, got = build_and_simulate(import_model(retyped(wide, np.dtype(ml_dtypes.bfloat16))),
                                {"x": x.astype(ml_dtypes.bfloat16)})
    want = ort.InferenceSession(wide.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert got["y"].dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_allclose(got["y"].astype(np.float32), want, rtol=2e-2, atol=2e-2)


# -- ConvTranspose ------------------------------------------------------------------------------------


@pytest.mark.parametrize("attrs, w_shape", [
    ("", (3, 2, 3, 3)),
    ("strides = [2, 3]", (3, 2, 3, 3)),
    ("strides = [2, 2], pads = [1, 0, 0, 2]", (3, 2, 3, 3)),
    ("dilations = [2, 3]", (3, 2, 2, 3)),
    ("dilations = [2, 1], strides = [2, 2]", (3, 2, 2, 3)),  # the builder's refusal bridged: a dilated kernel
    ("dilations = [1, 2], strides = [3, 1], group = 3", (3, 1, 3, 2)),
    ("group = 3, strides = [2, 2]", (3, 1, 3, 3)),  # depthwise
    ("strides = [2, 2], output_padding = [1, 0], pads = [1, 1, 1, 1]", (3, 2, 3, 3)),  # within the end pad
    ("strides = [3, 2], output_padding = [2, 1]", (3, 2, 3, 3)),  # beyond it: zeros, then the bias
    ("strides = [2, 2], output_padding = [1, 1], pads = [0, 1, 0, 0]", (3, 2, 3, 3)),
    ("strides = [2, 2], output_shape = [10, 9]", (3, 2, 3, 3)),  # smaller than the full 11 x 11
    ("strides = [2, 2], output_shape = [12, 11]", (3, 2, 3, 3)),  # larger: zeros at the end
    ("strides = [2, 2], output_shape = [10, 9], auto_pad = \"SAME_UPPER\"", (3, 2, 3, 3)),
    ("strides = [2, 2], output_shape = [10, 9], output_padding = [1, 1]", (3, 2, 3, 3)),
    ("strides = [2, 2], auto_pad = \"SAME_UPPER\"", (3, 2, 3, 3)),
    ("strides = [2, 2], auto_pad = \"SAME_LOWER\"", (3, 2, 4, 4)),
    ("strides = [2, 2], auto_pad = \"SAME_UPPER\", output_padding = [1, 1]", (3, 2, 3, 2)),
    ("strides = [2, 2], auto_pad = \"VALID\", output_padding = [1, 1]", (3, 2, 3, 3)),
    ("kernel_shape = [3, 3], strides = [2, 2]", (3, 2, 3, 3)),
])
def test_conv_transpose_2d(attrs, w_shape):
    check("ConvTranspose", attrs, data((2, 3, 5, 5), 30), data(w_shape, 31), data((w_shape[1] * _group(attrs),), 32))


def _group(attrs: str) -> int:
    return 3 if "group = 3" in attrs else 1


def test_conv_transpose_strided_and_dilated_of_computed_weights():
    """The kernel tensor is dilated by layers (TensorRT's builder refuses a strided and dilated deconvolution)."""
    text = f"""{HEADER}
        g (float[2,4,3,4] x, float[4,3,2,3] w) => (float[2,6,7,13] y) {{
            y = ConvTranspose <group = 2, strides = [2, 3], dilations = [3, 2], pads = [0, 1, 1, 0]> (x, w)
        }}"""
    check_onnx(text, {"x": data((2, 4, 3, 4), 48), "w": data((4, 3, 2, 3), 49)}, **TOLERANCE)


def test_conv_transpose_groups_of_several_channels():
    check("ConvTranspose", "group = 2, strides = [2, 1]", data((1, 4, 3, 4), 33), data((4, 3, 2, 2), 34),
          data((6,), 35))


def test_conv_transpose_1d_with_output_padding_beyond_the_pads():
    got = check("ConvTranspose", "strides = [3], output_padding = [2]", data((2, 3, 4), 36), data((3, 2, 3), 37),
                data((2,), 38))
    assert got["y"].shape == (2, 2, 3 * 3 + 3 + 2)


def test_conv_transpose_3d():
    check("ConvTranspose", "strides = [1, 2, 2], pads = [0, 1, 0, 1, 0, 1], output_padding = [0, 1, 1]",
          data((1, 2, 3, 4, 3), 39), data((2, 3, 2, 3, 3), 40), data((3,), 41))


@pytest.mark.parametrize("attrs", ["strides = [2, 2], output_padding = [1, 1]",  # a slice sized at run time
                                   "strides = [2, 2], auto_pad = \"SAME_LOWER\"",
                                   "strides = [2, 2], pads = [1, 1, 0, 1]"])
def test_conv_transpose_of_dynamic_spatial_dims(attrs):
    check("ConvTranspose", attrs, data((2, 3, 4, 5), 42), data((3, 2, 3, 3), 43), data((2,), 44),
          x_dims=("N", 3, "H", "W"))


def test_conv_transpose_weights_and_bias_as_inputs():
    text = f"""{HEADER}
        g (float[1,4,3,3] x, float[4,1,3,3] w, float[2] b) => (float[1,2,8,8] y) {{
            y = ConvTranspose <group = 2, strides = [2, 2], output_padding = [1, 1]> (x, w, b)
        }}"""
    check_onnx(text, {"x": data((1, 4, 3, 3), 45), "w": data((4, 1, 3, 3), 46), "b": data((2,), 47)}, **TOLERANCE)


# -- refusals -------------------------------------------------------------------------------------------


def test_dynamic_channel_count_is_refused_by_node():
    message = refusal(model("Conv", "", ("N", "C", 5, 5), data((2, 3, 3, 3), 50)))
    assert message.startswith("node 'y' (Conv, opset 19): a dynamic channel count (input dim 1)")


def test_computed_weights_of_dynamic_output_channels_are_refused():
    message = refusal(model("Conv", "kernel_shape = [3, 3]", (1, 3, 5, 5), w_dims=("M", 3, 3, 3)))
    assert "dynamic output-channel count (dim 0)" in message


def test_computed_weights_of_dynamic_spatial_dims_need_kernel_shape():
    message = refusal(model("Conv", "", (1, 3, 5, 5), w_dims=(4, 3, "k", "k")))
    assert "without kernel_shape" in message


@pytest.mark.parametrize("op, attrs, reason", [
    ("Conv", {"pads": [-1, 0, 0, 0]}, "negative pads [-1, 0, 0, 0]"),
    ("ConvTranspose", {"auto_pad": "SAME"}, "auto_pad='SAME'"),
    ("Conv", {"strides": [0, 1]}, "strides=[0, 1]"),
    ("ConvTranspose", {"output_padding": [-1, 0]}, "negative output_padding [-1, 0]"),
])
def test_attributes_no_shape_makes_valid_are_refused_before_conversion(op, attrs, reason):
    """The capability check reads the node alone (ONNX's shape inference refuses most of these earlier)."""
    x, w, y = Value("x", F32, (1, 3, 5, 5)), Value("w", F32, (3, 3, 3, 3)), Value("y", F32, None)
    node = Node(op, [x, w], [y], attrs, name="n", origin=f"node 'n' ({op}, opset 19)")
    with pytest.raises(UnsupportedConversionError, match=re.escape(reason)):
        converter_for(node)


def test_four_spatial_axes_are_refused():
    message = refusal(model("Conv", "", (1, 1, 3, 3, 3, 3), data((1, 1, 2, 2, 2, 2), 52)))
    assert "rank-6 input" in message


def test_same_padding_of_dynamic_dims_that_tensorrt_pads_differently_is_refused():
    message = refusal(model("Conv", "auto_pad = \"SAME_UPPER\", strides = [3, 3]", (1, 3, "H", "W"),
                            data((2, 3, 2, 2), 53)))
    assert "shorter than the strides" in message


def test_conv_transpose_output_shape_of_dynamic_dims_is_refused():
    message = refusal(model("ConvTranspose", "strides = [2, 2], output_shape = [10, 10]", (1, 3, "H", "W"),
                            data((3, 2, 3, 3), 54)))
    assert "output_shape with a dynamic input spatial dim" in message


def test_conv_transpose_same_padding_where_runtimes_disagree_is_refused():
    message = refusal(model("ConvTranspose", "strides = [3, 3], auto_pad = \"SAME_UPPER\"", (1, 3, 4, 4),
                            data((3, 2, 2, 2), 55)))
    assert "onnxruntime makes it the full deconvolution" in message


# -- ONNX's node tests ----------------------------------------------------------------------------------

def conv_node_cases() -> list[Any]:
    """Every ONNX node test with a Conv, ConvTranspose or CausalConvWithState node (test_conv*,
    test_convtranspose*, the causal convolutions and their expansions)."""
    from tests.conformance import node_test_cases

    ops = {"Conv", "ConvTranspose", "CausalConvWithState"}
    return [c for c in node_test_cases() if {n.op_type for n in c.model.graph.node} & ops]


def test_conv_node_tests_match_through_loopc():
    """One test over all cases (collecting ONNX's node tests takes seconds: not at collection time)."""
    cases = conv_node_cases()
    assert len(cases) >= 43
    wrong = loopc_failures(cases)
    assert not wrong, "\n".join(wrong)


def test_conv_inside_a_scan_body():
    """A convolution per trip: the body reads the outer constant weights and carries a running sum."""
    w, b = data((2, 2, 3, 3), 70), data((2,), 71)
    text = f"""{HEADER}
        g (float[4,1,2,5,5] xs, float[1,2,5,5] s0) => (float[1,2,5,5] s, float[4,1,2,5,5] ys) {{
            {constant("w", w)}
            {constant("b", b)}
            s, ys = Scan <num_scan_inputs = 1,
                          body = f (float[1,2,5,5] acc, float[1,2,5,5] x) => (float[1,2,5,5] acc_out,
                                                                              float[1,2,5,5] y) {{
                y = Conv <pads = [1, 1, 1, 1]> (x, w, b)
                acc_out = Add (acc, y)
            }}> (s0, xs)
        }}"""
    check_onnx(text, {"xs": data((4, 1, 2, 5, 5), 72), "s0": data((1, 2, 5, 5), 73)}, **TOLERANCE)


# -- random forms -------------------------------------------------------------------------------------

#: What the converters may refuse in a random form: the forms whose answer TensorRT cannot be made to give.
KNOWN_REFUSALS = ("shorter than the strides", "onnxruntime makes it the full deconvolution",
                  "output_shape with a dynamic input spatial dim")


def random_form(seed: int) -> tuple[str, dict[str, np.ndarray]]:
    """A random Conv or ConvTranspose: 1 to 3 spatial axes, groups, strides, dilations, pads or auto_pad,
    output_padding or output_shape, constant or computed weights, with or without bias, static or dynamic."""
    rnd = np.random.default_rng(seed)

    def pick(*options: Any) -> Any:
        return options[int(rnd.integers(len(options)))]

    op = pick("Conv", "ConvTranspose")
    spatial = pick(1, 2, 2, 3)
    group, per_group, maps_per_group = pick(1, 1, 2, 3), pick(1, 2), pick(1, 2)
    channels, maps = group * per_group, group * maps_per_group
    kernel = [pick(1, 2, 3) for _ in range(spatial)]
    strides = [pick(1, 2, 3) for _ in range(spatial)]
    dilations = [pick(1, 1, 2) for _ in range(spatial)]
    sizes = [max(pick(3, 4, 5, 7), (k - 1) * d + 1) for k, d in zip(kernel, dilations)]  # a window fits
    attrs = [f"group = {group}", f"strides = {strides}", f"dilations = {dilations}"]
    if rnd.random() < 0.5:
        attrs.append(f"kernel_shape = {kernel}")
    auto_pad = pick("NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")
    if op == "Conv" and auto_pad.startswith("SAME") and max(dilations) > 1:
        auto_pad = "NOTSET"  # onnxruntime refuses it (test_conv_same_padding_of_a_dilated_kernel has it)
    if auto_pad != "NOTSET":
        attrs.append(f'auto_pad = "{auto_pad}"')
    elif rnd.random() < 0.7:
        attrs.append(f"pads = {[pick(0, 1, 2) for _ in range(2 * spatial)]}")
    if op == "ConvTranspose" and rnd.random() < 0.5:
        attrs.append(f"output_padding = {[int(rnd.integers(max(s, d))) for s, d in zip(strides, dilations)]}")
    if op == "ConvTranspose" and auto_pad == "NOTSET" and rnd.random() < 0.3:
        attrs = [a for a in attrs if not a.startswith(("pads", "output_padding"))]
        full = [(i - 1) * s + (k - 1) * d + 1 for i, s, k, d in zip(sizes, strides, kernel, dilations)]
        attrs.append(f"output_shape = {[f - pick(0, 1, 2) for f in full]}")
    w_shape = (channels, maps_per_group, *kernel) if op == "ConvTranspose" else (maps, per_group, *kernel)
    x, w, b = data((2, channels, *sizes), seed), data(w_shape, seed + 1), data((maps,), seed + 2)
    with_bias, computed, dynamic = rnd.random() < 0.6, rnd.random() < 0.3, rnd.random() < 0.3
    x_dims = ("N", channels, *[f"d{i}" for i in range(spatial)]) if dynamic else x.shape
    if not computed:
        return model(op, ", ".join(attrs), x_dims, w, b if with_bias else None), {"x": x}
    text = model(op, ", ".join(attrs), x_dims, w_dims=w_shape)
    if with_bias:
        text = text.replace(f"{dims_text(w_shape)}] w", f"{dims_text(w_shape)}] w, float[{maps}] b")
        text = text.replace("(x, w)", "(x, w, b)")
        return text, {"x": x, "w": w, "b": b}
    return text, {"x": x, "w": w}


@pytest.mark.parametrize("seed", range(40))
def test_random_forms_match_onnxruntime(seed):
    text, feeds = random_form(seed)
    try:
        check_onnx(text, feeds, **TOLERANCE)
    except UnsupportedConversionError as refused:
        assert any(reason in str(refused) for reason in KNOWN_REFUSALS), refused


def small_unet(size: int) -> str:
    """A two-level UNet: 3x3 convolutions with ReLU, strided convolutions down, ConvTranspose up, and
    skip connections concatenated on the channels."""
    from onnx import TensorProto, helper, numpy_helper

    nodes: list[Any] = []
    weights: list[Any] = []
    rng = np.random.default_rng(80)

    def layer(name: str, x: str, cin: int, cout: int, k: int = 3, stride: int = 1, up: bool = False) -> str:
        shape = (cin, cout, k, k) if up else (cout, cin, k, k)
        kernel = (rng.standard_normal(shape) / np.sqrt(cin * k * k)).astype(np.float32)
        weights.append(numpy_helper.from_array(kernel, f"{name}_w"))
        weights.append(numpy_helper.from_array((rng.standard_normal(cout) * 0.1).astype(np.float32), f"{name}_b"))
        attrs: dict[str, Any] = {"strides": [stride, stride]} if up else {"strides": [stride, stride], "pads": [1] * 4}
        op = "ConvTranspose" if up else "Conv"
        nodes.append(helper.make_node(op, [x, f"{name}_w", f"{name}_b"], [name], **attrs))
        nodes.append(helper.make_node("Relu", [name], [f"{name}_relu"]))
        return f"{name}_relu"

    top = layer("enc1", "x", 3, 8)
    middle = layer("enc2", layer("down1", top, 8, 16, stride=2), 16, 16)
    bottom = layer("enc3", layer("down2", middle, 16, 32, stride=2), 32, 32)
    nodes.append(helper.make_node("Concat", [layer("up2", bottom, 32, 16, k=2, stride=2, up=True), middle], ["cat2"],
                                  axis=1))
    nodes.append(helper.make_node("Concat", [layer("up1", layer("dec2", "cat2", 32, 16), 16, 8, k=2, stride=2, up=True),
                                             top], ["cat1"], axis=1))
    nodes.append(helper.make_node("Conv", [layer("dec1", "cat1", 16, 8), "head_w"], ["y"]))
    weights.append(numpy_helper.from_array(rng.standard_normal((2, 8, 1, 1)).astype(np.float32), "head_w"))
    graph = helper.make_graph(nodes, "unet",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, size, size])], weights)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return onnx.printer.to_text(proto)


def test_small_unet():
    check_onnx(small_unet(32), {"x": data((1, 3, 32, 32), 81)}, **TOLERANCE)



# -- CausalConvWithState --------------------------------------------------------------------------------


@pytest.mark.parametrize("past, activation", [(False, "none"), (True, "silu"), (True, "none")])
@pytest.mark.parametrize("length", [1, 2, 6])
def test_causal_conv_with_state_of_a_dynamic_length(past, activation, length):
    """The state's slice starts where the input's length says (before it, zero filled, when the input is
    shorter than the kernel). onnxruntime runs no opset 27: ONNX's reference implementation is the oracle."""
    inputs = "float[N,3,L] x, float[3,1,4] w, float[3] b" + (", float[N,3,3] past" if past else "")
    text = f"""<ir_version: 10, opset_import: ["" : 27]>
        g ({inputs}) => (float[N,3,L] y, float[N,3,3] state) {{
            y, state = CausalConvWithState <activation = "{activation}"> (x, w, b{", past" if past else ""})
        }}"""
    proto = onnx.parser.parse_model(text)
    feeds = {"x": data((2, 3, length), 90), "w": data((3, 1, 4), 91), "b": data((3,), 92)}
    if past:
        feeds["past"] = data((2, 3, 3), 93)
    _, got = build_and_simulate(import_model(proto), feeds)
    want = ReferenceEvaluator(proto).run(None, feeds)
    for name, expected in zip(("y", "state"), want):
        assert got[name].shape == expected.shape
        np.testing.assert_allclose(got[name], expected, **TOLERANCE, err_msg=name)


def test_causal_conv_with_a_kernel_of_one_carries_an_empty_state():
    """A kernel of 1 looks at no past position: the present state is [N, C, 0], an empty tensor, with a
    dynamic batch too (ONNX's reference is the oracle)."""
    text = """<ir_version: 10, opset_import: ["" : 27]>
        g (float[N,3,5] x, float[3,1,1] w) => (float[N,3,5] y, float[N,3,0] state) {
            y, state = CausalConvWithState (x, w)
        }"""
    proto = onnx.parser.parse_model(text)
    feeds = {"x": data((2, 3, 5), 94), "w": data((3, 1, 1), 95)}
    _, got = build_and_simulate(import_model(proto), feeds)
    want = ReferenceEvaluator(proto).run(None, feeds)
    assert got["state"].shape == want[1].shape == (2, 3, 0)
    np.testing.assert_allclose(got["y"], want[0], **TOLERANCE)


def test_causal_conv_decoding_step_by_step_in_a_scan():
    """The decoder's form: one position a trip, the state carried by the loop. Its outputs are the whole
    sequence's (ONNX's reference runs both)."""
    loop = """<ir_version: 10, opset_import: ["" : 27]>
        g (float[6,2,3] xs, float[3,1,4] w, float[3] b, float[2,3,3] s0) => (float[2,3,3] s, float[6,2,3] ys) {
            s, ys = Scan <num_scan_inputs = 1,
                          body = f (float[2,3,3] state, float[2,3] x) => (float[2,3,3] next, float[2,3] y) {
                axis = Constant <value = int64[1] {2}> ()
                column = Unsqueeze (x, axis)
                out, next = CausalConvWithState <activation = "silu"> (column, w, b, state)
                y = Squeeze (out, axis)
            }> (s0, xs)
        }"""
    whole = """<ir_version: 10, opset_import: ["" : 27]>
        g (float[2,3,6] x, float[3,1,4] w, float[3] b, float[2,3,3] s0) => (float[2,3,6] y, float[2,3,3] s) {
            y, s = CausalConvWithState <activation = "silu"> (x, w, b, s0)
        }"""
    xs, w, b, s0 = data((6, 2, 3), 94), data((3, 1, 4), 95), data((3,), 96), data((2, 3, 3), 97)
    _, got = build_and_simulate(import_model(onnx.parser.parse_model(loop)), {"xs": xs, "w": w, "b": b, "s0": s0})
    y, s = ReferenceEvaluator(onnx.parser.parse_model(whole)).run(None, {"x": xs.transpose(1, 2, 0), "w": w, "b": b,
                                                                       "s0": s0})
    np.testing.assert_allclose(got["ys"], y.transpose(2, 0, 1), **TOLERANCE)
    np.testing.assert_allclose(got["s"], s, **TOLERANCE)

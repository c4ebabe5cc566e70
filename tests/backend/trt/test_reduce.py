"""Reductions, softmax, arg-extremes, TopK, CumSum and LayerNormalization against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend.trt.oracle import check_onnx

RNG = np.random.default_rng(2)
HEADER = '<ir_version: 8, opset_import: ["" : 18]>'
X = RNG.uniform(0.5, 2.0, (2, 3, 4)).astype(np.float32)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                                "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSumExp"])
@pytest.mark.parametrize("axes, keepdims, y", [
    ("{1}", 1, "2,1,4"), ("{-1, 0}", 0, "3"), (None, 0, ""), (None, 1, "1,1,1"),
])
def test_reduce(op, axes, keepdims, y):
    axes_node = f"axes = Constant <value = int64[{axes.count(',') + 1}] {axes}> ()" if axes else ""
    args = "x, axes" if axes else "x"
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x) => ({f"float[{y}]" if y else "float"} y) {{
            {axes_node}
            y = {op} <keepdims = {keepdims}> ({args})
        }}""", {"x": X}, rtol=1e-5, atol=1e-5)


def test_reduce_noop_with_empty_axes():
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x) => (float[2,3,4] y) {{ y = ReduceSum <noop_with_empty_axes = 1> (x) }}""", {"x": X})


def test_reduce_integers():
    check_onnx(f"""{HEADER}
        g (int64[2,3] x) => (int64[2] y) {{
            axes = Constant <value = int64[1] {{1}}> ()
            y = ReduceSum <keepdims = 0> (x, axes)
        }}""", {"x": np.arange(6, dtype=np.int64).reshape(2, 3)})


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax(op, axis):
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x) => (float[2,3,4] y) {{ y = {op} <axis = {axis}> (x) }}""", {"x": X}, atol=1e-6)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis, keepdims, y", [(0, 1, "1,3,4"), (2, 0, "2,3"), (-2, 0, "2,4")])
def test_arg_extremes(op, axis, keepdims, y):
    x = RNG.integers(0, 3, (2, 3, 4)).astype(np.float32)  # ties: the first index wins
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x) => (int64[{y}] y) {{ y = {op} <axis = {axis}, keepdims = {keepdims}> (x) }}""", {"x": x})


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_extremes_of_a_vector(op):
    """TensorRT's TopK needs two dims; a greedy decoder's argmax over logits has one."""
    x = RNG.integers(0, 3, (7,)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[7] x) => (int64 y, float[3] v, int64[3] i) {{
            y = {op} <keepdims = 0> (x)
            k = Constant <value = int64[1] {{3}}> ()
            v, i = TopK (x, k)
        }}""", {"x": x})


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("dims", ["2,3,4", "N,M,4"])
@pytest.mark.parametrize("axis, keepdims, y", [(0, 1, "1,M,4"), (1, 0, "N,4"), (-1, 1, "N,M,1")])
def test_arg_extremes_select_last_index(op, dims, axis, keepdims, y):
    """select_last_index = 1: ties give the last index (the input reversed, d - 1 - i), static and
    dynamic axis lengths."""
    x = RNG.integers(0, 3, (2, 3, 4)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[{dims}] x) => (int64[{y}] y) {{
            y = {op} <axis = {axis}, keepdims = {keepdims}, select_last_index = 1> (x)
        }}""", {"x": x})


@pytest.mark.parametrize("attrs", ["", "<axis = 1, largest = 0>", "<axis = 0>"])
def test_topk(attrs):
    shape = {"": "2,3,2", "<axis = 1, largest = 0>": "2,2,4", "<axis = 0>": "2,3,4"}[attrs]
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x) => (float[{shape}] v, int64[{shape}] i) {{
            k = Constant <value = int64[1] {{2}}> ()
            v, i = TopK {attrs} (x, k)
        }}""", {"x": X})


@pytest.mark.parametrize("threshold", [0.2, 0.6, 1.0])
def test_topk_of_a_filtered_vector_with_a_computed_k(threshold):
    """RetinaNet's per-level candidates: TopK(kept, min(4, len(kept))) of the scores a threshold kept (a
    data-dependent length: more than 4, fewer, none); the k and the indices are computed per run."""
    scores = np.random.default_rng(3).random(10).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[10] scores, float threshold) => (float[K] v, int64[K] i) {{
            live = Greater(scores, threshold)
            where = NonZero(live)
            axis0 = Constant <value = int64[1] {{0}}> ()
            index = Squeeze(where, axis0)
            kept = Gather <axis = 0> (scores, index)
            shape = Shape(kept)
            four = Constant <value = int64[1] {{4}}> ()
            both = Concat <axis = 0> (four, shape)
            k0 = ReduceMin <keepdims = 0> (both)
            one = Constant <value = int64[1] {{1}}> ()
            k = Reshape(k0, one)
            v, i = TopK(kept, k)
        }}""", {"scores": scores, "threshold": np.array(threshold, np.float32)})


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("axis", [0, -1])
def test_cumsum(exclusive, reverse, axis):
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x) => (float[2,3,4] y) {{
            axis = Constant <value = int64 {{{axis}}}> ()
            y = CumSum <exclusive = {exclusive}, reverse = {reverse}> (x, axis)
        }}""", {"x": X}, atol=1e-6)


@pytest.mark.parametrize("axis, with_bias", [(-1, True), (1, True), (-1, False)])
def test_layer_normalization(axis, with_bias):
    norm_shape = "4" if axis == -1 else "3,4"
    shape = tuple(int(d) for d in norm_shape.split(","))
    inputs = {"x": RNG.standard_normal((2, 3, 4)).astype(np.float32),
              "s": RNG.standard_normal(shape).astype(np.float32)}
    sig, args = f"float[{norm_shape}] s", "x, s"
    if with_bias:
        inputs["b"] = RNG.standard_normal(shape).astype(np.float32)
        sig, args = sig + f", float[{norm_shape}] b", args + ", b"
    check_onnx(f"""<ir_version: 8, opset_import: ["" : 17]>
        g (float[2,3,4] x, {sig}) => (float[2,3,4] y) {{
            y = LayerNormalization <axis = {axis}, epsilon = 0.001> ({args})
        }}""", inputs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dims", ["2,3,4,5", "N,3,H,W"])
@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pools(dims, op):
    x = np.random.default_rng(5).standard_normal((2, 3, 4, 5)).astype(np.float32)
    check_onnx(f"""<ir_version: 8, opset_import: ["" : 19]>
        g (float[{dims}] x) => (float[A,B,C,D] y) {{ y = {op}(x) }}""", {"x": x})


@pytest.mark.parametrize("axis_type", ["int64", "int32"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("exclusive, reverse", [(0, 0), (1, 1)])
def test_cumsum_axis_fed_as_an_input(axis_type, axis, exclusive, reverse):
    """The axis is a 0-D shape tensor that the profile pins; a negative one counts from the end."""
    check_onnx(f"""{HEADER}
        g (float[N,3,4] x, {axis_type} axis) => (float[N,3,4] y) {{
            y = CumSum <exclusive = {exclusive}, reverse = {reverse}> (x, axis)
        }}""", {"x": X, "axis": np.array(axis, axis_type)}, atol=1e-6)


def test_cumsum_axis_computed_from_constants():
    """An axis computed from constants ((3 - (-2)) mod 3 = 2) is known when the network is built."""
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x) => (float[2,3,4] y) {{
            a = Constant <value = int64 {{3}}> ()
            b = Constant <value = int64 {{-2}}> ()
            five = Sub(a, b)
            axis = Mod(five, a)
            y = CumSum(x, axis)
        }}""", {"x": X}, atol=1e-6)


@pytest.mark.parametrize("dims, axis", [("2,3,4", "-1"), ("2,3,4", "0"), ("2,3,4", "1"), ("N,3,T", "2")])
def test_hardmax_marks_the_first_maximum(dims, axis):
    x = np.round(RNG.uniform(0, 3, (2, 3, 4))).astype(np.float32)  # few values: many ties, the first wins
    check_onnx(f"""<ir_version: 8, opset_import: ["" : 13]>
        g (float[{dims}] x) => (float[{dims}] y) {{ y = Hardmax <axis = {axis}> (x) }}""", {"x": x})


def test_hardmax_of_opset_11_flattens_from_axis():
    """Before 13, Hardmax picked one maximum in each row of the input coerced to 2-D at ``axis``."""
    x = np.round(RNG.uniform(0, 3, (2, 3, 4))).astype(np.float32)
    check_onnx("""<ir_version: 6, opset_import: ["" : 11]>
        g (float[2,3,4] x) => (float[2,3,4] y, float[2,3,4] z) {
            y = Hardmax(x)
            z = Hardmax <axis = 0> (x)
        }""", {"x": x})

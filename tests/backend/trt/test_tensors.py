"""Constant, Identity, Cast, CastLike, Where, Range, ConstantOfShape, Gather and GatherElements against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx.parser
import pytest

from loopc.backend.trt import to_network
from loopc.errors import UnsupportedConversionError
from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import check_onnx

HEADER = '<ir_version: 8, opset_import: ["" : 19]>'
X = np.linspace(-3.5, 4.5, 12, dtype=np.float32).reshape(3, 4)


@pytest.mark.parametrize("to, name", [(7, "int64"), (6, "int32"), (9, "bool"), (10, "float16"), (1, "float")])
def test_cast(to, name):
    check_onnx(f"""{HEADER}
        g (float[3,4] x) => ({name}[3,4] y, float[3,4] z) {{ y = Cast <to = {to}> (x)  z = Identity(x) }}""",
               {"x": X})


def test_cast_like_takes_the_second_inputs_type():
    check_onnx(f"""{HEADER}
        g (float[3,4] x, int32[2] like) => (int32[3,4] y) {{ y = CastLike(x, like) }}""",
               {"x": X, "like": np.array([1, 2], np.int32)})


def test_where_broadcasts_three_ranks():
    check_onnx(f"""{HEADER}
        g (bool[4] c, float[3,4] a, float b) => (float[3,4] y) {{ y = Where(c, a, b) }}""",
               {"c": np.array([True, False, True, False]), "a": X, "b": np.array(-1, np.float32)})


def test_range_of_constants_and_of_inputs():
    check_onnx(f"""{HEADER}
        g (int64 n, int32 lo, int32 step) => (int64[A] a, int32[B] b, int64[C] c) {{
            s = Constant <value = int64 {{1}}> ()
            d = Constant <value = int64 {{2}}> ()
            down = Constant <value = int64 {{-3}}> ()
            a = Range(s, n, d)
            hi = Constant <value = int32 {{20}}> ()
            b = Range(lo, hi, step)
            e = Constant <value = int64 {{10}}> ()
            c = Range(e, s, down)
        }}""", {"n": np.array(8), "lo": np.array(-1, np.int32), "step": np.array(3, np.int32)})


def test_range_of_float_constants():
    check_onnx(f"""{HEADER}
        g (float[2] x) => (float[B] b) {{
            lo = Constant <value = float {{-1.0}}> ()
            hi = Constant <value = float {{2.0}}> ()
            step = Constant <value = float {{0.75}}> ()
            b = Range(lo, hi, step)
        }}""", {"x": np.zeros(2, np.float32)})


def test_constant_of_shape():
    check_onnx(f"""{HEADER}
        g (float[N,M] x) => (float[N,M] y, int64[2,3] z) {{
            s = Shape(x)
            y = ConstantOfShape <value = float[1] {{2.5}}> (s)
            t = Constant <value = int64[2] {{2, 3}}> ()
            z = ConstantOfShape <value = int64[1] {{7}}> (t)
        }}""", {"x": X})


@pytest.mark.parametrize("axis, idx", [(0, [[2, 0], [-1, 1]]), (1, [3, -4, 0]), (-1, 2)])
def test_gather(axis, idx):
    indices = np.array(idx, np.int64)
    shape = ",".join(map(str, indices.shape))
    idx_type = f"int64[{shape}]" if indices.ndim else "int64"
    y_dims = ",".join(f"D{k}" for k in range(1 + indices.ndim))  # rank of x, less one, plus the indices' rank
    check_onnx(f"""{HEADER}
        g (float[N,4] x, {idx_type} i) => (float[{y_dims}] y) {{ y = Gather <axis = {axis}> (x, i) }}""",
               {"x": X, "i": indices})


@pytest.mark.parametrize("axis", [0, 1])
def test_gather_elements(axis):
    indices = np.array([[0, 2, 1, 0], [2, 2, 0, 1]]) if axis == 0 else np.array([[3, 0], [1, 1], [-1, 2]])
    check_onnx(f"""{HEADER}
        g (float[3,4] x, int64[{",".join(map(str, indices.shape))}] i) => (float[A,B] y) {{
            y = GatherElements <axis = {axis}> (x, i)
        }}""", {"x": X, "i": indices})


def test_scatter_nd_and_elements_overwrite():
    check_onnx(f"""{HEADER}
        g (float[3,4] x, float[4] row, float[2,4] vals) => (float[3,4] a, float[3,4] b) {{
            where = Constant <value = int64[1,1] {{1}}> ()
            zero = Constant <value = int64[1] {{0}}> ()
            row2 = Unsqueeze(row, zero)
            a = ScatterND(x, where, row2)
            idx = Constant <value = int64[2,4] {{0,1,2,0, 2,2,1,1}}> ()
            b = ScatterElements <axis = 0> (x, idx, vals)
        }}""", {"x": X, "row": np.arange(4, dtype=np.float32), "vals": -np.ones((2, 4), np.float32)})


def test_scatter_of_opset_10_is_scatter_elements():
    check_onnx("""<ir_version: 5, opset_import: ["" : 10]>
        g (float[3,4] x, int64[2,4] idx, float[2,4] vals) => (float[3,4] y) { y = Scatter <axis = 0> (x, idx, vals) }""",
               {"x": X, "idx": np.array([[0, 1, 2, 0], [2, 2, 1, 1]]), "vals": -np.ones((2, 4), np.float32)})


def test_range_of_float_inputs_is_refused_by_node():
    """A length computed from a float network input is no shape TensorRT can compute."""
    proto = onnx.parser.parse_model(f"""{HEADER}
        g (float lo, float hi) => (float[B] b) {{
            step = Constant <value = float {{0.5}}> ()
            b = Range(lo, hi, step)
        }}""")
    with pytest.raises(UnsupportedConversionError, match="Range whose floating-point bounds depend on the "
                       "floating-point input '(lo|hi)'"):
        to_network(import_model(proto))


@pytest.mark.parametrize("lo, hi, step", [(0.0, 5.0, 1.0), (-1.0, 2.0, 0.75), (3.5, -1.0, -1.25), (2.0, 1.0, 0.5)])
def test_range_of_float_bounds_computed_from_integer_inputs(lo, hi, step):
    """The length is ceil((limit - start) / delta) of floats (empty when negative), known only when it runs."""
    check_onnx(f"""{HEADER}
        g (int32 a, int32 b) => (float[B] r) {{
            ten = Constant <value = float {{10.0}}> ()
            fa = Cast <to = 1> (a)
            fb = Cast <to = 1> (b)
            lo = Div(fa, ten)
            hi = Div(fb, ten)
            step = Constant <value = float {{{step}}}> ()
            r = Range(lo, hi, step)
        }}""", {"a": np.array(round(lo * 10), np.int32), "b": np.array(round(hi * 10), np.int32)})
def test_range_of_a_float_limit_read_from_a_float_inputs_shape():
    """A shape read from a float input is an integer TensorRT computes shapes from."""
    check_onnx(f"""{HEADER}
        g (float[N] x) => (float[B] b) {{
            zero = Constant <value = float {{0.0}}> ()
            half = Constant <value = float {{0.5}}> ()
            n = Size(x)
            limit = Cast <to = 1> (n)
            b = Range(zero, limit, half)
        }}""", {"x": np.zeros(5, np.float32)})


def test_range_of_a_float_size_computed_from_an_integer_input():
    """The window expansions' form: the limit is an integer input cast to float."""
    check_onnx(f"""{HEADER}
        g (int32 n) => (float[B] b) {{
            zero = Constant <value = float {{0.0}}> ()
            one = Constant <value = float {{1.0}}> ()
            limit = Cast <to = 1> (n)
            b = Range(zero, limit, one)
        }}""", {"n": np.array(7, np.int32)})

"""CumProd, lowered to a TensorRT loop, against onnxruntime and a product written out by hand."""

from __future__ import annotations

import numpy as np
import onnx.parser
import onnxruntime as ort
import pytest

from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import build_and_simulate, check_onnx

HEADER = '<ir_version: 10, opset_import: ["" : 26]>'
RNG = np.random.default_rng(3)
X = RNG.uniform(-2, 2, (2, 3, 4)).astype(np.float32)
X[1, 1, 2] = 0.0  # a zero stops the product, as no logarithm form could


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_cumprod_of_a_constant_axis(axis, exclusive, reverse):
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x) => (float[2,3,4] y) {{
            a = Constant <value_int = {axis}> ()
            y = CumProd <exclusive = {exclusive}, reverse = {reverse}> (x, a)
        }}""", {"x": X})


@pytest.mark.parametrize("axis", [0, 1, 2, -2, -3])
def test_cumprod_of_an_axis_known_when_the_engine_runs(axis):
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x, int32 a) => (float[2,3,4] y) {{ y = CumProd <reverse = 1> (x, a) }}""",
               {"x": X, "a": np.array(axis, np.int32)})


def test_cumprod_of_a_dynamic_shape_and_integers():
    x = RNG.integers(-3, 4, (5, 3)).astype(np.int64)
    check_onnx(f"""{HEADER}
        g (int64[N,3] x) => (int64[N,3] y, int64[N,3] z) {{
            a = Constant <value_int = 0> ()
            b = Constant <value_int = 1> ()
            y = CumProd <exclusive = 1> (x, a)
            z = CumProd (x, b)
        }}""", {"x": x})


def test_cumprod_by_hand():
    """[2, 3, 4]: inclusive 2, 6, 24; exclusive 1, 2, 6; reverse 24, 12, 4; reverse exclusive 12, 4, 1."""
    out = check_onnx(f"""{HEADER}
        g (int32[3] x) => (int32[3] i, int32[3] e, int32[3] r, int32[3] re) {{
            a = Constant <value_int = 0> ()
            i = CumProd (x, a)
            e = CumProd <exclusive = 1> (x, a)
            r = CumProd <reverse = 1> (x, a)
            re = CumProd <exclusive = 1, reverse = 1> (x, a)
        }}""", {"x": np.array([2, 3, 4], np.int32)})
    assert [out[k].tolist() for k in ("i", "e", "r", "re")] == [[2, 6, 24], [1, 2, 6], [24, 12, 4], [12, 4, 1]]


def test_cumprod_in_a_loop_body():
    """A loop of CumProd's inside a Loop: TensorRT nests the loops."""
    check_onnx(f"""{HEADER}
        g (float[2,3] x, int64 n) => (float[2,3] y) {{
            cond = Constant <value = bool {{1}}> ()
            y = Loop (n, cond, x) <body = step (int64 i, bool c, float[2,3] acc) => (bool c2, float[2,3] out) {{
                c2 = Identity (c)
                a = Constant <value_int = 1> ()
                out = CumProd (acc, a)
            }}>
        }}""", {"x": X[0, :2, :3] + 1, "n": np.array(3, np.int64)})


def test_cumprod_of_uint32_wraps_around():
    """uint32 is carried in INT64; 70000 * 70000 = 4900000000 = 605032704 (mod 2**32), as onnxruntime."""
    x = np.array([70000, 70000, 3, 65537], np.uint32)
    proto = onnx.parser.parse_model(f"""{HEADER}
        g (uint32[4] x) => (uint32[4] y) {{
            a = Constant <value_int = 0> ()
            y = CumProd (x, a)
        }}""")
    _, got = build_and_simulate(import_model(proto), {"x": x.astype(np.int64)})
    want = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert want[1] == 605032704
    np.testing.assert_array_equal(got["y"], want.astype(np.int64))

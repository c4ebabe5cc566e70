"""Binary and variadic pointwise converters against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx.parser
import onnxruntime as ort
import pytest

from loopc.errors import UnsupportedError
from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import build_and_simulate, check_onnx

RNG = np.random.default_rng(0)
HEADER = '<ir_version: 8, opset_import: ["" : 18]>'


def floats(*shape: int, low: float = -2, high: float = 2) -> np.ndarray:
    return RNG.uniform(low, high, shape).astype(np.float32)


def ints(*shape: int, low: int = -9, high: int = 10, dtype: type = np.int64) -> np.ndarray:
    return RNG.integers(low, high, shape).astype(dtype)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min"])
@pytest.mark.parametrize("dtype", ["float", "int64", "int32"])
def test_arithmetic_broadcasts_lower_rank(op, dtype):
    np_type = {"float": np.float32, "int64": np.int64, "int32": np.int32}[dtype]
    a = ints(2, 3, 4, dtype=np_type) if dtype != "float" else floats(2, 3, 4)
    b = ints(4, low=1, dtype=np_type) if dtype != "float" else floats(4, low=0.5)
    check_onnx(f"""{HEADER}
        g ({dtype}[2,3,4] a, {dtype}[4] b) => ({dtype}[2,3,4] y) {{ y = {op}(a, b) }}""", {"a": a, "b": b})


@pytest.mark.parametrize("op", ["Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"])
def test_comparisons(op):
    a, b = ints(3, 4, low=0, high=3).astype(np.float32), ints(4, low=0, high=3).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[3,4] a, float[4] b) => (bool[3,4] y) {{ y = {op}(a, b) }}""", {"a": a, "b": b})


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logic(op):
    a, b = ints(2, 3, low=0, high=2).astype(bool), ints(1, 3, low=0, high=2).astype(bool)
    check_onnx(f"""{HEADER}
        g (bool[2,3] a, bool[1,3] b) => (bool[2,3] y, bool[2,3] n) {{ y = {op}(a, b)  n = Not(y) }}""",
               {"a": a, "b": b})


def test_pow_with_an_integer_exponent():
    check_onnx(f"""{HEADER}
        g (float[2,3] a, int64 b) => (float[2,3] y) {{ y = Pow(a, b) }}""",
               {"a": floats(2, 3, low=0.1), "b": np.array(3, np.int64)})


@pytest.mark.parametrize("op", ["Sum", "Mean", "Max", "Min"])
def test_variadic(op):
    check_onnx(f"""{HEADER}
        g (float[2,3] a, float[3] b, float[1,1] c) => (float[2,3] y) {{ y = {op}(a, b, c) }}""",
               {"a": floats(2, 3), "b": floats(3), "c": floats(1, 1)})


@pytest.mark.parametrize("fmod, dtype", [(0, "int64"), (1, "int64"), (1, "float")])
def test_mod(fmod, dtype):
    np_type = np.float32 if dtype == "float" else np.int64
    a = np.array([[-7, 7, -8, 5], [9, -3, 0, 6]], np_type) + (np_type(0.5) if dtype == "float" else 0)
    b = np.array([3, -3, 5, -4], np_type)
    check_onnx(f"""{HEADER}
        g ({dtype}[2,4] a, {dtype}[4] b) => ({dtype}[2,4] y) {{ y = Mod <fmod = {fmod}> (a, b) }}""",
               {"a": a, "b": b})


INF = np.inf
#: a, b, a mod b (fmod = 0, Python's %: the divisor's sign), fmod(a, b) (C: the dividend's sign), worked
#: out by hand. An infinite divisor leaves a finite a whole, or moves it by b when its sign differs.
MOD_CASES = [
    (-3.0, INF, INF, -3.0), (3.0, INF, 3.0, 3.0), (-1.0, -INF, -1.0, -1.0), (1.0, -INF, -INF, 1.0),
    (0.0, -2.0, -0.0, 0.0), (-0.0, 2.0, 0.0, -0.0), (4.0, -2.0, -0.0, 0.0), (-4.0, 2.0, 0.0, -0.0),
    (7.5, -2.0, -0.5, 1.5), (-7.5, 2.0, 0.5, -1.5), (INF, 2.0, np.nan, np.nan), (1.0, 0.0, np.nan, np.nan),
    (1.0, -0.0, np.nan, np.nan), (np.nan, 2.0, np.nan, np.nan), (2.0, np.nan, np.nan, np.nan),
]


@pytest.mark.parametrize("fmod", [0, 1])
def test_float_mod_edge_cases(fmod):
    """Infinite divisors, signed zeros, NaN: against values worked out by hand (onnxruntime has no float
    fmod = 0), signs of zeros included."""
    a, b, floor_mod, c_fmod = (np.array(col, np.float32) for col in zip(*MOD_CASES))
    proto = onnx.parser.parse_model(f"""{HEADER}
        g (float[{len(a)}] a, float[{len(a)}] b) => (float[{len(a)}] y) {{ y = Mod <fmod = {fmod}> (a, b) }}""")
    _, got = build_and_simulate(import_model(proto), {"a": a, "b": b})
    want = c_fmod if fmod else floor_mod
    np.testing.assert_array_equal(got["y"], want)
    numbers = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got["y"][numbers]), np.signbit(want[numbers]))


@pytest.mark.parametrize("fmod", [0, 1])
def test_mod_of_uint8_is_computed_in_int32(fmod):
    check_onnx(f"""{HEADER}
        g (uint8[2,4] a, uint8[4] b) => (uint8[2,4] y) {{ y = Mod <fmod = {fmod}> (a, b) }}""",
               {"a": UINT8_A, "b": UINT8_B})


def test_dynamic_batch_with_constant_operand():
    check_onnx(f"""{HEADER}
        g (float[N,3] a) => (float[N,3] y) {{
            c = Constant <value = float[3] {{1, 2, 3}}> ()
            y = Mul(a, c)
        }}""", {"a": floats(5, 3)})


# uint8 operands that leave uint8's range: ONNX's uint8 arithmetic wraps modulo 256
UINT8_A = np.array([[200, 3, 255, 16], [0, 128, 7, 250]], np.uint8)
UINT8_B = np.array([100, 10, 255, 17], np.uint8)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min", "Mod"])
def test_uint8_arithmetic_wraps_as_onnx_defines(op):
    check_onnx(f"""{HEADER}
        g (uint8[2,4] a, uint8[4] b) => (uint8[2,4] y) {{ y = {op}(a, b) }}""", {"a": UINT8_A, "b": UINT8_B})


def test_uint8_wraps_by_hand():
    """200 + 100 = 300 = 44, 3 - 10 = -7 = 249, 200 * 100 = 20000 = 32, 255 * 255 = 65025 = 1 (mod 256)."""
    out = check_onnx(f"""{HEADER}
        g (uint8[3] a, uint8[3] b) => (uint8[3] s, uint8[3] d, uint8[3] p) {{
            s = Add(a, b)  d = Sub(a, b)  p = Mul(a, b)
        }}""", {"a": np.array([200, 3, 255], np.uint8), "b": np.array([100, 10, 255], np.uint8)})
    assert out["s"].dtype == np.uint8
    assert out["s"].tolist() == [44, 13, 254]
    assert out["d"].tolist() == [100, 249, 0]
    assert out["p"].tolist() == [32, 30, 1]


@pytest.mark.parametrize("op", ["Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Equal"])
def test_uint8_comparisons(op):
    check_onnx(f"""{HEADER}
        g (uint8[2,4] a, uint8[4] b) => (bool[2,4] y) {{ y = {op}(a, b) }}""", {"a": UINT8_A, "b": UINT8_B})


def test_uint8_variadic_max_and_min():
    check_onnx(f"""{HEADER}
        g (uint8[2,4] a, uint8[4] b, uint8[1,4] c) => (uint8[2,4] y, uint8[2,4] m) {{
            y = Min(a, b, c)  m = Max(a, b, c)
        }}""", {"a": UINT8_A, "b": UINT8_B, "c": np.array([[90, 250, 1, 0]], np.uint8)})


def _extremes(dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """Operands at and near the type's bounds, whose sums, differences and products leave it."""
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min, info.max - 3, info.min + 5, 7, info.max // 2 + 9], dtype)
    b = np.array([1, info.max, info.max, 3, info.max, 2], dtype)
    return a, b


#: How TensorRT carries the types it lacks (the network's inputs and outputs have these types).
CARRIED = {np.int8: np.int8, np.int16: np.int32, np.uint16: np.int32, np.uint32: np.int64}


@pytest.mark.parametrize("onnx_type, dtype", [("int8", np.int8), ("int16", np.int16), ("uint16", np.uint16),
                                              ("uint32", np.uint32)])
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul"])
def test_narrow_integers_wrap_as_onnx_defines(onnx_type, dtype, op):
    """int8/int16/uint16/uint32 are computed wider (INT32, INT64) and wrapped back to their width."""
    a, b = _extremes(dtype)
    proto = onnx.parser.parse_model(f"""{HEADER}
        g ({onnx_type}[6] a, {onnx_type}[6] b) => ({onnx_type}[6] y) {{ y = {op}(a, b) }}""")
    carried = CARRIED[dtype]
    _, got = build_and_simulate(import_model(proto), {"a": a.astype(carried), "b": b.astype(carried)})
    want = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"a": a, "b": b})[0]
    with np.errstate(over="ignore"):
        by_numpy = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}[op](a, b)  # NumPy wraps too
    np.testing.assert_array_equal(want, by_numpy)
    np.testing.assert_array_equal(got["y"], want.astype(carried))


def test_uint8_results_inside_the_network_stay_int32_and_still_wrap():
    """TensorRT holds UINT8 only at the network's edges: s = a + b feeds another op (it was cast back to UINT8
    there, which the builder refuses), and its wrap-around still follows uint8's width."""
    check_onnx(f"""{HEADER}
        g (uint8[2,4] a, uint8[4] b) => (uint8[2,4] y) {{
            s = Add (a, b)
            y = Mul (s, b)
        }}""", {"a": UINT8_A, "b": UINT8_B})


@pytest.mark.parametrize("op", ["Max", "Min"])
def test_a_variadic_op_of_one_uint8_input_keeps_its_type(op):
    check_onnx(f"""{HEADER}
        g (uint8[2,4] a) => (uint8[2,4] y) {{ y = {op} (a) }}""", {"a": UINT8_A})

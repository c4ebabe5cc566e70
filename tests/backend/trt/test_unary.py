"""One-input pointwise converters (Unary and Activation layers) against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend.trt.oracle import check_onnx

HEADER = '<ir_version: 8, opset_import: ["" : 18]>'
X = np.linspace(-2.7, 2.9, 24, dtype=np.float32).reshape(2, 3, 4)
POSITIVE = np.linspace(0.1, 3.0, 24, dtype=np.float32).reshape(2, 3, 4)
UNIT = np.linspace(-0.9, 0.9, 24, dtype=np.float32).reshape(2, 3, 4)

CASES = [
    ("Neg", X), ("Abs", X), ("Exp", X), ("Log", POSITIVE), ("Sqrt", POSITIVE), ("Reciprocal", POSITIVE),
    ("Floor", X), ("Ceil", X), ("Sin", X), ("Cos", X), ("Tan", UNIT), ("Asin", UNIT), ("Acos", UNIT),
    ("Atan", X), ("Sinh", X), ("Cosh", X), ("Erf", X), ("Sign", X), ("Round", X * 2),
    ("Tanh", X), ("Sigmoid", X), ("Relu", X), ("Softsign", X), ("Softplus", X),
    ("LeakyRelu", X), ("LeakyRelu <alpha = 0.3>", X), ("Elu", X), ("Elu <alpha = 0.5>", X), ("Selu", X),
    ("HardSigmoid", X), ("HardSigmoid <alpha = 0.3, beta = 0.4>", X), ("ThresholdedRelu <alpha = 0.5>", X),
]


@pytest.mark.parametrize("op, x", CASES, ids=[c[0] for c in CASES])
def test_unary(op, x):
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x) => (float[2,3,4] y) {{ y = {op}(x) }}""", {"x": x}, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_neg_abs_sign(dtype):
    name = "int32" if dtype == np.int32 else "int64"
    check_onnx(f"""{HEADER}
        g ({name}[5] x) => ({name}[5] a, {name}[5] b) {{ a = Neg(x)  b = Abs(x) }}""",
               {"x": np.array([-3, -1, 0, 2, 7], dtype)})


@pytest.mark.parametrize("bounds", ["x, lo, hi", "x, lo", "x, , hi", "x"])
def test_clip(bounds):
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x) => (float[2,3,4] y) {{
            lo = Constant <value = float {{-0.5}}> ()
            hi = Constant <value = float {{1.25}}> ()
            y = Clip({bounds})
        }}""", {"x": X})


def test_clip_integers_with_input_bounds():
    check_onnx(f"""{HEADER}
        g (int64[6] x, int64 lo, int64 hi) => (int64[6] y) {{ y = Clip(x, lo, hi) }}""",
               {"x": np.array([-5, -1, 0, 3, 8, 20]), "lo": np.array(-1), "hi": np.array(8)})


COMPOSED = [
    ("HardSwish", X * 2), ("Mish", X * 3), ("Celu", X), ("Celu <alpha = 0.4>", X), ("Shrink", X),
    ("Shrink <lambd = 1.2, bias = 0.3>", X),
]


@pytest.mark.parametrize("op, x", COMPOSED, ids=[c[0] for c in COMPOSED])
@pytest.mark.parametrize("dims", ["2,3,4", "A,B,C"])
def test_activations_tensorrt_lacks(op, x, dims):
    check_onnx(f"""<ir_version: 8, opset_import: ["" : 18]>
        g (float[{dims}] x) => (float[{dims}] y) {{ y = {op}(x) }}""", {"x": x}, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("attrs", ["", "<detect_negative = 0>", "<detect_positive = 0>",
                                   "<detect_positive = 0, detect_negative = 0>"])
def test_is_inf(attrs):
    x = np.array([[np.inf, -np.inf, 0.0], [np.nan, 1e38, -3.0]], np.float32)
    check_onnx(f"""{HEADER}
        g (float[N,3] x) => (bool[N,3] y) {{ y = IsInf {attrs} (x) }}""", {"x": x})


@pytest.mark.parametrize("slope_shape", ["4", "3,1", "1"])
def test_prelu_slope_broadcasts(slope_shape):
    shape = tuple(int(d) for d in slope_shape.split(","))
    slope = np.linspace(0.1, 0.9, int(np.prod(shape)), dtype=np.float32).reshape(shape)
    check_onnx(f"""{HEADER}
        g (float[N,3,4] x, float[{slope_shape}] s) => (float[N,3,4] y) {{ y = PRelu(x, s) }}""",
               {"x": X, "s": slope})


@pytest.mark.parametrize("attrs", ["", "<alpha = 1.7>", "<alpha = -0.5>"])
def test_swish(attrs):
    check_onnx(f"""<ir_version: 10, opset_import: ["" : 24]>
        g (float[2,3,4] x) => (float[2,3,4] y) {{ y = Swish {attrs} (x) }}""", {"x": X}, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("alpha", [1.0, 0.6])
def test_swiglu(alpha):
    """Swish_alpha(A) * B; the oracle is the op's definition written out (onnxruntime has no SwiGLU)."""
    import onnx.parser

    from loopc.frontend.onnx import import_model
    from tests.backend.trt.oracle import build_and_simulate

    b = np.cos(X) * 2
    proto = onnx.parser.parse_model(f"""<ir_version: 10, opset_import: ["" : 28]>
        g (float[2,3,4] a, float[2,3,4] b) => (float[2,3,4] y) {{ y = SwiGLU <alpha = {alpha}> (a, b) }}""")
    _, got = build_and_simulate(import_model(proto), {"a": X, "b": b})
    a = X.astype(np.float64)
    np.testing.assert_allclose(got["y"], a / (1 + np.exp(-alpha * a)) * b, rtol=1e-5, atol=1e-6)

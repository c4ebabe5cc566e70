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

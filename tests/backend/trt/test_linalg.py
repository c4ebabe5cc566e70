"""MatMul (NumPy ranks, 1-D operands), Gemm (alpha, beta, transposes) and Einsum against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend.trt.oracle import check_onnx

RNG = np.random.default_rng(1)
HEADER = '<ir_version: 8, opset_import: ["" : 18]>'


def dims(shape: tuple[int, ...]) -> str:
    return ",".join(map(str, shape))


def typed(shape: tuple[int, ...]) -> str:
    """``float[2,3]``; a 0-D type is written without brackets in the text format."""
    return f"float[{dims(shape)}]" if shape else "float"


@pytest.mark.parametrize("a, b, y", [
    ((2, 3), (3, 4), (2, 4)),
    ((5, 2, 3), (3, 4), (5, 2, 4)),
    ((3,), (3, 4), (4,)),
    ((2, 3), (3,), (2,)),
    ((3,), (3,), ()),
    ((2, 1, 2, 3), (4, 3, 2), (2, 4, 2, 2)),
])
def test_matmul(a, b, y):
    check_onnx(f"""{HEADER}
        g (float[{dims(a)}] a, float[{dims(b)}] b) => ({typed(y)} y) {{ y = MatMul(a, b) }}""",
               {"a": RNG.standard_normal(a).astype(np.float32), "b": RNG.standard_normal(b).astype(np.float32)},
               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("attrs, c", [
    ("", (4,)), ("<transA = 1>", (2, 4)), ("<transB = 1, alpha = 0.5>", (1, 4)),
    ("<transA = 1, transB = 1, alpha = 2.0, beta = -1.5>", (2, 1)), ("<alpha = 3.0>", None),
])
def test_gemm(attrs, c):
    a_shape = (3, 2) if "transA = 1" in attrs else (2, 3)
    b_shape = (4, 3) if "transB = 1" in attrs else (3, 4)
    inputs = {"a": RNG.standard_normal(a_shape).astype(np.float32), "b": RNG.standard_normal(b_shape).astype(np.float32)}
    sig = f"float[{dims(a_shape)}] a, float[{dims(b_shape)}] b"
    args = "a, b"
    if c is not None:
        inputs["c"] = RNG.standard_normal(c).astype(np.float32)
        sig += f", float[{dims(c)}] c"
        args += ", c"
    check_onnx(f"""{HEADER}
        g ({sig}) => (float[2,4] y) {{ y = Gemm {attrs} ({args}) }}""", inputs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("equation, shapes, y", [
    ("ij,jk->ik", [(2, 3), (3, 4)], (2, 4)),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)], (2, 2, 4)),
    ("ij->ji", [(2, 3)], (3, 2)),
])
def test_einsum(equation, shapes, y):
    names = [f"x{k}" for k in range(len(shapes))]
    sig = ", ".join(f"float[{dims(s)}] {n}" for s, n in zip(shapes, names))
    check_onnx(f"""{HEADER}
        g ({sig}) => (float[{dims(y)}] y) {{ y = Einsum <equation = "{equation}"> ({", ".join(names)}) }}""",
               {n: RNG.standard_normal(s).astype(np.float32) for n, s in zip(names, shapes)}, rtol=1e-5, atol=1e-5)

"""HannWindow, HammingWindow and BlackmanWindow against onnxruntime: periodic and symmetric, of a
constant size and of a size given as an input, in the output types asked for (a double one is
float32, as every double is in TensorRT)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend.trt.oracle import check_onnx

HEADER = '<ir_version: 8, opset_import: ["" : 17]>'
OPS = ["HannWindow", "HammingWindow", "BlackmanWindow"]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("periodic", [0, 1])
@pytest.mark.parametrize("size", [1, 2, 10, 33])
def test_window_of_a_computed_size(op, periodic, size):
    check_onnx(f"""{HEADER}
        g (int32 n) => (float[N] y) {{ y = {op} <periodic = {periodic}> (n) }}""",
               {"n": np.array(size, np.int32)}, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", OPS)
def test_window_of_a_constant_size(op):
    check_onnx(f"""{HEADER}
        g (float[1] unused) => (float16[12] y, float[7] z, float[1] one) {{
            n = Constant <value = int64 {{12}}> ()
            y = {op} <output_datatype = 10> (n)
            m = Constant <value = int32 {{7}}> ()
            z = {op} <periodic = 0> (m)
            k = Constant <value = int32 {{1}}> ()
            one = {op} <periodic = 0> (k)
        }}""", {"unused": np.zeros(1, np.float32)}, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("op", OPS)
def test_window_of_a_computed_size_in_float16(op):
    check_onnx(f"""{HEADER}
        g (int64 n) => (float16[N] y) {{ y = {op} <output_datatype = 10> (n) }}""",
               {"n": np.array(16, np.int64)}, rtol=1e-3, atol=1e-3)

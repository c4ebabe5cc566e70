"""The simulator's outputs are what an engine's output buffers are: contiguous arrays of the declared shape."""

from __future__ import annotations

import numpy as np
import onnx.parser

from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import build_and_simulate


def test_a_transposed_output_is_contiguous_and_a_scalar_stays_a_scalar() -> None:
    proto = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 17]>
        g (float[2,3] x) => (float[3,2] t, float s) {
            t = Transpose <perm = [1, 0]> (x)
            s = ReduceSum <keepdims = 0> (x)
        }""")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    _, got = build_and_simulate(import_model(proto), {"x": x})
    assert got["t"].flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(got["t"], x.T)
    assert got["s"].shape == () and got["s"] == 15

"""An If whose condition is known once shapes are (``Size``/``Shape`` of a static shape compared with a
constant) takes its branch when the network is built, even when the branches' ranks differ (which a
TensorRT conditional cannot merge): ONNX's AffineGrid function tests ``Size(size) == 4`` this way."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from loopc.compiler import optimize
from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import build_and_simulate

HEADER = '<ir_version: 8, opset_import: ["" : 18]>'


@pytest.mark.parametrize("length, reader", [(4, "Size"), (6, "Size"), (4, "Shape")])
def test_if_on_a_static_size_takes_its_branch(length, reader):
    x = np.arange(length, dtype=np.float32)
    text = f"""{HEADER}
        g (float[{length}] x) => (float[?] y) {{
            n = {reader} (x)
            four = Constant <value_int = 4> ()
            is_four = Equal (n, four)
            y = If (is_four) <
                then_branch = g1 () => (float[2, 2] square) {{
                    shape = Constant <value_ints = [2, 2]> ()
                    square = Reshape (x, shape)
                }},
                else_branch = g2 () => (float[{length}] same) {{ same = Identity (x) }}
            >
            }}"""
    proto = onnx.parser.parse_model(text)
    model = import_model(proto)
    stats = optimize(model)
    assert stats.get("static-conditionals.conditionals") == 1, stats
    _, got = build_and_simulate(model, {"x": x})
    want = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert got["y"].shape == want.shape == ((2, 2) if length == 4 else (length,))
    np.testing.assert_array_equal(got["y"], want)

"""Ops TensorRT runs on two dims or more, given a vector (a decoder's attention over one sequence)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend.trt.oracle import check_onnx

HEADER = '<ir_version: 8, opset_import: ["" : 17]>'


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis", [0, -1])
def test_softmax_of_a_vector(op: str, axis: int) -> None:
    check_onnx(f"""{HEADER}
        g (float[5] x) => (float[5] y) {{ y = {op} <axis = {axis}> (x) }}""",
               {"x": np.array([0.5, -1.0, 2.0, 0.0, 3.5], np.float32)})

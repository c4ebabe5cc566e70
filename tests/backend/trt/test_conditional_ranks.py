"""An If whose branches give one element in different ranks (``0`` or ``[2 / (d - 1)]``, as ONNX's
AffineGrid writes it) converts when every reader broadcasts it: its rank is then invisible. A reader
that could see the rank keeps the refusal."""

from __future__ import annotations

import numpy as np
import pytest

from loopc.errors import LoopcError
from tests.backend.trt.oracle import check_onnx

HEADER = '<ir_version: 8, opset_import: ["" : 18]>'


def _model(reader: str) -> str:
    return f"""{HEADER}
        g (float[1] d, float[3] x) => (float[3] y) {{
            one = Constant <value_float = 1.0> ()
            is_one = Equal (d, one)
            step = If (is_one) <
                then_branch = g1 () => (float zero) {{ zero = Constant <value_float = 0.0> () }},
                else_branch = g2 () => (float[1] ratio) {{
                    two = Constant <value_float = 2.0> ()
                    less = Sub (d, one)
                    ratio = Div (two, less)
                }}
            >
            {reader}
        }}"""


@pytest.mark.parametrize("d", [1.0, 5.0])
def test_one_element_of_either_rank_read_by_broadcasting_ops(d):
    out = check_onnx(_model("scaled = Mul (x, step)  typed = CastLike (x, step)  y = Add (scaled, typed)"),
                     {"d": np.array([d], np.float32), "x": np.array([1, 2, 3], np.float32)})
    factor = 0.0 if d == 1.0 else 2 / (d - 1)
    np.testing.assert_allclose(out["y"], np.array([1, 2, 3]) * (1 + factor), rtol=1e-6)


def test_a_reader_that_sees_the_rank_keeps_the_refusal():
    with pytest.raises(LoopcError, match="rank 0 in one branch, 1 in the other"):
        check_onnx(_model("n = Shape (step)  nf = Cast <to = 1> (n)  y = Mul (x, nf)"),
                   {"d": np.array([5.0], np.float32), "x": np.array([1, 2, 3], np.float32)})

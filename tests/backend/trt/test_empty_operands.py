"""Empty arrays as operands: exporters write a scalar's shape as an empty int64 tensor.

paddle2onnx reshapes to a scalar with an empty initializer; ``out[k] = c`` in TorchScript
exports ``Expand(c, Shape(c))`` of a 0-d ``c``. No TensorRT tensor can be empty, but neither
needs one: the empty array is only ever read as an operand.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend.trt.oracle import check_onnx

HEADER = '<ir_version: 8, opset_import: ["" : 17]>'


def test_reshape_to_a_scalar_by_an_empty_shape() -> None:
    check_onnx(f"""{HEADER}
        g (float[1] x) => (float y) {{
            scalar = Constant <value = int64[0] {{}}> ()
            y = Reshape (x, scalar)
        }}""", {"x": np.array([2.5], np.float32)})


def test_expand_a_scalar_to_its_own_shape() -> None:
    check_onnx(f"""{HEADER}
        g (float[3] x, int64 k) => (float[3] y) {{
            c = ReduceSum <keepdims = 0> (x)
            s = Shape (c)
            e = Expand (c, s)
            y = Add (x, e)
        }}""", {"x": np.array([1, 2, 3], np.float32), "k": np.array(1, np.int64)})


def test_concatenating_an_empty_array_adds_nothing() -> None:
    check_onnx(f"""{HEADER}
        g (float[3] x) => (float[3] y, int64[2] dims) {{
            nothing = Constant <value = float[0] {{}}> ()
            y = Concat <axis = 0> (x, nothing)
            scalar = Constant <value = int64 {{4}}> ()
            no_dims = Shape (scalar)
            n = Shape (x)
            dims = Concat <axis = 0> (no_dims, n, n)
        }}""", {"x": np.array([1, 2, 3], np.float32)})


def test_an_empty_array_read_as_data_is_an_empty_tensor() -> None:
    """TensorRT constants hold data, but tensors may be empty: the array becomes an empty slice."""
    got = check_onnx(f"""{HEADER}
        g (float[1] x) => (float[0] y) {{
            nothing = Constant <value = float[0] {{}}> ()
            y = Add (x, nothing)
        }}""", {"x": np.array([1], np.float32)})
    assert got["y"].shape == (0,)


@pytest.mark.parametrize("rows", [2, 0])
def test_an_if_branch_may_return_an_empty_array(rows: int) -> None:
    # torchvision's "no detections" branch: `masks.new_empty((0, ...))` in one branch, the rows in the other
    # (Mask R-CNN stopped with "input '1070' is empty (shape (0,)), and TensorRT tensors cannot be")
    check_onnx(f"""{HEADER}
        g (float[N] x) => (float[M] y) {{
            n = Shape (x)
            zero = Constant <value = int64[1] {{0}}> ()
            any = Greater (n, zero)
            some = Squeeze (any)
            y = If (some) <
                then_branch = then_g () => (float[K] rows) {{
                    rows = Mul (x, x)
                }},
                else_branch = else_g () => (float[0] none) {{
                    none = Constant <value = float[0] {{}}> ()
                }}
            >
        }}""", {"x": np.arange(rows, dtype=np.float32) + 1.5})

"""Trilu and Dropout against onnxruntime, with static and runtime-shaped inputs."""

from __future__ import annotations

import numpy as np
import onnx.parser
import pytest

from loopc.backend.trt import to_network
from loopc.errors import UnsupportedConversionError
from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import check_onnx

HEADER = '<ir_version: 8, opset_import: ["" : 19]>'
X = np.arange(1, 2 * 3 * 5 + 1, dtype=np.float32).reshape(2, 3, 5)


# -- Trilu ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dims", ["2,3,5", "B,N,M"])
@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, -1, 0, 2, 7])
def test_trilu_with_constant_k(dims, upper, k):
    body = "y = Trilu <upper = %d> (x)" % upper if k is None else f"""
            k = Constant <value = int64 {{{k}}}> ()
            y = Trilu <upper = {upper}> (x, k)"""
    check_onnx(f"""{HEADER}
        g (float[{dims}] x) => (float[{dims}] y) {{ {body} }}""", {"x": X})


@pytest.mark.parametrize("upper", [0, 1])
def test_trilu_with_k_fed_as_an_input_on_a_square_int_matrix(upper):
    x = np.arange(16, dtype=np.int64).reshape(4, 4) - 5
    for k in (-2, 1):
        check_onnx(f"""{HEADER}
            g (int64[N,N] x, int64 k) => (int64[N,N] y) {{ y = Trilu <upper = {upper}> (x, k) }}""",
                   {"x": x, "k": np.array(k)})


def test_causal_mask_from_trilu_of_ones():
    """A decoder's causal mask: Trilu(upper, k=1) of a ones matrix sized by the sequence, then Where."""
    scores = np.random.default_rng(2).standard_normal((2, 4, 4)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[B,T,T] s) => (float[B,T,T] y) {{
            shape = Shape(s)
            one = Constant <value = float[1] {{1.0}}> ()
            ones = Expand(one, shape)
            k = Constant <value = int64 {{1}}> ()
            future = Trilu <upper = 1> (ones, k)
            zero = Constant <value = float {{0.0}}> ()
            blocked = Greater(future, zero)
            ninf = Constant <value = float {{-1e9}}> ()
            y = Where(blocked, ninf, s)
        }}""", {"s": scores})


# -- Dropout -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dims", ["2,3,5", "B,N,M"])
def test_dropout_at_inference_is_identity_with_an_all_true_mask(dims):
    check_onnx(f"""{HEADER}
        g (float[{dims}] x) => (float[{dims}] y, bool[{dims}] mask, float[{dims}] z) {{
            y, mask = Dropout(x)
            r = Constant <value = float {{0.3}}> ()
            off = Constant <value = bool {{0}}> ()
            z = Dropout(x, r, off)
        }}""", {"x": X})


def test_dropout_from_opset_10_with_ratio_attribute():
    check_onnx("""<ir_version: 5, opset_import: ["" : 10]>
        g (float[2,3,5] x) => (float[2,3,5] y) { y = Dropout <ratio = 0.2> (x) }""", {"x": X})


def test_dropout_in_training_mode_is_refused_by_node():
    proto = onnx.parser.parse_model(f"""{HEADER}
        g (float[2,3] x) => (float[2,3] y) {{
            r = Constant <value = float {{0.3}}> ()
            on = Constant <value = bool {{1}}> ()
            y = Dropout(x, r, on)
        }}""")
    with pytest.raises(UnsupportedConversionError, match=r"Dropout.*training mode"):
        to_network(import_model(proto))


# -- EyeLike -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dims", ["3,5", "N,M"])
@pytest.mark.parametrize("attrs", ["", "<k = 2>", "<k = -1, dtype = 7>", "<k = 9>"])
def test_eye_like(dims, attrs):
    out = "int64" if "dtype = 7" in attrs else "float"
    check_onnx(f"""{HEADER}
        g (float[{dims}] x) => ({out}[{dims}] y) {{ y = EyeLike {attrs} (x) }}""", {"x": X[0]})

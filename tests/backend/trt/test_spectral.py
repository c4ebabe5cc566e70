"""DFT and STFT as products with constant cosine/sine matrices, against onnxruntime and by hand."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator

from loopc.errors import LoopcError
from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import build_and_simulate, check_onnx

HEADER = '<ir_version: 10, opset_import: ["" : 20]>'
RNG = np.random.default_rng(5)


def _signal(*shape: int) -> np.ndarray:
    return RNG.uniform(-1, 1, shape).astype(np.float32)


@pytest.mark.parametrize("components", [1, 2])
@pytest.mark.parametrize("inverse, onesided", [(0, 0), (0, 1), (1, 0), (1, 1)])
@pytest.mark.parametrize("length", [None, 6, 11])
@pytest.mark.parametrize("axis", [1, -3])
def test_dft_against_onnxruntime(components, inverse, onesided, length, axis):
    if onesided and (inverse != (components == 2)):
        pytest.skip("ONNX: a one-sided DFT takes a real signal, an inverse one-sided DFT a complex one")
    x = _signal(2, 8, 3, components)
    dft_length = "" if length is None else "n"
    consts = "" if length is None else f"n = Constant <value_int = {length}> ()"
    text = f"""{HEADER}
        g (float[2,8,3,{components}] x) => (float[2,?,3,?] y) {{
            a = Constant <value_int = {axis}> ()
            {consts}
            y = DFT <inverse = {inverse}, onesided = {onesided}> (x, {dft_length}, a)
        }}"""
    if inverse and onesided and length is not None:
        # onnxruntime's inverse one-sided DFT of another length than 2·(bins - 1) is not numpy's
        # irfft, which ONNX's reference implementation (the spec's definition) is
        proto = onnx.parser.parse_model(text)
        _, got = build_and_simulate(import_model(proto), {"x": x})
        want = ReferenceEvaluator(proto).run(None, {"x": x})[0]
        np.testing.assert_allclose(got["y"], want, rtol=1e-4, atol=1e-5)
        return
    check_onnx(text, {"x": x}, rtol=1e-4, atol=1e-5)


def test_dft_by_hand():
    """DFT([1, 2, 3, 4]) = [10, -2 + 2i, -2, -2 - 2i]; its inverse gives the signal back."""
    out = check_onnx(f"""{HEADER}
        g (float[1,4,1] x) => (float[1,4,2] y, float[1,4,2] z) {{
            a = Constant <value_int = 1> ()
            y = DFT (x, , a)
            z = DFT <inverse = 1> (y, , a)
        }}""", {"x": np.array([1, 2, 3, 4], np.float32).reshape(1, 4, 1)}, atol=1e-5)
    np.testing.assert_allclose(out["y"][0], [[10, 0], [-2, 2], [-2, 0], [-2, -2]], atol=1e-5)
    np.testing.assert_allclose(out["z"][0], [[1, 0], [2, 0], [3, 0], [4, 0]], atol=1e-5)


@pytest.mark.parametrize("onesided", [0, 1])
@pytest.mark.parametrize("window", [False, True])
def test_stft_against_onnxruntime(onesided, window):
    signal = _signal(2, 64, 1)
    frames = np.hanning(16).astype(np.float32)
    win = "w" if window else ""
    check_onnx(f"""<ir_version: 10, opset_import: ["" : 17]>
        g (float[2,64,1] signal, float[16] w) => (float[2,?,?,2] y) {{
            step = Constant <value_int = 6> ()
            length = Constant <value_int = 16> ()
            y = STFT <onesided = {onesided}> (signal, step, {win}, length)
        }}""", {"signal": signal, "w": frames}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("axis", [0, 1, 2, -2, -4])
def test_dft_along_an_axis_known_when_the_engine_runs(axis):
    """The output's shape is the same for every axis (not one-sided): one product per axis, and a Select."""
    check_onnx(f"""{HEADER}
        g (float[3,8,5,2] x, int64 a) => (float[3,8,5,2] y) {{ y = DFT <inverse = 1> (x, , a) }}""",
               {"x": _signal(3, 8, 5, 2), "a": np.array(axis, np.int64)}, rtol=1e-4, atol=1e-5)


def test_a_one_sided_dft_along_an_axis_known_when_the_engine_runs_is_refused():
    with pytest.raises(LoopcError, match="an axis computed when the engine runs"):
        check_onnx(f"""{HEADER}
            g (float[3,8,5,1] x, int64 a) => (float[3,?,?,2] y) {{ y = DFT <onesided = 1> (x, , a) }}""",
                   {"x": _signal(3, 8, 5, 1), "a": np.array(1, np.int64)})


@pytest.mark.parametrize("step", [1, 5, 16])
def test_stft_of_a_frame_step_given_when_the_engine_runs(step):
    """The frame count follows the step's value (a shape input): offsets are a fill of i·step + j."""
    check_onnx(f"""<ir_version: 10, opset_import: ["" : 17]>
        g (float[1,40,1] signal, int64 step, float[8] w) => (float[1,?,5,2] y) {{
            y = STFT (signal, step, w)
        }}""", {"signal": _signal(1, 40, 1), "step": np.array(step, np.int64), "w": np.hanning(8).astype(np.float32)},
               rtol=1e-4, atol=1e-5)

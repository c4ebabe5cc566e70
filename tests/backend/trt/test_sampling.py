"""Tile and Pad (ISliceLayer sample modes) against onnxruntime, with static and runtime-shaped inputs,
and with repeats and pads that are constants, computed values or inputs."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend.trt.oracle import check_onnx

HEADER = '<ir_version: 8, opset_import: ["" : 19]>'
X = np.arange(1, 7, dtype=np.float32).reshape(2, 3)


# -- Tile ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dims", ["2,3", "N,M"])
def test_tile_by_constant_repeats(dims):
    check_onnx(f"""{HEADER}
        g (float[{dims}] x) => (float[A,B] y) {{
            r = Constant <value = int64[2] {{3, 2}}> ()
            y = Tile(x, r)
        }}""", {"x": X})


def test_tile_of_int_data_rank3_with_a_zero_repeat():
    x = np.arange(12, dtype=np.int64).reshape(2, 3, 2)
    check_onnx(f"""{HEADER}
        g (int64[2,3,2] x) => (int64[A,B,C] y, int64[D,E,F] z) {{
            r = Constant <value = int64[3] {{1, 2, 3}}> ()
            y = Tile(x, r)
            r0 = Constant <value = int64[3] {{2, 0, 1}}> ()
            z = Tile(x, r0)
        }}""", {"x": x})


def test_tile_by_beam_size_computed_from_a_shape():
    """Beam search: encoder states [1, T, H] tiled to [beams, T, H], beams read from another input."""
    enc = np.random.default_rng(0).standard_normal((1, 4, 3)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[1,T,3] enc, float[K] scores) => (float[K,T,3] y) {{
            k = Shape(scores)
            ones = Constant <value = int64[2] {{1, 1}}> ()
            r = Concat <axis = 0> (k, ones)
            y = Tile(enc, r)
        }}""", {"enc": enc, "scores": np.zeros(5, np.float32)})


def test_tile_by_repeats_fed_as_an_input():
    check_onnx(f"""{HEADER}
        g (float[N,3] x, int64[2] r) => (float[A,B] y) {{ y = Tile(x, r) }}""",
               {"x": X, "r": np.array([2, 3], np.int64)})


# -- Pad -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dims", ["3,4", "N,M"])
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_modes(dims, mode):
    x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    check_onnx(f"""{HEADER}
        g (float[{dims}] x) => (float[A,B] y) {{
            p = Constant <value = int64[4] {{1, 2, 2, 1}}> ()
            v = Constant <value = float {{-7.5}}> ()
            y = Pad <mode = "{mode}"> (x, p, v)
        }}""", {"x": x})


def test_pad_negative_crops_and_default_zero_fill():
    x = np.arange(1, 13, dtype=np.int32).reshape(3, 4)
    check_onnx(f"""{HEADER}
        g (int32[3,N] x) => (int32[A,B] y) {{
            p = Constant <value = int64[4] {{-1, 2, 1, -3}}> ()
            y = Pad(x, p)
        }}""", {"x": x})


@pytest.mark.parametrize("dims", ["2,3,4", "B,T,4"])
def test_pad_selected_axes(dims):
    """Opset 18's axes input: pad the time axis of [batch, time, feature] only (a causal shift)."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    check_onnx(f"""{HEADER}
        g (float[{dims}] x) => (float[A,B,C] y) {{
            p = Constant <value = int64[2] {{2, 0}}> ()
            axes = Constant <value = int64[1] {{-2}}> ()
            v = Constant <value = float {{1.0}}> ()
            y = Pad(x, p, v, axes)
        }}""", {"x": x})


def test_pad_to_a_computed_length():
    """Pads computed at run time: pad the last axis of x up to the length of another input."""
    check_onnx(f"""{HEADER}
        g (float[2,N] x, float[L] like) => (float[2,L] y) {{
            n = Shape(x)
            l = Shape(like)
            one = Constant <value = int64[1] {{1}}> ()
            have = Gather <axis = 0> (n, one)
            extra = Sub(l, have)
            zeros = Constant <value = int64[3] {{0, 0, 0}}> ()
            p = Concat <axis = 0> (zeros, extra)
            y = Pad <mode = "edge"> (x, p)
        }}""", {"x": X, "like": np.zeros(7, np.float32)})


@pytest.mark.parametrize("dims", ["2,3,4", "B,T,4"])
@pytest.mark.parametrize("axes, pads", [([-2, 0], [2, 1, 1, 0]), ([2], [1, 2])])
@pytest.mark.parametrize("mode", ["constant", "reflect"])
def test_pad_axes_fed_as_an_input(dims, axes, pads, mode):
    """Axes (negative ones too) and pads fed at run time: shape tensors the profile pins."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    n = len(axes)
    check_onnx(f"""{HEADER}
        g (float[{dims}] x, int64[{2 * n}] p, int64[{n}] axes) => (float[A,B,C] y) {{
            y = Pad <mode = "{mode}"> (x, p, , axes)
        }}""", {"x": x, "p": np.array(pads, np.int64), "axes": np.array(axes, np.int64)})

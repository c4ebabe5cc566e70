"""ReverseSequence, GatherND and OneHot against onnxruntime, with static and runtime-shaped inputs."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend.trt.oracle import check_onnx

HEADER = '<ir_version: 8, opset_import: ["" : 19]>'
RNG = np.random.default_rng(6)


# -- ReverseSequence -------------------------------------------------------------------------------


@pytest.mark.parametrize("dims", ["4,3,2", "T,B,2"])
def test_reverse_sequence_time_major(dims):
    x = RNG.standard_normal((4, 3, 2)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[{dims}] x, int64[3] lens) => (float[{dims}] y) {{ y = ReverseSequence(x, lens) }}""",
               {"x": x, "lens": np.array([4, 1, 0])})


@pytest.mark.parametrize("dims", ["2,5", "B,T"])
def test_reverse_sequence_batch_major_int_data(dims):
    x = np.arange(10, dtype=np.int64).reshape(2, 5)
    check_onnx(f"""{HEADER}
        g (int64[{dims}] x, int64[B] lens) => (int64[{dims}] y) {{
            y = ReverseSequence <batch_axis = 0, time_axis = 1> (x, lens)
        }}""", {"x": x, "lens": np.array([3, 5])})


def test_reverse_sequence_of_computed_full_lengths():
    """tf2onnx's ReverseV2 (Keras go_backwards): lengths are the time dim, expanded over the batch."""
    x = RNG.standard_normal((3, 6, 2)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[B,T,2] x) => (float[B,T,2] y) {{
            shape = Shape(x)
            one = Constant <value = int64[1] {{1}}> ()
            zero = Constant <value = int64[1] {{0}}> ()
            t = Gather <axis = 0> (shape, one)
            b = Gather <axis = 0> (shape, zero)
            lens = Expand(t, b)
            y = ReverseSequence <batch_axis = 0, time_axis = 1> (x, lens)
        }}""", {"x": x})


@pytest.mark.parametrize("direction", ["reverse", "bidirectional"])
def test_gru_with_sequence_lens_lowers_through_reverse_sequence(direction):
    """loopc's own RNN lowering reverses each sequence's valid prefix with ReverseSequence."""
    dirs, hidden, feat = (2 if direction == "bidirectional" else 1), 3, 2
    inputs = {
        "x": RNG.standard_normal((5, 2, feat)).astype(np.float32),
        "w": RNG.standard_normal((dirs, 3 * hidden, feat)).astype(np.float32) * 0.5,
        "r": RNG.standard_normal((dirs, 3 * hidden, hidden)).astype(np.float32) * 0.5,
        "lens": np.array([5, 3], np.int32),
    }
    check_onnx(f"""{HEADER}
        g (float[T,2,{feat}] x, float[{dirs},{3 * hidden},{feat}] w, float[{dirs},{3 * hidden},{hidden}] r,
           int32[2] lens) => (float[T,{dirs},2,{hidden}] y, float[{dirs},2,{hidden}] h) {{
            y, h = GRU <hidden_size = {hidden}, direction = "{direction}"> (x, w, r, , lens)
        }}""", inputs, rtol=1e-4, atol=1e-5)

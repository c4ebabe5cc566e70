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


# -- GatherND ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dims", ["3,4", "N,M"])
def test_gather_nd_points_rows_and_negative_indices(dims):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    check_onnx(f"""{HEADER}
        g (float[{dims}] x, int64[2,2] points, int64[3,1] rows) => (float[2] a, float[3,M] b) {{
            a = GatherND(x, points)
            b = GatherND(x, rows)
        }}""", {"x": x, "points": np.array([[0, 3], [-1, 1]]), "rows": np.array([[2], [0], [-2]])})


def test_gather_nd_with_batch_dims_picks_each_beams_token():
    """Beam search: gather each batch entry's chosen beam, [batch, beams, hidden] by [batch, k, 1]."""
    states = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[B,3,4] s, int64[B,K,1] pick) => (float[B,K,4] y) {{ y = GatherND <batch_dims = 1> (s, pick) }}""",
               {"s": states, "pick": np.array([[[2], [0]], [[1], [1]]])})


def test_gather_nd_int_data():
    x = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    check_onnx(f"""{HEADER}
        g (int64[2,3,4] x, int64[2,1,2] i) => (int64[2,1,4] y) {{ y = GatherND(x, i) }}""",
               {"x": x, "i": np.array([[[1, 2]], [[0, 0]]])})


# -- OneHot --------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot_of_int64_tokens_with_out_of_range_and_negative_indices(axis):
    check_onnx(f"""{HEADER}
        g (int64[B,3] tokens) => (float[X,Y,Z] y) {{
            depth = Constant <value = int64 {{5}}> ()
            values = Constant <value = float[2] {{-0.5, 2.0}}> ()
            y = OneHot <axis = {axis}> (tokens, depth, values)
        }}""", {"tokens": np.array([[0, 4, -1], [7, -5, 2]])})


def test_one_hot_of_float_indices_with_a_computed_depth():
    """tf2onnx and paddle2onnx feed depth as a 1-element tensor, sometimes computed; as floats."""
    check_onnx(f"""{HEADER}
        g (float[4] idx, float[V] vocab) => (float[4,V] y) {{
            shape = Shape(vocab)
            depth = Cast <to = 1> (shape)
            values = Constant <value = float[2] {{0, 1}}> ()
            y = OneHot(idx, depth, values)
        }}""", {"idx": np.array([0.0, 2.7, 5.0, 1.0], np.float32), "vocab": np.zeros(6, np.float32)})


def test_one_hot_depth_fed_as_an_int64_input():
    """An integer depth input sizes the output: it becomes a shape-tensor input of the engine."""
    check_onnx(f"""{HEADER}
        g (int64[3] tokens, int64 depth) => (float[3,D] y) {{
            values = Constant <value = float[2] {{0.0, 1.0}}> ()
            y = OneHot(tokens, depth, values)
        }}""", {"tokens": np.array([1, 0, 3]), "depth": np.array(4)})


def test_one_hot_depth_fed_as_a_float_input_is_refused_by_node():
    import onnx.parser

    from loopc.backend.trt import to_network
    from loopc.errors import UnsupportedConversionError
    from loopc.frontend.onnx import import_model

    proto = onnx.parser.parse_model(f"""{HEADER}
        g (int64[3] tokens, float depth, float[2] values) => (float[3,D] y) {{ y = OneHot(tokens, depth, values) }}""")
    with pytest.raises(UnsupportedConversionError, match=r"OneHot.*floating-point depth input 'depth'.*int64"):
        to_network(import_model(proto))

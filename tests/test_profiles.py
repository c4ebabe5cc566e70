"""ShapeProfile: which bound comes from where, and that TensorRT's own profile object holds what was chosen."""

from __future__ import annotations

import pathlib
import re
from typing import Any

import numpy as np
import onnx.parser
import pytest

from loopc.compiler import build, compile
from loopc.errors import BackendError, LoopcError
from loopc.frontend.onnx import import_model
from loopc.profile_constraints import choose, spans, variables
from loopc.profiles import (
    DEFAULT_RANGE,
    NetworkInput,
    ShapeProfile,
    build_narrowing,
    network_input,
)
from loopc.trt.config import builder_config
from tests.backend.trt.oracle import check_onnx

X = NetworkInput("x", (-1, -1, 4), dtype="float32", names=("batch", "seq", None))
H = NetworkInput("h", (-1, 4), dtype="float32", names=("batch", None))
S = NetworkInput("s", (2,), shape_tensor=True, dtype="int64")


def bounds(record: Any) -> tuple[list[int], list[int], list[int]]:
    return record.min, record.opt, record.max


def test_defaults_are_the_documented_range() -> None:
    assert DEFAULT_RANGE == (1, 8, 64)
    records = ShapeProfile().resolve([X, H, S])
    assert bounds(records["x"]) == ([1, 1, 4], [8, 8, 4], [64, 64, 4])
    assert records["s"].values == {"min": [1, 1], "opt": [8, 8], "max": [64, 64]}  # one per element
    assert {r.source for r in records.values()} == {"default"}


def test_a_named_dim_follows_the_first_input_that_gives_it() -> None:
    profile = ShapeProfile(min={"x": (2, 1, 4)}, opt={"x": (3, 5, 4)}, max={"x": (4, 9, 4)})
    records = profile.resolve([H, X])  # h comes first in the network, x still gives 'batch'
    assert bounds(records["h"]) == ([2, 4], [3, 4], [4, 4])
    assert records["h"].source == "default" and records["x"].source == "shapes"


def test_flags_win_over_the_example_bound_by_bound() -> None:
    profile = ShapeProfile(max={"x": (16, 32, 4)}, examples={"x": np.zeros((3, 7, 4), np.float32)})
    record = profile.resolve([X])["x"]
    assert bounds(record) == ([3, 7, 4], [3, 7, 4], [16, 32, 4])
    assert record.source == "inputs+shapes"


@pytest.mark.parametrize(
    ("profile", "message"),
    [
        (ShapeProfile(min={"y": (1,)}, opt={"y": (1,)}, max={"y": (1,)}), "shapes= names y, which the model has"),
        (ShapeProfile(examples={"y": np.zeros(1)}), "inputs= names y, which the model has"),
        (ShapeProfile(min={"x": (1, 1, 4)}), "input 'x' needs all of min_shapes=, opt_shapes= and max_shapes="),
        (ShapeProfile(examples={"s": np.array([1.5, 2.0])}), "input 's' is a shape tensor and needs integer values"),
        (ShapeProfile(examples={"s": np.array([1, 2, 3])}), "input 's' is a shape tensor of 2 value(s)"),
        (ShapeProfile(examples={"x": np.zeros((3, 7, 5))}), "input 'x' of shape 3x7x5 does not fit the input's "
                                                            "shape ?x?x4"),
    ],
)
def test_impossible_profiles_are_refused(profile: ShapeProfile, message: str) -> None:
    with pytest.raises(LoopcError, match=re.escape(message)):
        profile.resolve([X, S])


class Recorder:
    """A builder that hands out TensorRT's real profile objects and keeps them to read back."""

    def __init__(self, builder: Any) -> None:
        self.builder, self.profiles = builder, []

    def create_optimization_profile(self) -> Any:
        self.profiles.append(self.builder.create_optimization_profile())
        return self.profiles[-1]


TRIPS = """<ir_version: 8, opset_import: ["" : 17]>
g (int64 n, float[batch,3] x) => (float[batch,3] y, float[K,batch,3] ys) {
    y, ys = Loop (n, "", x) <body = b (int64 i, bool c, float[batch,3] x_in)
                                   => (bool c_out, float[batch,3] x_out, float[batch,3] s) {
        one = Constant <value = float {1}> ()
        x_out = Add (x_in, one)
        s = Identity (x_out)
        c_out = Identity (c)
    }>
}"""


def test_tensorrt_profile_holds_the_chosen_shapes_and_values() -> None:
    compiled = compile(onnx.parser.parse_model(TRIPS))
    cfg = builder_config(compiled.session)
    recorder = Recorder(compiled.session.builder)
    seen: list[str] = []
    records = ShapeProfile(opt={"x": (2, 3)}, min={"x": (1, 3)}, max={"x": (5, 3)}).apply(
        recorder, compiled.network, cfg, warn=seen.append)
    [profile] = recorder.profiles
    assert [tuple(d) for d in profile.get_shape("x")] == [(1, 3), (2, 3), (5, 3)]
    assert [list(v) for v in profile.get_shape_input("n")] == [[1], [8], [64]]
    assert cfg.num_optimization_profiles == 1
    assert [line.split(" is ")[0] for line in seen] == ["input 'n'"]  # only the defaulted input warns
    assert records["n"].source == "default" and records["x"].source == "shapes"


# --- defaults that fit the graph -------------------------------------------------------------------------

def fit(text: str, given: dict[str, tuple[Any, Any, Any]] | None = None) -> Any:
    """What :func:`choose` picks for a text model's dynamic inputs, around loopc's default range."""
    graph = import_model(onnx.parser.parse_model(text)).graph
    dims = variables({v.name: v.shape for v in graph.inputs if v.name not in (given or {}) and v.shape is not None
                      and not all(isinstance(d, int) for d in v.shape)})
    choice = choose(graph, dims, DEFAULT_RANGE, given)
    return choice, {name: (low, mid, high) for name, low, mid, high in spans(choice, dims)}


HEAD = '<ir_version: 8, opset_import: ["" : 17]>\n'


def test_a_graph_that_takes_the_default_keeps_it() -> None:
    choice, got = fit(HEAD + "g (float[batch,seq,4] x, float[batch,seq,4] y) => (float[batch,seq,4] z) "
                             "{ z = Add (x, y) }")
    assert got == {"x": ([1, 1, 4], [8, 8, 4], [64, 64, 4]), "y": ([1, 1, 4], [8, 8, 4], [64, 64, 4])}
    assert choice.why == {}


def test_a_reshape_to_columns_of_channels_times_height_fixes_the_height() -> None:
    """[b, 2, h, w] → [b, w, 2*h] (the target from Shape, as exporters write it) → MatMul with a [6, 3] weight:
    only h = 3 fits; b and w keep the default."""
    choice, got = fit(HEAD + """g (float[b,2,h,w] x) => (float[b,w,3] y) {
        t = Transpose <perm = [0, 3, 1, 2]> (x)
        s = Shape (t)
        i0 = Constant <value = int64[1] {0}> ()
        i1 = Constant <value = int64[1] {1}> ()
        i2 = Constant <value = int64[2] {2, 3}> ()
        b_ = Gather (s, i0)
        w_ = Gather (s, i1)
        ch = Gather (s, i2)
        prod = ReduceProd <keepdims = 1> (ch)
        target = Concat <axis = 0> (b_, w_, prod)
        r = Reshape (t, target)
        weight = Constant <value = float[6,3] {1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18}> ()
        y = MatMul (r, weight)
    }""")
    assert got == {"x": ([1, 2, 3, 1], [8, 2, 3, 8], [64, 2, 3, 64])}
    assert set(choice.why) == {"h"} and "MatMul" in choice.why["h"] and "inner dims 16 and 6" in choice.why["h"]


def test_a_reshape_with_minus_one_needs_a_divisible_size() -> None:
    """[b, n] → [b, -1, 3]: n a multiple of 3, chosen at each of min, opt and max."""
    choice, got = fit(HEAD + """g (float[b,n] x) => (float[b,m,3] y) {
        target = Constant <value = int64[3] {0, -1, 3}> ()
        y = Reshape (x, target)
    }""")
    low, mid, high = got["x"]
    assert (low[1], mid[1], high[1]) == (3, 9, 60)  # the sizes nearest 1, 8 and 64 (and within) that 3 divides
    assert "the -1 has no solution" in choice.why["n"]


def test_a_concat_with_a_weight_fixes_the_other_dims() -> None:
    _, got = fit(HEAD + """g (float[n,k] x) => (float[m,3] y) {
        w = Constant <value = float[2,3] {1,2,3,4,5,6}> ()
        y = Concat <axis = 0> (x, w)
    }""")
    assert got == {"x": ([1, 3], [8, 3], [64, 3])}


def test_a_constant_gather_index_and_a_slice_start_set_the_minimum() -> None:
    """x[:, 5] needs 6 columns; x[:, 3:] is empty below 4: the larger minimum wins."""
    choice, got = fit(HEAD + """g (float[b,t] x) => (float[b] y, float[b,u] z) {
        five = Constant <value = int64 {5}> ()
        y = Gather <axis = 1> (x, five)
        start = Constant <value = int64[1] {3}> ()
        stop = Constant <value = int64[1] {100000}> ()
        axis = Constant <value = int64[1] {1}> ()
        z = Slice (x, start, stop, axis)
    }""")
    assert got == {"x": ([1, 6], [8, 8], [64, 64])}
    assert choice.why["t"].startswith("at 1, node 'y' (Gather, opset 17): gathers index 5 from an axis of 1")
    _, sliced = fit(HEAD + """g (float[b,t] x) => (float[b,u] z) {
        start = Constant <value = int64[1] {3}> ()
        stop = Constant <value = int64[1] {100000}> ()
        axis = Constant <value = int64[1] {1}> ()
        z = Slice (x, start, stop, axis)
    }""")
    assert sliced == {"x": ([1, 4], [8, 8], [64, 64])}


def test_a_conv_window_sets_the_minimum_and_dims_the_graph_ties_move_together() -> None:
    """A width-5 kernel needs 5 samples; h0's unnamed batch must follow x's wherever x's moves."""
    _, got = fit(HEAD + """g (float[b,1,t] x, float[c,4] h) => (float[b,4] y) {
        w = Constant <value = float[4,1,5] {1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1}> ()
        conv = Conv (x, w)
        zero = Constant <value = int64 {0}> ()
        first = Gather <axis = 2> (conv, zero)
        y = Add (first, h)
    }""")
    assert got["x"] == ([1, 1, 5], [8, 1, 8], [64, 1, 64])
    assert got["h"] == ([1, 4], [8, 4], [64, 4])


def test_a_pinned_input_holds_and_the_others_follow_it() -> None:
    """The user gave x as 5 x 4 (min = opt = max); y, whose unnamed first dim an Add ties to x's, takes 5
    (or 1, which broadcasts) rather than the default."""
    _, got = fit(HEAD + "g (float[n,4] x, float[m,4] y) => (float[n,4] z) { z = Add (x, y) }",
                 given={"x": ((5, 4), (5, 4), (5, 4))})
    low, mid, high = got["y"]
    assert mid == high == [5, 4] and low[0] in (1, 5)


def test_a_loop_state_that_a_weight_shapes_fixes_the_input_it_starts_from() -> None:
    """An RNN-style Loop whose state goes through a [3, 3] weight: h0's width is 3, at every point."""
    choice, got = fit(HEAD + """g (int64 n, float[b,k] h0) => (float[b,k] h) {
        cond = Constant <value = bool {1}> ()
        h = Loop (n, cond, h0) <body = body (int64 i, bool c, float[b,k] s) => (bool c_out, float[b,k] s_out) {
            w = Constant <value = float[3,3] {1,0,0,0,1,0,0,0,1}> ()
            p = MatMul (s, w)
            s_out = Tanh (p)
            c_out = Identity (c)
        }>
    }""")
    assert got == {"h0": ([1, 3], [8, 3], [64, 3])}
    assert "inner dims 8 and 3" in choice.why["k"]


def test_nothing_fits_leaves_the_default_for_tensorrt_to_refuse() -> None:
    """x's k cannot be both 3 and 4."""
    choice, got = fit(HEAD + """g (float[n,k] x) => (float[m,3] y, float[p,4] z) {
        three = Constant <value = float[1,3] {1,2,3}> ()
        four = Constant <value = float[1,4] {1,2,3,4}> ()
        y = Concat <axis = 0> (x, three)
        z = Concat <axis = 0> (x, four)
    }""")
    assert not choice.fits and got == {"x": ([1, 1], [8, 8], [64, 64])}


# --- the warning line, the report, and TensorRT's builder ------------------------------------------------

MODELS = pathlib.Path(__file__).resolve().parent / "models" / "profiles"


@pytest.mark.parametrize(
    ("case", "want"),
    [
        ("crnn_ocr.onnx", {"image": ([1, 1, 48, 4], [8, 1, 48, 8], [64, 1, 52, 64])}),
        ("gru_all_dynamic.onnx", {"x": ([1, 1, 5], [8, 8, 5], [64, 64, 5]), "h0": ([1, 1, 6], [8, 8, 6], [64, 64, 6])}),
        ("gru_sequence_ir.xml", {"x": ([1, 1, 5], [8, 8, 5], [64, 64, 5]), "h0": ([1, 1, 6], [8, 8, 6], [64, 64, 6])}),
    ],
)
def test_the_corpus_cases_get_a_profile_holding_their_examples(case: str, want: dict[str, Any]) -> None:
    """The fixed dims are the weights' (height 48 to 52 all pool down to 6 rows, 16 x 6 = the LSTM's 96
    inputs); every example input lies inside the chosen range. (``test_corpus`` builds each with no flags and
    compares the simulated engine with onnxruntime / OpenVINO.)"""
    compiled = compile(str(MODELS / case))
    inputs = [network_input(compiled.network.get_input(i), compiled.model.graph.inputs[i].shape)
              for i in range(compiled.network.num_inputs)]
    why: dict[str, str] = {}
    records = ShapeProfile().resolve(inputs, compiled.model.graph, why=why)
    assert {name: bounds(rec) for name, rec in records.items()} == want
    assert all(rec.source == "default" for rec in records.values()) and set(why) == set(want)
    with np.load(MODELS / case.replace(".onnx", ".inputs.npz").replace(".xml", ".inputs.npz")) as examples:
        for name, rec in records.items():
            assert all(lo <= d <= hi for lo, d, hi in zip(rec.min, examples[name].shape, rec.max)), name


SLICED_GATHER = HEAD + """g (float[batch,seq,4] x) => (float[batch,4] y, float[steps,batch,4] ys, float[batch,4] fourth) {
    two = Constant <value = int64[1] {2}> ()
    end = Constant <value = int64[1] {9223372036854775807}> ()
    one = Constant <value = int64[1] {1}> ()
    tail = Slice (x, two, end, one)
    zero = Constant <value = int64 {0}> ()
    first = Gather <axis = 1> (tail, zero)
    three = Constant <value = int64 {3}> ()
    fourth = Gather <axis = 1> (x, three)
    xt = Transpose <perm = [1, 0, 2]> (tail)
    y, ys = Scan <num_scan_inputs = 1, body = b (float[batch,4] acc, float[batch,4] row)
                                         => (float[batch,4] acc_out, float[batch,4] s) {
        m = Mul (acc, row)
        acc_out = Add (m, row)
        s = Identity (acc_out)
    }> (first, xt)
}"""


def test_a_gather_and_slice_model_builds_without_flags_and_matches(tmp_path: pathlib.Path) -> None:
    """The default's seq of 1 leaves x[:, 2:] empty and x[:, 3] out of range; loopc starts seq at 4, says so in
    one line (for the first of the two it meets), builds, and the network's simulation matches onnxruntime at
    the example."""
    path = tmp_path / "sliced_gather.onnx"
    onnx.save(onnx.parser.parse_model(SLICED_GATHER), path)
    seen: list[str] = []
    report = build(str(path), tmp_path / "m.plan", warn=seen.append)
    assert bounds(report.inputs["x"]) == ([1, 4, 4], [8, 8, 4], [64, 64, 4])
    assert seen == [("input 'x' has dynamic dims (batch, seq, 4); using min 1x4x4 opt 8x8x4 max 64x64x4 (seq in 4..64: "
                     "at 1, node 'tail' (Slice, opset 17): result 0 would be [1,0,4], empty); set them with shapes=/"
                     "min_shapes=/opt_shapes=/max_shapes= or inputs=")]
    x = np.random.default_rng(0).uniform(-1, 1, (3, 7, 4)).astype(np.float32)
    check_onnx(SLICED_GATHER, {"x": x})


SIXTEEN_OR_ONE = HEAD + """g (float[b,k] x) => (float[b,k] y) {
    w = Constant <value = float[1,16] {1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16}> ()
    y = Add (x, w)
}"""


def test_a_shape_refusal_of_tensorrt_moves_the_default(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the graph's requirements unseen (the search told to find nothing), TensorRT's builder refuses k = 8
    at the opt (x [b, k] plus a [1, 16] weight: k is 16, or 1 to broadcast); loopc moves the opt to the min,
    where k = 1, builds, and says so in the line."""
    import loopc.profile_constraints as constraints

    monkeypatch.setattr(constraints, "choose", lambda graph, dims, default, given=None: constraints.Choice(
        {point: {var: default[k] for var in dict.fromkeys(d for ds in dims.values() for d in ds
                                                         if not isinstance(d, int))}
         for k, point in enumerate(constraints.POINTS)}))
    path = tmp_path / "sixteen_or_one.onnx"
    onnx.save(onnx.parser.parse_model(SIXTEEN_OR_ONE), path)
    seen: list[str] = []
    report = build(str(path), tmp_path / "m.plan", warn=seen.append)
    assert bounds(report.inputs["x"]) == ([1, 1], [1, 1], [64, 64])
    [line] = seen
    assert "using min 1x1 opt 1x1 max 64x64 (opt moved to min, as TensorRT refused the wider range (" in line
    assert "Broadcast has incompatible dimensions" in line


def test_narrowing_follows_the_point_tensorrt_names_and_only_moves_defaults() -> None:
    default = ShapeProfile().resolve([X])
    tried: list[str] = []

    def builds_at(good: str) -> Any:
        def build(narrow: str, refused: str) -> bytes:
            tried.append(narrow)
            if narrow != good:
                raise BackendError("TensorRT could not build the network: Error Code 4: kOPT violate shape constraints")
            return b"plan"
        return build

    opt_error = BackendError("TensorRT could not build the network: Error Code 4: kOPT violate shape constraints")
    assert build_narrowing(builds_at("opt-max"), default, opt_error) == b"plan" and tried == ["opt-min", "opt-max"]
    tried.clear()
    min_error = BackendError("Error Code 4: kMIN values for profile 0 violate shape constraints")
    assert build_narrowing(builds_at("min"), default, min_error) == b"plan" and tried == ["min"]
    with pytest.raises(BackendError, match="out of memory"):
        build_narrowing(builds_at("opt"), default, BackendError("out of memory"))
    pinned = ShapeProfile(examples={"x": np.zeros((2, 3, 4), np.float32)}).resolve([X])
    with pytest.raises(BackendError, match="shape constraints"):
        build_narrowing(builds_at("opt"), pinned, opt_error)  # the user's shapes are never moved
    tried.clear()
    with pytest.raises(BackendError, match="kOPT"):
        build_narrowing(builds_at("none"), default, opt_error)
    assert tried == ["opt-min", "opt-max", "min", "opt"]
    moved = ShapeProfile().resolve([X], narrow="opt-min")["x"]
    assert bounds(moved) == ([1, 1, 4], [1, 1, 4], [64, 64, 4])

"""ShapeProfile: which bound comes from where, and that TensorRT's own profile object holds what was chosen."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import onnx.parser
import pytest

from loopc.compiler import compile
from loopc.errors import LoopcError
from loopc.profiles import DEFAULT_RANGE, NetworkInput, ShapeProfile
from loopc.trt.config import builder_config

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

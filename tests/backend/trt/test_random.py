"""RandomUniform(Like), RandomNormal(Like) and Bernoulli: built with the real builder and simulated.

Random values match no oracle's, so each test checks what the op's definition fixes: shapes and types
from onnxruntime's run of the same model, ranges and moments within a few standard errors, and
Bernoulli's certain outcomes at p = 0 and p = 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnx.parser
import onnxruntime as ort
import pytest

from loopc.backend.trt import to_network
from loopc.errors import UnsupportedConversionError
from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import build_and_simulate

#: onnxruntime has no kernels of the random ops' opset-22 versions (which only added types).
HEADER = '<ir_version: 10, opset_import: ["" : 21]>'


def _run(text: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """loopc's outputs, each checked for the shape and type onnxruntime gives the same model (doubles are
    float32 in TensorRT)."""
    proto = onnx.parser.parse_model(text)
    onnx.checker.check_model(proto)
    narrow = {k: v.astype(np.float32) if v.dtype == np.float64 else v for k, v in inputs.items()}
    _, got = build_and_simulate(import_model(proto), narrow)
    names = [o.name for o in proto.graph.output]
    oracle = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for name, want in zip(names, oracle.run(names, inputs)):
        want_type = np.float32 if want.dtype == np.float64 else want.dtype
        assert got[name].shape == want.shape and got[name].dtype == want_type, (name, got[name].dtype, want.dtype)
    return got


def test_random_uniform_like_of_a_dynamic_shape():
    x = np.zeros((50, 80), np.float32)
    y = _run(f"""{HEADER}
        g (float[N,M] x) => (float[N,M] y) {{ y = RandomUniformLike <low = -1.0, high = 3.0, seed = 5.0> (x) }}""",
             {"x": x})["y"].astype(np.float64)
    assert -1.0 <= y.min() and y.max() <= 3.0
    assert abs(y.mean() - 1.0) < 0.1 and abs(y.var() - 16 / 12) < 0.1


def test_random_normal_like_takes_the_input_type_and_dtype_overrides_it():
    x = np.zeros((4000,), np.float16)
    got = _run(f"""{HEADER}
        g (float16[N] x) => (float16[N] a, float[N] b) {{
            a = RandomNormalLike <mean = 2.0, scale = 0.5> (x)
            b = RandomNormalLike <mean = -1.0, scale = 3.0, dtype = 1> (x)
        }}""", {"x": x})
    a, b = got["a"].astype(np.float64), got["b"].astype(np.float64)
    assert abs(a.mean() - 2.0) < 0.05 and abs(a.std() - 0.5) < 0.05
    assert abs(b.mean() + 1.0) < 0.3 and abs(b.std() - 3.0) < 0.2


def test_random_uniform_and_normal_of_a_static_shape():
    got = _run(f"""{HEADER}
        g (float[1] unused) => (float[40,50] u, double[40,50] n) {{
            u = RandomUniform <shape = [40, 50], low = 5.0, high = 6.0> ()
            n = RandomNormal <shape = [40, 50], dtype = 11> ()
        }}""", {"unused": np.zeros(1, np.float32)})
    u, n = got["u"].astype(np.float64), got["n"]
    assert 5.0 <= u.min() and u.max() <= 6.0 and abs(u.mean() - 5.5) < 0.03
    assert abs(n.mean()) < 0.1 and abs(n.std() - 1.0) < 0.1


def test_bernoulli_is_certain_at_0_and_1_and_frequent_as_p_between():
    p = np.concatenate([np.zeros(100), np.ones(100), np.full(10_000, 0.3)]).astype(np.float32)
    y = _run(f"""{HEADER}
        g (float[N] p) => (float[N] y, int32[N] k) {{
            y = Bernoulli(p)
            k = Bernoulli <dtype = 6> (p)
        }}""", {"p": p})
    for drawn in (y["y"], y["k"]):
        assert set(np.unique(drawn)) <= {0, 1}
        assert not drawn[:100].any() and drawn[100:200].all()
        assert abs(drawn[200:].mean() - 0.3) < 0.03  # standard error ~0.005


def test_bernoulli_of_doubles():
    p = np.linspace(0, 1, 11)
    y = _run(f"""{HEADER}
        g (double[11] p) => (double[11] y) {{ y = Bernoulli(p) }}""", {"p": p})["y"]
    assert y[0] == 0 and y[-1] == 1 and set(np.unique(y)) <= {0.0, 1.0}


@pytest.mark.parametrize("op, attrs, what", [
    ("RandomUniformLike", "low = 1.0, high = 1.0", "low=1.0 not below high=1.0"),
    ("RandomNormalLike", "scale = 0.0", "scale=0.0"),
])
def test_a_degenerate_distribution_is_refused_by_node(op: str, attrs: str, what: str):
    proto = onnx.parser.parse_model(f"""{HEADER}
        g (float[3] x) => (float[3] y) {{ y = {op} <{attrs}> (x) }}""")
    with pytest.raises(UnsupportedConversionError, match=what):
        to_network(import_model(proto))


def test_random_of_an_integer_type_is_refused_by_node():
    proto = onnx.parser.parse_model(f"""{HEADER}
        g (float[3] x) => (float[3] y) {{ y = RandomUniformLike <dtype = 1> (x) }}""")
    to_network(import_model(proto))  # float: fine
    bad: Any = onnx.parser.parse_model(f"""{HEADER}
        g (int32[3] x) => (int32[3] y) {{ y = RandomUniformLike (x) }}""")
    with pytest.raises(UnsupportedConversionError, match="draws floating-point values only"):
        to_network(import_model(bad))


@pytest.mark.parametrize("op", ["RandomUniformLike", "Bernoulli"])
def test_a_draw_in_a_loop_body_is_refused_by_node(op: str):
    """Each trip must draw anew; TensorRT would compute the fill, which depends on no trip, once."""
    proto = onnx.parser.parse_model(f"""{HEADER}
        g (float[3] x, int64 n) => (float[3] y) {{
            y = Loop (n, "", x) <body = b (int64 i, bool c, float[3] acc) => (bool c_out, float[3] acc_out) {{
                r = {op} (acc)
                acc_out = Add (acc, r)
                c_out = Identity (c)
            }}>
        }}""")
    with pytest.raises(UnsupportedConversionError, match=f"{op} inside a loop body"):
        to_network(import_model(proto))

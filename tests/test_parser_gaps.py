"""Loops TensorRT's own ONNX parser is known to mishandle: loopc builds each one with the real
builder, and its simulated engine matches onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.parser
import onnxruntime as ort
import pytest

from loopc.compiler import compile
from loopc.errors import PassError, UnsupportedOpError
from loopc.sim import simulate
from loopc.trt.config import build_serialized, builder_config, pin_profile

HEADER = '<ir_version: 8, opset_import: ["" : 17]>'


def check(text: str, feeds: dict[str, np.ndarray], max_trips: int | None = None) -> None:
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    compiled = compile(model, max_trips=max_trips)
    cfg = builder_config(compiled.session)
    pin_profile(compiled.session, compiled.network, cfg, feeds)
    assert build_serialized(compiled.session, compiled.network, cfg)
    got = simulate(compiled.network, feeds)
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-6, err_msg=name)


X = np.arange(6, dtype=np.float32).reshape(2, 3)


def test_iteration_number_in_a_pure_while_loop() -> None:
    """x += i while sum(x) < 40: no trip count, the body reads iteration_num."""
    check(f"""{HEADER}
        g (float[3] x, bool go) => (float[3] y) {{
            y = Loop ("", go, x) <body = b (int64 i, bool c_in, float[3] x_in) => (bool c_out, float[3] x_out) {{
                fi = Cast <to = 1> (i)
                x_out = Add (x_in, fi)
                total = ReduceSum <keepdims = 0> (x_out)
                limit = Constant <value = float {{40}}> ()
                c_out = Less (total, limit)
            }}>
        }}""", {"x": np.array([1, 2, 3], np.float32), "go": np.array(True)})


def test_scan_with_negative_axes() -> None:
    """Iterate the columns of x (axis -1) and stack the running sums on axis -1."""
    check(f"""{HEADER}
        g (float[2,3] x, float[2] s0) => (float[2] s, float[2,3] sums) {{
            s, sums = Scan <num_scan_inputs = 1, scan_input_axes = [-1], scan_output_axes = [-1],
                           body = b (float[2] acc, float[2] col) => (float[2] acc_out, float[2] out) {{
                acc_out = Add (acc, col)
                out = Identity (acc_out)
            }}> (s0, x)
        }}""", {"x": X, "s0": np.zeros(2, np.float32)})


def test_scan_without_state_variables() -> None:
    check(f"""{HEADER}
        g (float[2,3] x) => (float[2,3] y) {{
            y = Scan <num_scan_inputs = 1, scan_input_directions = [1],
                      body = b (float[3] row) => (float[3] out) {{ out = Tanh (row) }}> (x)
        }}""", {"x": X})


def test_loop_without_carried_values() -> None:
    check(f"""{HEADER}
        g (float[3] x, int64 n) => (float[4,3] ys) {{
            ys = Loop (n, "") <body = b (int64 i, bool c_in) => (bool c_out, float[3] y) {{
                fi = Cast <to = 1> (i)
                y = Mul (x, fi)
                c_out = Identity (c_in)
            }}>
        }}""", {"x": np.array([1, 2, 3], np.float32), "n": np.array(4, np.int64)})


WHILE_WITH_SCANS = f"""{HEADER}
    g (float[3] x, int64 n, bool go) => (float[3] y, float[K,3] ys) {{
        y, ys = Loop (n, go, x) <body = b (int64 i, bool c_in, float[3] x_in) => (bool c_out, float[3] x_out, float[3] s) {{
            one = Constant <value = float {{1}}> ()
            x_out = Add (x_in, one)
            s = Identity (x_out)
            total = ReduceSum <keepdims = 0> (x_out)
            limit = Constant <value = float {{20}}> ()
            c_out = Less (total, limit)
        }}>
    }}"""


def test_while_loop_with_scan_outputs_bounded_by_its_trip_count() -> None:
    """The condition ends the loop after 4 of at most 10 trips: 4 rows, not 10."""
    check(WHILE_WITH_SCANS, {"x": np.array([1, 2, 3], np.float32), "n": np.array(10, np.int64),
                             "go": np.array(True)})


def test_while_loop_with_scan_outputs_bounded_by_max_trips() -> None:
    text = WHILE_WITH_SCANS.replace("Loop (n, go, x)", 'Loop ("", go, x)').replace("int64 n, ", "")
    check(text, {"x": np.array([1, 2, 3], np.float32), "go": np.array(True)}, max_trips=32)


def test_while_loop_with_scan_outputs_and_no_bound_is_refused() -> None:
    text = WHILE_WITH_SCANS.replace("Loop (n, go, x)", 'Loop ("", go, x)').replace("int64 n, ", "")
    with pytest.raises(PassError, match="collects a value on every trip and ends on its condition.*max_trips=N"):
        compile(onnx.parser.parse_model(text))


def test_loop_with_neither_trip_count_nor_condition_is_refused() -> None:
    text = WHILE_WITH_SCANS.replace("Loop (n, go, x)", 'Loop ("", "", x)')
    with pytest.raises(UnsupportedOpError, match="unbounded: the loop has neither a trip count M nor a condition"):
        compile(onnx.parser.parse_model(text))

"""The next ONNX release's node tests (copied in ``onnx_weekly/``, see its README) through loopc, and the
semantics they changed checked at the opsets of today against onnxruntime.

Each case is built with the real builder, simulated and compared with the case's shipped outputs (the release's
reference), except the ceil_mode AveragePool whose divisor the release's reference changed while the op kept its
version: loopc keeps onnxruntime's meaning there, and that case is compared with onnxruntime.
"""

from __future__ import annotations

import json
import pathlib
import warnings
from typing import Any

import numpy as np
import onnx.parser
import onnxruntime as ort
import pytest

from benchmarks.onnx_weekly import load_case
from tests.conformance import MATCH, run_case
from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import build_and_simulate, check_onnx

HERE = pathlib.Path(__file__).parent / "onnx_weekly"
FACTS = json.loads((HERE / "cases.json").read_text())
AVERAGE_POOL = "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True"
SHIPPED = sorted(name for name in FACTS["cases"] if name != AVERAGE_POOL)


def case(name: str) -> Any:
    return load_case(HERE / name, FACTS["cases"][name], None)


@pytest.mark.parametrize("name", SHIPPED)
def test_next_releases_node_test_matches_its_outputs(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # GroupedMatMul's opset 29 is newer than the installed onnx: warned
        result = run_case(case(name), "loopc")
    assert result.status == MATCH, result.detail


def test_ceil_mode_average_pool_counting_padding_matches_onnxruntime() -> None:
    """Windows ceil_mode extends past the (implicit) padding divide by the padded input's cells they cover."""
    test = case(AVERAGE_POOL)
    (x,), (shipped,) = test.data_sets[0]
    _, got = build_and_simulate(import_model(test.model), {"x": x})
    want = ort.InferenceSession(test.model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(got["y"], want[0], rtol=1e-5, atol=1e-6)
    # the last window of each axis reads 4 of its 5 taps inside the input (32 cells; taps 24, 26, ..., 32)
    x64 = x.astype(np.float64)[0, 0]
    last = x64[24:32:2, 24:32:2, 24:32:2]
    np.testing.assert_allclose(got["y"][0, 0, 8, 8, 8], last.sum() / 64, rtol=1e-5)
    assert not np.allclose(shipped, want[0], atol=1e-4)  # the release's reference divides by 125 there


HEAD = '<ir_version: 9, opset_import: ["" : 21]>\n'


@pytest.mark.parametrize("pads", [[-1, 2], [2, -1], [-3, 5], [1, -2], [0, -1]])
def test_negative_wrap_pads_crop_before_wrapping(pads: list[int]) -> None:
    """Constant pads (a static slice) and pads given as an input (computed ones), against onnxruntime."""
    n = 4 + sum(pads)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    constant = HEAD + f"""g (float[3,4] x) => (float[3,{n}] y) {{
        p = Constant<value = int64[4] {{0, {pads[0]}, 0, {pads[1]}}}>()
        y = Pad<mode = "wrap">(x, p)
    }}"""
    check_onnx(constant, {"x": x}, rtol=0, atol=0)
    computed = HEAD + f"""g (float[3,4] x, int64[2] p) => (float[3,{n}] y) {{
        a = Constant<value = int64[1] {{1}}>()
        y = Pad<mode = "wrap">(x, p, , a)
    }}"""
    check_onnx(computed, {"x": x, "p": np.array(pads, np.int64)}, rtol=0, atol=0)


def test_dynamic_quantize_linear_of_zeros_has_scale_one() -> None:
    text = '<ir_version: 7, opset_import: ["" : 11]>\n' + """g (float[2,3] x) => (uint8[2,3] y, float s, uint8 z) {
        y, s, z = DynamicQuantizeLinear(x)
    }"""
    got = check_onnx(text, {"x": np.zeros((2, 3), np.float32)}, rtol=0, atol=0)
    assert float(got["s"]) == 1.0
    check_onnx(text, {"x": np.array([[0, 2, -3], [-2.5, 1.34, 0.5]], np.float32)})


@pytest.mark.parametrize(("dtype", "axes", "keep"), [("float16", "{0, 1}", 1), ("float16", "{1}", 0),
                                                      ("float", "{1}", 1)])
def test_reduce_log_sum_exp_is_finite_where_its_result_is(dtype: str, axes: str, keep: int) -> None:
    """Constant axes (computed ones are the node test's): float16 sums past 65,504, float32 exponentials past
    float32's range (x = 100), and -inf everywhere in a row; against float64 by hand."""
    rank = 2 if keep else (1 if axes == "{1}" else 0)
    shape = {2: "[1,1]" if axes == "{0, 1}" else "[4,1]", 1: "[4]", 0: "[]"}[rank]
    text = HEAD + f"""g ({dtype}[4,40000] x) => ({dtype}{shape} y) {{
        a = Constant<value = int64[{axes.count(',') + 1}] {axes}>()
        y = ReduceLogSumExp<keepdims = {keep}>(x, a)
    }}"""
    x = np.zeros((4, 40000), np.float16 if dtype == "float16" else np.float32)
    x[1] = 0.5
    x[2, :7] = 9 if dtype == "float16" else 100
    x[3] = -np.inf
    _, got = build_and_simulate(import_model(onnx.parser.parse_model(text)), {"x": x})
    wide = x.astype(np.float64)
    axis = (0, 1) if axes == "{0, 1}" else 1
    with np.errstate(divide="ignore"):
        top = wide.max(axis=axis, keepdims=True)
        shift = np.where(np.isfinite(top), top, 0)
        want = (np.log(np.exp(wide - shift).sum(axis=axis, keepdims=True)) + shift).reshape(got["y"].shape)
    np.testing.assert_allclose(got["y"].astype(np.float64), want, rtol=1e-3)
    assert got["y"].dtype == x.dtype

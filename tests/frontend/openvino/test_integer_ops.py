"""Ops OpenVINO's PyTorch frontend writes on integers and booleans: the Bitwise family (opset13), which it writes
for ``&``, ``|``, ``^`` and ``~`` of masks and of integers, and Floor/Ceiling/Round of an integer tensor (the
identity in OpenVINO, where ONNX's take floats only). Each against OpenVINO's CPU plugin on the same IR, through
the frontend, the passes, the real TensorRT builder and the simulator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset1 as o1
import openvino.opset5 as o5
import openvino.opset13 as o13
import pytest

from tests.frontend.openvino.harness import check, param, run_loopc, save

RNG = np.random.default_rng(13)


def _values(shape: tuple[int, ...], dtype: Any, wide: bool = False) -> np.ndarray:
    """Values over the whole range of ``dtype``, its extremes included (for bool: both). OpenVINO's CPU plugin
    computes i64 in i32, so an i64 it checks stays in i32's range unless ``wide``."""
    if np.dtype(dtype) == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    info = np.iinfo(np.int32 if dtype == np.int64 and not wide else dtype)
    values = RNG.integers(info.min, info.max, shape, dtype=np.int64 if info.bits < 64 else dtype, endpoint=True)
    values = values.astype(dtype)
    values.flat[:4] = [info.min, info.max, 0, -1 if info.min < 0 else 1]
    return values


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int32, np.int64])
def test_bitwise_family(dtype: Any, tmp_path: Path) -> None:
    """And, Or, Xor (with a broadcast operand) and Not in one model; bool masks read as the logical ops."""
    a, b = param("a", [3, 8], dtype), param("b", [8], dtype)
    outputs = [o13.bitwise_and(a, b), o13.bitwise_or(a, b), o13.bitwise_xor(b, a), o13.bitwise_not(a)]
    model = ov.Model([o1.result(out) for out in outputs], [a, b], "bitwise")
    got = check(model, {"a": _values((3, 8), dtype), "b": _values((8,), dtype)}, tmp_path, rtol=0, atol=0)
    assert all(v.dtype == np.dtype(dtype) for v in got.values())


def test_bitwise_of_int64_extremes_is_numpys(tmp_path: Path) -> None:
    """Beyond i32's range OpenVINO's CPU plugin is no oracle (it computes in i32): NumPy is."""
    a, b = param("a", [64], np.int64), param("b", [64], np.int64)
    outputs = [o13.bitwise_and(a, b), o13.bitwise_or(a, b), o13.bitwise_xor(a, b), o13.bitwise_not(a)]
    xml = save(ov.Model([o1.result(out) for out in outputs], [a, b], "wide"), tmp_path / "wide.xml")
    feeds = {"a": _values((64,), np.int64, wide=True), "b": _values((64,), np.int64, wide=True)}
    got = list(run_loopc(xml, feeds).values())
    want = [np.bitwise_and(*feeds.values()), np.bitwise_or(*feeds.values()), np.bitwise_xor(*feeds.values()),
            np.invert(feeds["a"])]
    for value, expected in zip(got, want):
        np.testing.assert_array_equal(value, expected)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_floor_ceiling_round_of_integers_are_the_identity(dtype: Any, tmp_path: Path) -> None:
    x = param("x", [2, 5], dtype)
    outputs = [o1.floor(x), o1.ceiling(x), o5.round(x, "half_to_even"), o5.round(x, "half_away_from_zero")]
    model = ov.Model([o1.result(out) for out in outputs], [x], "whole")
    values = RNG.integers(-1000, 1000, (2, 5)).astype(dtype)
    got = check(model, {"x": values}, tmp_path, rtol=0, atol=0)
    for value in got.values():
        np.testing.assert_array_equal(value, values)  # and OpenVINO's, which check compared


@pytest.mark.parametrize("index_type", [np.uint64, np.uint32, np.int32])
def test_gather_takes_any_integer_indices(index_type: Any, tmp_path: Path) -> None:
    """OpenVINO's ONNX frontend converts a detector's box indices to u64 before its Gather; OpenVINO's Gather
    takes any integer type, ONNX's int32 or int64."""
    import openvino.opset8 as o8

    x, idx = param("x", [6, 4], np.float32), param("idx", [3], np.int64)
    rows = o8.gather(x, o1.convert(idx, index_type), np.int64(0))
    model = ov.Model([o1.result(rows)], [x, idx], "gather")
    check(model, {"x": RNG.standard_normal((6, 4)).astype(np.float32), "idx": np.array([5, 0, 2], np.int64)},
          tmp_path, rtol=0, atol=0)

"""Loop roles the corpus does not reach, written as IR text and exported: onnxruntime running the export must
give the values worked out by hand from the loop's reference semantics (:mod:`loopc.ir.loop`)."""

from __future__ import annotations

import textwrap

import numpy as np
import onnx

from loopc.backend.onnx import to_onnx
from loopc.ir import Model
from loopc.ir.parser import parse
from tests.backend.onnx.cases import onnxruntime_outputs


def export(text: str) -> onnx.ModelProto:
    graph = parse(textwrap.dedent(text).strip())
    model = to_onnx(Model(graph, "test"))
    onnx.checker.check_model(model, full_check=True)
    return model


def test_a_condition_computed_from_the_state_is_tested_before_each_trip() -> None:
    """``while s < limit: s = 2 * s + row[i]`` for at most 4 trips. The IR computes the condition from the trip's
    state; ONNX tests ``cond`` before the trip, from the previous one."""
    model = export("""
        graph main(%x: f32[4], %s0: f32[], %limit: f32[]) -> (%final, %seen) {
          %n: i64[] = Constant() value=i64[]:[4]
          %two: f32[] = Constant() value=f32[]:[2]
          %final: f32[], %seen: f32[?] = loop count=%n while=%go {
            iterator %row: f32[] = %x[axis 0]
            recurrence %s: f32[] = %s0 -> %s_next
            %go: bool[] = Less(%s, %limit)
            %doubled: f32[] = Mul(%s, %two)
            %s_next: f32[] = Add(%doubled, %row)
            last %final = %s
            concat %seen = %s axis 0
          }
        }
    """)
    x = np.array([1, 2, 3, 4], np.float32)
    # s: 1 -> 2*1+1 = 3 -> 2*3+2 = 8 -> 2*8+3 = 19 (19 >= 10: stop before trip 3)
    got = onnxruntime_outputs(model, {"x": x, "s0": np.array(1, np.float32), "limit": np.array(10, np.float32)})
    assert got["final"] == 19
    np.testing.assert_array_equal(got["seen"], [1, 3, 8])
    # a condition false at once runs no trip
    got = onnxruntime_outputs(model, {"x": x, "s0": np.array(50, np.float32), "limit": np.array(10, np.float32)})
    assert got["final"] == 50 and got["seen"].shape == (0,)


def test_a_condition_reading_the_counter_and_an_iterator() -> None:
    """``while i < 3 and x[i] > 0``: the condition reads the next trip's counter and element."""
    model = export("""
        graph main(%x: f32[5]) -> (%count) {
          %n: i64[] = Constant() value=i64[]:[5]
          %three: i64[] = Constant() value=i64[]:[3]
          %zero: f32[] = Constant() value=f32[]:[0]
          %none: i64[] = Constant() value=i64[]:[0]
          %one: i64[] = Constant() value=i64[]:[1]
          %count: i64[] = loop count=%n while=%go {
            counter %i: i64[]
            iterator %row: f32[] = %x[axis 0]
            recurrence %c: i64[] = %none -> %c_next
            %early: bool[] = Less(%i, %three)
            %positive: bool[] = Greater(%row, %zero)
            %go: bool[] = And(%early, %positive)
            %c_next: i64[] = Add(%c, %one)
            last %count = %c
          }
        }
    """)
    for x, want in (([1, 1, 1, 1, 1], 3), ([1, -1, 1, 1, 1], 1), ([-1, 1, 1, 1, 1], 0)):
        got = onnxruntime_outputs(model, {"x": np.array(x, np.float32)})
        assert got["count"] == want, x


def test_reversed_iterator_and_outputs_on_other_axes() -> None:
    """Rows read last to first, stacked reversed on axis 0 and forward on axis 1."""
    model = export("""
        graph main(%x: f32[3,2]) -> (%back, %side) {
          %n: i64[] = Constant() value=i64[]:[3]
          %back: f32[3,2], %side: f32[2,3] = loop count=%n {
            iterator %row: f32[2] = %x[axis 0 reverse]
            %twice: f32[2] = Add(%row, %row)
            reverse %back = %twice axis 0
            concat %side = %twice axis 1
          }
        }
    """)
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    got = onnxruntime_outputs(model, {"x": x})
    np.testing.assert_array_equal(got["back"], 2 * x)  # trips see rows 2, 1, 0; reversed back into 0, 1, 2
    np.testing.assert_array_equal(got["side"], (2 * x[::-1]).T)

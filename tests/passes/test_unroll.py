"""Unroll alone: a loop of a few constant trips whose carried value changes shape becomes its trips' bodies.

The ONNX models grow ``out = cat([out, 2 * out[-1:] + x[i]])`` and read ``out`` inside the loop, which a
TensorRT loop (one shape per carried value) cannot express.
"""

from __future__ import annotations

from textwrap import dedent

import numpy as np
import pytest

from loopc.errors import PassError
from loopc.ir import parse, verify
from loopc.ir.interpret import interpret
from loopc.passes import Unroll
from loopc.passes.legalize import legalization
from tests.passes.alone import assert_matches_onnxruntime, load, loops, run_alone

#: ``{count}`` trips of growing ``out`` by a row computed from its last row; each trip emits ``sum(out)``,
#: read before the growth (so ``out`` is read inside the loop), and the counter's value.
GROWING = """
g ({count_input}float[1,3] first, float[64,3] x) => (float[K,3] out, float[T] sums, int64[T] counters) {{
  {count_node}
  out, sums, counters = Loop (n, , first) <body = b (int64 i, bool c, float[N,3] acc)
                                          => (bool c_out, float[M,3] acc_next, float total, int64 counter) {{
    c_out = Constant <value = bool {{1}}> ()
    start = Constant <value = int64[1] {{-1}}> ()
    end = Constant <value = int64[1] {{9223372036854775807}}> ()
    last = Slice(acc, start, end)
    two = Constant <value = float {{2}}> ()
    doubled = Mul(last, two)
    ii = Unsqueeze(i, start)
    row = Gather <axis = 0> (x, ii)
    piece = Add(doubled, row)
    acc_next = Concat <axis = 0> (acc, piece)
    total = ReduceSum <keepdims = 0> (acc)
    counter = Identity(i)
  }}>
}}
"""
FIRST = np.array([[1, -1, 0.5]], np.float32)
X = np.random.default_rng(0).standard_normal((64, 3)).astype(np.float32)


def growing(count: int | None) -> str:
    if count is None:
        return GROWING.format(count_input="int64 n, ", count_node="")
    return GROWING.format(count_input="", count_node=f"n = Constant <value = int64 {{{count}}}> ()")


@pytest.mark.parametrize("count", [1, 3, 64])
def test_a_carried_value_grown_and_read_inside_is_unrolled(count: int) -> None:
    proto, model = load(growing(count))
    assert run_alone(model, Unroll()) == {"unroll.loops": 1}
    assert loops(model.graph) == []
    # the counter is a constant on each trip's copy: nothing reads a loop's counter any more
    assert [n.op for n in model.graph.nodes if n.outputs and n.outputs[0] is model.graph.outputs[2]] == ["Concat"]
    assert_matches_onnxruntime(proto, model, {"first": FIRST, "x": X}, rtol=1e-5, atol=1e-5)


def test_more_trips_than_the_cap_are_refused_with_the_reason() -> None:
    _, model = load(growing(65))
    with pytest.raises(PassError, match="carried value 'acc': grows on every trip.*unroll: .*runs at most 64 trips"):
        run_alone(model, legalization([], [Unroll()]))


def test_a_trip_count_read_from_an_input_is_refused_with_the_reason() -> None:
    _, model = load(growing(None))
    with pytest.raises(PassError, match="carried value 'acc': grows.*unroll: .*its trip count is a constant"):
        run_alone(model, legalization([], [Unroll()]))


def test_a_loop_whose_carried_shapes_stay_the_same_is_left_alone() -> None:
    """Constant trips alone are no reason to unroll: a TensorRT loop carries a fixed-shape value as it is."""
    proto, model = load("""
    g (float[3] x) => (float[3] total) {
      n = Constant <value = int64 {3}> ()
      zero = Constant <value = float[3] {0, 0, 0}> ()
      total = Loop (n, , zero) <body = b (int64 i, bool c, float[3] s) => (bool c_out, float[3] s_next) {
        c_out = Constant <value = bool {1}> ()
        s_next = Add(s, x)
      }>
    }
    """)
    assert run_alone(model, Unroll()) == {}
    assert len(loops(model.graph)) == 1
    assert_matches_onnxruntime(proto, model, {"x": X[0]})


def test_a_reversed_iterator_and_a_reversed_output_are_read_and_written_from_the_end() -> None:
    """Trip i reads row ``2 - i`` of x; the reversed output lists the trips' values last trip first.
    x's rows 0, 1, 2 are [1, 10, 100]: acc grows [] → [100] → [100, 10] → [100, 10, 1]; the sums read on
    trips 0, 1, 2 are 0, 100, 110, listed reversed: [110, 100, 0]."""
    graph = parse(dedent("""
        graph main(%x: f32[3,1]) -> (%grown, %sums) {
          %n: i64[] = Constant() value=i64[]:[3]
          %empty: f32[0] = Constant() value=f32[0]:[]
          %grown: f32[?], %sums: f32[3] = loop count=%n {
            iterator %row: f32[1] = %x[axis 0 reverse]
            recurrence %acc: f32[?] = %empty -> %acc_next
            %acc_next: f32[?] = Concat(%acc, %row) axis=0
            %total: f32[] = ReduceSum(%acc) keepdims=0
            last %grown = %acc
            reverse %sums = %total axis 0
          }
        }
    """).strip())
    verify(graph)
    x = np.array([[1], [10], [100]], np.float32)
    assert Unroll()(graph).stats == {"loops": 1}
    verify(graph)
    grown, sums = interpret(graph, {"x": x})
    np.testing.assert_array_equal(grown, [100, 10, 1])
    np.testing.assert_array_equal(sums, [110, 100, 0])


def test_a_where_on_the_counter_whose_branches_broadcast_keeps_its_shape() -> None:
    """``where(i > 0, a, b)`` with a [1, 3] and b [2, 3] is [2, 3] on every trip: trip 1 appends a broadcast
    to two rows, not a's one row."""
    proto, model = load("""
    g (float[1,3] a, float[2,3] b) => (float[K,3] grown, float[T] sums) {
      n = Constant <value = int64 {2}> ()
      empty = Constant <value = float[0,3] {}> ()
      grown, sums = Loop (n, , empty) <body = body (int64 i, bool c, float[N,3] acc)
                                      => (bool c_out, float[M,3] acc_next, float total) {
        c_out = Constant <value = bool {1}> ()
        zero = Constant <value = int64 {0}> ()
        later = Greater(i, zero)
        picked = Where(later, a, b)
        acc_next = Concat <axis = 0> (acc, picked)
        total = ReduceSum <keepdims = 0> (acc)
      }>
    }
    """)
    assert run_alone(model, Unroll()) == {"unroll.loops": 1}
    feeds = {"a": np.ones((1, 3), np.float32), "b": np.full((2, 3), 10, np.float32)}
    assert_matches_onnxruntime(proto, model, feeds)

"""InlineOneTrip alone: a loop of exactly one trip becomes its body, run once, in place of the loop."""

from __future__ import annotations

import numpy as np
import pytest

from loopc.ir import Loop
from loopc.passes import InlineOneTrip
from tests.passes.alone import assert_matches_onnxruntime, load, loops, run_alone

X = np.arange(12, dtype=np.float32).reshape(4, 3) - 5

#: One loop over ``x``'s rows: a sum carried, each trip's row scaled by the counter stacked. ``{count}``
#: is its trip count, ``{go}`` its condition (none: ``{cond}`` empty), ``{extra}`` more body nodes.
ROWS = """
g (float[4,3] x, float limit) => (float[3] total, float[K,3] scaled) {{
  n = Constant <value = int64 {{{count}}}> ()
  go = Constant <value = bool {{1}}> ()
  zero = Constant <value = float[3] {{0, 0, 0}}> ()
  total, scaled = Loop (n, {cond}, zero) <body = b (int64 i, bool c, float[3] s) => (bool c_out, float[3] s_next, float[3] r) {{
    row = Gather <axis = 0> (x, i)
    fi = Cast <to = 1> (i)
    one = Constant <value = float {{1}}> ()
    k = Add(fi, one)
    r = Mul(row, k)
    s_next = Add(s, r)
    {extra}
    c_out = {go}
  }}>
}}
"""
FEEDS = {"x": X, "limit": np.array(1.0, np.float32)}
ALWAYS = "Constant <value = bool {1}> ()"


def rows(count: int, go: str = ALWAYS, extra: str = "") -> str:
    return ROWS.format(count=count, cond="" if go == ALWAYS else "go", go=go, extra=extra)


def test_a_loop_of_one_trip_is_replaced_by_its_body() -> None:
    proto, model = load(rows(1))
    assert run_alone(model, InlineOneTrip()) == {"inline-one-trip.loops": 1}
    assert loops(model.graph) == []
    assert_matches_onnxruntime(proto, model, FEEDS)


def test_a_one_trip_loop_inside_a_time_loop_joins_the_enclosing_body() -> None:
    """``nn.LSTMCell``'s shape: a sequence-length-1 loop inside the user's time loop; the outer loop stays."""
    proto, model = load("""
    g (float[4,3] x) => (float[3] total) {
      n = Constant <value = int64 {4}> ()
      zero = Constant <value = float[3] {0, 0, 0}> ()
      total = Loop (n, , zero) <body = outer (int64 t, bool c, float[3] h) => (bool c_out, float[3] h_next) {
        c_out = Constant <value = bool {1}> ()
        row = Gather <axis = 0> (x, t)
        one = Constant <value = int64 {1}> ()
        h_next = Loop (one, , h) <body = cell (int64 j, bool d, float[3] g) => (bool d_out, float[3] g_next) {
          d_out = Constant <value = bool {1}> ()
          mixed = Add(g, row)
          g_next = Tanh(mixed)
        }>
      }>
    }
    """)
    assert run_alone(model, InlineOneTrip()) == {"inline-one-trip.loops": 1}
    (outer,) = loops(model.graph)
    assert not any(isinstance(node, Loop) for node in outer.body.nodes)
    assert_matches_onnxruntime(proto, model, {"x": X / 4})


@pytest.mark.parametrize(("count", "go", "extra"), [
    (2, ALWAYS, ""),
    (1, "Less(fi, limit)", ""),
    (1, ALWAYS, "neg = If(c) <then_branch = t () => (float[3] a) { a = Neg(r) }, "
                       "else_branch = e () => (float[3] a) { a = Identity(r) }>"),
], ids=["two trips are not one", "a data condition could stop it before its trip",
        "a nested conditional is not cloned"])
def test_a_loop_that_is_not_exactly_one_plain_trip_stays(count: int, go: str, extra: str) -> None:
    proto, model = load(rows(count, go, extra))
    assert run_alone(model, InlineOneTrip()) == {}
    assert len(loops(model.graph)) == 1
    assert_matches_onnxruntime(proto, model, FEEDS)


def test_a_where_on_the_counter_whose_branches_broadcast_keeps_its_shape() -> None:
    """On the one trip ``where(1 > i, a, b)`` is a [1, 3] broadcast to b's [2, 3], not a itself."""
    proto, model = load("""
    g (float[1,3] a, float[2,3] b) => (float[2,3] picked_last) {
      n = Constant <value = int64 {1}> ()
      zero = Constant <value = float[2,3] {0, 0, 0, 0, 0, 0}> ()
      picked_last = Loop (n, , zero) <body = body (int64 i, bool c, float[2,3] s) => (bool c_out, float[2,3] s_next) {
        c_out = Constant <value = bool {1}> ()
        one = Constant <value = int64 {1}> ()
        first = Greater(one, i)
        s_next = Where(first, a, b)
      }>
    }
    """)
    assert run_alone(model, InlineOneTrip()) == {"inline-one-trip.loops": 1}
    assert_matches_onnxruntime(proto, model, {"a": np.ones((1, 3), np.float32), "b": np.full((2, 3), 10, np.float32)})

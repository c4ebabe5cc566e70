"""FloatTripCount alone: a trip count computed from float inputs becomes ``while i < M`` under the user's bound.

``torch.arange(start, limit, delta)`` on float tensors exports as a Loop whose trip count is
``ceil((limit - start) / delta)`` cast to int64: a shape computation TensorRT cannot start from floats.
"""

from __future__ import annotations

import numpy as np
import pytest

from loopc.errors import PassError
from loopc.ir import constant_value
from loopc.passes import FloatTripCount
from loopc.spelling import spelled
from tests.passes.alone import assert_matches_onnxruntime, load, loops, run_alone

#: ``n = ceil((limit - start) / delta)`` trips; each adds the trip's value ``start + i * delta`` to a sum
#: and emits it; ``keep_going`` (a carried flag, when ``{go}`` is ``c_next``) stops once the sum passes ``stop``.
RANGE = """
g (float start, float limit, float delta, float stop) => (float total, float[K] values) {{
  span = Sub(limit, start)
  steps = Div(span, delta)
  up = Ceil(steps)
  n = Cast <to = 7> (up)
  go = Constant <value = bool {{1}}> ()
  zero = Constant <value = float {{0}}> ()
  total, values = Loop (n, go, zero) <body = b (int64 i, bool c, float s) => (bool c_out, float s_next, float v) {{
    fi = Cast <to = 1> (i)
    offset = Mul(fi, delta)
    v = Add(start, offset)
    s_next = Add(s, v)
    c_next = Less(s_next, stop)
    c_out = {go}
  }}>
}}
"""
ALWAYS = "Identity(c)"


def feeds(start: float, limit: float, delta: float, stop: float = 1e9) -> dict[str, np.ndarray]:
    named = {"start": start, "limit": limit, "delta": delta, "stop": stop}
    return {k: np.array(v, np.float32) for k, v in named.items()}


@pytest.mark.parametrize(("start", "limit", "delta"), [(0.0, 5.0, 1.0), (1.0, 3.2, 0.5), (2.0, 1.0, 1.0)],
                         ids=["five trips", "a fractional span rounds up", "a negative span runs no trip"])
def test_a_count_from_float_inputs_becomes_a_bounded_while_condition(start: float, limit: float, delta: float) -> None:
    proto, model = load(RANGE.format(go=ALWAYS))
    stats = run_alone(model, FloatTripCount(max_trips=16))
    assert stats == {"float-trip-count.loops": 1}
    (loop,) = loops(model.graph)
    assert loop.trip_count is None and loop.condition is not None
    assert loop.max_trips is not None and int(np.asarray(constant_value(loop.max_trips))) == 16
    assert_matches_onnxruntime(proto, model, feeds(start, limit, delta))


@pytest.mark.parametrize("stop", [4.0, 100.0], ids=["the data condition ends it first", "the count ends it first"])
def test_the_loops_own_condition_is_kept_beside_the_count(stop: float) -> None:
    """Sums 0, 1, 3, 6, ... : stop=4 ends after 3 trips of the 6 the count allows; stop=100 runs all 6."""
    proto, model = load(RANGE.format(go="Identity(c_next)"))
    run_alone(model, FloatTripCount(max_trips=16))
    (loop,) = loops(model.graph)
    assert loop.trip_count is None
    condition = loop.condition
    assert condition is not None and condition.producer is not None and condition.producer.op == "And"
    assert_matches_onnxruntime(proto, model, feeds(0.0, 6.0, 1.0, stop))


def test_without_a_bound_of_the_users_it_is_refused_naming_the_option() -> None:
    _, model = load(RANGE.format(go=ALWAYS))
    with pytest.raises(PassError, match="computed from floating-point values.*with max_trips=N"):
        run_alone(model, FloatTripCount())
    with spelled("command line"), pytest.raises(PassError, match="computed from floating-point values.*--max-trips N"):
        run_alone(model, FloatTripCount())


def test_a_count_from_integer_inputs_through_float_arithmetic_stays_a_count() -> None:
    """``ceil(n * 0.5)`` with ``n`` an int64 input: float arithmetic, but started from an integer, which a
    TensorRT shape computation can do; the loop keeps its count (and needs no bound)."""
    proto, model = load("""
    g (int64 n, float x) => (float total) {
      fn = Cast <to = 1> (n)
      half = Constant <value = float {0.5}> ()
      scaled = Mul(fn, half)
      up = Ceil(scaled)
      m = Cast <to = 7> (up)
      zero = Constant <value = float {0}> ()
      total = Loop (m, , zero) <body = b (int64 i, bool c, float s) => (bool c_out, float s_next) {
        c_out = Constant <value = bool {1}> ()
        s_next = Add(s, x)
      }>
    }
    """)
    (loop,) = loops(model.graph)
    count = loop.trip_count
    assert run_alone(model, FloatTripCount()) == {}
    assert loop.trip_count is count and loop.condition is None and loop.max_trips is None
    assert_matches_onnxruntime(proto, model, {"n": np.array(7, np.int64), "x": np.array(1.5, np.float32)})

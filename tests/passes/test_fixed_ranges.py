"""fixed-ranges alone: a Range whose count is a constant becomes its start plus a constant range.

Each model numbers ``k`` positions from a start that changes every trip (the loop's counter times three),
inside a loop whose trip count is an input; onnxruntime runs the model as written.
"""

from __future__ import annotations

import numpy as np
import pytest

from loopc.passes import FixedRanges
from tests.passes.alone import assert_matches_onnxruntime, load, loops, run_alone

MODEL = """
g (int64 n, int64 k) => (int64[T,S] out) {{
  go = Constant <value = bool {{1}}> ()
  out = Loop (n, go) <body = b (int64 i, bool c) => (bool c_out, int64[S] positions) {{
    c_out = Constant <value = bool {{1}}> ()
    three = Constant <value = int64 {{3}}> ()
    at = Mul(i, three)
    {bounds}
    positions = Range(start, end, step)
  }}>
}}
"""


def ranges(bounds: str) -> tuple:
    proto, model = load(MODEL.format(bounds=bounds))
    stats = run_alone(model, FixedRanges())
    return proto, model, stats.get("fixed-ranges.ranges", 0), [n.op for n in loops(model.graph)[0].body.nodes]


@pytest.mark.parametrize("bounds", [
    """span = Constant <value = int64 {2}> ()
    start = Identity(at)
    end = Add(start, span)
    step = Constant <value = int64 {1}> ()""",
    """span = Constant <value = int64 {5}> ()
    end = Identity(at)
    start = Sub(end, span)
    step = Constant <value = int64 {2}> ()""",
    """span = Constant <value = int64 {0}> ()
    start = Identity(at)
    end = Add(span, start)
    step = Constant <value = int64 {1}> ()""",
])
def test_a_constant_count_becomes_a_shifted_constant_range(bounds: str) -> None:
    proto, model, fixed, ops = ranges(bounds)
    assert fixed == 1 and "Range" not in ops
    for trips in (1, 4):  # with no trip, onnxruntime gives the scan output no row length
        assert_matches_onnxruntime(proto, model, {"n": np.array(trips, np.int64), "k": np.array(3, np.int64)})


def test_a_count_from_the_data_stays() -> None:
    _, _, fixed, ops = ranges("""start = Identity(at)
    end = Add(start, k)
    step = Constant <value = int64 {1}> ()""")
    assert fixed == 0 and "Range" in ops


def test_a_float_range_stays() -> None:
    """Its count is ``ceil((end - start) / step)`` in rounded arithmetic."""
    text = MODEL.replace("int64[T,S] out", "float[T,S] out").replace("int64[S] positions", "float[S] positions")
    proto, model = load(text.format(bounds="""float_at = Cast <to = 1> (at)
    start = Identity(float_at)
    span = Constant <value = float {0.3}> ()
    end = Add(start, span)
    step = Constant <value = float {0.1}> ()"""))
    assert run_alone(model, FixedRanges()) == {}

"""SteadyCarries alone: a carry whose shape changes only on the first trip has that trip peeled.

TensorFlow's ``tf.scan`` read through OpenVINO carries a ``[N, 1, 1]`` placeholder that the first trip
broadcasts to ``[N, T, H]``; after peeling, the loop starts from trip 0's results and carries one shape.
"""

from __future__ import annotations

import numpy as np
import onnx.parser
import pytest

from loopc.compiler import compile
from loopc.errors import LoopcError
from loopc.passes import ConstantFolding, DeadCode, SteadyCarries, TripLimits
from tests.passes.alone import HEADER, assert_matches_onnxruntime, load, loops, run_alone

XS = np.random.default_rng(7).standard_normal((20, 7, 2, 5)).astype(np.float32)

#: A decaying sum over ``xs``'s rows, carried from a ``[7,1,1]`` placeholder; each trip's sum stacked.
#: ``{count}`` is the trip count, ``{step}`` the body's node making ``buf2`` from ``buf`` and ``x``.
SCAN = """
g (float[20,7,2,5] xs, int64 n) => (float[7,?,?] final, float[?,7,?,?] ys) {{
    buf0 = Constant <value = float[7,1,1] {{1, 2, 3, 4, 5, 6, 7}}> ()
    one = Constant <value = int64 {{1}}> ()
    count = {count}
    final, ys = Loop (count, , buf0) <body = body (int64 i, bool c, float[7,?,?] buf) => (bool c2, float[7,?,?] buf2, float[7,?,?] y) {{
        x = Gather <axis = 0> (xs, i)
        half = Constant <value = float {{0.5}}> ()
        scaled = Mul (buf, half)
        {step}
        y = Identity (buf2)
        c2 = Identity (c)
    }}>
}}"""
DECAY = "buf2 = Add (scaled, x)"
CONSTANT = "Constant <value = int64 {20}> ()"


def scan(count: str = CONSTANT, step: str = DECAY) -> str:
    return SCAN.format(count=count, step=step)


def peel(text: str) -> tuple[onnx.ModelProto, object, dict[str, int]]:
    proto, model = load(text)
    stats = run_alone(model, ConstantFolding(), TripLimits(), DeadCode(), SteadyCarries())
    return proto, model, stats


@pytest.mark.parametrize("step", [DECAY, "shape = Shape (x)\n        wide = Expand (scaled, shape)\n        buf2 = Add (wide, x)"],
                         ids=["broadcast", "expand-to-shape-of"])
def test_a_placeholder_broadcast_by_the_first_trip_is_peeled(step: str) -> None:
    proto, model, stats = peel(scan(step=step))
    assert stats.get("steady-carries.peeled") == 1
    (loop,) = loops(model.graph)
    (rec,) = loop.recurrences
    assert rec.init.shape == rec.state.shape == rec.next.shape == (7, 2, 5)
    assert_matches_onnxruntime(proto, model, {"xs": XS, "n": np.array(20, np.int64)})


def test_a_trip_count_known_positive_at_run_time_is_peeled_with_one_trip_less() -> None:
    """``max(n, 1)`` trips: trip 0 always runs, so it can run before the loop, which runs ``max(n, 1) - 1``."""
    proto, model, stats = peel(scan(count="Max (n, one)"))
    assert stats.get("steady-carries.peeled") == 1
    for n in (1, 2, 20):
        assert_matches_onnxruntime(proto, model, {"xs": XS, "n": np.array(n, np.int64)})


@pytest.mark.parametrize(("count", "step"), [
    ("Identity (n)", DECAY),
    (CONSTANT, "twice = Concat <axis = 2> (scaled, scaled)\n        buf2 = Add (twice, twice)"),
], ids=["a trip count that may be zero", "a shape that keeps changing"])
def test_a_carry_that_is_not_steady_after_one_trip_stays(count: str, step: str) -> None:
    proto, model, stats = peel(scan(count=count, step=step))
    assert "steady-carries.peeled" not in stats
    (loop,) = loops(model.graph)
    assert loop.recurrences[0].init.shape == (7, 1, 1)


def test_a_shape_that_keeps_changing_is_refused_by_name() -> None:
    """Doubling axis 2 every trip: no steady shape, so the loop still carries two shapes and loopc says so."""
    text = scan(count="Constant <value = int64 {100}> ()",
                step="twice = Concat <axis = 2> (scaled, scaled)\n        buf2 = Identity (twice)")
    text = text.replace("float[20,7,2,5] xs", "float[100,7,2,5] xs")
    with pytest.raises(LoopcError, match=r"has shape \[7,1,1\] when the loop starts and \[7,1,2\] after a trip"):
        compile(onnx.parser.parse_model(HEADER + text))


def test_the_peeled_loop_builds_and_simulates_as_onnxruntime_computes() -> None:
    from tests.backend.trt.test_onnx_control_flow import check_through_passes

    text = scan().replace("{20}", "{100}").replace("float[20,7,2,5] xs", "float[100,7,2,5] xs")
    xs = np.random.default_rng(8).standard_normal((100, 7, 2, 5)).astype(np.float32)
    check_through_passes(HEADER + text, [{"xs": xs, "n": np.array(0, np.int64)}])

"""WhileOutputs alone: a loop that can stop early gets TensorRT's padded outputs, cut back to the trips run.

Each model is a loop that emits a running sum every trip and stops once the sum passes ``stop``; the
inputs are chosen so that the condition, not the count, ends it (and the other way round).
"""

from __future__ import annotations

from textwrap import dedent

import numpy as np
import pytest

from loopc.errors import PassError
from loopc.ir import constant_value, parse, verify
from loopc.passes import WhileOutputs
from tests.passes.alone import assert_matches_onnxruntime, load, loops, run_alone

RUNNING_SUM = """
g ({count_input}float stop, float[3] x) => (float[3] total, float[K,3] sums{extra_output}) {{
  go = Constant <value = bool {{1}}> ()
  zero = Constant <value = float[3] {{0, 0, 0}}> ()
  total, sums{extra_result} = Loop ({count}, go, zero) <body = b (int64 i, bool c, float[3] s)
                                            => (bool c_out, float[3] s_next, float[3] s_out{extra_body}) {{
    s_next = Add(s, x)
    s_out = Identity(s_next)
    first = ReduceSum <keepdims = 0> (s_next)
    c_out = Less(first, stop)
    {extra_node}
  }}>
}}
"""
X = np.array([1, 2, 3], np.float32)  # each trip adds 6 to the sum of the running sum


def model_text(count: str = "n", extra: bool = False) -> str:
    return RUNNING_SUM.format(
        count_input="int64 n, " if count == "n" else "", count=count,
        extra_output=", float[K,3] doubled" if extra else "", extra_result=", doubled" if extra else "", extra_body=", float[3] d" if extra else "",
        extra_node="two = Constant <value = float {2}> ()\n    d = Mul(s_next, two)" if extra else "")


@pytest.mark.parametrize(("n", "stop"), [(10, 20.0), (3, 100.0), (0, 100.0)],
                         ids=["the condition ends it after 4 trips", "the count ends it", "no trip"])
def test_a_stacked_output_of_a_while_loop_is_padded_then_cut_to_the_trips_run(n: int, stop: float) -> None:
    proto, model = load(model_text(extra=True))
    stats = run_alone(model, WhileOutputs())
    assert stats == {"while-outputs.loops": 1, "while-outputs.outputs": 2}
    (loop,) = loops(model.graph)
    assert loop.padded and loop.max_trips is None  # the count sizes the outputs: no bound needed
    cuts = [v.producer.op if v.producer is not None else None for v in model.graph.outputs[1:]]
    assert cuts == ["Slice", "Slice"]
    assert_matches_onnxruntime(proto, model, {"n": np.array(n, np.int64), "stop": np.array(stop, np.float32), "x": X})


@pytest.mark.parametrize("stop", [20.0, 40.0])
def test_a_loop_without_a_count_takes_the_users_bound_as_its_length(stop: float) -> None:
    """ONNX's ``Loop("", cond, ...)``: only the condition ends it; its outputs are as long as --max-trips."""
    proto, model = load(model_text(count=""))
    run_alone(model, WhileOutputs(max_trips=12))
    (loop,) = loops(model.graph)
    assert loop.padded and loop.trip_count is None
    assert loop.max_trips is not None and int(np.asarray(constant_value(loop.max_trips))) == 12
    assert_matches_onnxruntime(proto, model, {"stop": np.array(stop, np.float32), "x": X})


def test_a_loop_without_a_count_or_a_bound_is_refused_naming_the_users_loop_and_the_bound() -> None:
    """The user's node and what to give, as the Python API spells it (the CLI says ``--max-trips N``)."""
    _, model = load(model_text(count=""))
    with pytest.raises(PassError) as refused:
        run_alone(model, WhileOutputs())
    assert str(refused.value) == (
        "node 'total' (Loop, opset 17): the loop collects a value on every trip and ends on its condition, after a "
        "number of trips loopc cannot tell before it runs, so TensorRT has no length for the collected output; give a "
        "bound on its trips, at least the most it runs, with max_trips=N")
    assert (refused.value.op, refused.value.hint) == ("Loop", "give a bound on its trips, at least the most it runs, "
                                                               "with max_trips=N")


def test_a_while_loop_with_only_last_values_is_marked_padded_and_needs_no_bound() -> None:
    """Nothing is stacked, so nothing is cut and no length is needed, even with no count and no bound."""
    proto, model = load("""
    g (float stop, float[3] x) => (float[3] total) {
      go = Constant <value = bool {1}> ()
      zero = Constant <value = float[3] {0, 0, 0}> ()
      total = Loop (, go, zero) <body = b (int64 i, bool c, float[3] s) => (bool c_out, float[3] s_next) {
        s_next = Add(s, x)
        first = ReduceSum <keepdims = 0> (s_next)
        c_out = Less(first, stop)
      }>
    }
    """)
    assert run_alone(model, WhileOutputs()) == {"while-outputs.loops": 1}
    (loop,) = loops(model.graph)
    assert loop.padded and loop.max_trips is None
    assert_matches_onnxruntime(proto, model, {"stop": np.array(20.0, np.float32), "x": X})


def test_a_counted_loop_without_a_condition_is_left_alone() -> None:
    """A loop that cannot stop early runs exactly its count: TensorRT's outputs need no cut."""
    proto, model = load("""
    g (int64 n, float[3] x) => (float[3] total, float[K,3] sums) {
      zero = Constant <value = float[3] {0, 0, 0}> ()
      total, sums = Loop (n, , zero) <body = b (int64 i, bool c, float[3] s) => (bool c_out, float[3] s_next, float[3] s_out) {
        c_out = Constant <value = bool {1}> ()
        s_next = Add(s, x)
        s_out = Identity(s_next)
      }>
    }
    """)
    assert run_alone(model, WhileOutputs()) == {}
    assert not loops(model.graph)[0].padded
    assert_matches_onnxruntime(proto, model, {"n": np.array(4, np.int64), "x": X})


def test_a_reversed_output_of_a_loop_that_can_stop_early_is_refused() -> None:
    """Reversed, the trips run would sit at the end of the padded output, where no cut from the front reaches
    (OpenVINO's TensorIterator writes such outputs; ONNX's Loop cannot)."""
    graph = parse(dedent("""
        graph main(%x: f32[4,3], %stop: f32[]) -> (%back) {
          %n: i64[] = Constant() value=i64[]:[4]
          %zero: f32[] = Constant() value=f32[]:[0]
          %back: f32[?,3] = loop count=%n while=%go {
            iterator %row: f32[3] = %x[axis 0]
            recurrence %s: f32[] = %zero -> %s_next
            %total: f32[] = ReduceSum(%row) keepdims=0
            %s_next: f32[] = Add(%s, %total)
            %go: bool[] = Less(%s, %stop)
            reverse %back = %row axis 0
          }
        }
    """).strip())
    verify(graph)
    with pytest.raises(PassError, match="a reversed output of a loop that can stop early is not supported"):
        WhileOutputs()(graph)

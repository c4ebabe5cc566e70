"""A rewrite that does not apply says why, at the loop it concerns, during a pass manager's run only."""

from __future__ import annotations

import onnx
import onnx.parser

from loopc.frontend.onnx import import_model
from loopc.ir import Graph, If, Loop, Node
from loopc.passes import LoopDistribution, Pass, PassManager
from loopc.passes._why import Decline, Declines, declined, recording
from loopc.passes.counted_loops import CountedLoops
from loopc.passes.identities import Identities
from loopc.passes.inline_one_trip import InlineOneTrip
from loopc.passes.narrow_products import NarrowProducts
from loopc.passes.profile_conditionals import ProfileConditionals
from loopc.passes.shape_refinement import ShapeRefinement
from loopc.passes.static_conditionals import StaticConditionals
from tests.passes.alone import load
from tests.passes.test_loop_distribution import rnn

HEADER = '<ir_version: 8, opset_import: ["" : 17]>'


def data_stop(name: str = "stop_on_sum") -> onnx.ModelProto:
    """A loop that runs while a running sum of ``x`` stays below 10: its trips depend on data."""
    model = onnx.parser.parse_model(f"""{HEADER}
    g (float[3] x) => (float[3] total) {{
      max = Constant <value = int64 {{100}}> ()
      c0 = Constant <value = bool {{1}}> ()
      acc0 = Constant <value = float[3] {{0, 0, 0}}> ()
      total = Loop (max, c0, acc0) <body = b (int64 it, bool c_in, float[3] acc) => (bool c_out, float[3] acc_next) {{
        acc_next = Add (acc, x)
        s = ReduceSum <keepdims = 0> (acc_next)
        ten = Constant <value = float {{10}}> ()
        c_out = Less (s, ten)
      }}>
    }}""")
    model.graph.node[-1].name = name
    return model


def counted() -> onnx.ModelProto:
    """``while i < n``: a counter against an input, which counted-loops turns into a trip count."""
    return onnx.parser.parse_model(f"""{HEADER}
    g (float[3] x, int64 n) => (float[3] total) {{
      max = Constant <value = int64 {{9223372036854775807}}> ()
      c0 = Constant <value = bool {{1}}> ()
      i0 = Constant <value = int64 {{0}}> ()
      acc0 = Constant <value = float[3] {{0, 0, 0}}> ()
      i_last, total = Loop (max, c0, i0, acc0) <body = b (int64 it, bool c_in, int64 i, float[3] acc)
                                                => (bool c_out, int64 i_next, float[3] acc_next) {{
        one = Constant <value = int64 {{1}}> ()
        i_next = Add (i, one)
        acc_next = Add (acc, x)
        c_out = Less (i_next, n)
      }}>
    }}""")


def only_loop(graph: Graph) -> Loop:
    loops = [node for _, node in graph.walk() if isinstance(node, Loop)]
    assert len(loops) == 1
    return loops[0]


def test_a_loop_stopped_by_data_records_why_it_is_not_counted() -> None:
    model = import_model(data_stop())
    manager = PassManager([CountedLoops()])
    manager.run(model.graph)
    loop = only_loop(model.graph)
    assert loop.condition is not None  # still a while loop
    [(where, found)] = manager.declines.by_loop().items()
    assert where is loop
    assert [d.rewrite for d in found] == ["counted-loops"]
    assert "cannot be counted" in found[0].reason and "'c_out'" in found[0].reason
    assert "stop_on_sum" in manager.declines.lines()[0]


def test_a_counted_loop_records_nothing() -> None:
    model = import_model(counted())
    manager = PassManager([CountedLoops()])
    manager.run(model.graph)
    assert only_loop(model.graph).trip_count is not None
    assert len(manager.declines) == 0


def test_nothing_is_recorded_outside_a_managers_run() -> None:
    into = Declines()
    with recording("counted-loops", into):
        declined("inside", at=None)
    model = import_model(data_stop())
    result = CountedLoops()(model.graph)  # a pass called directly, with no manager around it
    declined("outside", at=None)
    assert not result.modified
    assert [d.reason for d in into] == ["inside"]


def declines_of(text: str, rewrite: Pass) -> tuple[Graph, list[Decline]]:
    """The graph of the model written in ``text`` after ``rewrite`` alone, and what it declined."""
    _, model = load(text)
    manager = PassManager([rewrite])
    manager.run(model.graph)
    return model.graph, list(manager.declines)


def node_named(graph: Graph, name: str) -> Node:
    return next(node for _, node in graph.walk() if name in (v.name for v in node.outputs))


def test_a_where_whose_taken_branch_broadcasts_is_kept() -> None:
    graph, [found] = declines_of("""g (float[1] a, float[3] b) => (float[3] y) {
      c = Constant <value = bool[3] {1, 1, 1}> ()
      y = Where (c, a, b)
    }""", Identities())
    assert found.at is node_named(graph, "y") and found.loop() is None
    assert found.rewrite == "identities" and "'a' it takes may be broadcast" in found.reason


def test_a_product_split_into_pieces_of_unknown_width_is_not_narrowed() -> None:
    """Only the middle third of ``x·w`` is read, but how wide a third is, is known only at run time."""
    graph, [found] = declines_of("""g (float[2,4] x, float[4,N] w) => (float[2,M] m) {
      p = MatMul (x, w)
      a, m, c = Split <axis = -1> (p)
    }""", NarrowProducts())
    assert found.at is node_named(graph, "p")
    assert found.reason.startswith("the widths of the pieces") and "'a' (Split" in found.reason


def test_an_empty_guard_whose_empty_result_has_other_dims_is_kept() -> None:
    graph, [found] = declines_of("""g (bool c, float[N,4] x) => (float[M,4] y) {
      y = If (c) <then_branch = t () => (float[0,3] e) { e = Constant <value = float[0,3] {}> () },
                  else_branch = f () => (float[N,4] r) { r = Identity (x) }>
    }""", StaticConditionals())
    assert isinstance(found.at, If) and found.at.outputs[0].name == "y"
    assert "gives empty results, but not of the types and other dims" in found.reason


SQUEEZE_IF_ONE = """g (float[N,M] x) => (float[N] y) {
  s = Shape (x)
  last = Constant <value = int64[1] {-1}> ()
  d = Gather (s, last)
  one = Constant <value = int64[1] {1}> ()
  eq = Equal (d, one)
  c = Squeeze (eq)
  y = If (c) <then_branch = t () => (float[N] e) { ax = Constant <value = int64[1] {-1}> ()
                                                  e = Squeeze (x, ax) },
              else_branch = f () => (float[N,M] r) { r = Identity (x) }>
}"""


def test_a_conditional_the_pinned_dims_do_not_decide_is_kept() -> None:
    """TorchScript's ``x.squeeze(-1)`` tests the last dim, which the profile leaves free."""
    graph, [found] = declines_of(SQUEEZE_IF_ONE, ProfileConditionals({"x": [2, None]}))
    assert isinstance(found.at, If) and found.at.outputs[0].name == "y"
    assert "not decided by the dims the profile pins" in found.reason
    _, decided = declines_of(SQUEEZE_IF_ONE, ProfileConditionals({"x": [2, 1]}))
    assert decided == []


def test_a_one_trip_loop_holding_a_conditional_is_not_inlined() -> None:
    graph, [found] = declines_of("""g (float[3] x, bool c) => (float[3] total) {
      one = Constant <value = int64 {1}> ()
      acc0 = Constant <value = float[3] {0, 0, 0}> ()
      total = Loop (one, , acc0) <body = b (int64 it, bool c_in, float[3] acc) => (bool c_out, float[3] acc_next) {
        c_out = Identity (c_in)
        acc_next = If (c) <then_branch = t () => (float[3] u) { u = Add (acc, x) },
                           else_branch = f () => (float[3] v) { v = Sub (acc, x) }>
      }>
    }""", InlineOneTrip())
    assert found.at is only_loop(graph) and found.loop() is only_loop(graph)
    assert found.reason == "it runs one trip, but is inlined only when its body holds no nested loops or conditionals"


def test_a_state_that_grows_does_not_get_its_initial_dims() -> None:
    graph, [found] = declines_of("""g (float[1] x, int64 n) => (float[N] grown) {
      c0 = Constant <value = bool {1}> ()
      acc0 = Constant <value = float[1] {0}> ()
      grown = Loop (n, c0, acc0) <body = b (int64 it, bool c_in, float[M] acc) => (bool c_out, float[K] acc_next) {
        c_out = Identity (c_in)
        acc_next = Concat <axis = 0> (acc, x)
      }>
    }""", ShapeRefinement())
    loop = only_loop(graph)
    assert found.at is loop
    assert found.reason.startswith("the state 'acc' is not known to keep the dims of its initial value 'acc0'")
    assert loop.recurrences[0].state.shape != (1,)


def test_a_projection_feeding_a_full_reduction_stays_in_the_loop() -> None:
    """``sum(x[t]·W)`` over all axes: stacked over the trips, the sum would take the trip axis in too."""
    graph, found = declines_of(rnn(input_part="xm = MatMul(xt, w)\n    xs = ReduceSum <keepdims = 0> (xm)\n"
                                              "    xw = Add(xm, xs)"), LoopDistribution())
    loop = only_loop(graph)
    why = {d.reason: d for d in found}
    batching = why["it lists no constant axes, so it would act on the trip axis too"]
    assert batching.at is node_named(graph, "xs") and batching.loop() is loop
    assert any(node.op == "MatMul" and node.inputs[0] is not None and node.inputs[0].name == "xt"
               for node in loop.body.nodes)  # the projection stayed too

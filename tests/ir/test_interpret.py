"""The IR interpreter against hand-computed values: every point of the loop semantics in ``ir/loop.py``
(counter, iterators forward and reversed on any axis, recurrences, a condition tested before the body,
trip-count clamping, zero trips, padded outputs and max_trips, nested loops, If, outer reads) on IRs
built by hand, and the errors it gives when it cannot run one."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from loopc.errors import LoopcError
from loopc.ir import Graph, If, Loop, LoopIterator, LoopOutput, Model, Node, Recurrence, Value
from loopc.ir.interpret import InterpretError, interpret

F32 = np.dtype(np.float32)
I32 = np.dtype(np.int32)
I64 = np.dtype(np.int64)
BOOL = np.dtype(np.bool_)
NAN = np.nan
I64_MIN = np.iinfo(np.int64).min

X = np.array([[1, 2], [3, 4], [5, 6]], np.float32)


def const(name: str, array: Any) -> tuple[Node, Value]:
    array = np.asarray(array)
    value = Value(name, array.dtype, tuple(array.shape))
    return Node("Constant", [], [value], {"value": array}), value


def running_sum(count: Value | None = None, **roles: Any) -> tuple[Graph, dict[str, Value]]:
    """``sum = 0; for i, row in enumerate(x): sum += row`` with outputs: the final sum (last), the
    partial sums (concat), the rows as seen (concat) and the counter (concat). ``roles`` override
    the loop's (a condition, max_trips, padded, reversed iterator, ...)."""
    x, init = Value("x", F32, (None, 2)), Value("init", F32, (2,))
    n = count or Value("n", I64, ())
    i, row, acc, acc_out = Value("i", I64, ()), Value("row", F32, (2,)), Value("acc", F32, (2,)), Value("acc_out", F32, (2,))
    vals = {"total": Value("total", F32, (2,)), "partials": Value("partials", F32, (None, 2)),
            "rows": Value("rows", F32, (None, 2)), "counts": Value("counts", I64, (None,))}
    body = Graph("body", nodes=[Node("Add", [acc, row], [acc_out])])
    kw: dict[str, Any] = {
        "trip_count": n, "counter": i,
        "iterators": [LoopIterator(row, x, 0, roles.pop("reverse", False))],
        "recurrences": [Recurrence(acc, init, acc_out)],
        "loop_outputs": [LoopOutput("last", acc, vals["total"]), LoopOutput("concat", acc_out, vals["partials"]),
                         LoopOutput(roles.pop("rows_kind", "concat"), row, vals["rows"]),
                         LoopOutput("concat", i, vals["counts"])],
    }
    kw.update(roles)
    loop = Loop(body, **kw, name="loop")
    inputs = [x, init] + ([n] if count is None else [])
    return Graph("main", inputs, loop.outputs, nodes=[loop]), vals


def feeds(n: int, x: np.ndarray = X) -> dict[str, np.ndarray]:
    return {"x": x, "init": np.zeros(2, np.float32), "n": np.array(n, np.int64)}


def check(got: list[Any], *want: Any) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g, w)
        np.testing.assert_array_equal(g, w)


# --- counted loops --------------------------------------------------------------------------------

def test_counter_iterator_recurrence_and_outputs() -> None:
    graph, _ = running_sum()
    check(interpret(graph, feeds(3)),
          np.array([9, 12], np.float32), np.array([[1, 2], [4, 6], [9, 12]], np.float32), X,
          np.array([0, 1, 2], np.int64))


def test_fewer_trips_than_rows_and_a_model_in_output_order() -> None:
    graph, vals = running_sum()
    graph.set_outputs([vals["counts"], vals["total"]])
    model = Model(graph, output_names=["counts", "total"])
    check(interpret(model, feeds(2)), np.array([0, 1], np.int64), np.array([4, 6], np.float32))


def test_reversed_iterator_takes_rows_from_the_end() -> None:
    graph, _ = running_sum(reverse=True)
    got = interpret(graph, feeds(2))
    check(got[:3], np.array([8, 10], np.float32), np.array([[5, 6], [8, 10]], np.float32), X[[2, 1]])


def test_reverse_output_stacks_the_last_trip_first() -> None:
    graph, _ = running_sum(rows_kind="reverse")
    check(interpret(graph, feeds(3))[2:3], X[::-1])
    graph, _ = running_sum(rows_kind="reverse", reverse=True)
    check(interpret(graph, feeds(3))[2:3], X)  # rows seen 5,6 / 3,4 / 1,2, stacked last first


def test_iterator_and_output_axes() -> None:
    """Columns of a 2x3 matrix, each doubled, stacked as columns again (axis 1) and as rows (axis 0)."""
    m, n = Value("m", F32, (2, 3)), Value("n", I64, ())
    col, doubled = Value("col", F32, (2,)), Value("doubled", F32, (2,))
    as_cols, as_rows = Value("as_cols", F32, (2, 3)), Value("as_rows", F32, (3, 2))
    two_node, two = const("two", np.float32(2))
    loop = Loop(Graph("body", nodes=[two_node, Node("Mul", [col, two], [doubled])]), trip_count=n,
                iterators=[LoopIterator(col, m, axis=1)],
                loop_outputs=[LoopOutput("concat", doubled, as_cols, axis=1), LoopOutput("concat", doubled, as_rows, 0)])
    graph = Graph("main", [m, n], [as_cols, as_rows], nodes=[loop])
    matrix = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    check(interpret(graph, {"m": matrix, "n": np.array(3)}), matrix * 2, (matrix * 2).T)


def test_counter_takes_its_declared_dtype() -> None:
    n, i, stacked = Value("n", I64, ()), Value("i", I32, ()), Value("is", I32, (3,))
    loop = Loop(Graph("body"), trip_count=n, counter=i, loop_outputs=[LoopOutput("concat", i, stacked)])
    check(interpret(Graph("main", [n], [stacked], [loop]), {"n": np.array(3)}), np.array([0, 1, 2], np.int32))


# --- trip counts ----------------------------------------------------------------------------------

def test_negative_trip_count_runs_no_trips() -> None:
    graph, _ = running_sum()
    check(interpret(graph, feeds(-4)), np.zeros(2, np.float32), np.zeros((0, 2), np.float32),
          np.zeros((0, 2), np.float32), np.zeros(0, np.int64))


def test_trip_count_beyond_int32_saturates_instead_of_wrapping() -> None:
    """2**32 + 3 trips cast to INT32 would be 3; saturated it is INT32_MAX, so the condition ends the loop."""
    flag, flag_out, limit = Value("go", BOOL, ()), Value("go_out", BOOL, ()), Value("limit", I64, ())
    graph, _ = running_sum(condition=flag)
    loop = graph.nodes[0]
    assert isinstance(loop, Loop)
    loop.body.add(Node("Less", [loop.counter, limit], [flag_out]))
    loop.add_recurrence(Recurrence(flag, const("yes", True)[1], flag_out))
    yes = loop.recurrences[-1].init.producer
    assert yes is not None
    graph.set_nodes([yes, *graph.nodes])
    graph.set_inputs([*graph.inputs, limit])
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    got = interpret(graph, {**feeds(2**32 + 3, x), "limit": np.array(4)})
    # the flag computed on trip i lets trip i+1 run while i < 4: trips 0..4 run, trip 5 sees i=4 -> False
    check(got[3:], np.arange(5, dtype=np.int64))


def test_trip_count_must_be_one_integer() -> None:
    count = Value("n", F32, ())
    graph, _ = running_sum(count)
    graph.set_inputs([*graph.inputs, count])
    with pytest.raises(InterpretError, match=r"node 'loop' \(Loop\): the trip count 'n' must be one integer, not float32"):
        interpret(graph, {**feeds(2), "n": np.array(2.0, np.float32)})


def test_iterator_shorter_than_the_trip_count() -> None:
    graph, _ = running_sum()
    with pytest.raises(InterpretError, match=r"trip 3 needs slice 3 of iterator source 'x' along axis 0"):
        interpret(graph, feeds(4))


# --- while loops ----------------------------------------------------------------------------------

def counted_while() -> Graph:
    """``while i < limit: keep i and -row`` with the condition computed in the body from the counter,
    an iterator over x (as many rows as the trips) and no trip count."""
    x, limit = Value("x", F32, (None, 2)), Value("limit", I64, ())
    i, row, go, neg = Value("i", I64, ()), Value("row", F32, (2,)), Value("go", BOOL, ()), Value("neg", F32, (2,))
    counts, rows = Value("counts", I64, (None,)), Value("rows", F32, (None, 2))
    body = Graph("body", nodes=[Node("Neg", [row], [neg]), Node("Less", [i, limit], [go])])
    loop = Loop(body, condition=go, counter=i, iterators=[LoopIterator(row, x)],
                loop_outputs=[LoopOutput("concat", i, counts), LoopOutput("concat", neg, rows)], name="while")
    return Graph("main", [x, limit], [counts, rows], [loop])


def test_condition_is_tested_with_the_trips_bindings_before_the_body() -> None:
    """Three rows, ``i < 3``: trip 3 has no row to bind, but its condition is false, so the body's Neg
    (listed before the condition's Less) never runs on it."""
    graph = counted_while()
    check(interpret(graph, {"x": X, "limit": np.array(3)}), np.array([0, 1, 2], np.int64), -X)


def test_condition_false_on_the_first_trip() -> None:
    graph = counted_while()
    check(interpret(graph, {"x": X, "limit": np.array(0)}), np.zeros(0, np.int64), np.zeros((0, 2), np.float32))


def test_condition_state_false_at_init_keeps_the_init() -> None:
    graph, _ = running_sum(condition=None)
    loop = graph.nodes[0]
    assert isinstance(loop, Loop)
    flag = Value("go", BOOL, ())
    loop.add_recurrence(Recurrence(flag, Value("go0", BOOL, ()), flag))
    loop.set_condition(flag)
    graph.set_inputs([*graph.inputs, loop.recurrences[-1].init])
    got = interpret(graph, {**feeds(3), "go0": np.array(False), "init": np.array([7, 8], np.float32)})
    check(got, np.array([7, 8], np.float32), np.zeros((0, 2), np.float32), np.zeros((0, 2), np.float32),
          np.zeros(0, np.int64))


def test_a_loop_that_never_ends_is_stopped() -> None:
    flag = Value("go", BOOL, ())
    total = Value("total", BOOL, ())
    loop = Loop(Graph("body"), condition=flag, recurrences=[Recurrence(flag, Value("go0", BOOL, ()), flag)],
                loop_outputs=[LoopOutput("last", flag, total)], name="forever")
    graph = Graph("main", [loop.recurrences[0].init], [total], [loop])
    with pytest.raises(InterpretError, match=r"node 'forever' \(Loop\) did not end within 50 trips"):
        interpret(graph, {"go0": np.array(True)}, max_iterations=50)


# --- zero trips -----------------------------------------------------------------------------------

def test_zero_trips_take_the_element_shape_from_the_type() -> None:
    graph, _ = running_sum()
    got = interpret(graph, feeds(0, np.zeros((0, 2), np.float32)))
    check(got, np.zeros(2, np.float32), np.zeros((0, 2), np.float32), np.zeros((0, 2), np.float32), np.zeros(0, np.int64))


def test_zero_trips_find_an_unknown_element_shape_from_trip_zeros_bindings() -> None:
    """The stacked value has no static type: running the body on trip 0's bindings (a row of zeros)
    gives [3], so the output is [0, 3] — at axis 1, [3, 0]."""
    x, n = Value("x", F32, (None, 3)), Value("n", I64, ())
    row, neg = Value("row", F32, (3,)), Value("neg", F32, None)
    out0, out1 = Value("out0", F32, None), Value("out1", F32, None)
    loop = Loop(Graph("body", nodes=[Node("Neg", [row], [neg])]), trip_count=n, iterators=[LoopIterator(row, x)],
                loop_outputs=[LoopOutput("concat", neg, out0), LoopOutput("reverse", neg, out1, axis=1)])
    graph = Graph("main", [x, n], [out0, out1], [loop])
    check(interpret(graph, {"x": np.zeros((0, 3), np.float32), "n": np.array(0)}),
          np.zeros((0, 3), np.float32), np.zeros((3, 0), np.float32))
    # trip_count 0 with rows present: trip 0's row is real, the shape the same
    check(interpret(graph, {"x": np.ones((2, 3), np.float32), "n": np.array(0)}),
          np.zeros((0, 3), np.float32), np.zeros((3, 0), np.float32))


def test_zero_trips_of_an_outer_value_stack_nothing_of_its_shape() -> None:
    w, n, out = Value("w", F32, None), Value("n", I64, ()), Value("out", F32, None)
    loop = Loop(Graph("body"), trip_count=n, loop_outputs=[LoopOutput("concat", w, out)])
    graph = Graph("main", [w, n], [out], [loop])
    check(interpret(graph, {"w": np.ones((2, 5), np.float32), "n": np.array(0)}), np.zeros((0, 2, 5), np.float32))
    check(interpret(graph, {"w": np.ones((2, 5), np.float32), "n": np.array(2)}), np.ones((2, 2, 5), np.float32))


def test_zero_trips_with_an_unknowable_element_shape_are_refused() -> None:
    """The element is the row reshaped to a shape carried in a recurrence, which does not fit on trip 0."""
    x, n, target = Value("x", F32, (None, 3)), Value("n", I64, ()), Value("target", I64, (1,))
    row, shaped, out = Value("row", F32, (3,)), Value("shaped", F32, None), Value("out", F32, None)
    loop = Loop(Graph("body", nodes=[Node("Reshape", [row, target], [shaped])]), trip_count=n,
                iterators=[LoopIterator(row, x)], recurrences=[Recurrence(target, Value("t0", I64, (1,)), target)],
                loop_outputs=[LoopOutput("concat", shaped, out)], name="shapeless")
    graph = Graph("main", [x, n, loop.recurrences[0].init], [out], [loop])
    with pytest.raises(InterpretError) as caught:
        interpret(graph, {"x": np.zeros((0, 3), np.float32), "n": np.array(0), "t0": np.array([4])})
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("node 'shapeless' (Loop): output 'out': the loop ran no trips and the type None of "
                              "'shaped' does not give its element shape"), message
    assert "Reshape" in message
    # a static type is the element shape: nothing runs
    shaped.shape = (4,)
    check(interpret(graph, {"x": np.zeros((0, 3), np.float32), "n": np.array(0), "t0": np.array([4])}),
          np.zeros((0, 4), np.float32))


# --- padded outputs and max_trips -----------------------------------------------------------------

def stops_after(trips: int, **roles: Any) -> Graph:
    """The running sum over 4 rows, trip count 4, with a condition that stops it after ``trips``."""
    go, go_out, stop = Value("go", BOOL, ()), Value("go_out", BOOL, ()), Value("stop", I64, ())
    graph, _ = running_sum(condition=go, **roles)
    loop = graph.nodes[0]
    assert isinstance(loop, Loop)
    one_node, one = const("one", np.int64(1))
    i1 = Value("i1", I64, ())
    loop.body.add(one_node)
    loop.body.add(Node("Add", [loop.counter, one], [i1]))
    loop.body.add(Node("Less", [i1, stop], [go_out]))
    go0 = Value("go0", BOOL, ())
    loop.add_recurrence(Recurrence(go, go0, go_out))
    graph.set_inputs([*graph.inputs, stop, go0])
    return graph


X4 = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], np.float32)


def run_stopping(graph: Graph, trips: int, extra: dict[str, Any] | None = None) -> list[Any]:
    return interpret(graph, {**feeds(4, X4), "stop": np.array(trips), "go0": np.array(trips > 0), **(extra or {})})


def test_unpadded_outputs_hold_the_trips_run() -> None:
    got = run_stopping(stops_after(2), 2)
    check(got, np.array([4, 6], np.float32), np.array([[1, 2], [4, 6]], np.float32), X4[:2], np.array([0, 1]))


def test_padded_outputs_are_as_long_as_the_trip_count_and_filled_past_the_trips_run() -> None:
    got = run_stopping(stops_after(2, padded=True), 2)
    check(got, np.array([4, 6], np.float32), np.array([[1, 2], [4, 6], [NAN, NAN], [NAN, NAN]], np.float32),
          np.array([[1, 2], [3, 4], [NAN, NAN], [NAN, NAN]], np.float32), np.array([0, 1, I64_MIN, I64_MIN]))


def test_padded_outputs_are_as_long_as_max_trips_when_given() -> None:
    bound = Value("bound", I64, ())
    graph = stops_after(2, padded=True, max_trips=bound)
    graph.set_inputs([*graph.inputs, bound])
    got = run_stopping(graph, 2, {"bound": np.array(3)})
    check(got[1:], np.array([[1, 2], [4, 6], [NAN, NAN]], np.float32), np.array([[1, 2], [3, 4], [NAN, NAN]], np.float32),
          np.array([0, 1, I64_MIN]))
    # no trips at all: every row is padding
    got = run_stopping(graph, 0, {"bound": np.array(3)})
    check(got, np.zeros(2, np.float32), np.full((3, 2), NAN, np.float32), np.full((3, 2), NAN, np.float32),
          np.full(3, I64_MIN))


def test_more_trips_than_max_trips_are_refused() -> None:
    bound = Value("bound", I64, ())
    graph = stops_after(3, padded=True, max_trips=bound)
    graph.set_inputs([*graph.inputs, bound])
    with pytest.raises(InterpretError, match=r"node 'loop' \(Loop\) ran 3 trips, more than its max_trips 2"):
        run_stopping(graph, 3, {"bound": np.array(2)})


def test_a_padded_while_loop_needs_a_length() -> None:
    graph = counted_while()
    loop = graph.nodes[0]
    assert isinstance(loop, Loop)
    loop.set_padded(True)
    with pytest.raises(InterpretError, match="a padded loop's concatenated output needs max_trips or a trip count"):
        interpret(graph, {"x": X, "limit": np.array(2)})


# --- nesting, conditionals, outer reads -----------------------------------------------------------

def test_nested_loop_with_a_trip_count_from_the_outer_counter_reading_outer_values() -> None:
    """for i, row in enumerate(x): s = 0; for _ in range(i): s = s + row * w   ->  s_i = i * w * row_i"""
    x, w, n = Value("x", F32, (3, 2)), Value("w", F32, ()), Value("n", I64, ())
    i, row = Value("i", I64, ()), Value("row", F32, (2,))
    s, s_next, s_final, scaled = Value("s", F32, (2,)), Value("s_next", F32, (2,)), Value("s_final", F32, (2,)), Value("scaled", F32, (2,))
    zero_node, zero = const("zero", np.zeros(2, np.float32))
    inner = Loop(Graph("inner", nodes=[Node("Mul", [row, w], [scaled]), Node("Add", [s, scaled], [s_next])]),
                 trip_count=i, recurrences=[Recurrence(s, zero, s_next)],
                 loop_outputs=[LoopOutput("last", s, s_final)], name="inner")
    stacked = Value("stacked", F32, (3, 2))
    outer = Loop(Graph("outer", nodes=[zero_node, inner]), trip_count=n, counter=i, iterators=[LoopIterator(row, x)],
                 loop_outputs=[LoopOutput("concat", s_final, stacked)], name="outer")
    graph = Graph("main", [x, w, n], [stacked], [outer])
    got = interpret(graph, {"x": X, "w": np.array(10, np.float32), "n": np.array(3)})
    check(got, np.array([[0, 0], [30, 40], [100, 120]], np.float32))


def test_if_inside_a_loop_takes_a_branch_per_trip() -> None:
    """acc += row on even trips, acc -= row on odd ones: 0 + [1,2] - [3,4] + [5,6] = [3,4]."""
    graph, vals = running_sum()
    loop = graph.nodes[0]
    assert isinstance(loop, Loop)
    acc, row = loop.recurrences[0].state, loop.iterators[0].param
    two_node, two = const("two", np.int64(2))
    zero_node, zero = const("zero", np.int64(0))
    parity, even, chosen = Value("parity", I64, ()), Value("even", BOOL, ()), Value("chosen", F32, (2,))
    plus, minus = Value("plus", F32, (2,)), Value("minus", F32, (2,))
    branch = If(even, Graph("then", [], [plus], [Node("Add", [acc, row], [plus])]),
                Graph("else", [], [minus], [Node("Sub", [acc, row], [minus])]), [chosen], name="pick")
    assert loop.counter is not None
    loop.body.set_nodes([two_node, zero_node, Node("Mod", [loop.counter, two], [parity]),
                         Node("Equal", [parity, zero], [even]), branch])
    loop.update(loop.recurrences[0], next=chosen)
    loop.remove_roles([o for o in loop.loop_outputs if o.kind != "last"])
    graph.set_outputs([vals["total"]])
    check(interpret(graph, feeds(3)), np.array([3, 4], np.float32))


def test_if_at_the_top_level_reads_outer_values() -> None:
    c, a, b, y = Value("c", BOOL, ()), Value("a", F32, (2,)), Value("b", F32, (2,)), Value("y", F32, (2,))
    t, e = Value("t", F32, (2,)), Value("e", F32, (2,))
    node = If(c, Graph("then", [], [t], [Node("Mul", [a, b], [t])]), Graph("else", [], [e], [Node("Sub", [a, b], [e])]), [y])
    graph = Graph("main", [c, a, b], [y], [node])
    ab = {"a": np.array([2, 3], np.float32), "b": np.array([5, 7], np.float32)}
    check(interpret(graph, {"c": np.array(True), **ab}), np.array([10, 21], np.float32))
    check(interpret(graph, {"c": np.array(False), **ab}), np.array([-3, -4], np.float32))


def test_nodes_of_one_op_with_different_attributes_stay_apart() -> None:
    """One reference evaluator serves every node of the same form: attributes are part of the form."""
    a, b = Value("a", F32, (2, 2)), Value("b", F32, (2, 2))
    rows, cols = Value("rows", F32, (4, 2)), Value("cols", F32, (2, 4))
    graph = Graph("main", [a, b], [rows, cols], [Node("Concat", [a, b], [rows], {"axis": 0}),
                                                  Node("Concat", [a, b], [cols], {"axis": 1})])
    ones, twos = np.ones((2, 2), np.float32), np.full((2, 2), 2, np.float32)
    check(interpret(graph, {"a": ones, "b": twos}), np.concatenate([ones, twos], 0), np.concatenate([ones, twos], 1))


# --- errors ---------------------------------------------------------------------------------------

def test_an_op_onnx_does_not_know_is_named() -> None:
    a, y = Value("a", F32, (2,)), Value("y", F32, (2,))
    graph = Graph("main", [a], [y], [Node("Frobnicate", [a], [y], name="frob", origin="node 'f' (Frobnicate, opset 17)")])
    with pytest.raises(LoopcError) as caught:
        interpret(graph, {"a": np.ones(2, np.float32)})
    assert str(caught.value).startswith("node 'f' (Frobnicate, opset 17): ONNX's reference evaluator cannot run "
                                        "Frobnicate"), caught.value
    assert "\n" not in str(caught.value)


def test_a_node_that_fails_is_named_in_one_line() -> None:
    a, b, y = Value("a", F32, (2, 3)), Value("b", F32, (2, 3)), Value("y", F32, None)
    graph = Graph("main", [a, b], [y], [Node("MatMul", [a, b], [y], name="mm")])
    with pytest.raises(InterpretError) as caught:
        interpret(graph, {"a": np.ones((2, 3), np.float32), "b": np.ones((2, 3), np.float32)})
    assert str(caught.value).startswith("node 'mm' (MatMul): cannot run MatMul: "), caught.value
    assert "\n" not in str(caught.value)


def test_a_missing_input_is_named() -> None:
    graph, _ = running_sum()
    with pytest.raises(InterpretError, match="graph 'main': no value given for input 'n'"):
        interpret(graph, {"x": X, "init": np.zeros(2, np.float32)})


def test_a_value_that_breaks_its_type_is_named_unless_types_are_not_checked() -> None:
    a, y = Value("a", F32, (2,)), Value("y", F32, (3,))
    graph = Graph("main", [a], [y], [Node("Neg", [a], [y], name="neg")])
    with pytest.raises(InterpretError, match=r"node 'neg' \(Neg\): output 'y' is f32\[2\] when run, but its type says f32\[3\]"):
        interpret(graph, {"a": np.ones(2, np.float32)})
    check(interpret(graph, {"a": np.ones(2, np.float32)}, check_types=False), -np.ones(2, np.float32))
    with pytest.raises(InterpretError, match=r"graph 'main': input 'a' is i64\[2\] when run, but its type says f32\[2\]"):
        interpret(graph, {"a": np.ones(2, np.int64)})


# ---------------------------------------------------------------------------------------------- ops ONNX's reference gets wrong
def _one_node(op: str, inputs: dict[str, np.ndarray], out_shape: tuple[int, ...], **attrs: Any) -> list[Any]:
    values = [Value(name, array.dtype, tuple(array.shape)) for name, array in inputs.items()]
    y = Value("y", F32, out_shape)
    graph = Graph("main", values, [y], nodes=[Node(op, values, [y], attrs)])
    return interpret(graph, inputs)


def test_grouped_conv_transpose_against_a_loop() -> None:
    """y[n, g*Cog + o, i*s + k] += x[n, g*Cig + c, i] * w[g*Cig + c, o, k], per group, written out."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)  # 2 groups of 2 input channels
    w = rng.standard_normal((4, 3, 2)).astype(np.float32)  # 3 output channels per group, kernel 2
    stride, groups, cig, cog = 2, 2, 2, 3
    want = np.zeros((2, 6, (3 - 1) * stride + 2), np.float32)
    for n in range(2):
        for g in range(groups):
            for c in range(cig):
                for o in range(cog):
                    for i in range(3):
                        for k in range(2):
                            want[n, g * cog + o, i * stride + k] += x[n, g * cig + c, i] * w[g * cig + c, o, k]
    (got,) = _one_node("ConvTranspose", {"x": x, "w": w}, (2, 6, 6), group=2, strides=[2])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_lrn_sums_over_channels() -> None:
    """x / (bias + alpha / size * sum of squares over channels [c - 1, c + 1])^beta, on a 4-D input with more
    than one image and one pixel (ONNX's reference walks the batch axis)."""
    x = np.arange(1, 2 * 4 * 1 * 2 + 1, dtype=np.float32).reshape(2, 4, 1, 2)
    want = np.empty_like(x)
    for n in range(2):
        for c in range(4):
            for w in range(2):
                total = sum(float(x[n, k, 0, w]) ** 2 for k in range(max(0, c - 1), min(4, c + 2)))
                want[n, c, 0, w] = x[n, c, 0, w] / (2.0 + 0.3 / 3 * total) ** 0.5
    (got,) = _one_node("LRN", {"x": x}, x.shape, size=3, alpha=0.3, beta=0.5, bias=2.0)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_group_normalization_runs_its_function() -> None:
    """Two groups of two channels: each group normalized over its channels and pixels, then per-channel affine."""
    x = np.array([[[1, 2], [3, 4], [10, 10], [10, 30]]], np.float32)  # [1, 4, 2]
    scale, bias = np.array([1, 2, 3, 4], np.float32), np.array([0, 1, 0, -1], np.float32)
    first = (x[0, :2] - 2.5) / np.sqrt(1.25)  # mean 2.5, variance 1.25
    second = (x[0, 2:] - 15.0) / np.sqrt(75.0)  # mean 15, variance 75
    want = np.concatenate([first, second])[None] * scale[:, None] + bias[:, None]
    (got,) = _one_node("GroupNormalization", {"x": x, "scale": scale, "bias": bias}, x.shape, num_groups=2,
                       epsilon=0.0)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_a_sequence_insert_at_the_end_position_appends() -> None:
    """Erase the last element, then insert at n (TorchScript's ``ks[-1] = k``), and inserts at 0, at -1 and with no
    position: the stacked result is what onnxruntime computes."""
    import onnx.parser
    import onnxruntime as ort

    from loopc.frontend.onnx import import_model

    proto = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 17]>
    g (float[2] a, float[2] b, float[2] c) => (float[5,2] out) {
      s = SequenceConstruct(a, b)
      one = Constant <value = int64 {1}> ()
      rest = SequenceErase(s, one)
      t = SequenceInsert(rest, c, one)
      zero = Constant <value = int64 {0}> ()
      u = SequenceInsert(t, b, zero)
      back = Constant <value = int64 {-1}> ()
      v = SequenceInsert(u, a, back)
      w = SequenceInsert(v, c)
      out = ConcatFromSequence <axis = 0, new_axis = 1> (w)
    }""")
    feeds = {"a": np.array([1, 2], np.float32), "b": np.array([3, 4], np.float32), "c": np.array([5, 6], np.float32)}
    (want,) = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_array_equal(want, [[3, 4], [1, 2], [1, 2], [5, 6], [5, 6]])  # b, a, a, c, c by hand
    np.testing.assert_array_equal(interpret(import_model(proto), feeds)[0], want)

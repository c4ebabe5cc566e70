"""IR loops → TensorRT loops, built by the real builder and simulated; expected values are plain
NumPy loops restating the IR's reference semantics (see ``loopc.ir.loop``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from loopc.ir import Graph, If, Loop, LoopIterator, LoopOutput, Model, Node, Recurrence, Value
from tests.backend.trt.oracle import build_and_simulate

F32, I64, BOOL = np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.bool_)


def const(graph: Graph, name: str, array: Any) -> Value:
    array = np.asarray(array)
    value = Value(name, array.dtype, tuple(array.shape))
    graph.add(Node("Constant", [], [value], {"value": array}, name=name))
    return value


def op(graph: Graph, kind: str, inputs: list[Value], name: str, dtype: np.dtype | None = F32,
       shape: tuple | None = None, **attrs: Any) -> Value:
    out = Value(name, dtype, shape)
    graph.add(Node(kind, inputs, [out], attrs, name=name))
    return out


def run(graph: Graph, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return build_and_simulate(Model(graph), inputs)[1]


def test_counted_loop_iterator_recurrence_last_and_concat():
    # total = init; for row in x: total = total * 0.5 + tanh(row); partials collects each new total
    x, n, init = Value("x", F32, (5, 3)), Value("n", I64, ()), Value("init", F32, (3,))
    body = Graph("body")
    row, total = Value("row", F32, (3,)), Value("total", F32, (3,))
    half = const(body, "half", np.float32(0.5))
    scaled = op(body, "Mul", [total, half], "scaled")
    squashed = op(body, "Tanh", [row], "squashed")
    nxt = op(body, "Add", [scaled, squashed], "total_next")
    last, partials = Value("last", F32, (3,)), Value("partials", F32, (5, 3))
    loop = Loop(body, trip_count=n, iterators=[LoopIterator(row, x)], recurrences=[Recurrence(total, init, nxt)],
                loop_outputs=[LoopOutput("last", total, last), LoopOutput("concat", nxt, partials)], name="scan")
    xs = np.random.default_rng(3).standard_normal((5, 3)).astype(np.float32)
    start = np.array([1, -1, 0.5], np.float32)

    got = run(Graph("main", [x, n, init], [last, partials], [loop]), {"x": xs, "n": np.array(5), "init": start})

    acc, seq = start, []
    for r in xs:
        acc = acc * np.float32(0.5) + np.tanh(r)
        seq.append(acc)
    np.testing.assert_allclose(got["last"], acc, rtol=1e-6)
    np.testing.assert_allclose(got["partials"], np.stack(seq), rtol=1e-6)


@pytest.mark.parametrize("axis", [0, 1])
def test_reverse_iterator_and_reverse_output(axis):
    x = Value("x", F32, (4, 4))
    body = Graph("body")
    item, acc = Value("item", F32, (4,)), Value("acc", F32, (4,))
    nxt = op(body, "Add", [acc, item], "acc_next")
    main = Graph("main", [x])
    init = const(main, "zeros", np.zeros(4, np.float32))
    trips = const(main, "trips", np.array(4, np.int64))
    fwd, rev = Value("fwd", F32, None), Value("rev", F32, None)
    loop = Loop(body, trip_count=trips, iterators=[LoopIterator(item, x, axis=axis, reverse=True)],
                recurrences=[Recurrence(acc, init, nxt)],
                loop_outputs=[LoopOutput("concat", nxt, fwd, axis=axis), LoopOutput("reverse", nxt, rev, axis=axis)])
    main.add(loop)
    main.set_outputs([fwd, rev])
    xs = np.arange(16, dtype=np.float32).reshape(4, 4)

    got = run(main, {"x": xs})

    slices = [np.take(xs, 3 - i, axis=axis) for i in range(4)]  # reversed iteration
    sums = np.cumsum(np.stack(slices), axis=0)
    np.testing.assert_array_equal(got["fwd"], np.moveaxis(sums, 0, axis))
    np.testing.assert_array_equal(got["rev"], np.moveaxis(sums[::-1], 0, axis))


def test_counter_used_in_the_body():
    # y_i = x[i] * i, with i the int64 iteration counter cast to float
    x, n = Value("x", F32, (4, 2)), Value("n", I64, (1,))
    body = Graph("body")
    i, row = Value("i", I64, ()), Value("row", F32, (2,))
    fi = op(body, "Cast", [i], "fi", to=1)
    y = op(body, "Mul", [row, fi], "y")
    count = Value("count", I64, ())
    sq = Value("sq", I64, (4,))
    twice = op(body, "Mul", [i, i], "i_squared", dtype=I64)
    ys = Value("ys", F32, (4, 2))
    main = Graph("main", [x, n])
    zero = const(main, "zero", np.array(0, np.int64))
    acc = Value("acc", I64, ())
    acc_next = op(body, "Add", [acc, i], "acc_next", dtype=I64)
    main.add(Loop(body, trip_count=n, counter=i, iterators=[LoopIterator(row, x)],
                  recurrences=[Recurrence(acc, zero, acc_next)],
                  loop_outputs=[LoopOutput("concat", y, ys), LoopOutput("concat", twice, sq),
                                LoopOutput("last", acc, count)]))
    main.set_outputs([ys, sq, count])
    xs = np.arange(8, dtype=np.float32).reshape(4, 2) + 1

    got = run(main, {"x": xs, "n": np.array([4])})

    np.testing.assert_array_equal(got["ys"], xs * np.arange(4, dtype=np.float32)[:, None])
    np.testing.assert_array_equal(got["sq"], [0, 1, 4, 9])
    assert got["count"] == 0 + 1 + 2 + 3 and got["count"].dtype == np.int64


def test_while_loop_with_bool_state_and_bounded_concat():
    # s = 1; go = True; while go: s = 3s + 1; go = s < limit   (scan of s bounded by max_trips)
    limit = Value("limit", F32, ())
    main = Graph("main", [limit])
    s0 = const(main, "s0", np.float32(1))
    go0 = const(main, "go0", np.array(True))
    cap = const(main, "cap", np.array(8, np.int64))
    body = Graph("body")
    s, go = Value("s", F32, ()), Value("go", BOOL, ())
    three, one = const(body, "three", np.float32(3)), const(body, "one", np.float32(1))
    s_next = op(body, "Add", [op(body, "Mul", [s, three], "s3"), one], "s_next")
    go_next = op(body, "Less", [s_next, limit], "go_next", dtype=BOOL)
    final, trace = Value("final", F32, ()), Value("trace", F32, (8,))
    main.add(Loop(body, condition=go, max_trips=cap,
                  recurrences=[Recurrence(s, s0, s_next), Recurrence(go, go0, go_next)],
                  loop_outputs=[LoopOutput("last", s, final), LoopOutput("concat", s_next, trace)]))
    main.set_outputs([final, trace])

    got = run(main, {"limit": np.array(50, np.float32)})

    # s: 1 -> 4 -> 13 -> 40 -> 121 (121 >= 50 stops): four trips
    assert got["final"] == 121
    np.testing.assert_array_equal(got["trace"][:4], [4, 13, 40, 121])
    assert np.isnan(got["trace"][4:]).all()  # padding past the trips is arbitrary (poison)


def test_nested_loop_reads_the_outer_iterator():
    # for each row: inner loop over its elements computes a running product; outer collects them
    x = Value("x", F32, (3, 4))
    main = Graph("main", [x])
    rows, cols = const(main, "rows", np.array(3, np.int64)), const(main, "cols", np.array(4, np.int64))
    one = const(main, "one", np.float32(1))
    inner = Graph("inner")
    e, p = Value("e", F32, ()), Value("p", F32, ())
    p_next = op(inner, "Mul", [p, e], "p_next")
    outer = Graph("outer")
    row = Value("row", F32, (4,))
    prefix, product = Value("prefix", F32, (4,)), Value("product", F32, ())
    outer.add(Loop(inner, trip_count=cols, iterators=[LoopIterator(e, row)], recurrences=[Recurrence(p, one, p_next)],
                   loop_outputs=[LoopOutput("concat", p_next, prefix), LoopOutput("last", p, product)], name="inner"))
    prefixes, products = Value("prefixes", F32, (3, 4)), Value("products", F32, (3,))
    main.add(Loop(outer, trip_count=rows, iterators=[LoopIterator(row, x)],
                  loop_outputs=[LoopOutput("concat", prefix, prefixes), LoopOutput("concat", product, products)],
                  name="outer"))
    main.set_outputs([prefixes, products])
    xs = np.random.default_rng(4).uniform(0.5, 1.5, (3, 4)).astype(np.float32)

    got = run(main, {"x": xs})

    np.testing.assert_allclose(got["prefixes"], np.cumprod(xs, axis=1), rtol=1e-6)
    np.testing.assert_allclose(got["products"], np.prod(xs, axis=1), rtol=1e-6)


def test_if_inside_a_loop():
    # y_t = sqrt(x_t) if x_t > 0 else -x_t * scale  (the else branch reads an outer value)
    x, scale = Value("x", F32, (5,)), Value("scale", F32, ())
    main = Graph("main", [x, scale])
    n = const(main, "n", np.array(5, np.int64))
    body = Graph("body")
    e = Value("e", F32, ())
    zero = const(body, "zero", np.float32(0))
    positive = op(body, "Greater", [e, zero], "positive", dtype=BOOL)
    then_g, else_g = Graph("then"), Graph("else")
    then_g.set_outputs([op(then_g, "Sqrt", [e], "root")])
    else_g.set_outputs([op(else_g, "Mul", [op(else_g, "Neg", [e], "negated"), scale], "scaled")])
    picked = Value("picked", F32, ())
    body.add(If(positive, then_g, else_g, [picked], name="choose"))
    ys = Value("ys", F32, (5,))
    main.add(Loop(body, trip_count=n, iterators=[LoopIterator(e, x)], loop_outputs=[LoopOutput("concat", picked, ys)]))
    main.set_outputs([ys])
    xs = np.array([4, -1, 9, -2.5, 0], np.float32)

    got = run(main, {"x": xs, "scale": np.array(2, np.float32)})

    np.testing.assert_array_equal(got["ys"], [np.sqrt(v) if v > 0 else -v * 2 for v in xs])


def test_activation_as_next_value_needs_no_help_from_the_ir():
    # h = tanh(h * w): the next value is an Activation output, which the builder only takes via Identity
    w = Value("w", F32, (2,))
    main = Graph("main", [w])
    h0, n = const(main, "h0", np.ones(2, np.float32)), const(main, "n", np.array(3, np.int64))
    body = Graph("body")
    h = Value("h", F32, (2,))
    h_next = op(body, "Tanh", [op(body, "Mul", [h, w], "hw")], "h_next")
    out = Value("h_last", F32, (2,))
    main.add(Loop(body, trip_count=n, recurrences=[Recurrence(h, h0, h_next)], loop_outputs=[LoopOutput("last", h, out)]))
    main.set_outputs([out])
    weights = np.array([0.5, -2], np.float32)

    got = run(main, {"w": weights})

    expected = np.ones(2, np.float32)
    for _ in range(3):
        expected = np.tanh(expected * weights)
    np.testing.assert_allclose(got["h_last"], expected, rtol=1e-6)

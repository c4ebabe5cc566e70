"""TensorRT's loop constructs, built with the TensorRT API, checked against the formal loop semantics.

Every network is also built and serialized by the real TensorRT builder, so each case is a
network TensorRT accepts. Expected values restate the formal definitions that TensorRT's developer
guide gives for loops (its "Working with Loops" chapter):

* ``IIteratorLayer(X)`` is ``<X[0], X[1], ...>`` (``X[i]`` subscripts the iterator's axis);
* ``IRecurrenceLayer(X, Y)`` is ``<X, Y_0, Y_1, ...>``;
* ``n`` is the kCOUNT input, or the least ``n`` whose kWHILE input ``X_n`` is false (the
  smaller of the two when a loop has both);
* kLAST_VALUE is ``X_n``; kCONCATENATE stacks ``X_0 .. X_{n-1}`` and pads to its length input,
  kREVERSE does the same in the reverse order.

Padding elements are "arbitrary" in TensorRT; the simulator fills them with a poison value
(NaN for floats, the most negative integer for ints) so that reading them shows up.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest


INT32_POISON = np.iinfo(np.int32).min


# -- helpers ---------------------------------------------------------------------------------



def counted_loop(nb: Any, trips: Any) -> Any:
    """A loop with a kCOUNT trip limit; ``trips`` is an int (made a constant) or an INT32 0-D tensor."""
    loop = nb.network.add_loop()
    count = nb.const(trips, np.int32) if isinstance(trips, int) else trips
    loop.add_trip_limit(count, nb.trt.TripLimit.COUNT)
    return loop


def scan_output(nb: Any, loop: Any, tensor: Any, length: int, axis: int = 0, reverse: bool = False) -> Any:
    kind = nb.trt.LoopOutput.REVERSE if reverse else nb.trt.LoopOutput.CONCATENATE
    layer = loop.add_loop_output(tensor, kind, axis)
    layer.set_input(1, nb.const(length, np.int32))
    return layer.get_output(0)


def last_value(nb: Any, loop: Any, tensor: Any) -> Any:
    return loop.add_loop_output(tensor, nb.trt.LoopOutput.LAST_VALUE).get_output(0)


def counter(nb: Any, loop: Any, start: int = 0) -> Any:
    """The recurrence ``i = start; i += 1`` (INT32, 0-D)."""
    rec = loop.add_recurrence(nb.const(start, np.int32))
    i = rec.get_output(0)
    rec.set_input(1, ew(nb, i, nb.const(1, np.int32), "SUM"))
    return i


def ew(nb: Any, a: Any, b: Any, op: str) -> Any:
    return nb.network.add_elementwise(a, b, getattr(nb.trt.ElementWiseOperation, op)).get_output(0)


def unary(nb: Any, x: Any, op: str) -> Any:
    return nb.network.add_unary(x, getattr(nb.trt.UnaryOperation, op)).get_output(0)



def matrix(rows: int, cols: int) -> np.ndarray:
    return np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) + 1


# -- iterators and scan outputs ----------------------------------------------------------------


def test_iterator_axis_0(nb):
    x = matrix(3, 4)
    loop = counted_loop(nb, 3)
    row = loop.add_iterator(nb.input("x", nb.trt.float32, x.shape)).get_output(0)
    doubled = ew(nb, row, nb.const(np.full(4, 2, np.float32)), "PROD")
    nb.output(scan_output(nb, loop, doubled, 3), "y")

    got = nb.build_and_simulate({"x": x})["y"]

    expected = np.stack([2 * x[i, :] for i in range(3)])
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got[1], [10, 12, 14, 16])


def test_iterator_axis_1_yields_columns(nb):
    x = matrix(3, 4)
    loop = counted_loop(nb, 4)
    column = loop.add_iterator(nb.input("x", nb.trt.float32, x.shape), 1).get_output(0)
    nb.output(scan_output(nb, loop, unary(nb, column, "NEG"), 4), "y")

    got = nb.build_and_simulate({"x": x})["y"]

    assert got.shape == (4, 3)
    np.testing.assert_array_equal(got, np.stack([-x[:, i] for i in range(4)]))
    np.testing.assert_array_equal(got[0], [-1, -5, -9])


def test_reverse_iterator(nb):
    x = matrix(3, 2)
    loop = counted_loop(nb, 3)
    row = loop.add_iterator(nb.input("x", nb.trt.float32, x.shape), 0, True).get_output(0)
    nb.output(scan_output(nb, loop, row, 3), "y")

    got = nb.build_and_simulate({"x": x})["y"]

    np.testing.assert_array_equal(got, [[5, 6], [3, 4], [1, 2]])


def test_reverse_iterator_on_axis_1(nb):
    x = matrix(2, 3)
    loop = counted_loop(nb, 3)
    column = loop.add_iterator(nb.input("x", nb.trt.float32, x.shape), 1, True).get_output(0)
    nb.output(scan_output(nb, loop, column, 3), "y")

    got = nb.build_and_simulate({"x": x})["y"]

    np.testing.assert_array_equal(got, [x[:, 2], x[:, 1], x[:, 0]])


@pytest.mark.parametrize("axis", [0, 1])
def test_concatenate_axis(nb, axis):
    # The seed's example: {a,b,c} then {d,e,f} gives [[a,b,c],[d,e,f]] on axis 0, its transpose on axis 1.
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    loop = counted_loop(nb, 2)
    row = loop.add_iterator(nb.input("x", nb.trt.float32, x.shape)).get_output(0)
    nb.output(scan_output(nb, loop, row, 2, axis=axis), "y")

    got = nb.build_and_simulate({"x": x})["y"]

    expected = [[1, 2, 3], [4, 5, 6]] if axis == 0 else [[1, 4], [2, 5], [3, 6]]
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("axis", [0, 1])
def test_reverse_output(nb, axis):
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    loop = counted_loop(nb, 2)
    row = loop.add_iterator(nb.input("x", nb.trt.float32, x.shape)).get_output(0)
    nb.output(scan_output(nb, loop, row, 2, axis=axis, reverse=True), "y")

    got = nb.build_and_simulate({"x": x})["y"]

    expected = [[4, 5, 6], [1, 2, 3]] if axis == 0 else [[4, 1], [5, 2], [6, 3]]
    np.testing.assert_array_equal(got, expected)


def test_length_larger_than_trip_count_pads_with_poison(nb):
    # TensorRT's builder rejects a constant trip count below a constant length, so the count is an input.
    x = matrix(5, 2)
    loop = counted_loop(nb, nb.input("n", nb.trt.int32, ()))
    row = loop.add_iterator(nb.input("x", nb.trt.float32, x.shape)).get_output(0)
    i = counter(nb, loop)
    nb.output(scan_output(nb, loop, row, 5), "rows")
    nb.output(scan_output(nb, loop, i, 5), "i")
    nb.output(scan_output(nb, loop, row, 5, axis=1, reverse=True), "rows_reversed")

    got = nb.build_and_simulate({"n": np.array(3, np.int32), "x": x})

    rows, i, rows_reversed = got["rows"], got["i"], got["rows_reversed"]
    np.testing.assert_array_equal(rows[:3], x[:3])
    assert np.isnan(rows[3:]).all() and not np.isnan(rows[:3]).any()
    assert i.dtype == np.int32
    np.testing.assert_array_equal(i, [0, 1, 2, INT32_POISON, INT32_POISON])
    # kREVERSE: X_2, X_1, X_0 then the padding, on axis 1
    np.testing.assert_array_equal(rows_reversed[:, :3], x[[2, 1, 0]].T)
    assert np.isnan(rows_reversed[:, 3:]).all() and not np.isnan(rows_reversed[:, :3]).any()


# -- recurrences and trip limits ---------------------------------------------------------------


def test_i_plus_equals_k(nb):
    # for (int32_t i = j; ...; i += k), four trips
    j, k = np.array([1, -2], np.float32), np.array([3, 0.5], np.float32)
    loop = counted_loop(nb, 4)
    rec = loop.add_recurrence(nb.input("j", nb.trt.float32, (2,)))
    i = rec.get_output(0)
    rec.set_input(1, ew(nb, i, nb.input("k", nb.trt.float32, (2,)), "SUM"))
    nb.output(scan_output(nb, loop, i, 4), "each_i")
    nb.output(last_value(nb, loop, i), "last_i")

    got = nb.build_and_simulate({"j": j, "k": k})

    # <X, Y_0, Y_1, ...> with Y_t = i_t + k
    sequence, value = [], j
    for _ in range(4):
        sequence.append(value)
        value = value + k
    np.testing.assert_array_equal(got["each_i"], np.stack(sequence))
    np.testing.assert_array_equal(got["last_i"], value)
    np.testing.assert_array_equal(got["last_i"], [13, 0])


def test_last_value_is_value_after_the_last_trip(nb):
    # running maximum of the rows; kLAST_VALUE is X_n, the recurrence after n trips
    x = np.array([[1, 9], [5, 2], [3, 4]], np.float32)
    loop = counted_loop(nb, 3)
    row = loop.add_iterator(nb.input("x", nb.trt.float32, x.shape)).get_output(0)
    rec = loop.add_recurrence(nb.const(np.full(2, -np.inf, np.float32)))
    rec.set_input(1, ew(nb, rec.get_output(0), row, "MAX"))
    nb.output(last_value(nb, loop, rec.get_output(0)), "max")
    nb.output(scan_output(nb, loop, rec.get_output(0), 3), "before_each_trip")

    got = nb.build_and_simulate({"x": x})

    np.testing.assert_array_equal(got["max"], [5, 9])
    np.testing.assert_array_equal(got["before_each_trip"], [[-np.inf, -np.inf], [1, 9], [5, 9]])


def test_while_loop(nb):
    # s = 1; while s < limit: s = 3 * s + 1   (also counts trips with a Cast of an INT32 counter)
    loop = nb.network.add_loop()
    rec = loop.add_recurrence(nb.const(1.0, np.float32))
    s = rec.get_output(0)
    rec.set_input(1, ew(nb, ew(nb, s, nb.const(3.0, np.float32), "PROD"), nb.const(1.0, np.float32), "SUM"))
    loop.add_trip_limit(ew(nb, s, nb.input("limit", nb.trt.float32, ()), "LESS"), nb.trt.TripLimit.WHILE)
    i = counter(nb, loop)
    as_float = nb.network.add_cast(i, nb.trt.float32).get_output(0)
    nb.output(last_value(nb, loop, s), "s")
    nb.output(last_value(nb, loop, i), "trips")
    nb.output(scan_output(nb, loop, as_float, 6), "i_as_float")

    got = nb.build_and_simulate({"limit": np.array(50, np.float32)})

    # s_0..: 1, 4, 13, 40, 121; the least n with s_n >= 50 is 4
    assert got["s"] == 121
    assert got["trips"] == 4
    np.testing.assert_array_equal(got["i_as_float"][:4], [0, 1, 2, 3])
    assert np.isnan(got["i_as_float"][4:]).all()


@pytest.mark.parametrize("count, trips", [(2, 2), (3, 3), (6, 3)])
def test_counted_and_while_limits_together(nb, count, trips):
    # kCOUNT = count, kWHILE i < 3: n is the smaller limit
    x = matrix(6, 1)[:, 0]
    loop = counted_loop(nb, nb.input("count", nb.trt.int32, ()))
    i = counter(nb, loop)
    loop.add_trip_limit(ew(nb, i, nb.const(3, np.int32), "LESS"), nb.trt.TripLimit.WHILE)
    element = loop.add_iterator(nb.input("x", nb.trt.float32, x.shape)).get_output(0)
    nb.output(scan_output(nb, loop, element, 6), "elements")
    nb.output(last_value(nb, loop, i), "n")

    got = nb.build_and_simulate({"count": np.array(count, np.int32), "x": x})

    assert got["n"] == trips
    np.testing.assert_array_equal(got["elements"][:trips], x[:trips])
    assert np.isnan(got["elements"][trips:]).all()


def test_zero_trip_loop(nb):
    loop = counted_loop(nb, nb.input("n", nb.trt.int32, ()))
    rec = loop.add_recurrence(nb.input("init", nb.trt.float32, (2,)))
    rec.set_input(1, ew(nb, rec.get_output(0), rec.get_output(0), "PROD"))
    nb.output(last_value(nb, loop, rec.get_output(0)), "last")
    nb.output(scan_output(nb, loop, rec.get_output(0), 2), "scan")
    init = np.array([0.5, -1], np.float32)

    got = nb.build_and_simulate({"n": np.array(0, np.int32), "init": init})

    np.testing.assert_array_equal(got["last"], init)
    assert got["scan"].shape == (2, 2) and np.isnan(got["scan"]).all()


def test_loop_invariant_interior_values_are_replicated(nb):
    # An interior layer that reads only loop invariants: the sequence replicates the tensor.
    x, offset = matrix(3, 2), np.array([10, 20], np.float32)
    loop = counted_loop(nb, 3)
    row = loop.add_iterator(nb.input("x", nb.trt.float32, x.shape)).get_output(0)
    invariant = unary(nb, nb.input("offset", nb.trt.float32, (2,)), "NEG")
    nb.output(scan_output(nb, loop, invariant, 3), "replicated")
    nb.output(scan_output(nb, loop, ew(nb, row, invariant, "SUM"), 3), "shifted")

    got = nb.build_and_simulate({"x": x, "offset": offset})

    np.testing.assert_array_equal(got["replicated"], [-offset] * 3)
    np.testing.assert_array_equal(got["shifted"], np.stack([x[t] - offset for t in range(3)]))


def test_shape_identity_and_select_inside_a_loop(nb):
    # y_t = x[t] where x[t] > threshold else shape(x[t])[0] (as a float)
    x = np.array([[1, 5, 3], [7, 0, 9]], np.float32)
    loop = counted_loop(nb, 2)
    row = nb.network.add_identity(loop.add_iterator(nb.input("x", nb.trt.float32, x.shape)).get_output(0))
    row = row.get_output(0)
    width = nb.network.add_cast(nb.network.add_shape(row).get_output(0), nb.trt.float32).get_output(0)
    big = ew(nb, row, nb.const(np.full(3, 4, np.float32)), "GREATER")
    picked = nb.network.add_select(big, row, ew(nb, width, nb.const(np.zeros(3, np.float32)), "SUM"))
    nb.output(scan_output(nb, loop, picked.get_output(0), 2), "y")

    got = nb.build_and_simulate({"x": x})

    np.testing.assert_array_equal(got["y"], [[3, 5, 3], [7, 3, 9]])


# -- nesting ------------------------------------------------------------------------------------


def test_nested_loop_over_the_outer_iterator_value(nb):
    # outer loop over rows; inner loop over the row's elements computes a prefix sum
    x = matrix(2, 3)
    outer = counted_loop(nb, 2)
    row = outer.add_iterator(nb.input("x", nb.trt.float32, x.shape)).get_output(0)
    inner = counted_loop(nb, 3)
    element = inner.add_iterator(row).get_output(0)
    total = inner.add_recurrence(nb.const(0.0, np.float32))
    running = ew(nb, total.get_output(0), element, "SUM")
    total.set_input(1, running)
    prefix = scan_output(nb, inner, running, 3)
    nb.output(scan_output(nb, outer, prefix, 2), "prefix_sums")
    nb.output(scan_output(nb, outer, last_value(nb, inner, total.get_output(0)), 2), "row_sums")

    got = nb.build_and_simulate({"x": x})

    expected_prefix, expected_sums = [], []
    for r in range(2):
        acc, seq = np.float32(0), []
        for c in range(3):
            acc = acc + x[r, c]
            seq.append(acc)
        expected_prefix.append(seq)
        expected_sums.append(acc)
    np.testing.assert_array_equal(got["prefix_sums"], expected_prefix)
    np.testing.assert_array_equal(got["row_sums"], expected_sums)
    np.testing.assert_array_equal(got["row_sums"], [6, 15])


def test_inner_loop_reads_outer_iterator_only_inside(nb):
    # The inner loop's boundary reads only invariants; its interior adds the outer element.
    # TensorRT infers the nesting from that data flow: inner runs once per outer trip.
    x = np.array([2, 5], np.float32)
    outer = counted_loop(nb, 2)
    element = outer.add_iterator(nb.input("x", nb.trt.float32, x.shape)).get_output(0)
    inner = counted_loop(nb, 3)
    acc = inner.add_recurrence(nb.const(1.0, np.float32))
    acc.set_input(1, ew(nb, acc.get_output(0), element, "PROD"))
    nb.output(scan_output(nb, outer, last_value(nb, inner, acc.get_output(0)), 2), "cubes")

    got = nb.build_and_simulate({"x": x})

    np.testing.assert_array_equal(got["cubes"], x**3)


def test_inner_trip_count_from_the_outer_loop(nb):
    # for i in 0..3: total_i = sum of 2 over i trips  (the inner kCOUNT is the outer counter)
    outer = counted_loop(nb, 4)
    i = counter(nb, outer)
    inner = counted_loop(nb, i)
    total = inner.add_recurrence(nb.const(0, np.int32))
    total.set_input(1, ew(nb, total.get_output(0), nb.const(2, np.int32), "SUM"))
    nb.output(scan_output(nb, outer, last_value(nb, inner, total.get_output(0)), 4), "totals")

    got = nb.build_and_simulate({})["totals"]

    np.testing.assert_array_equal(got, [2 * trips for trips in range(4)])


def test_three_nested_loops(nb):
    # rows, then elements, then a recurrence started at the element and incremented twice
    x = matrix(2, 3)
    rows = counted_loop(nb, 2)
    row = rows.add_iterator(nb.input("x", nb.trt.float32, x.shape)).get_output(0)
    elements = counted_loop(nb, 3)
    element = elements.add_iterator(row).get_output(0)
    steps = counted_loop(nb, 2)
    value = steps.add_recurrence(element)
    value.set_input(1, ew(nb, value.get_output(0), nb.const(0.5, np.float32), "SUM"))
    per_element = scan_output(nb, elements, last_value(nb, steps, value.get_output(0)), 3)
    nb.output(scan_output(nb, rows, per_element, 2), "y")

    got = nb.build_and_simulate({"x": x})["y"]

    np.testing.assert_array_equal(got, x + 2 * 0.5)


# -- loops and conditionals ---------------------------------------------------------------------


@pytest.mark.parametrize("flag", [True, False])
def test_loop_inside_if_conditional(nb, flag):
    # if flag: column sums computed by a loop over the rows; else: -bias
    x, bias = matrix(3, 2), np.array([0.5, -4], np.float32)
    cond = nb.network.add_if_conditional()
    cond.set_condition(nb.input("flag", nb.trt.bool, ()))
    rows = cond.add_input(nb.input("x", nb.trt.float32, x.shape)).get_output(0)
    loop = counted_loop(nb, 3)
    row = loop.add_iterator(rows).get_output(0)
    total = loop.add_recurrence(nb.const(np.zeros(2, np.float32)))
    total.set_input(1, ew(nb, total.get_output(0), row, "SUM"))
    then_value = last_value(nb, loop, total.get_output(0))
    else_value = unary(nb, cond.add_input(nb.input("bias", nb.trt.float32, (2,))).get_output(0), "NEG")
    nb.output(cond.add_output(then_value, else_value).get_output(0), "y")

    got = nb.build_and_simulate({"flag": np.array(flag), "x": x, "bias": bias})["y"]

    np.testing.assert_array_equal(got, [9, 12] if flag else [-0.5, 4])


def test_if_conditional_inside_loop(nb):
    # y_t = sqrt(x_t) if x_t > 0 else -x_t: the branch differs per iteration
    x = np.array([4, -1, 9, -2.5], np.float32)
    loop = counted_loop(nb, 4)
    element = loop.add_iterator(nb.input("x", nb.trt.float32, x.shape)).get_output(0)
    cond = nb.network.add_if_conditional()
    cond.set_condition(ew(nb, element, nb.const(0.0, np.float32), "GREATER"))
    inside = cond.add_input(element).get_output(0)
    chosen = cond.add_output(unary(nb, inside, "SQRT"), unary(nb, inside, "NEG")).get_output(0)
    nb.output(scan_output(nb, loop, chosen, 4), "y")

    got = nb.build_and_simulate({"x": x})["y"]

    expected = [np.sqrt(v) if v > 0 else -v for v in x]
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, [2, 1, 3, 2.5])


def test_if_conditional_inside_loop_with_a_recurrence(nb):
    # Collatz steps: c = 6; while c != 1: c = c/2 if c is even else 3c+1 (branch per trip)
    loop = nb.network.add_loop()
    rec = loop.add_recurrence(nb.input("start", nb.trt.int32, ()))
    c = rec.get_output(0)
    loop.add_trip_limit(unary(nb, ew(nb, c, nb.const(1, np.int32), "EQUAL"), "NOT"), nb.trt.TripLimit.WHILE)
    even = ew(nb, ew(nb, ew(nb, c, nb.const(2, np.int32), "FLOOR_DIV"), nb.const(2, np.int32), "PROD"), c, "EQUAL")
    cond = nb.network.add_if_conditional()
    cond.set_condition(even)
    value = cond.add_input(c).get_output(0)
    half = ew(nb, value, nb.const(2, np.int32), "FLOOR_DIV")
    triple = ew(nb, ew(nb, value, nb.const(3, np.int32), "PROD"), nb.const(1, np.int32), "SUM")
    rec.set_input(1, cond.add_output(half, triple).get_output(0))
    nb.output(scan_output(nb, loop, c, 10), "path")

    got = nb.build_and_simulate({"start": np.array(6, np.int32)})["path"]

    # 6 -> 3 -> 10 -> 5 -> 16 -> 8 -> 4 -> 2 -> 1 (stop: 8 trips)
    np.testing.assert_array_equal(got, [6, 3, 10, 5, 16, 8, 4, 2, INT32_POISON, INT32_POISON])

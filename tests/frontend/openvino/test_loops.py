"""Loop-5, TensorIterator-1 and If-8 in the forms OpenVINO writes, each against OpenVINO's CPU plugin."""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

from tests.frontend.openvino.harness import check, save
from tests.frontend.openvino.oracle import run_loopc, run_openvino

RNG = np.random.default_rng(7)


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def counting_loop(trip: ov.Node, i_type: type = np.int64, i_shape: list[int] | None = None) -> tuple:
    """A Loop with every kind of port: current_iteration, an invariant, a back edge, a Result that is not carried
    (last value), and a concatenated output. Returns (loop outputs, body parameters)."""
    x = ops.parameter([1, 2], np.float32, name="x")
    y0 = ops.parameter([1, 2], np.float32, name="y0")
    i = ops.parameter(i_shape or [], i_type, name="i")
    bx = ops.parameter([1, 2], np.float32, name="bx")
    by = ops.parameter([1, 2], np.float32, name="by")
    fi = ops.convert(i, "f32")
    y_next = ops.add(by, ops.multiply(bx, fi))
    r_cond = ops.result(ops.constant(True))
    r_y, r_raw, r_cat = ops.result(y_next), ops.result(ops.multiply(y_next, fi)), ops.result(ops.add(y_next, fi))
    loop = ops.loop(trip, ops.constant(True))
    loop.set_function(ov.Model([r_cond, r_y, r_raw, r_cat], [i, bx, by]))
    loop.set_special_body_ports([0, 0])
    loop.set_invariant_input(bx, x.output(0))
    loop.set_merged_input(by, y0.output(0), r_y.output(0))
    outs = [loop.get_iter_value(r_y.output(0), -1), loop.get_iter_value(r_raw.output(0), -1),
            loop.get_concatenated_slices(r_cat.output(0), 0, 1, 1, -1, 0)]
    return [ops.result(o) for o in outs], [x, y0]


@pytest.mark.parametrize("trips", [3, 1])
def test_loop_runtime_trip_count(trips: int, tmp_path) -> None:
    n = ops.parameter([], np.int64, name="n")
    results, params = counting_loop(n)
    model = ov.Model(results, [n, *params], "loop")
    check(model, {"n": np.array(trips, np.int64), "x": f32(1, 2), "y0": f32(1, 2)}, tmp_path)


def test_loop_zero_trips(tmp_path) -> None:
    """The carried value is its initial value and the concat empty, as OpenVINO gives them; the non-carried
    last value is zeros — what OpenVINO's CPU plugin was measured returning, though it sometimes
    returns whatever its buffer held, so that one output is checked against zeros, the value loopc's
    OpenVINO frontend gives it (:mod:`loopc.frontend.openvino.ops.loops`, and the README)."""
    n = ops.parameter([], np.int64, name="n")
    results, params = counting_loop(n)
    xml = save(ov.Model(results, [n, *params], "loop"), tmp_path / "model.xml")
    feeds = {"n": np.array(0, np.int64), "x": f32(1, 2), "y0": f32(1, 2)}
    got, want = run_loopc(xml, feeds), run_openvino(xml, feeds)
    carried, raw, stacked = list(got)
    assert list(got) == list(want)
    np.testing.assert_array_equal(got[carried], want[carried])
    np.testing.assert_array_equal(got[carried], feeds["y0"])
    assert got[stacked].shape == want[stacked].shape == (0, 2)
    np.testing.assert_array_equal(got[raw], np.zeros((1, 2), np.float32))


@pytest.mark.parametrize("i_type, i_shape", [(np.int32, []), (np.int64, [1]), (np.int32, [1])])
def test_loop_current_iteration_types(i_type: type, i_shape: list[int], tmp_path) -> None:
    results, params = counting_loop(ops.constant(np.array([4], np.int32)), i_type, i_shape)
    check(ov.Model(results, params, "loop"), {"x": f32(1, 2), "y0": f32(1, 2)}, tmp_path)


def while_loop(trip_value: int) -> ov.Model:
    """``while i + 1 < n``: a constant 'unbounded' trip count and a data-dependent execution condition,
    with an If in the body (double for the first three trips, then add one)."""
    n = ops.parameter([], np.int64, name="n")
    y0 = ops.parameter([2], np.float32, name="y0")
    i = ops.parameter([], np.int64, name="i")
    by = ops.parameter([2], np.float32, name="by")
    bn = ops.parameter([], np.int64, name="bn")
    early = ops.less(i, ops.constant(np.int64(3)))
    tp, ep = ops.parameter([2], np.float32), ops.parameter([2], np.float32)
    then = ops.result(ops.multiply(tp, ops.constant(np.float32(2))))
    other = ops.result(ops.add(ep, ops.constant(np.float32(1))))
    branch = ops.if_op(early.output(0))
    branch.set_then_body(ov.Model([then], [tp]))
    branch.set_else_body(ov.Model([other], [ep]))
    branch.set_input(by.output(0), tp, ep)
    r_y = ops.result(branch.set_output(then, other))
    r_cond = ops.result(ops.less(ops.add(i, ops.constant(np.int64(1))), bn))
    loop = ops.loop(ops.constant(np.int64(trip_value)), ops.constant(True))
    loop.set_function(ov.Model([r_cond, r_y], [i, by, bn]))
    loop.set_special_body_ports([0, 0])
    loop.set_merged_input(by, y0.output(0), r_y.output(0))
    loop.set_invariant_input(bn, n.output(0))
    return ov.Model([ops.result(loop.get_iter_value(r_y.output(0), -1))], [n, y0], "while_if")


@pytest.mark.parametrize("trip_value", [-1, 2**63 - 1])
@pytest.mark.parametrize("n", [1, 4, 7])
def test_while_loop_with_if_in_body(trip_value: int, n: int, tmp_path) -> None:
    """−1 and TorchScript's INT64_MAX both mean 'no bound': the execution condition stops the loop."""
    check(while_loop(trip_value), {"n": np.array(n, np.int64), "y0": np.array([1.0, -2.0], np.float32)}, tmp_path)


def tensor_iterator(stride: int, reverse: bool, axis: int) -> ov.Model:
    """A TI slicing x [2, 6, 3] (chunks of |stride| on ``axis``), carrying h, concatenating h·x on ``axis``."""
    s = abs(stride)
    dims = [2, 6, 3]
    chunk = list(dims)
    chunk[axis] = s
    x = ops.parameter(dims, np.float32, name="x")
    h0 = ops.parameter(chunk, np.float32, name="h0")
    bx, bh = ops.parameter(chunk, np.float32), ops.parameter(chunk, np.float32)
    h = ops.tanh(ops.add(ops.multiply(bh, ops.constant(np.float32(0.5))), bx))
    r_h, r_cat = ops.result(h), ops.result(ops.multiply(h, bx))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_h, r_cat], [bx, bh]))
    start, end, step = (-1, 0, -s) if reverse else (0, -1, s)
    ti.set_sliced_input(bx, x.output(0), start, step, s, end, axis)
    ti.set_merged_input(bh, h0.output(0), r_h.output(0))
    outs = [ti.get_iter_value(r_h.output(0), -1), ti.get_concatenated_slices(r_cat.output(0), start, step, s, end,
                                                                                axis)]
    return ov.Model([ops.result(o) for o in outs], [x, h0], "ti")


@pytest.mark.parametrize("stride, reverse, axis", [(1, False, 1), (1, True, 1), (2, False, 1), (2, True, 1),
                                                   (3, True, 1), (1, False, 0), (1, True, 2), (3, False, 2)])
def test_tensor_iterator_slicing(stride: int, reverse: bool, axis: int, tmp_path) -> None:
    chunk = [2, 6, 3]
    chunk[axis] = stride
    check(tensor_iterator(stride, reverse, axis), {"x": f32(2, 6, 3), "h0": f32(*chunk)}, tmp_path)


def test_loop_in_loop_inner_trip_count_from_outer_iteration(tmp_path) -> None:
    """The inner loop runs i + 1 trips on outer trip i, adding its own counter to a carried sum."""
    s0 = ops.parameter([1], np.float32, name="s0")
    oi, os_ = ops.parameter([], np.int64, name="oi"), ops.parameter([1], np.float32, name="os")
    ii, is_ = ops.parameter([], np.int64, name="ii"), ops.parameter([1], np.float32, name="is")
    r_is = ops.result(ops.add(is_, ops.convert(ops.unsqueeze(ii, ops.constant(np.int64(0))), "f32")))
    inner = ops.loop(ops.add(oi, ops.constant(np.int64(1))), ops.constant(True))
    inner.set_function(ov.Model([ops.result(ops.constant(True)), r_is], [ii, is_]))
    inner.set_special_body_ports([0, 0])
    inner.set_merged_input(is_, os_.output(0), r_is.output(0))
    r_os = ops.result(inner.get_iter_value(r_is.output(0), -1))
    outer = ops.loop(ops.constant(np.int64(4)), ops.constant(True))
    outer.set_function(ov.Model([ops.result(ops.constant(True)), r_os], [oi, os_]))
    outer.set_special_body_ports([0, 0])
    outer.set_merged_input(os_, s0.output(0), r_os.output(0))
    model = ov.Model([ops.result(outer.get_iter_value(r_os.output(0), -1))], [s0], "nested")
    check(model, {"s0": np.array([0.5], np.float32)}, tmp_path)


def test_tensor_iterator_inside_loop(tmp_path) -> None:
    """Each outer trip runs a TI over the rows of x, carrying a running sum into the next outer trip."""
    x = ops.parameter([4, 3], np.float32, name="x")
    s0 = ops.parameter([1, 3], np.float32, name="s0")
    bx, bs = ops.parameter([4, 3], np.float32), ops.parameter([1, 3], np.float32)
    row, acc = ops.parameter([1, 3], np.float32), ops.parameter([1, 3], np.float32)
    r_acc = ops.result(ops.add(acc, ops.multiply(row, ops.constant(np.float32(0.5)))))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_acc], [row, acc]))
    ti.set_sliced_input(row, bx.output(0), 0, 1, 1, -1, 0)
    ti.set_merged_input(acc, bs.output(0), r_acc.output(0))
    r_bs = ops.result(ti.get_iter_value(r_acc.output(0), -1))
    loop = ops.loop(ops.constant(np.int64(3)), ops.constant(True))
    loop.set_function(ov.Model([ops.result(ops.constant(True)), r_bs], [bx, bs]))
    loop.set_invariant_input(bx, x.output(0))
    loop.set_merged_input(bs, s0.output(0), r_bs.output(0))
    loop.set_special_body_ports([-1, 0])
    model = ov.Model([ops.result(loop.get_iter_value(r_bs.output(0), -1))], [x, s0], "ti_in_loop")
    check(model, {"x": f32(4, 3), "s0": f32(1, 3)}, tmp_path)


def test_loop_inside_tensor_iterator(tmp_path) -> None:
    """A TI over the rows of x whose body runs a 2-trip Loop on its row."""
    x = ops.parameter([3, 2], np.float32, name="x")
    row = ops.parameter([1, 2], np.float32)
    lv = ops.parameter([1, 2], np.float32)
    r_lv = ops.result(ops.tanh(ops.add(lv, ops.constant(np.float32(1)))))
    loop = ops.loop(ops.constant(np.int64(2)), ops.constant(True))
    loop.set_function(ov.Model([ops.result(ops.constant(True)), r_lv], [lv]))
    loop.set_special_body_ports([-1, 0])
    loop.set_merged_input(lv, row.output(0), r_lv.output(0))
    r_row = ops.result(loop.get_iter_value(r_lv.output(0), -1))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_row], [row]))
    ti.set_sliced_input(row, x.output(0), 0, 1, 1, -1, 0)
    out = ti.get_concatenated_slices(r_row.output(0), 0, 1, 1, -1, 0)
    check(ov.Model([ops.result(out)], [x], "loop_in_ti"), {"x": f32(3, 2)}, tmp_path)


def test_loop_sliced_input_runs_at_most_its_slices(tmp_path) -> None:
    """A Loop slicing x [5, 2] on axis 0 with trip count 3 takes the first three rows."""
    x = ops.parameter([5, 2], np.float32, name="x")
    row = ops.parameter([1, 2], np.float32)
    r_cat = ops.result(ops.multiply(row, ops.constant(np.float32(3))))
    loop = ops.loop(ops.constant(np.int64(3)), ops.constant(True))
    loop.set_function(ov.Model([ops.result(ops.constant(True)), r_cat], [row]))
    loop.set_special_body_ports([-1, 0])
    loop.set_sliced_input(row, x.output(0), 0, 1, 1, -1, 0)
    out = loop.get_concatenated_slices(r_cat.output(0), 0, 1, 1, -1, 0)
    check(ov.Model([ops.result(out)], [x], "sliced_loop"), {"x": f32(5, 2)}, tmp_path)


def test_a_carry_that_starts_as_a_placeholder_is_peeled(tmp_path) -> None:
    """TensorFlow's ``tf.scan`` through OpenVINO: the carry starts as a ``[7,1,1]`` placeholder and is
    ``[7,2,5]`` after the first trip (the body's parameter is ``[7,?,?]``); that trip runs before the loop."""
    trips = 30
    xs = ops.parameter([trips, 7, 2, 5], np.float32, name="xs")
    bx = ops.parameter([1, 7, 2, 5], np.float32, name="bx")
    by = ops.parameter(ov.PartialShape([7, -1, -1]), np.float32, name="by")
    row = ops.squeeze(bx, ops.constant(np.array([0], np.int64)))
    y_next = ops.add(ops.multiply(by, ops.constant(np.float32(0.5))), row)
    r_cond, r_y = ops.result(ops.constant(True)), ops.result(y_next)
    r_cat = ops.result(ops.unsqueeze(y_next, ops.constant(np.array([0], np.int64))))
    loop = ops.loop(ops.constant(np.int64(trips)), ops.constant(True))
    loop.set_function(ov.Model([r_cond, r_y, r_cat], [bx, by]))
    loop.set_special_body_ports([-1, 0])
    loop.set_sliced_input(bx, xs.output(0), 0, 1, 1, -1, 0)
    placeholder = ops.constant(np.arange(7, dtype=np.float32).reshape(7, 1, 1))
    loop.set_merged_input(by, placeholder.output(0), r_y.output(0))
    outs = [loop.get_iter_value(r_y.output(0), -1), loop.get_concatenated_slices(r_cat.output(0), 0, 1, 1, -1, 0)]
    got = check(ov.Model([ops.result(o) for o in outs], [xs], "scan_placeholder"), {"xs": f32(trips, 7, 2, 5)},
                tmp_path, rtol=1e-5, atol=1e-6)
    assert [v.shape for v in got.values()] == [(7, 2, 5), (trips, 7, 2, 5)]

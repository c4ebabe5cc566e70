"""Trip counts hidden in while conditions (exporters' carried counters) become kCOUNT limits.

Each model is an ONNX Loop written the way an exporter writes it; loopc must build it with no
--max-trips, with the loop's limits as stated, and match onnxruntime on inputs chosen so that the
counter bound, not the data, ends the loop — and the other way round.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnx.parser
import onnxruntime as ort
import pytest

from loopc.compiler import compile, optimize
from loopc.errors import PassError
from loopc.frontend.onnx import import_model
from loopc.ir import Loop
from loopc.sim import simulate
from loopc.trt.config import build_serialized, builder_config, pin_profile

HEADER = '<ir_version: 8, opset_import: ["" : 17]>'
X = np.random.default_rng(0).standard_normal((12, 3)).astype(np.float32)


def check(text: str, feeds: dict[str, np.ndarray], limits: list[str] | None, max_trips: int | None = None) -> None:
    """Build with the real builder, simulate, compare with onnxruntime; check the loop's trip limits
    (None: a loop of one trip, inlined)."""
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    compiled = compile(model, max_trips=max_trips)
    assert [loop.trip_limits for loop in compiled.report.loops] == ([limits] if limits is not None else [])
    cfg = builder_config(compiled.session)
    pin_profile(compiled.session, compiled.network, cfg, feeds)
    assert build_serialized(compiled.session, compiled.network, cfg)
    got = simulate(compiled.network, feeds)
    for name, want in expected.items():
        assert got[name].shape == want.shape, name
        np.testing.assert_allclose(got[name], want, rtol=1e-6, atol=1e-6, err_msg=name)


def tf_while(compare: str = "Less", start: int = 0, step: int = 1, bound: str = "9.0", go: str = "c0") -> str:
    """tf2onnx's ``tf.while_loop(lambda i, acc: i < 9, ...)``: M = INT64_MAX, a carried int32 counter,
    the comparison done in float after a Cast, a scan output of every trip's sum."""
    return f"""{HEADER}
    g (float[N,3] x, bool go) => (int32 i_final, float[3] total, float[K,3] sums) {{
      max = Constant <value = int64 {{9223372036854775807}}> ()
      i0 = Constant <value = int32 {{{start}}}> ()
      c0 = Constant <value = bool {{1}}> ()
      acc0 = Constant <value = float[3] {{0, 0, 0}}> ()
      i_final, total, sums = Loop (max, {go}, i0, acc0) <body = b (int64 it, bool c_in, int32 i, float[3] acc)
                                                  => (bool c_out, int32 i_next, float[3] acc_next, float[3] row_out) {{
        step = Constant <value = int32 {{{step}}}> ()
        i_next = Add (i, step)
        one = Constant <value = float {{1}}> ()
        acc_next = Add (acc, one)
        row_out = Identity (acc_next)
        fi = Cast <to = 1> (i_next)
        limit = Constant <value = float {{{bound}}}> ()
        c_out = {compare} (fi, limit)
      }}>
    }}"""


@pytest.mark.parametrize(
    ("compare", "start", "step", "bound"),
    [("Less", 0, 1, "9.0"), ("Less", 0, 1, "8.5"), ("LessOrEqual", 1, 2, "8.5"), ("LessOrEqual", 1, 2, "9.0"),
     ("Greater", 10, -3, "0.0"), ("GreaterOrEqual", 10, -3, "1.0"), ("Less", 20, 1, "9.0")],
    ids=["lt", "lt-fraction", "le-step2", "le-step2-exact", "gt-down", "ge-down", "already-past"],
)
def test_tf2onnx_float_compare_of_a_carried_counter_is_a_count(compare: str, start: int, step: int, bound: str) -> None:
    one_trip = start == 20  # the count is 1 (the body runs before the test): the loop is inlined
    check(tf_while(compare, start, step, bound), {"x": X, "go": np.array(True)}, None if one_trip else ["kCOUNT"])


def test_a_false_initial_condition_still_runs_no_trip() -> None:
    """The count replaces the counter test; the initial flag, a bool input (TensorRT takes none in a
    trip count), stays a kWHILE limit (0 trips here)."""
    check(tf_while(go="go"), {"x": X, "go": np.array(False)}, ["kCOUNT", "kWHILE"])


@pytest.mark.parametrize("rows", [0, 5])
def test_an_initial_condition_computed_from_dims_folds_into_the_count(rows: int) -> None:
    """tf2onnx's first check ``0 < T`` from a dim, then always true: it picks the count or 0 trips, and
    no kWHILE limit is left (the scan output needs no cut after the loop)."""
    text = tf_while(go="first").replace("c0 = Constant <value = bool {1}> ()", """c0 = Constant <value = bool {1}> ()
      dims = Shape (x)
      zero = Constant <value = int64[1] {0}> ()
      rows = Gather <axis = 0> (dims, zero)
      frows = Cast <to = 1> (rows)
      fzero = Constant <value = float[1] {0}> ()
      first1 = Less (fzero, frows)
      first = Squeeze (first1, zero)""")
    check(text, {"x": X[:rows], "go": np.array(True)}, ["kCOUNT"])


def test_a_folded_initial_condition_in_a_nested_loop_builds() -> None:
    """tf2onnx's ``while i < T`` over a TensorArray inside another loop: with a kWHILE limit, the inner
    scan output was cut by a counter inside the outer loop, which TensorRT's builder fails on."""
    text = f"""{HEADER}
    g (float[T,B,3] x) => (float[T,B,3] z) {{
      two = Constant <value = int64 {{2}}> ()
      t = Constant <value = bool {{1}}> ()
      z = Loop (two, t, x) <body = ob (int64 k, bool oc, float[T,B,3] s) => (bool oc2, float[T,B,3] s2) {{
        shape = Shape (s)
        zero1 = Constant <value = int64[1] {{0}}> ()
        one1 = Constant <value = int64[1] {{1}}> ()
        steps1 = Slice (shape, zero1, one1)
        steps = Squeeze (steps1, zero1)
        max = Constant <value = int64 {{9223372036854775807}}> ()
        i0 = Constant <value = int32 {{0}}> ()
        fzero = Constant <value = float {{0}}> ()
        fsteps = Cast <to = 1> (steps)
        go = Less (fzero, fsteps)
        h0 = Mul (s, fzero)
        first = Gather <axis = 0> (h0, i0)
        i_last, h_last, ys = Loop (max, go, i0, first) <body = ib (int64 it, bool c, int32 i, float[B,3] h)
                                                      => (bool c2, int32 i2, float[B,3] h2, float[B,3] y) {{
          row = Gather <axis = 0> (s, i)
          w = Constant <value = float[3,3] {{0.5, 0.1, 0, 0, 0.5, 0.2, 0.3, 0, 0.5}}> ()
          hw = MatMul (h, w)
          pre = Add (hw, row)
          h2 = Tanh (pre)
          y = Identity (h2)
          one = Constant <value = int32 {{1}}> ()
          i2 = Add (i, one)
          fi = Cast <to = 1> (i2)
          c2 = Less (fi, fsteps)
        }}>
        oc2 = Identity (oc)
        s2 = Identity (ys)
      }}>
    }}"""
    x = np.random.default_rng(3).standard_normal((5, 2, 3)).astype(np.float32)
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    compiled = compile(model)
    cfg = builder_config(compiled.session)
    pin_profile(compiled.session, compiled.network, cfg, {"x": x})
    assert build_serialized(compiled.session, compiled.network, cfg)
    np.testing.assert_allclose(simulate(compiled.network, {"x": x})["z"], want, rtol=1e-6, atol=1e-6)


def test_counter_read_of_an_input_becomes_an_iterator() -> None:
    """``x[i]`` by the carried counter is an iterator once the trip count is known."""
    text = tf_while().replace("acc_next = Add (acc, one)", "row = Gather <axis = 0> (x, i)\n acc_next = Add (acc, row)")
    model = onnx.parser.parse_model(text)
    compiled = compile(model)
    assert len(compiled.report.loops[0].iterators) == 1
    check(text, {"x": X, "go": np.array(True)}, ["kCOUNT"])


def torch_range_with_break(bound: str = "n") -> str:
    """TorchScript's ``for i in range(n): ...; if total > 10: break``: M = INT64_MAX and
    cond = (i + 1 < n) and not (total > 10), a copy of i carried beside iteration_num."""
    return f"""{HEADER}
    g (float[N,3] x, int64 n) => (float[3] total, float[K,3] sums) {{
      max = Constant <value = int64 {{9223372036854775807}}> ()
      zero = Constant <value = int64 {{0}}> ()
      start = Less (zero, {bound})
      acc0 = Constant <value = float[3] {{0, 0, 0}}> ()
      i_final, total, sums = Loop (max, start, zero, acc0) <body = b (int64 it, bool c_in, int64 i, float[3] acc)
                                                  => (bool c_out, int64 i_next, float[3] acc_next, float[3] row_out) {{
        row = Gather <axis = 0> (x, i)
        acc_next = Add (acc, row)
        row_out = Identity (acc_next)
        one = Constant <value = int64 {{1}}> ()
        i_next = Add (i, one)
        more = Less (i_next, {bound})
        sum = ReduceSum <keepdims = 0> (acc_next)
        ten = Constant <value = float {{10}}> ()
        big = Greater (sum, ten)
        small = Not (big)
        c_out = And (more, small)
      }}>
    }}"""


@pytest.mark.parametrize("n", [0, 1, 5, 12])
def test_torch_range_with_break_counts_by_the_input_and_keeps_the_data_condition(n: int) -> None:
    feeds = {"x": np.abs(X) * 0.2, "n": np.array(n, np.int64)}
    check(torch_range_with_break(), feeds, ["kCOUNT", "kWHILE"])


def test_the_data_condition_can_end_the_loop_first() -> None:
    check(torch_range_with_break(), {"x": np.abs(X) * 3, "n": np.array(12, np.int64)}, ["kCOUNT", "kWHILE"])


def test_a_bound_read_from_data_stays_a_while_condition() -> None:
    """TensorRT needs a trip count before the loop starts: a bound computed from tensor data is not one."""
    text = torch_range_with_break("limit").replace(
        "zero = Constant <value = int64 {0}> ()",
        "zero = Constant <value = int64 {0}> ()\n fx = ReduceSum <keepdims = 0> (x)\n limit = Cast <to = 7> (fx)")
    with pytest.raises(PassError, match="max_trips=N"):
        compile(onnx.parser.parse_model(text))
    check(text, {"x": np.abs(X), "n": np.array(12, np.int64)}, ["kWHILE"], max_trips=32)


def test_a_counter_moving_away_from_its_bound_is_no_count() -> None:
    """``i > -1`` with i counting up holds forever: only the data can end this loop."""
    with pytest.raises(PassError, match="max_trips=N"):
        compile(onnx.parser.parse_model(tf_while("Greater", 0, 1, "-1.0")))


def tf_strided_row(ends: str, step: int, other_end: int = 1000000000) -> str:
    """tf2onnx's ``h = tanh(x[:, i, :] + h)`` in a ``while i < T`` loop: the strided slice's bounds are
    vectors over every axis, masked by Where of all-false conditions, ends raised to 10^9 by a Max in float."""
    return f"""{HEADER}
    g (float[B,T,3] x) => (float[B,3] h_last, float[T,B,3] hs) {{
      shape = Shape (x)
      one1 = Constant <value = int64[1] {{1}}> ()
      two1 = Constant <value = int64[1] {{2}}> ()
      zero1 = Constant <value = int64[1] {{0}}> ()
      steps1 = Slice (shape, one1, two1)
      steps = Squeeze (steps1, zero1)
      max = Constant <value = int64 {{9223372036854775807}}> ()
      i0 = Constant <value = int32 {{0}}> ()
      fzero = Constant <value = float {{0}}> ()
      fsteps = Cast <to = 1> (steps)
      go = Less (fzero, fsteps)
      row0 = Gather <axis = 1> (x, zero1)
      r0 = Squeeze (row0, one1)
      h0 = Mul (r0, fzero)
      i_last, h_last, hs = Loop (max, go, i0, h0) <body = b (int64 it, bool c, int32 i, float[B,3] h)
                                                 => (bool c2, int32 i2, float[B,3] h2, float[B,3] y) {{
        z = Constant <value = int32[1] {{0}}> ()
        ax = Constant <value = int64[1] {{0}}> ()
        iu = Unsqueeze (i, ax)
        begin = Concat <axis = 0> (z, iu, z)
        never = Constant <value = bool[3] {{0, 0, 0}}> ()
        huge = Constant <value = int32[3] {{1000000000, 1000000000, 1000000000}}> ()
        st = Where (never, huge, begin)
        one = Constant <value = int32 {{1}}> ()
        i2 = Add (i, one)
        ipu = Unsqueeze (i2, ax)
        big = Constant <value = int32[1] {{{other_end}}}> ()
        {ends}
        axes = Constant <value = int32[3] {{0, 1, 2}}> ()
        strides = Constant <value = int32[3] {{1, {step}, 1}}> ()
        sl = Slice (x, st, en, axes, strides)
        a1 = Constant <value = int64[1] {{1}}> ()
        row = Squeeze (sl, a1)
        hh = Add (h, row)
        h2 = Tanh (hh)
        y = Identity (h2)
        fi = Cast <to = 1> (i2)
        c2 = Less (fi, fsteps)
      }}>
    }}"""


RAISED_ENDS = """plus = Concat <axis = 0> (z, ipu, z)
        fplus = Cast <to = 1> (plus)
        floor = Constant <value = float[3] {1e9, 1e9, 1e9}> ()
        raised = Max (fplus, floor)
        en = Cast <to = 6> (raised)"""


@pytest.mark.parametrize("ends, step", [(RAISED_ENDS, 1000000000), ("en = Concat <axis = 0> (big, ipu, big)", 1)],
                         ids=["huge-step", "end-i-plus-1"])
def test_tf2onnx_strided_slice_of_row_i_is_an_iterator(ends: str, step: int) -> None:
    """``x[:, i, :]`` read by the counter is an iterator over axis 1; as a Slice with counter-computed
    bounds in the loop, TensorRT's builder asserted (makeScopeNodesContiguous)."""
    text = tf_strided_row(ends, step)
    compiled = compile(onnx.parser.parse_model(text))
    assert [len(loop.iterators) for loop in compiled.report.loops] == [1]
    x = np.random.default_rng(4).standard_normal((2, 5, 3)).astype(np.float32)
    check(text, {"x": x}, ["kCOUNT"])


def test_a_strided_slice_that_cuts_another_axis_is_no_iterator() -> None:
    """An end of 2 on the batch axis is a real cut, not "to the end": the slice stays a slice, whose bounds
    change between trips, which TensorRT cannot build in a loop: it is refused naming it."""
    model = import_model(onnx.parser.parse_model(tf_strided_row("en = Concat <axis = 0> (big, ipu, big)", 1, 2)))
    with pytest.raises(PassError, match=r"TensorRT cannot build this loop: node 'sl' \(Slice, opset 17\): it takes its "
                                        r"starts from .*gather-to-iterator: "):
        optimize(model)



def test_a_strided_counter_under_a_vector_bound_and_a_trip_input_counts_by_both() -> None:
    """``i += 2`` while ``i < n`` (n a one-element vector) under an input trip count ``m``: the count is
    ``min(m, ceil((n - 2) / 2) + 1)``, computed in the graph; the data condition stays a kWHILE limit."""
    text = torch_range_with_break().replace("int64 n)", "int64[1] n, int64 m)").replace(
        "one = Constant <value = int64 {1}> ()", "one = Constant <value = int64 {2}> ()").replace(
        "Loop (max,", "Loop (m,").replace("bool c_in", "bool[1] c_in").replace("=> (bool c_out,", "=> (bool[1] c_out,")
    text = text.replace("ReduceSum <keepdims = 0> (acc_next)", "ReduceSum <keepdims = 1> (acc_next)")
    model = import_model(onnx.parser.parse_model(text))
    optimize(model)
    made = {(node.op, node.name.rsplit("_", 1)[-1]) for _, node in model.graph.walk()}
    assert {("Reshape", "scalar"), ("Div", "quotient"), ("Min", "count")} <= made  # the count in the graph
    for n, m, scale in [(7, 12, 0.2), (8, 12, 0.2), (7, 2, 0.2), (0, 5, 0.2), (12, 12, 3.0)]:
        feeds = {"x": np.abs(X) * scale, "n": np.array([n], np.int64), "m": np.array(m, np.int64)}
        check(text, feeds, ["kCOUNT", "kWHILE"])


@pytest.mark.parametrize("scale", [0.2, 3.0, -3.0])
def test_the_data_conditions_left_beside_a_count_stay_their_conjunction(scale: float) -> None:
    """``i + 1 < n and total <= 10 and total > -10``: the count takes the first, the other two are
    the kWHILE condition, either of which can end the loop."""
    text = torch_range_with_break().replace("c_out = And (more, small)", """low = Constant <value = float {-10}> ()
        above = Greater (sum, low)
        data = And (small, above)
        c_out = And (more, data)""")
    model = import_model(onnx.parser.parse_model(text))
    optimize(model)
    assert [node.name.rsplit("_", 1)[-1] for _, node in model.graph.walk() if node.op == "And"] == ["while0"]
    check(text, {"x": X * scale, "n": np.array(12, np.int64)}, ["kCOUNT", "kWHILE"])

"""ONNX Loop into IR loops: each (M, cond) mode, the counter, carried values, scan outputs,
outer-scope reads, nesting, and every Loop opset; numbers checked against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from loopc.ir import If, Loop
from tests.frontend.onnx.helpers import check_against_ort, imported, loops


def loop_model(opset: int, m: str, cond: str, body_inputs: str = "int64 i, bool c_in, float[2] s_in",
               extra: str = "") -> str:
    """s <- s + a, with a from the outer scope; cond_out = sum(s) < 20; scan output s."""
    return f"""
    <ir_version: 8, opset_import: ["" : {opset}]>
    g (int64 n, bool go, float[2] s0, float[2] a) => (float[2] s_final, float[N,2] s_all) {{
        s_final, s_all = Loop({m}, {cond}, s0) <body = body ({body_inputs}) => (bool c_out, float[2] s_out,
                                                                                  float[2] s_scan) {{
            s_out = Add(s_in, a)
            total = ReduceSum<keepdims=0>(s_out)
            limit = Constant<value = float {{20.0}}>()
            c_out = Less(total, limit)
            s_scan = Identity(s_out)
            {extra}
        }}>
    }}"""


FEEDS = {"n": np.array(7, np.int64), "go": np.array(True), "s0": np.array([1.0, 2.0], np.float32),
         "a": np.array([0.5, 1.5], np.float32)}


def test_for_loop_has_a_trip_count_and_no_condition() -> None:
    ir = check_against_ort(loop_model(13, "n", '""'), FEEDS)
    (loop,) = loops(ir.graph)
    assert loop.trip_count is not None and loop.trip_count.name == "n"
    assert loop.condition is None
    assert loop.counter is None  # iteration_num is never read
    assert [o.kind for o in loop.loop_outputs] == ["last", "concat"]
    assert loop.loop_outputs[1].axis == 0


def test_for_while_loop_has_both_and_the_condition_is_a_recurrence() -> None:
    ir = check_against_ort(loop_model(13, "n", "go"), FEEDS)
    (loop,) = loops(ir.graph)
    assert loop.trip_count is not None and loop.condition is not None
    cond = loop.recurrences[0]
    assert cond.state is loop.condition and cond.init.name == "go" and cond.next.name == "c_out"
    # the carried value: init outside, state a body parameter, next the body output
    carried = loop.recurrences[1]
    assert (carried.init.name, carried.state.name, carried.next.name) == ("s0", "s_in", "s_out")
    assert loop.loop_outputs[0].value is carried.state


def test_while_loop_without_scan_outputs() -> None:
    text = loop_model(13, '""', "go").replace("s_final, s_all = Loop", "s_final, = Loop")
    text = text.replace("(float[2] s_final, float[N,2] s_all)", "(float[2] s_final)")
    text = text.replace(",\n                                                                                  float[2] s_scan)", ")")
    text = text.replace("s_scan = Identity(s_out)", "")
    ir = check_against_ort(text, FEEDS)
    (loop,) = loops(ir.graph)
    assert loop.trip_count is None and loop.condition is not None and loop.max_trips is None


def test_while_loop_scan_outputs_are_imported_unbounded() -> None:
    """The frontend states ONNX's meaning; bounding the outputs for TensorRT is the passes' job."""
    (loop,) = loops(imported(loop_model(13, '""', "go")).graph)
    assert loop.trip_count is None and loop.max_trips is None
    assert [o.kind for o in loop.loop_outputs] == ["last", "concat"]


def test_counter_only_when_iteration_num_is_read() -> None:
    extra = "fi = Cast<to = 1>(i)\n            unused = Add(fi, limit)"
    (loop,) = loops(imported(loop_model(13, "n", '""', extra=extra)).graph)
    assert loop.counter is not None and loop.counter.name == "i"
    assert loop.counter.dtype == np.int64 and loop.counter.shape == ()


def test_ignored_cond_read_by_the_body_starts_true_without_limiting_trips() -> None:
    text = loop_model(13, "n", '""').replace("c_out = Less(total, limit)", "lt = Less(total, limit)\n"
                                             "            c_out = And(lt, c_in)")
    ir = check_against_ort(text, FEEDS)
    (loop,) = loops(ir.graph)
    assert loop.condition is None
    flag = loop.recurrences[0]
    assert flag.state.name == "c_in" and flag.init.producer is not None and flag.init.producer.op == "Constant"
    assert bool(flag.init.producer.attrs["value"]) is True


def test_outer_scope_reads_are_the_outer_values_themselves() -> None:
    ir = imported(loop_model(13, "n", "go"))
    (loop,) = loops(ir.graph)
    a = next(v for v in ir.graph.inputs if v.name == "a")
    add = next(n for n in loop.body.nodes if n.op == "Add")
    assert add.inputs[1] is a


@pytest.mark.parametrize("opset", [1, 11, 13, 16, 19, 21, 23])
def test_every_loop_opset(opset: int) -> None:
    # Before 13 ReduceSum took axes as an attribute: the upgrader makes it an input.
    (loop,) = loops(imported(loop_model(opset, "n", "go")).graph)
    assert loop.trip_count is not None and loop.condition is not None


def test_untyped_body_inputs_take_the_outer_types() -> None:
    ir = imported(loop_model(13, "n", "go", body_inputs="i, c_in, s_in"))  # onnxruntime refuses these
    (loop,) = loops(ir.graph)
    state = loop.recurrences[1].state
    assert state.dtype == np.float32 and state.shape == (2,)
    assert loop.recurrences[0].state.dtype == np.bool_


NESTED = """
<ir_version: 8, opset_import: ["" : 17]>
g (int64 n, int64 m, float[2] x) => (float[2] y) {
    y = Loop(n, "", x) <body = outer (int64 i, bool c, float[2] acc) => (bool c_out, float[2] acc_out) {
        c_out = Identity(c)
        zero = Constant<value = int64 {0}>()
        even = Equal(i, zero)
        step = If(even) <
            then_branch = t () => (float[2] r) { r = Identity(x) },
            else_branch = e () => (float[2] r) {
                r = Loop(m, "", x) <body = inner (int64 j, bool c2, float[2] v) => (bool c2_out, float[2] v_out) {
                    c2_out = Identity(c2)
                    v_out = Add(v, x)
                }>
            }>
        acc_out = Add(acc, step)
    }>
}"""


def test_nested_loop_inside_if_inside_loop_reads_outer_values() -> None:
    feeds = {"n": np.array(4, np.int64), "m": np.array(3, np.int64), "x": np.array([1.0, -2.0], np.float32)}
    ir = check_against_ort(NESTED, feeds)
    outer, inner = loops(ir.graph)
    assert outer.counter is not None and inner.counter is None
    conditional = next(n for n in outer.body.nodes if isinstance(n, If))
    assert any(isinstance(n, Loop) for n in conditional.else_branch.nodes)
    x = ir.graph.inputs[2]
    assert inner.recurrences[-1].init is x  # an outer-outer value read two levels down
    assert conditional.then_branch.outputs[0].producer.inputs[0] is x


def test_loop_output_types_come_from_inference() -> None:
    ir = imported(loop_model(13, "n", "go"))
    final, stacked = ir.graph.outputs
    assert final.dtype == np.float32 and final.shape == (2,)
    assert stacked.shape is not None and stacked.shape[1] == 2
    assert isinstance(final.producer, Loop)

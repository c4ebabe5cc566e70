"""LoopDistribution alone: a loop's matrix products that do not depend on the carried state run once,
batched over all trips, before or after the loop.

The models are an Elman RNN written as an ONNX Scan (which loopc imports with iterators, so no other
pass has to run first): ``h = tanh(x[t]·W + h·R)``, with an output head ``y[t] = h·V``.
"""

from __future__ import annotations

import numpy as np
import pytest

from loopc.ir import Graph, Loop
from loopc.passes import LoopDistribution
from tests.passes.alone import assert_matches_onnxruntime, load, loops, run_alone

#: ``{directions}`` are the Scan's direction attributes; ``{input_part}`` makes ``xw`` from ``xt``;
#: ``{head}`` makes ``y`` from ``hout``.
RNN = """
g (float[5,3] x, float[3,4] w, float[4,4] r, float[4,2] v, float[4] h0) => (float[4] h, float[5,{width}] ys) {{
  h, ys = Scan <num_scan_inputs = 1{directions}, body = b (float[4] hin, float[3] xt) => (float[4] hout, float[{width}] y) {{
    {input_part}
    hr = MatMul(hin, r)
    s = Add(xw, hr)
    hout = Tanh(s)
    {head}
  }}> (h0, x)
}}
"""
PROJECTED = "xw = MatMul(xt, w)"
HEAD = "y = MatMul(hout, v)"
rng = np.random.default_rng(3)
FEEDS: dict[str, np.ndarray] = {
    "x": rng.standard_normal((5, 3)).astype(np.float32), "w": rng.standard_normal((3, 4)).astype(np.float32),
    "r": rng.standard_normal((4, 4)).astype(np.float32) / 2, "v": rng.standard_normal((4, 2)).astype(np.float32),
    "h0": rng.standard_normal(4).astype(np.float32)}


def rnn(input_part: str = PROJECTED, head: str = HEAD, directions: str = "") -> str:
    return RNN.format(input_part=input_part, head=head, directions=directions, width=2 if head == HEAD else 4)


def products(graph: Graph) -> int:
    return sum(node.op == "MatMul" for node in graph.nodes)


@pytest.mark.parametrize("directions", ["", ", scan_input_directions = [1], scan_output_directions = [1]"],
                         ids=["forward", "reversed input and output"])
def test_the_input_projection_moves_before_and_the_output_head_after_the_loop(directions: str) -> None:
    proto, ir = load(rnn(directions=directions))
    stats = run_alone(ir, LoopDistribution())
    assert stats == {"loop-distribution.before": 1, "loop-distribution.after": 1}
    (loop,) = loops(ir.graph)
    assert products(loop.body) == 1  # h·R, the serial chain, stays
    assert products(ir.graph) == 2
    assert [it.reverse for it in loop.iterators] == [bool(directions)] * len(loop.iterators)
    assert_matches_onnxruntime(proto, ir, FEEDS, rtol=1e-5, atol=1e-5)


def test_a_product_of_outer_values_alone_is_hoisted_out_of_the_loop() -> None:
    """``W·Wᵀ`` reads no trip's value: it runs once before the loop, whatever the trips."""
    head = "wwt = Transpose <perm = [1, 0]> (r)\n    rr = MatMul(r, wwt)\n    y = MatMul(hout, rr)"
    proto, ir = load(rnn(head=head))
    stats = run_alone(ir, LoopDistribution())
    assert stats["loop-distribution.hoisted"] == 2
    (loop,) = loops(ir.graph)
    assert not any(node.op == "Transpose" for node in loop.body.nodes)
    assert_matches_onnxruntime(proto, ir, FEEDS, rtol=1e-5, atol=1e-5)


def test_iteration_parallel_work_without_a_matrix_product_stays() -> None:
    """The cost model: batching ``sum(2·x[t])`` and ``h²`` saves no product, so the loop is left as it is."""
    proto, ir = load(rnn(input_part="two = Constant <value = float {2}> ()\n    xt2 = Mul(xt, two)\n"
                                    "    xw = ReduceSum <keepdims = 0> (xt2)",
                         head="y = Mul(hout, hout)"))
    assert run_alone(ir, LoopDistribution()) == {}
    assert_matches_onnxruntime(proto, ir, FEEDS, rtol=1e-5, atol=1e-5)


def test_a_loop_nested_in_another_is_not_distributed() -> None:
    """Only top-level loops are: a batched value would sit in the enclosing body."""
    proto, ir = load("""
    g (int64 n, float[5,3] x, float[3,4] w, float[4,4] r, float[4] h0) => (float[4] h) {
      h = Loop (n, , h0) <body = outer (int64 k, bool c, float[4] start) => (bool c_out, float[4] h_last) {
        c_out = Constant <value = bool {1}> ()
        h_last = Scan <num_scan_inputs = 1, body = b (float[4] hin, float[3] xt) => (float[4] hout) {
          xw = MatMul(xt, w)
          hr = MatMul(hin, r)
          s = Add(xw, hr)
          hout = Tanh(s)
        }> (start, x)
      }>
    }
    """)
    assert run_alone(ir, LoopDistribution()) == {}
    inner = next(node for node in loops(ir.graph)[0].body.nodes if isinstance(node, Loop))
    assert products(inner.body) == 2
    feeds = {k: FEEDS[k] for k in ("x", "w", "r", "h0")}
    assert_matches_onnxruntime(proto, ir, {"n": np.array(2, np.int64), **feeds}, rtol=1e-5, atol=1e-5)


def test_a_product_of_iterators_read_in_opposite_directions_stays_in_the_loop() -> None:
    """``(x[t] + z[T-1-t])·W``: the batched rows of x and of z would not line up, so that product stays;
    the output head still moves after the loop."""
    proto, ir = load("""
    g (float[5,3] x, float[5,3] z, float[3,4] w, float[4,4] r, float[4,2] v, float[4] h0) => (float[4] h, float[5,2] ys) {
      h, ys = Scan <num_scan_inputs = 2, scan_input_directions = [0, 1],
                    body = b (float[4] hin, float[3] xt, float[3] zt) => (float[4] hout, float[2] y) {
        xz = Add(xt, zt)
        xw = MatMul(xz, w)
        hr = MatMul(hin, r)
        s = Add(xw, hr)
        hout = Tanh(s)
        y = MatMul(hout, v)
      }> (h0, x, z)
    }
    """)
    assert run_alone(ir, LoopDistribution()) == {"loop-distribution.after": 1}
    (loop,) = loops(ir.graph)
    assert products(loop.body) == 2
    z = np.flip(FEEDS["x"], 0) * 0.5
    assert_matches_onnxruntime(proto, ir, {**FEEDS, "z": z}, rtol=1e-5, atol=1e-5)


def test_a_source_iterated_along_axis_1_and_an_output_stacked_on_axis_1_are_transposed_around_the_products() -> None:
    """``scan_input_axes = [1]``: the batched product reads x with its trip axis moved first; the head's
    stacked result moves its trip axis back to where the output stacks it."""
    proto, ir = load("""
    g (float[3,5] x, float[3,4] w, float[4,4] r, float[4,2] v, float[4] h0) => (float[4] h, float[2,5] ys) {
      h, ys = Scan <num_scan_inputs = 1, scan_input_axes = [1], scan_output_axes = [1],
                    body = b (float[4] hin, float[3] xt) => (float[4] hout, float[2] y) {
        xw = MatMul(xt, w)
        hr = MatMul(hin, r)
        s = Add(xw, hr)
        hout = Tanh(s)
        y = MatMul(hout, v)
      }> (h0, x)
    }
    """)
    assert run_alone(ir, LoopDistribution()) == {"loop-distribution.before": 1, "loop-distribution.after": 1}
    assert [node.op for node in ir.graph.nodes if node.op == "Transpose"] == ["Transpose", "Transpose"]
    assert_matches_onnxruntime(proto, ir, {**FEEDS, "x": FEEDS["x"].T.copy()}, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("part", ["before", "after"])
def test_a_quantized_weight_moves_out_with_its_product_never_stacked_per_trip(part: str) -> None:
    """A weight's DequantizeLinear in the body (what quantizers write with Q/DQ in a loop) is the same on every
    trip: the batched product outside the loop reads a copy of it, and the loop emits no per-trip stack of it."""
    weight = "wq = Constant <value = int8[3,4] {5, -7, 12, 0, -3, 9, 100, -128, 127, 1, -1, 2}> ()\n" \
             "    wd = DequantizeLinear(wq, ws)\n" \
             "    xw = MatMul(xt, wd)"
    head = "vq = Constant <value = int8[4,2] {3, -4, 50, 7, -9, 2, 1, 66}> ()\n" \
           "    vd = DequantizeLinear(vq, ws)\n" \
           "    y = MatMul(hout, vd)"
    text = RNN.format(input_part=weight if part == "before" else PROJECTED, head=head if part == "after" else HEAD,
                      directions="", width=2)
    text = text.replace("float[4] h0)", "float[4] h0, float ws)")
    proto, ir = load(text)
    stats = run_alone(ir, LoopDistribution())
    assert stats.get(f"loop-distribution.{part}") == 1
    (loop,) = loops(ir.graph)
    assert not any(node.op == "DequantizeLinear" and out.value in node.outputs
                   for node in loop.body.nodes for out in loop.loop_outputs)
    outside = [node for node in ir.graph.nodes if node.op == "DequantizeLinear"]
    assert len(outside) == 1 and any(u.user.op == "MatMul" for u in outside[0].outputs[0].uses())
    assert_matches_onnxruntime(proto, ir, {**FEEDS, "ws": np.array(0.03, np.float32)}, rtol=1e-5, atol=1e-5)

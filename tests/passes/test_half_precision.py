"""HalfPrecision alone, on IR text: which values become half, which stay float32 and why, where the casts go,
and (through the IR interpreter, which checks every value against its type) that the retyped graph computes
what NumPy computes in float32, within half's rounding.

The tolerances are half's: float16 keeps 11 significant bits (relative rounding 2**-11 per stored value), so a
few chained roundings stay within 1e-2 of the result's scale.
"""

from __future__ import annotations

from textwrap import dedent

import ml_dtypes
import numpy as np

from loopc.ir import Graph, Loop, Value, parse, verify
from loopc.ir.interpret import interpret
from loopc.passes.half_precision import CONTROL, FLOAT_OP, SHAPE_WORK, STATE, HalfPrecision

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)


def ir(text: str) -> Graph:
    graph = parse(dedent(text).strip())
    verify(graph)
    return graph


def values(graph: Graph) -> dict[str, Value]:
    found = {v.name: v for _, node in graph.walk() for v in node.outputs}
    found.update({v.name: v for _, node in graph.walk() for sub in node.subgraphs() for v in sub.inputs})
    return found


def reasons(half: HalfPrecision) -> dict[str, str]:
    return {kept.node: kept.reason for kept in half.kept}


def test_products_run_in_half_and_reductions_and_softmax_in_float32() -> None:
    """``softmax(relu(x @ W + b))`` and its row sum: the product, bias and activation in half with the weights
    stored in half; softmax and the sum in float32; the outputs keep the model's float32."""
    rng = np.random.default_rng(0)
    w, b = rng.normal(size=(8, 5)).astype(np.float32), rng.normal(size=(5,)).astype(np.float32)
    graph = ir(f"""
        graph main(%x: f32[4,8]) -> (%p, %s) {{
          %w: f32[8,5] = Constant() value=f32[8,5]:{w.ravel().tolist()}
          %b: f32[5] = Constant() value=f32[5]:{b.ravel().tolist()}
          %axes: i64[1] = Constant() value=i64[1]:[1]
          %y: f32[4,5] = MatMul(%x, %w)
          %z: f32[4,5] = Add(%y, %b)
          %r: f32[4,5] = Relu(%z)
          %p: f32[4,5] = Softmax(%r) axis=-1
          %s: f32[4,1] = ReduceSum(%r, %axes) keepdims=1
        }}
    """)
    half = HalfPrecision("fp16")
    result = half(graph)
    verify(graph)
    found = values(graph)
    assert [found[name].dtype for name in ("y", "z", "r")] == [F16] * 3
    assert found["w_f16"].dtype == F16 and found["b_f16"].dtype == F16  # the weights, stored in half
    assert [v.dtype for v in graph.outputs] == [F32, F32] and [v.name for v in graph.outputs] == ["p", "s"]
    assert reasons(half) == {"p": FLOAT_OP, "s": FLOAT_OP}
    assert result.stats["half_nodes"] == 3 and result.stats["weights"] == 2
    x = rng.normal(size=(4, 8)).astype(np.float32)
    p, s = interpret(graph, {"x": x})
    r = np.maximum(x @ w + b, 0)
    want_p = np.exp(r - r.max(1, keepdims=True))
    want_p /= want_p.sum(1, keepdims=True)
    np.testing.assert_allclose(p, want_p, atol=1e-2 * np.abs(want_p).max())
    np.testing.assert_allclose(s, r.sum(1, keepdims=True), atol=1e-2 * np.abs(r.sum(1)).max())


def rnn(half_state: bool) -> tuple[Graph, HalfPrecision]:
    graph = ir("""
        graph main(%xs: f32[6,2,3], %h0: f32[2,3], %w: f32[3,3]) -> (%h) {
          %n: i64[] = Constant() value=i64[]:[6]
          %h: f32[2,3] = loop count=%n {
            iterator %x: f32[2,3] = %xs[axis 0]
            recurrence %s: f32[2,3] = %h0 -> %next
            %proj: f32[2,3] = MatMul(%s, %w)
            %gate: f32[2,3] = Sigmoid(%proj)
            %kept: f32[2,3] = Mul(%gate, %s)
            %next: f32[2,3] = Add(%kept, %x)
            last %h = %s
          }
        }
    """)
    half = HalfPrecision("fp16", half_state=half_state)
    half(graph)
    verify(graph)
    return graph, half


def assert_rnn_computes(graph: Graph, tolerance: float) -> None:
    """The retyped loop against the same recurrence in float32 NumPy, within ``tolerance`` of its scale."""
    rng = np.random.default_rng(1)
    xs, h0, w = (rng.normal(size=s).astype(np.float32) for s in ((6, 2, 3), (2, 3), (3, 3)))
    (got,) = interpret(graph, {"xs": xs, "h0": h0, "w": w})
    h = h0
    for x in xs:
        h = 1 / (1 + np.exp(-(h @ w))) * h + x
    np.testing.assert_allclose(got, h, atol=tolerance * np.abs(h).max())


def test_loop_state_and_its_update_stay_float32_and_the_product_reads_a_half_copy() -> None:
    """``s' = sigmoid(s @ W) * s + x``: the state and the update ``* s + x`` stay float32; the product and the
    gate run in half on a half copy of the state, cast once per trip at the top of the body."""
    graph, half = rnn(half_state=False)
    loop = next(node for node in graph.nodes if isinstance(node, Loop))
    found = values(graph)
    assert loop.recurrences[0].state.dtype == F32 and loop.recurrences[0].next.dtype == F32
    assert found["proj"].dtype == F16 and found["gate"].dtype == F16
    assert found["kept"].dtype == F32 and found["next"].dtype == F32
    assert found["s_f16"].producer.op == "Cast" and found["s_f16"].producer.graph is loop.body  # type: ignore[union-attr]
    assert reasons(half) == {"s": STATE, "kept": STATE, "next": STATE}
    assert_rnn_computes(graph, 1e-2)


def test_half_state_puts_the_state_and_its_update_in_half() -> None:
    graph, half = rnn(half_state=True)
    loop = next(node for node in graph.nodes if isinstance(node, Loop))
    found = values(graph)
    assert loop.recurrences[0].state.dtype == F16 and found["next"].dtype == F16
    # the loop's result is half; the output, cast up at the edge, keeps the model's name and type
    assert found["h_f16"].dtype == F16 and graph.outputs[0].dtype == F32 and graph.outputs[0].name == "h"
    assert loop.recurrences[0].init.producer.op == "Cast"  # type: ignore[union-attr]  # h0 enters in half
    assert not half.kept
    assert_rnn_computes(graph, 2e-2)


def test_what_decides_a_loops_trips_stays_float32() -> None:
    """Newton's iteration for sqrt(a) runs while the step is above 1e-6, which half cannot resolve: the step,
    the iterate and everything they are computed from stay float32, so the loop runs the trips it runs in
    float32."""
    graph = ir("""
        graph main(%a: f32[], %x0: f32[]) -> (%root, %trips) {
          %tol: f32[] = Constant() value=f32[]:[1e-6]
          %half: f32[] = Constant() value=f32[]:[0.5]
          %one: i64[] = Constant() value=i64[]:[1]
          %zero: i64[] = Constant() value=i64[]:[0]
          %go0: bool[] = Constant() value=bool[]:[true]
          %n: i64[] = Constant() value=i64[]:[100]
          %root: f32[], %trips: i64[] = loop count=%n while=%go {
            recurrence %go: bool[] = %go0 -> %more
            recurrence %x: f32[] = %x0 -> %nx
            recurrence %k: i64[] = %zero -> %k1
            %q: f32[] = Div(%a, %x)
            %sum: f32[] = Add(%x, %q)
            %nx: f32[] = Mul(%half, %sum)
            %d: f32[] = Sub(%nx, %x)
            %step: f32[] = Abs(%d)
            %more: bool[] = Greater(%step, %tol)
            %k1: i64[] = Add(%k, %one)
            last %root = %x
            last %trips = %k
          }
        }
    """)
    half = HalfPrecision("fp16")
    half(graph)
    verify(graph)
    found = values(graph)
    assert all(found[name].dtype == F32 for name in ("q", "sum", "nx", "d", "step"))
    assert set(reasons(half).values()) == {CONTROL}
    root, trips = interpret(graph, {"a": np.float32(2.0), "x0": np.float32(1.0)})
    x, k = 1.0, 0
    while True:  # the same iteration in float32, by hand
        nx = np.float32(0.5) * (np.float32(x) + np.float32(2.0) / np.float32(x))
        k += 1
        more = abs(nx - np.float32(x)) > np.float32(1e-6)
        x = nx
        if not more:
            break
    assert int(trips) == k and float(root) == float(x)


def test_shape_work_stays_float32_and_a_models_cast_to_float_follows_its_input() -> None:
    """``x * (n / 2)`` with ``n`` a size: the size arithmetic is shape work and stays float32; ``Cast(h, FLOAT)``
    of a half activation becomes a cast to half (the model asked for its float type), not a round trip."""
    graph = ir("""
        graph main(%x: f32[4,6], %w: f32[6,6]) -> (%y) {
          %shape: i64[2] = Shape(%x)
          %i: i64[] = Constant() value=i64[]:[1]
          %n: i64[] = Gather(%shape, %i) axis=0
          %nf: f32[] = Cast(%n) to=1
          %two: f32[] = Constant() value=f32[]:[2]
          %scale: f32[] = Div(%nf, %two)
          %h: f32[4,6] = MatMul(%x, %w)
          %c: f32[4,6] = Cast(%h) to=1
          %y: f32[4,6] = Mul(%c, %scale)
        }
    """)
    half = HalfPrecision("fp16")
    half(graph)
    verify(graph)
    found = values(graph)
    assert found["scale"].dtype == F32 and reasons(half)["scale"] == SHAPE_WORK
    assert found["c"].dtype == F16 and found["c"].producer.attrs["to"] == 10  # type: ignore[union-attr]
    assert found["y_f16"].dtype == F16 and graph.outputs[0].dtype == F32 and graph.outputs[0].name == "y"
    rng = np.random.default_rng(2)
    x, w = rng.normal(size=(4, 6)).astype(np.float32), rng.normal(size=(6, 6)).astype(np.float32)
    (y,) = interpret(graph, {"x": x, "w": w})
    want = x @ w * 3
    np.testing.assert_allclose(y, want, atol=1e-2 * np.abs(want).max())


def test_bfloat16_branches_that_disagree_meet_in_float32() -> None:
    """An If whose branches give half (a product) and float32 (a softmax) returns float32, the half branch cast
    up inside it."""
    graph = ir("""
        graph main(%c: bool[], %x: f32[2,4], %w: f32[4,4]) -> (%y) {
          %y: f32[2,4] = if %c {
            then {
              %p: f32[2,4] = MatMul(%x, %w)
              yield %p
            }
            else {
              %q: f32[2,4] = Softmax(%x) axis=-1
              yield %q
            }
          }
        }
    """)
    HalfPrecision("bf16")(graph)
    verify(graph)
    found = values(graph)
    assert found["p"].dtype == np.dtype(ml_dtypes.bfloat16) and found["y"].dtype == F32
    rng = np.random.default_rng(3)
    x, w = rng.normal(size=(2, 4)).astype(np.float32), rng.normal(size=(4, 4)).astype(np.float32)
    (y,) = interpret(graph, {"c": np.array(True), "x": x, "w": w})
    np.testing.assert_allclose(y, x @ w, atol=3e-2 * np.abs(x @ w).max())  # bfloat16 keeps 8 bits

"""``--fp16`` / ``--bf16`` where float32 builds: TensorRT-RTX's real builder builds the half network, and loopc's
simulator of it matches the oracle (the framework's outputs, or an ONNX test's expected outputs) within
:data:`loopc.precision.HALF_TOLERANCE` of each float output's largest magnitude; integer outputs (tokens) equal.

What is covered here, to keep the suite's time modest (about 20 s on two cores): a subset of the corpus, one case
per kind of loop (:data:`CORPUS_CASES`: a linear-attention and a retention recurrence, ONNX's LSTM and GRU from two
exporters, a scan, a while loop with an If inside, a nested RNN, a greedy decoder); ONNX's own LinearAttention
expansions with the delta rule (:data:`NODE_TESTS`), whose loops TensorRT-RTX's builder refused in half before
casts were kept at the loop's edges (rule 7 of :mod:`loopc.passes.half_precision`); and linear-attention scans
written here with normalizations in the body, as ONNX's function ops and written out. Then the rules those needed,
on IR text. ``python benchmarks/half_table.py --conformance`` builds every corpus case and every ONNX loop node test
the same way; ``tests/sim/test_half_models.py`` simulates every corpus model in half against its float32 network.
"""

from __future__ import annotations

import pathlib
from textwrap import dedent

import numpy as np
import pytest

from benchmarks.half_table import HALVES, attempt, loop_node_tests
from tests.conformance import _as_array
from tests.corpus import Case, load_corpus
from loopc.fileio import load_arrays
from loopc.ir import Loop, parse, verify
from loopc.ir.interpret import interpret
from loopc.passes import DeadCode, PassManager
from loopc.passes.half_precision import SUMMED, WIDE_INTEGERS, HalfPrecision
from loopc.trt import is_rtx

CORPUS_CASES = ["torch/linear_attention", "torch/retention_decay", "tf2onnx/keras_lstm", "paddle/paddle_gru",
                "torch/scan_rnn", "onnxscript/onnxscript_if_in_loop", "tf2onnx/tf_while_nested_rnn",
                "torch/greedy_decoder"]
NODE_TESTS = ["test_linear_attention_delta_expanded", "test_linear_attention_explicit_scale_expanded"]
CASES = {case.id: case for case in load_corpus(pathlib.Path(__file__).resolve().parent / "models")}

needs_rtx = pytest.mark.skipif(not is_rtx(), reason="datacenter TensorRT types a half network itself (builder flag)")


@needs_rtx
@pytest.mark.parametrize("half", HALVES)
@pytest.mark.parametrize("case_id", CORPUS_CASES)
def test_a_corpus_model_builds_in_half_and_matches_its_framework(case_id: str, half: str) -> None:
    case: Case = CASES[case_id]
    result = attempt(case.model, load_arrays(case.inputs), load_arrays(case.expected), half, case.max_trips)
    assert result.built, result.detail
    assert result.within, result.detail


@needs_rtx
@pytest.mark.parametrize("half", HALVES)
@pytest.mark.parametrize("name", NODE_TESTS)
def test_onnx_linear_attention_builds_in_half_and_matches_the_test(name: str, half: str) -> None:
    (case,) = [c for c in loop_node_tests(name) if c.name == name]
    inputs, expected = case.data_sets[0]
    feeds = dict(zip([i.name for i in case.model.graph.input], map(_as_array, inputs)))
    oracle = {o.name: _as_array(a) for o, a in zip(case.model.graph.output, expected)}
    result = attempt(case.model, feeds, oracle, half, pinned=True)
    assert result.built, result.detail
    assert result.within, result.detail


#: Linear-attention scans written as ONNX text: ONNX's function ops (LayerNormalization, Softmax,
#: RMSNormalization) in the body, and a LayerNorm written out as jax2tf writes it, on activations near 300.
SCAN = """<ir_version: 10, opset_import: ["" : 23]>
g (float[6,2,8] x, float[2,8,8] s0) => (float[2,8,8] s, float[6,2,8] ys) {{
  wq = Constant <value = float[8,8] {{{wq}}}> ()
  wk = Constant <value = float[8,8] {{{wk}}}> ()
  wv = Constant <value = float[8,8] {{{wv}}}> ()
  gamma = Constant <value = float[8] {{1,1,1,1,1,1,1,1}}> ()
  beta = Constant <value = float[8] {{0,0,0,0,0,0,0,0}}> ()
  col = Constant <value = int64[1] {{-1}}> ()
  row = Constant <value = int64[1] {{-2}}> ()
  big = Constant <value = float {{300}}> ()
  eps = Constant <value = float {{0.001}}> ()
  s, ys = Scan <num_scan_inputs = 1, body = b (float[2,8,8] st, float[2,8] xt) => (float[2,8,8] st2, float[2,8] yt) {{
    {normalize}
    q = MatMul (xn, wq)
    k = MatMul (xn, wk)
    v = MatMul (xn, wv)
    ks = Softmax <axis = -1> (k)
    kc = Unsqueeze (ks, col)
    vr = Unsqueeze (v, row)
    outer = MatMul (kc, vr)
    st2 = Add (st, outer)
    qr = Unsqueeze (q, row)
    read = MatMul (qr, st2)
    o = Squeeze (read, row)
    yt = RMSNormalization <axis = -1> (o, gamma)
  }}> (s0, x)
}}"""
NORMALIZE = {
    "function_ops": "xn = LayerNormalization <axis = -1> (xt, gamma, beta)",
    "written_out": """xb = Mul (xt, big)
    mean = ReduceMean (xb, col)
    sq = Mul (xb, xb)
    msq = ReduceMean (sq, col)
    mean2 = Mul (mean, mean)
    var = Sub (msq, mean2)
    veps = Add (var, eps)
    root = Sqrt (veps)
    centered = Sub (xb, mean)
    xn = Div (centered, root)""",
}


@needs_rtx
@pytest.mark.parametrize("half", HALVES)
@pytest.mark.parametrize("normalize", NORMALIZE)
def test_a_normalized_linear_attention_scan_builds_in_half_and_matches_onnxruntime(normalize: str, half: str) -> None:
    import onnx.parser
    import onnxruntime as ort

    rng = np.random.default_rng(0)
    weights = {name: ", ".join(f"{w:.4f}" for w in rng.normal(size=64) * 0.4) for name in ("wq", "wk", "wv")}
    model = onnx.parser.parse_model(SCAN.format(normalize=NORMALIZE[normalize], **weights))
    feeds = {"x": rng.normal(size=(6, 2, 8)).astype(np.float32), "s0": np.zeros((2, 8, 8), np.float32)}
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    oracle = dict(zip(["s", "ys"], session.run(None, feeds)))
    result = attempt(model, feeds, oracle, half, pinned=True)
    assert result.built, result.detail
    assert result.within, result.detail


def test_casts_cross_a_linear_attention_loop_at_its_edges() -> None:
    """``S_t = S_{t-1} + k_t^T v_t; y_t = squeeze(q_t S_t)``: the products read half slices of sources cast
    before the loop (no Cast of a slice, or of a reshaped slice, in the body), and the stacked ``y`` carries the
    half product, cast to float32 after the loop; the state stays float32. Checked against NumPy in float32."""
    graph = parse(dedent("""
        graph main(%q: f32[5,2,4], %k: f32[5,2,4], %v: f32[5,2,4], %s0: f32[2,4,4]) -> (%ys, %s) {
          %n: i64[] = Constant() value=i64[]:[5]
          %col: i64[1] = Constant() value=i64[1]:[-1]
          %row: i64[1] = Constant() value=i64[1]:[-2]
          %s: f32[2,4,4], %ys: f32[5,2,4] = loop count=%n {
            iterator %q_t: f32[2,4] = %q[axis 0]
            iterator %k_t: f32[2,4] = %k[axis 0]
            iterator %v_t: f32[2,4] = %v[axis 0]
            recurrence %state: f32[2,4,4] = %s0 -> %next
            %kc: f32[2,4,1] = Unsqueeze(%k_t, %col)
            %vr: f32[2,1,4] = Unsqueeze(%v_t, %row)
            %outer: f32[2,4,4] = MatMul(%kc, %vr)
            %next: f32[2,4,4] = Add(%state, %outer)
            %qr: f32[2,1,4] = Unsqueeze(%q_t, %row)
            %read: f32[2,1,4] = MatMul(%qr, %next)
            %y: f32[2,4] = Squeeze(%read, %row)
            last %s = %state
            concat %ys = %y axis 0
          }
        }
    """).strip())
    verify(graph)
    HalfPrecision("fp16")(graph)
    graph = PassManager([DeadCode()]).run(graph)  # as a build does: the float32 slices left unread go
    loop = next(node for node in graph.nodes if isinstance(node, Loop))
    slices = {it.param for it in loop.iterators}
    for node in loop.body.nodes:
        if node.op == "Cast":
            moved = node.inputs[0]
            while moved is not None and moved.producer is not None and moved.producer.op == "Unsqueeze":
                moved = moved.producer.inputs[0]
            assert moved not in slices, f"{node.outputs[0].name} casts a slice inside the loop"
    assert {it.source.dtype for it in loop.iterators} == {np.dtype(np.float16)}
    (stacked,) = [out for out in loop.loop_outputs if out.kind == "concat"]
    assert stacked.value.dtype == np.dtype(np.float16) and stacked.value.producer.op == "Squeeze"  # type: ignore[union-attr]
    assert loop.recurrences[0].state.dtype == np.dtype(np.float32)
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(5, 2, 4)).astype(np.float32) for _ in range(3))
    s0 = np.zeros((2, 4, 4), np.float32)
    ys, s = interpret(graph, {"q": q, "k": k, "v": v, "s0": s0})
    state, want = s0, []
    for t in range(5):
        state = state + k[t][:, :, None] @ v[t][:, None, :]
        want.append((q[t][:, None, :] @ state)[:, 0, :])
    assert ys.dtype == np.float32 and s.dtype == np.float32
    np.testing.assert_allclose(ys, np.stack(want), atol=1e-2 * np.abs(want).max())
    np.testing.assert_allclose(s, state, atol=1e-2 * np.abs(state).max())


def test_a_written_out_normalization_keeps_its_squares_and_statistics_in_float32() -> None:
    """``(x - mean(x)) / sqrt(mean(x*x) - mean(x)**2 + eps)``, as jax2tf writes a LayerNorm, on activations near
    300: ``x*x`` passes float16's 65504 and the variance's difference cancels, so the squares and the statistics
    stay float32 while the normalized ``x - mean`` is half. Checked against NumPy in float32."""
    graph = parse(dedent("""
        graph main(%x: f32[3,16]) -> (%y) {
          %axes: i64[1] = Constant() value=i64[1]:[1]
          %eps: f32[] = Constant() value=f32[]:[0.001]
          %mean: f32[3,1] = ReduceMean(%x, %axes) keepdims=1
          %sq: f32[3,16] = Mul(%x, %x)
          %msq: f32[3,1] = ReduceMean(%sq, %axes) keepdims=1
          %mean2: f32[3,1] = Mul(%mean, %mean)
          %var: f32[3,1] = Sub(%msq, %mean2)
          %veps: f32[3,1] = Add(%var, %eps)
          %root: f32[3,1] = Sqrt(%veps)
          %inv: f32[3,1] = Reciprocal(%root)
          %centered: f32[3,16] = Sub(%x, %mean)
          %y: f32[3,16] = Mul(%centered, %inv)
        }
    """).strip())
    verify(graph)
    half = HalfPrecision("fp16")
    half(graph)
    verify(graph)
    dtypes = {v.name: v.dtype for _, node in graph.walk() for v in node.outputs}
    assert {dtypes[n] for n in ("sq", "mean2", "var", "veps", "root", "inv")} == {np.dtype(np.float32)}
    assert dtypes["centered"] == np.dtype(np.float16)
    assert {k.node: k.reason for k in half.kept}["sq"] == SUMMED
    x = (300 + 100 * np.random.default_rng(0).normal(size=(3, 16))).astype(np.float32)
    (y,) = interpret(graph, {"x": x})
    want = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-3)
    np.testing.assert_allclose(y, want, atol=1e-2 * np.abs(want).max())


def test_integer_sums_are_scaled_in_float32() -> None:
    """An int32 MatMulInteger sum (here an input near a million) cast to float and scaled down: float16 holds
    65504, so the scaling Mul computes in float32 and the product after it in half."""
    graph = parse(dedent("""
        graph main(%acc: i32[2,4], %w: f32[4,3]) -> (%z) {
          %scale: f32[] = Constant() value=f32[]:[0.000001]
          %f: f32[2,4] = Cast(%acc) to=1
          %y: f32[2,4] = Mul(%f, %scale)
          %z: f32[2,3] = MatMul(%y, %w)
        }
    """).strip())
    verify(graph)
    half = HalfPrecision("fp16")
    half(graph)
    verify(graph)
    dtypes = {v.name: v.dtype for _, node in graph.walk() for v in node.outputs}
    assert dtypes["y"] == np.dtype(np.float32) and dtypes["z_f16"] == np.dtype(np.float16)  # z: cast at the edge
    assert {k.node: k.reason for k in half.kept}["y"] == WIDE_INTEGERS
    rng = np.random.default_rng(0)
    acc, w = rng.integers(-2_000_000, 2_000_000, size=(2, 4)).astype(np.int32), rng.normal(size=(4, 3)).astype(np.float32)
    (z,) = interpret(graph, {"acc": acc, "w": w})
    want = (acc.astype(np.float32) * 1e-6) @ w
    assert np.isfinite(z).all()
    np.testing.assert_allclose(z, want, atol=1e-2 * np.abs(want).max())

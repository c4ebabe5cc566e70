"""Write the OpenVINO IR samples in this folder, with OpenVINO itself.

    python samples/openvino/make_samples.py        # needs openvino, onnx and numpy (loopc's test extra)

Three sources, each the way real IRs are made:

- the OpenVINO opset API (``openvino.opset13``) saved with ``openvino.save_model``: every
  TensorIterator-1 / Loop-5 port_map form OpenVINO's CPU plugin runs, nesting, If-8 in a body, the
  ``*Sequence-5`` RNN ops, one IR with f16-compressed weights and one written as IR v10;
- the TensorIterator-1 specification's own example (an LSTMCell over 1x25x512), written as XML by
  hand (``seed_ti_lstm``: typed Consts, W and R split, weights stored as f16 Const -> Convert);
- ``openvino.convert_model`` on ONNX models this script writes with ``onnx.helper`` (Loop, Scan,
  LSTM/GRU/RNN), as users convert them.

Each sample is ``<name>.xml`` + ``<name>.bin`` with example inputs ``<name>_inputs.npz`` keyed by
OpenVINO's input tensor names; ``cases.toml`` lists them with the forms each one exercises. Every
IR is read back and run on OpenVINO's CPU plugin (f32 inference precision) before the script
finishes, so a sample OpenVINO cannot run is never written silently. Seeds are fixed: rerunning
rewrites the same files.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import openvino as ov
import openvino.opset13 as ops
from onnx import TensorProto, helper

HERE = Path(__file__).resolve().parent
CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}
F32, I32, I64 = np.float32, np.int32, np.int64


@dataclass
class Sample:
    """One IR to write: the model and its example inputs (by input tensor name), and how to save it."""

    model: ov.Model
    inputs: dict[str, np.ndarray]
    compress_to_fp16: bool = False
    ir_v10: bool = False
    extra_inputs: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # suffix -> inputs


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def randn(g: np.random.Generator, *shape: int, scale: float = 0.5) -> np.ndarray:
    return (scale * g.standard_normal(shape)).astype(F32)


def const(value: object, dtype: type = F32) -> ov.Node:
    return ops.constant(np.asarray(value, dtype=dtype))


def param(name: str, shape: list[int], dtype: type = F32) -> ov.Node:
    return ops.parameter(shape, dtype, name=name)


def named(node_or_output: ov.Node | ov.Output, name: str) -> ov.Output:
    """Give a graph output its tensor name (what ``get_any_name()`` returns) and return it."""
    out = node_or_output.output(0) if isinstance(node_or_output, ov.Node) else node_or_output
    out.get_tensor().set_names({name})
    return out


def model(outputs: list[tuple[str, ov.Output | ov.Node]], params: list[ov.Node], name: str) -> ov.Model:
    return ov.Model([ops.result(named(o, n)) for n, o in outputs], params, name)


def axes(*v: int) -> ov.Node:
    return const(v, I64)


def last(loop: ov.Node, result: ov.Node) -> ov.Output:
    """A Loop/TensorIterator output: the body result's value in the last iteration."""
    return loop.get_iter_value(result.output(0), -1)


def cat(loop: ov.Node, result: ov.Node, axis: int) -> ov.Output:
    """A Loop/TensorIterator output: the body result of every iteration, concatenated on ``axis``."""
    return loop.get_concatenated_slices(result.output(0), 0, 1, 1, -1, axis)


# ------------------------------------------------------------------------------ TensorIterator-1
def ti_lstm_cell() -> Sample:
    """LSTMCell-4 over X [2, 5, 3] sliced on axis 1; h and c carried by back edges."""
    g = rng(1)
    b, t, i, h = 2, 5, 3, 4
    X, H0, C0 = param("X", [b, t, i]), param("H0", [b, h]), param("C0", [b, h])
    xb, hb, cb = param("x", [b, 1, i]), param("h", [b, h]), param("c", [b, h])
    cell = ops.lstm_cell(ops.squeeze(xb, axes(1)), hb, cb, const(randn(g, 4 * h, i)), const(randn(g, 4 * h, h)),
                         const(randn(g, 4 * h)), h)
    r_h, r_c = ops.result(cell.output(0)), ops.result(cell.output(1))
    r_y = ops.result(ops.unsqueeze(cell.output(0), axes(1)))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_h, r_c, r_y], [xb, hb, cb], "body"))
    ti.set_sliced_input(xb, X.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(hb, H0.output(0), r_h.output(0))
    ti.set_merged_input(cb, C0.output(0), r_c.output(0))
    outs = [("Y", cat(ti, r_y, 1)),
            ("H_T", last(ti, r_h)), ("C_T", last(ti, r_c))]
    return Sample(model(outs, [X, H0, C0], "ti_lstm_cell"),
                  {"X": randn(g, b, t, i, scale=1.0), "H0": randn(g, b, h), "C0": randn(g, b, h)})


def ti_gru_cell() -> Sample:
    """GRUCell-3 (linear_before_reset) over time-major X [5, 2, 3] sliced on axis 0; concat on axis 0."""
    g = rng(2)
    t, b, i, h = 5, 2, 3, 4
    X, H0 = param("X", [t, b, i]), param("H0", [b, h])
    xb, hb = param("x", [1, b, i]), param("h", [b, h])
    cell = ops.gru_cell(ops.squeeze(xb, axes(0)), hb, const(randn(g, 3 * h, i)), const(randn(g, 3 * h, h)),
                        const(randn(g, 4 * h)), h, linear_before_reset=True)
    r_h, r_y = ops.result(cell.output(0)), ops.result(ops.unsqueeze(cell.output(0), axes(0)))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_h, r_y], [xb, hb], "body"))
    ti.set_sliced_input(xb, X.output(0), 0, 1, 1, -1, 0)
    ti.set_merged_input(hb, H0.output(0), r_h.output(0))
    outs = [("Y", cat(ti, r_y, 0)), ("H_T", last(ti, r_h))]
    return Sample(model(outs, [X, H0], "ti_gru_cell"), {"X": randn(g, t, b, i, scale=1.0), "H0": randn(g, b, h)})


def ti_rnn_cell() -> Sample:
    """RNNCell (written as opset1) with tanh over X [2, 6, 3] sliced on axis 1."""
    g = rng(3)
    b, t, i, h = 2, 6, 3, 5
    X, H0 = param("X", [b, t, i]), param("H0", [b, h])
    xb, hb = param("x", [b, 1, i]), param("h", [b, h])
    cell = ops.rnn_cell(ops.squeeze(xb, axes(1)), hb, const(randn(g, h, i)), const(randn(g, h, h)), const(randn(g, h)),
                        h, ["tanh"], [], [])
    r_h, r_y = ops.result(cell.output(0)), ops.result(ops.unsqueeze(cell.output(0), axes(1)))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_h, r_y], [xb, hb], "body"))
    ti.set_sliced_input(xb, X.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(hb, H0.output(0), r_h.output(0))
    outs = [("Y", cat(ti, r_y, 1)), ("H_T", last(ti, r_h))]
    return Sample(model(outs, [X, H0], "ti_rnn_cell"), {"X": randn(g, b, t, i, scale=1.0), "H0": randn(g, b, h)})


def ti_reverse() -> Sample:
    """X [6, 3] sliced backwards (start -1, end 0, stride -1): a reversed concat output (aligned with
    X) and a forward one (processing order) of the same value, and its last value."""
    X, A0 = param("X", [6, 3]), param("A0", [1, 3])
    xb, ab = param("x", [1, 3]), param("a", [1, 3])
    a_next = ops.add(ops.multiply(ab, const(0.5)), xb)
    r_a = ops.result(a_next)
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_a], [xb, ab], "body"))
    ti.set_sliced_input(xb, X.output(0), -1, -1, 1, 0, 0)
    ti.set_merged_input(ab, A0.output(0), r_a.output(0))
    outs = [("aligned", ti.get_concatenated_slices(r_a.output(0), -1, -1, 1, 0, 0)),
            ("processed", cat(ti, r_a, 0)),
            ("last", last(ti, r_a))]
    return Sample(model(outs, [X, A0], "ti_reverse"),
                  {"X": np.arange(18, dtype=F32).reshape(6, 3), "A0": np.array([[1.0, -1.0, 0.5]], F32)})


def ti_part_size_2() -> Sample:
    """part_size = stride = 2: X [1, 6, 2] forward on axis 1, Z [3, 6] backward (stride -2) on axis 1;
    concat outputs of width 2 forward and backward."""
    g = rng(5)
    X, Z, S0 = param("X", [1, 6, 2]), param("Z", [3, 6]), param("S0", [1, 2, 2])
    xb, zb, sb = param("x", [1, 2, 2]), param("z", [3, 2]), param("s", [1, 2, 2])
    s_next = ops.add(ops.multiply(sb, const(0.5)), xb)
    z_next = ops.multiply(zb, ops.reduce_sum(s_next, axes(0, 1, 2), False))
    r_s, r_z = ops.result(s_next), ops.result(z_next)
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_s, r_z], [xb, zb, sb], "body"))
    ti.set_sliced_input(xb, X.output(0), 0, 2, 2, -1, 1)
    ti.set_sliced_input(zb, Z.output(0), -1, -2, 2, 0, 1)
    ti.set_merged_input(sb, S0.output(0), r_s.output(0))
    outs = [("S_all", ti.get_concatenated_slices(r_s.output(0), 0, 2, 2, -1, 1)),
            ("Z_all", ti.get_concatenated_slices(r_z.output(0), -1, -2, 2, 0, 1)),
            ("S_T", last(ti, r_s))]
    return Sample(model(outs, [X, Z, S0], "ti_part_size_2"),
                  {"X": randn(g, 1, 6, 2, scale=1.0), "Z": randn(g, 3, 6, scale=1.0), "S0": randn(g, 1, 2, 2)})


def ti_concat_axes() -> Sample:
    """One per-iteration value concatenated on axis 0, 1 and 2 (three outputs)."""
    X, A0 = param("X", [4, 3]), param("A0", [1, 3])
    xb, ab = param("x", [1, 3]), param("a", [1, 3])
    a_next = ops.add(ops.multiply(ab, xb), const(1.0))
    r_a = ops.result(a_next)
    r0 = ops.result(ops.negative(a_next))                                      # [1, 3]    -> [4, 3]
    r1 = ops.result(ops.reshape(a_next, axes(3, 1, 1), False))                  # [3, 1, 1] -> [3, 4, 1]
    r2 = ops.result(ops.reshape(ops.multiply(a_next, const(2.0)), axes(1, 3, 1), False))  # -> [1, 3, 4]
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_a, r0, r1, r2], [xb, ab], "body"))
    ti.set_sliced_input(xb, X.output(0), 0, 1, 1, -1, 0)
    ti.set_merged_input(ab, A0.output(0), r_a.output(0))
    outs = [("cat0", cat(ti, r0, 0)),
            ("cat1", cat(ti, r1, 1)),
            ("cat2", cat(ti, r2, 2))]
    return Sample(model(outs, [X, A0], "ti_concat_axes"),
                  {"X": randn(rng(6), 4, 3, scale=1.0), "A0": np.array([[0.5, 1.0, -1.0]], F32)})


# ---------------------------------------------------------------------------------------- Loop-5
def loop(trip: ov.Node, cond: ov.Node, body: ov.Model, iteration: int, condition: int) -> ov.Node:
    """A Loop-5 node; ``iteration``/``condition`` are the body Parameter/Result indices (-1: none)."""
    node = ops.loop(trip, cond)
    node.set_function(body)
    node.set_special_body_ports([iteration, condition])
    return node


def true() -> ov.Node:
    return const(True, np.bool_)


def loop_iter_i64() -> Sample:
    """Constant trip count 4; current_iteration an i64 scalar used as data: y += x * (i + 1)."""
    X, Y0 = param("X", [3]), param("Y0", [3])
    it, xb, yb = param("i", [], I64), param("x", [3]), param("y", [3])
    y_next = ops.add(yb, ops.multiply(xb, ops.convert(ops.add(it, const(1, I64)), "f32")))
    r_c, r_y, r_s = ops.result(true()), ops.result(y_next), ops.result(ops.unsqueeze(y_next, axes(0)))
    lp = loop(const(4, I64), true(), ov.Model([r_c, r_y, r_s], [it, xb, yb], "body"), 0, 0)
    lp.set_invariant_input(xb, X.output(0))
    lp.set_merged_input(yb, Y0.output(0), r_y.output(0))
    outs = [("Y", last(lp, r_y)), ("Y_all", cat(lp, r_s, 0))]
    return Sample(model(outs, [X, Y0], "loop_iter_i64"),
                  {"X": np.array([1.0, -2.0, 0.5], F32), "Y0": np.array([0.0, 1.0, 2.0], F32)})


def loop_iter_i32() -> Sample:
    """i32 scalar trip count 5; current_iteration i32 [1] gathers row i of an invariant table."""
    T, A0 = param("T", [5, 2]), param("A0", [1, 2])
    it, tb, ab = param("i", [1], I32), param("t", [5, 2]), param("a", [1, 2])
    row = ops.gather(tb, it, const(0, I64))                                      # [1, 2]
    a_next = ops.add(ops.multiply(ab, const(0.9)), row)
    r_c, r_a, r_row = ops.result(true()), ops.result(a_next), ops.result(row)
    lp = loop(const(5, I32), true(), ov.Model([r_c, r_a, r_row], [it, tb, ab], "body"), 0, 0)
    lp.set_invariant_input(tb, T.output(0))
    lp.set_merged_input(ab, A0.output(0), r_a.output(0))
    outs = [("A", last(lp, r_a)), ("rows", cat(lp, r_row, 0))]
    return Sample(model(outs, [T, A0], "loop_iter_i32"),
                  {"T": randn(rng(8), 5, 2, scale=1.0), "A0": np.array([[1.0, 2.0]], F32)})


def loop_while() -> Sample:
    """Trip count -1 (unbounded): runs while sum(x) < limit, x = 1.5 x + 1; a step counter, the last x
    and every x concatenated (its length known only at run time)."""
    X0, L = param("X0", [3]), param("limit", [])
    xb, kb, lb = param("x", [3]), param("k", [], I64), param("lim", [])
    x_next = ops.add(ops.multiply(xb, const(1.5)), const(1.0))
    cond = ops.less(ops.reduce_sum(x_next, axes(0), False), lb)
    r_c, r_x, r_k = ops.result(cond), ops.result(x_next), ops.result(ops.add(kb, const(1, I64)))
    r_s = ops.result(ops.unsqueeze(x_next, axes(0)))
    lp = loop(const(-1, I64), true(), ov.Model([r_c, r_x, r_k, r_s], [xb, kb, lb], "body"), -1, 0)
    lp.set_merged_input(xb, X0.output(0), r_x.output(0))
    lp.set_merged_input(kb, const(0, I64).output(0), r_k.output(0))
    lp.set_invariant_input(lb, L.output(0))
    outs = [("X", last(lp, r_x)), ("steps", last(lp, r_k)),
            ("X_all", cat(lp, r_s, 0))]
    return Sample(model(outs, [X0, L], "loop_while"),
                  {"X0": np.array([0.5, 1.0, -0.25], F32), "limit": np.array(60.0, F32)})


def loop_runtime_trips() -> Sample:
    """Trip count from an input n (i64 scalar): s = s * 0.5 + x; last value and concat. The second
    inputs file runs it with n = 0: s keeps its initial value and the concat output is empty."""
    N, X, S0 = param("n", [], I64), param("X", [2]), param("S0", [2])
    xb, sb = param("x", [2]), param("s", [2])
    s_next = ops.add(ops.multiply(sb, const(0.5)), xb)
    r_c, r_s, r_cat = ops.result(true()), ops.result(s_next), ops.result(ops.unsqueeze(s_next, axes(0)))
    lp = loop(N, true(), ov.Model([r_c, r_s, r_cat], [xb, sb], "body"), -1, 0)
    lp.set_invariant_input(xb, X.output(0))
    lp.set_merged_input(sb, S0.output(0), r_s.output(0))
    outs = [("S", last(lp, r_s)), ("S_all", cat(lp, r_cat, 0))]
    base = {"X": np.array([1.0, -3.0], F32), "S0": np.array([4.0, 8.0], F32)}
    return Sample(model(outs, [N, X, S0], "loop_runtime_trips"), {"n": np.array(4, I64), **base},
                  extra_inputs={"zero": {"n": np.array(0, I64), **base}})


def loop_sliced_input() -> Sample:
    """X [5, 2] sliced on axis 0 by a Loop (trip count 5); a carried sum and a non-carried last value
    (the last slice, doubled)."""
    X = param("X", [5, 2])
    xb, ab = param("x", [1, 2]), param("a", [1, 2])
    a_next = ops.add(ab, xb)
    r_c, r_a, r_d = ops.result(true()), ops.result(a_next), ops.result(ops.multiply(xb, const(2.0)))
    lp = loop(const(5, I64), true(), ov.Model([r_c, r_a, r_d], [xb, ab], "body"), -1, 0)
    lp.set_sliced_input(xb, X.output(0), 0, 1, 1, -1, 0)
    lp.set_merged_input(ab, const(np.zeros((1, 2))).output(0), r_a.output(0))
    outs = [("A", last(lp, r_a)), ("A_all", cat(lp, r_a, 0)),
            ("last_x2", last(lp, r_d))]
    return Sample(model(outs, [X], "loop_sliced_input"), {"X": randn(rng(10), 5, 2, scale=1.0)})


def loop_invariant() -> Sample:
    """h = tanh(h @ W + b) six times with W an invariant input; the pre-activation z is a non-carried
    last-value output."""
    g = rng(11)
    W, H0 = param("W", [3, 3]), param("H0", [1, 3])
    wb, hb = param("w", [3, 3]), param("h", [1, 3])
    z = ops.add(ops.matmul(hb, wb, False, False), const(randn(g, 1, 3)))
    h_next = ops.tanh(z)
    r_c, r_h, r_z = ops.result(true()), ops.result(h_next), ops.result(z)
    lp = loop(const(6, I64), true(), ov.Model([r_c, r_h, r_z], [wb, hb], "body"), -1, 0)
    lp.set_invariant_input(wb, W.output(0))
    lp.set_merged_input(hb, H0.output(0), r_h.output(0))
    outs = [("H", last(lp, r_h)), ("Z", last(lp, r_z))]
    return Sample(model(outs, [W, H0], "loop_invariant"), {"W": randn(g, 3, 3, scale=0.8), "H0": randn(g, 1, 3)})


def loop_in_loop() -> Sample:
    """Outer i in 0..N-1; the inner Loop runs i + 1 trips (from the outer current_iteration):
    acc += x * (10 i + j); the outer loop concatenates acc after each inner loop."""
    N, X = param("N", [], I64), param("X", [2])
    oi, oacc, ox = param("i", [], I64), param("acc", [2]), param("x", [2])
    ij, iacc, ibase, ix = param("j", [], I64), param("iacc", [2]), param("base", []), param("ix", [2])
    iacc_next = ops.add(iacc, ops.multiply(ix, ops.add(ibase, ops.convert(ij, "f32"))))
    r_ic, r_iacc = ops.result(true()), ops.result(iacc_next)
    inner = loop(ops.add(oi, const(1, I64)), true(), ov.Model([r_ic, r_iacc], [ij, iacc, ibase, ix], "inner"), 0, 0)
    inner.set_merged_input(iacc, oacc.output(0), r_iacc.output(0))
    inner.set_invariant_input(ibase, ops.multiply(ops.convert(oi, "f32"), const(10.0)).output(0))
    inner.set_invariant_input(ix, ox.output(0))
    acc_after = last(inner, r_iacc)
    r_oc, r_oacc, r_trace = ops.result(true()), ops.result(acc_after), ops.result(ops.unsqueeze(acc_after, axes(0)))
    outer = loop(N, true(), ov.Model([r_oc, r_oacc, r_trace], [oi, oacc, ox], "outer"), 0, 0)
    outer.set_merged_input(oacc, const(np.zeros(2)).output(0), r_oacc.output(0))
    outer.set_invariant_input(ox, X.output(0))
    outs = [("acc", last(outer, r_oacc)),
            ("trace", cat(outer, r_trace, 0))]
    return Sample(model(outs, [N, X], "loop_in_loop"), {"N": np.array(3, I64), "X": np.array([1.0, -0.5], F32)})


def ti_in_loop() -> Sample:
    """A Loop (3 trips) whose body runs a TensorIterator over the rows of an invariant X [4, 2],
    starting from the outer carried state and scaled by the outer iteration number."""
    X, S0 = param("X", [4, 2]), param("S0", [1, 2])
    oi, os_, ox = param("i", [], I64), param("s", [1, 2]), param("x", [4, 2])
    xr, ts, tk = param("row", [1, 2]), param("ts", [1, 2]), param("k", [])
    ts_next = ops.add(ops.multiply(ts, const(0.5)), ops.multiply(xr, tk))
    r_ts = ops.result(ts_next)
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_ts], [xr, ts, tk], "inner"))
    ti.set_sliced_input(xr, ox.output(0), 0, 1, 1, -1, 0)
    ti.set_merged_input(ts, os_.output(0), r_ts.output(0))
    ti.set_invariant_input(tk, ops.convert(ops.add(oi, const(1, I64)), "f32").output(0))
    s_after = last(ti, r_ts)
    r_c, r_s = ops.result(true()), ops.result(s_after)
    outer = loop(const(3, I64), true(), ov.Model([r_c, r_s], [oi, os_, ox], "outer"), 0, 0)
    outer.set_merged_input(os_, S0.output(0), r_s.output(0))
    outer.set_invariant_input(ox, X.output(0))
    outs = [("S", last(outer, r_s)), ("S_all", cat(outer, r_s, 0))]
    return Sample(model(outs, [X, S0], "ti_in_loop"),
                  {"X": randn(rng(13), 4, 2, scale=1.0), "S0": np.array([[1.0, -1.0]], F32)})


def loop_in_ti() -> Sample:
    """A TensorIterator over the rows of X [4, 2] whose body runs a Loop (3 trips): y = y * 2 + 1."""
    X = param("X", [4, 2])
    xb, yb = param("x", [1, 2]), param("y", [1, 2])
    r_c, r_y = ops.result(true()), ops.result(ops.add(ops.multiply(yb, const(2.0)), const(1.0)))
    lp = loop(const(3, I64), true(), ov.Model([r_c, r_y], [yb], "inner"), -1, 0)
    lp.set_merged_input(yb, xb.output(0), r_y.output(0))
    r = ops.result(last(lp, r_y))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r], [xb], "outer"))
    ti.set_sliced_input(xb, X.output(0), 0, 1, 1, -1, 0)
    outs = [("Y", cat(ti, r, 0))]
    return Sample(model(outs, [X], "loop_in_ti"), {"X": randn(rng(14), 4, 2, scale=1.0)})


def loop_if() -> Sample:
    """If-8 in a Loop body on data: while sum(y) > limit halve y, else add x (6 trips)."""
    X, Y0, L = param("X", [3]), param("Y0", [3]), param("limit", [])
    xb, yb, lb = param("x", [3]), param("y", [3]), param("lim", [])
    then_y, then_x = param("ty", [3]), param("tx", [3])
    else_y, else_x = param("ey", [3]), param("ex", [3])
    r_then = ops.result(ops.multiply(then_y, const(0.5)))
    r_else = ops.result(ops.add(else_y, else_x))
    branch = ops.if_op(ops.greater(ops.reduce_sum(yb, axes(0), False), lb).output(0))  # an Output: given a Node
    # that is not a Parameter, if_op silently builds an If without its condition input
    branch.set_then_body(ov.Model([r_then], [then_y, then_x], "then"))
    branch.set_else_body(ov.Model([r_else], [else_y, else_x], "else"))
    branch.set_input(yb.output(0), then_y, else_y)
    branch.set_input(xb.output(0), then_x, else_x)
    y_next = branch.set_output(r_then, r_else)
    r_c, r_y, r_s = ops.result(true()), ops.result(y_next), ops.result(ops.unsqueeze(y_next, axes(0)))
    lp = loop(const(6, I64), true(), ov.Model([r_c, r_y, r_s], [xb, yb, lb], "body"), -1, 0)
    lp.set_invariant_input(xb, X.output(0))
    lp.set_merged_input(yb, Y0.output(0), r_y.output(0))
    lp.set_invariant_input(lb, L.output(0))
    outs = [("Y", last(lp, r_y)), ("Y_all", cat(lp, r_s, 0))]
    return Sample(model(outs, [X, Y0, L], "loop_if"),
                  {"X": np.array([1.0, 2.0, 0.5], F32), "Y0": np.array([0.0, 1.0, 0.0], F32),
                   "limit": np.array(5.0, F32)})


def loop_fp16_weights() -> Sample:
    """An Elman RNN as a Loop over X [6, 3] sliced on axis 0; weights saved as f16 Const -> Convert."""
    g = rng(16)
    X, H0 = param("X", [6, 3]), param("H0", [1, 4])
    xb, hb = param("x", [1, 3]), param("h", [1, 4])
    h_next = ops.tanh(ops.add(ops.add(ops.matmul(xb, const(randn(g, 3, 4)), False, False),
                                      ops.matmul(hb, const(randn(g, 4, 4)), False, False)), const(randn(g, 1, 4))))
    r_c, r_h = ops.result(true()), ops.result(h_next)
    lp = loop(const(6, I64), true(), ov.Model([r_c, r_h], [xb, hb], "body"), -1, 0)
    lp.set_sliced_input(xb, X.output(0), 0, 1, 1, -1, 0)
    lp.set_merged_input(hb, H0.output(0), r_h.output(0))
    outs = [("Y", cat(lp, r_h, 0)), ("H_T", last(lp, r_h))]
    return Sample(model(outs, [X, H0], "loop_fp16_weights"), {"X": randn(g, 6, 3, scale=1.0), "H0": randn(g, 1, 4)},
                  compress_to_fp16=True)


def loop_ir_v10() -> Sample:
    """A counted Loop with a carried value and a concat output, written as IR v10 (f32 I/O only:
    reading v10 changes i64 outputs to i32)."""
    X = param("X", [2, 2])
    it, xb = param("i", [], I64), param("x", [2, 2])
    x_next = ops.add(ops.multiply(xb, const(0.5)), ops.convert(it, "f32"))
    r_c, r_x, r_s = ops.result(true()), ops.result(x_next), ops.result(ops.unsqueeze(x_next, axes(0)))
    lp = loop(const(3, I64), true(), ov.Model([r_c, r_x, r_s], [it, xb], "body"), 0, 0)
    lp.set_merged_input(xb, X.output(0), r_x.output(0))
    outs = [("X_T", last(lp, r_x)), ("X_all", cat(lp, r_s, 0))]
    return Sample(model(outs, [X], "loop_ir_v10"), {"X": np.array([[1.0, 2.0], [3.0, 4.0]], F32)}, ir_v10=True)


# ------------------------------------------------------------------------------- *Sequence-5
def lstm_sequence_bidirectional() -> Sample:
    """LSTMSequence-5, bidirectional, batch 2, T 4, full sequence lengths."""
    g = rng(20)
    b, t, i, h = 2, 4, 3, 3
    X, H0, C0 = param("X", [b, t, i]), param("H0", [b, 2, h]), param("C0", [b, 2, h])
    seq = ops.lstm_sequence(X, H0, C0, const([t] * b, I32), const(randn(g, 2, 4 * h, i)), const(randn(g, 2, 4 * h, h)),
                            const(randn(g, 2, 4 * h)), h, "bidirectional")
    outs = [("Y", seq.output(0)), ("H_T", seq.output(1)), ("C_T", seq.output(2))]
    return Sample(model(outs, [X, H0, C0], "lstm_sequence_bidirectional"),
                  {"X": randn(g, b, t, i, scale=1.0), "H0": randn(g, b, 2, h), "C0": randn(g, b, 2, h)})


def gru_sequence_lengths() -> Sample:
    """GRUSequence-5 forward with per-batch sequence lengths given as an input ([5, 2] of T = 5)."""
    g = rng(21)
    b, t, i, h = 2, 5, 3, 4
    X, H0, L = param("X", [b, t, i]), param("H0", [b, 1, h]), param("lengths", [b], I32)
    seq = ops.gru_sequence(X, H0, L, const(randn(g, 1, 3 * h, i)), const(randn(g, 1, 3 * h, h)),
                           const(randn(g, 1, 3 * h)), h, "forward")
    outs = [("Y", seq.output(0)), ("H_T", seq.output(1))]
    return Sample(model(outs, [X, H0, L], "gru_sequence_lengths"),
                  {"X": randn(g, b, t, i, scale=1.0), "H0": randn(g, b, 1, h), "lengths": np.array([5, 2], I32)})


def rnn_sequence_reverse() -> Sample:
    """RNNSequence-5, direction reverse, tanh, batch 2, T 5."""
    g = rng(22)
    b, t, i, h = 2, 5, 3, 4
    X, H0 = param("X", [b, t, i]), param("H0", [b, 1, h])
    seq = ops.rnn_sequence(X, H0, const([t] * b, I64), const(randn(g, 1, h, i)), const(randn(g, 1, h, h)),
                           const(randn(g, 1, h)), h, "reverse")
    outs = [("Y", seq.output(0)), ("H_T", seq.output(1))]
    return Sample(model(outs, [X, H0], "rnn_sequence_reverse"),
                  {"X": randn(g, b, t, i, scale=1.0), "H0": randn(g, b, 1, h)})


# -------------------------------------------------------- the TensorIterator-1 spec's example
SEED_T, SEED_I, SEED_H = 25, 512, 256


def _port(pid: int, dims: list[int], precision: str | None = None, names: str | None = None) -> str:
    attrs = (f' precision="{precision}"' if precision else "") + (f' names="{names}"' if names else "")
    return f'<port id="{pid}"{attrs}>' + "".join(f"<dim>{d}</dim>" for d in dims) + "</port>"


def _const(lid: int, name: str, offset: int, array: np.ndarray, et: str, precision: str) -> str:
    dims = list(array.shape)
    return (f'<layer id="{lid}" name="{name}" type="Const" version="opset1">'
            f'<data element_type="{et}" shape="{", ".join(map(str, dims))}" offset="{offset}" size="{array.nbytes}"/>'
            f'<output>{_port(1, dims, precision)}</output></layer>')


def _convert(lid: int, name: str, dims: list[int]) -> str:
    return (f'<layer id="{lid}" name="{name}" type="Convert" version="opset1"><data destination_type="f32"/>'
            '<rt_info><attribute name="decompression" version="0"/></rt_info>'
            f'<input>{_port(0, dims, "FP16")}</input><output>{_port(1, dims, "FP32")}</output></layer>')


def seed_ti_lstm_files() -> tuple[str, bytes, dict[str, np.ndarray], tuple[np.ndarray, ...]]:
    """The TensorIterator-1 spec's full example as a loadable IR: the spec's layer ids and port_map
    (X 1x25x512 sliced on axis 1, back edges c 8->4 and h 9->3, Y concatenated on axis 1), with typed
    Consts, LSTMCell's W [1024, 512] and R [1024, 256] split (the spec feeds one 1024x768 matrix), and
    the weights stored as f16 Const -> Convert to keep the file small."""
    T, I, H = SEED_T, SEED_I, SEED_H
    g = rng(7)
    W = (0.05 * g.standard_normal((4 * H, I))).astype(np.float16)
    R = (0.05 * g.standard_normal((4 * H, H))).astype(np.float16)
    B = (0.05 * g.standard_normal(4 * H)).astype(np.float16)
    shape2, shape3 = np.array([1, I], I64), np.array([1, 1, H], I64)
    blobs = [shape2, W, R, B, shape3]
    offsets = np.cumsum([0] + [a.nbytes for a in blobs]).tolist()
    o_s2, o_w, o_r, o_b, o_s3 = offsets[:5]
    cell_in = [_port(0, [1, I]), _port(1, [1, H]), _port(2, [1, H]), _port(3, [4 * H, I]), _port(4, [4 * H, H]),
               _port(5, [4 * H])]
    body = (
        '<body><layers>'
        f'<layer id="0" name="x" type="Parameter" version="opset1"><data shape="1,1,{I}" element_type="f32"/>'
        f'<output>{_port(0, [1, 1, I], "FP32")}</output></layer>'
        + _const(1, "shape2", o_s2, shape2, "i64", "I64") +
        '<layer id="2" name="reshape_in" type="Reshape" version="opset1"><data special_zero="false"/>'
        f'<input>{_port(0, [1, 1, I])}{_port(1, [2])}</input><output>{_port(2, [1, I], "FP32")}</output></layer>'
        f'<layer id="3" name="h" type="Parameter" version="opset1"><data shape="1,{H}" element_type="f32"/>'
        f'<output>{_port(0, [1, H], "FP32")}</output></layer>'
        f'<layer id="4" name="c" type="Parameter" version="opset1"><data shape="1,{H}" element_type="f32"/>'
        f'<output>{_port(0, [1, H], "FP32")}</output></layer>'
        + _const(5, "W_compressed", o_w, W, "f16", "FP16") + _convert(14, "W", [4 * H, I])
        + _const(13, "R_compressed", o_r, R, "f16", "FP16") + _convert(15, "R", [4 * H, H])
        + _const(6, "B_compressed", o_b, B, "f16", "FP16") + _convert(16, "B", [4 * H]) +
        f'<layer id="7" name="cell" type="LSTMCell" version="opset1"><data hidden_size="{H}"/>'
        f'<input>{"".join(cell_in)}</input>'
        f'<output>{_port(6, [1, H], "FP32")}{_port(7, [1, H], "FP32")}</output></layer>'
        f'<layer id="8" name="c_out" type="Result" version="opset1"><input>{_port(0, [1, H])}</input></layer>'
        f'<layer id="9" name="h_out" type="Result" version="opset1"><input>{_port(0, [1, H])}</input></layer>'
        + _const(10, "shape3", o_s3, shape3, "i64", "I64") +
        '<layer id="11" name="reshape_out" type="Reshape" version="opset1"><data special_zero="false"/>'
        f'<input>{_port(0, [1, H])}{_port(1, [3])}</input><output>{_port(2, [1, 1, H], "FP32")}</output></layer>'
        f'<layer id="12" name="y_out" type="Result" version="opset1"><input>{_port(0, [1, 1, H])}</input></layer>'
        '</layers><edges>'
        '<edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>'
        '<edge from-layer="1" from-port="1" to-layer="2" to-port="1"/>'
        '<edge from-layer="2" from-port="2" to-layer="7" to-port="0"/>'
        '<edge from-layer="3" from-port="0" to-layer="7" to-port="1"/>'
        '<edge from-layer="4" from-port="0" to-layer="7" to-port="2"/>'
        '<edge from-layer="5" from-port="1" to-layer="14" to-port="0"/>'
        '<edge from-layer="13" from-port="1" to-layer="15" to-port="0"/>'
        '<edge from-layer="6" from-port="1" to-layer="16" to-port="0"/>'
        '<edge from-layer="14" from-port="1" to-layer="7" to-port="3"/>'
        '<edge from-layer="15" from-port="1" to-layer="7" to-port="4"/>'
        '<edge from-layer="16" from-port="1" to-layer="7" to-port="5"/>'
        '<edge from-layer="7" from-port="7" to-layer="8" to-port="0"/>'
        '<edge from-layer="7" from-port="6" to-layer="9" to-port="0"/>'
        '<edge from-layer="7" from-port="6" to-layer="11" to-port="0"/>'
        '<edge from-layer="10" from-port="1" to-layer="11" to-port="1"/>'
        '<edge from-layer="11" from-port="2" to-layer="12" to-port="0"/>'
        '</edges></body>')
    ti = (
        '<layer id="3" name="ti" type="TensorIterator" version="opset1">'
        f'<input>{_port(0, [1, T, I])}{_port(1, [1, H])}{_port(2, [1, H])}</input>'
        f'<output>{_port(3, [1, T, H], "FP32", "Y")}</output>'
        '<port_map><input axis="1" external_port_id="0" internal_layer_id="0" start="0"/>'
        '<input external_port_id="1" internal_layer_id="3"/><input external_port_id="2" internal_layer_id="4"/>'
        '<output axis="1" external_port_id="3" internal_layer_id="12"/></port_map>'
        '<back_edges><edge from-layer="8" to-layer="4"/><edge from-layer="9" to-layer="3"/></back_edges>'
        + body + '</layer>')
    xml = (
        '<?xml version="1.0"?>\n<net name="seed_ti_lstm" version="11"><layers>'
        f'<layer id="0" name="X" type="Parameter" version="opset1"><data shape="1,{T},{I}" element_type="f32"/>'
        f'<output>{_port(0, [1, T, I], "FP32", "X")}</output></layer>'
        f'<layer id="1" name="H0" type="Parameter" version="opset1"><data shape="1,{H}" element_type="f32"/>'
        f'<output>{_port(0, [1, H], "FP32", "H0")}</output></layer>'
        f'<layer id="2" name="C0" type="Parameter" version="opset1"><data shape="1,{H}" element_type="f32"/>'
        f'<output>{_port(0, [1, H], "FP32", "C0")}</output></layer>'
        + ti +
        '<layer id="4" name="Y_result" type="Result" version="opset1" output_names="Y">'
        f'<input>{_port(0, [1, T, H])}</input></layer>'
        '</layers><edges>'
        '<edge from-layer="0" from-port="0" to-layer="3" to-port="0"/>'
        '<edge from-layer="1" from-port="0" to-layer="3" to-port="1"/>'
        '<edge from-layer="2" from-port="0" to-layer="3" to-port="2"/>'
        '<edge from-layer="3" from-port="3" to-layer="4" to-port="0"/>'
        '</edges></net>\n')
    inputs = {"X": g.standard_normal((1, T, I)).astype(F32), "H0": g.standard_normal((1, H)).astype(F32),
              "C0": g.standard_normal((1, H)).astype(F32)}
    return xml, b"".join(a.tobytes() for a in blobs), inputs, (W, R, B)


def seed_lstm_numpy(inputs: dict[str, np.ndarray], W: np.ndarray, R: np.ndarray, B: np.ndarray) -> np.ndarray:
    """LSTMCell by hand (OpenVINO's gate order f, i, c, o), to check the reconstruction."""
    def sig(v: np.ndarray) -> np.ndarray:
        return 1 / (1 + np.exp(-v))
    w, r, b = (a.astype(np.float64) for a in (W, R, B))
    h, c, ys = inputs["H0"].astype(np.float64), inputs["C0"].astype(np.float64), []
    for t in range(SEED_T):
        f, i, cc, o = np.split(inputs["X"][:, t] @ w.T + h @ r.T + b, 4, -1)
        c = sig(f) * c + sig(i) * np.tanh(cc)
        h = sig(o) * np.tanh(c)
        ys.append(h)
    return np.stack(ys, 1)


# ------------------------------------------------------------------- convert_model from ONNX
ONNX_OPSET = 17
OnnxMaker = Callable[[], tuple[onnx.ModelProto, dict[str, np.ndarray]]]


def f32_info(name: str, shape: list[int | str | None]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def onnx_model(graph: onnx.GraphProto) -> onnx.ModelProto:
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)], producer_name="loopc-samples")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def scalar(name: str, dtype: int, value: object) -> onnx.TensorProto:
    return helper.make_tensor(name, dtype, [], [value])


def onnx_loop_for() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """ONNX Loop with trip count M: s = s * 0.5 + x[i] (Gather by iteration_num); scan output s."""
    body = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["row"], axis=0),
         helper.make_node("Mul", ["s_in", "half"], ["s_half"]),
         helper.make_node("Add", ["s_half", "row"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["scan"]),
         helper.make_node("Identity", ["c_in"], ["c_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("c_in", TensorProto.BOOL, []), f32_info("s_in", [3])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), f32_info("s_out", [3]), f32_info("scan", [3])],
        [scalar("half", TensorProto.FLOAT, 0.5)])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "go", "s0"], ["s_final", "s_all"], body=body)], "onnx_loop_for",
        [helper.make_tensor_value_info("M", TensorProto.INT64, []), f32_info("x", [6, 3]), f32_info("s0", [3])],
        [f32_info("s_final", [3]), f32_info("s_all", ["n", 3])], [scalar("go", TensorProto.BOOL, True)])
    return onnx_model(graph), {"M": np.array(5, I64), "x": randn(rng(30), 6, 3, scale=1.0),
                               "s0": np.array([1.0, 0.0, -1.0], F32)}


def onnx_loop_while() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """ONNX Loop with no trip count, cond = sum(x) < lim computed in the body; scan output x."""
    body = helper.make_graph(
        [helper.make_node("Mul", ["x_in", "two"], ["x_out"]),
         helper.make_node("ReduceSum", ["x_out"], ["tot"], keepdims=0),
         helper.make_node("Less", ["tot", "lim"], ["c_out"]),
         helper.make_node("Identity", ["x_out"], ["scan"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("c_in", TensorProto.BOOL, []), f32_info("x_in", [3])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), f32_info("x_out", [3]), f32_info("scan", [3])],
        [scalar("two", TensorProto.FLOAT, 2.0)])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["", "go", "x0"], ["x_final", "x_all"], body=body)], "onnx_loop_while",
        [helper.make_tensor_value_info("go", TensorProto.BOOL, []), f32_info("x0", [3]), f32_info("lim", [])],
        [f32_info("x_final", [3]), f32_info("x_all", [None, 3])])
    return onnx_model(graph), {"go": np.array(True), "x0": np.array([1.0, 2.0, 3.0], F32), "lim": np.array(100.0, F32)}


def onnx_loop_nested() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """ONNX Loop in Loop: the inner loop runs i + 1 trips (outer iteration_num): acc += x * j."""
    inner = helper.make_graph(
        [helper.make_node("Cast", ["j"], ["jf"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["x", "jf"], ["xj"]),
         helper.make_node("Add", ["iacc_in", "xj"], ["iacc_out"]),
         helper.make_node("Identity", ["ic_in"], ["ic_out"])],
        "inner", [helper.make_tensor_value_info("j", TensorProto.INT64, []),
                  helper.make_tensor_value_info("ic_in", TensorProto.BOOL, []), f32_info("iacc_in", [2])],
        [helper.make_tensor_value_info("ic_out", TensorProto.BOOL, []), f32_info("iacc_out", [2])])
    outer = helper.make_graph(
        [helper.make_node("Add", ["i", "one"], ["inner_trips"]),
         helper.make_node("Loop", ["inner_trips", "t", "acc_in"], ["acc_out"], body=inner),
         helper.make_node("Identity", ["acc_out"], ["trace"]),
         helper.make_node("Identity", ["c_in"], ["c_out"])],
        "outer", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                  helper.make_tensor_value_info("c_in", TensorProto.BOOL, []), f32_info("acc_in", [2])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), f32_info("acc_out", [2]),
         f32_info("trace", [2])],
        [scalar("t", TensorProto.BOOL, True), scalar("one", TensorProto.INT64, 1)])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "go", "a0"], ["acc", "acc_all"], body=outer)], "onnx_loop_nested",
        [helper.make_tensor_value_info("M", TensorProto.INT64, []), f32_info("x", [2]), f32_info("a0", [2])],
        [f32_info("acc", [2]), f32_info("acc_all", ["n", 2])], [scalar("go", TensorProto.BOOL, True)])
    return onnx_model(graph), {"M": np.array(4, I64), "x": np.array([1.0, -0.5], F32), "a0": np.array([0.0, 1.0], F32)}


def _scan_body() -> onnx.GraphProto:
    return helper.make_graph(
        [helper.make_node("Mul", ["s_in", "a"], ["sa"]), helper.make_node("Add", ["sa", "b"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["y"])],
        "body", [f32_info("s_in", [2]), f32_info("a", [2]), f32_info("b", [2])],
        [f32_info("s_out", [2]), f32_info("y", [2])])


def onnx_scan(name: str, **attrs: object) -> OnnxMaker:
    """ONNX Scan-9 s = s * a_t + b_t over two scan inputs A, B; attributes set directions and axes."""
    in_axes = attrs.get("scan_input_axes", [0, 0])
    out_axes = attrs.get("scan_output_axes", [0])

    def make() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
        t = 5
        a_shape = [2, t] if in_axes[0] == 1 else [t, 2]
        b_shape = [2, t] if in_axes[1] == 1 else [t, 2]
        y_shape = [2, t] if out_axes[0] == 1 else [t, 2]
        node = helper.make_node("Scan", ["s0", "A", "B"], ["s_final", "Y"], num_scan_inputs=2, body=_scan_body(),
                                **attrs)
        graph = helper.make_graph([node], name, [f32_info("s0", [2]), f32_info("A", a_shape), f32_info("B", b_shape)],
                                  [f32_info("s_final", [2]), f32_info("Y", y_shape)])
        g = rng(31)
        return onnx_model(graph), {"s0": np.array([1.0, -1.0], F32), "A": randn(g, *a_shape, scale=0.8),
                                   "B": randn(g, *b_shape, scale=1.0)}
    return make


def onnx_rnn(op: str, name: str, seed: int, **attrs: object) -> OnnxMaker:
    """ONNX LSTM/GRU/RNN over time-major X [T, B, I] with initial states as inputs."""
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1

    def make() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
        t, b, i, h = 5, 2, 3, 4
        g = rng(seed)
        inits = [helper.make_tensor("W", TensorProto.FLOAT, [dirs, gates * h, i], randn(g, dirs, gates * h, i).ravel()),
                 helper.make_tensor("R", TensorProto.FLOAT, [dirs, gates * h, h], randn(g, dirs, gates * h, h).ravel()),
                 helper.make_tensor("B", TensorProto.FLOAT, [dirs, 2 * gates * h],
                                    randn(g, dirs, 2 * gates * h).ravel())]
        ins, outs = ["X", "W", "R", "B", "", "h0"], ["Y", "Y_h"]
        infos = [f32_info("X", [t, b, i]), f32_info("h0", [dirs, b, h])]
        feeds = {"X": randn(g, t, b, i, scale=1.0), "h0": randn(g, dirs, b, h)}
        out_infos = [f32_info("Y", [t, dirs, b, h]), f32_info("Y_h", [dirs, b, h])]
        if op == "LSTM":
            ins.append("c0")
            outs.append("Y_c")
            infos.append(f32_info("c0", [dirs, b, h]))
            feeds["c0"] = randn(g, dirs, b, h)
            out_infos.append(f32_info("Y_c", [dirs, b, h]))
        node = helper.make_node(op, ins, outs, hidden_size=h, **attrs)
        return onnx_model(helper.make_graph([node], name, infos, out_infos, inits)), feeds
    return make


ONNX_SAMPLES: dict[str, tuple[OnnxMaker, bool]] = {
    # name: (ONNX model maker, compress_to_fp16)
    "onnx_loop_for": (onnx_loop_for, False),
    "onnx_loop_while": (onnx_loop_while, False),
    "onnx_loop_nested": (onnx_loop_nested, False),
    "onnx_scan_forward": (onnx_scan("onnx_scan_forward"), False),
    "onnx_scan_reverse": (onnx_scan("onnx_scan_reverse", scan_input_directions=[1, 1], scan_output_directions=[1]),
                          False),
    "onnx_scan_axes": (onnx_scan("onnx_scan_axes", scan_input_axes=[1, 0], scan_output_axes=[1]), False),
    "onnx_lstm": (onnx_rnn("LSTM", "onnx_lstm", 40), False),
    "onnx_gru": (onnx_rnn("GRU", "onnx_gru", 41, direction="bidirectional"), True),
    "onnx_rnn": (onnx_rnn("RNN", "onnx_rnn", 42, direction="reverse"), False),
}

OPSET_SAMPLES: dict[str, Callable[[], Sample]] = {f.__name__: f for f in (
    ti_lstm_cell, ti_gru_cell, ti_rnn_cell, ti_reverse, ti_part_size_2, ti_concat_axes,
    loop_iter_i64, loop_iter_i32, loop_while, loop_runtime_trips, loop_sliced_input, loop_invariant,
    loop_in_loop, ti_in_loop, loop_in_ti, loop_if, loop_fp16_weights, loop_ir_v10,
    lstm_sequence_bidirectional, gru_sequence_lengths, rnn_sequence_reverse,
)}


# ------------------------------------------------------------------------------------ writing
def run_on_cpu(xml: Path, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Read the IR back and run it on OpenVINO's CPU plugin: the check that every sample is real."""
    core = ov.Core()
    m = core.read_model(xml)
    names = [p.get_any_name() for p in m.inputs]
    if sorted(names) != sorted(inputs):
        raise SystemExit(f"{xml.name}: inputs file has {sorted(inputs)}, the IR wants {sorted(names)}")
    compiled = core.compile_model(m, "CPU", CONFIG)
    result = compiled({name: ov.Tensor(np.array(a, copy=True, order="C")) for name, a in inputs.items()})
    return [np.asarray(result[o]) for o in compiled.outputs]


def bodies(node: ov.Node) -> list[ov.Model]:
    """The sub-graphs of a Loop / TensorIterator (one body) or an If (then, else)."""
    if node.get_type_name() == "If":
        return [node.get_function(0), node.get_function(1)]
    return [node.get_function()] if node.get_type_name() in ("Loop", "TensorIterator") else []


def stable_names(m: ov.Model) -> ov.Model:
    """Renumber the names OpenVINO made up (``Add_93721``, from a process-wide counter) by their order
    in this model, and the tensor names made from them: a sample's files then depend on its own
    definition only, and adding a sample leaves the others' files unchanged."""
    renamed: dict[str, str] = {}
    counts: dict[str, int] = {}

    def rename_nodes(model: ov.Model) -> None:
        for node in model.get_ordered_ops():
            kind, name = node.get_type_name(), node.get_friendly_name()
            if re.fullmatch(rf"{kind}_\d+", name):
                counts[kind] = counts.get(kind, 0) + 1
                renamed[name] = f"{kind}_{counts[kind]}"
                node.set_friendly_name(renamed[name])
            for body in bodies(node):
                rename_nodes(body)

    def rename_tensors(model: ov.Model) -> None:
        for node in model.get_ordered_ops():
            for out in node.outputs():
                names = out.get_names()
                if names & renamed.keys():
                    out.get_tensor().set_names({renamed.get(n, n) for n in names})
            for body in bodies(node):
                rename_tensors(body)

    rename_nodes(m)
    rename_tensors(m)
    return m


def save(name: str, sample: Sample) -> None:
    xml = HERE / f"{name}.xml"
    stable_names(sample.model)
    if sample.ir_v10:
        ov.serialize(sample.model, str(xml), str(HERE / f"{name}.bin"), version="IR_V10")
    else:
        ov.save_model(sample.model, xml, compress_to_fp16=sample.compress_to_fp16)
    write_inputs(name, sample.inputs)
    for suffix, inputs in sample.extra_inputs.items():
        write_inputs(f"{name}_{suffix}", inputs, xml)


def write_inputs(stem: str, inputs: dict[str, np.ndarray], xml: Path | None = None) -> None:
    xml = xml or HERE / f"{stem}.xml"
    np.savez(HERE / f"{stem}_inputs.npz", **inputs)
    outs = run_on_cpu(xml, inputs)
    print(f"{stem:32s} OpenVINO CPU: " + ", ".join(f"{list(o.shape)} {o.dtype}" for o in outs))


def convert_onnx(name: str, make: OnnxMaker, compress: bool) -> None:
    proto, inputs = make()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.onnx"
        onnx.save(proto, path)
        converted = stable_names(ov.convert_model(path))
    ov.save_model(converted, HERE / f"{name}.xml", compress_to_fp16=compress)
    write_inputs(name, inputs)


def write_seed() -> None:
    xml, weights, inputs, (W, R, B) = seed_ti_lstm_files()
    (HERE / "seed_ti_lstm.xml").write_text(xml)
    (HERE / "seed_ti_lstm.bin").write_bytes(weights)
    write_inputs("seed_ti_lstm", inputs)
    got = run_on_cpu(HERE / "seed_ti_lstm.xml", inputs)[0]
    err = float(np.abs(got - seed_lstm_numpy(inputs, W, R, B)).max())
    if err > 1e-4:
        raise SystemExit(f"seed_ti_lstm: OpenVINO and the hand-written LSTM differ by {err:.2e}")
    print(f"{'':32s} max |OpenVINO - NumPy LSTM| = {err:.1e}")


def main() -> None:
    for name, make in OPSET_SAMPLES.items():
        save(name, make())
    write_seed()
    for name, (make, compress) in ONNX_SAMPLES.items():
        convert_onnx(name, make, compress)


if __name__ == "__main__":
    main()

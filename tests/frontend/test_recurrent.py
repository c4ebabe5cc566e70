"""The frontend-neutral recurrent lowering on its own: a :class:`Spec` built by hand from IR values (no
frontend reads a model), lowered, run by the IR interpreter and compared with the ONNX operator specs'
equations written out below in NumPy, one batch item at a time."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import loopc.frontend.recurrent as recurrent
from loopc.ir.builder import Builder
from loopc.frontend.recurrent import GRU, LSTM, RNN, Activation, Cell, Spec, lower, stack_directions, step
from loopc.ir import Graph, Value
from loopc.ir.interpret import interpret

F32 = np.dtype(np.float32)
T, B, I, H = 4, 3, 2, 3


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _reference(cell: Cell, x: np.ndarray, w: np.ndarray, r: np.ndarray, b: np.ndarray, h0: np.ndarray,
               c0: np.ndarray, p: np.ndarray | None, lens: np.ndarray, reverse: bool, clip: float | None,
               lbr: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One direction: (Y [T, B, H], H_last, C_last). Item ``b`` runs its first ``lens[b]`` steps (backwards
    if ``reverse``); Y is zero past its length."""
    gates = cell.gates
    wb, rb = b[: gates * H], b[gates * H:]
    y = np.zeros((x.shape[0], B, H), np.float32)
    h_last, c_last = h0.copy(), c0.copy()

    def f(v: np.ndarray) -> np.ndarray:
        return _sigmoid(np.clip(v, -clip, clip) if clip is not None else v)

    def g(v: np.ndarray) -> np.ndarray:
        return np.tanh(np.clip(v, -clip, clip) if clip is not None else v)

    for item in range(B):
        h, c = h0[item], c0[item]
        steps = range(int(lens[item]))
        for t in (reversed(steps) if reverse else steps):
            xw, hr = w @ x[t, item] + wb, r @ h + rb
            if cell is RNN:
                h = g(xw + hr)
            elif cell is GRU:
                z = f(xw[:H] + hr[:H])
                reset = f(xw[H:2 * H] + hr[H:2 * H])
                if lbr:
                    cand = g(xw[2 * H:] + reset * hr[2 * H:])
                else:
                    cand = g(xw[2 * H:] + r[2 * H:] @ (reset * h) + rb[2 * H:])
                h = (1 - z) * cand + z * h
            else:
                pi, po, pf = (p[:H], p[H:2 * H], p[2 * H:]) if p is not None else (0, 0, 0)
                i = f(xw[:H] + hr[:H] + pi * c)
                forget = f(xw[2 * H:3 * H] + hr[2 * H:3 * H] + pf * c)
                c = forget * c + i * g(xw[3 * H:] + hr[3 * H:])
                o = f(xw[H:2 * H] + hr[H:2 * H] + po * c)
                h = o * np.tanh(c)
            y[t, item] = h
        h_last[item], c_last[item] = h, c
    return y, h_last, c_last


def _activations(cell: Cell) -> list[Activation]:
    return [Activation(name.lower(), 0.0, 0.0) for name in cell.activations]


def _emitter(graph: Graph) -> Builder:
    counter = itertools.count()
    return Builder(graph, label="rnn", origin="test recurrent op", names=lambda base: f"{base}_{next(counter)}")


CASES = {
    "lstm_peepholes_clip": (LSTM, [False], True, 0.8, False, False),
    "lstm_reverse_lens": (LSTM, [True], False, None, False, True),
    "gru_lbr_bidirectional_lens": (GRU, [False, True], False, None, True, True),
    "gru_bidirectional": (GRU, [False, True], False, 1.5, False, False),
    "rnn_bidirectional_lens": (RNN, [False, True], False, None, False, True),
}


@pytest.mark.parametrize("stacked", [True, False], ids=["one_loop", "loop_per_direction"])
@pytest.mark.parametrize("case", list(CASES))
def test_lower_matches_the_spec_equations(case: str, stacked: bool) -> None:
    cell, directions, peepholes, clip, lbr, with_lens = CASES[case]
    dirs, gates = len(directions), cell.gates
    rng = np.random.default_rng(7)
    arrays = {
        "x": rng.normal(size=(T, B, I)), "w": rng.normal(size=(dirs, gates * H, I)) * 0.6,
        "r": rng.normal(size=(dirs, gates * H, H)) * 0.6, "b": rng.normal(size=(dirs, 2 * gates * H)) * 0.3,
        "h0": rng.normal(size=(dirs, B, H)) * 0.5, "c0": rng.normal(size=(dirs, B, H)) * 0.5,
        "p": rng.normal(size=(dirs, 3 * H)) * 0.5,
    }
    feeds: dict[str, Any] = {k: v.astype(np.float32) for k, v in arrays.items()}
    if cell is not LSTM:
        del feeds["c0"]
    if not peepholes:
        del feeds["p"]
    lens = np.array([4, 1, 3], np.int32) if with_lens else np.full(B, T, np.int32)
    if with_lens:
        feeds["lens"] = lens
    inputs = {k: Value(k, v.dtype, v.shape) for k, v in feeds.items()}
    outs = [Value("Y", F32), Value("Y_h", F32)] + ([Value("Y_c", F32)] if cell is LSTM else [])
    graph = Graph("test", list(inputs.values()), outs)
    em = _emitter(graph)
    spec = Spec(cell=cell, x=inputs["x"], w=inputs["w"], r=inputs["r"], b=inputs["b"], lens=inputs.get("lens"),
                h0=inputs["h0"], c0=inputs.get("c0"), p=inputs.get("p"), directions=directions, layout=0,
                clip=clip, hidden=H, activations=[_activations(cell)] * dirs, linear_before_reset=lbr,
                input_forget=False)
    per_dir = lower(em, spec, stack_directions=stacked)
    for k, out in enumerate(outs):  # Y [T, dirs, B, H]; Y_h, Y_c [dirs, B, H]
        stack_directions(em, [parts[k] for parts in per_dir], 1 if k == 0 else 0, out)

    got = interpret(graph, feeds)

    x = feeds["x"]
    want = [_reference(cell, x, feeds["w"][d], feeds["r"][d], feeds["b"][d], feeds["h0"][d],
                       feeds["c0"][d] if cell is LSTM else np.zeros((B, H), np.float32),
                       feeds["p"][d] if peepholes else None, lens, reverse, clip, lbr)
            for d, reverse in enumerate(directions)]
    np.testing.assert_allclose(got[0], np.stack([y for y, _, _ in want], axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], np.stack([h for _, h, _ in want]), rtol=1e-5, atol=1e-5)
    if cell is LSTM:
        np.testing.assert_allclose(got[2], np.stack([c for _, _, c in want]), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cell", [RNN, GRU, LSTM], ids=lambda c: c.op)
def test_step_is_one_step_of_the_spec(cell: Cell) -> None:
    """A ``*Cell`` op: X [batch, input] and the weights with a directions axis of 1, no loop."""
    rng = np.random.default_rng(3)
    gates = cell.gates
    feeds: dict[str, Any] = {
        "x": rng.normal(size=(B, I)), "w": rng.normal(size=(1, gates * H, I)) * 0.6,
        "r": rng.normal(size=(1, gates * H, H)) * 0.6, "b": rng.normal(size=(1, 2 * gates * H)) * 0.3,
        "h": rng.normal(size=(B, H)) * 0.5, "c": rng.normal(size=(B, H)) * 0.5,
    }
    feeds = {k: v.astype(np.float32) for k, v in feeds.items()}
    if cell is not LSTM:
        del feeds["c"]
    inputs = {k: Value(k, v.dtype, v.shape) for k, v in feeds.items()}
    outs = [Value("H", F32)] + ([Value("C", F32)] if cell is LSTM else [])
    graph = Graph("test", list(inputs.values()), outs)
    em = _emitter(graph)
    spec = Spec(cell=cell, x=inputs["x"], w=inputs["w"], r=inputs["r"], b=inputs["b"], lens=None, h0=None,
                c0=None, p=None, directions=[False], layout=0, clip=None, hidden=H,
                activations=[_activations(cell)], linear_before_reset=False, input_forget=False)
    results = step(em, spec, inputs["h"], inputs.get("c"))
    for value, out in zip(results, outs):
        assert value is not None
        em.op("Identity", [value], dtype=F32, out=out)

    got = interpret(graph, feeds)

    c0 = feeds.get("c", np.zeros((B, H), np.float32))
    _, h_want, c_want = _reference(cell, feeds["x"][None], feeds["w"][0], feeds["r"][0], feeds["b"][0],
                                   feeds["h"], c0, None, np.ones(B, np.int32), False, None, False)
    np.testing.assert_allclose(got[0], h_want, rtol=1e-5, atol=1e-5)
    if cell is LSTM:
        np.testing.assert_allclose(got[1], c_want, rtol=1e-5, atol=1e-5)


def test_imports_no_frontend() -> None:
    """Both frontends use the lowering; it depends on neither."""
    tree = ast.parse(Path(recurrent.__file__).read_text())
    imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    assert imported and not [m for m in imported
                              if m.startswith(("loopc.frontend.onnx", "loopc.frontend.openvino"))]

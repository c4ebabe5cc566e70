"""RNN, GRU and LSTM lowered into IR loops of ordinary ops, for any frontend.

A frontend reads its recurrent op into a :class:`Spec` (IR values in ONNX's layouts and gate orders, plus
the attributes): the ONNX frontend parses its nodes into one, the OpenVINO frontend maps its layouts and
gate orders onto one. :func:`lower` makes the loops, :func:`stack_directions` joins the directions, and
:func:`step` is a single step without a loop (OpenVINO's ``*Cell`` ops).

Both directions of a bidirectional op run in one loop, their states stacked (one loop per direction when
their activations differ, or ``stack_directions`` is off); the math follows the ONNX operator specs (gate
orders ``iofc`` and ``zrh``, ``clip`` on every gate activation's input, GRU's ``linear_before_reset``,
LSTM's peepholes and ``input_forget``). Two rewrites make the loop cheaper and are exact up to float
rounding:

* ``X·Wᵀ + Wb (+ Rb)`` does not depend on the hidden state, so it is computed for all steps before the
  loop (one MatMul) and the loop iterates over its rows.
* ``sequence_lens``: each batch item stops at its own length. Inside the loop a mask ``t < len[b]`` keeps
  the state (``Where``) and zeroes ``Y`` past the end, as the ONNX spec says; the reverse direction reads
  each item's first ``len[b]`` steps backwards, which is ``ReverseSequence`` before the loop and again on
  ``Y`` after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from loopc.ir.builder import I64, Builder
from loopc.ir import Graph, Loop, LoopIterator, LoopOutput, Recurrence, Value
from loopc.ir.core import Dim
from loopc.limits import check_constant

#: Activations that are one IR op without attributes.
_PLAIN = {"relu": "Relu", "tanh": "Tanh", "sigmoid": "Sigmoid", "softsign": "Softsign", "softplus": "Softplus"}


@dataclass(frozen=True)
class Cell:
    """What distinguishes the three ops: gate count, activations per direction, extra inputs/outputs."""

    op: str
    gates: int
    activations: tuple[str, ...]
    state_outputs: int  # Y_h (and Y_c)


RNN = Cell("RNN", 1, ("Tanh",), 1)
GRU = Cell("GRU", 3, ("Sigmoid", "Tanh"), 1)
LSTM = Cell("LSTM", 4, ("Sigmoid", "Tanh", "Tanh"), 2)


@dataclass(frozen=True)
class Activation:
    """An activation by its lowercase ONNX name, with its alpha and beta (defaults already filled in)."""

    name: str
    alpha: float
    beta: float


@dataclass
class Spec:
    """One recurrent op's operands and attributes, in ONNX's layouts and gate orders whatever the source:
    W [dirs, G·H, I] and R [dirs, G·H, H] in gate order iofc (LSTM) or zrh (GRU), B [dirs, 2·G·H] as Wb
    then Rb, P [dirs, 3·H] as iof; X, initial states and outputs as ``layout`` says."""

    cell: Cell
    x: Value
    w: Value
    r: Value
    b: Value | None
    lens: Value | None
    h0: Value | None
    c0: Value | None
    p: Value | None
    directions: list[bool]  # reverse flag per direction
    layout: int
    clip: float | None
    hidden: int | None
    activations: list[list[Activation]]
    linear_before_reset: bool
    input_forget: bool

    @property
    def time_axis(self) -> int:
        return 0 if self.layout == 0 else 1

    @property
    def batch_axis(self) -> int:
        return 1 if self.layout == 0 else 0

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.x.dtype or np.dtype(np.float32)


def lower(em: Builder, spec: Spec, want_y: bool = True, stack_directions: bool = True) -> list[list[Value | None]]:
    """The loop(s) of ``spec``; per direction ``[Y, H_last, C_last]`` without the directions axis (Y is
    None unless ``want_y``; C_last None but for LSTM). Both directions share one loop if
    ``stack_directions`` and their activations agree."""
    ops = _Ops(em, spec.dtype)
    if stack_directions and len(spec.directions) == 2 and spec.activations[0] == spec.activations[1]:
        return _loop(ops, spec, [0, 1], want_y)
    return [_loop(ops, spec, [d], want_y)[0] for d in range(len(spec.directions))]


def stack_directions(em: Builder, parts: list[Value | None], axis: int, out: Value | None = None) -> Value:
    """The directions' values joined on a new directions axis at ``axis`` (into ``out`` if given)."""
    values = [p for p in parts if p is not None]
    assert len(values) == len(parts) and values
    dtype = values[0].dtype
    unsqueezed = [em.op("Unsqueeze", [v, em.const([axis], np.int64)], dtype=dtype,
                        out=out if len(values) == 1 else None) for v in values]
    if len(unsqueezed) == 1:
        return unsqueezed[0]
    return em.op("Concat", unsqueezed, {"axis": axis}, dtype=dtype, out=out)


def step(em: Builder, spec: Spec, h: Value, c: Value | None = None) -> tuple[Value, Value | None]:
    """One step without a loop (a ``*Cell`` op): ``spec.x`` is this step's input [batch, input] and
    W/R/B/P keep a directions axis of size 1; ``h``/``c`` are the states [batch, H]. Returns (H, C)."""
    ops = _Ops(em, spec.dtype)
    weights = _weights(ops, spec, 0)
    return _cell(ops, spec, weights, spec.activations[0], weights.xw, h, c)


class _Ops:
    """An emitter whose results take the recurrent op's dtype, which all but a few of the lowering's values
    have (lengths, shapes and masks go through ``em`` itself). ``ops("Add", a, b, axis=0)`` is one node."""

    def __init__(self, em: Builder, dtype: np.dtype[Any]) -> None:
        self.em = em
        self.dtype = dtype

    def into(self, graph: Graph) -> _Ops:
        return _Ops(self.em.into(graph), self.dtype)

    def __call__(self, op: str, *inputs: Value, **attrs: Any) -> Value:
        return self.em.op(op, list(inputs), attrs, dtype=self.dtype)

    def split(self, value: Value, parts: int, axis: int = -1) -> list[Value]:
        """``value`` in ``parts`` equal pieces along ``axis`` (by default the gates' axis)."""
        return self.em.multi("Split", [value], parts, {"axis": axis, "num_outputs": parts}, self.dtype)

    def scalar(self, number: float) -> Value:
        return self.em.const(number, self.dtype)

    def ints(self, array: Any) -> Value:
        """An int64 constant: an index or a list of axes."""
        return self.em.const(array, np.int64)


# ----------------------------------------------------------------------------------------- the loop


@dataclass
class Weights:
    """One direction's operands, prepared outside the loop."""

    xw: Value  # X·Wᵀ + biases, [seq, batch, G·H] or [batch, seq, G·H]
    rt: Value  # Rᵀ, [H, G·H]
    rht: Value | None = None  # GRU without linear_before_reset: Rhᵀ
    rb: Value | None = None  # GRU with linear_before_reset: Rb, added to H·Rᵀ
    peep: list[Value] | None = None  # LSTM: Pi, Po, Pf


def _loop(ops: _Ops, spec: Spec, dirs: list[int], want_y: bool) -> list[list[Value | None]]:
    """One loop running directions ``dirs`` side by side; per direction (Y, H_last[, C_last]) without
    the dirs axis, Y only when the node's Y output is used.

    Two directions share a loop with their states stacked on a leading directions axis ``[2, batch, H]``:
    one batched product ``h·Rᵀ`` a trip for both, and one pointwise chain, so the serial chain is one
    direction's. Each direction reads its own iterator (the reverse one backwards)."""
    em, dtype = ops.em, ops.dtype
    stacked = len(dirs) > 1
    weights = _weights(ops, spec, None if stacked else dirs[0])
    lens = None
    if spec.lens is not None:
        lens = em.op("Cast", [spec.lens], {"to": onnx.TensorProto.INT64}, dtype=I64)
    batch, seq, hidden = _dims(spec)
    gates = spec.cell.gates * hidden if isinstance(hidden, int) else None
    reverse = [spec.directions[d] for d in dirs]
    backwards = [r and lens is None for r in reverse]  # iterated backwards, emitted with kREVERSE
    iterators, params = [], []
    for k, d in enumerate(dirs):
        xw = ops("Gather", weights.xw, ops.ints(k), axis=0) if stacked else weights.xw
        if reverse[k] and lens is not None:  # each item's own first len[b] steps, backwards; then forwards
            xw = _reverse_sequence(ops, spec, xw, lens)
        params.append(em.value(f"x{d}_t", dtype, (batch, gates)))
        iterators.append(LoopIterator(params[-1], xw, spec.time_axis, backwards[k]))

    body = Graph(em.name("_".join(f"dir{d}" for d in dirs) + "_body"))
    inner = ops.into(body)
    state_shape: tuple[Dim, ...] = (len(dirs), batch, hidden) if stacked else (batch, hidden)
    x_t = inner("Concat", *[inner("Unsqueeze", x, inner.ints([0])) for x in params], axis=0) if stacked \
        else params[0]
    h0 = _initial(ops, spec, spec.h0, dirs)
    c0 = _initial(ops, spec, spec.c0, dirs) if spec.cell is LSTM else None
    h = em.value("h", dtype, state_shape)
    c = em.value("c", dtype, state_shape) if c0 is not None else None
    counter = em.value("t", I64, ()) if lens is not None else None
    h_new, c_new = _cell(inner, spec, weights, spec.activations[dirs[0]], x_t, h, c)
    y_t = h_new
    if lens is not None and counter is not None:
        # Past an item's length the state holds and Y is zero (the spec's padding); [batch, 1]
        # broadcasts over the directions axis too.
        lens_col = em.op("Unsqueeze", [lens, em.const([1], np.int64)], dtype=I64)
        live = inner.em.op("Less", [counter, lens_col], dtype=np.dtype(np.bool_))
        h_new = inner("Where", live, h_new, h)
        if want_y:
            y_t = inner("Where", live, y_t, inner.scalar(0))
        if c is not None and c_new is not None:
            c_new = inner("Where", live, c_new, c)

    recurrences = [Recurrence(h, h0, h_new)]
    h_last = em.value("h_last", dtype, state_shape)
    outputs = [LoopOutput("last", h, h_last)]
    c_last = None
    if c is not None and c0 is not None and c_new is not None:
        recurrences.append(Recurrence(c, c0, c_new))
        c_last = em.value("c_last", dtype, state_shape)
        outputs.append(LoopOutput("last", c, c_last))
    ys: list[Value | None] = [None] * len(dirs)
    if want_y:
        for k, d in enumerate(dirs):
            y_k = inner("Gather", y_t, inner.ints(k), axis=0) if stacked else y_t
            stacked_y = em.value(f"y{d}", dtype, (seq, batch, hidden) if spec.layout == 0 else (batch, seq, hidden))
            # Iterating backwards and emitting with kREVERSE puts step t's state at position t, as
            # ONNX's reverse direction does.
            outputs.append(LoopOutput("reverse" if backwards[k] else "concat", y_k, stacked_y, spec.time_axis))
            ys[k] = stacked_y
    loop = Loop(body, trip_count=em.dim(spec.x, spec.time_axis), counter=counter, iterators=iterators,
                recurrences=recurrences, loop_outputs=outputs,
                name=em.name("_".join(f"dir{d}" for d in dirs)), origin=em.origin)
    em.place(loop)
    results: list[list[Value | None]] = []
    for k, y in enumerate(ys):
        if y is not None and reverse[k] and lens is not None:
            y = _reverse_sequence(ops, spec, y, lens)
        states = [ops("Gather", s, ops.ints(k), axis=0) if stacked and s is not None else s for s in (h_last, c_last)]
        results.append([y, *states])
    return results


def _dims(spec: Spec) -> tuple[Dim, Dim, Dim]:
    """(batch, seq, H) as far as the operands' shapes tell: the loop's values are typed as they are made
    (a loop inside another loop's body needs its ranks before any pass runs)."""
    x = spec.x.shape
    batch = x[spec.batch_axis] if x is not None and len(x) == 3 else None
    seq = x[spec.time_axis] if x is not None and len(x) == 3 else None
    r = spec.r.shape
    hidden = spec.hidden if spec.hidden is not None else r[2] if r is not None and len(r) == 3 else None
    return batch, seq, hidden


def _weights(ops: _Ops, spec: Spec, d: int | None) -> Weights:
    """Direction ``d``'s operands, or (``d`` None) all directions' stacked on a leading axis and shaped
    to broadcast against a stacked state ``[dirs, batch, ·]``: ``xw`` is then ``[dirs, ...X's axes, G·H]``."""
    index = ops.ints(d) if d is not None else None

    def pick(value: Value, broadcast: list[int]) -> Value:
        if index is not None:
            return ops("Gather", value, index, axis=0)
        return ops("Unsqueeze", value, ops.ints(broadcast)) if broadcast else value

    gate_axis, rank = (0, 2) if d is not None else (1, 3)
    w, r = pick(spec.w, []), pick(spec.r, [])
    x, wt = spec.x, _t(ops.em, w, rank)
    if d is None:  # [1, ...X] · [dirs, 1, I, G·H]
        x = ops("Unsqueeze", x, ops.ints([0]))
        wt = ops("Unsqueeze", wt, ops.ints([1]))
    xw = ops("MatMul", x, wt)
    weights = Weights(xw=xw, rt=_t(ops.em, r, rank))
    if spec.cell is GRU and not spec.linear_before_reset:
        # r ⊙ H is multiplied by Rhᵀ. H·Rᵀ's h columns are then never read; the narrow-products
        # pass drops them from the product (2H² per row instead of 3H²).
        _, _, rh = ops.split(r, 3, axis=gate_axis)
        weights.rht = _t(ops.em, rh, rank)
    if spec.b is not None:
        wb, rb = ops.split(pick(spec.b, [1]), 2)
        if spec.cell is GRU and spec.linear_before_reset:
            # Rbh sits inside r ⊙ (H·Rhᵀ + Rbh): keep Rb with the recurrent product.
            bias, weights.rb = wb, rb
        else:
            bias = ops("Add", wb, rb)
        if d is None:  # [dirs, 1, G·H] -> [dirs, 1, 1, G·H], against xw's [dirs, seq, batch, G·H]
            bias = ops("Unsqueeze", bias, ops.ints([1]))
        weights.xw = ops("Add", xw, bias)
    if spec.p is not None:
        weights.peep = ops.split(pick(spec.p, [1]), 3)
    return weights


def _t(em: Builder, value: Value, rank: int = 2) -> Value:
    """The last two axes swapped (a matrix, or a stack of them)."""
    perm = [*range(rank - 2), rank - 1, rank - 2]
    return em.op("Transpose", [value], {"perm": perm}, dtype=value.dtype)


def _initial(ops: _Ops, spec: Spec, given: Value | None, dirs: list[int]) -> Value:
    """The initial state of directions ``dirs``: [batch, H] for one, [dirs, batch, H] for both; from
    initial_h/initial_c, or zeros."""
    em = ops.em
    stacked = len(dirs) > 1
    if given is not None:
        if not stacked:
            return ops("Gather", given, ops.ints(dirs[0]), axis=0 if spec.layout == 0 else 1)
        return given if spec.layout == 0 else ops("Transpose", given, perm=[1, 0, 2])
    batch_dim = spec.x.shape[spec.batch_axis] if spec.x.shape is not None and len(spec.x.shape) == 3 else None
    if isinstance(batch_dim, int) and spec.hidden is not None:
        size = (batch_dim, spec.hidden) if not stacked else (len(dirs), batch_dim, spec.hidden)
        check_constant(size, spec.dtype, f"{em.origin}: the zero initial state")
    batch = em.dim(spec.x, spec.batch_axis, keep_1d=True)
    hidden = ops.ints([spec.hidden]) if spec.hidden is not None else em.dim(spec.r, 2, keep_1d=True)
    dims = [ops.ints([len(dirs)]), batch, hidden] if stacked else [batch, hidden]
    shape = em.op("Concat", dims, {"axis": 0}, dtype=I64, shape=(len(dims),))
    return ops("ConstantOfShape", shape, value=np.zeros(1, spec.dtype))


def _reverse_sequence(ops: _Ops, spec: Spec, value: Value, lens: Value) -> Value:
    return ops("ReverseSequence", value, lens, batch_axis=spec.batch_axis, time_axis=spec.time_axis)


# ----------------------------------------------------------------------------------------- the cells


def _cell(ops: _Ops, spec: Spec, wt: Weights, acts: list[Activation], x_t: Value, h: Value,
          c: Value | None) -> tuple[Value, Value | None]:
    """One step: (H_t, C_t) from this step's projected input ``x_t`` and the previous state."""
    if spec.cell is RNN:
        gates = ops("Add", x_t, ops("MatMul", h, wt.rt))
        return _act(ops, spec, acts[0], gates), None
    if spec.cell is GRU:
        return _gru(ops, spec, wt, acts, x_t, h), None
    assert c is not None
    return _lstm(ops, spec, wt, acts, x_t, h, c)


def _gru(ops: _Ops, spec: Spec, wt: Weights, acts: list[Activation], x_t: Value, h: Value) -> Value:
    f, g = acts
    xz, xr, xh = ops.split(x_t, 3)
    hr_all = ops("MatMul", h, wt.rt)
    if spec.linear_before_reset:
        if wt.rb is not None:
            hr_all = ops("Add", hr_all, wt.rb)
        hz, hr, hh = ops.split(hr_all, 3)
    else:
        hz, hr, _ = ops.split(hr_all, 3)
    z = _act(ops, spec, f, ops("Add", xz, hz))
    r = _act(ops, spec, f, ops("Add", xr, hr))
    if spec.linear_before_reset:
        recurrent = ops("Mul", r, hh)  # r ⊙ (H·Rhᵀ + Rbh)
    else:
        assert wt.rht is not None
        recurrent = ops("MatMul", ops("Mul", r, h), wt.rht)  # (r ⊙ H)·Rhᵀ
    candidate = _act(ops, spec, g, ops("Add", xh, recurrent))
    keep = ops("Sub", ops.scalar(1), z)
    return ops("Add", ops("Mul", keep, candidate), ops("Mul", z, h))


def _lstm(ops: _Ops, spec: Spec, wt: Weights, acts: list[Activation], x_t: Value, h: Value,
          c: Value) -> tuple[Value, Value]:
    f, g, hact = acts
    gates = ops("Add", x_t, ops("MatMul", h, wt.rt))
    gi, go, gf, gc = ops.split(gates, 4)
    if wt.peep is not None:
        pi, po, pf = wt.peep
        gi = ops("Add", gi, ops("Mul", pi, c))
        gf = ops("Add", gf, ops("Mul", pf, c))
    i = _act(ops, spec, f, gi)
    if spec.input_forget:
        forget = ops("Sub", ops.scalar(1), i)  # coupled gates: f = 1 - i
    else:
        forget = _act(ops, spec, f, gf)
    cand = _act(ops, spec, g, gc)
    c_new = ops("Add", ops("Mul", forget, c), ops("Mul", i, cand))
    if wt.peep is not None:
        go = ops("Add", go, ops("Mul", wt.peep[1], c_new))
    o = _act(ops, spec, f, go)
    h_new = ops("Mul", o, _act(ops, spec, hact, c_new, clip=False))
    return h_new, c_new


def _act(ops: _Ops, spec: Spec, act: Activation, x: Value, clip: bool = True) -> Value:
    """``act(clip(x))``: the spec clips the input of the gate activations."""
    if clip and spec.clip is not None:
        x = ops("Clip", x, ops.scalar(-spec.clip), ops.scalar(spec.clip))
    if act.name in _PLAIN:
        return ops(_PLAIN[act.name], x)
    if act.name in ("leakyrelu", "thresholdedrelu", "elu"):
        op = {"leakyrelu": "LeakyRelu", "thresholdedrelu": "ThresholdedRelu", "elu": "Elu"}[act.name]
        return ops(op, x, alpha=act.alpha)
    if act.name == "hardsigmoid":
        return ops("HardSigmoid", x, alpha=act.alpha, beta=act.beta)
    if act.name == "affine":
        return ops("Add", ops("Mul", x, ops.scalar(act.alpha)), ops.scalar(act.beta))
    # scaledtanh: alpha * tanh(beta * x)
    inner = ops("Tanh", ops("Mul", x, ops.scalar(act.beta)))
    return ops("Mul", inner, ops.scalar(act.alpha))

"""ONNX ``RNN``, ``GRU`` and ``LSTM`` lowered by loopc itself into IR loops of ordinary ops.

Both directions of a bidirectional op run in one loop, their states stacked (one loop per direction
when their activations differ, or ``stack-directions`` is disabled); the directions' outputs are
concatenated on num_directions.
Following the operator specs exactly (gate orders ``iofc`` and ``zrh``, default activations,
``activation_alpha/beta``, ``clip`` on every activation input, GRU's ``linear_before_reset``,
LSTM's peepholes and ``input_forget``, ``layout``, ``initial_h/c``). Two rewrites make the loop
cheaper and are exact up to float rounding:

* ``X·Wᵀ + Wb (+ Rb)`` does not depend on the hidden state, so it is computed for all steps
  before the loop (one MatMul) and the loop iterates over its rows.
* ``sequence_lens``: each batch item stops at its own length. Inside the loop a mask
  ``t < len[b]`` keeps the state (``Where``) and zeroes ``Y`` past the end, as the spec says;
  the reverse direction reads each item's first ``len[b]`` steps backwards, which is
  ``ReverseSequence`` before the loop and again on ``Y`` after it.

The lowering reads only a :class:`Spec` (IR values in ONNX's layouts and gate orders, plus the
attributes), so any frontend can use it: ONNX builds one with ``_parse``; the OpenVINO frontend
maps its layouts and gate orders onto one. :func:`lower` makes the loops, :func:`stack_directions`
joins the directions, and :func:`step` is a single step without a loop (the ``*Cell`` ops).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper

from loopc.errors import FrontendError, UnsupportedOpError, located
from loopc.limits import check_constant
from loopc.frontend.onnx.importer import Context, Scope, lookup
from loopc.frontend.emit import I64, Emitter
from loopc.frontend.onnx.loops import emitter, result_value
from loopc.frontend.onnx.registry import translates
from loopc.ir import Graph, Loop, LoopIterator, LoopOutput, Recurrence, Value
from loopc.ir.core import Dim

#: name -> (uses alpha, uses beta, default alpha, default beta), as onnxruntime reads the lists.
_ACTIVATIONS: dict[str, tuple[bool, bool, float, float]] = {
    "relu": (False, False, 0.0, 0.0), "tanh": (False, False, 0.0, 0.0), "sigmoid": (False, False, 0.0, 0.0),
    "softsign": (False, False, 0.0, 0.0), "softplus": (False, False, 0.0, 0.0),
    "affine": (True, True, 1.0, 0.0), "leakyrelu": (True, False, 0.01, 0.0),
    "thresholdedrelu": (True, False, 1.0, 0.0), "scaledtanh": (True, True, 1.0, 1.0),
    "hardsigmoid": (True, True, 0.2, 0.5), "elu": (True, False, 1.0, 0.0),
}
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


@translates("RNN")
def translate_rnn(ctx: Context, node: onnx.NodeProto, scope: Scope, graph: Graph) -> None:
    _translate(ctx, node, scope, graph, RNN)


@translates("GRU")
def translate_gru(ctx: Context, node: onnx.NodeProto, scope: Scope, graph: Graph) -> None:
    _translate(ctx, node, scope, graph, GRU)


@translates("LSTM")
def translate_lstm(ctx: Context, node: onnx.NodeProto, scope: Scope, graph: Graph) -> None:
    _translate(ctx, node, scope, graph, LSTM)


def _translate(ctx: Context, node: onnx.NodeProto, scope: Scope, graph: Graph, cell: Cell) -> None:
    spec = _parse(ctx, node, scope, cell)
    em = emitter(ctx, node, graph)
    names = list(node.output) + [""] * (1 + cell.state_outputs - len(node.output))
    per_dir = lower(em, spec, want_y=bool(names[0]), stack_directions=ctx.stack_directions)
    # Y is [seq, dirs, batch, H] (layout 0) or [batch, seq, dirs, H]; Y_h/Y_c [dirs, batch, H] or [batch, dirs, H].
    y_axis = 1 if spec.layout == 0 else 2
    state_axis = 0 if spec.layout == 0 else 1
    for k, name in enumerate(names[: 1 + cell.state_outputs]):
        if not name:
            continue
        out = result_value(ctx, name, spec.dtype, None)
        stack_directions(em, [outs[k] for outs in per_dir], y_axis if k == 0 else state_axis, out)
        scope.bind(name, out)


def lower(em: Emitter, spec: Spec, want_y: bool = True, stack_directions: bool = True) -> list[list[Value | None]]:
    """The loop(s) of ``spec``; per direction ``[Y, H_last, C_last]`` without the directions axis (Y is
    None unless ``want_y``; C_last None but for LSTM). Both directions share one loop if
    ``stack_directions`` and their activations agree."""
    if stack_directions and len(spec.directions) == 2 and spec.activations[0] == spec.activations[1]:
        return _loop(em, spec, [0, 1], want_y)
    return [_loop(em, spec, [d], want_y)[0] for d in range(len(spec.directions))]


def stack_directions(em: Emitter, parts: list[Value | None], axis: int, out: Value | None = None) -> Value:
    """The directions' values joined on a new directions axis at ``axis`` (into ``out`` if given)."""
    values = [p for p in parts if p is not None]
    assert len(values) == len(parts) and values
    dtype = values[0].dtype
    unsqueezed = [em.op("Unsqueeze", [v, em.const([axis], np.int64)], dtype=dtype,
                        out=out if len(values) == 1 else None) for v in values]
    if len(unsqueezed) == 1:
        return unsqueezed[0]
    return em.op("Concat", unsqueezed, {"axis": axis}, dtype=dtype, out=out)


def step(em: Emitter, spec: Spec, h: Value, c: Value | None = None) -> tuple[Value, Value | None]:
    """One step without a loop (a ``*Cell`` op): ``spec.x`` is this step's input [batch, input] and
    W/R/B/P keep a directions axis of size 1; ``h``/``c`` are the states [batch, H]. Returns (H, C)."""
    weights = _weights(em, spec, 0)
    return _cell(em, spec, weights, spec.activations[0], weights.xw, h, c)


# ------------------------------------------------------------------------------------------ parsing


def _parse(ctx: Context, node: onnx.NodeProto, scope: Scope, cell: Cell) -> Spec:
    what = ctx.describe(node)
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    attrs = {k: v.decode() if isinstance(v, bytes) else v for k, v in attrs.items()}
    names = list(node.input) + [""] * 8
    if len(node.input) < 3 or not all(names[:3]):
        raise located(FrontendError, what, f"{cell.op} needs inputs X, W and R")
    get = [lookup(ctx, node, scope, n) if n else None for n in names[:8]]
    x, w, r = get[0], get[1], get[2]
    assert x is not None and w is not None and r is not None  # named, as just checked
    direction = attrs.get("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise located(FrontendError, what, f"direction {direction!r} is not forward, reverse or bidirectional")
    directions = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}[direction]
    layout = int(attrs.get("layout", 0))
    if layout not in (0, 1):
        raise located(FrontendError, what, f"layout {layout} is not 0 or 1")
    lens = get[4]
    if lens is not None and lens.dtype is not None and lens.dtype.kind not in "iu":
        raise located(FrontendError, what, f"sequence_lens {lens.name!r} must be an integer tensor, not {lens.dtype}")
    operands = dict(zip(("X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"), get))
    if cell is not LSTM:
        operands["initial_c"] = operands["P"] = None
    hidden = check_operands(ctx, node, cell, operands, direction, layout, attrs.get("hidden_size"))
    return Spec(
        cell=cell, x=x, w=w, r=r, b=get[3], lens=lens, h0=get[5],
        c0=get[6] if cell is LSTM else None, p=get[7] if cell is LSTM else None,
        directions=directions, layout=layout,
        clip=float(attrs["clip"]) if "clip" in attrs else None,
        hidden=hidden,
        activations=_activations(what, cell, attrs, len(directions)),
        linear_before_reset=bool(attrs.get("linear_before_reset", 0)),
        input_forget=bool(attrs.get("input_forget", 0)),
    )


def check_operands(ctx: Context, node: onnx.NodeProto, cell: Cell, operands: dict[str, Value | None],
                   direction: str, layout: int, hidden_size: int | None) -> int | None:
    """Each operand's shape against the attributes and the others', where both are static.

    Returns the hidden size the weights fix (R's last dim, else W's rows / gates), or None when only
    the running model knows it: ``hidden_size`` alone never sizes a tensor loopc makes, so a huge one
    without weights to match costs an error at run time, not memory now.
    """
    if hidden_size is not None and hidden_size < 1:
        raise ctx.error(node, f"hidden_size={hidden_size} must be positive")
    ranks = {"X": 3, "W": 3, "R": 3, "B": 2, "sequence_lens": 1, "initial_h": 3, "initial_c": 3, "P": 2}
    shapes: dict[str, tuple[Any, ...]] = {}
    for role, value in operands.items():
        if value is not None and value.shape is not None:
            if len(value.shape) != ranks[role]:
                raise ctx.error(node, f"{role} {value.name!r} has shape {_show(value.shape)}; {cell.op} takes a "
                                f"rank-{ranks[role]} {role}")
            shapes[role] = value.shape
    dirs, gates = (2 if direction == "bidirectional" else 1), cell.gates
    weights_hidden = _static(shapes.get("R"), 2) or _divided(_static(shapes.get("R"), 1), gates) \
        or _divided(_static(shapes.get("W"), 1), gates)
    hidden = hidden_size if hidden_size is not None else weights_hidden
    inputs = _static(shapes.get("X"), 2) or _static(shapes.get("W"), 2)
    batch = _static(shapes.get("X"), 1 if layout == 0 else 0)
    gh = gates * hidden if hidden is not None else None
    state = (dirs, batch, hidden) if layout == 0 else (batch, dirs, hidden)
    expected = {"W": (dirs, gh, inputs), "R": (dirs, gh, hidden), "B": (dirs, 2 * gh if gh else None),
                "sequence_lens": (batch,), "initial_h": state, "initial_c": state,
                "P": (dirs, 3 * hidden if hidden is not None else None)}
    for role, want in expected.items():
        have = shapes.get(role)
        if have is not None and any(isinstance(h, int) and isinstance(w, int) and h != w for h, w in zip(have, want)):
            value = operands[role]
            assert value is not None
            given = f"hidden_size {hidden}" if hidden_size is not None else f"hidden size {hidden} (from the weights)"
            raise ctx.error(node, f"{role} {value.name!r} has shape {_show(have)}, but {cell.op} with "
                            f"direction={direction!r} ({dirs} direction{'s' if dirs > 1 else ''}), {given} and "
                            f"batch {batch if batch is not None else '?'} needs {_show(want)}")
    return weights_hidden


def _static(shape: tuple[Any, ...] | None, axis: int) -> int | None:
    if shape is None or axis >= len(shape):
        return None
    dim = shape[axis]
    return dim if isinstance(dim, int) else None


def _divided(dim: int | None, by: int) -> int | None:
    return dim // by if dim is not None and dim % by == 0 and dim else None


def _show(shape: tuple[Any, ...]) -> str:
    return "[" + ", ".join(str(d) if isinstance(d, int) else "?" for d in shape) + "]"


def _activations(what: str, cell: Cell, attrs: dict[str, Any], dirs: int) -> list[list[Activation]]:
    """Activation functions per direction; alphas and betas are consumed in order by the functions
    that take them, and the others use their defaults."""
    names = [a.decode() if isinstance(a, bytes) else a for a in attrs.get("activations", [])]
    names = names or list(cell.activations) * dirs
    per_dir = len(cell.activations)
    if len(names) != per_dir * dirs:
        raise located(FrontendError, what, f"{len(names)} activations given; {cell.op} needs {per_dir} per direction "
                      f"({per_dir * dirs} in all)")
    alphas, betas = list(attrs.get("activation_alpha", [])), list(attrs.get("activation_beta", []))
    resolved = []
    for name in names:
        key = name.lower()
        if key not in _ACTIVATIONS:
            raise located(UnsupportedOpError, what, f"activation {name!r} is not one the ONNX spec defines")
        uses_alpha, uses_beta, alpha, beta = _ACTIVATIONS[key]
        if uses_alpha and alphas:
            alpha = float(alphas.pop(0))
        if uses_beta and betas:
            beta = float(betas.pop(0))
        resolved.append(Activation(key, alpha, beta))
    return [resolved[d * per_dir:(d + 1) * per_dir] for d in range(dirs)]


# ----------------------------------------------------------------------------------------- lowering


@dataclass
class Weights:
    """One direction's operands, prepared outside the loop."""

    xw: Value  # X·Wᵀ + biases, [seq, batch, G·H] or [batch, seq, G·H]
    rt: Value  # Rᵀ, [H, G·H]
    rht: Value | None = None  # GRU without linear_before_reset: Rhᵀ
    rb: Value | None = None  # GRU with linear_before_reset: Rb, added to H·Rᵀ
    peep: list[Value] | None = None  # LSTM: Pi, Po, Pf


def _loop(em: Emitter, spec: Spec, dirs: list[int], want_y: bool) -> list[list[Value | None]]:
    """One loop running directions ``dirs`` side by side; per direction (Y, H_last[, C_last]) without
    the dirs axis, Y only when the node's Y output is used.

    Two directions share a loop with their states stacked on a leading directions axis ``[2, batch, H]``:
    one batched product ``h·Rᵀ`` a trip for both, and one pointwise chain, so the serial chain is one
    direction's. Each direction reads its own iterator (the reverse one backwards)."""
    stacked = len(dirs) > 1
    weights = _weights(em, spec, None if stacked else dirs[0])
    dtype = spec.dtype
    lens = None
    if spec.lens is not None:
        lens = em.op("Cast", [spec.lens], {"to": onnx.TensorProto.INT64}, dtype=I64)
    batch, seq, hidden = _dims(spec)
    gates = spec.cell.gates * hidden if isinstance(hidden, int) else None
    reverse = [spec.directions[d] for d in dirs]
    backwards = [r and lens is None for r in reverse]  # iterated backwards, emitted with kREVERSE
    iterators, params = [], []
    for k, d in enumerate(dirs):
        xw = em.op("Gather", [weights.xw, em.const(k, np.int64)], {"axis": 0}, dtype=dtype) if stacked \
            else weights.xw
        if reverse[k] and lens is not None:  # each item's own first len[b] steps, backwards; then forwards
            xw = _reverse_sequence(em, spec, xw, lens)
        params.append(Value(em.name(f"x{d}_t"), dtype, (batch, gates)))
        iterators.append(LoopIterator(params[-1], xw, spec.time_axis, backwards[k]))

    body = Graph(em.name("_".join(f"dir{d}" for d in dirs) + "_body"))
    bem = em.into(body)
    state_shape: tuple[Dim, ...] = (len(dirs), batch, hidden) if stacked else (batch, hidden)
    x_t = bem.op("Concat", [bem.op("Unsqueeze", [x, bem.const([0], np.int64)], dtype=dtype) for x in params],
                 {"axis": 0}, dtype=dtype) if stacked else params[0]
    h0 = _initial(em, spec, spec.h0, dirs)
    c0 = _initial(em, spec, spec.c0, dirs) if spec.cell is LSTM else None
    h = Value(em.name("h"), dtype, state_shape)
    c = Value(em.name("c"), dtype, state_shape) if c0 is not None else None
    counter = Value(em.name("t"), I64, ()) if lens is not None else None
    h_new, c_new = _cell(bem, spec, weights, spec.activations[dirs[0]], x_t, h, c)
    y_t = h_new
    if lens is not None and counter is not None:
        # Past an item's length the state holds and Y is zero (the spec's padding); [batch, 1]
        # broadcasts over the directions axis too.
        lens_col = em.op("Unsqueeze", [lens, em.const([1], np.int64)], dtype=I64)
        live = bem.op("Less", [counter, lens_col], dtype=np.dtype(np.bool_))
        h_new = bem.op("Where", [live, h_new, h], dtype=dtype)
        if want_y:
            y_t = bem.op("Where", [live, y_t, bem.const(0, dtype)], dtype=dtype)
        if c is not None and c_new is not None:
            c_new = bem.op("Where", [live, c_new, c], dtype=dtype)

    recurrences = [Recurrence(h, h0, h_new)]
    h_last = Value(em.name("h_last"), dtype, state_shape)
    outputs = [LoopOutput("last", h, h_last)]
    c_last = None
    if c is not None and c0 is not None and c_new is not None:
        recurrences.append(Recurrence(c, c0, c_new))
        c_last = Value(em.name("c_last"), dtype, state_shape)
        outputs.append(LoopOutput("last", c, c_last))
    ys: list[Value | None] = [None] * len(dirs)
    if want_y:
        for k, d in enumerate(dirs):
            y_k = bem.op("Gather", [y_t, bem.const(k, np.int64)], {"axis": 0}, dtype=dtype) if stacked else y_t
            stacked_y = Value(em.name(f"y{d}"), dtype, (seq, batch, hidden) if spec.layout == 0 else (batch, seq, hidden))
            # Iterating backwards and emitting with kREVERSE puts step t's state at position t, as
            # ONNX's reverse direction does.
            outputs.append(LoopOutput("reverse" if backwards[k] else "concat", y_k, stacked_y, spec.time_axis))
            ys[k] = stacked_y
    loop = Loop(body, trip_count=em.dim(spec.x, spec.time_axis), counter=counter, iterators=iterators,
                recurrences=recurrences, loop_outputs=outputs,
                name=em.name("_".join(f"dir{d}" for d in dirs)), origin=em.origin)
    em.graph.add(loop)
    results: list[list[Value | None]] = []
    for k, y in enumerate(ys):
        if y is not None and reverse[k] and lens is not None:
            y = _reverse_sequence(em, spec, y, lens)
        states = [_direction_of(em, s, k) if stacked and s is not None else s for s in (h_last, c_last)]
        results.append([y, *states])
    return results


def _direction_of(em: Emitter, stacked: Value, k: int) -> Value:
    return em.op("Gather", [stacked, em.const(k, np.int64)], {"axis": 0}, dtype=stacked.dtype)


def _dims(spec: Spec) -> tuple[Dim, Dim, Dim]:
    """(batch, seq, H) as far as the operands' shapes tell: the loop's values are typed as they are made
    (a loop inside another loop's body needs its ranks before any pass runs)."""
    x = spec.x.shape
    batch = x[spec.batch_axis] if x is not None and len(x) == 3 else None
    seq = x[spec.time_axis] if x is not None and len(x) == 3 else None
    r = spec.r.shape
    hidden = spec.hidden if spec.hidden is not None else r[2] if r is not None and len(r) == 3 else None
    return batch, seq, hidden


def _weights(em: Emitter, spec: Spec, d: int | None) -> Weights:
    """Direction ``d``'s operands, or (``d`` None) all directions' stacked on a leading axis and shaped
    to broadcast against a stacked state ``[dirs, batch, ·]``: ``xw`` is then ``[dirs, ...X's axes, G·H]``."""
    dtype = spec.dtype
    index = em.const(d, np.int64) if d is not None else None

    def pick(value: Value, broadcast: list[int]) -> Value:
        if index is not None:
            return em.op("Gather", [value, index], {"axis": 0}, dtype=dtype)
        return em.op("Unsqueeze", [value, em.const(broadcast, np.int64)], dtype=dtype) if broadcast else value

    gate_axis, rank = (0, 2) if d is not None else (1, 3)
    w, r = pick(spec.w, []), pick(spec.r, [])
    x, wt = spec.x, _t(em, w, rank)
    if d is None:  # [1, ...X] · [dirs, 1, I, G·H]
        x = em.op("Unsqueeze", [x, em.const([0], np.int64)], dtype=dtype)
        wt = em.op("Unsqueeze", [wt, em.const([1], np.int64)], dtype=dtype)
    xw = em.op("MatMul", [x, wt], dtype=dtype)
    weights = Weights(xw=xw, rt=_t(em, r, rank))
    if spec.cell is GRU and not spec.linear_before_reset:
        # r ⊙ H is multiplied by Rhᵀ. H·Rᵀ's h columns are then never read; the narrow-products
        # pass drops them from the product (2H² per row instead of 3H²).
        _, _, rh = em.multi("Split", [r], 3, {"axis": gate_axis, "num_outputs": 3}, dtype)
        weights.rht = _t(em, rh, rank)
    if spec.b is not None:
        wb, rb = em.multi("Split", [pick(spec.b, [1])], 2, {"axis": -1, "num_outputs": 2}, dtype)
        if spec.cell is GRU and spec.linear_before_reset:
            # Rbh sits inside r ⊙ (H·Rhᵀ + Rbh): keep Rb with the recurrent product.
            bias, weights.rb = wb, rb
        else:
            bias = em.op("Add", [wb, rb], dtype=dtype)
        if d is None:  # [dirs, 1, G·H] -> [dirs, 1, 1, G·H], against xw's [dirs, seq, batch, G·H]
            bias = em.op("Unsqueeze", [bias, em.const([1], np.int64)], dtype=dtype)
        weights.xw = em.op("Add", [xw, bias], dtype=dtype)
    if spec.p is not None:
        weights.peep = em.multi("Split", [pick(spec.p, [1])], 3, {"axis": -1, "num_outputs": 3}, dtype)
    return weights


def _t(em: Emitter, value: Value, rank: int = 2) -> Value:
    """The last two axes swapped (a matrix, or a stack of them)."""
    perm = [*range(rank - 2), rank - 1, rank - 2]
    return em.op("Transpose", [value], {"perm": perm}, dtype=value.dtype)


def _initial(em: Emitter, spec: Spec, given: Value | None, dirs: list[int]) -> Value:
    """The initial state of directions ``dirs``: [batch, H] for one, [dirs, batch, H] for both; from
    initial_h/initial_c, or zeros."""
    stacked = len(dirs) > 1
    if given is not None:
        if not stacked:
            axis = 0 if spec.layout == 0 else 1
            return em.op("Gather", [given, em.const(dirs[0], np.int64)], {"axis": axis}, dtype=spec.dtype)
        return given if spec.layout == 0 else em.op("Transpose", [given], {"perm": [1, 0, 2]}, dtype=spec.dtype)
    batch_dim = spec.x.shape[spec.batch_axis] if spec.x.shape is not None and len(spec.x.shape) == 3 else None
    if isinstance(batch_dim, int) and spec.hidden is not None:
        size = (batch_dim, spec.hidden) if not stacked else (len(dirs), batch_dim, spec.hidden)
        check_constant(size, spec.dtype, f"{em.origin}: the zero initial state")
    batch = em.dim(spec.x, spec.batch_axis, keep_1d=True)
    hidden = em.const([spec.hidden], np.int64) if spec.hidden is not None else em.dim(spec.r, 2, keep_1d=True)
    dims = [em.const([len(dirs)], np.int64), batch, hidden] if stacked else [batch, hidden]
    shape = em.op("Concat", dims, {"axis": 0}, dtype=I64, shape=(len(dims),))
    return em.op("ConstantOfShape", [shape], {"value": np.zeros(1, spec.dtype)}, dtype=spec.dtype)


def _reverse_sequence(em: Emitter, spec: Spec, value: Value, lens: Value) -> Value:
    return em.op("ReverseSequence", [value, lens], {"batch_axis": spec.batch_axis, "time_axis": spec.time_axis},
                 dtype=value.dtype)


# ----------------------------------------------------------------------------------------- the cells


def _cell(em: Emitter, spec: Spec, wt: Weights, acts: list[Activation], x_t: Value, h: Value,
          c: Value | None) -> tuple[Value, Value | None]:
    """One step: (H_t, C_t) from this step's projected input ``x_t`` and the previous state."""
    dtype = spec.dtype
    if spec.cell is RNN:
        gates = em.op("Add", [x_t, em.op("MatMul", [h, wt.rt], dtype=dtype)], dtype=dtype)
        return _act(em, spec, acts[0], gates), None
    if spec.cell is GRU:
        return _gru(em, spec, wt, acts, x_t, h), None
    assert c is not None
    return _lstm(em, spec, wt, acts, x_t, h, c)


def _gru(em: Emitter, spec: Spec, wt: Weights, acts: list[Activation], x_t: Value, h: Value) -> Value:
    dtype = spec.dtype
    f, g = acts
    xz, xr, xh = em.multi("Split", [x_t], 3, {"axis": -1, "num_outputs": 3}, dtype)
    hr_all = em.op("MatMul", [h, wt.rt], dtype=dtype)
    if spec.linear_before_reset:
        if wt.rb is not None:
            hr_all = em.op("Add", [hr_all, wt.rb], dtype=dtype)
        hz, hr, hh = em.multi("Split", [hr_all], 3, {"axis": -1, "num_outputs": 3}, dtype)
    else:
        hz, hr, _ = em.multi("Split", [hr_all], 3, {"axis": -1, "num_outputs": 3}, dtype)
    z = _act(em, spec, f, em.op("Add", [xz, hz], dtype=dtype))
    r = _act(em, spec, f, em.op("Add", [xr, hr], dtype=dtype))
    if spec.linear_before_reset:
        recurrent = em.op("Mul", [r, hh], dtype=dtype)  # r ⊙ (H·Rhᵀ + Rbh)
    else:
        assert wt.rht is not None
        recurrent = em.op("MatMul", [em.op("Mul", [r, h], dtype=dtype), wt.rht], dtype=dtype)  # (r ⊙ H)·Rhᵀ
    candidate = _act(em, spec, g, em.op("Add", [xh, recurrent], dtype=dtype))
    keep = em.op("Sub", [em.const(1, dtype), z], dtype=dtype)
    return em.op("Add", [em.op("Mul", [keep, candidate], dtype=dtype), em.op("Mul", [z, h], dtype=dtype)],
                 dtype=dtype)


def _lstm(em: Emitter, spec: Spec, wt: Weights, acts: list[Activation], x_t: Value, h: Value,
          c: Value) -> tuple[Value, Value]:
    dtype = spec.dtype
    f, g, hact = acts
    gates = em.op("Add", [x_t, em.op("MatMul", [h, wt.rt], dtype=dtype)], dtype=dtype)
    gi, go, gf, gc = em.multi("Split", [gates], 4, {"axis": -1, "num_outputs": 4}, dtype)
    if wt.peep is not None:
        pi, po, pf = wt.peep
        gi = em.op("Add", [gi, em.op("Mul", [pi, c], dtype=dtype)], dtype=dtype)
        gf = em.op("Add", [gf, em.op("Mul", [pf, c], dtype=dtype)], dtype=dtype)
    i = _act(em, spec, f, gi)
    if spec.input_forget:
        forget = em.op("Sub", [em.const(1, dtype), i], dtype=dtype)  # coupled gates: f = 1 - i
    else:
        forget = _act(em, spec, f, gf)
    cand = _act(em, spec, g, gc)
    c_new = em.op("Add", [em.op("Mul", [forget, c], dtype=dtype), em.op("Mul", [i, cand], dtype=dtype)],
                  dtype=dtype)
    if wt.peep is not None:
        go = em.op("Add", [go, em.op("Mul", [wt.peep[1], c_new], dtype=dtype)], dtype=dtype)
    o = _act(em, spec, f, go)
    h_new = em.op("Mul", [o, _act(em, spec, hact, c_new, clip=False)], dtype=dtype)
    return h_new, c_new


def _act(em: Emitter, spec: Spec, act: Activation, x: Value, clip: bool = True) -> Value:
    """``act(clip(x))``: the spec clips the input of the gate activations."""
    dtype = spec.dtype
    if clip and spec.clip is not None:
        x = em.op("Clip", [x, em.const(-spec.clip, dtype), em.const(spec.clip, dtype)], dtype=dtype)
    if act.name in _PLAIN:
        return em.op(_PLAIN[act.name], [x], dtype=dtype)
    if act.name in ("leakyrelu", "thresholdedrelu", "elu"):
        op = {"leakyrelu": "LeakyRelu", "thresholdedrelu": "ThresholdedRelu", "elu": "Elu"}[act.name]
        return em.op(op, [x], {"alpha": act.alpha}, dtype=dtype)
    if act.name == "hardsigmoid":
        return em.op("HardSigmoid", [x], {"alpha": act.alpha, "beta": act.beta}, dtype=dtype)
    if act.name == "affine":
        scaled = em.op("Mul", [x, em.const(act.alpha, dtype)], dtype=dtype)
        return em.op("Add", [scaled, em.const(act.beta, dtype)], dtype=dtype)
    # scaledtanh: alpha * tanh(beta * x)
    inner = em.op("Tanh", [em.op("Mul", [x, em.const(act.beta, dtype)], dtype=dtype)], dtype=dtype)
    return em.op("Mul", [inner, em.const(act.alpha, dtype)], dtype=dtype)

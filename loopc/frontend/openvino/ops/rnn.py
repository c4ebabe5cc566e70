"""Recurrent ops — ``LSTMSequence-5``, ``GRUSequence-5``, ``RNNSequence-5`` and the ``*Cell`` ops — through
the shared recurrent lowering (:mod:`loopc.frontend.recurrent`): one loop per direction with the input
projection hoisted out of it; a cell is one step of the same math with no loop.

Only the operands are translated, onto the :class:`~loopc.frontend.recurrent.Spec`'s ONNX conventions:

* X ``[batch, seq, input]`` and the initial states ``[batch, dirs, H]`` are ONNX's ``layout=1``; Y is
  ``[batch, dirs, seq, H]``, so the directions axis goes at 1 (ONNX puts it after seq).
* LSTM gates are ``fico`` where ONNX has ``iofc``: W, R and B are reordered with a constant Gather,
  which folds when the weights are constants.
* B is the sum of the input and recurrent biases; ONNX's B is ``[Wb, Rb]``, so Rb is zeros — except
  GRU with ``linear_before_reset``, whose B ``[dirs, 4H]`` is ``[bz, br, Wbh, Rbh]``: Rbh is the part
  ``r`` multiplies and stays with the recurrent product.
* ``clip="0"`` (the default the serializer writes) means no clipping; the specs allow the activations
  ``relu``, ``sigmoid`` and ``tanh``, none of which reads ``activations_alpha/beta``.
* ``sequence_lengths`` is required; a constant equal to the sequence length everywhere (what converters
  write when the source had none) needs no masking and is dropped.

LSTMCell-1 is read as its spec writes it (six inputs, fico). The peepholes input, ``input_forget`` and
a ``weights_format`` other than fico exist in OpenVINO's op class but not in the spec, and OpenVINO
2026.4's CPU plugin computes as if they were absent; loopc refuses them rather than pick a meaning.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from loopc.frontend.openvino.importer import Op
from loopc.frontend.openvino.registry import translates
from loopc.frontend.recurrent import GRU, LSTM, RNN, Activation, Cell, Spec, lower, stack_directions, step
from loopc.ir import Value

#: The activations the OpenVINO specs allow (OpenVINO's CPU plugin refuses others).
ACTIVATIONS = ("relu", "sigmoid", "tanh")
#: Where ONNX's iofc gates sit in OpenVINO's fico order.
FICO_TO_IOFC = (1, 3, 0, 2)
DIRECTIONS = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}


@translates("LSTMSequence", 5)
def lstm_sequence(op: Op) -> list[Value]:
    op.expect_inputs(7)
    return _sequence(op, LSTM)


@translates("GRUSequence", 5)
def gru_sequence(op: Op) -> list[Value]:
    op.expect_inputs(6)
    return _sequence(op, GRU)


@translates("RNNSequence", 5)
def rnn_sequence(op: Op) -> list[Value]:
    op.expect_inputs(6)
    return _sequence(op, RNN)


@translates("LSTMCell", 1, 4)
def lstm_cell(op: Op) -> list[Value]:
    if op.version == 1:
        op.expect_inputs(5, 6, 7)
        _refuse_v1_extras(op)
    else:
        op.expect_inputs(5, 6)
    x, h, c, w, r = op.inputs[:5]
    b = op.inputs[5] if len(op.inputs) > 5 else None
    h_new, c_new = _cell(op, LSTM, x, h, c, w, r, b)
    assert c_new is not None
    return [h_new, c_new]


@translates("GRUCell", 3)
def gru_cell(op: Op) -> list[Value]:
    op.expect_inputs(4, 5)
    x, h, w, r = op.inputs[:4]
    return [_cell(op, GRU, x, h, None, w, r, op.inputs[4] if len(op.inputs) > 4 else None)[0]]


@translates("RNNCell", 1)
def rnn_cell(op: Op) -> list[Value]:
    op.expect_inputs(4, 5)
    x, h, w, r = op.inputs[:4]
    return [_cell(op, RNN, x, h, None, w, r, op.inputs[4] if len(op.inputs) > 4 else None)[0]]


# ------------------------------------------------------------------------------------------ sequences


def _sequence(op: Op, cell: Cell) -> list[Value]:
    """X, H0[, C0], sequence_lengths, W, R, B: the LSTM has C0 as input 2."""
    lens_index = 3 if cell is LSTM else 2
    x, h0 = op.inputs[:2]
    c0 = op.inputs[2] if cell is LSTM else None
    lens, w, r, b = op.inputs[lens_index:]
    directions = DIRECTIONS[op.choice_attr("direction", tuple(DIRECTIONS))]
    _expect_rank(op, 0, "X", 3)
    if lens.dtype is not None and lens.dtype.kind not in "iu":
        raise op.error(f"input {lens_index} (sequence_lengths) must be an integer tensor, not {lens.dtype}")
    spec = replace(_spec(op, cell, x, w, r, b, _hidden(op), len(directions)), h0=h0, c0=c0,
                   lens=_needed_lengths(op, x, lens_index), directions=directions, layout=1)
    per_dir = lower(op.em, spec, stack_directions=op.ctx.stack_directions)
    # Y [batch, dirs, seq, H]; Ho and Co [batch, dirs, H]: the directions axis is 1 for all of them.
    return [stack_directions(op.em, [outs[k] for outs in per_dir], 1) for k in range(1 + cell.state_outputs)]


def _needed_lengths(op: Op, x: Value, k: int) -> Value | None:
    """Input ``k`` (sequence_lengths), or None when it is a constant that runs every item to the end."""
    value = op.constant(k)
    seq = x.shape[1] if x.shape is not None and len(x.shape) == 3 else None
    if value is not None and value.size and isinstance(seq, int) and np.all(value == seq):
        return None
    return op.inputs[k]


# -------------------------------------------------------------------------------------------- cells


def _cell(op: Op, cell: Cell, x: Value, h: Value, c: Value | None, w: Value, r: Value,
          b: Value | None) -> tuple[Value, Value | None]:
    _expect_rank(op, 0, "X", 2)
    em = op.em
    axis0 = em.const([0], np.int64)
    w, r = (em.op("Unsqueeze", [v, axis0]) for v in (w, r))
    b = em.op("Unsqueeze", [b, axis0]) if b is not None else None
    spec = _spec(op, cell, x, w, r, b, _hidden(op), 1)
    return step(em, spec, h, c)


def _refuse_v1_extras(op: Op) -> None:
    """LSTMCell-1's attributes and input beyond its spec (see the module docstring)."""
    if len(op.inputs) == 7:
        peepholes = op.constant(6)
        if peepholes is None or np.any(peepholes != 0):
            raise op.unsupported("input 6 (peepholes P) is not in the LSTMCell-1 spec and OpenVINO ignores it; "
                                 "remove it (or make it zeros) to compute what OpenVINO computes")
    if op.bool_attr("input_forget", False):
        raise op.unsupported("input_forget=true is not in the LSTMCell-1 spec and OpenVINO ignores it; "
                             "set it to false to compute what OpenVINO computes")
    fmt = op.attr("weights_format", "fico").lower()
    if fmt != "fico":
        raise op.unsupported(f"weights_format={fmt!r}: OpenVINO reads LSTMCell-1 weights as fico whatever "
                             f"this says; reorder W, R and B to fico and set weights_format=\"fico\"")


# ------------------------------------------------------------------------------------------- common


def _spec(op: Op, cell: Cell, x: Value, w: Value, r: Value, b: Value | None, hidden: int, dirs: int) -> Spec:
    """The Spec with W/R/B (all with a directions axis) in ONNX's gate order and bias layout."""
    for value, role in ((w, "W"), (r, "R")):
        shape = value.shape
        if shape is not None and len(shape) == 3 and isinstance(shape[1], int) and shape[1] != cell.gates * hidden:
            raise op.error(f"input {role} has {shape[1]} rows; {cell.op} with hidden_size={hidden} needs "
                           f"{cell.gates} x {hidden} = {cell.gates * hidden}")
    if cell is LSTM:
        w, r = _fico_to_iofc(op, w, hidden), _fico_to_iofc(op, r, hidden)
        b = _fico_to_iofc(op, b, hidden) if b is not None else None
    linear_before_reset = cell is GRU and op.bool_attr("linear_before_reset", False)
    clip = op.float_attr("clip", 0.0)
    if clip < 0 or not np.isfinite(clip):
        raise op.error(f"attribute clip={clip} is not a positive number (0 means no clipping)")
    return Spec(cell=cell, x=x, w=w, r=r, b=_onnx_bias(op, b, hidden, dirs, cell, linear_before_reset),
                lens=None, h0=None, c0=None, p=None, directions=[False], layout=0, clip=clip or None,
                hidden=hidden, activations=[_activations(op, cell)] * dirs,
                linear_before_reset=linear_before_reset, input_forget=False)


def _fico_to_iofc(op: Op, value: Value, hidden: int) -> Value:
    index = np.concatenate([np.arange(hidden) + gate * hidden for gate in FICO_TO_IOFC])
    return op.op("Gather", [value, op.const(index, np.int64)], {"axis": 1})


def _onnx_bias(op: Op, b: Value | None, hidden: int, dirs: int, cell: Cell, linear_before_reset: bool) -> Value | None:
    """OpenVINO's summed B as ONNX's ``[Wb, Rb]`` (GRU with linear_before_reset: Rb holds only Rbh)."""
    if b is None:
        return None
    dtype = b.dtype or np.dtype(np.float32)
    gates = cell.gates * hidden
    if not linear_before_reset:
        return op.op("Concat", [b, op.const(np.zeros((dirs, gates), dtype))], {"axis": 1})
    shape = b.shape
    if shape is not None and len(shape) == 2 and isinstance(shape[1], int) and shape[1] != 4 * hidden:
        raise op.error(f"input B has {shape[1]} columns; with linear_before_reset it is [bz, br, Wbh, Rbh], "
                       f"4 x {hidden} = {4 * hidden}")
    wb = _columns(op, b, 0, gates)
    rbh = _columns(op, b, gates, gates + hidden)
    return op.op("Concat", [wb, op.const(np.zeros((dirs, 2 * hidden), dtype)), rbh], {"axis": 1})


def _columns(op: Op, value: Value, start: int, end: int) -> Value:
    return op.op("Slice", [value, op.const([start], np.int64), op.const([end], np.int64), op.const([1], np.int64)])


def _activations(op: Op, cell: Cell) -> list[Activation]:
    text = op.attr("activations", "")
    names = [n.strip().lower() for n in text.split(",") if n.strip()] or [a.lower() for a in cell.activations]
    if len(names) != len(cell.activations):
        raise op.error(f"attribute activations lists {len(names)} function(s); {op.layer.type} takes "
                       f"{len(cell.activations)}")
    for name in names:
        if name not in ACTIVATIONS:
            raise op.unsupported(f"activation {name!r} is not one of {', '.join(ACTIVATIONS)} (the ones the "
                                 f"{op.layer.type} spec allows)")
    return [Activation(name, 0.0, 0.0) for name in names]


def _hidden(op: Op) -> int:
    hidden = op.int_attr("hidden_size")
    if hidden <= 0:
        raise op.error(f"attribute hidden_size={hidden} must be positive")
    return hidden


def _expect_rank(op: Op, k: int, role: str, rank: int) -> None:
    shape = op.inputs[k].shape
    if shape is not None and len(shape) != rank:
        raise op.error(f"input {k} ({role}) has rank {len(shape)}; {op.layer.type} takes rank {rank}")

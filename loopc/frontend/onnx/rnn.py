"""ONNX ``RNN``, ``GRU`` and ``LSTM`` nodes read into a :class:`~loopc.frontend.recurrent.Spec` and lowered
by :mod:`loopc.frontend.recurrent`.

What is ONNX's here: the optional inputs (an empty name), ``direction`` and ``layout``, the
operands' shapes checked against each other and ``hidden_size``, and the activation lists with
their ``activation_alpha/beta`` consumed in order by the functions that take them (the others keep
their defaults, as onnxruntime reads the lists). Y and Y_h/Y_c get the directions axis where the
node's ``layout`` puts it.
"""

from __future__ import annotations

from typing import Any

import onnx
from onnx import helper

from loopc.errors import FrontendError, UnsupportedOpError, located
from loopc.frontend.onnx.importer import Context, Scope, lookup
from loopc.frontend.onnx.loops import emitter, result_value
from loopc.frontend.onnx.registry import translates
from loopc.frontend.recurrent import GRU, LSTM, RNN, Activation, Cell, Spec, lower, stack_directions
from loopc.ir import Graph, Value

#: name -> (uses alpha, uses beta, default alpha, default beta), as onnxruntime reads the lists.
_ACTIVATIONS: dict[str, tuple[bool, bool, float, float]] = {
    "relu": (False, False, 0.0, 0.0), "tanh": (False, False, 0.0, 0.0), "sigmoid": (False, False, 0.0, 0.0),
    "softsign": (False, False, 0.0, 0.0), "softplus": (False, False, 0.0, 0.0),
    "affine": (True, True, 1.0, 0.0), "leakyrelu": (True, False, 0.01, 0.0),
    "thresholdedrelu": (True, False, 1.0, 0.0), "scaledtanh": (True, True, 1.0, 1.0),
    "hardsigmoid": (True, True, 0.2, 0.5), "elu": (True, False, 1.0, 0.0),
}


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

"""One-input pointwise ops: TensorRT Unary and Activation layers (ONNX attribute defaults applied),
and the activations TensorRT lacks, composed from them (HardSwish, Mish, Celu, Shrink, IsInf, PRelu)."""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.registry import converter
from loopc.ir import Node
from loopc.semantics.attributes import attr
from loopc.trt import trt

_UNARY = {
    "Neg": "NEG", "Abs": "ABS", "Exp": "EXP", "Log": "LOG", "Sqrt": "SQRT", "Reciprocal": "RECIP",
    "Floor": "FLOOR", "Ceil": "CEIL", "Sin": "SIN", "Cos": "COS", "Tan": "TAN", "Asin": "ASIN", "Acos": "ACOS",
    "Atan": "ATAN", "Sinh": "SINH", "Cosh": "COSH", "Asinh": "ASINH", "Acosh": "ACOSH", "Atanh": "ATANH",
    "Erf": "ERF", "Sign": "SIGN", "Round": "ROUND", "Not": "NOT", "IsNaN": "ISNAN",
}


@converter(*_UNARY)
def unary(ctx: ConversionContext, node: Node) -> None:
    ctx.set(node.outputs[0], ctx.unary(ctx.get(node.inputs[0], node), _UNARY[node.op], node))


#: op → (ActivationType, alpha attribute and default, beta attribute and default)
_ACTIVATION: dict[str, tuple[str, tuple[str, float] | None, tuple[str, float] | None]] = {
    "Relu": ("RELU", None, None),
    "Sigmoid": ("SIGMOID", None, None),
    "Tanh": ("TANH", None, None),
    "LeakyRelu": ("LEAKY_RELU", ("alpha", 0.01), None),
    "Elu": ("ELU", ("alpha", 1.0), None),
    "Selu": ("SELU", ("alpha", 1.67326319217681884765625), ("gamma", 1.05070102214813232421875)),
    "Softsign": ("SOFTSIGN", None, None),
    "HardSigmoid": ("HARD_SIGMOID", ("alpha", 0.2), ("beta", 0.5)),
    "ThresholdedRelu": ("THRESHOLDED_RELU", ("alpha", 1.0), None),
}


@converter(*_ACTIVATION)
def activation(ctx: ConversionContext, node: Node) -> None:
    kind, alpha, beta = _ACTIVATION[node.op]
    layer = ctx.network.add_activation(ctx.get(node.inputs[0], node), getattr(trt().ActivationType, kind))
    if alpha is not None:
        layer.alpha = float(node.attrs.get(alpha[0], alpha[1]))
    if beta is not None:
        layer.beta = float(node.attrs.get(beta[0], beta[1]))
    ctx.set(node.outputs[0], ctx.out(layer, node))


@converter("Softplus")
def softplus(ctx: ConversionContext, node: Node) -> None:
    """ONNX Softplus is log(1 + e^x): TensorRT's alpha * log(1 + e^(beta x)) with alpha = beta = 1."""
    layer = ctx.network.add_activation(ctx.get(node.inputs[0], node), trt().ActivationType.SOFTPLUS)
    layer.alpha, layer.beta = 1.0, 1.0
    ctx.set(node.outputs[0], ctx.out(layer, node))


@converter("Gelu")
def gelu(ctx: ConversionContext, node: Node) -> None:
    kind = "GELU_TANH" if attr(node, "approximate") == "tanh" else "GELU_ERF"
    layer = ctx.network.add_activation(ctx.get(node.inputs[0], node), getattr(trt().ActivationType, kind))
    ctx.set(node.outputs[0], ctx.out(layer, node))


@converter("Clip")
def clip(ctx: ConversionContext, node: Node) -> None:
    """max(min) with the optional bound inputs; works for every type, unlike the CLIP activation."""
    x = ctx.get(node.inputs[0], node)
    bounds = list(node.inputs[1:3]) + [None] * (3 - len(node.inputs))
    low, high = bounds[0], bounds[1]
    y = x
    if low is not None:
        y = ctx.elementwise(y, ctx.get(low, node), "MAX", node, "low" if high is not None else "")
    if high is not None:
        y = ctx.elementwise(y, ctx.get(high, node), "MIN", node)
    if y is x:
        y = ctx.out(ctx.network.add_identity(x), node)
    ctx.set(node.outputs[0], y)


def scalar_like(ctx: ConversionContext, value: float, x: Any, node: Node, suffix: str) -> Any:
    """``value`` in ``x``'s type and rank (BF16 constants are made in FLOAT, then cast)."""
    return ctx.cast(ctx.scalar(value, x, node, suffix), x.dtype, node, f"{suffix}_typed")


def _activate(ctx: ConversionContext, node: Node, x: Any, kind: str, alpha: float = 0.0, beta: float = 0.0,
              suffix: str = "") -> Any:
    layer = ctx.network.add_activation(x, getattr(trt().ActivationType, kind))
    layer.alpha, layer.beta = alpha, beta
    return ctx.out(layer, node, suffix)


@converter("HardSwish")
def hard_swish(ctx: ConversionContext, node: Node) -> None:
    """x * max(0, min(1, x / 6 + 1/2))."""
    x = ctx.get(node.inputs[0], node)
    gate = _activate(ctx, node, x, "HARD_SIGMOID", 1 / 6, 0.5, "gate")
    ctx.set(node.outputs[0], ctx.elementwise(x, gate, "PROD", node))


@converter("Mish")
def mish(ctx: ConversionContext, node: Node) -> None:
    """x * tanh(log(1 + e^x))."""
    x = ctx.get(node.inputs[0], node)
    soft = _activate(ctx, node, x, "SOFTPLUS", 1.0, 1.0, "softplus")
    ctx.set(node.outputs[0], ctx.elementwise(x, _activate(ctx, node, soft, "TANH", suffix="tanh"), "PROD", node))


@converter("Celu")
def celu(ctx: ConversionContext, node: Node) -> None:
    """max(0, x) + min(0, alpha * (e^(x / alpha) - 1))."""
    x = ctx.get(node.inputs[0], node)
    alpha = float(attr(node, "alpha"))
    a, one, zero = (scalar_like(ctx, v, x, node, name) for v, name in ((alpha, "alpha"), (1, "one"), (0, "zero")))
    grown = ctx.unary(ctx.elementwise(x, a, "DIV", node, "scaled"), "EXP", node, "exp")
    elu = ctx.elementwise(ctx.elementwise(grown, one, "SUB", node, "expm1"), a, "PROD", node, "elu")
    negative = ctx.elementwise(elu, zero, "MIN", node, "negative")
    positive = _activate(ctx, node, x, "RELU", suffix="positive")
    ctx.set(node.outputs[0], ctx.elementwise(positive, negative, "SUM", node))


@converter("Shrink")
def shrink(ctx: ConversionContext, node: Node) -> None:
    """x + bias below -lambd, x - bias above lambd, 0 between."""
    x = ctx.get(node.inputs[0], node)
    lambd, bias = float(attr(node, "lambd")), float(attr(node, "bias"))
    below = ctx.elementwise(x, scalar_like(ctx, -lambd, x, node, "low"), "LESS", node, "below")
    above = ctx.elementwise(x, scalar_like(ctx, lambd, x, node, "high"), "GREATER", node, "above")
    b = scalar_like(ctx, bias, x, node, "bias")
    zero = scalar_like(ctx, 0, x, node, "zero")
    minus, plus = ctx.elementwise(x, b, "SUB", node, "minus"), ctx.elementwise(x, b, "SUM", node, "plus")
    upper = ctx.out(ctx.network.add_select(above, minus, zero), node, "upper")
    ctx.set(node.outputs[0], ctx.out(ctx.network.add_select(below, plus, upper), node))


@converter("IsInf")
def is_inf(ctx: ConversionContext, node: Node) -> None:
    """Infinities of the signs asked for: both is ISINF, one sign compares with that infinity."""
    x = ctx.get(node.inputs[0], node)
    positive, negative = bool(attr(node, "detect_positive")), bool(attr(node, "detect_negative"))
    if positive and negative:
        ctx.set(node.outputs[0], ctx.unary(x, "ISINF", node))
    elif positive or negative:
        inf = scalar_like(ctx, np.inf if positive else -np.inf, x, node, "inf")
        ctx.set(node.outputs[0], ctx.elementwise(x, inf, "EQUAL", node))
    else:
        never = ctx.constant(np.zeros((1,) * len(x.shape), bool), node, "never")
        ctx.set(node.outputs[0], ctx.elementwise(ctx.unary(x, "ISINF", node, "isinf"), never, "AND", node))


@converter("PRelu")
def prelu(ctx: ConversionContext, node: Node) -> None:
    """IParametricReLULayer; the slope broadcasts to the input (unidirectionally, as ONNX says)."""
    x, slope = (ctx.get(v, node) for v in node.inputs)
    x, slope = ctx.broadcast([x, slope], node)
    ctx.set(node.outputs[0], ctx.out(ctx.network.add_parametric_relu(x, slope), node))


def _swish(ctx: ConversionContext, node: Node, x: Any, suffix: str = "") -> Any:
    """x * sigmoid(alpha * x)."""
    alpha = float(node.attrs.get("alpha", 1.0))
    scaled = x if alpha == 1.0 else ctx.elementwise(x, scalar_like(ctx, alpha, x, node, "alpha"), "PROD", node,
                                                    "scaled")
    gate = _activate(ctx, node, scaled, "SIGMOID", suffix="sigmoid")
    return ctx.elementwise(x, gate, "PROD", node, suffix)


@converter("Swish")
def swish(ctx: ConversionContext, node: Node) -> None:
    ctx.set(node.outputs[0], _swish(ctx, node, ctx.get(node.inputs[0], node)))


@converter("SwiGLU")
def swiglu(ctx: ConversionContext, node: Node) -> None:
    """Swish(A) * B, with A and B of one shape."""
    gate = _swish(ctx, node, ctx.get(node.inputs[0], node), "swish")
    ctx.set(node.outputs[0], ctx.elementwise(gate, ctx.get(node.inputs[1], node), "PROD", node))

"""One-input pointwise ops: TensorRT Unary and Activation layers (ONNX attribute defaults applied)."""

from __future__ import annotations

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.registry import converter
from loopc.ir import Node
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
    kind = "GELU_TANH" if node.attrs.get("approximate", "none") == "tanh" else "GELU_ERF"
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

"""Binary and variadic pointwise ops: arithmetic, comparisons, logic.

TensorRT's ElementWise layer needs equal ranks and equal types; ONNX guarantees the types (Pow
excepted) and ``ctx.elementwise`` adds the leading unit axes NumPy broadcasting implies.
"""

from __future__ import annotations

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.registry import converter
from loopc.ir import Node
from loopc.trt import trt

_BINARY = {
    "Add": "SUM", "Sub": "SUB", "Mul": "PROD", "Div": "DIV", "Equal": "EQUAL", "Greater": "GREATER",
    "Less": "LESS", "And": "AND", "Or": "OR", "Xor": "XOR",
}


@converter(*_BINARY)
def binary(ctx: ConversionContext, node: Node) -> None:
    a, b = (ctx.get(v, node) for v in node.inputs)
    ctx.set(node.outputs[0], ctx.elementwise(a, b, _BINARY[node.op], node))


@converter("GreaterOrEqual", "LessOrEqual")
def ordered_or_equal(ctx: ConversionContext, node: Node) -> None:
    """a >= b is not (a < b): TensorRT has no >= (NaN operands differ, as in most compilers)."""
    a, b = (ctx.get(v, node) for v in node.inputs)
    strict = ctx.elementwise(a, b, "LESS" if node.op == "GreaterOrEqual" else "GREATER", node, "strict")
    ctx.set(node.outputs[0], ctx.unary(strict, "NOT", node))


@converter("Pow")
def power(ctx: ConversionContext, node: Node) -> None:
    """ONNX lets the exponent's type differ from the base's; TensorRT computes in the base's."""
    a, b = (ctx.get(v, node) for v in node.inputs)
    b = ctx.cast(b, a.dtype, node, "exponent")
    ctx.set(node.outputs[0], ctx.elementwise(a, b, "POW", node))


@converter("Max", "Min", "Sum", "Mean")
def variadic(ctx: ConversionContext, node: Node) -> None:
    op = {"Max": "MAX", "Min": "MIN", "Sum": "SUM", "Mean": "SUM"}[node.op]
    tensors = [ctx.get(v, node) for v in node.inputs if v is not None]
    acc = tensors[0]
    for k, t in enumerate(tensors[1:]):
        last = k == len(tensors) - 2 and node.op != "Mean"
        acc = ctx.elementwise(acc, t, op, node, "" if last else f"fold{k}")
    if node.op == "Mean":
        acc = ctx.elementwise(acc, ctx.scalar(len(tensors), acc, node, "count"), "DIV", node)
    elif len(tensors) == 1:
        acc = ctx.out(ctx.network.add_identity(acc), node)
    ctx.set(node.outputs[0], acc)


@converter("Mod")
def mod(ctx: ConversionContext, node: Node) -> None:
    """fmod=0: a - b * floor(a / b) (sign of the divisor); fmod=1: a - b * trunc(a / b)."""
    a, b = (ctx.get(v, node) for v in node.inputs)
    is_int = a.dtype in (trt().int32, trt().int64, trt().int8)
    if node.attrs.get("fmod", 0) == 0:
        q = ctx.elementwise(a, b, "FLOOR_DIV", node, "quotient")
    elif is_int:
        q = ctx.elementwise(a, b, "DIV", node, "quotient")  # integer kDIV truncates toward zero
    else:
        ratio = ctx.elementwise(a, b, "DIV", node, "ratio")
        magnitude = ctx.unary(ctx.unary(ratio, "ABS", node, "abs"), "FLOOR", node, "floor")
        q = ctx.elementwise(ctx.unary(ratio, "SIGN", node, "sign"), magnitude, "PROD", node, "quotient")
    product = ctx.elementwise(b, q, "PROD", node, "product")
    ctx.set(node.outputs[0], ctx.elementwise(a, product, "SUB", node))

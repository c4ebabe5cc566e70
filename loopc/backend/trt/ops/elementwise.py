"""Binary and variadic pointwise ops: arithmetic, comparisons, logic.

TensorRT's ElementWise layer needs equal ranks and equal types; ONNX guarantees the types (Pow
excepted) and ``ctx.elementwise`` adds the leading unit axes NumPy broadcasting implies.

ONNX's narrow integers wrap around (uint8 200 + 100 is 44); TensorRT computes none of them in its own
width: its ElementWise layer refuses UInt8 (and INT8 is its quantized type), and int16, uint16 and
uint32 are carried in INT32 or INT64 (see ``ctx.constant``). Their arithmetic is computed in the wider
type and wrapped back to the model's width (:func:`_operands`, :func:`_result`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext, trt_dtype
from loopc.backend.trt.registry import converter
from loopc.ir import Node
from loopc.semantics.attributes import attr
from loopc.trt import trt

_BINARY = {
    "Add": "SUM", "Sub": "SUB", "Mul": "PROD", "Div": "DIV", "Equal": "EQUAL", "Greater": "GREATER",
    "Less": "LESS", "And": "AND", "Or": "OR", "Xor": "XOR",
}
#: Operations whose result is BOOL.
_BOOLEAN = frozenset({"EQUAL", "GREATER", "LESS", "AND", "OR", "XOR"})
#: Operations whose wide result can leave a narrow type's range (Div, Mod, Max and Min stay in it).
_MAY_WRAP = frozenset({"SUM", "SUB", "PROD"})
#: ONNX integer types computed wider than they are: (bits, signed).
_NARROW = {np.dtype(name): width for name, width in {
    "uint8": (8, False), "int8": (8, True), "uint16": (16, False), "int16": (16, True), "uint32": (32, False)}.items()}


def _narrow(node: Node) -> tuple[int, bool] | None:
    """The width and signedness of the node's operands when they are a narrow integer type."""
    value = node.inputs[0]
    return None if value is None or value.dtype is None else _NARROW.get(value.dtype)


def _operands(ctx: ConversionContext, node: Node) -> tuple[list[Any], Any]:
    """The node's input tensors, each in INT32 when it is UInt8 or INT8 (which TensorRT does not compute
    in), and the TensorRT type results are to have: the IR's (a uint8 value may be held in INT32, see
    :func:`_result`)."""
    variadic = node.op in ("Max", "Min", "Sum", "Mean")  # their inputs may be left out; others are required
    tensors = [ctx.get(v, node) for v in node.inputs if v is not None or not variadic]
    first = next(v for v in node.inputs if v is not None)
    dtype = tensors[0].dtype if first.dtype is None else trt_dtype(first.dtype)
    narrow = (trt().uint8, trt().int8)
    return [ctx.cast(t, trt().int32, node, f"int32_{k}") if t.dtype in narrow else t
            for k, t in enumerate(tensors)], dtype


def _adjusted(tensor: Any, dtype: Any, ops: set[str], node: Node) -> bool:
    """Whether :func:`_result` adds layers after ``tensor`` (so that it is not the node's own output)."""
    return tensor.dtype not in (dtype, trt().bool) or (bool(ops & _MAY_WRAP) and _narrow(node) is not None)


def _result(ctx: ConversionContext, tensor: Any, dtype: Any, ops: set[str], node: Node) -> Any:
    """``tensor`` (computed by ``ops``) back in ``dtype``, wrapped around to the operands' width. A UInt8
    result stays INT32 (its values 0..255) unless it leaves the network: TensorRT holds UINT8 only at the
    network's edges, and the wrap-around follows the IR's type, not the tensor's."""
    if tensor.dtype == trt().bool:
        return tensor
    narrow = _narrow(node)
    if ops & _MAY_WRAP and narrow is not None:
        tensor = wrap_around(ctx, tensor, *narrow, node)
    if dtype == trt().uint8 and node.outputs[0] not in ctx.reserved:
        return tensor
    return ctx.cast(tensor, dtype, node, "narrowed")


def wrap_around(ctx: ConversionContext, tensor: Any, bits: int, signed: bool, node: Node) -> Any:
    """An integer ``tensor`` computed wider than ``bits`` wrapped around to that width, in its own type:
    t mod 2**bits, or ((t + 2**(bits-1)) mod 2**bits) - 2**(bits-1) when signed. The wide type's own
    overflow (uint16 products in INT32) wraps modulo a multiple of 2**bits, which keeps the residue."""
    if signed:
        tensor = ctx.elementwise(tensor, ctx.scalar(1 << (bits - 1), tensor, node, "half"), "SUM", node, "offset")
    modulus = ctx.scalar(1 << bits, tensor, node, "modulus")
    turns = ctx.elementwise(tensor, modulus, "FLOOR_DIV", node, "turns")
    tensor = ctx.elementwise(tensor, ctx.elementwise(turns, modulus, "PROD", node, "wrapped"), "SUB", node, "modulo")
    if signed:
        tensor = ctx.elementwise(tensor, ctx.scalar(1 << (bits - 1), tensor, node, "half_back"), "SUB", node,
                                 "signed")
    return tensor


@converter(*_BINARY)
def binary(ctx: ConversionContext, node: Node) -> None:
    (a, b), dtype = _operands(ctx, node)
    op = _BINARY[node.op]
    wide = op not in _BOOLEAN and _adjusted(a, dtype, {op}, node)
    computed = ctx.elementwise(a, b, op, node, "wide" if wide else "")
    ctx.set(node.outputs[0], _result(ctx, computed, dtype, {op}, node))


@converter("GreaterOrEqual", "LessOrEqual")
def ordered_or_equal(ctx: ConversionContext, node: Node) -> None:
    """a >= b is not (a < b): TensorRT has no >= (NaN operands differ, as in most compilers)."""
    (a, b), _ = _operands(ctx, node)
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
    tensors, dtype = _operands(ctx, node)
    acc = tensors[0]
    for k, t in enumerate(tensors[1:]):
        last = k == len(tensors) - 2 and node.op != "Mean" and not _adjusted(acc, dtype, {op}, node)
        acc = ctx.elementwise(acc, t, op, node, "" if last else f"fold{k}")
    acc = _result(ctx, acc, dtype, {op} if len(tensors) > 1 else set(), node)
    if node.op == "Mean":
        acc = ctx.elementwise(acc, ctx.scalar(len(tensors), acc, node, "count"), "DIV", node)
    elif acc is tensors[0]:  # one input, nothing computed: the output is a tensor of its own
        acc = ctx.out(ctx.network.add_identity(acc), node)
    ctx.set(node.outputs[0], acc)


@converter("Mod")
def mod(ctx: ConversionContext, node: Node) -> None:
    """Integers (UInt8 and INT8 in INT32): a - b * q, q = floor(a / b) for fmod=0 (the divisor's sign), TensorRT's
    truncating integer kDIV for fmod=1. Floats: see :func:`_float_mod`."""
    (a, b), dtype = _operands(ctx, node)
    fmod = bool(attr(node, "fmod"))
    if a.dtype not in (trt().int32, trt().int64, trt().int8):
        ctx.set(node.outputs[0], _float_mod(ctx, node, a, b, fmod))
        return
    q = ctx.elementwise(a, b, "DIV" if fmod else "FLOOR_DIV", node, "quotient")
    product = ctx.elementwise(b, q, "PROD", node, "product")
    wide = _adjusted(a, dtype, set(), node)
    remainder = ctx.elementwise(a, product, "SUB", node, "remainder" if wide else "")
    ctx.set(node.outputs[0], _result(ctx, remainder, dtype, set(), node))


def _float_mod(ctx: ConversionContext, node: Node, a: Any, b: Any, fmod: bool) -> Any:
    """C's fmod, r = a - b * trunc(a / b), except r = a where trunc(a / b) is 0: |a| < |b| takes nothing
    away, and b * 0 would be NaN for an infinite b (fmod(3, inf) is 3). fmod=0 (Python's %, NumPy's mod)
    then moves a nonzero r of the other sign than b by b (-3 mod inf is inf). A zero result has the sign of
    a (fmod=1) or of b (fmod=0), as C and Python give it. NaN and infinite dividends and zero divisors stay
    NaN: trunc(a / b) is NaN or infinite there, never 0."""
    ratio = ctx.elementwise(a, b, "DIV", node, "ratio")
    magnitude = ctx.unary(ctx.unary(ratio, "ABS", node, "abs"), "FLOOR", node, "floor")
    q = ctx.elementwise(ctx.unary(ratio, "SIGN", node, "sign"), magnitude, "PROD", node, "quotient")
    a, b = ctx.broadcast([a, b], node)
    zero = ctx.scalar(0, a, node, "zero")
    none_taken = ctx.elementwise(q, zero, "EQUAL", node, "none_taken")
    taken = ctx.elementwise(a, ctx.elementwise(b, q, "PROD", node, "product"), "SUB", node, "taken")
    r = ctx.out(ctx.network.add_select(none_taken, a, taken), node, "fmod")
    if not fmod:
        other_side = ctx.elementwise(ctx.elementwise(r, zero, "LESS", node, "r_negative"),
                                     ctx.elementwise(b, zero, "LESS", node, "b_negative"), "XOR", node, "other_side")
        nonzero = ctx.unary(ctx.elementwise(r, zero, "EQUAL", node, "r_zero"), "NOT", node, "r_nonzero")
        moved = ctx.elementwise(r, b, "SUM", node, "moved")
        move = ctx.elementwise(nonzero, other_side, "AND", node, "move")
        r = ctx.out(ctx.network.add_select(move, moved, r), node, "floor_mod")
    # a * 0 is a's signed zero (a is finite where r is 0); b may be infinite there, so b's sign is SIGN(b) * 0
    sign_of = a if fmod else ctx.unary(b, "SIGN", node, "b_sign")
    signed_zero = ctx.elementwise(sign_of, zero, "PROD", node, "signed_zero")
    is_zero = ctx.elementwise(r, zero, "EQUAL", node, "is_zero")
    return ctx.out(ctx.network.add_select(is_zero, signed_zero, r), node)

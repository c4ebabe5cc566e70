"""BitwiseAnd, BitwiseOr, BitwiseXor and BitwiseNot on integers, which TensorRT has no layer for.

Not is arithmetic: ~a is -a - 1 in two's complement, and (2**bits - 1) - a unsigned. The binary ops take the
operands apart into bits along a new last axis — bit k of a is floor(a / 2**k) mod 2, which floor division
gives in two's complement for negative a too — combine the bits arithmetically (and: ab, or: a + b - ab,
xor: a + b - 2ab) and sum them back with their weights; a signed type's top bit is the sign (a < 0), whose
weight is -2**(bits-1). Every step is exact integer arithmetic in the operands' TensorRT type.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.ops.elementwise import _operands, _result
from loopc.backend.trt.registry import converter
from loopc.ir import Node
from loopc.trt import trt

#: (bits, signed) of each integer type ONNX's bitwise ops take. uint64 is held in INT64 with the same bit
#: pattern, which its two's complement reading takes apart into the same bits.
_WIDTH = {"int8": (8, True), "uint8": (8, False), "int16": (16, True), "uint16": (16, False),
          "int32": (32, True), "uint32": (32, False), "int64": (64, True), "uint64": (64, True)}


def _width(node: Node) -> tuple[int, bool] | None:
    value = node.inputs[0]
    return None if value is None or value.dtype is None else _WIDTH.get(value.dtype.name)


def _integers(node: Node) -> str | None:
    if _width(node) is None:
        value = node.inputs[0]
        return f"{node.op} of {None if value is None else value.dtype} (loopc computes it on integer types)"
    return None


def _checked_width(node: Node) -> tuple[int, bool]:
    width = _width(node)
    assert width is not None  # the capability check refused any other type
    return width


def _bits(ctx: ConversionContext, x: Any, bits: int, signed: bool, node: Node, name: str) -> Any:
    """``x`` with a new last axis of its low bits, 0 or 1 in ``x``'s type (the sign bit apart when signed)."""
    low = bits - 1 if signed else bits
    powers = np.array([1 << k for k in range(low)])
    rank = len(x.shape)
    weights = ctx.constant(powers.reshape((1,) * rank + (low,)), node, f"{name}_powers", dtype=_np(x))
    spread = ctx.unsqueeze(x, [rank], node, f"{name}_spread")
    shifted = ctx.elementwise(spread, weights, "FLOOR_DIV", node, f"{name}_shifted")
    two = ctx.scalar(2, shifted, node, f"{name}_two")
    halves = ctx.elementwise(ctx.elementwise(shifted, two, "FLOOR_DIV", node, f"{name}_halved"), two, "PROD", node,
                             f"{name}_evens")
    return ctx.elementwise(shifted, halves, "SUB", node, f"{name}_bits")


def _np(x: Any) -> Any:
    return np.int64 if x.dtype == trt().int64 else np.int32


def _combine(ctx: ConversionContext, a: Any, b: Any, op: str, node: Node, name: str) -> Any:
    """One bit of ``a op b`` from bits ``a`` and ``b`` (each 0 or 1), by arithmetic."""
    both = ctx.elementwise(a, b, "PROD", node, f"{name}_both")
    if op == "BitwiseAnd":
        return both
    either = ctx.elementwise(a, b, "SUM", node, f"{name}_sum")
    twice = 1 if op == "BitwiseOr" else 2
    if twice == 2:
        both = ctx.elementwise(both, ctx.scalar(2, both, node, f"{name}_two"), "PROD", node, f"{name}_twice")
    return ctx.elementwise(either, both, "SUB", node, f"{name}_bit")


@converter("BitwiseAnd", "BitwiseOr", "BitwiseXor", capability=_integers)
def bitwise(ctx: ConversionContext, node: Node) -> None:
    (a, b), dtype = _operands(ctx, node)
    if a.dtype != b.dtype:  # both are the IR's type; a uint8 one may be held in INT32 beside a constant
        b = ctx.cast(b, a.dtype, node, "same_type")
    bits, signed = _checked_width(node)
    combined = _combine(ctx, _bits(ctx, a, bits, signed, node, "a"), _bits(ctx, b, bits, signed, node, "b"),
                        node.op, node, "low")
    rank = len(combined.shape) - 1
    weights = ctx.constant(np.array([1 << k for k in range(combined.shape[-1])]).reshape((1,) * rank + (-1,)),
                           node, "weights", dtype=_np(combined))
    weighted = ctx.elementwise(combined, weights, "PROD", node, "weighted")
    reduce = ctx.network.add_reduce(weighted, trt().ReduceOperation.SUM, 1 << rank, False)
    value = ctx.out(reduce, node, "low_sum")
    if signed:
        zero = ctx.scalar(0, a, node, "zero")
        signs = [ctx.cast(ctx.elementwise(t, zero, "LESS", node, f"{k}_negative"), a.dtype, node, f"{k}_sign")
                 for k, t in (("a", a), ("b", b))]
        sign = _combine(ctx, signs[0], signs[1], node.op, node, "sign")
        top = ctx.elementwise(sign, ctx.scalar(-(1 << (bits - 1)), sign, node, "top"), "PROD", node, "top_bit")
        value = ctx.elementwise(value, top, "SUM", node, "with_sign")
    ctx.set(node.outputs[0], _result(ctx, value, dtype, set(), node))


@converter("BitwiseNot", capability=_integers)
def bitwise_not(ctx: ConversionContext, node: Node) -> None:
    (x,), dtype = _operands(ctx, node)
    bits, signed = _checked_width(node)
    negated = ctx.elementwise(ctx.scalar(-1 if signed else (1 << bits) - 1, x, node, "ones"), x, "SUB", node,
                              "flipped")
    ctx.set(node.outputs[0], _result(ctx, negated, dtype, set(), node))

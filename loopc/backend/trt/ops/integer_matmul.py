"""MatMulInteger: ``(A - a_zero_point) · (B - b_zero_point)`` in int32, as onnxruntime's dynamic quantizer writes it.

TensorRT multiplies matrices in float (or in int8 through Q/DQ layers, which have no zero point), so the
operands are widened to float32, centered, multiplied and cast to int32. The result is exact while each
sum of products stays below 2^24 (8-bit operands: inner dims up to 256 at full range); the quantizer
follows it with a Cast to float and a scale, so any rounding beyond that is that of a float product.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext, np_dtype
from loopc.backend.trt.ops.linalg import matmul
from loopc.backend.trt.registry import converter
from loopc.ir import Node, Value
from loopc.trt import trt


def _wide(ctx: ConversionContext, node: Node, t: Any, suffix: str) -> Any:
    """An 8-bit tensor's values in float32: an int8 one through a Dequantize of scale 1 (TensorRT lets int8
    feed only Q/DQ layers), others through a cast."""
    if np_dtype(t.dtype) == np.int8:
        one = ctx.constant(np.array(1.0, np.float32), node, f"{suffix}_unit")
        return ctx.out(ctx.network.add_dequantize(t, one, trt().float32), node, suffix)
    return ctx.cast(t, trt().float32, node, suffix)


def _centered(ctx: ConversionContext, node: Node, x: Any, zero: Value | None, row: bool, suffix: str) -> Any:
    """``x - zero`` in float; A's 1-D zero point is per row (a column vector), B's per column."""
    if zero is None:
        return x
    known = ctx.constant_of(zero)
    if known is not None:
        if not np.any(known):
            return x
        z = ctx.constant(np.asarray(known, np.float32), node, f"{suffix}_zero")
    else:
        z = _wide(ctx, node, ctx.get(zero, node), f"{suffix}_zero")
    if row and len(z.shape) == 1:
        z = ctx.unsqueeze(z, [1], node, f"{suffix}_zero_rows")
    return ctx.elementwise(x, z, "SUB", node, f"{suffix}_centered")


@converter("MatMulInteger")
def matmul_integer(ctx: ConversionContext, node: Node) -> None:
    a_zero = node.inputs[2] if len(node.inputs) > 2 else None
    b_zero = node.inputs[3] if len(node.inputs) > 3 else None
    a = _centered(ctx, node, _wide(ctx, node, ctx.get(node.inputs[0], node), "a"), a_zero, True, "a")
    b = _centered(ctx, node, _wide(ctx, node, ctx.get(node.inputs[1], node), "b"), b_zero, False, "b")
    product = matmul(ctx, node, a, b, suffix="product")
    ctx.set(node.outputs[0], ctx.cast(ctx.unary(product, "ROUND", node, "rounded"), trt().int32, node))

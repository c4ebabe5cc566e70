"""Products: MatMul (NumPy semantics, 1-D operands included), Gemm, Einsum."""

from __future__ import annotations

from typing import Any

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.registry import converter
from loopc.ir import Node
from loopc.semantics.attributes import attr
from loopc.trt import trt


def matmul(ctx: ConversionContext, node: Node, a: Any, b: Any, trans_a: bool = False, trans_b: bool = False,
           suffix: str = "") -> Any:
    """NumPy matmul: a 1-D operand becomes a row (a) or column (b) and its unit axis is dropped after.

    The collection (batch) dims must be equally many in TensorRT, so the lower-rank side gets
    leading unit axes.
    """
    T = trt()
    drop = []
    if len(a.shape) == 1:
        a = ctx.unsqueeze(a, [0], node, "row")
        drop.append(-2)
    if len(b.shape) == 1:
        b = ctx.unsqueeze(b, [1], node, "column")
        drop.append(-1)
    a, b = ctx.broadcast([a, b], node)
    op_a = T.MatrixOperation.TRANSPOSE if trans_a else T.MatrixOperation.NONE
    op_b = T.MatrixOperation.TRANSPOSE if trans_b else T.MatrixOperation.NONE
    layer = ctx.network.add_matrix_multiply(a, op_a, b, op_b)
    y = ctx.out(layer, node, suffix if not drop else "matmul")
    if drop:
        rank = len(y.shape)
        y = ctx.squeeze(y, [d % rank for d in drop], node, suffix)
    return y


@converter("MatMul")
def matmul_op(ctx: ConversionContext, node: Node) -> None:
    a, b = (ctx.get(v, node) for v in node.inputs)
    ctx.set(node.outputs[0], matmul(ctx, node, a, b))


@converter("Gemm")
def gemm(ctx: ConversionContext, node: Node) -> None:
    """alpha * op(A) op(B) + beta * C, the transposes folded into the matrix multiply."""
    a, b = (ctx.get(v, node) for v in node.inputs[:2])
    c = node.inputs[2] if len(node.inputs) > 2 else None
    alpha, beta = float(attr(node, "alpha")), float(attr(node, "beta"))
    last = c is None and alpha == 1.0
    y = matmul(ctx, node, a, b, bool(attr(node, "transA")), bool(attr(node, "transB")),
               "" if last else "matmul")
    if alpha != 1.0:
        y = ctx.elementwise(y, ctx.scalar(alpha, y, node, "alpha"), "PROD", node, "alpha_y" if c else "")
    if c is not None:
        ct = ctx.get(c, node)
        if beta != 1.0:
            ct = ctx.elementwise(ct, ctx.scalar(beta, ct, node, "beta"), "PROD", node, "beta_c")
        y = ctx.elementwise(y, ct, "SUM", node)
    ctx.set(node.outputs[0], y)


@converter("Einsum")
def einsum(ctx: ConversionContext, node: Node) -> None:
    equation = "".join(str(node.attrs["equation"]).split())
    layer = ctx.network.add_einsum([ctx.get(v, node) for v in node.inputs], equation)
    ctx.set(node.outputs[0], ctx.out(layer, node))

"""Products: MatMul (NumPy semantics, 1-D operands included), Gemm, Einsum.

An operand that a Transpose of its last two dims makes, beside the product, is read untransposed with
``MatrixOperation.TRANSPOSE`` instead of through the Transpose's shuffle (left unread, which the builder drops):
the layout :mod:`loopc.passes.weight_layout` gives weights (``[out, in]``, read transposed), which TensorRT
stores once however many products read it.
"""

from __future__ import annotations

from typing import Any

from loopc.backend.trt.context import ConversionContext, trt_dtype
from loopc.backend.trt.registry import converter
from loopc.ir import Node, Value
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


#: Float types a Cast may take a transposed operand to and still be read untransposed (then cast).
_FLOATS = ("float64", "float32", "float16", "bfloat16")


def _operand(ctx: ConversionContext, node: Node, slot: int) -> tuple[Any, bool]:
    """Operand ``slot``'s tensor and whether to read it transposed: the source of a Transpose of its last two
    dims made in the product's own graph (so the source is readable here too), through a Cast between float
    types (half precision casts the transposed weight), read with ``MatrixOperation.TRANSPOSE``."""
    value = node.inputs[slot]
    assert value is not None
    cast, moved = None, value.producer
    if moved is not None and moved.op == "Cast" and moved.graph is node.graph and _float(moved.outputs[0]) \
            and moved.inputs[0] is not None and _float(moved.inputs[0]):
        cast, moved = moved, moved.inputs[0].producer
    if moved is None or moved.graph is not node.graph or not _swaps_last_two(moved):
        return ctx.get(value, node), False
    source = ctx.get(moved.inputs[0], node)
    if cast is not None:
        source = ctx.cast(source, trt_dtype(cast.outputs[0].dtype), node, f"in{slot}_cast")
    return source, True


def read_through(transpose: Node) -> bool:
    """Whether every reader of ``transpose``'s result is a product of its graph that reads its source transposed
    (:func:`_operand`), so that no layer needs the result itself (weight-layout's ``Transpose(Wᵀ)``)."""
    result = transpose.outputs[0]
    return _swaps_last_two(transpose) and result.is_used() and all(
        isinstance(user, Node) and user.op == "MatMul" and user.graph is transpose.graph and slot < 2
        for user, slot in result.uses())


def _float(value: Value) -> bool:
    return value.dtype is not None and value.dtype.name in _FLOATS


def _swaps_last_two(node: Node) -> bool:
    """Whether ``node`` is a Transpose that swaps its operand's last two dims and keeps the others."""
    operand = node.inputs[0] if node.op == "Transpose" and node.inputs else None
    if operand is None or operand.shape is None or len(operand.shape) < 2:
        return False
    rank = len(operand.shape)
    perm = [int(p) % rank for p in node.attrs.get("perm", range(rank - 1, -1, -1))]
    return perm == [*range(rank - 2), rank - 1, rank - 2]


@converter("MatMul")
def matmul_op(ctx: ConversionContext, node: Node) -> None:
    (a, trans_a), (b, trans_b) = (_operand(ctx, node, slot) for slot in (0, 1))
    ctx.set(node.outputs[0], matmul(ctx, node, a, b, trans_a, trans_b))


@converter("Gemm")
def gemm(ctx: ConversionContext, node: Node) -> None:
    """alpha * op(A) op(B) + beta * C, the transposes folded into the matrix multiply."""
    (a, moved_a), (b, moved_b) = (_operand(ctx, node, slot) for slot in (0, 1))
    c = node.inputs[2] if len(node.inputs) > 2 else None
    alpha, beta = float(attr(node, "alpha")), float(attr(node, "beta"))
    last = c is None and alpha == 1.0
    y = matmul(ctx, node, a, b, bool(attr(node, "transA")) != moved_a, bool(attr(node, "transB")) != moved_b,
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

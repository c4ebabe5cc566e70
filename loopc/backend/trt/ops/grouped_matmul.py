"""GroupedMatMul (opset 29): each token's row times the weight matrices of the groups (experts) it selects.

``output[m, i] = input[m] @ weights[group_indices[m, i]] (+ bias[group_indices[m, i]])``, input [M, K],
weights [G, K, N], group_indices [M, S], output [M, S, N]. ONNX defines it as a function that gathers
the selected weights ([M, S, K, N], a copy of a weight matrix per token and selection) and multiplies.
Here every token is multiplied by every group's weights in one matrix multiply ([G, M, N], the weights
read as they are), and each token's selections are gathered from the products: the memory is the
products' (M·G·N), never a K·N-sized copy per token, at the cost of G/S times the multiplications.
"""

from __future__ import annotations

from typing import Any

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.ops.linalg import matmul
from loopc.backend.trt.registry import converter, node_error, unsupported
from loopc.ir import Node

#: The rank each operand must have: input, weights, group_indices, bias.
_RANKS = ((0, "input", 2), (1, "weights", 3), (2, "group_indices", 2), (3, "bias", 2))


@converter("GroupedMatMul")
def grouped_matmul(ctx: ConversionContext, node: Node) -> None:
    operands: list[Any] = [ctx.get(v, node) if v is not None else None for v in node.inputs]
    for index, name, rank in _RANKS:
        given = operands[index] if index < len(operands) else None
        if given is not None and len(given.shape) != rank:
            raise unsupported(node, f"{name} of rank {len(given.shape)} (GroupedMatMul takes rank {rank})")
    x, weights, indices = operands[:3]
    bias = operands[3] if len(operands) > 3 else None
    _check_static_dims(node, x, weights, indices, bias)
    products = matmul(ctx, node, ctx.unsqueeze(x, [0], node, "rows"), weights, suffix="products")  # [G, M, N]
    if bias is not None:
        products = ctx.elementwise(products, ctx.unsqueeze(bias, [1], node, "bias_rows"), "SUM", node, "biased")
    by_token = ctx.network.add_shuffle(products)
    by_token.first_transpose = (1, 0, 2)  # [M, G, N]: token m's products with every group
    picked = ctx.network.add_gather(ctx.out(by_token, node, "by_token"), indices, 1)
    picked.num_elementwise_dims = 1  # token m's selections pick among token m's products
    ctx.set(node.outputs[0], ctx.out(picked, node))


def _check_static_dims(node: Node, x: Any, weights: Any, indices: Any, bias: Any) -> None:
    """The dims the operands share agree where they are known (TensorRT would say less, later)."""
    pairs = [("input's K", x.shape[1], "weights' K", weights.shape[1]),
             ("input's M", x.shape[0], "group_indices' M", indices.shape[0])]
    if bias is not None:
        pairs += [("bias' G", bias.shape[0], "weights' G", weights.shape[0]),
                  ("bias' N", bias.shape[1], "weights' N", weights.shape[2])]
    for left, a, right, b in pairs:
        if -1 not in (a, b) and a != b:
            raise node_error(node, f"{left} is {a} but {right} is {b}; GroupedMatMul needs them equal",
                             hint="fix the operands' shapes")

"""ScaledDotProductAttention-13 as its spec's pseudo-code: ``softmax(Q·Kᵀ·scale + bias)·V``.

The bias is a causal mask (``-inf`` above the diagonal of the ``[L, S]`` scores, top-left aligned, the
attention_mask input ignored), else the mask (boolean: ``-inf`` where false; numbers: added), else
nothing. The scale defaults to ``1 / sqrt(E)``. MatMul broadcasts the batch dims of Q, K and V as
the op does.
"""

from __future__ import annotations

import numpy as np

from loopc.frontend.openvino.importer import Op
from loopc.frontend.openvino.ops._common import cast, dim, optional_input
from loopc.frontend.openvino.registry import translates
from loopc.ir import Value


@translates("ScaledDotProductAttention", 13)
def scaled_dot_product_attention(op: Op) -> list[Value]:
    op.expect_inputs(3, 4, 5)
    query, key, value = op.inputs[:3]
    rank = op.rank(0)
    if min(rank, op.rank(1), op.rank(2)) < 3:
        raise op.error("query, key and value need rank 3 or more ([N, ..., L or S, E])")
    dtype = query.dtype if query.dtype is not None else np.dtype(np.float32)
    scale = optional_input(op, 4)
    if scale is None:
        depth = dim(query, rank - 1)
        if depth is not None:
            scale = op.const(1.0 / np.sqrt(np.float64(depth)), dtype)
        else:
            scale = op.op("Reciprocal", [op.op("Sqrt", [cast(op, op.em.dim(query, rank - 1), dtype)])])
    key_t = op.op("Transpose", [key], {"perm": list(range(op.rank(1) - 2)) + [op.rank(1) - 1, op.rank(1) - 2]})
    scores = op.op("Mul", [op.op("MatMul", [query, key_t]), scale])
    bias = _causal(op, query, key, dtype) if op.bool_attr("causal", False) else _mask(op, dtype)
    if bias is not None:
        scores = op.op("Add", [scores, bias])
    weights = op.op("Softmax", [scores], {"axis": -1})
    return [op.op("MatMul", [weights, value])]


def _causal(op: Op, query: Value, key: Value, dtype: np.dtype) -> Value:
    """``[L, S]``: 0 where the key position is at most the query's, -inf after."""
    one, zero = op.const(1, np.int64), op.const(0, np.int64)
    rows = op.op("Range", [zero, op.em.dim(query, op.rank(0) - 2), one])
    cols = op.op("Range", [zero, op.em.dim(key, op.rank(1) - 2), one])
    later = op.op("Greater", [op.op("Unsqueeze", [cols, op.const([0], np.int64)]),
                              op.op("Unsqueeze", [rows, op.const([1], np.int64)])])
    return op.op("Where", [later, op.const(-np.inf, dtype), op.const(0, dtype)])


def _mask(op: Op, dtype: np.dtype) -> Value | None:
    mask = optional_input(op, 3)
    if mask is None:
        return None
    if mask.dtype == np.dtype(np.bool_):
        return op.op("Where", [mask, op.const(0, dtype), op.const(-np.inf, dtype)])
    return mask

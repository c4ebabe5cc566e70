"""AdaptiveAvgPool-8 and AdaptiveMaxPool-8: output bin ``i`` of ``O`` along an axis of length ``I`` pools
``[floor(i * I / O), ceil((i + 1) * I / O))``.

Where every axis divides evenly the bins are a plain pool with kernel = stride = ``I / O``. Otherwise
the bins differ in size, and each axis is pooled on its own (both pools are separable): an average
is a product with a constant ``[I, O]`` matrix of bin weights, a maximum a Concat of one ReduceMax
per bin. The spatial dims must be static. AdaptiveMaxPool's indices count within each channel's
spatial dims; loopc gives them where the bins are even (see :func:`pooling.max_indices`).
"""

from __future__ import annotations

import numpy as np

from loopc.frontend.openvino.importer import Op
from loopc.frontend.openvino.ops._common import cast, const_ints, dim, output_used
from loopc.frontend.openvino.ops._window import Window, spatial_rank
from loopc.frontend.openvino.ops.pooling import max_indices
from loopc.frontend.openvino.registry import translates
from loopc.ir import Value


def _bins(op: Op) -> tuple[list[int], list[int]]:
    """The input's spatial lengths and the output's."""
    op.expect_inputs(2)
    n = spatial_rank(op)
    outputs = const_ints(op, 1, "output_shape")
    if len(outputs) != n or any(o < 1 for o in outputs):
        raise op.error(f"output_shape {outputs} must hold {n} positive lengths")
    sizes = [dim(op.inputs[0], 2 + k) for k in range(n)]
    lengths = [s for s in sizes if s is not None]
    if len(lengths) != n:
        raise op.unsupported(f"spatial dims {op.inputs[0].shape} that are not static: the bins depend on them")
    return lengths, outputs


def _edges(length: int, count: int) -> list[tuple[int, int]]:
    return [(i * length // count, -(-(i + 1) * length // count)) for i in range(count)]


def _even(lengths: list[int], outputs: list[int]) -> Window | None:
    if any(size % out for size, out in zip(lengths, outputs)):
        return None
    kernel = [size // out for size, out in zip(lengths, outputs)]
    n = len(kernel)
    return Window(kernel, kernel, [1] * n, [0] * n, [0] * n)


@translates("AdaptiveAvgPool", 8)
def adaptive_avg_pool(op: Op) -> list[Value]:
    lengths, outputs = _bins(op)
    x = op.inputs[0]
    w = _even(lengths, outputs)
    if w is not None:
        return [op.op("AveragePool", [x], {"kernel_shape": w.kernel, "strides": w.strides})]
    rank = op.rank(0)
    dtype = x.dtype if x.dtype is not None else np.dtype(np.float32)
    for k, (size, out) in enumerate(zip(lengths, outputs)):
        if size == out:
            continue
        weights = np.zeros((size, out), dtype)
        for i, (a, b) in enumerate(_edges(size, out)):
            weights[a:b, i] = 1.0 / (b - a)
        perm = [a for a in range(rank) if a != 2 + k] + [2 + k]  # the axis last, for the product
        moved = op.op("Transpose", [x], {"perm": perm})
        pooled = op.op("MatMul", [moved, op.const(weights)])
        x = op.op("Transpose", [pooled], {"perm": [int(a) for a in np.argsort(perm)]})
    return [x]


@translates("AdaptiveMaxPool", 8)
def adaptive_max_pool(op: Op) -> list[Value]:
    lengths, outputs = _bins(op)
    x = op.inputs[0]
    index_type = op.dtype_attr("index_element_type") if "index_element_type" in op.layer.data else np.dtype(np.int64)
    if index_type not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise op.error(f"index_element_type {index_type} is not i32 or i64")
    w = _even(lengths, outputs)
    if w is not None:
        pooled = op.op("MaxPool", [x], {"kernel_shape": w.kernel, "strides": w.strides})
    else:
        pooled = x
        for k, (size, out) in enumerate(zip(lengths, outputs)):
            if size == out:
                continue
            axis = op.const([2 + k], np.int64)
            pieces = [op.op("ReduceMax", [op.op("Slice", [pooled, op.const([a], np.int64), op.const([b], np.int64),
                                                          axis]), axis], {"keepdims": 1})
                      for a, b in _edges(size, out)]
            pooled = op.op("Concat", pieces, {"axis": 2 + k})
    if not output_used(op, 1):
        _, dead = op.em.multi("MaxPool", [x], 2, {"kernel_shape": [1] * len(lengths)})  # nothing reads it; goes
        return [pooled, dead]
    if w is None:
        raise op.unsupported(f"the indices output with bins of unequal size ({lengths} into {outputs}): loopc "
                             f"finds indices for even bins only")
    return [pooled, cast(op, max_indices(op, x, pooled, w, 2), index_type)]

"""Normalizations: BatchNormInference-1/5, GroupNormalization-12 and LRN-1, as ONNX's ops of the same name.

GroupNormalization-12 is ONNX's GroupNormalization-21 (per-channel scale and bias, epsilon inside the
square root). LRN sums squares over a window of ``size`` centred on each element; across channels
(axes ``[1]``) with an odd size that is ONNX's LRN, which divides alpha by the size as OpenVINO does;
over all the spatial axes it is an including-pad AveragePool of the squares. OpenVINO's CPU plugin
departs from its spec on even sizes (a window one shorter), fractional biases (1.5 acts as 1) and
other axes sets: loopc refuses those rather than pick a meaning.
"""

from __future__ import annotations

import numpy as np

from loopc.frontend.openvino.importer import Op
from loopc.frontend.openvino.ops._common import axes, const_ints
from loopc.frontend.openvino.registry import translates
from loopc.ir import Value


@translates("GroupNormalization", 12)
def group_normalization(op: Op) -> list[Value]:
    op.expect_inputs(3)
    if op.rank(0) < 2:
        raise op.error(f"the data has rank {op.rank(0)}; it needs a channel axis (axis 1)")
    groups = op.int_attr("num_groups")
    if groups < 1:
        raise op.error(f"num_groups {groups} must be positive")
    attrs = {"epsilon": op.float_attr("epsilon"), "num_groups": groups}
    x = op.inputs[0]
    # ONNX infers no shape through GroupNormalization's function body here; the output is the input's type.
    return [op.em.op("GroupNormalization", list(op.inputs), attrs, dtype=x.dtype, shape=x.shape)]


@translates("BatchNormInference", 1, 5)
def batch_norm_inference(op: Op) -> list[Value]:
    """ONNX's BatchNormalization in inference mode. BatchNormInference-1 takes its inputs as (gamma, beta,
    data, mean, variance), -5 as (data, gamma, beta, mean, variance)."""
    op.expect_inputs(5)
    if op.version >= 5:
        x, gamma, beta, mean, variance = op.inputs
    else:
        gamma, beta, x, mean, variance = op.inputs
    if op.rank(op.inputs.index(x)) < 2:
        raise op.error("the data needs rank 2 or more (its axis 1 is the channels)")
    return [op.op("BatchNormalization", [x, gamma, beta, mean, variance], {"epsilon": op.float_attr("epsilon")})]


@translates("LRN")
def lrn(op: Op) -> list[Value]:
    op.expect_inputs(2)
    rank = op.rank(0)
    over = sorted(axes(op, const_ints(op, 1, "axes"), rank))
    size = op.int_attr("size")
    spatial = list(range(2, rank))
    if over != [1] and (over != spatial or not spatial):
        raise op.unsupported(f"axes {over}: loopc reads LRN across channels ([1]) or over all the spatial axes "
                             f"({spatial}), the forms OpenVINO's CPU plugin runs as its spec says")
    if size < 1 or size % 2 == 0:
        raise op.unsupported(f"size {size}: OpenVINO's CPU plugin sums an even size's window over size - 1 "
                             f"elements where its spec sums size + 1; loopc reads odd sizes")
    bias = op.float_attr("bias")
    if bias != int(bias):
        raise op.unsupported(f"bias {bias} is not a whole number: OpenVINO's CPU plugin truncates it to "
                             f"{int(bias)} where its spec adds {bias}; loopc refuses rather than pick one")
    alpha, beta = op.float_attr("alpha"), op.float_attr("beta")
    x = op.inputs[0]
    if over == [1]:
        return [op.op("LRN", [x], {"alpha": alpha, "beta": beta, "bias": bias, "size": size})]
    return [_spatial_lrn(op, x, len(spatial), size, alpha, beta, bias)]


def _spatial_lrn(op: Op, x: Value, n: int, size: int, alpha: float, beta: float, bias: float) -> Value:
    """``x / (bias + alpha / size^n * window sum of x²)^beta``: the window sum over size^n is the mean an
    including-pad AveragePool takes, times size^n, so ``alpha * mean`` is the spec's term."""
    dtype = x.dtype if x.dtype is not None else np.dtype(np.float32)
    half = size // 2
    mean = op.op("AveragePool", [op.op("Mul", [x, x])], {"kernel_shape": [size] * n, "pads": [half] * (2 * n),
                                                          "count_include_pad": 1})
    base = op.op("Add", [op.op("Mul", [mean, op.const(alpha, dtype)]), op.const(bias, dtype)])
    return op.op("Div", [x, op.op("Pow", [base, op.const(beta, dtype)])])

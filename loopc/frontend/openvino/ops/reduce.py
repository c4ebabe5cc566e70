"""Reductions and normalizations along axes: Reduce*, CumSum, SoftMax, LogSoftmax, MVN, NormalizeL2.

OpenVINO's axes are an input (a scalar or a vector, negative from the end) that must be constant
for TensorRT; an empty axes list reduces nothing, which is ONNX's noop_with_empty_axes.
"""

from __future__ import annotations

import numpy as np

from loopc.frontend.openvino.importer import Op
from loopc.frontend.openvino.ops._common import axes, axis, cast, const_ints
from loopc.frontend.openvino.registry import translates
from loopc.ir import Value

REDUCE = {"ReduceMax": "ReduceMax", "ReduceMean": "ReduceMean", "ReduceMin": "ReduceMin",
          "ReduceProd": "ReduceProd", "ReduceSum": "ReduceSum", "ReduceL1": "ReduceL1", "ReduceL2": "ReduceL2",
          "ReduceLogicalAnd": "ReduceMin", "ReduceLogicalOr": "ReduceMax"}
INTRODUCED = {"ReduceL1": 4, "ReduceL2": 4}


def _reduce(ov_type: str, onnx_op: str):
    logical = ov_type.startswith("ReduceLogical")

    def translate(op: Op) -> list[Value]:
        """Logical reductions are min/max over 0/1 integers (TensorRT reduces no booleans)."""
        op.expect_inputs(2)
        x = op.inputs[0]
        picked = axes(op, const_ints(op, 1, "axes"), op.rank(0))
        if logical:
            x = cast(op, x, np.dtype(np.int32))
        attrs = {"keepdims": int(op.bool_attr("keep_dims", False)), "noop_with_empty_axes": 1}
        y = op.op(onnx_op, [x, op.const(picked, np.int64)], attrs)
        return [cast(op, y, np.dtype(np.bool_)) if logical else y]

    return translate


for _ov, _onnx in REDUCE.items():
    translates(_ov, INTRODUCED.get(_ov, 1))(_reduce(_ov, _onnx))


@translates("CumSum", 3)
def cumsum(op: Op) -> list[Value]:
    op.expect_inputs(1, 2)
    a = axis(op, const_ints(op, 1, "axis")[0], op.rank(0)) if len(op.inputs) > 1 else 0
    attrs = {"exclusive": int(op.bool_attr("exclusive", False)), "reverse": int(op.bool_attr("reverse", False))}
    return [op.op("CumSum", [op.inputs[0], op.const(a, np.int64)], attrs)]


@translates("SoftMax", 1, 8)
def softmax(op: Op) -> list[Value]:
    op.expect_inputs(1)
    return [op.op("Softmax", [op.inputs[0]], {"axis": axis(op, op.int_attr("axis", 1), op.rank(0))})]


@translates("LogSoftmax", 5)
def log_softmax(op: Op) -> list[Value]:
    op.expect_inputs(1)
    return [op.op("LogSoftmax", [op.inputs[0]], {"axis": axis(op, op.int_attr("axis", 1), op.rank(0))})]


def _normalize(op: Op, x: Value, over: list[int], variance: bool, eps: float, inside: bool) -> Value:
    """(x - mean) / sqrt(var + eps), or / (sqrt(var) + eps), with the statistics over ``over``."""
    dims = op.const(over, np.int64)
    centered = op.op("Sub", [x, op.op("ReduceMean", [x, dims], {"keepdims": 1})])
    if not variance:
        return centered
    var = op.op("ReduceMean", [op.op("Mul", [centered, centered]), dims], {"keepdims": 1})
    dtype = x.dtype if x.dtype is not None else np.dtype(np.float32)
    epsilon = op.const(eps, dtype)
    spread = op.op("Sqrt", [op.op("Add", [var, epsilon])]) if inside else op.op("Add", [op.op("Sqrt", [var]), epsilon])
    return op.op("Div", [centered, spread])


@translates("MVN", 2, 6)
def mvn(op: Op) -> list[Value]:
    """MVN-6 normalizes over its axes input, with eps inside or outside the square root. MVN-1 (of
    opset2) over the axes from 1 (across_channels) or from 2, eps inside: OpenVINO writes
    reduction_axes beside across_channels but runs across_channels, so the two must agree."""
    op.expect_inputs(2 if op.version >= 6 else 1)
    x = op.inputs[0]
    rank = op.rank(0)
    if op.version >= 6:
        over = axes(op, const_ints(op, 1, "axes"), rank)
        inside = op.choice_attr("eps_mode", ("inside_sqrt", "outside_sqrt")) == "inside_sqrt"
    else:
        over = list(range(1 if op.bool_attr("across_channels", False) else 2, rank))
        if op.layer.data.get("reduction_axes", "").strip():
            named = sorted(axes(op, op.ints_attr("reduction_axes"), rank, "reduction_axes"))
            if named != over:
                raise op.unsupported(f"reduction_axes {named} disagree with across_channels, which makes OpenVINO "
                                     f"normalize over axes {over}; use MVN-6 with explicit axes")
        inside = True
    return [_normalize(op, x, over, op.bool_attr("normalize_variance", True), op.float_attr("eps"), inside)]


@translates("NormalizeL2")
def normalize_l2(op: Op) -> list[Value]:
    """x / sqrt(sum(x^2) + eps), or / sqrt(max(sum(x^2), eps)), the sum over the axes (none: each element)."""
    op.expect_inputs(2)
    x = op.inputs[0]
    over = axes(op, const_ints(op, 1, "axes"), op.rank(0))
    combine = {"add": "Add", "max": "Max"}[op.choice_attr("eps_mode", ("add", "max"))]
    dtype = x.dtype if x.dtype is not None else np.dtype(np.float32)
    total = op.op("ReduceSum", [op.op("Mul", [x, x]), op.const(over, np.int64)],
                  {"keepdims": 1, "noop_with_empty_axes": 1})
    norm = op.op("Sqrt", [op.op(combine, [total, op.const(op.float_attr("eps"), dtype)])])
    return [op.op("Div", [x, norm])]

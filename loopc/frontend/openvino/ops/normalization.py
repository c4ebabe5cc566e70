"""Normalizations over windows and groups: GroupNormalization-12 and LRN-1, as ONNX's ops of the same name.

GroupNormalization-12 is ONNX's GroupNormalization-21 (per-channel scale and bias, epsilon inside the
square root). LRN sums squares over a window of ``size`` centred on each element; across channels
(axes ``[1]``) with an odd size that is ONNX's LRN, which divides alpha by the size as OpenVINO does.
OpenVINO's CPU plugin truncates a fractional bias (1.5 acts as 1), against its spec: loopc reads
whole-number biases only.
"""

from __future__ import annotations

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


@translates("LRN")
def lrn(op: Op) -> list[Value]:
    op.expect_inputs(2)
    over = sorted(axes(op, const_ints(op, 1, "axes"), op.rank(0)))
    size = op.int_attr("size")
    if over != [1]:
        raise op.unsupported(f"axes {over}: loopc reads LRN across channels (axes [1]) only, the form ONNX's "
                             f"and TensorRT's LRN have")
    if size < 1 or size % 2 == 0:
        raise op.unsupported(f"size {size}: an even window is not centred, and OpenVINO's and ONNX's uneven "
                             f"halves differ; loopc reads odd sizes")
    bias = op.float_attr("bias")
    if bias != int(bias):
        raise op.unsupported(f"bias {bias} is not a whole number: OpenVINO's CPU plugin truncates it to "
                             f"{int(bias)} where its spec adds {bias}; loopc refuses rather than pick one")
    attrs = {"alpha": op.float_attr("alpha"), "beta": op.float_attr("beta"), "bias": bias, "size": size}
    return [op.op("LRN", [op.inputs[0]], attrs)]

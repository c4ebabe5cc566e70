"""FakeQuantize: clamp to the input range, snap to one of ``levels`` steps, map onto the output range.

Written with OpenVINO's spec formula as elementwise math (every operand broadcasts numpy-style)::

    x <= min(il, ih): ol;  x > max(il, ih): oh
    otherwise: round((x - il) / (ih - il) * (levels - 1)) / (levels - 1) * (oh - ol) + ol

``round`` is half to even, as OpenVINO's reference (nearbyint) and ONNX's Round are. Exact for any
ranges, where a QuantizeLinear/DequantizeLinear pair holds only for zero points on the integer grid.

A constant input range that is empty or reversed (``input_low >= input_high``) is refused: OpenVINO's CPU
plugin computes those apart from the formula, and differently by layout (NaN for a 4-D tensor with
scalar ranges, the formula for a 1-D one).
"""

from __future__ import annotations

import numpy as np

from loopc.frontend.openvino.importer import Op
from loopc.frontend.openvino.registry import translates
from loopc.ir import Value


@translates("FakeQuantize")
def fake_quantize(op: Op) -> list[Value]:
    op.expect_inputs(5)
    op.choice_attr("auto_broadcast", ("numpy", "none"), "numpy")
    levels = op.int_attr("levels")
    if levels < 2:
        raise op.error(f"levels {levels} must be at least 2")
    x, in_low, in_high, out_low, out_high = op.inputs
    low, high = op.constant(1), op.constant(2)
    if low is not None and high is not None and np.any(np.asarray(low) >= np.asarray(high)):
        raise op.unsupported("input_low >= input_high somewhere: OpenVINO's CPU plugin computes an empty or "
                             "reversed input range apart from its formula (NaN for 4-D data), so no answer is "
                             "OpenVINO's")
    dtype = x.dtype if x.dtype is not None else np.dtype(np.float32)
    steps = op.const(levels - 1, dtype)
    scaled = op.op("Div", [op.op("Sub", [x, in_low]), op.op("Sub", [in_high, in_low])])
    snapped = op.op("Round", [op.op("Mul", [scaled, steps])])
    mapped = op.op("Add", [op.op("Mul", [op.op("Div", [snapped, steps]), op.op("Sub", [out_high, out_low])]), out_low])
    below = op.op("LessOrEqual", [x, op.op("Min", [in_low, in_high])])
    above = op.op("Greater", [x, op.op("Max", [in_low, in_high])])
    return [op.op("Where", [below, out_low, op.op("Where", [above, out_high, mapped])])]

"""GridSample-9 as ONNX's GridSample: the same grid convention (``[N, H_out, W_out, 2]``, x then y, in
[-1, 1]), align_corners and padding modes; OpenVINO's ``bilinear``/``bicubic`` are ONNX's
``linear``/``cubic``. Bicubic sampling with border padding is refused: OpenVINO clamps each of the 4×4
taps to the edge, while ONNX's definition is read two ways (its reference clamps the sampling point).
"""

from __future__ import annotations

from loopc.frontend.openvino.importer import Op
from loopc.frontend.openvino.registry import translates
from loopc.ir import Value

MODES = {"bilinear": "linear", "bicubic": "cubic", "nearest": "nearest"}


@translates("GridSample", 9)
def grid_sample(op: Op) -> list[Value]:
    op.expect_inputs(2)
    if op.rank(0) != 4 or op.rank(1) != 4:
        raise op.error(f"data and grid must be 4-D, not rank {op.rank(0)} and {op.rank(1)}")
    attrs = {"align_corners": int(op.bool_attr("align_corners", False)),
             "mode": MODES[op.choice_attr("mode", MODES, "bilinear")],
             "padding_mode": op.choice_attr("padding_mode", ("zeros", "border", "reflection"), "zeros")}
    if (attrs["mode"], attrs["padding_mode"]) == ("cubic", "border"):
        raise op.unsupported("mode='bicubic' with padding_mode='border': OpenVINO clamps each tap to the edge (as "
                             "onnxruntime does), ONNX's GridSample is read two ways there (its reference clamps the "
                             "sampling point)")
    return [op.op("GridSample", list(op.inputs), attrs)]

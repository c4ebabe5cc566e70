"""onnxruntime's DynamicQuantizeLSTM (what ``quantize_dynamic`` makes of an LSTM): an ONNX LSTM whose W and R
are 8-bit integers laid out ``[directions, input, 4·hidden]`` with per-direction (per-tensor or per-column)
scales and zero points. Each direction's weights are dequantized from their integer constants and
transposed to ONNX's ``[directions, 4·hidden, input]``; the LSTM is then loopc's own (a TensorRT loop)."""

from __future__ import annotations

import numpy as np

from loopc.frontend.onnx.contrib import expands
from loopc.frontend.onnx.contrib.emit import Emitter

#: The attributes DynamicQuantizeLSTM shares with ONNX's LSTM (it has no ``layout``).
_LSTM_ATTRIBUTES = ("activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size",
                    "input_forget")


@expands("DynamicQuantizeLSTM")
def dynamic_quantize_lstm(e: Emitter) -> None:
    w = _weights(e, 1, 8, 9, "W")
    r = _weights(e, 2, 10, 11, "R")
    inputs = [e.need(0, "X"), w, r, *(e.input(k) for k in range(3, 8))]
    while inputs and inputs[-1] is None:
        inputs.pop()
    attrs = {name: e.attr(name) for name in _LSTM_ATTRIBUTES if e.attr(name) is not None}
    outputs = e.ops("LSTM", inputs, 3, **attrs)
    for k, value in enumerate(outputs):
        e.bind(k, value)


def _weights(e: Emitter, k: int, scale_input: int, zero_input: int, what: str) -> str:
    """Input ``k`` dequantized, direction by direction, into ONNX's layout."""
    q = e.known.array(e.need(k, what))
    scale = e.known.array(e.need(scale_input, f"{what}_scale"))
    zero = e.known.array(e.need(zero_input, f"{what}_zero_point"))
    if q is None or scale is None or zero is None:
        raise e.error(f"{what}, its scale and its zero point must be initializers")
    if q.ndim != 3 or scale.shape[:1] != q.shape[:1] or zero.shape != scale.shape:
        raise e.invalid(f"{what} has shape {list(q.shape)} and its scale {list(scale.shape)}; DynamicQuantizeLSTM "
                        "takes [directions, input, 4·hidden] with a scale of [directions] or [directions, 4·hidden]")
    directions = []
    for d in range(q.shape[0]):
        rows = e.dequantize(e.const(q[d]), e.const(scale[d]), e.const(np.asarray(zero[d], q.dtype)), axis=1)
        directions.append(e.unsqueeze(e.op("Transpose", rows, perm=[1, 0]), [0]))
    return directions[0] if len(directions) == 1 else e.op("Concat", *directions, axis=0)

"""Window functions for spectral ops: HannWindow, HammingWindow, BlackmanWindow.

Each is a sum of cosines of n * 2π / N for n in [0, size), with N = size (periodic, the default)
or size - 1 (symmetric). A constant size makes a constant; a computed one a kLINSPACE fill of
``size`` values whose length TensorRT learns when it runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import helper

from loopc.backend.trt.context import ConversionContext, trt_dtype
from loopc.backend.trt.registry import converter
from loopc.ir import Node
from loopc.trt import trt

#: op → cosine coefficients a_k of w(n) = sum_k a_k cos(k * 2π n / N), as ONNX defines them.
_COEFFICIENTS: dict[str, tuple[float, ...]] = {
    "HannWindow": (0.5, -0.5),
    "HammingWindow": (25 / 46, -21 / 46),
    "BlackmanWindow": (0.42, -0.5, 0.08),
}


def _window_of_size(coefficients: tuple[float, ...], size: int, periodic: bool) -> np.ndarray:
    """The window's values; a symmetric window of size 1 is NaN (0 / 0), as ONNX's reference and
    onnxruntime make it, and as the computed form does."""
    n = np.arange(size, dtype=np.float64)
    with np.errstate(all="ignore"):
        angle = n * 2 * np.pi / np.float64(size if periodic else size - 1)
        return sum((a * np.cos(k * angle) for k, a in enumerate(coefficients)), np.zeros(size))


@converter(*_COEFFICIENTS)
def window(ctx: ConversionContext, node: Node) -> None:
    coefficients = _COEFFICIENTS[node.op]
    periodic = bool(int(node.attrs.get("periodic", 1)))
    out_type = helper.tensor_dtype_to_np_dtype(int(node.attrs.get("output_datatype", 1)))
    known = ctx.constant_of(node.inputs[0])
    if known is not None:
        values = _window_of_size(coefficients, int(known.reshape(())), periodic)
        ctx.set_array(node.outputs[0], values.astype(out_type), node)
        return
    y = _computed_window(ctx, node, coefficients, periodic)
    ctx.set(node.outputs[0], ctx.cast(y, trt_dtype(out_type), node))


def _computed_window(ctx: ConversionContext, node: Node, coefficients: tuple[float, ...], periodic: bool) -> Any:
    """The window, in FLOAT, of a size known only when the engine runs."""
    T = trt()
    size = ctx.cast(ctx.scalar0d(ctx.get(node.inputs[0], node), node, "size0d"), T.int64, node, "size64")
    layer = ctx.network.add_fill([0], T.FillOperation.LINSPACE, T.float32)
    layer.set_input(0, ctx.reshape(size, [1], node, "shape"))
    layer.set_input(1, ctx.constant(np.array(0, np.float32), node, "start"))
    layer.set_input(2, ctx.constant(np.array([1], np.float32), node, "step"))
    n = ctx.out(layer, node, "n")
    period = ctx.reshape(ctx.cast(size, T.float32, node, "size_float"), [1], node, "size1d")
    if not periodic:
        period = ctx.elementwise(period, ctx.constant(np.ones(1, np.float32), node, "one"), "SUB", node, "period")
    step = ctx.elementwise(ctx.constant(np.array([2 * np.pi], np.float32), node, "tau"), period, "DIV", node,
                           "step_angle")
    angle = ctx.elementwise(n, step, "PROD", node, "angle")
    y = ctx.constant(np.array([coefficients[0]], np.float32), node, "a0")
    for k, a in enumerate(coefficients[1:], start=1):
        harmonic = angle if k == 1 else ctx.elementwise(
            angle, ctx.constant(np.array([k], np.float32), node, f"k{k}"), "PROD", node, f"angle{k}")
        term = ctx.elementwise(ctx.unary(harmonic, "COS", node, f"cos{k}"),
                               ctx.constant(np.array([a], np.float32), node, f"a{k}"), "PROD", node, f"term{k}")
        y = ctx.elementwise(y, term, "SUM", node, f"sum{k}")
    return y

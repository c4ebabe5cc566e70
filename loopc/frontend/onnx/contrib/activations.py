"""onnxruntime's fused activations: Gelu and its biased and approximate forms, QuickGelu, BiasAdd,
BiasSplitGelu (their contrib-op schemas give the formulas)."""

from __future__ import annotations

from loopc.frontend.onnx.contrib import expands
from loopc.frontend.onnx.contrib.emit import Emitter


def _biased(e: Emitter, x: str) -> str:
    bias = e.input(1)
    return x if bias is None else e.op("Add", x, bias)


@expands("Gelu")
def gelu(e: Emitter) -> None:
    e.bind(0, e.gelu(e.need(0, "X")))


@expands("BiasGelu")
def bias_gelu(e: Emitter) -> None:
    e.bind(0, e.gelu(e.op("Add", e.need(0, "A"), e.need(1, "B"))))


@expands("FastGelu")
def fast_gelu(e: Emitter) -> None:
    """``0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))`` of ``X + bias``: Gelu's tanh approximation."""
    e.bind(0, e.gelu(_biased(e, e.need(0, "X")), approximate="tanh"))


@expands("QuickGelu")
def quick_gelu(e: Emitter) -> None:
    """``x · sigmoid(alpha · x)``, alpha 1.702 unless given."""
    x = e.need(0, "X")
    e.bind(0, e.op("Mul", x, e.op("Sigmoid", e.op("Mul", x, e.scalar(float(e.attr("alpha", 1.702)), x)))))


@expands("BiasAdd")
def bias_add(e: Emitter) -> None:
    e.bind(0, e.op("Add", e.op("Add", e.need(0, "X"), e.need(1, "bias")), e.need(2, "skip")))


@expands("BiasSplitGelu")
def bias_split_gelu(e: Emitter) -> None:
    """``X + bias`` halved along its last dim: the left half times Gelu of the right half."""
    bias = e.need(1, "bias")
    width = e.known.dims(bias)[-1]
    if width is None or width % 2:
        raise e.invalid(f"bias {bias!r} must have a known, even length (it has {width})")
    x = e.op("Add", e.need(0, "X"), bias)
    left = e.slice(x, [0], [width // 2], [-1])
    right = e.slice(x, [width // 2], [width], [-1])
    e.bind(0, e.op("Mul", left, e.gelu(right)))

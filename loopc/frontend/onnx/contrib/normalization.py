"""onnxruntime's fused normalizations: SkipLayerNormalization and its RMS form, the default-domain
LayerNormalization (before opset 17) and SimplifiedLayerNormalization it defines, and BERT's
EmbedLayerNormalization. Epsilon defaults are onnxruntime's (1e-12 for the fused ones, 1e-5 otherwise)."""

from __future__ import annotations

from onnx import helper

from loopc.frontend.onnx.contrib import expands
from loopc.frontend.onnx.contrib.emit import INT32, Emitter

_FUSED_EPSILON = 1e-12
_EPSILON = 1e-5


def _statistics(e: Emitter, x: str, epsilon: float, mean_output: int | None, inv_std_output: int | None,
                axis: int = -1, rms: bool = False) -> None:
    """The training outputs (mean and 1/√(variance + ε) over the normalized dims, kept as unit dims), when named."""
    axes = list(range(axis, 0))
    mean = e.reduce("ReduceMean", x, axes)
    if mean_output is not None:
        e.bind(mean_output, mean)
    if inv_std_output is not None and e.output(inv_std_output) is not None:
        centered = x if rms else e.op("Sub", x, mean)
        variance = e.reduce("ReduceMean", e.op("Mul", centered, centered), axes)
        e.bind(inv_std_output, e.op("Reciprocal", e.op("Sqrt", e.op("Add", variance, e.scalar(epsilon, x)))))


def _negative_axis(e: Emitter, x: str) -> int:
    axis = int(e.attr("axis", -1))
    return axis if axis < 0 else axis - e.known.rank(x)


def _skip_sum(e: Emitter, bias_input: int) -> str:
    """``input + skip (+ bias)``: what both skip normalizations normalize (and give as output 3)."""
    total = e.op("Add", e.need(0, "input"), e.need(1, "skip"))
    bias = e.input(bias_input)
    return total if bias is None else e.op("Add", total, bias)


@expands("SkipLayerNormalization")
def skip_layer_norm(e: Emitter) -> None:
    epsilon = float(e.attr("epsilon", _FUSED_EPSILON))
    total = _skip_sum(e, 4)
    e.bind(0, e.layer_norm(total, e.need(2, "gamma"), e.input(3), epsilon))
    _statistics(e, total, epsilon, 1 if e.output(1) else None, 2)
    e.bind(3, total)


@expands("SkipSimplifiedLayerNormalization")
def skip_simplified_layer_norm(e: Emitter) -> None:
    epsilon = float(e.attr("epsilon", _FUSED_EPSILON))
    total = _skip_sum(e, 3)
    e.bind(0, e.rms_norm(total, e.need(2, "gamma"), epsilon))
    _statistics(e, total, epsilon, 1 if e.output(1) else None, 2, rms=True)
    e.bind(3, total)


@expands("LayerNormalization", domain="")
def layer_norm(e: Emitter) -> None:
    """onnxruntime's LayerNormalization of opsets before 17 (ONNX's own from 17 is the same op)."""
    x = e.need(0, "X")
    epsilon, axis = float(e.attr("epsilon", _EPSILON)), _negative_axis(e, x)
    e.bind(0, e.layer_norm(x, e.need(1, "Scale"), e.input(2), epsilon, axis))
    _statistics(e, x, epsilon, 1 if e.output(1) else None, 2, axis)


@expands("SimplifiedLayerNormalization", domain="")
def simplified_layer_norm(e: Emitter) -> None:
    """RMS normalization: ``x / √(mean(x²) + ε) · scale``."""
    x = e.need(0, "X")
    epsilon, axis = float(e.attr("epsilon", _EPSILON)), _negative_axis(e, x)
    e.bind(0, e.rms_norm(x, e.need(1, "scale"), epsilon, axis))
    _statistics(e, x, epsilon, None, 1, axis, rms=True)


@expands("EmbedLayerNormalization")
def embed_layer_norm(e: Emitter) -> None:
    """Word + position (+ segment) embeddings, layer-normalized; the mask index is each row's count of ones
    (zeros without a mask), as onnxruntime's CPU kernel counts it.

    Positions are ``position_ids`` when given, else 0 to sequence_length - 1.
    """
    ids = e.need(0, "input_ids")
    positions = e.input(8)
    if positions is None:
        positions = e.unsqueeze(e.op("Range", e.const(0, "int64"), e.dim(ids, 1), e.const(1, "int64")), [0])
    total = e.op("Add", e.op("Gather", e.need(2, "word_embedding"), ids, axis=0),
                 e.op("Gather", e.need(3, "position_embedding"), positions, axis=0))
    segments, segment_table = e.input(1), e.input(4)
    if segments is not None and segment_table is not None:
        total = e.op("Add", total, e.op("Gather", segment_table, segments, axis=0))
    epsilon = float(e.attr("epsilon", _FUSED_EPSILON))
    e.bind(0, e.layer_norm(total, e.need(5, "gamma"), e.need(6, "beta"), epsilon))
    if e.output(1) is not None:
        mask = e.input(7)
        if mask is None:
            batch = e.slice(e.op("Shape", ids), [0], [1], [0])
            count = e.op("ConstantOfShape", batch, value=helper.make_tensor("zero", INT32, [1], [0]))
        else:
            count = e.reduce("ReduceSum", e.op("Cast", e.op("Equal", mask, e.const(1, "int32")), to=INT32), [1],
                             keepdims=0)
        e.bind(1, count)
    e.bind(2, total)

"""QuantizeLinear and DequantizeLinear: TensorRT's Quantize / Dequantize layers, or elementwise arithmetic.

TensorRT's Q/DQ layers are symmetric (no zero point a network can give them) and quantize to INT8,
FP8, INT4 and FP4 (FP4 on Blackwell targets only). A symmetric node of those types is one layer. Any
other form TensorRT can still compute exactly is arithmetic in float: ``clip(round(x / scale) +
zero_point)`` cast to the integer type (a Quantize of scale 1 where only a Quantize makes the type:
FP8, INT4, FP4), and ``(x - zero_point) * scale`` after a Dequantize of scale 1 or a cast. Scales
per tensor, per axis and per block are all expressed; a block scale is repeated along its axis for
the arithmetic. 16-bit integers (and a dequantized int32, such as a quantized bias) are computed in
int32, as loopc computes those types everywhere.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
from onnx import helper

from loopc.backend.trt.context import ConversionContext, np_dtype, trt_dtype
from loopc.backend.trt.registry import converter, unsupported
from loopc.ir import Node
from loopc.semantics.attributes import attr
from loopc.trt import trt

_FP8 = np.dtype(ml_dtypes.float8_e4m3fn)
_INT4 = np.dtype(ml_dtypes.int4)
_FP4 = np.dtype(ml_dtypes.float4_e2m1fn)
#: Float types: a Quantize layer rounds to them and saturates, after the zero point is added.
_FLOATS = (_FP8, _FP4)
#: Types TensorRT packs two to a byte.
_SUB_BYTE = (_INT4, _FP4)
#: Quantized types a Quantize or Dequantize layer handles itself when the zero point is absent.
_NATIVE = (np.dtype(np.int8), _FP8, _INT4, _FP4)
#: Quantized types TensorRT holds, and the integer range each one clips to.
_RANGES: dict[np.dtype[Any], tuple[float, float]] = {
    np.dtype(np.int8): (-128.0, 127.0), np.dtype(np.uint8): (0.0, 255.0), _INT4: (-8.0, 7.0),
    # TensorRT computes these in int32, which holds them exactly
    np.dtype(np.int16): (-32768.0, 32767.0), np.dtype(np.uint16): (0.0, 65535.0),
}
#: Integer types only DequantizeLinear reads (a quantized bias, typically), computed in int32.
_DEQUANTIZED_ONLY = (np.dtype(np.int32),)
#: Types only a Quantize layer makes and only a Dequantize layer reads.
_LAYER_ONLY = (_FP8, _INT4, _FP4)


def _quantized_dtype(node: Node) -> np.dtype[Any] | None:
    """The integer or float8 type of the quantized side: output_dtype, else the zero point's, else uint8."""
    if node.op == "DequantizeLinear":
        return node.inputs[0].dtype if node.inputs[0] is not None else None
    code = int(attr(node, "output_dtype"))
    if code:
        return np.dtype(helper.tensor_dtype_to_np_dtype(code))
    zero = node.inputs[2] if len(node.inputs) > 2 else None
    return zero.dtype if zero is not None else np.dtype(np.uint8)


def _refusal(node: Node) -> str | None:
    """TensorRT has INT8, UINT8 (not through its Q/DQ layers), FP8 e4m3fn, INT4 and FP4; its floats saturate."""
    dtype = _quantized_dtype(node)
    if dtype is None:
        return None
    readable = dtype in _DEQUANTIZED_ONLY and node.op == "DequantizeLinear"
    if dtype not in _RANGES and dtype not in _FLOATS and not readable:
        return (f"{node.op} to or from {dtype.name} (loopc quantizes to int8, uint8, int16, uint16, int4, "
                "float8_e4m3fn and float4_e2m1fn)")
    if dtype in _FLOATS and node.op == "QuantizeLinear" and not int(node.attrs.get("saturate", 1)):
        return (f"QuantizeLinear to {dtype.name} with saturate=0 (TensorRT's float quantization saturates); "
                "use saturate=1")
    quantized = (*node.inputs[:1], *node.inputs[2:3], *node.outputs)
    if dtype in _SUB_BYTE and any(odd_count(v) for v in quantized if v is not None):
        return (f"{node.op} of {dtype.name} tensors with an odd number of elements (TensorRT packs 4-bit types "
                "two to a byte)")
    precision = int(node.attrs.get("precision", 0))
    if precision and helper.tensor_dtype_to_np_dtype(precision).name not in ("float32", "float16", "bfloat16"):
        name = helper.tensor_dtype_to_np_dtype(precision).name
        return f"QuantizeLinear dividing in {name} (TensorRT's floats are float32, float16 and bfloat16)"
    return None


def odd_count(value: Any) -> bool:
    """Whether an IR value's static shape holds an odd number of elements (4-bit types cannot be packed)."""
    shape = value.shape
    return shape is not None and all(isinstance(d, int) and d >= 0 for d in shape) and int(np.prod(shape)) % 2 == 1


def _zero_is_absent(ctx: ConversionContext, node: Node) -> bool:
    """Whether the zero point is missing or a constant of zeros (TensorRT's layers take no other)."""
    zero = node.inputs[2] if len(node.inputs) > 2 else None
    if zero is None:
        return True
    known = ctx.constant_of(zero)
    return known is not None and not np.any(np.asarray(known, np.float32))


def _layout(node: Node, x_rank: int, scale_shape: tuple[int, ...]) -> tuple[int, int]:
    """(axis, block size): axis -1 for one scale (a scalar, or one value), block 0 for one scale per index."""
    block = int(node.attrs.get("block_size", 0))
    if len(scale_shape) <= 1 and not block and int(np.prod(scale_shape)) == 1:
        return -1, 0
    axis = int(node.attrs.get("axis", 1))
    return axis % max(x_rank, 1), block


def _per_tensor_scale(ctx: ConversionContext, node: Node, scale: Any) -> Any:
    """A one-element scale as the 0-D tensor TensorRT's layers take for per-tensor quantization."""
    return ctx.scalar0d(scale, node, "scale0d") if len(scale.shape) and int(np.prod(scale.shape)) == 1 else scale


def _layer(ctx: ConversionContext, node: Node, x: Any, scale: Any, axis: int, block: int, to: Any,
           suffix: str = "", quantize: bool | None = None) -> Any:
    """One Quantize or Dequantize layer (the node's kind unless ``quantize`` says); per block, the scale has
    x's rank and the block shape is set."""
    if quantize is None:
        quantize = node.op in ("QuantizeLinear", "DynamicQuantizeLinear")
    add = ctx.network.add_quantize if quantize else ctx.network.add_dequantize
    if axis < 0:
        scale = _per_tensor_scale(ctx, node, scale)
    layer = add(x, scale, to)
    if axis >= 0:
        layer.axis = axis
    if block:
        layer.block_shape = tuple(block if i == axis else 1 for i in range(len(x.shape)))
    return ctx.out(layer, node, suffix)


def _broadcastable(ctx: ConversionContext, node: Node, t: Any, x: Any, axis: int, block: int, what: str) -> Any:
    """A scale or zero point shaped to broadcast against ``x`` elementwise."""
    rank = len(x.shape)
    if axis < 0:
        return ctx.reshape(_per_tensor_scale(ctx, node, t), [1] * rank, node, what)
    if not block:
        return ctx.reshape(t, [-1 if i == axis else 1 for i in range(rank)], node, what)
    length = int(x.shape[axis])
    if length < 0:
        raise unsupported(node, f"{node.op} per block along an axis of dynamic length")
    index = ctx.constant(np.arange(length, dtype=np.int32) // block, node, f"{what}_blocks")
    return ctx.out(ctx.network.add_gather(t, index, axis), node, what)


def widened(ctx: ConversionContext, node: Node, t: Any, dtype: Any, suffix: str) -> Any:
    """A tensor's values in type ``dtype``: FP8, INT4 and FP4 (which only a Dequantize layer reads) through
    a Dequantize of scale 1 (exact), other types through a cast."""
    if np_dtype(t.dtype) in _LAYER_ONLY:
        one = ctx.constant(np.array(1.0, np.float32), node, f"{suffix}_one")
        return ctx.out(ctx.network.add_dequantize(t, one, dtype), node, suffix)
    return ctx.cast(t, dtype, node, suffix)


def _zero_point(ctx: ConversionContext, node: Node, dtype: Any) -> Any:
    """The zero point's values in float type ``dtype``: a constant one folded (TensorRT lets an int8
    constant feed only a Dequantize layer), else its tensor widened."""
    known = ctx.constant_of(node.inputs[2])
    if known is not None:
        wide = ctx.constant(np.asarray(known).astype(np.float32), node, "zero")
        return ctx.cast(wide, dtype, node, "zero_typed")
    return widened(ctx, node, ctx.get(node.inputs[2], node), dtype, "zero")


@converter("QuantizeLinear", capability=_refusal)
def quantize_linear(ctx: ConversionContext, node: Node) -> None:
    x, scale = ctx.get(node.inputs[0], node), ctx.get(node.inputs[1], node)
    dtype = _quantized_dtype(node)
    assert dtype is not None
    axis, block = _layout(node, len(x.shape), tuple(scale.shape))
    if dtype in _NATIVE and _zero_is_absent(ctx, node):
        ctx.set(node.outputs[0], _layer(ctx, node, x, scale, axis, block, trt_dtype(dtype)))
        return
    precision = int(attr(node, "precision"))  # the division's type: the scale's unless given
    compute = trt_dtype(helper.tensor_dtype_to_np_dtype(precision)) if precision else scale.dtype
    s = _broadcastable(ctx, node, ctx.cast(scale, compute, node, "scale_typed"), x, axis, block, "scale")
    scaled = ctx.elementwise(ctx.cast(x, compute, node, "x_typed"), s, "DIV", node, "scaled")
    if dtype not in _FLOATS:  # integers: ONNX adds the zero point to the rounded quotient
        scaled = ctx.unary(ctx.cast(scaled, trt().float32, node, "wide"), "ROUND", node, "rounded")
    shifted = scaled
    if len(node.inputs) > 2 and node.inputs[2] is not None:
        zero = _broadcastable(ctx, node, _zero_point(ctx, node, scaled.dtype), x, axis, block, "zero_b")
        shifted = ctx.elementwise(scaled, zero, "SUM", node, "shifted")
    if dtype in _FLOATS:  # rounding and saturation are the Quantize layer's
        ctx.set(node.outputs[0], rounded_to(ctx, node, shifted, dtype))
        return
    low, high = _RANGES[dtype]
    clipped = ctx.elementwise(ctx.elementwise(shifted, ctx.scalar(low, shifted, node, "low"), "MAX", node, "above"),
                              ctx.scalar(high, shifted, node, "high"), "MIN", node, "clipped")
    if dtype == _INT4:  # whole numbers in range: a Quantize of scale 1 is exact
        ctx.set(node.outputs[0], _layer(ctx, node, clipped, _unit(ctx, node, clipped), -1, 0, trt().int4,
                                        quantize=True))
        return
    # TensorRT holds UINT8 only at the network's edges: inside, a uint8 result stays INT32 (0..255)
    target = trt().int32 if dtype == np.uint8 and node.outputs[0] not in ctx.reserved else trt_dtype(dtype)
    ctx.set(node.outputs[0], ctx.cast(clipped, target, node))


def _unit(ctx: ConversionContext, node: Node, like: Any) -> Any:
    return ctx.constant(np.array(1.0, np_dtype(like.dtype)), node, "unit")


def rounded_to(ctx: ConversionContext, node: Node, t: Any, dtype: np.dtype[Any], suffix: str = "") -> Any:
    """``t`` rounded to the nearest FP8 or FP4 value, saturating: a Quantize of scale 1 (the only layer that
    makes those types)."""
    if t.dtype not in (trt().float32, trt().float16, trt().bfloat16):
        t = ctx.cast(t, trt().float32, node, f"{suffix}_float" if suffix else "float")
    return _layer(ctx, node, t, _unit(ctx, node, t), -1, 0, trt_dtype(dtype), suffix, quantize=True)


@converter("DequantizeLinear", capability=_refusal)
def dequantize_linear(ctx: ConversionContext, node: Node) -> None:
    x, scale = ctx.get(node.inputs[0], node), ctx.get(node.inputs[1], node)
    code = int(attr(node, "output_dtype"))
    to = trt_dtype(helper.tensor_dtype_to_np_dtype(code)) if code else scale.dtype
    dtype = np_dtype(x.dtype)
    axis, block = _layout(node, len(x.shape), tuple(scale.shape))
    if dtype in _NATIVE and _zero_is_absent(ctx, node):
        ctx.set(node.outputs[0], _layer(ctx, node, x, scale, axis, block, to))
        return
    wide = widened(ctx, node, x, trt().float32, "wide")
    if len(node.inputs) > 2 and node.inputs[2] is not None:
        zero = _zero_point(ctx, node, trt().float32)
        wide = ctx.elementwise(wide, _broadcastable(ctx, node, zero, x, axis, block, "zero_b"), "SUB", node, "centered")
    s = _broadcastable(ctx, node, ctx.cast(scale, trt().float32, node, "scale_wide"), x, axis, block, "scale")
    ctx.set(node.outputs[0], ctx.cast(ctx.elementwise(wide, s, "PROD", node, "scaled"), to, node))


@converter("DynamicQuantizeLinear")
def dynamic_quantize_linear(ctx: ConversionContext, node: Node) -> None:
    """uint8 quantization with the scale and zero point of the data's range (0 included), as ONNX defines it:
    scale = (max(x, 0) - min(x, 0)) / 255, zero point = clip(round(-min / scale)), y as QuantizeLinear.
    An empty range (x all zeros) has scale 1, so y and the zero point are 0: ONNX's spec of the op (its only
    version, 11) says so since onnx 1.24, and onnxruntime computes it (scale 0 would make y 0 / 0)."""
    T = trt()
    x = ctx.cast(ctx.get(node.inputs[0], node), T.float32, node, "wide")
    rank = len(x.shape)
    every = (1 << rank) - 1

    def extreme(op: str, bound: str) -> Any:
        reduced = ctx.out(ctx.network.add_reduce(x, getattr(T.ReduceOperation, op), every, False), node, op.lower())
        zero = ctx.constant(np.array(0.0, np.float32), node, f"{op.lower()}_zero")
        return ctx.elementwise(reduced, zero, bound, node, f"{op.lower()}_with_zero")

    low, high = extreme("MIN", "MIN"), extreme("MAX", "MAX")
    spread = ctx.elementwise(high, low, "SUB", node, "range")
    empty = ctx.cast(ctx.elementwise(spread, ctx.constant(np.array(0.0, np.float32), node, "no_range"), "EQUAL",
                                     node, "empty"), T.float32, node, "empty_one")
    scale = ctx.elementwise(ctx.elementwise(spread, ctx.constant(np.array(255.0, np.float32), node, "levels"), "DIV",
                                            node, "step"), empty, "SUM", node, "scale")
    bounds = [ctx.constant(np.array(v, np.float32), node, name) for v, name in ((0.0, "u8_low"), (255.0, "u8_high"))]

    def to_uint8(t: Any, suffix: str) -> Any:  # clipped to uint8's range, still in float
        above = ctx.elementwise(t, bounds[0], "MAX", node, f"{suffix}_above")
        return ctx.elementwise(above, bounds[1], "MIN", node, suffix)

    zero = ctx.unary(to_uint8(ctx.elementwise(ctx.unary(low, "NEG", node, "neg_low"), scale, "DIV", node, "zero_raw"),
                              "zero_clipped"), "ROUND", node, "zero_rounded")
    rounded = ctx.unary(ctx.elementwise(x, ctx.to_rank(scale, rank, node, "scale_b"), "DIV", node, "scaled"),
                        "ROUND", node, "rounded")
    y = to_uint8(ctx.elementwise(rounded, ctx.to_rank(zero, rank, node, "zero_b"), "SUM", node, "shifted"), "clipped")
    for value, t, suffix in ((node.outputs[0], y, "y"), (node.outputs[2], zero, "zero_point")):
        ctx.set(value, ctx.cast(t, T.uint8 if value in ctx.reserved else T.int32, node, suffix))
    ctx.set(node.outputs[1], scale)

"""QuantizeLinear and DequantizeLinear: TensorRT's Quantize / Dequantize layers, or elementwise arithmetic.

TensorRT's Q/DQ layers are symmetric (no zero point a network can give them) and quantize to INT8,
FP8, INT4 and FP4 (FP4 on Blackwell targets only). A symmetric node of those types is one layer. Any
other form TensorRT can still compute exactly is arithmetic in float: ``clip(round(x / scale) +
zero_point)`` cast to the integer type (a Quantize of scale 1 where only a Quantize makes the type:
FP8, INT4, FP4), and ``(x - zero_point) * scale`` after a Dequantize of scale 1 or a cast. Scales
per tensor, per axis and per block are all expressed; a block scale is repeated along its axis for
the arithmetic. INT4 per block is a layer in the form TensorRT's ONNX parser gives it: no block shape
(TensorRT-RTX refuses INT4 with one set: "Blockwise dequantization requires input type to be int8 or
fp8e4m3 or fp4e2m1"), the builder inferring the blocks from the scale's shape (``shape[axis] /
scale.shape[axis]`` along one of the last two axes, measured); where those are not ONNX's blocks (a short
last block, an axis of dynamic length), the arithmetic. 16-bit integers (and a dequantized int32, such as
a quantized bias) are computed in int32, as loopc computes those types everywhere.

A DequantizeLinear of a constant (a quantized weight, which constant folding leaves) keeps the weight in a
type TensorRT holds, so that the engine stores a quarter (INT8, FP8) or an eighth (INT4) of its float bytes:
the constant under one Dequantize layer, which the builder fuses with the layer that reads it. uint8 and uint4
values and their zero point are shifted by 128 and 8 into int8 and int4 (which keeps ``q - zero_point``). A
zero point left non-zero (TensorRT's layers take none) is folded into 8-bit values when ``q - zero_point`` fits
int8; otherwise, and for INT4 blocks TensorRT would not infer as ONNX's, the constant stays quantized under a
Dequantize of scale 1 and the zero point and scales are applied in float.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
from onnx import helper

from loopc.backend.trt.context import ConversionContext, np_dtype, trt_dtype
from loopc.backend.trt.registry import converter, unsupported
from loopc.ir import Node, Value, constant_value
from loopc.semantics.attributes import attr
from loopc.trt import trt

_FP8 = np.dtype(ml_dtypes.float8_e4m3fn)
_INT4 = np.dtype(ml_dtypes.int4)
_UINT4 = np.dtype(ml_dtypes.uint4)
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
#: Constants a DequantizeLinear keeps quantized, and what shifts each into a signed type TensorRT holds.
_WEIGHT_SHIFTS = {np.dtype(np.int8): 0, np.dtype(np.uint8): 128, _INT4: 0, _UINT4: 8, _FP8: 0}


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
    weight = node.op == "DequantizeLinear" and dtype in _WEIGHT_SHIFTS and constant_value(node.inputs[0]) is not None
    readable = (dtype in _DEQUANTIZED_ONLY and node.op == "DequantizeLinear") or weight
    if dtype not in _RANGES and dtype not in _FLOATS and not readable:
        return (f"{node.op} to or from {dtype.name} (loopc quantizes to int8, uint8, int16, uint16, int4, "
                "float8_e4m3fn and float4_e2m1fn)")
    if dtype in _FLOATS and node.op == "QuantizeLinear" and not int(node.attrs.get("saturate", 1)):
        return (f"QuantizeLinear to {dtype.name} with saturate=0 (TensorRT's float quantization saturates); "
                "use saturate=1")
    quantized = (*node.inputs[:1], *node.inputs[2:3], *node.outputs)
    if dtype in _SUB_BYTE and not weight and any(odd_count(v) for v in quantized if v is not None):
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
    x's rank and the block shape is set, except for INT4, whose blocks the builder infers from the shapes
    (callers check with :func:`_held_blocks` that they are ONNX's)."""
    if quantize is None:
        quantize = node.op in ("QuantizeLinear", "DynamicQuantizeLinear")
    if not len(x.shape):  # TensorRT's Q/DQ layers take no 0-D input ("inputDims.nbDims > 0"): one element as [1]
        one = ctx.reshape(x, [1], node, f"{suffix}_1d" if suffix else "1d")
        made = _layer(ctx, node, one, scale, axis, block, to, f"{suffix}_q1d" if suffix else "q1d", quantize)
        return ctx.reshape(made, [], node, suffix or "0d")
    add = ctx.network.add_quantize if quantize else ctx.network.add_dequantize
    if axis < 0:
        scale = _per_tensor_scale(ctx, node, scale)
    layer = add(x, scale, to)
    if axis >= 0:
        layer.axis = axis
    if block and (to if quantize else x.dtype) != trt().int4:
        layer.block_shape = tuple(block if i == axis else 1 for i in range(len(x.shape)))
    return ctx.out(layer, node, suffix)


def _held_blocks(dtype: np.dtype[Any], shape: tuple[int, ...], scale_shape: tuple[int, ...], axis: int,
                 block: int) -> bool:
    """Whether a Quantize or Dequantize layer of ``dtype`` applies these scales as ONNX means them: INT4 per block
    only where the blocks TensorRT infers are ONNX's (see the module's docstring)."""
    return not block or dtype not in (_INT4, _UINT4) or _inferable(shape, scale_shape, axis, block)


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
    """A tensor's values in type ``dtype``: INT8, FP8, INT4 and FP4 (which only Q/DQ layers read) through
    a Dequantize of scale 1 (exact), other types through a cast."""
    if np_dtype(t.dtype) in (*_LAYER_ONLY, np.dtype(np.int8)):
        one = ctx.constant(np.array(1.0, np.float32), node, f"{suffix}_one")
        return _layer(ctx, node, t, one, -1, 0, dtype, suffix, quantize=False)
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
    if dtype in _NATIVE and _zero_is_absent(ctx, node) and _held_blocks(dtype, tuple(x.shape), tuple(scale.shape),
                                                                        axis, block):
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
    scale = ctx.get(node.inputs[1], node)
    code = int(attr(node, "output_dtype"))
    to = trt_dtype(helper.tensor_dtype_to_np_dtype(code)) if code else scale.dtype
    values = ctx.constant_of(node.inputs[0])
    if values is not None and values.dtype in _WEIGHT_SHIFTS:
        held = _held_weight(ctx, node, values, scale, to)
        if held is not None:
            ctx.set(node.outputs[0], held)
            return
    x = ctx.get(node.inputs[0], node)
    dtype = np_dtype(x.dtype)
    axis, block = _layout(node, len(x.shape), tuple(scale.shape))
    if dtype in _NATIVE and _zero_is_absent(ctx, node) and _held_blocks(dtype, tuple(x.shape), tuple(scale.shape),
                                                                        axis, block):
        ctx.set(node.outputs[0], _layer(ctx, node, x, scale, axis, block, to))
        return
    zero = _zero_point(ctx, node, trt().float32) if len(node.inputs) > 2 and node.inputs[2] is not None else None
    ctx.set(node.outputs[0], _dequantized_in_float(ctx, node, x, zero, scale, axis, block, to))


def _dequantized_in_float(ctx: ConversionContext, node: Node, x: Any, zero: Any, scale: Any, axis: int, block: int,
                          to: Any) -> Any:
    """``(x - zero) * scale`` in float32 (``zero`` a float tensor or None), as type ``to``. Whole blocks of a static
    ``x`` are a reshape (the blocked axis split in two, each coefficient broadcast over its block), not a gather:
    TensorRT could fold a gathered constant scale into a float constant of the weight's size."""
    wide = widened(ctx, node, x, trt().float32, "wide")
    shape = tuple(x.shape)
    split = bool(block) and -1 not in shape and shape[axis] % block == 0
    if split:
        wide = ctx.reshape(wide, [*shape[:axis], shape[axis] // block, block, *shape[axis + 1:]], node, "blocks")

    def coefficient(t: Any, what: str) -> Any:
        if not split:
            return _broadcastable(ctx, node, t, x, axis, block, what)
        return ctx.reshape(t, [*t.shape[:axis + 1], 1, *t.shape[axis + 1:]], node, what)

    if zero is not None:
        wide = ctx.elementwise(wide, coefficient(zero, "zero_b"), "SUB", node, "centered")
    scaled = ctx.elementwise(wide, coefficient(ctx.cast(scale, trt().float32, node, "scale_wide"), "scale"), "PROD",
                             node, "scaled")
    if split:
        scaled = ctx.reshape(scaled, list(shape), node, "unblocked")
    return ctx.cast(scaled, to, node)


def _held_weight(ctx: ConversionContext, node: Node, values: np.ndarray, scale: Any, to: Any) -> Any:
    """A DequantizeLinear of a quantized constant, from a constant of a type TensorRT holds (see the module's
    docstring): one Dequantize layer when it can apply the scales itself (symmetric; whole blocks, for INT4 as
    TensorRT infers them), else a Dequantize of scale 1 and the arithmetic in float. None when the zero point is
    known only at run time, or is a non-zero FP8 one."""
    zero_input = node.inputs[2] if len(node.inputs) > 2 else None
    zero = None if zero_input is None else ctx.constant_of(zero_input)
    shift = _WEIGHT_SHIFTS[values.dtype]
    if (zero_input is not None and zero is None) or (zero is None and shift and -1 in tuple(scale.shape)):
        return None
    if values.ndim == 0:  # TensorRT's Q/DQ layers take no 0-D input: the constant is [1], the result 0-D
        one = _held_weight(ctx, node, values.reshape(1), scale, to)
        return None if one is None else ctx.reshape(one, [], node, "0d")
    axis, block = _layout(node, values.ndim, tuple(scale.shape))
    four_bit = values.dtype in (_INT4, _UINT4) and values.size % 2 == 0  # TensorRT packs two to a byte
    if values.dtype == _FP8:
        if zero is not None and np.any(zero.astype(np.float32)):
            return None
        held, z = values, np.zeros((), np.int16)
    else:
        held = values.astype(np.int16) - shift  # uint8 - 128 is int8, uint4 - 8 is int4: q - zero point is kept
        z = (np.zeros(tuple(scale.shape), np.int16) if zero is None else zero.astype(np.int16)) - shift
        centered = held - _spread(z, values.shape, axis, block) if np.any(z) and not four_bit else held
        if centered is not held and _fits(centered, -128, 127):  # the zero point folded in: a symmetric weight
            held, z = centered, np.zeros((), np.int16)
        held = held.astype(_INT4 if four_bit else np.int8)
    if four_bit:
        layered = (not np.any(z) and _held_blocks(_INT4, values.shape, tuple(scale.shape), axis, block)
                   and not (block and axis == values.ndim - 1 and _beside_dequantized(node.outputs[0])))
    else:
        layered = not np.any(z) and not (block and values.shape[axis] % block)
    weight = ctx.constant(held, node, "weight")
    if layered:
        return _layer(ctx, node, weight, scale, axis, block, to)
    zero_t = ctx.constant(z.astype(np.float32), node, "zero") if np.any(z) else None
    return _dequantized_in_float(ctx, node, weight, zero_t, scale, axis, block, to)


def _inferable(shape: tuple[int, ...], scale_shape: tuple[int, ...], axis: int, block: int) -> bool:
    """Whether TensorRT's blocks, inferred from the shapes (``shape[axis] / scale_shape[axis]`` along the one axis
    where they differ, which must be one of the last two), are ONNX's blocks of ``block``: whole blocks, or one
    block (shorter than ``block``) covering the axis. Measured with TensorRT-RTX 1.7, which refuses any other."""
    if len(shape) < 2 or axis < len(shape) - 2 or len(scale_shape) != len(shape) or shape[axis] <= 0:
        return False
    length, count = shape[axis], scale_shape[axis]
    return count == -(-length // block) and count < length and (count == 1 or length % block == 0)


def _beside_dequantized(value: Value) -> bool:
    """Whether a matrix product reads ``value`` (directly or through a Transpose) beside an operand that a
    DequantizeLinear makes. TensorRT-RTX 1.7 fails to build such a product over an INT4 weight whose blocks run
    along its last axis (held ``[out, in]``): "MyelinCheckException: CHECK(is_constant()) failed" (measured; held
    ``[in, out]`` it builds, and the weight-only product builds either way)."""
    for user, slot in value.uses():
        if not isinstance(user, Node):
            continue
        if user.op == "Transpose" and _beside_dequantized(user.outputs[0]):
            return True
        if user.op in ("MatMul", "Gemm") and slot < 2:
            other = user.inputs[1 - slot]
            if other is not None and other.producer is not None and other.producer.op == "DequantizeLinear":
                return True
    return False


def _fits(values: np.ndarray, low: int, high: int) -> bool:
    return bool(values.size == 0 or (values.min() >= low and values.max() <= high))


def _spread(coeff: np.ndarray, shape: tuple[int, ...], axis: int, block: int) -> np.ndarray:
    """A zero point (per tensor, per axis or per block) broadcast against values of ``shape``."""
    if axis < 0:
        return coeff.reshape(())
    if block:
        return np.repeat(coeff, block, axis=axis)[tuple(slice(0, n) for n in shape)]
    return coeff.reshape([-1 if i == axis else 1 for i in range(len(shape))])


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

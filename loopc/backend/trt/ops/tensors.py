"""Ops that make or pass tensors: Constant, Identity, Cast, CastLike, Where, Range, ConstantOfShape."""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import helper

from loopc.backend.trt.context import ConversionContext, np_dtype, trt_dtype
from loopc.backend.trt.ops.quantize import odd_count, rounded_to, widened
from loopc.backend.trt.ops.shape import broadcast_to
from loopc.backend.trt.registry import converter, unsupported
from loopc.ir import Node, Value
from loopc.ir.ops import traits
from loopc.trt import trt
from loopc.trt.dtypes import QUANTIZE_ONLY


@converter("Constant")
def constant(ctx: ConversionContext, node: Node) -> None:
    ctx.set_array(node.outputs[0], np.asarray(node.attrs["value"]), node)


@converter("Identity")
def identity(ctx: ConversionContext, node: Node) -> None:
    ctx.set(node.outputs[0], ctx.out(ctx.network.add_identity(ctx.get(node.inputs[0], node)), node))


def _cast_target(node: Node) -> np.dtype[Any] | None:
    if node.op == "CastLike":
        return node.inputs[1].dtype if node.inputs[1] is not None else None
    return np.dtype(helper.tensor_dtype_to_np_dtype(int(node.attrs["to"])))


def _cast_refusal(node: Node) -> str | None:
    """Casts to the quantized types are Quantize layers, which round to nearest and saturate."""
    target = _cast_target(node)
    name = target.name if target is not None else ""
    if name == "int4":
        return "Cast to int4 (ONNX truncates and wraps; TensorRT makes int4 only by rounding and clamping)"
    if target in QUANTIZE_ONLY and not int(node.attrs.get("saturate", 1)):
        return f"Cast to {name} with saturate=0 (TensorRT saturates); use saturate=1"
    source = node.inputs[0].dtype if node.inputs[0] is not None else None
    four_bit = [t.name for t in (source, target) if t is not None and t.name in ("int4", "float4_e2m1fn")]
    if four_bit and node.inputs[0] is not None and odd_count(node.inputs[0]):
        return (f"Cast of {four_bit[0]} tensors with an odd number of elements (TensorRT packs 4-bit types two "
                "to a byte)")
    return None


@converter("Cast", "CastLike", capability=_cast_refusal)
def cast(ctx: ConversionContext, node: Node) -> None:
    """Cast to the ``to`` attribute's type, or (CastLike) to the type of the second input. FP8, FP4 and
    INT4 come and go through Quantize / Dequantize layers of scale 1, which are exact casts."""
    x = ctx.get(node.inputs[0], node)
    if node.op == "CastLike":
        target = ctx.get(node.inputs[1], node).dtype
    else:
        target = trt_dtype(helper.tensor_dtype_to_np_dtype(int(node.attrs["to"])))
    if np_dtype(x.dtype) in QUANTIZE_ONLY:
        wide = target if target in (trt().float32, trt().float16, trt().bfloat16) else trt().float32
        x = widened(ctx, node, x, wide, "dequantized" if wide != target else "")
    if np_dtype(target) in QUANTIZE_ONLY:
        ctx.set(node.outputs[0], rounded_to(ctx, node, x, np_dtype(target)))
        return
    ctx.set(node.outputs[0], ctx.out(ctx.network.add_cast(x, target), node))


@converter("Where")
def where(ctx: ConversionContext, node: Node) -> None:
    cond, a, b = ctx.broadcast([ctx.get(v, node) for v in node.inputs], node)
    ctx.set(node.outputs[0], ctx.out(ctx.network.add_select(cond, a, b), node))


@converter("Range")
def range_op(ctx: ConversionContext, node: Node) -> None:
    """A constant when the bounds are; else a kLINSPACE fill of max(ceil((limit - start) / delta), 0) values."""
    T = trt()
    known = [ctx.constant_of(v) for v in node.inputs]
    if all(k is not None for k in known):
        start, limit, delta = (np.asarray(k).reshape(()) for k in known)
        # 0-d arrays, so that the length is computed in their dtype as ONNX's reference does; NumPy's stub
        # names scalars only.
        values = np.arange(start, limit, delta, dtype=start.dtype)  # type: ignore[call-overload]
        ctx.set(node.outputs[0], ctx.constant(values, node, ""))
        return
    start, limit, delta = (ctx.scalar0d(ctx.get(v, node), node, f"arg{k}") for k, v in enumerate(node.inputs))
    dtype = start.dtype
    if dtype not in (T.int32, T.int64):
        source = _float_source(list(node.inputs))
        if source is not None:
            # a length is a shape, and TensorRT computes shapes from its integer inputs only
            raise unsupported(node, f"Range whose floating-point bounds depend on the floating-point input "
                              f"{source!r}", hint="make the bounds constants or compute them from integer inputs")
    count = _float_count(ctx, node, start, limit, delta) if dtype not in (T.int32, T.int64) else \
        _int_count(ctx, node, start, limit, delta)
    count = ctx.elementwise(count, ctx.constant(np.array(0, np.int64), node, "zero"), "MAX", node, "count_ge0")
    shape = ctx.reshape(count, [1], node, "shape")
    fill_type = T.int64 if dtype in (T.int32, T.int64) else T.float32
    layer = ctx.network.add_fill([0], T.FillOperation.LINSPACE, fill_type)
    layer.set_input(0, shape)
    layer.set_input(1, ctx.cast(start, fill_type, node, "alpha"))
    layer.set_input(2, ctx.reshape(ctx.cast(delta, fill_type, node, "beta0"), [1], node, "beta"))
    y = ctx.out(layer, node, "fill" if fill_type != dtype else "")
    ctx.set(node.outputs[0], ctx.cast(y, dtype, node))


def _float_source(values: list[Value | None]) -> str | None:
    """The name of a floating-point value with no producer (a graph or loop-body input) whose values
    ``values`` are computed from, if any (a shape read from it does not count)."""
    seen: set[Value] = set()
    stack = [v for v in values if v is not None]
    while stack:
        value = stack.pop()
        if value in seen:
            continue
        seen.add(value)
        if value.producer is None:
            if value.dtype is not None and np.dtype(value.dtype).kind == "f":
                return value.name
            continue
        if not traits(value.producer.op).shape_only:
            stack.extend(v for v in value.producer.inputs if v is not None)
    return None


def _int_count(ctx: ConversionContext, node: Node, start: Any, limit: Any, delta: Any) -> Any:
    """ceil((limit - start) / delta) in INT64, as floor((span + delta - sign(delta)) / delta)."""
    wide = [ctx.cast(t, trt().int64, node, f"i{k}") for k, t in enumerate((start, limit, delta))]
    span = ctx.elementwise(wide[1], wide[0], "SUB", node, "span")
    sign = ctx.unary(wide[2], "SIGN", node, "sign")
    rounded = ctx.elementwise(ctx.elementwise(span, wide[2], "SUM", node, "span_delta"), sign, "SUB", node, "up")
    return ctx.elementwise(rounded, wide[2], "FLOOR_DIV", node, "count")


def _float_count(ctx: ConversionContext, node: Node, start: Any, limit: Any, delta: Any) -> Any:
    """ceil((limit - start) / delta) of floating-point bounds, as INT64: -floor((start - limit) / delta),
    computed in floating point and cast, so that the length is a shape TensorRT can compute."""
    back = ctx.elementwise(start, limit, "SUB", node, "back_span")
    floored = ctx.cast(ctx.elementwise(back, delta, "FLOOR_DIV", node, "floor_count"), trt().int64, node,
                       "floor_count64")
    return ctx.unary(floored, "NEG", node, "count")


@converter("ConstantOfShape")
def constant_of_shape(ctx: ConversionContext, node: Node) -> None:
    value = np.asarray(node.attrs.get("value", np.zeros(1, np.float32))).reshape(-1)[:1]
    known = ctx.constant_of(node.inputs[0])
    if known is not None:
        shape = tuple(int(d) for d in known.reshape(-1))
        ctx.set(node.outputs[0], ctx.constant(np.full(shape, value[0], value.dtype), node, ""))
        return
    target: Any = ctx.get(node.inputs[0], node)
    rank = int(target.shape[0])
    if rank < 0:
        raise unsupported(node, "ConstantOfShape with a shape of unknown length")
    seed = ctx.constant(np.full((1,) * rank, value[0], value.dtype), node, "value")
    ctx.set(node.outputs[0], broadcast_to(ctx, node, seed, target))

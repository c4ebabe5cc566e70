"""onnxruntime's matrix products: FusedMatMul, and the quantized ones its quantizers write —
MatMulNBits (block-quantized weights, 2 to 8 bits), DynamicQuantizeMatMul and MatMulIntegerToFloat.

Quantized weights stay integer constants behind a DequantizeLinear (per block from opset 21, else per
row of blocks), which is what TensorRT needs to run them in int8; the products are then float MatMuls,
equal to onnxruntime's integer products scaled, up to float rounding.
"""

from __future__ import annotations

import numpy as np

from loopc.frontend.onnx.contrib import expands
from loopc.frontend.onnx.contrib.emit import Emitter

#: Bit widths MatMulNBits packs (values per byte: 8 // bits).
_BITS = (2, 4, 8)


@expands("FusedMatMul")
def fused_matmul(e: Emitter) -> None:
    """``alpha · op(A) · op(B)``, op transposing the last two dims where transA / transB say."""
    if e.attr("transBatchA", 0) or e.attr("transBatchB", 0):
        raise e.error("transBatchA / transBatchB (transposing batch dims into the matrix) are not supported",
                      hint="export the model without onnxruntime's FusedMatMul fusion")
    a, b = e.need(0, "A"), e.need(1, "B")
    a = _transposed(e, a) if e.attr("transA", 0) else a
    b = _transposed(e, b) if e.attr("transB", 0) else b
    y = e.op("MatMul", a, b)
    alpha = float(e.attr("alpha", 1.0))
    e.bind(0, y if alpha == 1.0 else e.op("Mul", y, e.scalar(alpha, e.need(0, "A"))))


def _transposed(e: Emitter, x: str) -> str:
    rank = e.known.rank(x)
    if rank < 2:
        return x
    return e.op("Transpose", x, perm=[*range(rank - 2), rank - 1, rank - 2])


@expands("MatMulNBits")
def matmul_nbits(e: Emitter) -> None:
    """``A · dequantize(B)ᵀ (+ bias)`` with B's N rows of K values quantized per block of ``block_size`` along K."""
    k, n, block, bits = (int(e.attr(name, default)) for name, default in
                         (("K", 0), ("N", 0), ("block_size", 0), ("bits", 4)))
    if bits not in _BITS or k <= 0 or n <= 0 or block <= 0:
        raise e.error(f"bits={bits}, K={k}, N={n}, block_size={block}: loopc reads bits 2, 4 or 8 with positive "
                      "K, N and block_size")
    if e.input(4) is not None or int(e.attr("weight_prepacked", 0)):
        raise e.error("g_idx and prepacked weights are not supported", hint="quantize the model again without them")
    packed = e.known.array(e.need(1, "B"))
    if packed is None:
        raise e.error("the packed weights B must be an initializer")
    blocks = -(-k // block)
    if packed.shape != (n, blocks, block * bits // 8):
        raise e.invalid(f"B has shape {list(packed.shape)}, not [N, ceil(K / block_size), block_size * bits / 8] = "
                        f"[{n}, {blocks}, {block * bits // 8}]")
    q = _unpack(packed, bits).reshape(n, blocks * block)
    scales = e.need(2, "scales")
    zero = _zero_points(e, n, blocks, bits)
    if zero is None:  # float zero points: dequantized here, in float (no integer form holds them)
        scale_values = e.known.array(scales)
        float_zero = e.known.array(e.need(3, "zero_points"))
        if scale_values is None or float_zero is None:
            raise e.error("float zero points need the scales and zero points as initializers")
        wide = (q.reshape(n, blocks, block) - float_zero.reshape(n, blocks, 1)) * scale_values.reshape(n, blocks, 1)
        weight = e.const(np.ascontiguousarray(wide.reshape(n, -1)[:, :k].T).astype(scale_values.dtype))
    elif e.opset >= 21:  # per block along K, the weight laid out [K, N] as MatMul reads it
        weight = e.op("DequantizeLinear", e.const(np.ascontiguousarray(q[:, :k].T)),
                      e.op("Transpose", scales, perm=[1, 0]), e.const(np.ascontiguousarray(zero.T)),
                      axis=0, block_size=block)
    else:  # one row per (n, block): a per-axis scale, then the rows laid out [N, K] and transposed
        rows = e.op("DequantizeLinear", e.const(q.reshape(n * blocks, block)),
                    e.op("Reshape", scales, e.ints([-1])), e.const(zero.reshape(-1)), axis=0)
        weight = e.op("Reshape", rows, e.ints([n, blocks * block]))
        if blocks * block != k:
            weight = e.slice(weight, [0], [k], [1])
        weight = e.op("Transpose", weight, perm=[1, 0])
    y = e.op("MatMul", e.need(0, "A"), weight)
    bias = e.input(5)
    e.bind(0, y if bias is None else e.op("Add", y, bias))


def _unpack(packed: np.ndarray, bits: int) -> np.ndarray:
    """Each byte's values, lowest bits first, as uint8 (the last axis grows ``8 // bits`` times)."""
    per_byte = 8 // bits
    shifts = np.arange(per_byte, dtype=np.uint8) * bits
    values = (packed[..., None] >> shifts) & np.uint8((1 << bits) - 1)
    return values.reshape(*packed.shape[:-1], -1).astype(np.uint8)


def _zero_points(e: Emitter, n: int, blocks: int, bits: int) -> np.ndarray | None:
    """The zero points as uint8 [N, blocks] (the default ``2^(bits-1)`` where none are given); None for float
    zero points."""
    name = e.input(3)
    if name is None:
        return np.full((n, blocks), 1 << (bits - 1), np.uint8)
    values = e.known.array(name)
    if values is None:
        raise e.error("the zero points must be an initializer")
    if values.dtype != np.uint8:
        return None
    return _unpack(values.reshape(n, -1), bits)[:, :blocks]


def _dequantized(e: Emitter, q: str, scale: str, zero: str | None) -> str:
    """A quantized operand in float; a 1-D scale of more than one value is per column (the last axis)."""
    return e.dequantize(q, scale, zero, axis=e.known.rank(q) - 1)


def _plus_bias(e: Emitter, y: str, k: int) -> str:
    bias = e.input(k)
    return y if bias is None else e.op("Add", y, bias)


@expands("DynamicQuantizeMatMul")
def dynamic_quantize_matmul(e: Emitter) -> None:
    """A quantized to uint8 by its range (DynamicQuantizeLinear), times B dequantized, plus bias."""
    q, scale, zero = e.ops("DynamicQuantizeLinear", [e.need(0, "A")], 3)
    a = e.op("DequantizeLinear", q, scale, zero)
    b = _dequantized(e, e.need(1, "B"), e.need(2, "b_scale"), e.input(3))
    e.bind(0, _plus_bias(e, e.op("MatMul", a, b), 4))


@expands("MatMulIntegerToFloat")
def matmul_integer_to_float(e: Emitter) -> None:
    """``(A - a_zero) · (B - b_zero) · a_scale · b_scale + bias``."""
    a = _dequantized(e, e.need(0, "A"), e.need(2, "a_scale"), e.input(4))
    b = _dequantized(e, e.need(1, "B"), e.need(3, "b_scale"), e.input(5))
    e.bind(0, _plus_bias(e, e.op("MatMul", a, b), 6))

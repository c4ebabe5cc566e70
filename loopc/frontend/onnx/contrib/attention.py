"""onnxruntime's fused attention: Attention (the Q/K/V projection included, GPT-2's past/present state) and
MultiHeadAttention (projected Q, K, V with an optional bias and a key cache), written out as MatMul and
Softmax the way onnxruntime's CPU kernels compute them.

Scores are ``scale · Q·Kᵀ`` plus a mask and plus ``attention_bias``; the mask adds ``mask_filter_value``
(-10000 unless given) at padded keys — a raw 0/1 mask of ``[batch, total]`` or ``[batch, seq, total]``, or
per row the end (``[batch]``) or end and start (``[2·batch]``) of its keys — and puts the type's lowest value
above the diagonal of a unidirectional (causal) one, whose rows start after the past keys.
"""

from __future__ import annotations

import numpy as np
from onnx import helper

from loopc.frontend.onnx.contrib import expands
from loopc.frontend.onnx.contrib.emit import Emitter

_MASK_FILTER = -10000.0


@expands("Attention")
def attention(e: Emitter) -> None:
    for name in ("do_rotary", "past_present_share_buffer"):
        if e.attr(name, 0):
            raise e.error(f"{name}=1 is not supported", hint="export the model without onnxruntime's fusions")
    if e.input(6) is not None:
        raise e.error("past_sequence_length (a shared past/present buffer) is not supported")
    x, weights = e.need(0, "input"), e.need(1, "weights")
    heads = int(e.attr("num_heads", 0))
    total = e.known.dims(weights)[-1]
    sizes = list(e.attr("qkv_hidden_sizes", None) or ([total // 3] * 3 if total is not None else []))
    if len(sizes) != 3 or heads <= 0 or any(s is None or s % heads for s in sizes):
        raise e.invalid(f"hidden sizes {sizes} of the weights {e.known.dims(weights)} are not three multiples of "
                        f"num_heads={heads}")
    qkv = e.op("MatMul", x, weights)
    bias = e.input(2)
    if bias is not None:
        qkv = e.op("Add", qkv, bias)
    bounds = np.cumsum([0, *sizes]).tolist()
    q, k, v = (_heads(e, e.slice(qkv, [bounds[i]], [bounds[i + 1]], [-1]), heads, sizes[i] // heads)
               for i in range(3))
    past = e.input(4)
    if past is not None:
        k = e.op("Concat", e.op("Gather", past, e.const(np.array(0, np.int64)), axis=0), k, axis=2)
        v = e.op("Concat", e.op("Gather", past, e.const(np.array(1, np.int64)), axis=0), v, axis=2)
    if e.output(1) is not None:
        e.bind(1, e.op("Concat", e.unsqueeze(k, [0]), e.unsqueeze(v, [0]), axis=0))
    e.bind(0, _attend(e, q, k, v, sizes[0] // heads, e.input(3), e.input(5), x))


@expands("MultiHeadAttention")
def multi_head_attention(e: Emitter) -> None:
    for index, what in ((8, "past_sequence_length"), (9, "cache_indirection")):
        if e.input(index) is not None:
            raise e.error(f"{what} (a shared cache buffer, beam search) is not supported")
    if e.output(3) is not None:
        raise e.error("output qk is not supported")
    query, key, value = e.need(0, "query"), e.input(1), e.input(2)
    if key is None or value is None or e.known.rank(query) != 3:
        raise e.error("packed QKV or KV inputs are not supported", hint="give query, key and value separately")
    heads = int(e.attr("num_heads", 0))
    widths = [e.known.dims(name)[-1] for name in (query, key, value)]
    ranks = [e.known.rank(name) for name in (query, key, value)]
    if heads <= 0 or widths[0] is None or widths[0] % heads:
        raise e.invalid(f"query's hidden size {widths[0]} is not a multiple of num_heads={heads}")
    head_size = widths[0] // heads
    bias = e.input(3)
    projected = [query, key, value]
    if bias is not None:
        sizes = [w if r == 3 else heads * (w or 0) for w, r in zip(widths, ranks)]
        bounds = np.cumsum([0, *sizes]).tolist()
        projected = [e.op("Add", x, e.slice(bias, [bounds[i]], [bounds[i + 1]], [0])) if ranks[i] == 3 else x
                     for i, x in enumerate(projected)]
    q = _heads(e, projected[0], heads, head_size)
    k, v = (x if r == 4 else _heads(e, x, heads, (w or 0) // heads)
            for x, r, w in zip(projected[1:], ranks[1:], widths[1:]))
    past_key, past_value = e.input(6), e.input(7)
    if past_key is not None:
        k = e.op("Concat", past_key, k, axis=2)
    if past_value is not None:
        v = e.op("Concat", past_value, v, axis=2)
    e.bind(1, k)
    e.bind(2, v)
    e.bind(0, _attend(e, q, k, v, head_size, e.input(4), e.input(5), query))


def _heads(e: Emitter, x: str, heads: int, size: int) -> str:
    """[batch, seq, heads·size] → [batch, heads, seq, size]."""
    return e.op("Transpose", e.op("Reshape", x, e.ints([0, 0, heads, size])), perm=[0, 2, 1, 3])


def _attend(e: Emitter, q: str, k: str, v: str, head_size: int, mask: str | None, attention_bias: str | None,
            like: str) -> str:
    """softmax(scale · Q·Kᵀ + mask + bias) · V, back to [batch, seq, heads·size]."""
    scale = e.attr("scale", None)
    scale = float(scale) if scale is not None else 1.0 / float(np.sqrt(head_size))
    scores = e.op("Mul", e.op("MatMul", q, e.op("Transpose", k, perm=[0, 1, 3, 2])), e.scalar(scale, like))
    masking = _mask(e, mask, q, k, like)
    if masking is not None:
        scores = e.op("Add", scores, masking)
    if attention_bias is not None:
        scores = e.op("Add", scores, attention_bias)
    out = e.op("MatMul", e.op("Softmax", scores, axis=-1), v)
    return e.op("Reshape", e.op("Transpose", out, perm=[0, 2, 1, 3]), e.ints([0, 0, -1]))


def _mask(e: Emitter, mask: str | None, q: str, k: str, like: str) -> str | None:
    """What is added to the scores [batch, heads, seq, total] for padding and causality (None: nothing)."""
    dtype = e.known.dtype(like)
    filtered = e.scalar(float(e.attr("mask_filter_value", _MASK_FILTER)), like)
    zero = e.scalar(0.0, like)
    added = None
    if mask is not None:
        added = _padding(e, mask, k, like, filtered, zero)
    if e.attr("unidirectional", 0):
        seq, total = e.dim(q, 2), e.dim(k, 2)
        one = e.const(np.array(1, np.int64))
        rows = e.unsqueeze(e.op("Range", e.const(np.array(0, np.int64)), seq, one), [1])
        columns = e.op("Range", e.const(np.array(0, np.int64)), total, one)
        past = e.op("Sub", total, seq)
        future = e.op("Greater", columns, e.op("Add", rows, past))  # [seq, total]
        lowest = e.scalar(float(np.finfo(dtype).min), like)
        added = e.op("Where", future, lowest, zero if added is None else added)
    return added


def _padding(e: Emitter, mask: str, k: str, like: str, filtered: str, zero: str) -> str:
    """The padding mask as an additive [batch, 1, seq or 1, total] term."""
    rank = e.known.rank(mask)
    if rank in (2, 3):  # raw 0/1 values: 0 masks
        keep = e.op("Greater", mask, e.op("Cast", e.const(np.array(0, np.int32)), to=_elem(e, mask)))
        return e.unsqueeze(e.op("Where", keep, zero, filtered), [1, 2] if rank == 2 else [1])
    if rank != 1:
        raise e.error(f"a mask of rank {rank} is not supported (onnxruntime's CPU kernel has none either)")
    total = e.dim(k, 2)
    columns = e.op("Range", e.const(np.array(0, np.int64)), total, e.const(np.array(1, np.int64)))
    bounds = e.op("Cast", mask, to=7)
    if _is_end_and_start(e, mask, like):
        pair = e.op("Reshape", bounds, e.ints([2, -1]))
        ends = e.op("Gather", pair, e.const(np.array(0, np.int64)), axis=0)
        starts = e.unsqueeze(e.op("Gather", pair, e.const(np.array(1, np.int64)), axis=0), [1])
        masked = e.op("Or", e.op("Not", e.op("Less", columns, e.unsqueeze(ends, [1]))), e.op("Less", columns, starts))
    else:
        masked = e.op("Not", e.op("Less", columns, e.unsqueeze(bounds, [1])))
    return e.unsqueeze(e.op("Where", masked, filtered, zero), [1, 2])


def _is_end_and_start(e: Emitter, mask: str, like: str) -> bool:
    """Whether a 1-D mask holds ``2·batch`` values (ends then starts) rather than ``batch`` (ends)."""
    length, batch = e.known.dims(mask)[0], e.known.dims(like)[0]
    if length is None:
        return False
    if batch is not None and length == 3 * batch + 2:
        raise e.error("a mask index of 3·batch + 2 values is not supported")
    return batch is not None and length == 2 * batch and length != batch


def _elem(e: Emitter, name: str) -> int:
    return int(helper.np_dtype_to_tensor_dtype(e.known.dtype(name)))

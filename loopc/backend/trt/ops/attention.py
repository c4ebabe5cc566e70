"""Transformer ops: RotaryEmbedding, Attention and TensorScatter on TensorRT's layers made for them.

TensorRT's layers take [batch, heads, sequence, head size] tensors, as ONNX's 4-D forms are; ONNX's
3-D forms ([batch, sequence, heads * head size], with the head counts as attributes) are reshaped to
them and back.

An Attention that TensorRT's IAttention expresses (no score output, no softcap, one head size, the
softmax in the inputs' type, not in a loop or branch) is one; TensorRT computes
``softmax(Q Kᵀ + mask) V`` unscaled, so Q and K are each multiplied by the square root of the scale
first, as ONNX's own definition does. A causal diagonal alone is TensorRT's; with a mask, a window or
padding lengths, all of them are summed into one additive mask. Every other Attention is built from
matrix products and a softmax, following ONNX's definition step by step (softcap, bias, fully masked
rows).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from onnx import helper

from loopc.backend.trt.context import ConversionContext, trt_dtype
from loopc.backend.trt.ops.reduce import mask as axes_mask
from loopc.backend.trt.ops.shape import broadcast_to
from loopc.backend.trt.registry import converter, unsupported
from loopc.ir import Node
from loopc.semantics.attributes import attr
from loopc.trt import trt


def _heads_first(ctx: ConversionContext, node: Node, x: Any, heads: int, suffix: str = "heads_first") -> Any:
    """[b, s, heads * h] as [b, heads, s, h]."""
    layer = ctx.network.add_shuffle(x)
    layer.reshape_dims = (0, 0, heads, -1)
    layer.zero_is_placeholder = True
    layer.second_transpose = (0, 2, 1, 3)
    return ctx.out(layer, node, suffix)


def _heads_merged(ctx: ConversionContext, node: Node, x: Any) -> Any:
    """[b, heads, s, h] back to [b, s, heads * h]."""
    layer = ctx.network.add_shuffle(x)
    layer.first_transpose = (0, 2, 1, 3)
    layer.reshape_dims = (0, 0, -1)
    layer.zero_is_placeholder = True
    return ctx.out(layer, node, "heads_merged")


@converter("RotaryEmbedding")
def rotary_embedding(ctx: ConversionContext, node: Node) -> None:
    x, cos, sin = (ctx.get(v, node) for v in node.inputs[:3])
    rank = len(x.shape)
    heads = int(node.attrs.get("num_heads", 0))
    if rank == 3 and heads <= 0:
        raise unsupported(node, "RotaryEmbedding of a 3-D input without num_heads",
                          hint="set num_heads, which splits the hidden size into heads")
    if rank not in (3, 4):
        raise unsupported(node, f"RotaryEmbedding of a rank-{rank} input (it takes 3-D or 4-D inputs)")
    inner = _heads_first(ctx, node, x, heads) if rank == 3 else x
    layer = ctx.network.add_rotary_embedding(inner, cos, sin, bool(int(attr(node, "interleaved"))),
                                             int(attr(node, "rotary_embedding_dim")))
    positions = node.inputs[3] if len(node.inputs) > 3 else None
    if positions is not None:
        layer.set_input(3, ctx.cast(ctx.get(positions, node), trt().int64, node, "positions"))
    y = ctx.out(layer, node, "rope" if rank == 3 else "")
    ctx.set(node.outputs[0], _heads_merged(ctx, node, y) if rank == 3 else y)


#: Attention's inputs by position (opset 24 added the padding lengths).
_Q, _K, _V, _MASK, _PAST_K, _PAST_V, _NONPAD = range(7)
_NEG_INF = -np.inf


def _input(node: Node, index: int) -> Any:
    return node.inputs[index] if index < len(node.inputs) else None


def _wanted(node: Node, index: int) -> bool:
    """Whether the model reads optional output ``index`` (present key/value, scores)."""
    return index < len(node.outputs) and node.outputs[index] is not None and bool(node.outputs[index].name)


def _attention_refusal(node: Node) -> str | None:
    mode = int(node.attrs.get("qk_matmul_output_mode", 0))
    if mode not in (0, 1, 2, 3):
        return f"Attention with qk_matmul_output_mode={mode} (ONNX defines 0 to 3)"
    if (_input(node, _PAST_K) is None) != (_input(node, _PAST_V) is None):
        return "Attention with only one of past_key and past_value"
    if _input(node, _PAST_K) is not None and _input(node, _NONPAD) is not None:
        return "Attention with both past_key and nonpad_kv_seqlen (ONNX's reference refuses the pair)"
    return None


def _typed(ctx: ConversionContext, node: Node, array: np.ndarray, like: Any, suffix: str) -> Any:
    """A float constant in ``like``'s type (through float32: bfloat16 has no NumPy array TensorRT takes)."""
    return ctx.cast(ctx.constant(np.asarray(array, np.float32), node, suffix), like.dtype, node, f"{suffix}_typed")


def _static(node: Node, dims: Any, what: str) -> list[int]:
    found = [int(d) for d in dims]
    if any(d < 0 for d in found):
        raise unsupported(node, f"Attention whose {what} is dynamic", hint="give the model static sequence lengths")
    return found


def _where(ctx: ConversionContext, node: Node, cond: Any, a: Any, b: Any, suffix: str) -> Any:
    cond, a, b = ctx.broadcast([cond, a, b], node)
    return ctx.out(ctx.network.add_select(cond, a, b), node, suffix)


def _allowed_bias(ctx: ConversionContext, node: Node, allowed: Any, like: Any, suffix: str) -> Any:
    """0 where ``allowed``, -inf elsewhere (select, not multiply: 0 * -inf would be NaN)."""
    rank = len(allowed.shape)
    zero = _typed(ctx, node, np.zeros((1,) * rank), like, f"{suffix}_zero")
    ninf = _typed(ctx, node, np.full((1,) * rank, _NEG_INF), like, f"{suffix}_ninf")
    return _where(ctx, node, allowed, zero, ninf, suffix)


def _positions(ctx: ConversionContext, node: Node, t: Any, axis: int, shape: list[int], suffix: str) -> Any:
    """0, 1, ... along ``axis`` of ``t`` (int32), shaped ``shape`` (-1 at the positions): a constant
    when the length is static, else a fill of the length read from ``t``'s shape."""
    length = int(t.shape[axis])
    if length >= 0:
        return ctx.constant(np.arange(length, dtype=np.int32).reshape(shape), node, suffix)
    T = trt()
    count = ctx.gather1(ctx.shape_of(t, node, f"{suffix}_shape"), [axis], node, f"{suffix}_count")
    fill = ctx.network.add_fill([0], T.FillOperation.LINSPACE, T.int64)
    fill.set_input(0, count)
    fill.set_input(1, ctx.constant(np.array(0, np.int64), node, f"{suffix}_start"))
    fill.set_input(2, ctx.constant(np.array([1], np.int64), node, f"{suffix}_step"))
    steps = ctx.cast(ctx.out(fill, node, f"{suffix}_fill"), T.int32, node, f"{suffix}_i32")
    return ctx.reshape(steps, shape, node, suffix)


def _length(ctx: ConversionContext, node: Node, t: Any, axis: int, suffix: str) -> Any:
    """``t.shape[axis]`` as an int32 [1, 1, 1, 1] tensor."""
    length = int(t.shape[axis])
    if length >= 0:
        return ctx.constant(np.full((1, 1, 1, 1), length, np.int32), node, suffix)
    count = ctx.gather1(ctx.shape_of(t, node, f"{suffix}_shape"), [axis], node, f"{suffix}_count")
    return ctx.reshape(ctx.cast(count, trt().int32, node, f"{suffix}_i32"), [1, 1, 1, 1], node, suffix)


def _frontier_bias(ctx: ConversionContext, node: Node, q: Any, k: Any, past: Any | None) -> Any | None:
    """The causal diagonal and sliding window as an additive bias: query i (at i + offset in the whole
    sequence, offset = past length, or per batch the valid length - s_q) sees key j when
    0 <= i + offset - j (causal), i + offset - j <= left and j - (i + offset) <= right (window).
    A constant when the lengths are static and the offset is one number, else computed."""
    causal = bool(int(node.attrs.get("is_causal", 0)))
    left, right = int(node.attrs.get("left_window_size", -1)), int(node.attrs.get("right_window_size", -1))
    if not causal and left < 0 and right < 0:
        return None
    nonpad = _input(node, _NONPAD) if past is None else None
    lengths = [int(q.shape[2]), int(k.shape[2])] + ([int(past.shape[2])] if past is not None else [])
    if nonpad is None and min(lengths) >= 0:
        diff = np.arange(lengths[0])[:, None] - np.arange(lengths[1])[None, :] + (lengths[2] if past is not None else 0)
        allowed = np.ones_like(diff, dtype=bool)
        if causal:
            allowed &= diff >= 0
        if left >= 0:
            allowed &= diff <= left
        if right >= 0:
            allowed &= -diff <= right
        return _typed(ctx, node, np.where(allowed, 0.0, _NEG_INF), q, "frontier")
    T = trt()
    diff = ctx.elementwise(_positions(ctx, node, q, 2, [1, 1, -1, 1], "query_pos"),
                           _positions(ctx, node, k, 2, [1, 1, 1, -1], "key_pos"), "SUB", node, "diff")
    if nonpad is not None:  # each batch's diagonal ends at its valid length
        valid = ctx.reshape(ctx.cast(ctx.get(nonpad, node), T.int32, node, "nonpad_i32"), [-1, 1, 1, 1], node,
                            "nonpad_b")
        diff = ctx.elementwise(diff, ctx.elementwise(valid, _length(ctx, node, q, 2, "s_q"), "SUB", node, "offset"),
                               "SUM", node, "frontier_diff")
    elif past is not None:
        diff = ctx.elementwise(diff, _length(ctx, node, past, 2, "past_len"), "SUM", node, "frontier_diff")
    tests = []
    if causal:
        tests.append(ctx.elementwise(diff, ctx.constant(np.zeros((1,) * 4, np.int32), node, "c0"), "LESS",
                                     node, "before"))
    if left >= 0:
        tests.append(ctx.elementwise(diff, ctx.constant(np.full((1,) * 4, left, np.int32), node, "cl"),
                                     "GREATER", node, "too_old"))
    if right >= 0:
        tests.append(ctx.elementwise(diff, ctx.constant(np.full((1,) * 4, -right, np.int32), node, "cr"),
                                     "LESS", node, "too_new"))
    refused = tests[0]
    for n, t in enumerate(tests[1:]):
        refused = ctx.elementwise(refused, t, "OR", node, f"refused{n}")
    return _allowed_bias(ctx, node, ctx.unary(refused, "NOT", node, "frontier_ok"), q, "frontier")


def _mask_bias(ctx: ConversionContext, node: Node, q: Any, s_kv: int) -> Any | None:
    """The attention mask as an additive bias; a mask shorter than the keys leaves the rest masked."""
    value = _input(node, _MASK)
    if value is None:
        return None
    mask = ctx.get(value, node)
    if mask.dtype == trt().bool:
        mask = _allowed_bias(ctx, node, mask, q, "mask_bias")
    else:
        mask = ctx.cast(mask, q.dtype, node, "mask_typed")
    shape = list(mask.shape)
    if shape[-1] >= 0 and s_kv < 0:
        raise unsupported(node, "Attention with a mask of fixed length over keys of dynamic length (ONNX pads a "
                                "shorter mask)", hint="give the keys a static length, or the mask a dynamic one")
    short = s_kv - int(shape[-1]) if shape[-1] >= 0 else 0
    if short > 0:
        _static(node, shape, "mask shape")
        pad = _typed(ctx, node, np.full(shape[:-1] + [short], _NEG_INF), q, "mask_pad")
        mask = ctx.concat([mask, pad], node, "mask_padded", axis=len(shape) - 1)
    return mask


def _padding_bias(ctx: ConversionContext, node: Node, q: Any, k: Any) -> Any | None:
    """Keys at or past each batch's nonpad_kv_seqlen are masked."""
    nonpad = _input(node, _NONPAD)
    if nonpad is None:
        return None
    lengths = ctx.reshape(ctx.cast(ctx.get(nonpad, node), trt().int32, node, "lengths"), [-1, 1, 1, 1], node,
                          "lengths_b")
    keys = _positions(ctx, node, k, 2, [1, 1, 1, -1], "key_index")
    return _allowed_bias(ctx, node, ctx.elementwise(keys, lengths, "LESS", node, "valid"), q, "padding")


def _zero_empty_rows(ctx: ConversionContext, node: Node, bias: Any, x: Any, q: Any) -> Any:
    """``x`` with 0 in the rows whose every key the bias masks: such a query attends to nothing (ONNX's
    definition), where a softmax would divide 0 by 0."""
    rank = len(bias.shape)
    top = ctx.network.add_reduce(bias, trt().ReduceOperation.MAX, axes_mask([rank - 1], rank), True)
    ninf = _typed(ctx, node, np.full((1,) * rank, _NEG_INF), q, "row_ninf")
    empty = ctx.elementwise(ctx.out(top, node, "row_top"), ninf, "EQUAL", node, "row_empty")
    zero = _typed(ctx, node, np.zeros((1, 1, 1, 1)), q, "row_zero")
    return _where(ctx, node, empty, zero, x, "rows_guarded")


def _expand_heads(ctx: ConversionContext, node: Node, t: Any, heads_q: int, suffix: str) -> Any:
    """Key/value heads repeated for grouped-query attention: query head i reads head i // group."""
    heads_kv = int(t.shape[1])
    if heads_kv == heads_q:
        return t
    if heads_kv <= 0 or heads_q % heads_kv:
        raise unsupported(node, f"Attention of {heads_q} query heads over {heads_kv} key/value heads "
                                "(the query heads must be a multiple)")
    index = ctx.constant(np.arange(heads_q, dtype=np.int32) // (heads_q // heads_kv), node, f"{suffix}_heads")
    return ctx.out(ctx.network.add_gather(t, index, 1), node, suffix)


def _in_body(node: Node) -> bool:
    """Whether ``node`` is in a loop's body or a conditional's branch."""
    return node.graph is not None and node.graph.owner is not None


def _express_as_layer(ctx: ConversionContext, node: Node, q: Any, v: Any) -> bool:
    """Whether TensorRT's IAttention computes this node (see the module docstring); its builder fails on
    one inside a loop or a conditional (an internal error), so bodies and branches get the products."""
    if _in_body(node) or _wanted(node, 3) or float(node.attrs.get("softcap", 0.0)):
        return False
    precision = node.attrs.get("softmax_precision")
    if precision is not None and trt_dtype(helper.tensor_dtype_to_np_dtype(int(precision))) != q.dtype:
        return False  # a softmax in another type than the inputs'
    mask = _input(node, _MASK)
    if mask is not None and len(ctx.get(mask, node).shape) > 4:
        return False
    return int(q.shape[3]) == int(v.shape[3]) and int(q.shape[3]) > 0


@converter("Attention", capability=_attention_refusal)
def attention(ctx: ConversionContext, node: Node) -> None:
    q, k, v = (ctx.get(_input(node, i), node) for i in (_Q, _K, _V))
    three_d = len(q.shape) == 3
    if three_d:
        heads_q, heads_kv = int(node.attrs.get("q_num_heads", 0)), int(node.attrs.get("kv_num_heads", 0))
        if heads_q <= 0 or heads_kv <= 0:
            raise unsupported(node, "Attention of 3-D inputs without q_num_heads and kv_num_heads")
        q, k, v = (_heads_first(ctx, node, t, h, name) for t, h, name in
                   ((q, heads_q, "q_heads"), (k, heads_kv, "k_heads"), (v, heads_kv, "v_heads")))
    head = _static(node, q.shape[3:], "head size")[0]
    scale = float(node.attrs.get("scale", 1.0 / math.sqrt(head)))
    past = None  # the past keys, whose length puts the causal diagonal
    queries, new_keys = int(q.shape[2]), int(k.shape[2])
    if _input(node, _PAST_K) is not None:
        past, past_v = ctx.get(_input(node, _PAST_K), node), ctx.get(_input(node, _PAST_V), node)
        k = ctx.concat([past, k], node, "present_key", axis=2)
        v = ctx.concat([past_v, v], node, "present_value", axis=2)
    for index, present in ((1, k), (2, v)):
        if _wanted(node, index):
            ctx.set(node.outputs[index], present)
    root = _typed(ctx, node, np.full((1, 1, 1, 1), np.sqrt(scale)), q, "root_scale")
    q = ctx.elementwise(q, root, "PROD", node, "q_scaled")
    k = ctx.elementwise(k, root, "PROD", node, "k_scaled")
    heads_q = int(q.shape[1])
    if _express_as_layer(ctx, node, q, v):
        y = _attention_layer(ctx, node, q, k, v, past, queries == new_keys >= 0)
    else:
        y = _attention_products(ctx, node, q, _expand_heads(ctx, node, k, heads_q, "k_grouped"),
                                _expand_heads(ctx, node, v, heads_q, "v_grouped"), past)
    ctx.set(node.outputs[0], _heads_merged(ctx, node, y) if three_d else y)


def _attention_layer(ctx: ConversionContext, node: Node, q: Any, k: Any, v: Any, past: Any | None,
                     aligned: bool) -> Any:
    """One IAttention, decomposable so that the builder may split it where no fused kernel fits. ``aligned``:
    as many new keys as queries, known when building, so that the causal diagonal right after the past keys
    (ONNX's, as its reference and node tests put it; onnxruntime ends it at the last key) is TensorRT's
    lower-right one."""
    T = trt()
    causal = T.CausalMaskKind.NONE
    mask = _input(node, _MASK)
    windowed = int(node.attrs.get("left_window_size", -1)) >= 0 or int(node.attrs.get("right_window_size", -1)) >= 0
    if mask is None and not windowed and _input(node, _NONPAD) is None and (past is None or aligned):
        if int(node.attrs.get("is_causal", 0)):  # ONNX anchors the diagonal after the past keys
            causal = T.CausalMaskKind.UPPER_LEFT if past is None else T.CausalMaskKind.LOWER_RIGHT
        layer = ctx.network.add_attention_v2(q, k, v, T.AttentionNormalizationOp.SOFTMAX, causal)
        layer.decomposable = True
        return ctx.out(layer, node, "attention")
    # the mask, diagonal, window and padding as one additive mask (TensorRT takes a mask or a diagonal)
    bias = _bias(ctx, node, q, k, past)
    layer = ctx.network.add_attention_v2(q, k, v, T.AttentionNormalizationOp.SOFTMAX, causal)
    layer.decomposable = True
    layer.mask = ctx.to_rank(bias, 4, node, "mask4d")
    # TensorRT does not say what a query whose every key is masked gets; ONNX says 0
    return _zero_empty_rows(ctx, node, bias, ctx.out(layer, node, "attention"), q)


def _bias(ctx: ConversionContext, node: Node, q: Any, k: Any, past: Any | None) -> Any | None:
    """The mask, the causal or windowed frontier and the padding lengths, summed into one additive bias."""
    biases = [b for b in (_mask_bias(ctx, node, q, int(k.shape[2])), _frontier_bias(ctx, node, q, k, past),
                          _padding_bias(ctx, node, q, k)) if b is not None]
    bias = biases[0] if biases else None
    for i, more in enumerate(biases[1:]):
        bias = ctx.elementwise(bias, more, "SUM", node, f"bias{i}")
    return bias


def _attention_products(ctx: ConversionContext, node: Node, q: Any, k: Any, v: Any, past: Any | None) -> Any:
    """ONNX's definition in TensorRT layers: scores, softcap, bias, softmax, fully masked rows, products."""
    T = trt()
    scores = ctx.out(ctx.network.add_matrix_multiply(q, T.MatrixOperation.NONE, k, T.MatrixOperation.TRANSPOSE),
                     node, "scores")
    raw = scores
    softcap = float(node.attrs.get("softcap", 0.0))
    if softcap > 0:
        cap = _typed(ctx, node, np.full((1, 1, 1, 1), softcap), q, "softcap")
        tanh = ctx.network.add_activation(ctx.elementwise(scores, cap, "DIV", node, "capped_in"), T.ActivationType.TANH)
        scores = ctx.elementwise(ctx.out(tanh, node, "capped_tanh"), cap, "PROD", node, "capped")
    bias = _bias(ctx, node, q, k, past)
    biased = scores if bias is None else ctx.elementwise(scores, bias, "SUM", node, "biased")
    precision = node.attrs.get("softmax_precision")
    wide = biased
    if precision is not None:
        wide = ctx.cast(biased, trt_dtype(helper.tensor_dtype_to_np_dtype(int(precision))), node, "softmax_in")
    softmax = ctx.network.add_softmax(wide)
    softmax.axes = axes_mask([3], 4)
    probs = ctx.cast(ctx.out(softmax, node, "probs"), q.dtype, node, "probs_typed")
    if bias is not None:
        probs = _zero_empty_rows(ctx, node, bias, probs, q)
    if _wanted(node, 3):
        mode = int(node.attrs.get("qk_matmul_output_mode", 0))
        shown = {0: raw, 1: scores, 2: biased, 3: probs}[mode]
        ctx.set(node.outputs[3], ctx.cast(shown, q.dtype, node, "qk_typed"))
    return ctx.out(ctx.network.add_matrix_multiply(probs, T.MatrixOperation.NONE, v, T.MatrixOperation.NONE),
                   node, "context")


def _scatter_refusal(node: Node) -> str | None:
    mode = node.attrs.get("mode", "linear")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode not in ("linear", "circular"):
        return f"TensorScatter mode {mode!r} (ONNX defines linear and circular)"
    return None


@converter("TensorScatter", capability=_scatter_refusal)
def tensor_scatter(ctx: ConversionContext, node: Node) -> None:
    """A KV-cache write: TensorRT's in-place cache update where the cache is a network input read by
    this node alone and the result a network output (the layer's conditions), else a scatter of the
    update along the sequence axis at each batch's write index (modulo the cache length if circular)."""
    cache, update = ctx.get(node.inputs[0], node), ctx.get(node.inputs[1], node)
    rank = len(cache.shape)
    axis = int(attr(node, "axis")) % rank
    mode = attr(node, "mode")
    circular = (mode.decode() if isinstance(mode, bytes) else str(mode)) == "circular"
    indices = _input(node, 2)
    T = trt()
    write = ctx.cast(ctx.get(indices, node), T.int32, node, "write_i32") if indices is not None else None
    cache_value = node.inputs[0]
    in_place = (rank == 4 and axis == 2 and not circular and cache.is_network_input and cache_value is not None
                and len(cache_value.uses()) == 1 and node.outputs[0] in ctx.reserved
                and (write is not None or int(cache.shape[0]) >= 0))
    if in_place:
        if write is None:  # every batch writes from 0
            write = ctx.constant(np.zeros(int(cache.shape[0]), np.int32), node, "write_zero")
        layer = ctx.network.add_kv_cache_update(cache, update, write, T.KVCacheMode.LINEAR)
        ctx.set(node.outputs[0], ctx.out(layer, node))
        return
    along = [-1 if i == axis else 1 for i in range(rank)]
    steps = _positions(ctx, node, update, axis, along, "steps")
    if write is not None:
        starts = ctx.reshape(write, [-1] + [1] * (rank - 1), node, "starts")
    else:
        starts = ctx.constant(np.zeros([1] * rank, np.int32), node, "starts")
    where = ctx.elementwise(starts, steps, "SUM", node, "positions")
    if circular:
        length = _static(node, cache.shape[axis:axis + 1], "cache length, which circular writes wrap at,")[0]
        where = _modulo(ctx, node, where, length, rank)
    shape = [int(d) for d in update.shape]
    full = broadcast_to(ctx, node, where, shape if min(shape) >= 0 else ctx.shape_of(update, node, "update_shape"),
                        "indices")
    layer = ctx.network.add_scatter(cache, full, update, T.ScatterMode.ELEMENT)
    layer.axis = axis
    ctx.set(node.outputs[0], ctx.out(layer, node))


def _modulo(ctx: ConversionContext, node: Node, x: Any, n: int, rank: int) -> Any:
    """x mod n for non-negative x: x - floor(x / n) * n."""
    divisor = ctx.constant(np.full([1] * rank, n, np.int32), node, "length")
    quotient = ctx.elementwise(x, divisor, "FLOOR_DIV", node, "laps")
    return ctx.elementwise(x, ctx.elementwise(quotient, divisor, "PROD", node, "lapped"), "SUB", node, "wrapped")

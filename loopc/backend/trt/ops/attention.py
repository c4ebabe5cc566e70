"""Transformer ops: RotaryEmbedding on TensorRT's rotary embedding layer, Attention on its attention.

TensorRT's layers take [batch, heads, sequence, head size] tensors, as ONNX's 4-D forms are; ONNX's
3-D forms ([batch, sequence, heads * head size], with the head counts as attributes) are reshaped to
them and back.

An Attention that TensorRT's IAttention expresses (no score output, no softcap, one head size, a
mask or a causal diagonal but not both, no padding lengths or windows) is one; TensorRT computes
``softmax(Q Kᵀ + mask) V`` unscaled, so Q and K are each multiplied by the square root of the
scale first, as ONNX's own definition does. Every other Attention is built from matrix products and
a softmax, following ONNX's definition step by step (softcap, bias, fully masked rows).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from onnx import helper

from loopc.backend.trt.context import ConversionContext, trt_dtype
from loopc.backend.trt.ops.reduce import mask as axes_mask
from loopc.backend.trt.registry import converter, unsupported
from loopc.ir import Node
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
    layer = ctx.network.add_rotary_embedding(inner, cos, sin, bool(int(node.attrs.get("interleaved", 0))),
                                             int(node.attrs.get("rotary_embedding_dim", 0)))
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


def _frontier_bias(ctx: ConversionContext, node: Node, q: Any, s_q: int, s_kv: int, past: int) -> Any | None:
    """The causal diagonal and sliding window as an additive bias: query i (at i + offset in the whole
    sequence, offset = past length, or per batch the valid length - s_q) sees key j when
    0 <= i + offset - j (causal), i + offset - j <= left and j - (i + offset) <= right (window)."""
    causal = bool(int(node.attrs.get("is_causal", 0)))
    left, right = int(node.attrs.get("left_window_size", -1)), int(node.attrs.get("right_window_size", -1))
    if not causal and left < 0 and right < 0:
        return None
    diff = np.arange(s_q)[:, None] - np.arange(s_kv)[None, :]  # i - j
    nonpad = _input(node, _NONPAD)
    if nonpad is None or past:
        diff = diff + past
        allowed = np.ones_like(diff, dtype=bool)
        if causal:
            allowed &= diff >= 0
        if left >= 0:
            allowed &= diff <= left
        if right >= 0:
            allowed &= -diff <= right
        return _typed(ctx, node, np.where(allowed, 0.0, _NEG_INF), q, "frontier")
    T = trt()
    lengths = ctx.cast(ctx.get(nonpad, node), T.int32, node, "nonpad_i32")
    offset = ctx.reshape(ctx.elementwise(lengths, ctx.constant(np.array([s_q], np.int32), node, "s_q"), "SUB",
                                         node, "offset"), [-1, 1, 1, 1], node, "offset_b")
    shifted = ctx.elementwise(ctx.constant(diff.astype(np.int32)[None, None], node, "diff"), offset, "SUM", node,
                              "frontier_diff")
    tests = []
    if causal:
        tests.append(ctx.elementwise(shifted, ctx.constant(np.zeros((1,) * 4, np.int32), node, "c0"), "LESS",
                                     node, "before"))
    if left >= 0:
        tests.append(ctx.elementwise(shifted, ctx.constant(np.full((1,) * 4, left, np.int32), node, "cl"),
                                     "GREATER", node, "too_old"))
    if right >= 0:
        tests.append(ctx.elementwise(shifted, ctx.constant(np.full((1,) * 4, -right, np.int32), node, "cr"),
                                     "LESS", node, "too_new"))
    refused = tests[0]
    for k, t in enumerate(tests[1:]):
        refused = ctx.elementwise(refused, t, "OR", node, f"refused{k}")
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
    short = s_kv - int(shape[-1]) if shape[-1] >= 0 else 0
    if short > 0:
        _static(node, shape, "mask shape")
        pad = _typed(ctx, node, np.full(shape[:-1] + [short], _NEG_INF), q, "mask_pad")
        mask = ctx.concat([mask, pad], node, "mask_padded", axis=len(shape) - 1)
    return mask


def _padding_bias(ctx: ConversionContext, node: Node, q: Any, s_kv: int) -> Any | None:
    """Keys at or past each batch's nonpad_kv_seqlen are masked."""
    nonpad = _input(node, _NONPAD)
    if nonpad is None:
        return None
    lengths = ctx.reshape(ctx.cast(ctx.get(nonpad, node), trt().int32, node, "lengths"), [-1, 1, 1, 1], node,
                          "lengths_b")
    keys = ctx.constant(np.arange(s_kv, dtype=np.int32).reshape(1, 1, 1, -1), node, "key_index")
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


def _express_as_layer(node: Node, q: Any, v: Any, s_kv: int) -> bool:
    """Whether TensorRT's IAttention computes this node (see the module docstring)."""
    if _wanted(node, 3) or float(node.attrs.get("softcap", 0.0)) or _input(node, _NONPAD) is not None:
        return False
    if int(node.attrs.get("left_window_size", -1)) >= 0 or int(node.attrs.get("right_window_size", -1)) >= 0:
        return False
    if "softmax_precision" in node.attrs:
        return False
    mask = _input(node, _MASK)
    if mask is not None and (int(node.attrs.get("is_causal", 0)) or mask.shape is None
                             or len(mask.shape) > 4 or mask.shape[-1] != s_kv):
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
    past = 0
    if _input(node, _PAST_K) is not None:
        past_k, past_v = ctx.get(_input(node, _PAST_K), node), ctx.get(_input(node, _PAST_V), node)
        past = _static(node, past_k.shape[2:3], "past length")[0]
        k = ctx.concat([past_k, k], node, "present_key", axis=2)
        v = ctx.concat([past_v, v], node, "present_value", axis=2)
    for index, present in ((1, k), (2, v)):
        if _wanted(node, index):
            ctx.set(node.outputs[index], present)
    root = _typed(ctx, node, np.full((1, 1, 1, 1), np.sqrt(scale)), q, "root_scale")
    q = ctx.elementwise(q, root, "PROD", node, "q_scaled")
    k = ctx.elementwise(k, root, "PROD", node, "k_scaled")
    s_q, s_kv = _static(node, (q.shape[2], k.shape[2]), "sequence length")
    heads_q = int(q.shape[1])
    if _express_as_layer(node, q, v, s_kv):
        y = _attention_layer(ctx, node, q, k, v, past)
    else:
        y = _attention_products(ctx, node, q, _expand_heads(ctx, node, k, heads_q, "k_grouped"),
                                _expand_heads(ctx, node, v, heads_q, "v_grouped"), s_q, s_kv, past)
    ctx.set(node.outputs[0], _heads_merged(ctx, node, y) if three_d else y)


def _attention_layer(ctx: ConversionContext, node: Node, q: Any, k: Any, v: Any, past: int) -> Any:
    """One IAttention, decomposable so that the builder may split it where no fused kernel fits."""
    T = trt()
    causal = T.CausalMaskKind.NONE
    if int(node.attrs.get("is_causal", 0)):  # ONNX anchors the diagonal after the past keys
        causal = T.CausalMaskKind.LOWER_RIGHT if past else T.CausalMaskKind.UPPER_LEFT
    layer = ctx.network.add_attention_v2(q, k, v, T.AttentionNormalizationOp.SOFTMAX, causal)
    layer.decomposable = True
    mask = _input(node, _MASK)
    if mask is None:
        return ctx.out(layer, node, "attention")
    m = ctx.get(mask, node)
    layer.mask = ctx.to_rank(m if m.dtype == T.bool else ctx.cast(m, q.dtype, node, "mask_typed"), 4, node, "mask4d")
    # TensorRT does not say what a query whose every key is masked gets; ONNX says 0
    bias = _mask_bias(ctx, node, q, int(k.shape[2]))
    return _zero_empty_rows(ctx, node, bias, ctx.out(layer, node, "attention"), q)


def _attention_products(ctx: ConversionContext, node: Node, q: Any, k: Any, v: Any, s_q: int, s_kv: int,
                        past: int) -> Any:
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
    biases = [b for b in (_mask_bias(ctx, node, q, s_kv), _frontier_bias(ctx, node, q, s_q, s_kv, past),
                          _padding_bias(ctx, node, q, s_kv)) if b is not None]
    bias = biases[0] if biases else None
    for i, more in enumerate(biases[1:]):
        bias = ctx.elementwise(bias, more, "SUM", node, f"bias{i}")
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
    axis = int(node.attrs.get("axis", -2)) % rank
    mode = node.attrs.get("mode", "linear")
    circular = (mode.decode() if isinstance(mode, bytes) else str(mode)) == "circular"
    indices = _input(node, 2)
    T = trt()
    if indices is not None:
        write = ctx.cast(ctx.get(indices, node), T.int32, node, "write_i32")
    else:
        write = ctx.constant(np.zeros(_static(node, cache.shape[:1], "batch size"), np.int32), node, "write_zero")
    cache_value = node.inputs[0]
    in_place = (rank == 4 and axis == 2 and not circular and cache.is_network_input and cache_value is not None
                and len(cache_value.uses()) == 1 and id(node.outputs[0]) in ctx.reserved)
    if in_place:
        layer = ctx.network.add_kv_cache_update(cache, update, write, T.KVCacheMode.LINEAR)
        ctx.set(node.outputs[0], ctx.out(layer, node))
        return
    shape = _static(node, update.shape, "update shape")
    length = _static(node, cache.shape[axis:axis + 1], "cache length")[0]
    along = [1] * rank
    along[axis] = shape[axis]
    steps = ctx.constant(np.arange(shape[axis], dtype=np.int32).reshape(along), node, "steps")
    starts = ctx.reshape(write, [-1] + [1] * (rank - 1), node, "starts")
    where = ctx.elementwise(starts, steps, "SUM", node, "positions")
    if circular:
        where = _modulo(ctx, node, where, length, rank)
    full = ctx.elementwise(where, ctx.constant(np.zeros(shape, np.int32), node, "update_zeros"), "SUM", node,
                           "indices")
    layer = ctx.network.add_scatter(cache, full, update, T.ScatterMode.ELEMENT)
    layer.axis = axis
    ctx.set(node.outputs[0], ctx.out(layer, node))


def _modulo(ctx: ConversionContext, node: Node, x: Any, n: int, rank: int) -> Any:
    """x mod n for non-negative x: x - floor(x / n) * n."""
    divisor = ctx.constant(np.full([1] * rank, n, np.int32), node, "length")
    quotient = ctx.elementwise(x, divisor, "FLOOR_DIV", node, "laps")
    return ctx.elementwise(x, ctx.elementwise(quotient, divisor, "PROD", node, "lapped"), "SUB", node, "wrapped")

"""Transformer layers as TensorRT documents them: RotaryEmbedding, Attention (its input and output boundary
layers) and the KV-cache update."""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.errors import SimulationError
from loopc.sim.ops._common import widen
from loopc.sim.registry import Kernel, simulates


@simulates("ROTARY_EMBEDDING")
def rotary_embedding(layer: Any) -> Kernel:
    """RoPE of a [b, d, s, h] input: the first ``rotary_embedding_dim`` (0: all h) channels rotate in pairs
    by the angles whose cosines and sines are [b, s, r/2] caches (or [positions, r/2] rows picked by [b, s]
    position ids); pairs are (i, i + r/2), or adjacent (2i, 2i + 1) when ``interleaved``."""
    interleaved, rotary = bool(layer.interleaved), int(layer.rotary_embedding_dim)

    def run(ins: Any) -> list[np.ndarray]:
        x, cos, sin = (widen(a) for a in ins[:3])
        positions = ins[3] if len(ins) > 3 else None
        if x.ndim != 4:
            raise SimulationError(f"RotaryEmbedding needs a [b, d, s, h] input, got shape {list(x.shape)}")
        if positions is not None:
            cos, sin = cos[positions], sin[positions]
        r = rotary or x.shape[-1]
        if cos.shape != (x.shape[0], x.shape[2], r // 2) or sin.shape != cos.shape:
            raise SimulationError(f"cos/sin caches of shape {list(cos.shape)} for an input {list(x.shape)} "
                                  f"rotating {r} channels (they must be [b, s, {r // 2}])")
        cos, sin = cos[:, None], sin[:, None]
        turned, kept = x[..., :r], x[..., r:]
        if interleaved:
            first, second = turned[..., 0::2], turned[..., 1::2]
        else:
            first, second = turned[..., : r // 2], turned[..., r // 2:]
        a, b = first * cos - second * sin, second * cos + first * sin
        rotated = np.stack([a, b], axis=-1).reshape(turned.shape) if interleaved else np.concatenate([a, b], -1)
        return [np.concatenate([rotated, kept], axis=-1)]

    return run


def _causal_allowed(kind: str, s_q: int, s_kv: int) -> np.ndarray | None:
    """Where a causal attention lets query i see key j: j <= i (UPPER_LEFT), j <= i + s_kv - s_q (LOWER_RIGHT)."""
    if kind == "NONE":
        return None
    offset = 0 if kind == "UPPER_LEFT" else s_kv - s_q
    return np.arange(s_kv)[None, :] <= np.arange(s_q)[:, None] + offset


@simulates("ATTENTION_INPUT")
def attention(layer: Any) -> Kernel:
    """The whole attention, computed at its input boundary: ``norm(Q Kᵀ + mask) V`` with no scaling.

    Q is [b, d_q, s_q, h], K and V [b, d_kv, s_kv, h]; query head i reads key/value head i // (d_q / d_kv)
    (grouped-query attention). A bool mask keeps the scores where it is True, a float mask is added; a
    causal attention keeps j <= i, anchored at the top left or (LOWER_RIGHT) the bottom right.
    """
    api = layer.attention
    kind, softmax = api.causal_kind.name, api.norm_op.name == "SOFTMAX"
    if api.query_form.name != "PADDED_BHND" or api.key_value_form.name != "PADDED_BHND":
        raise SimulationError("attention of packed (PACKED_NHD) tensors is not simulated")
    if api.key_value_lengths is not None or api.query_lengths is not None:
        raise SimulationError("attention with key/value or query lengths is not simulated")
    if api.normalization_quantize_scale is not None:
        raise SimulationError("attention with a quantized normalization is not simulated")

    def run(ins: Any) -> list[np.ndarray]:
        q, k, v = (widen(a).astype(np.float32) for a in ins[:3])
        mask = ins[3] if len(ins) > 3 else None
        if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
            raise SimulationError("attention takes 4-D query, key and value ([b, d, s, h])")
        heads_q, heads_kv = q.shape[1], k.shape[1]
        if heads_q % heads_kv:
            raise SimulationError(f"{heads_q} query heads cannot share {heads_kv} key/value heads evenly")
        group = heads_q // heads_kv
        k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
        scores = q @ np.swapaxes(k, -1, -2)
        if mask is not None:
            scores = np.where(mask, scores, -np.inf) if mask.dtype == np.bool_ else scores + widen(mask)
        allowed = _causal_allowed(kind, q.shape[2], k.shape[2])
        if allowed is not None:
            scores = np.where(allowed, scores, -np.inf)
        if softmax:
            with np.errstate(invalid="ignore"):  # a row with no key to attend is NaN, as 0/0
                top = np.max(scores, axis=-1, keepdims=True)
                e = np.exp(scores - top)
                scores = e / np.sum(e, axis=-1, keepdims=True)
        return [scores @ v]

    return run


@simulates("ATTENTION_OUTPUT")
def attention_output(layer: Any) -> Kernel:
    """The attention's result leaves through its output boundary unchanged."""
    def run(ins: Any) -> list[np.ndarray]:
        return [ins[0]]

    return run


@simulates("KV_CACHE_UPDATE")
def kv_cache_update(layer: Any) -> Kernel:
    """The cache [b, d, s_max, h] with each batch's update [d, s, h] written from its write index on
    (LINEAR mode); TensorRT requires every write to stay inside the cache."""
    mode = layer.cache_mode.name
    if mode != "LINEAR" or layer.update_form.name != "PADDED_BHND":
        raise SimulationError(f"KV-cache update in mode {mode}, form {layer.update_form.name} is not simulated")

    def run(ins: Any) -> list[np.ndarray]:
        cache, update, write = ins[0], ins[1], np.asarray(ins[2]).astype(np.int64).reshape(-1)
        steps = update.shape[2]
        if write.size != cache.shape[0] or np.any(write < 0) or np.any(write + steps > cache.shape[2]):
            raise SimulationError(f"write indices {write.tolist()} put {steps} steps outside a cache of length "
                                  f"{cache.shape[2]} (or are not one per batch)")
        out = cache.copy()
        positions = write[:, None] + np.arange(steps)  # [b, s]
        out[np.arange(cache.shape[0])[:, None], :, positions] = np.swapaxes(update, 1, 2)
        return [out]

    return run

"""Transformer layers: RotaryEmbedding, and the KV-cache update, as TensorRT documents them."""

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

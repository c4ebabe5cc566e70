"""RotaryEmbedding, Attention and KV-cache update kernels against naive references written here."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

RNG = np.random.default_rng(11)


def rope_reference(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, interleaved: bool, rotary: int) -> np.ndarray:
    """One pair at a time: channels (i, i + r/2), or (2i, 2i + 1), turned by the angle of (batch, position, i)."""
    out = x.astype(np.float64).copy()
    b_n, d_n, s_n, h = x.shape
    r = rotary or h
    for b in range(b_n):
        for d in range(d_n):
            for s in range(s_n):
                for i in range(r // 2):
                    j, k = (2 * i, 2 * i + 1) if interleaved else (i, i + r // 2)
                    c, n = cos[b, s, i], sin[b, s, i]
                    out[b, d, s, j] = x[b, d, s, j] * c - x[b, d, s, k] * n
                    out[b, d, s, k] = x[b, d, s, k] * c + x[b, d, s, j] * n
    return out


def test_rope_by_hand(nb: Any) -> None:
    """A quarter turn of the pair (x0, x1) = (1, 2) gives (-2, 1); channel 2 and 3 keep their values."""
    x = nb.input("x", nb.trt.float32, (1, 1, 1, 4))
    cos = nb.const(np.array([[[0.0]]], np.float32))
    sin = nb.const(np.array([[[1.0]]], np.float32))
    layer = nb.network.add_rotary_embedding(x, cos, sin, True, 2)
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"x": np.array([[[[1, 2, 3, 4]]]], np.float32)})["y"]
    np.testing.assert_array_equal(got, [[[[-2, 1, 3, 4]]]])


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("rotary", [0, 4])
def test_rope_with_caches_per_batch(nb: Any, interleaved: bool, rotary: int) -> None:
    half = (rotary or 8) // 2
    x_np = RNG.standard_normal((2, 3, 5, 8)).astype(np.float32)
    angles = RNG.uniform(-3, 3, (2, 5, half))
    cos_np, sin_np = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    x = nb.input("x", nb.trt.float32, x_np.shape)
    layer = nb.network.add_rotary_embedding(x, nb.const(cos_np), nb.const(sin_np), interleaved, rotary)
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"x": x_np})["y"]
    np.testing.assert_allclose(got, rope_reference(x_np, cos_np, sin_np, interleaved, rotary), rtol=1e-5, atol=1e-6)


def test_rope_picks_cache_rows_by_position(nb: Any) -> None:
    x_np = RNG.standard_normal((2, 2, 3, 4)).astype(np.float32)
    angles = RNG.uniform(-3, 3, (10, 2))
    cos_np, sin_np = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    positions = np.array([[0, 4, 9], [7, 7, 1]], np.int64)
    x = nb.input("x", nb.trt.float32, x_np.shape)
    p = nb.input("p", nb.trt.int64, positions.shape)
    layer = nb.network.add_rotary_embedding(x, nb.const(cos_np), nb.const(sin_np), False, 0)
    layer.set_input(3, p)
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"x": x_np, "p": positions})["y"]
    want = rope_reference(x_np, cos_np[positions], sin_np[positions], False, 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def attention_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, keep: np.ndarray | None = None,
                        add: np.ndarray | None = None, causal: str = "NONE") -> np.ndarray:
    """One query row at a time: scores q·k over the keys its head's group may see, softmax, weighted values."""
    b_n, hq, s_q, _ = q.shape
    hkv, s_kv = k.shape[1], k.shape[2]
    out = np.zeros(q.shape[:3] + (v.shape[3],))
    for b in range(b_n):
        for h in range(hq):
            g = h // (hq // hkv)
            for i in range(s_q):
                scores = []
                for j in range(s_kv):
                    score = float(np.dot(q[b, h, i].astype(np.float64), k[b, g, j]))
                    visible = True
                    if keep is not None:
                        visible = bool(keep[i, j])
                    if add is not None:
                        score += float(add[i, j])
                    if causal == "UPPER_LEFT":
                        visible &= j <= i
                    if causal == "LOWER_RIGHT":
                        visible &= j <= i + s_kv - s_q
                    scores.append(score if visible else -np.inf)
                weights = np.exp(np.array(scores) - max(scores))
                weights /= weights.sum()
                out[b, h, i] = sum(w * v[b, g, j] for j, w in enumerate(weights))
    return out


def attention_net(nb: Any, q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: str = "NONE",
                  mask: np.ndarray | None = None) -> np.ndarray:
    t = nb.trt
    ins = [nb.input(n, t.float32, a.shape) for n, a in (("q", q), ("k", k), ("v", v))]
    layer = nb.network.add_attention_v2(*ins, t.AttentionNormalizationOp.SOFTMAX, getattr(t.CausalMaskKind, causal))
    layer.decomposable = True
    if mask is not None:
        layer.mask = nb.const(mask)
    nb.output(layer.get_output(0), "y")
    return nb.build_and_simulate({"q": q, "k": k, "v": v})["y"]


def test_attention_by_hand(nb: Any) -> None:
    """One query, two keys with scores ln 3 and 0: weights 3/4 and 1/4 of the values 8 and 4 give 7."""
    q = np.array([[[[np.log(3.0), 0.0]]]], np.float32)
    k = np.array([[[[1.0, 0.0], [0.0, 1.0]]]], np.float32)
    v = np.array([[[[8.0, 0.0], [4.0, 4.0]]]], np.float32)
    np.testing.assert_allclose(attention_net(nb, q, k, v), [[[[7.0, 1.0]]]], rtol=1e-6)


@pytest.mark.parametrize("causal", ["NONE", "UPPER_LEFT", "LOWER_RIGHT"])
def test_attention_grouped_heads_and_causal_anchors(nb: Any, causal: str) -> None:
    q = RNG.standard_normal((2, 4, 3, 8)).astype(np.float32)
    k, v = (RNG.standard_normal((2, 2, 5, 8)).astype(np.float32) for _ in range(2))
    got = attention_net(nb, q, k, v, causal)
    np.testing.assert_allclose(got, attention_reference(q, k, v, causal=causal), rtol=1e-5, atol=1e-5)


def test_attention_bool_mask_keeps_where_true(nb: Any) -> None:
    q = RNG.standard_normal((1, 2, 3, 4)).astype(np.float32)
    k, v = (RNG.standard_normal((1, 2, 4, 4)).astype(np.float32) for _ in range(2))
    keep = np.array([[1, 0, 1, 1], [0, 0, 0, 1], [1, 1, 1, 1]], bool)
    got = attention_net(nb, q, k, v, mask=keep.reshape(1, 1, 3, 4))
    np.testing.assert_allclose(got, attention_reference(q, k, v, keep=keep), rtol=1e-5, atol=1e-5)


def test_attention_float_mask_is_added(nb: Any) -> None:
    q = RNG.standard_normal((1, 1, 2, 4)).astype(np.float32)
    k, v = (RNG.standard_normal((1, 1, 3, 4)).astype(np.float32) for _ in range(2))
    add = RNG.uniform(-2, 2, (2, 3)).astype(np.float32)
    got = attention_net(nb, q, k, v, mask=add.reshape(1, 1, 2, 3))
    np.testing.assert_allclose(got, attention_reference(q, k, v, add=add), rtol=1e-5, atol=1e-5)


def test_kv_cache_update_writes_each_batch_at_its_index(nb: Any) -> None:
    cache_np = np.arange(2 * 1 * 4 * 2, dtype=np.float32).reshape(2, 1, 4, 2)
    update_np = -np.arange(1, 2 * 1 * 2 * 2 + 1, dtype=np.float32).reshape(2, 1, 2, 2)
    t = nb.trt
    cache, update = nb.input("cache", t.float32, cache_np.shape), nb.input("update", t.float32, update_np.shape)
    write = nb.input("write", t.int32, (2,))
    layer = nb.network.add_kv_cache_update(cache, update, write, t.KVCacheMode.LINEAR)
    nb.output(layer.get_output(0), "present")
    got = nb.build_and_simulate({"cache": cache_np, "update": update_np, "write": np.array([2, 0], np.int32)})
    want = [[[[0, 1], [2, 3], [-1, -2], [-3, -4]]],   # batch 0: rows 2 and 3 replaced
            [[[-5, -6], [-7, -8], [12, 13], [14, 15]]]]  # batch 1: rows 0 and 1 replaced
    np.testing.assert_array_equal(got["present"], want)


def test_attention_without_normalization_is_two_products(nb: Any) -> None:
    """norm NONE: Y = (Q Kᵀ) V, here [[1, 2]]·[[1, 0], [0, 1]]ᵀ = [[1, 2]], times [[1, 1], [2, 0]] = [[5, 1]]."""
    t = nb.trt
    q, k, v = (nb.input(n, t.float32, (1, 1, s, 2)) for n, s in (("q", 1), ("k", 2), ("v", 2)))
    layer = nb.network.add_attention_v2(q, k, v, t.AttentionNormalizationOp.NONE, t.CausalMaskKind.NONE)
    layer.decomposable = True
    nb.output(layer.get_output(0), "y")
    got = nb.build_and_simulate({"q": np.array([[[[1, 2]]]], np.float32),
                                 "k": np.array([[[[1, 0], [0, 1]]]], np.float32),
                                 "v": np.array([[[[1, 1], [2, 0]]]], np.float32)})["y"]
    np.testing.assert_array_equal(got, [[[[5, 1]]]])


def test_kv_cache_update_outside_the_cache_is_an_error(nb: Any) -> None:
    from loopc.errors import SimulationError

    t = nb.trt
    cache, update = nb.input("cache", t.float32, (1, 1, 3, 2)), nb.input("update", t.float32, (1, 1, 2, 2))
    layer = nb.network.add_kv_cache_update(cache, update, nb.input("write", t.int32, (1,)), t.KVCacheMode.LINEAR)
    nb.output(layer.get_output(0), "present")
    feeds = {"cache": np.zeros((1, 1, 3, 2), np.float32), "update": np.ones((1, 1, 2, 2), np.float32),
             "write": np.array([2], np.int32)}
    with pytest.raises(SimulationError, match="outside a cache of length 3"):
        nb.build_and_simulate(feeds)

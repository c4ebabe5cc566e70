"""ONNX's Attention-23 over a key/value cache it grows (``past_key``/``past_value`` carried, ``present_*`` fed
back), through every pass, TensorRT's real builder and the simulator, against onnxruntime.

grown-buffers writes each trip's keys and values into buffers of the loop's longest length and masks the
positions not yet written, so the loop carries values of one shape.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend.trt.test_onnx_control_flow import check_through_passes
from tests.passes.test_grown_buffers import ALTERNATE, ATTENTION_23, attention_feeds


@pytest.mark.parametrize("masked", [False, True], ids=["past-only", "with-a-mask"])
def test_attention_over_a_grown_cache_builds_and_matches(masked: bool) -> None:
    text = ATTENTION_23.format(mask_input="", mask=ALTERNATE if masked else "", mask_name="mask" if masked else "")
    check_through_passes(text, [attention_feeds(1), attention_feeds(5)], rtol=1e-5, atol=1e-5)


ROPE = """q_plain = MatMul(row, wq)
    k_plain = MatMul(row, wk)
    shape_pk = Shape(pk)
    axis2 = Constant <value = int64 {2}> ()
    position = Gather <axis = 0> (shape_pk, axis2)
    one_by_one = Constant <value = int64[2] {1, 1}> ()
    position_ids = Reshape(position, one_by_one)
    q = RotaryEmbedding <num_heads = 2> (q_plain, cos_cache, sin_cache, position_ids)
    k = RotaryEmbedding <num_heads = 2> (k_plain, cos_cache, sin_cache, position_ids)"""


def test_rotary_positions_from_the_cache_length() -> None:
    """RotaryEmbedding-23 on the new query and key at the position the cache's length gives."""
    angles = np.outer(np.arange(16), 1.0 / 10000 ** (np.arange(2) / 2)).astype(np.float32)
    text = ATTENTION_23.format(mask_input=", float[16,2] cos_cache, float[16,2] sin_cache", mask="", mask_name="")
    text = text.replace("q = MatMul(row, wq)\n    k = MatMul(row, wk)", ROPE)
    feeds = {**attention_feeds(4), "cos_cache": np.cos(angles), "sin_cache": np.sin(angles)}
    model = check_through_passes(text, [feeds], rtol=1e-5, atol=1e-5)
    assert sum(1 for _, n in model.graph.walk() if n.op == "RotaryEmbedding") == 2


STATIC_CACHE = """<ir_version: 11, opset_import: ["" : 24]>
g (int64 n, float[1,2,6,4] cache0, float[6,1,2,1,4] x, float[1,2,1,4] q) => (float[T,1,2,1,4] ys, float[1,2,6,4] cache) {
  go = Constant <value = bool {1}> ()
  cache, ys = Loop (n, go, cache0) <body = b (int64 i, bool c, float[1,2,6,4] kv) => (bool c_out, float[1,2,6,4] kv_next, float[1,2,1,4] y) {
    c_out = Identity(c)
    row = Gather <axis = 0> (x, i)
    one = Constant <value = int64[1] {1}> ()
    at = Reshape(i, one)
    kv_next = TensorScatter <axis = 2> (kv, row, at)
    keys_t = Transpose <perm = [0, 1, 3, 2]> (kv_next)
    scores = MatMul(q, keys_t)
    weights = Softmax <axis = -1> (scores)
    y = MatMul(weights, kv_next)
  }>
}
"""


def test_a_static_cache_written_by_tensor_scatter_at_the_counter() -> None:
    """TensorScatter-24 writes each trip's row at its position in a cache of fixed length, read in the same trip."""
    rng = np.random.default_rng(5)
    feeds = {"n": np.array(4, np.int64), "cache0": np.zeros((1, 2, 6, 4), np.float32),
             "x": rng.standard_normal((6, 1, 2, 1, 4)).astype(np.float32),
             "q": rng.standard_normal((1, 2, 1, 4)).astype(np.float32)}
    check_through_passes(STATIC_CACHE, [feeds], rtol=1e-5, atol=1e-5)

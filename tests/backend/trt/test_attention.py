"""RotaryEmbedding, Attention and TensorScatter against onnxruntime (opsets 23 and 24)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend.trt.oracle import check_onnx

RNG = np.random.default_rng(5)
H23 = '<ir_version: 10, opset_import: ["" : 23]>'


def _caches(rows: tuple[int, ...]) -> dict[str, np.ndarray]:
    angles = RNG.uniform(-3, 3, rows)
    return {"cos": np.cos(angles).astype(np.float32), "sin": np.sin(angles).astype(np.float32)}


@pytest.mark.parametrize("attrs", ["interleaved = 0", "interleaved = 1", "rotary_embedding_dim = 4",
                                   "interleaved = 1, rotary_embedding_dim = 4"])
def test_rope_4d_with_position_ids(attrs):
    half = 2 if "rotary_embedding_dim" in attrs else 4
    feeds = {"x": RNG.standard_normal((2, 3, 5, 8)).astype(np.float32), **_caches((16, half)),
             "pos": RNG.integers(0, 16, (2, 5)).astype(np.int64)}
    check_onnx(f"""{H23}
        g (float[2,3,5,8] x, float[16,{half}] cos, float[16,{half}] sin, int64[2,5] pos) => (float[2,3,5,8] y) {{
            y = RotaryEmbedding <{attrs}> (x, cos, sin, pos)
        }}""", feeds, rtol=1e-5, atol=1e-5)


def test_rope_3d_without_position_ids():
    feeds = {"x": RNG.standard_normal((2, 5, 24)).astype(np.float32), **_caches((2, 5, 4))}
    check_onnx(f"""{H23}
        g (float[2,5,24] x, float[2,5,4] cos, float[2,5,4] sin) => (float[2,5,24] y) {{
            y = RotaryEmbedding <num_heads = 3> (x, cos, sin)
        }}""", feeds, rtol=1e-5, atol=1e-5)

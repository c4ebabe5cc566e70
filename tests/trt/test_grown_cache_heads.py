"""A cache grown by one row each trip and split into heads by a ``Reshape`` whose target reads the cache's own dims
(openai-whisper's ``k.view(*k.shape[:2], n_head, -1)`` of a ``[B, S, D]`` cache): TensorRT-RTX 1.7's builder
crashed (SIGSEGV) on loopc's network for it while the padded cache's target was computed from a ``Shape`` of the
buffer inside the loop; loopc now copies those dims with 0 entries, a constant target. The model is made by
``models/make_models.py``; the network the engine is built from is run by loopc's simulator against onnxruntime.
"""

from __future__ import annotations

import pathlib

import numpy as np
import onnxruntime as ort
import pytest

import loopc
from loopc.compiler import load_ir, optimize
from loopc.ir import constant_value

MODEL = pathlib.Path(__file__).parent / "models" / "heads_of_grown_cache.onnx"


def test_the_padded_cache_is_split_into_heads_by_a_constant_target() -> None:
    model = load_ir(MODEL)
    optimize(model)
    reshapes = [node for _, node in model.graph.walk() if node.op == "Reshape" and node.inputs[0] is not None
                and node.inputs[0].producer is not None and node.inputs[0].producer.op == "ScatterElements"]
    assert len(reshapes) == 1, "the cache is no longer padded: this test no longer shows the rule"
    target = constant_value(reshapes[0].inputs[1])
    assert target is not None and target.tolist() == [0, 0, 2, 12]


def test_it_builds_under_the_default_profile(tmp_path: pathlib.Path) -> None:
    report = loopc.build(MODEL, tmp_path / "m.plan", warn=lambda message: None)
    assert report.engine_bytes == (tmp_path / "m.plan").stat().st_size > 0


@pytest.mark.parametrize(("batch", "length", "trips"), [(1, 1, 1), (2, 3, 5), (3, 2, 8)])
def test_its_network_matches_onnxruntime(batch: int, length: int, trips: int) -> None:
    rng = np.random.default_rng(batch * 100 + length * 10 + trips)
    feeds = {"k0": rng.standard_normal((batch, length, 24)).astype(np.float32),
             "h0": rng.standard_normal((batch, 1, 24)).astype(np.float32), "trips": np.array(trips, np.int64)}
    [expected] = ort.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = loopc.run(MODEL, feeds)
    np.testing.assert_allclose(got["h"], expected, rtol=1e-4, atol=1e-5)

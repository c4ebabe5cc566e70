"""The sample models, loops as PyTorch users write them: each builds with the real TensorRT builder,
and its simulated engine matches onnxruntime on the sample inputs."""

from __future__ import annotations

import pathlib

import numpy as np
import onnxruntime as ort
import pytest

from loopc.compiler import compile
from loopc.ir import Loop
from loopc.sim import simulate
from loopc.trt.config import build_serialized, builder_config, pin_profile

SAMPLES = pathlib.Path(__file__).resolve().parents[1] / "samples"
CASES = ["running_sum", "greedy_gru_decoder", "index_loop", "growing_cat", "list_stack", "nested_loops",
         "cumulative"]


@pytest.mark.parametrize("name", CASES)
def test_sample_matches_onnxruntime(name: str) -> None:
    path = SAMPLES / f"{name}.onnx"
    feeds = dict(np.load(SAMPLES / f"{name}_inputs.npz"))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {i.name: feeds[i.name] for i in session.get_inputs()}
    expected = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))

    compiled = compile(path)
    cfg = builder_config(compiled.session)
    pin_profile(compiled.session, compiled.network, cfg, feeds)
    assert build_serialized(compiled.session, compiled.network, cfg)
    got = simulate(compiled.network, feeds)

    assert sorted(got) == sorted(expected)
    for key, want in expected.items():
        np.testing.assert_allclose(got[key], want, rtol=1e-5, atol=1e-6, err_msg=key)


def test_greedy_decoder_counts_its_trips_by_max_len_and_stops_on_data() -> None:
    """``while step < int(max_len) and int(token) != end``: TorchScript's short-circuit ``and`` (an If)
    and a carried step counter; the counter test is a kCOUNT limit, the token test stays kWHILE, and
    the growing token list is a concatenated output — with no --max-trips."""
    compiled = compile(SAMPLES / "greedy_gru_decoder.onnx")
    loops = [node for _, node in compiled.model.graph.walk() if isinstance(node, Loop)]
    assert len(loops) == 1 and loops[0].condition is not None and loops[0].trip_count is not None
    assert [s.trip_limits for s in compiled.report.loops] == [["kCOUNT", "kWHILE"]]
    assert "kCONCATENATE" in [out.kind for out in compiled.report.loops[0].outputs]

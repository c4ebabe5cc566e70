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
#: name -> the --max-trips bound it needs (its while loop's output grows with the trips run)
CASES = {
    "running_sum": None,
    "greedy_gru_decoder": 16,
    "index_loop": None,
    "growing_cat": None,
    "list_stack": None,
    "nested_loops": None,
    "cumulative": None,
}


@pytest.mark.parametrize("name", list(CASES))
def test_sample_matches_onnxruntime(name: str) -> None:
    path = SAMPLES / f"{name}.onnx"
    feeds = dict(np.load(SAMPLES / f"{name}_inputs.npz"))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {i.name: feeds[i.name] for i in session.get_inputs()}
    expected = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))

    compiled = compile(path, max_trips=CASES[name])
    cfg = builder_config(compiled.session)
    pin_profile(compiled.session, compiled.network, cfg, feeds)
    assert build_serialized(compiled.session, compiled.network, cfg)
    got = simulate(compiled.network, feeds)

    assert sorted(got) == sorted(expected)
    for key, want in expected.items():
        np.testing.assert_allclose(got[key], want, rtol=1e-5, atol=1e-6, err_msg=key)


def test_greedy_decoder_is_one_while_loop_with_a_concatenated_output() -> None:
    compiled = compile(SAMPLES / "greedy_gru_decoder.onnx", max_trips=16)
    loops = [node for _, node in compiled.model.graph.walk() if isinstance(node, Loop)]
    assert len(loops) == 1 and loops[0].condition is not None and loops[0].trip_count is None
    assert [s.trip_limits for s in compiled.report.loops] == [["kWHILE"]]
    assert "kCONCATENATE" in compiled.report.loops[0].outputs


def test_greedy_decoder_without_a_bound_is_refused() -> None:
    from loopc.errors import PassError

    with pytest.raises(PassError, match="collects a value on every trip of a while loop .* give a bound on its trips with --max-trips"):
        compile(SAMPLES / "greedy_gru_decoder.onnx")

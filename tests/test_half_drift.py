"""benchmarks/half_drift.py's figures on a hand-built ONNX Loop, against bytes, trips and agreement worked out by
hand."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from benchmarks.half_drift import Drift, compared, simulate, weight_bytes_per_trip
from loopc.compiler import compile
from loopc.precision import Precision
from loopc.trt import is_rtx
from tests.test_decoder_cost import F32, WIDTH, _h_step, _loop_model


def _rnn(trips: int) -> object:
    return _loop_model([*_h_step(), helper.make_node("Identity", ["cond"], ["cond_out"])], [("h", [1, WIDTH])],
                       ["h1"], "cond_out", trips, [helper.make_tensor_value_info("h0", F32, [1, WIDTH])])


@pytest.mark.skipif(not is_rtx(), reason="datacenter TensorRT keeps the weights float32 (the builder picks)")
def test_the_loop_reads_its_weight_once_per_trip_at_half_the_bytes() -> None:
    model = _rnn(5)
    fp32, fp16 = compile(model), compile(model, precision=Precision("fp16"))
    assert weight_bytes_per_trip(fp32.network) == WIDTH * WIDTH * 4  # W: 16 x 16 float32
    assert weight_bytes_per_trip(fp16.network) == WIDTH * WIDTH * 2  # stored in half
    outputs, ran = simulate(fp16, {"h0": np.ones((1, WIDTH), np.float32)})
    assert ran == 5 and outputs["h_final"].shape == (1, WIDTH)


def test_tokens_are_judged_by_agreement_and_the_first_step_that_differs() -> None:
    fp32 = {"tokens": np.array([[1, 2, 3, 4], [5, 6, 7, 8]]), "score": np.array([2.0, -4.0], np.float32)}
    half = {"tokens": np.array([[1, 2, 3, 4], [5, 6, 0, 0]]), "score": np.array([2.0, -4.02], np.float32)}
    drift = compared(Drift(4, 4), half, fp32)
    assert drift.tokens_same == 6 / 8 and drift.first_difference == 2
    assert drift.error == pytest.approx(0.02 / 4, rel=1e-4)  # 0.02 over the largest magnitude, 4

"""Run one OpenVINO IR two ways — on OpenVINO's CPU plugin (the oracle) and through loopc (frontend,
passes, the real TensorRT builder, the simulator) — and compare the outputs.

The oracle runs at f32 inference precision: the CPU plugin otherwise computes in bf16 on CPUs
that have it. Both sides run the same IR, so an IR with f16 weights is compared with itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from loopc.compiler import optimize
from tests.corpus import openvino_outputs as run_openvino
from loopc.frontend.openvino import import_ir
from tests.backend.trt.oracle import build_and_simulate

def run_loopc(xml: Path, inputs: Mapping[str, np.ndarray], max_trips: int | None = None,
              stack_directions: bool = True) -> dict[str, np.ndarray]:
    """loopc's outputs keyed by network output name, in the network's output order."""
    model = import_ir(xml, stack_directions=stack_directions)
    optimize(model, max_trips=max_trips)
    network, outputs = build_and_simulate(model, dict(inputs))
    order = [network.get_output(i).name for i in range(network.num_outputs)]
    return {name: outputs[name] for name in order}


def compare(got: Mapping[str, np.ndarray], want: Mapping[str, np.ndarray], rtol: float, atol: float) -> None:
    """Assert the outputs agree by position and name, then shape, dtype and values."""
    assert list(got) == list(want), f"loopc's outputs {list(got)} != OpenVINO's {list(want)} (names in order)"
    for name, expected in want.items():
        actual = got[name]
        assert actual.shape == expected.shape, f"{name}: shape {actual.shape} != OpenVINO's {expected.shape}"
        assert actual.dtype == expected.dtype, f"{name}: dtype {actual.dtype} != OpenVINO's {expected.dtype}"
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=name)

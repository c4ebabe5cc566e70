"""Running a real engine through Polygraphy: only possible where there is a GPU."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from loopc.errors import LoopcError
from loopc.trt import gpu, is_rtx
from loopc.trt.config import Session, build_serialized, builder_config, pin_profile


def require_gpu(what: str) -> None:
    if not gpu.available():
        raise LoopcError(f"{what} needs an NVIDIA GPU and none was found; use the simulator (--executor sim)")


def run_network(session: Session, network: Any, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Build ``network`` for the GPU here with a profile pinned to ``inputs`` and run it once."""
    require_gpu("running a TensorRT engine")
    cfg = builder_config(session)
    pin_profile(session, network, cfg, inputs)
    return run_plan(build_serialized(session, network, cfg), inputs)


def run_plan(plan: bytes, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run a serialized engine once on the GPU here, through Polygraphy's runner."""
    require_gpu("running a TensorRT engine")
    if is_rtx():
        os.environ.setdefault("POLYGRAPHY_USE_TENSORRT_RTX", "1")  # read when polygraphy is imported
    from polygraphy.backend.trt import EngineFromBytes, TrtRunner

    with TrtRunner(EngineFromBytes(plan)) as runner:
        outputs = runner.infer(dict(inputs))
    return {name: np.asarray(value) for name, value in outputs.items()}

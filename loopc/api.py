"""The Python API behind the CLI."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from loopc.errors import LoopcError
from loopc.sim import DEFAULT_MAX_ITERATIONS, Simulator
from loopc.trt.onnx_parser import ParsedNetwork, parse_onnx

FRONTENDS = ("trt-onnx",)
EXECUTORS = ("sim", "trt")


def load_network(model: str | os.PathLike[str], frontend: str = "trt-onnx") -> ParsedNetwork:
    """Turn a model file into a TensorRT network with the chosen frontend."""
    if frontend not in FRONTENDS:
        raise LoopcError(f"unknown frontend {frontend!r}; choose one of {', '.join(FRONTENDS)}")
    return parse_onnx(model)


def run(
    model: str | os.PathLike[str],
    inputs: Mapping[str, Any],
    *,
    executor: str = "sim",
    frontend: str = "trt-onnx",
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
) -> dict[str, np.ndarray]:
    """Run ``model`` on ``inputs`` with the simulator (``sim``) or a real engine (``trt``, GPU only).

    Returns the outputs keyed by the model's output names.
    """
    if executor not in EXECUTORS:
        raise LoopcError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    if executor == "trt":
        from loopc.trt.engine import require_gpu, run_network

        require_gpu("--executor trt")
        parsed = load_network(model, frontend)
        return run_network(parsed.session, parsed.network, {k: np.asarray(v) for k, v in inputs.items()})
    parsed = load_network(model, frontend)
    return Simulator(parsed.network, max_iterations).run(inputs)

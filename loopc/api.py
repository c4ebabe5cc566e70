"""The Python API behind the CLI."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from loopc.errors import LoopcError
from loopc.feeds import input_specs, prepare_inputs
from loopc.precision import Precision
from loopc.sim import DEFAULT_MAX_ITERATIONS, Simulator
from loopc.trt.onnx_parser import parse_onnx

#: ``loopc``: loopc's own frontend (ONNX or OpenVINO IR, from the file), passes and backend; ``onnx`` and
#: ``openvino`` force one of loopc's frontends; ``trt-onnx``: TensorRT's own ONNX parser.
FRONTENDS = ("loopc", "onnx", "openvino", "trt-onnx")
EXECUTORS = ("sim", "trt")


def load_network(model: str | os.PathLike[str], frontend: str = "loopc", max_trips: int | None = None,
                 weights: str | os.PathLike[str] | None = None, precision: Precision = Precision()) -> Any:
    """Turn a model file into a TensorRT network (with its ``session``) using the chosen frontend."""
    if frontend not in FRONTENDS:
        raise LoopcError(f"unknown frontend {frontend!r}; choose one of {', '.join(FRONTENDS)}")
    if frontend == "trt-onnx":
        if precision:
            raise LoopcError(f"--{precision.half} retypes loopc's network; TensorRT's own parser (trt-onnx) "
                             "builds the model's types")
        return parse_onnx(model)
    from loopc.compiler import compile

    return compile(model, max_trips=max_trips, frontend=None if frontend == "loopc" else frontend, weights=weights,
                   precision=precision)


def run(
    model: str | os.PathLike[str],
    inputs: Mapping[str, Any],
    *,
    executor: str = "sim",
    frontend: str = "loopc",
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    max_trips: int | None = None,
    weights: str | os.PathLike[str] | None = None,
    precision: Precision = Precision(),
) -> dict[str, np.ndarray]:
    """Run ``model`` on ``inputs`` with the simulator (``sim``) or a real engine (``trt``, GPU only); a half
    ``precision`` runs the half-precision network (see :mod:`loopc.precision`).

    ``inputs`` are arrays (or anything ``np.asarray`` takes) keyed by input name, checked and
    converted by :func:`loopc.feeds.prepare_inputs`. Returns the outputs keyed by the model's output names.
    """
    if executor not in EXECUTORS:
        raise LoopcError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    if executor == "trt":
        from loopc.trt.engine import require_gpu, run_network

        require_gpu("--executor trt")
    parsed = load_network(model, frontend, max_trips, weights, precision)
    feeds = prepare_inputs(input_specs(parsed.network, getattr(parsed, "model", None)), inputs)
    if executor == "trt":
        return run_network(parsed.session, parsed.network, feeds)
    return Simulator(parsed.network, max_iterations).run(feeds)

"""loopc: compile models with loops into TensorRT engines whose loops are TensorRT loops."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from loopc.errors import InternalError, LoopcError, SimulationError

if TYPE_CHECKING:  # the entry points import their modules on first call, so that `import loopc` stays light
    import numpy as np
    import onnx

    from loopc.compiler import BuildReport, Compiled
    from loopc.exporter import ExportReport
    from loopc.fileio import OutputFile

__version__ = "0.1.0"

__all__ = ["InternalError", "LoopcError", "SimulationError", "__version__", "build", "compile", "export", "run", "simulate"]


def simulate(network: Any, inputs: Mapping[str, Any], **kwargs: Any) -> dict[str, np.ndarray]:
    """Run a TensorRT ``INetworkDefinition`` on the CPU; see :func:`loopc.sim.simulate`."""
    from loopc.sim import simulate as _simulate

    return _simulate(network, inputs, **kwargs)


def run(model: str | os.PathLike[str], inputs: Mapping[str, Any], **kwargs: Any) -> dict[str, np.ndarray]:
    """Run a model file on ``inputs``; see :func:`loopc.api.run`."""
    from loopc.api import run as _run

    return _run(model, inputs, **kwargs)


def compile(model: onnx.ModelProto | str | os.PathLike[str], **kwargs: Any) -> Compiled:  # noqa: A001
    """Import, canonicalize and convert a model to a TensorRT network; see :func:`loopc.compiler.compile`."""
    from loopc.compiler import compile as _compile

    return _compile(model, **kwargs)


def build(model: onnx.ModelProto | str | os.PathLike[str], output: str | os.PathLike[str] | OutputFile,
          **kwargs: Any) -> BuildReport:
    """Compile a model and write its engine; see :func:`loopc.compiler.build`."""
    from loopc.compiler import build as _build

    return _build(model, output, **kwargs)


def export(model: onnx.ModelProto | str | os.PathLike[str], output: str | os.PathLike[str] | OutputFile,
           **kwargs: Any) -> ExportReport:
    """Canonicalize a model's loops and write it back as ONNX; see :func:`loopc.exporter.export`."""
    from loopc.exporter import export as _export

    return _export(model, output, **kwargs)

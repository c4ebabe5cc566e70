"""loopc: compile models with loops into TensorRT engines whose loops are TensorRT loops."""

from __future__ import annotations

from loopc.errors import InternalError, LoopcError, SimulationError

__version__ = "0.1.0"

__all__ = ["InternalError", "LoopcError", "SimulationError", "__version__", "build", "compile", "run", "simulate"]


def simulate(network, inputs, **kwargs):  # type: ignore[no-untyped-def]
    """Run a TensorRT ``INetworkDefinition`` on the CPU; see :func:`loopc.sim.simulate`."""
    from loopc.sim import simulate as _simulate

    return _simulate(network, inputs, **kwargs)


def run(model, inputs, **kwargs):  # type: ignore[no-untyped-def]
    """Run a model file on ``inputs``; see :func:`loopc.api.run`."""
    from loopc.api import run as _run

    return _run(model, inputs, **kwargs)


def compile(model, **kwargs):  # type: ignore[no-untyped-def]  # noqa: A001
    """Import, canonicalize and convert a model to a TensorRT network; see :func:`loopc.compiler.compile`."""
    from loopc.compiler import compile as _compile

    return _compile(model, **kwargs)


def build(model, output, **kwargs):  # type: ignore[no-untyped-def]
    """Compile a model and write its engine; see :func:`loopc.compiler.build`."""
    from loopc.compiler import build as _build

    return _build(model, output, **kwargs)

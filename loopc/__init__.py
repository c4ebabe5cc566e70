"""loopc: compile models with loops into TensorRT engines whose loops are TensorRT loops."""

from __future__ import annotations

from loopc.errors import InternalError, LoopcError, SimulationError

__version__ = "0.1.0"

__all__ = ["InternalError", "LoopcError", "SimulationError", "__version__", "run", "simulate"]


def simulate(network, inputs, **kwargs):  # type: ignore[no-untyped-def]
    """Run a TensorRT ``INetworkDefinition`` on the CPU; see :func:`loopc.sim.simulate`."""
    from loopc.sim import simulate as _simulate

    return _simulate(network, inputs, **kwargs)


def run(model, inputs, **kwargs):  # type: ignore[no-untyped-def]
    """Run a model file on ``inputs``; see :func:`loopc.api.run`."""
    from loopc.api import run as _run

    return _run(model, inputs, **kwargs)

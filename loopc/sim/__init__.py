"""A CPU simulator for TensorRT networks: what will TensorRT compute for this network?

It executes a real ``INetworkDefinition`` (from ``tensorrt`` or ``tensorrt_rtx``) layer by layer
with NumPy, reading everything back through the TensorRT API, and follows TensorRT's documented
layer semantics, including the formal semantics of loops. It is how loopc proves engines right
on machines without a GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from loopc.errors import SimulationError
from loopc.loop_rules import DEFAULT_MAX_ITERATIONS
from loopc.sim.executor import Executor, Observer
from loopc.sim.network import Network, read_network
from loopc.sim.registry import supported_layer_types

__all__ = ["DEFAULT_MAX_ITERATIONS", "Simulator", "simulate", "supported_layer_types"]


class Simulator:
    """A network read back once and run as often as needed."""

    def __init__(self, network: Any, max_iterations: int = DEFAULT_MAX_ITERATIONS, observer: Observer | None = None):
        self.network: Network = network if isinstance(network, Network) else read_network(network)
        self._executor = Executor(self.network, max_iterations, observer)

    def unsupported_layers(self) -> list[str]:
        """Descriptions of the layers whose type the simulator cannot run."""
        known = supported_layer_types()
        return [lay.describe() for lay in self.network.layers if lay.type not in known]

    def run(self, inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Compute the network's outputs, keyed by output name, from ``inputs`` keyed by input name."""
        return self._executor.run(self._check_inputs(inputs))

    def _check_inputs(self, inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
        expected = {t.name: t for t in self.network.inputs}
        missing = [name for name in expected if name not in inputs]
        if missing:
            raise SimulationError(f"missing network input(s): {', '.join(missing)}")
        extra = [name for name in inputs if name not in expected]
        if extra:
            raise SimulationError(
                f"unknown input(s) {', '.join(extra)}; the network's inputs are {', '.join(expected) or 'none'}"
            )
        checked = {}
        for name, tensor in expected.items():
            value = np.asarray(inputs[name])
            if value.dtype != tensor.dtype:
                raise SimulationError(
                    f"input {name!r} has dtype {value.dtype}, the network expects {tensor.dtype}"
                )
            declared = tensor.shape
            if value.ndim != len(declared) or any(d not in (-1, v) for d, v in zip(declared, value.shape)):
                raise SimulationError(
                    f"input {name!r} has shape {value.shape}, the network expects {_shape_text(declared)}"
                )
            checked[name] = value
        return checked


def simulate(
    network: Any, inputs: Mapping[str, Any], *, max_iterations: int = DEFAULT_MAX_ITERATIONS
) -> dict[str, np.ndarray]:
    """Run ``network`` on ``inputs`` and return its outputs by name.

    Args:
        network: an ``INetworkDefinition`` from ``tensorrt`` or ``tensorrt_rtx``.
        inputs: one array per network input, with the input's dtype and a shape its dims admit.
        max_iterations: a loop that has not stopped after this many trips is an error, not a hang.

    Raises:
        SimulationError: bad inputs, a layer type the simulator does not support, a runtime
            condition TensorRT would fail on (an assertion, an out-of-range index), or a runaway loop.
    """
    return Simulator(network, max_iterations).run(inputs)


def _shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join("?" if d == -1 else str(d) for d in shape) + ")"

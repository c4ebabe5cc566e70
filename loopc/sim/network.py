"""The network the simulator runs: one read back by :mod:`loopc.trt.read_back`, with what TensorRT's builder does
beyond the layers (the fusions it makes, see :mod:`loopc.sim.fusion`) and the values of constants TensorRT's API
cannot give back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from loopc.backend.trt.context import recorded_constants
from loopc.errors import NetworkReadError, SimulationError
from loopc.sim.fusion import fuse
from loopc.trt.read_back import Conditional, Layer, Network, NetworkLoop, Tensor, downcast, read_back

__all__ = ["Conditional", "Layer", "Network", "NetworkLoop", "Tensor", "downcast", "read_network"]


def read_network(network: Any) -> Network:
    """Read ``network`` (an ``INetworkDefinition`` of either TensorRT module) for the simulator to run."""
    try:
        net = read_back(network)
    except NetworkReadError as exc:
        raise SimulationError(str(exc)) from exc
    _recorded_constants(net.layers, recorded_constants(network))
    fuse(net.layers)
    return net


def _recorded_constants(layers: list[Layer], recorded: Mapping[str, np.ndarray]) -> None:
    """Constants whose values TensorRT's API cannot give back (FP8, INT4, FP4) get those loopc's backend recorded
    when it made them (:func:`~loopc.backend.trt.context.recorded_constants`: data, not the backend's logic); one of
    those types without a record is an error when it is first run."""
    for layer in layers:
        values = recorded.get(layer.name) if layer.type == "CONSTANT" else None
        if values is None:
            continue
        value = np.array(values, copy=True).reshape(layer.outputs[0].shape)
        value.flags.writeable = False
        layer.kernel = lambda ins, value=value: [value]

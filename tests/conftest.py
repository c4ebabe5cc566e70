"""Shared fixtures: TensorRT networks built directly with the API, and the real builder to check them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from loopc.sim import simulate
from loopc.trt import gpu, trt
from loopc.trt.config import Session, build_serialized, builder_config, pin_profile


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if gpu.available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU to run a real engine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


class NetworkBuilder:
    """A fresh ``INetworkDefinition`` with helpers for the things tests do most."""

    def __init__(self) -> None:
        self.trt = trt()
        self.session = Session()
        self.network = self.session.create_network()

    def input(self, name: str, dtype: Any, shape: tuple[int, ...]) -> Any:
        return self.network.add_input(name, dtype, shape)

    def const(self, value: Any, dtype: Any = None) -> Any:
        array = np.array(value, dtype=dtype)  # a C-contiguous copy; 0-D stays 0-D
        layer = self.network.add_constant(array.shape, array)
        self._keep = getattr(self, "_keep", []) + [array]  # weights must outlive the build
        return layer.get_output(0)

    def output(self, tensor: Any, name: str) -> Any:
        tensor.name = name
        self.network.mark_output(tensor)
        return tensor

    def serialize(self, inputs: Mapping[str, np.ndarray] | None = None) -> bytes:
        """Build with the real TensorRT builder (ahead of time when there is no GPU)."""
        cfg = builder_config(self.session)
        if inputs:
            pin_profile(self.session, self.network, cfg, inputs)
        return build_serialized(self.session, self.network, cfg)

    def build_and_simulate(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Check that the real builder accepts the network, then simulate it."""
        self.serialize(inputs)
        return simulate(self.network, inputs)


@pytest.fixture
def nb() -> NetworkBuilder:
    return NetworkBuilder()

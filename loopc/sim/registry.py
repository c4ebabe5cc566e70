"""The registry of layer kernels, keyed by TensorRT layer type name.

A kernel factory receives the downcast layer once, reads its attributes, and returns a
function from input arrays (``None`` for an absent optional input) to output arrays. Reading
attributes once keeps per-iteration work in loops down to the arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

Kernel = Callable[[Sequence[np.ndarray | None]], Sequence[np.ndarray]]
KernelFactory = Callable[[Any], Kernel]

_KERNELS: dict[str, KernelFactory] = {}

#: Layer types the executor runs itself (loop and conditional structure), not through a kernel.
STRUCTURAL = frozenset(
    {"TRIP_LIMIT", "ITERATOR", "RECURRENCE", "LOOP_OUTPUT", "CONDITION", "CONDITIONAL_INPUT", "CONDITIONAL_OUTPUT"}
)


def simulates(*layer_types: str) -> Callable[[KernelFactory], KernelFactory]:
    """Register a kernel factory for the named ``trt.LayerType`` members (e.g. ``"ELEMENTWISE"``)."""

    def register(factory: KernelFactory) -> KernelFactory:
        for name in layer_types:
            if name in _KERNELS:
                raise ValueError(f"two simulator kernels for layer type {name}")
            _KERNELS[name] = factory
        return factory

    return register


def factory_for(layer_type: str) -> KernelFactory | None:
    _load()
    return _KERNELS.get(layer_type)


def supported_layer_types() -> frozenset[str]:
    """Every layer type the simulator can run."""
    _load()
    return frozenset(_KERNELS) | STRUCTURAL


def _load() -> None:
    import loopc.sim.ops  # noqa: F401  (registers the kernels)

"""What the simulator runs, keyed by TensorRT layer type name: kernels, and the loop and conditional layers.

A *kernel factory* (:data:`KERNELS`, registered with ``@simulates``) receives the downcast layer
once, reads its attributes, and returns a function from input arrays (``None`` for an absent
optional input) to output arrays. Reading attributes once keeps per-iteration work in loops down to
the arithmetic.

Loop and conditional layers are not functions of their inputs: an iterator reads its loop's trip,
a loop output runs the loop, a conditional output picks a branch. They register in
:data:`STRUCTURE` (``@runs``, in :mod:`loopc.sim.control`) a rule the executor calls with itself,
the layer and the frame the layer's value is wanted in. Both registries have the one shape of
:class:`loopc.registry.Registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from loopc.registry import Registry

if TYPE_CHECKING:
    from loopc.sim.executor import Executor, Frame
    from loopc.sim.network import Layer

Kernel = Callable[[Sequence[np.ndarray | None]], Sequence[np.ndarray]]
KernelFactory = Callable[[Any], Kernel]
#: (executor, layer, frame) -> None: bind the layer's outputs in ``frame``.
Rule = Callable[["Executor", "Layer", "Frame"], None]

KERNELS: Registry[str, KernelFactory] = Registry("simulator kernel", loaders=("loopc.sim.ops",))
STRUCTURE: Registry[str, Rule] = Registry("simulator loop or conditional rule", loaders=("loopc.sim.control",))


def simulates(*layer_types: str) -> Callable[[KernelFactory], KernelFactory]:
    """Register a kernel factory for the named ``trt.LayerType`` members (e.g. ``"ELEMENTWISE"``)."""
    return KERNELS.register(*layer_types)


def runs(*layer_types: str) -> Callable[[Rule], Rule]:
    """Register the executor's rule for loop or conditional layer types (e.g. ``"ITERATOR"``)."""
    return STRUCTURE.register(*layer_types)


def factory_for(layer_type: str) -> KernelFactory | None:
    return KERNELS.get(layer_type)


def rule_for(layer_type: str) -> Rule | None:
    return STRUCTURE.get(layer_type)


def supported_layer_types() -> frozenset[str]:
    """Every layer type the simulator can run."""
    return frozenset(KERNELS.keys()) | frozenset(STRUCTURE.keys())

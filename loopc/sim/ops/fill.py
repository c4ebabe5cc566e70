"""The Fill layer: kLINSPACE, where element [i_0, ..., i_n] is alpha + sum_k beta[k] * i_k, and the
random fills: kRANDOM_UNIFORM (alpha the minimum, beta the maximum) and kRANDOM_NORMAL (alpha the
mean, beta the standard deviation).

A random fill's values cannot be those of any engine: each layer draws from its own generator,
seeded alike every time a network is read, so a simulation is repeatable and its statistics (range,
moments) are what the layer's distribution says.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.errors import SimulationError
from loopc.sim.dtypes import to_numpy
from loopc.sim.ops._common import dims
from loopc.limits import check_constant
from loopc.sim.registry import Kernel, simulates


def _has(layer: Any, index: int) -> bool:
    return index < layer.num_inputs and layer.get_input(index) is not None


#: Seed of every random fill's generator (see the module's docstring).
RANDOM_SEED = 0


@simulates("FILL")
def fill(layer: Any) -> Kernel:
    op = layer.operation.name
    if op in ("RANDOM_UNIFORM", "RANDOM_NORMAL"):
        return _random(layer, op == "RANDOM_UNIFORM")
    if op != "LINSPACE":
        raise SimulationError(f"fill operation {op} is not supported")
    return _linspace(layer)


def _shape_of(ins: Any, static_shape: tuple[int, ...] | None, target: np.dtype[Any]) -> tuple[int, ...]:
    """The fill's shape: input 0 when given, else the layer's; checked before anything is allocated."""
    shape = tuple(int(d) for d in ins[0].reshape(-1)) if static_shape is None else static_shape
    if any(d < 0 for d in shape):
        raise SimulationError(f"fill shape {shape} has a negative dimension")
    check_constant(shape, target, "the fill")  # its shape is data: checked before anything is allocated
    return shape


def _random(layer: Any, uniform: bool) -> Kernel:
    target = to_numpy(layer.to_type)
    static_shape = None if _has(layer, 0) else dims(layer.shape)
    dynamic_params = _has(layer, 1) or _has(layer, 2)
    static_alpha, static_beta = float(layer.alpha), float(layer.beta)
    rng = np.random.default_rng(RANDOM_SEED)

    def run(ins: Any) -> list[np.ndarray]:
        shape = _shape_of(ins, static_shape, target)
        if dynamic_params:
            if ins[1] is None or ins[2] is None:
                raise SimulationError("alpha and beta must both be inputs when either is")
            alpha, beta = (float(np.asarray(a).reshape(())) for a in ins[1:3])
        else:
            alpha, beta = static_alpha, static_beta
        # TensorRT's builder refuses min >= max and a deviation <= 0 (measured)
        if uniform:
            if not alpha < beta:
                raise SimulationError(f"a uniform fill's minimum {alpha} is not below its maximum {beta}")
            values = rng.uniform(alpha, beta, shape)
        else:
            if not beta > 0:
                raise SimulationError(f"a normal fill's standard deviation {beta} is not positive")
            values = rng.normal(alpha, beta, shape)
        return [values.astype(target)]

    return run


def _linspace(layer: Any) -> Kernel:
    target = to_numpy(layer.to_type)
    dynamic_shape = _has(layer, 0)
    static_shape = None if dynamic_shape else dims(layer.shape)
    dynamic_params = _has(layer, 1) or _has(layer, 2)
    integral = bool(layer.is_alpha_beta_int64())
    static_alpha = int(layer.alpha) if integral else float(layer.alpha)
    static_beta = int(layer.beta) if integral else float(layer.beta)
    if static_shape is not None and not dynamic_params and len(static_shape) > 1:
        # TensorRT: a static beta is the 1-D tensor [beta], so the output must be 1-D.
        raise SimulationError(f"a static beta needs a 1-D output, not shape {static_shape}")

    def run(ins: Any) -> list[np.ndarray]:
        shape = _shape_of(ins, static_shape, target)
        if dynamic_params:
            if ins[1] is None or ins[2] is None:
                raise SimulationError("alpha and beta must both be inputs when either is")
            alpha, beta = np.asarray(ins[1]).reshape(()), np.asarray(ins[2]).reshape(-1)
        else:
            alpha, beta = np.asarray(static_alpha), np.asarray([static_beta] * len(shape))
        if beta.size != len(shape):
            raise SimulationError(f"beta has {beta.size} values for an output of rank {len(shape)}")
        exact = target.kind in "iu" and alpha.dtype.kind in "iu" and beta.dtype.kind in "iu"
        wide: np.dtype[Any] = np.dtype(np.int64 if exact else np.float64)
        out = np.full(shape, alpha, dtype=wide)
        for k, (n, step) in enumerate(zip(shape, beta.astype(wide))):
            out += step * np.arange(n, dtype=wide).reshape([-1 if j == k else 1 for j in range(len(shape))])
        return [out.astype(target)]

    return run

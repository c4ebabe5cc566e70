"""Layers that make or pass tensors through: Constant, Identity, Cast, Shape, Assertion."""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.errors import SimulationError
from loopc.sim.dtypes import is_float, to_numpy
from loopc.sim.ops._common import dims
from loopc.sim.registry import Kernel, simulates


@simulates("CONSTANT")
def constant(layer: Any) -> Kernel:
    shape = dims(layer.shape)
    value = _weights_array(layer).reshape(shape)
    value.flags.writeable = False
    return lambda ins: [value]


@simulates("IDENTITY")
def identity(layer: Any) -> Kernel:
    def run(ins: Any) -> list[np.ndarray]:
        return [ins[0]]

    return run


@simulates("CAST")
def cast(layer: Any) -> Kernel:
    target = to_numpy(layer.to_type)

    def run(ins: Any) -> list[np.ndarray]:
        x = ins[0]
        if is_float(x.dtype) and target.kind in "iu":
            # float -> int truncates toward zero
            with np.errstate(invalid="ignore"):
                return [np.trunc(x.astype(np.float64)).astype(target)]
        if target == np.bool_:
            return [x != 0]
        return [x.astype(target)]

    return run


@simulates("SHAPE")
def shape(layer: Any) -> Kernel:
    def run(ins: Any) -> list[np.ndarray]:
        return [np.array(ins[0].shape, dtype=np.int64)]

    return run


@simulates("ASSERTION")
def assertion(layer: Any) -> Kernel:
    message = layer.message

    def run(ins: Any) -> list[np.ndarray]:
        if not np.all(ins[0]):
            raise SimulationError(f"assertion failed: {message}")
        return []

    return run


def _weights_array(layer: Any) -> np.ndarray:
    weights = layer.weights
    array = weights if isinstance(weights, np.ndarray) else weights.numpy()
    if not isinstance(array, np.ndarray):  # FP8, INT4, FP4: loopc's backend records the values it makes
        raise SimulationError(f"TensorRT's API does not give back the values of an {weights.dtype.name} constant, "
                              "and this network was not made by loopc, which records them",
                              hint="simulate networks loopc made")
    expected = to_numpy(layer.get_output(0).dtype)
    if array.dtype != expected and array.dtype.itemsize == expected.itemsize:
        array = array.view(expected)  # bf16 / fp8 weights come back as raw integers
    return np.array(array, copy=True)

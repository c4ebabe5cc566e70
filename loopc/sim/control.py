"""The loop and conditional layers, as rules the executor runs (see :mod:`loopc.sim.registry`).

They follow TensorRT's formal loop semantics (the executor's module docstring): an iterator's
value is its input's slice for the current trip, a loop output's is the loop run to its end, a
conditional's output is the taken branch's value (only that branch is computed). Trip limits,
recurrences and conditions have no value of their own to compute: their loop or conditional reads
them, and a rule here says so if anything else asks.
"""

from __future__ import annotations

import numpy as np

from loopc.errors import SimulationError
from loopc.sim.executor import Executor, Frame, layer_input
from loopc.sim.network import Layer
from loopc.sim.registry import runs


@runs("ITERATOR")
def iterator(executor: Executor, layer: Layer, frame: Frame) -> None:
    if frame.scope is not layer.loop:
        raise SimulationError(f"{layer.describe()}: its input is computed in a loop nested in the iterator's "
                              "own loop; an iterator's input must come from outside its loop")
    source = executor.value(layer_input(layer, 0), frame)
    axis = layer.api.axis
    length = source.shape[axis]
    index = length - 1 - frame.index if layer.api.reverse else frame.index
    if not 0 <= index < length:
        raise SimulationError(
            f"{layer.describe()}: iteration {frame.index} reads past the end of its input "
            f"(length {length} on axis {axis})"
        )
    frame.values[layer.outputs[0].name] = np.take(source, index, axis=axis)


@runs("LOOP_OUTPUT")
def loop_output(executor: Executor, layer: Layer, frame: Frame) -> None:
    if layer.loop is None:
        raise SimulationError(f"{layer.describe()}: the loop output belongs to no loop")
    executor.run_loop(layer.loop, frame)


@runs("CONDITIONAL_INPUT")
def conditional_input(executor: Executor, layer: Layer, frame: Frame) -> None:
    frame.values[layer.outputs[0].name] = executor.value(layer_input(layer, 0), frame)


@runs("CONDITIONAL_OUTPUT")
def conditional_output(executor: Executor, layer: Layer, frame: Frame) -> None:
    cond = layer.conditional.condition if layer.conditional else None
    if cond is None:
        raise SimulationError(f"{layer.describe()}: its conditional has no condition")
    taken = bool(np.asarray(executor.value(layer_input(cond, 0), frame)).reshape(()))
    branch = layer_input(layer, 0 if taken else 1)
    frame.values[layer.outputs[0].name] = executor.value(branch, frame)


@runs("TRIP_LIMIT", "RECURRENCE", "CONDITION")
def read_by_owner(executor: Executor, layer: Layer, frame: Frame) -> None:
    """A recurrence's value is bound when its loop starts a trip; one asked for elsewhere is read
    outside its loop's trips (trip limits and conditions have no outputs to ask for)."""
    raise SimulationError(f"{layer.describe()}: its value exists only within a trip of its loop or its "
                          "conditional, and is read elsewhere")

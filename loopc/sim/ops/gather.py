"""Indexing layers: Gather, Scatter, OneHot, NonZero.

TensorRT accepts a negative index i for an axis of length d and reads d + i. An index outside
[-d, d) is a user error here: TensorRT documents no meaning for it beyond unspecified output.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.errors import SimulationError
from loopc.loop_rules import poison
from loopc.sim.dtypes import to_numpy
from loopc.sim.registry import Kernel, simulates


def wrap(indices: np.ndarray, length: int, what: str = "index") -> np.ndarray:
    """Negative indices count from the end (once); anything outside [-length, length) is an error."""
    idx = np.asarray(indices).astype(np.int64)
    bad = (idx < -length) | (idx >= length)
    if bad.any():
        raise SimulationError(f"{what} {int(idx[bad].flat[0])} is out of range for an axis of length {length}")
    return np.where(idx < 0, idx + length, idx)


@simulates("GATHER")
def gather(layer: Any) -> Kernel:
    mode = layer.mode.name
    axis = int(layer.axis)
    batch = int(layer.num_elementwise_dims)

    def default(ins: Any) -> list[np.ndarray]:
        return [_gather_default(ins[0], ins[1], axis, batch)]

    def element(ins: Any) -> list[np.ndarray]:
        return [ins[0][_element_index(ins[0].shape, ins[1], axis)]]

    def nd(ins: Any) -> list[np.ndarray]:
        return [ins[0][_nd_index(ins[0].shape, ins[1], batch)]]

    kernels: dict[str, Kernel] = {"DEFAULT": default, "ELEMENT": element, "ND": nd}
    if mode not in kernels:
        raise SimulationError(f"gather mode {mode} is not supported")
    return kernels[mode]


def _gather_default(data: np.ndarray, indices: np.ndarray, axis: int, batch: int) -> np.ndarray:
    """ONNX-style gather; with one elementwise dim, entry b of data is gathered by entry b of indices."""
    if batch == 0:
        return np.take(data, wrap(indices, data.shape[axis]), axis=axis)
    if batch != 1 or axis < 1:
        raise SimulationError(f"gather with {batch} elementwise dims on axis {axis} is not supported")
    n = max(data.shape[0], indices.shape[0])
    if {data.shape[0], indices.shape[0]} - {1, n}:
        raise SimulationError(f"elementwise dims {data.shape[0]} and {indices.shape[0]} do not broadcast")
    idx = wrap(indices, data.shape[axis])
    parts = [np.take(data[b % data.shape[0]], idx[b % idx.shape[0]], axis=axis - 1) for b in range(n)]
    if parts:
        return np.stack(parts)
    shape = (0,) + data.shape[1:axis] + indices.shape[1:] + data.shape[axis + 1 :]
    return np.empty(shape, data.dtype)


def _element_index(shape: tuple[int, ...], indices: np.ndarray, axis: int) -> tuple[np.ndarray, ...]:
    """Subscripts K of data for every subscript J of indices: J with element [axis] replaced by the index."""
    if indices.ndim != len(shape):
        raise SimulationError(f"element indices of rank {indices.ndim} for data of rank {len(shape)}")
    grid: list[np.ndarray] = list(np.indices(indices.shape, sparse=True))
    for k, (i, d) in enumerate(zip(indices.shape, shape)):
        if k != axis and i > d:
            raise SimulationError(f"indices shape {indices.shape} exceeds data shape {shape} on axis {k}")
    grid[axis] = wrap(indices, shape[axis])
    return tuple(grid)


def _nd_index(shape: tuple[int, ...], indices: np.ndarray, batch: int) -> tuple[np.ndarray, ...]:
    """Subscripts for GatherND/ScatterND: the leading ``batch`` dims pair up, the last dim holds tuples."""
    depth = indices.shape[-1] if indices.ndim else -1
    if depth < 0 or batch + depth > len(shape) or indices.shape[:batch] != shape[:batch]:
        raise SimulationError(f"ND indices of shape {indices.shape} do not fit data of shape {shape} "
                              f"with {batch} elementwise dims")
    lead = indices.ndim - 1
    subs: list[np.ndarray] = []
    for k in range(batch):
        subs.append(np.arange(shape[k]).reshape([-1 if j == k else 1 for j in range(lead)]))
    for j in range(depth):
        subs.append(wrap(indices[..., j], shape[batch + j]))
    return tuple(subs)


@simulates("SCATTER")
def scatter(layer: Any) -> Kernel:
    """Copy data, then write updates where indices point. TensorRT leaves an element written twice
    undefined, so such elements get the poison value."""
    mode = layer.mode.name
    axis = int(layer.axis)
    if mode not in ("ELEMENT", "ND"):
        raise SimulationError(f"scatter mode {mode} is not supported")

    def run(ins: Any) -> list[np.ndarray]:
        data, indices, updates = ins[0], ins[1], ins[2]
        if mode == "ELEMENT":
            where = _element_index(data.shape, indices, axis)
        else:
            where = _nd_index(data.shape, indices, 0)
        out = data.copy()
        out[where] = updates
        writes = np.zeros(data.shape, dtype=np.int64)
        np.add.at(writes, where, 1)
        if (writes > 1).any():
            out[writes > 1] = poison(out.dtype)
        return [out]

    return run


@simulates("ONE_HOT")
def one_hot(layer: Any) -> Kernel:
    """output[..., k, ...] (k on the one-hot axis) is on where index == k, else off. Negative
    indices wrap once and out-of-range ones give an all-off row, as ONNX specifies."""
    axis = int(layer.axis)

    def run(ins: Any) -> list[np.ndarray]:
        indices, values, depth_t = ins
        depth = int(np.asarray(depth_t).reshape(()))
        if depth < 1:
            raise SimulationError(f"one-hot depth {depth} is not positive")
        off, on = np.asarray(values).reshape(-1)[:2]
        idx = indices.astype(np.int64)
        idx = np.where(idx < 0, idx + depth, idx)
        hot = idx[..., None] == np.arange(depth)
        where = axis if axis >= 0 else axis + indices.ndim + 1
        return [np.where(np.moveaxis(hot, -1, where), on, off)]

    return run


@simulates("NON_ZERO")
def non_zero(layer: Any) -> Kernel:
    """Subscripts of the non-zero elements as columns of a [rank, count] matrix, in row-major order."""
    index_type = to_numpy(layer.indices_type) if hasattr(layer, "indices_type") else np.dtype(np.int32)

    def run(ins: Any) -> list[np.ndarray]:
        x = ins[0]
        if x.ndim == 0:
            return [np.zeros((0, int(x != 0)), dtype=index_type)]
        return [np.array(np.nonzero(x), dtype=index_type).reshape(x.ndim, -1)]

    return run

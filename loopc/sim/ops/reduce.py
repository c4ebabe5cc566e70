"""Reductions along axes: Reduce, SoftMax, Normalization, Cumulative, TopK."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from loopc.errors import SimulationError
from loopc.sim.dtypes import is_float, to_numpy
from loopc.sim.ops._common import axes_from_mask, int_attr, widen
from loopc.sim.registry import Kernel, simulates

Axes = tuple[int, ...]


def _one_axis(mask: int, rank: int, what: str) -> int:
    """Softmax and TopK take a bit mask that must name exactly one axis of the input."""
    axes = axes_from_mask(mask, rank)
    if len(axes) != 1:
        raise SimulationError(f"{what} needs exactly one axis, got mask {mask:#x} for a rank-{rank} input")
    return axes[0]


# -- Reduce -------------------------------------------------------------------------------------


def _float_mean(x: np.ndarray, axes: Axes, keep: bool) -> np.ndarray:
    count = np.prod([x.shape[a] for a in axes], dtype=np.int64)
    return np.sum(x, axis=axes, keepdims=keep) / x.dtype.type(count)  # 0 / 0 is NaN, as documented


def _int_mean(x: np.ndarray, axes: Axes, keep: bool) -> np.ndarray:
    # Integer sum / count, truncated toward zero like TensorRT's integer kDIV; 0 for an empty volume.
    total = np.sum(x, axis=axes, keepdims=keep, dtype=np.int64)
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    if count == 0:
        return np.zeros_like(total)
    return np.sign(total) * (np.abs(total) // count)


def _reducer(op: str, dtype: np.dtype[Any]) -> Callable[[np.ndarray, Axes, bool], np.ndarray]:
    """The reduction; empty volumes give the identities TensorRT documents for ReduceOperation."""
    if op == "SUM":
        return lambda x, ax, keep: np.sum(x, axis=ax, keepdims=keep, dtype=x.dtype)
    if op == "PROD":
        return lambda x, ax, keep: np.prod(x, axis=ax, keepdims=keep, dtype=x.dtype)
    if op in ("MAX", "MIN"):
        if is_float(dtype):
            low, high = -np.inf, np.inf
        else:
            info = np.iinfo(dtype)
            low, high = info.min, info.max
        fn, start = (np.max, low) if op == "MAX" else (np.min, high)
        return lambda x, ax, keep: fn(x, axis=ax, keepdims=keep, initial=start)
    if op == "AVG":
        return _float_mean if is_float(dtype) else _int_mean
    raise SimulationError(f"reduce operation {op} is not supported")


@simulates("REDUCE")
def reduce(layer: Any) -> Kernel:
    """SUM/PROD/MAX/MIN/AVG over the masked axes; integers stay integers (AVG truncates)."""
    op = layer.op.name
    mask = int_attr(layer.axes)
    keep = bool(layer.keep_dims)
    dtype = to_numpy(layer.get_input(0).dtype)
    fn = _reducer(op, dtype)

    def run(ins: Any) -> list[np.ndarray]:
        x = widen(ins[0])
        with np.errstate(all="ignore"):
            return [fn(x, axes_from_mask(mask, x.ndim), keep)]

    return run


# -- SoftMax ------------------------------------------------------------------------------------


@simulates("SOFTMAX")
def softmax(layer: Any) -> Kernel:
    """exp(x - max) / sum(exp(x - max)) along the one masked axis; shifting by the max avoids overflow."""
    mask = int_attr(layer.axes)

    def run(ins: Any) -> list[np.ndarray]:
        x = widen(ins[0])
        axis = _one_axis(mask, x.ndim, "softmax")
        with np.errstate(all="ignore"):
            e = np.exp(x - np.max(x, axis=axis, keepdims=True))
            return [e / np.sum(e, axis=axis, keepdims=True)]

    return run


# -- Normalization ------------------------------------------------------------------------------


def _normalize(x: np.ndarray, axes: Axes, eps: float) -> np.ndarray:
    mean = np.mean(x, axis=axes, keepdims=True)
    centered = x - mean
    var = np.mean(centered * centered, axis=axes, keepdims=True)
    return centered / np.sqrt(var + eps)


@simulates("NORMALIZATION")
def normalization(layer: Any) -> Kernel:
    """Y = (X - mean) / sqrt(var + eps) * S + B, with mean and var over the axes.

    With num_groups G != 1 the channels (axis 1) are split into G groups and the statistics are
    taken per group over the group's channels and the axes after the channel (TensorRT requires the
    mask to name exactly those). The scale and bias
    are per group ([1, G, 1, ...]) for a layer from add_normalization and per channel
    ([1, C, 1, ...]) for one from add_normalization_v2.
    """
    mask = int_attr(layer.axes)
    eps = float(layer.epsilon)
    groups = int_attr(layer.num_groups)
    v2 = bool(getattr(layer, "is_v2", False))

    def run(ins: Any) -> list[np.ndarray]:
        x, scale, bias = (widen(a) for a in ins[:3])
        with np.errstate(all="ignore"):
            if groups == 1:
                return [_normalize(x, axes_from_mask(mask, x.ndim), eps) * scale + bias]
            if x.ndim < 2 or x.shape[1] % groups:
                raise SimulationError(f"{groups} groups do not divide the channels of an input of shape {x.shape}")
            n, c = x.shape[:2]
            grouped = x.reshape(n, groups, c // groups, *x.shape[2:])
            # statistics over the group's channels and the masked axes after the channel axis
            axes = (2, *(a + 1 for a in axes_from_mask(mask, x.ndim) if a >= 2))
            y = _normalize(grouped, axes, eps)
            if v2:
                return [y.reshape(x.shape) * scale + bias]
            per_group = (scale.shape[0], scale.shape[1], 1, *scale.shape[2:])
            return [(y * scale.reshape(per_group) + bias.reshape(per_group)).reshape(x.shape)]

    return run


# -- Cumulative ---------------------------------------------------------------------------------


@simulates("CUMULATIVE")
def cumulative(layer: Any) -> Kernel:
    """Forward/reverse, inclusive/exclusive running sums along the axis given by input 1."""
    if layer.op.name != "SUM":
        raise SimulationError(f"cumulative operation {layer.op.name} is not supported")
    exclusive = bool(layer.exclusive)
    reverse = bool(layer.reverse)

    def run(ins: Any) -> list[np.ndarray]:
        x = widen(ins[0])
        axis = int(np.asarray(ins[1]).reshape(()))
        if not -x.ndim <= axis < x.ndim:
            raise SimulationError(f"axis {axis} is out of range for a rank-{x.ndim} input")
        axis %= x.ndim
        if reverse:
            x = np.flip(x, axis)
        y = np.cumsum(x, axis=axis, dtype=x.dtype)
        if exclusive:
            # shift by one instead of subtracting x, which would not be exact for floats
            shifted = np.zeros_like(y)
            dst, src = [slice(None)] * y.ndim, [slice(None)] * y.ndim
            dst[axis], src[axis] = slice(1, None), slice(None, -1)
            shifted[tuple(dst)] = y[tuple(src)]
            y = shifted
        return [np.flip(y, axis) if reverse else y]

    return run


# -- TopK ---------------------------------------------------------------------------------------

MAX_K = 3840  # TensorRT: "Currently only values of K up to 3840 are supported."


@simulates("TOPK")
def topk(layer: Any) -> Kernel:
    """The k largest (MAX) or smallest (MIN) values along one axis, sorted; ties keep the lower index."""
    largest = layer.op.name == "MAX"
    static_k = int_attr(layer.k)
    mask = int_attr(layer.axes)
    index_type = to_numpy(layer.indices_type)

    def run(ins: Any) -> list[np.ndarray]:
        x = ins[0]
        dynamic = ins[1] if len(ins) > 1 else None
        k = static_k if dynamic is None else int(np.asarray(dynamic).reshape(()))
        axis = _one_axis(mask, x.ndim, "TopK")
        n = x.shape[axis]
        if not 0 <= k <= min(n, MAX_K):
            raise SimulationError(f"k = {k} is out of range for an axis of length {n} (TensorRT allows up to {MAX_K})")
        if largest:
            # a stable ascending sort of the reversed axis, read backwards: descending, ties by index
            order = np.flip(n - 1 - np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
        else:
            order = np.argsort(x, axis=axis, kind="stable")
        idx = np.take(order, np.arange(k), axis=axis)
        return [np.take_along_axis(x, idx, axis=axis), idx.astype(index_type)]

    return run

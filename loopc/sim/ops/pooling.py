"""IPoolingLayer: max, average and their blend over windows of the last 2 (or 3) axes.

TensorRT's semantics, per spatial axis of length I with window F, stride S, pre-padding B and
post-padding A (M = I + B + A):

- EXPLICIT_ROUND_DOWN: O = floor((M - F) / S) + 1;  EXPLICIT_ROUND_UP: O = ceil((M - F) / S) + 1
  (the last windows may then run past the padded input);
- SAME_UPPER / SAME_LOWER: O = ceil(I / S), P = floor((I - 1) / S) * S + F - I, split as
  B = floor(P / 2) (UPPER) or B = P - floor(P / 2) (LOWER), the explicit padding ignored.

Window ``o`` covers ``[o*S - B, o*S - B + F)``; what lies outside the input is padding, which
never wins a max. An average divides the window's sum by its overlap with the unpadded input
(``average_count_excludes_padding``) or with the padded one ``[-B, I + A)``; MAX_AVERAGE_BLEND is
``(1 - blend_factor) * max + blend_factor * average``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from loopc.errors import SimulationError
from loopc.sim.dtypes import is_float
from loopc.sim.ops._common import dims, widen
from loopc.sim.registry import Kernel, simulates

#: Per spatial axis: (output length, pre-padding, post-padding).
Geometry = list[tuple[int, int, int]]


def pool_geometry(mode: str, size: tuple[int, ...], window: tuple[int, ...], stride: tuple[int, ...],
                  pre: tuple[int, ...], post: tuple[int, ...]) -> Geometry:
    """Output length and the padding in force, per spatial axis, as the padding mode says."""
    geometry = []
    for i, f, s, b, a in zip(size, window, stride, pre, post):
        if mode in ("SAME_UPPER", "SAME_LOWER"):
            p = (i - 1) // s * s + f - i
            b = p // 2 if mode == "SAME_UPPER" else p - p // 2
            a = p - b
            o = -(-i // s)
        elif mode == "EXPLICIT_ROUND_DOWN":
            o = (i + b + a - f) // s + 1
        elif mode == "EXPLICIT_ROUND_UP":
            o = -(-(i + b + a - f) // s) + 1
        else:
            raise SimulationError(f"padding mode {mode} is not supported")
        if o < 1:
            raise SimulationError(f"a window of {f} does not fit an axis of {i} padded by ({b}, {a})")
        geometry.append((o, b, a))
    return geometry


def _pool(x: np.ndarray, geometry: Geometry, window: tuple[int, ...], stride: tuple[int, ...], fill: Any,
          reduce: Any) -> np.ndarray:
    """``reduce`` (np.max or np.sum) over every window of ``x`` padded with ``fill`` (trimmed where
    padding is negative). Both reductions are separable, so the axes are pooled one at a time with a
    sliding_window_view each: F1 + ... + Fk reads per output, not F1 * ... * Fk."""
    k = len(window)
    for axis, ((o, b, _), f, s) in enumerate(zip(geometry, window, stride)):
        axis += x.ndim - k
        i = x.shape[axis]
        need = (o - 1) * s + f  # the padded length the windows read
        widths = [(0, 0)] * x.ndim
        widths[axis] = (max(b, 0), max(need - b - i, 0))
        crop = [slice(None)] * x.ndim
        crop[axis] = slice(max(-b, 0), max(-b, 0) + need)
        padded = np.pad(x, widths, constant_values=fill)[tuple(crop)]
        steps = [slice(None)] * (x.ndim + 1)
        steps[axis] = slice(None, None, s)
        x = reduce(sliding_window_view(padded, f, axis=axis)[tuple(steps)], axis=-1)
    return x


def _counts(geometry: Geometry, window: tuple[int, ...], stride: tuple[int, ...], spatial: tuple[int, ...],
            exclude_padding: bool) -> np.ndarray:
    """The divisor of each output: the product over axes of the window's overlap with the
    (unpadded or padded) input, an outer product since the overlap is separable."""
    total = np.ones((), np.float64)
    for (o, b, a), f, s, i in zip(geometry, window, stride, spatial):
        start = np.arange(o) * s - b
        low, high = (0, i) if exclude_padding else (-b, i + a)
        overlap = np.clip(np.minimum(start + f, high) - np.maximum(start, low), 0, None)
        total = np.multiply.outer(total, overlap.astype(np.float64))
    return total


@simulates("POOLING")
def pooling(layer: Any) -> Kernel:
    """MAX / AVERAGE / MAX_AVERAGE_BLEND over windows of the last len(window_size_nd) axes."""
    kind = layer.type.name
    window = dims(layer.window_size_nd)
    stride = dims(layer.stride_nd)
    pre, post = dims(layer.pre_padding), dims(layer.post_padding)
    mode = layer.padding_mode.name
    exclude_padding = bool(layer.average_count_excludes_padding)
    blend = float(layer.blend_factor)
    if kind not in ("MAX", "AVERAGE", "MAX_AVERAGE_BLEND"):
        raise SimulationError(f"pooling type {kind} is not supported")
    k = len(window)

    def run(ins: Any) -> list[np.ndarray]:
        x = widen(ins[0])
        if x.ndim < k + 1:
            raise SimulationError(f"a {k}-D window needs an input of rank {k + 1} or more, not {x.ndim}")
        if kind != "MAX" and not is_float(x.dtype):
            raise SimulationError(f"{kind} pooling of {x.dtype} is not supported")
        spatial = x.shape[-k:]
        geometry = pool_geometry(mode, spatial, window, stride, pre, post)
        results = []
        if kind != "AVERAGE":
            low = -np.inf if is_float(x.dtype) else np.iinfo(x.dtype).min
            results.append(_pool(x, geometry, window, stride, low, np.max))
        if kind != "MAX":
            sums = _pool(x, geometry, window, stride, 0, np.sum)
            counts = _counts(geometry, window, stride, spatial, exclude_padding).astype(x.dtype)
            with np.errstate(all="ignore"):
                results.append(sums / counts)
        if kind == "MAX_AVERAGE_BLEND":
            return [(1 - blend) * results[0] + blend * results[1]]
        return results

    return run

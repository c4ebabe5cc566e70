"""Resampling layers: Resize and GridSample, as TensorRT documents them.

Resize is separable: each axis whose length changes gets a table of source indices and weights
(one tap for nearest, two for linear, four for cubic), and the axes are resampled one after the
other with ``take`` and broadcasting. Output coordinates map to input coordinates by TensorRT's
documented formulas (:mod:`loopc.semantics.resize`, which the backend reads too). Taps outside the
input read the edge, unless ``exclude_outside`` drops them and renormalizes.

GridSample reads the input at the grid's normalized coordinates (-1 and 1 are the corner pixels'
centres with ``align_corners``, their outer edges without); the sample mode says what a tap outside
the input reads (FILL: zero, CLAMP: the edge, REFLECT: its mirror image).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from loopc.errors import SimulationError
from loopc.semantics.resize import TRT_RESIZABLE, TRT_ROUNDING, TRT_TRANSFORMS, keys_taps, rounded, trt_coordinates
from loopc.sim.dtypes import is_float
from loopc.sim.ops._common import dims, widen
from loopc.sim.registry import Kernel, simulates


def axis_taps(layer: dict[str, Any], n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray]:
    """Source indices and weights, each [taps, n_out], resampling one axis from ``n_in`` to ``n_out``."""
    if layer["transform"] not in TRT_TRANSFORMS:
        raise SimulationError(f"resize coordinate transformation {layer['transform']} is not supported")
    coord = trt_coordinates(layer["transform"], layer["selector"], n_in, n_out)
    mode = layer["mode"]
    if mode == "NEAREST":
        index = rounded(coord, TRT_ROUNDING[layer["rounding"]]).astype(np.int64)
        return np.clip(index, 0, n_in - 1)[None], np.ones((1, n_out))
    base = np.floor(coord)
    t = coord - base
    if mode == "LINEAR":
        offsets, weights = np.arange(2), np.stack([1 - t, t])
    else:
        offsets, weights = np.arange(-1, 3), keys_taps(t, layer["cubic_a"])
    index = base.astype(np.int64)[None] + offsets[:, None]
    inside = (index >= 0) & (index < n_in)
    if layer["exclude_outside"]:
        weights = np.where(inside, weights, 0.0)
        weights = weights / weights.sum(axis=0, keepdims=True)
    return np.clip(index, 0, n_in - 1), weights


def resample_axis(x: np.ndarray, axis: int, index: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ_k weights[k] · x[..., index[k], ...] along ``axis`` (one tap: a plain take)."""
    if index.shape[0] == 1:
        return np.take(x, index[0], axis=axis)
    shape = [1] * x.ndim
    shape[axis] = -1
    out = np.zeros(x.shape[:axis] + (index.shape[1],) + x.shape[axis + 1:], dtype=x.dtype)
    for k in range(index.shape[0]):
        out += np.take(x, index[k], axis=axis) * weights[k].astype(x.dtype).reshape(shape)
    return out


@simulates("RESIZE")
def resize(layer: Any) -> Kernel:
    params = {
        "mode": layer.resize_mode.name,
        "transform": layer.coordinate_transformation.name,
        "selector": layer.selector_for_single_pixel.name,
        "rounding": layer.nearest_rounding.name,
        "cubic_a": float(layer.cubic_coeff),
        "exclude_outside": bool(layer.exclude_outside),
    }
    dynamic = layer.num_inputs > 1
    scales = [float(s) for s in layer.scales] if not dynamic else []
    shape = dims(layer.shape) if not dynamic and not scales else None

    def output_shape(x: np.ndarray, ins: Any) -> tuple[int, ...]:
        if dynamic:
            return tuple(int(d) for d in np.asarray(ins[1]).reshape(-1))
        if scales:
            return tuple(int(np.floor(d * s)) for d, s in zip(x.shape, scales))
        assert shape is not None
        return shape

    def run(ins: Any) -> list[np.ndarray]:
        x = ins[0]
        out_shape = output_shape(x, ins)
        if len(out_shape) != x.ndim:
            raise SimulationError(f"resize to {out_shape} of an input of rank {x.ndim}")
        changed = [a for a in range(x.ndim) if out_shape[a] != x.shape[a]]
        limit = TRT_RESIZABLE[params["mode"]]
        if changed and changed[0] < x.ndim - limit:
            raise SimulationError(f"{params['mode'].lower()} resize of {x.shape} to {out_shape} changes axis "
                                  f"{changed[0]}; TensorRT resizes only the innermost {limit} axes in this mode")
        if any(x.shape[a] == 0 for a in changed):
            raise SimulationError(f"resize of an empty axis to {out_shape}")
        if params["mode"] != "NEAREST" and not is_float(x.dtype):
            raise SimulationError(f"{params['mode'].lower()} resize of {x.dtype} data (TensorRT interpolates "
                                  "quantized data by scales this simulator does not model)")
        y = widen(x) if params["mode"] != "NEAREST" else x
        for axis in changed:
            index, weights = axis_taps(params, x.shape[axis], out_shape[axis])
            y = resample_axis(y, axis, index, weights)
        return [y.astype(x.dtype, copy=False)]

    return run


# -- GridSample -----------------------------------------------------------------------------------


def reflect(c: np.ndarray, low: float, high: float) -> np.ndarray:
    """Coordinates folded back into [low, high] by mirroring at its ends, as often as it takes."""
    span = high - low
    if span <= 0:
        return np.full_like(c, low)
    below = c < low
    dist = np.where(below, low - c, c - high)
    folds = np.floor(dist / span)
    rest = dist - folds * span
    even = folds % 2 == 0
    from_low, from_high = low + rest, high - rest
    folded = np.where(below, np.where(even, from_low, from_high), np.where(even, from_high, from_low))
    return np.where((c < low) | (c > high), folded, c)


def _taps_along(c: np.ndarray, mode: str, length: int, sample: str, low: float,
                high: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """(index, weight) pairs of one spatial axis; weight 0 marks a tap that reads zero (FILL)."""
    if mode == "NEAREST":
        offsets, base, weights = [0], np.rint(c), [np.ones_like(c)]
    else:
        base = np.floor(c)
        t = c - base
        if mode == "LINEAR":
            offsets, weights = [0, 1], [1 - t, t]
        else:
            offsets, weights = [-1, 0, 1, 2], list(keys_taps(t, -0.75))
    taps = []
    for offset, weight in zip(offsets, weights):
        index = base + offset
        if sample == "CLAMP":
            index = np.clip(index, 0, length - 1)
        elif sample == "REFLECT":
            index = np.clip(np.trunc(reflect(index, low, high)), 0, length - 1)
        inside = (index >= 0) & (index < length)
        taps.append((np.clip(index, 0, length - 1).astype(np.int64), np.where(inside, weight, 0.0)))
    return taps


@simulates("GRID_SAMPLE")
def grid_sample(layer: Any) -> Kernel:
    mode = layer.interpolation_mode.name
    align = bool(layer.align_corners)
    sample = layer.sample_mode.name
    if sample not in ("FILL", "CLAMP", "REFLECT"):
        raise SimulationError(f"grid sample mode {sample} is not supported")

    def run(ins: Any) -> list[np.ndarray]:
        x, grid = ins[0], ins[1]
        spatial = x.shape[2:]
        k = len(spatial)
        if grid.ndim != x.ndim or grid.shape[-1] != k or grid.shape[0] != x.shape[0]:
            raise SimulationError(f"grid of shape {grid.shape} for an input of shape {x.shape}")
        data = widen(x).reshape(x.shape[0], x.shape[1], -1)
        g = widen(grid).astype(np.float32)
        out_spatial = grid.shape[1:-1]
        per_axis = []
        for axis, length in enumerate(spatial):
            n = g[..., k - 1 - axis]  # the grid lists coordinates innermost axis first (x, y, z)
            c = ((n + 1) / 2 * (length - 1) if align else ((n + 1) * length - 1) / 2).astype(np.float64)
            low, high = (0.0, length - 1.0) if align else (-0.5, length - 0.5)
            if mode == "NEAREST":
                c = np.rint(c)
            if sample == "CLAMP":
                c = np.where((c < low) | (c > high), np.clip(c, 0, length - 1), c)
            elif sample == "REFLECT":
                c = reflect(c, low, high)
            per_axis.append(_taps_along(c, mode, length, sample, low, high))
        strides = np.cumprod((1,) + spatial[:0:-1])[::-1]
        out = np.zeros(data.shape[:2] + (int(np.prod(out_spatial)),), dtype=data.dtype)
        for combo in itertools.product(*per_axis):
            flat = np.zeros_like(combo[0][0])
            for (index, _), stride in zip(combo, strides):
                flat = flat + index * int(stride)
            weight = np.prod([w for _, w in combo], axis=0)
            picked = np.take_along_axis(data, flat.reshape(flat.shape[0], 1, -1), axis=2)
            out += picked * weight.reshape(weight.shape[0], 1, -1).astype(data.dtype)
        return [out.reshape(x.shape[:2] + out_spatial).astype(x.dtype, copy=False)]

    return run

"""Layers that move data without arithmetic: Shuffle, Squeeze, Unsqueeze, Concatenation, Slice,
Padding, ReverseSequence."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from loopc.errors import SimulationError
from loopc.sim.ops._common import dims
from loopc.limits import check_constant
from loopc.sim.registry import Kernel, simulates


def _optional(layer: Any, index: int) -> bool:
    """True when the layer has a non-null input ``index``."""
    return index < layer.num_inputs and layer.get_input(index) is not None


def _static(value: Any) -> tuple[int, ...] | None:
    """A Dims attribute as a tuple; ``None`` when the attribute was replaced by a dynamic input."""
    return None if value is None else dims(value)


def _rank(tensor: Any) -> int:
    return len(tuple(tensor.shape))


def resolve_reshape(shape: tuple[int, ...], target: Sequence[int], zero_is_placeholder: bool) -> tuple[int, ...]:
    """Reshape dims as TensorRT reads them: 0 copies the input dim (by position), one -1 is inferred."""
    out = [int(d) for d in target]
    for i, d in enumerate(out):
        if d == 0 and zero_is_placeholder:
            if i >= len(shape):
                raise SimulationError(f"reshape dimension {i} is 0 but the input has only {len(shape)} dimensions")
            out[i] = shape[i]
    volume = math.prod(shape)
    wild = [i for i, d in enumerate(out) if d == -1]
    if len(wild) > 1 or any(d < -1 for d in out):
        raise SimulationError(f"invalid reshape dimensions {tuple(target)}")
    if wild:
        known = math.prod(d for d in out if d != -1)
        if known == 0 or volume % known:
            raise SimulationError(f"cannot infer the -1 in {tuple(target)} for an input of shape {shape}")
        out[wild[0]] = volume // known
    if math.prod(out) != volume:
        raise SimulationError(f"cannot reshape {shape} (volume {volume}) to {tuple(out)}")
    return tuple(out)


@simulates("SHUFFLE")
def shuffle(layer: Any) -> Kernel:
    first = tuple(layer.first_transpose)[: _rank(layer.get_input(0))]
    second = tuple(layer.second_transpose)[: _rank(layer.get_output(0))]
    dynamic = _optional(layer, 1)
    static = None if dynamic else _static(layer.reshape_dims)
    placeholder = bool(layer.zero_is_placeholder)

    def run(ins: Any) -> list[np.ndarray]:
        x = np.transpose(ins[0], first)
        target = ins[1].reshape(-1) if dynamic else static
        if target is not None:
            x = x.reshape(resolve_reshape(x.shape, target, placeholder))
        return [np.transpose(x, second)]

    return run


@simulates("SQUEEZE")
def squeeze(layer: Any) -> Kernel:
    # Without axes, TensorRT removes the dims that are statically 1 in the network definition.
    declared = tuple(layer.get_input(0).shape)
    default = tuple(i for i, d in enumerate(declared) if d == 1)
    has_axes = _optional(layer, 1)

    def run(ins: Any) -> list[np.ndarray]:
        x = ins[0]
        axes = _axes(ins[1], x.ndim) if has_axes else default
        if any(x.shape[a] != 1 for a in axes):
            raise SimulationError(f"cannot squeeze axes {axes} of a tensor of shape {x.shape}")
        return [np.squeeze(x, axis=axes)]

    return run


@simulates("UNSQUEEZE")
def unsqueeze(layer: Any) -> Kernel:
    def run(ins: Any) -> list[np.ndarray]:
        x, raw = ins[0], ins[1].reshape(-1)
        return [np.expand_dims(x, _axes(raw, x.ndim + raw.size))]

    return run


def _axes(values: np.ndarray, rank: int) -> tuple[int, ...]:
    axes = tuple(int(a) + rank if a < 0 else int(a) for a in values.reshape(-1))
    if any(not 0 <= a < rank for a in axes) or len(set(axes)) != len(axes):
        raise SimulationError(f"invalid axes {values.reshape(-1).tolist()} for rank {rank}")
    return axes


@simulates("CONCATENATION")
def concatenation(layer: Any) -> Kernel:
    axis = int(layer.axis)

    def run(ins: Any) -> list[np.ndarray]:
        return [np.concatenate(ins, axis=axis)]

    return run


@simulates("SLICE")
def slice_(layer: Any) -> Kernel:
    """Output coordinate y reads input coordinate x = start + y * stride, mapped by the sample mode."""
    mode = layer.mode.name
    names = {1: "start", 2: "shape", 3: "stride", 5: "axes"}
    static = {i: None if _optional(layer, i) else _static(getattr(layer, name)) for i, name in names.items()}

    def param(ins: Any, i: int) -> tuple[int, ...] | None:
        if i < len(ins) and ins[i] is not None:
            return tuple(int(v) for v in ins[i].reshape(-1))
        return static[i]

    def run(ins: Any) -> list[np.ndarray]:
        x = ins[0]
        start, size, stride = _full_slice(x.shape, *(param(ins, i) for i in (1, 2, 3, 5)))
        check_constant(size, x.dtype, "the slice")  # its size is data: in WRAP/CLAMP/FILL modes, any size
        fill = ins[4] if len(ins) > 4 and ins[4] is not None else None
        return [_sample(x, start, size, stride, mode, fill)]

    return run


def _full_slice(
    shape: tuple[int, ...], start: Any, size: Any, stride: Any, axes: tuple[int, ...] | None
) -> tuple[list[int], list[int], list[int]]:
    """Start, size and stride for every axis; axes not listed are copied whole."""
    rank = len(shape)
    if axes is None:
        axes = tuple(range(rank))
    axes = tuple(a + rank if a < 0 else a for a in axes)
    full = ([0] * rank, list(shape), [1] * rank)
    for values, target in zip((start, size, stride), full):
        if values is None or len(values) != len(axes):
            raise SimulationError(f"slice parameters {values} do not match the axes {axes}")
        for a, v in zip(axes, values):
            target[a] = v
    if any(s < 0 for s in full[1]):
        raise SimulationError(f"negative slice size {tuple(full[1])}")
    return full


def _sample(x: np.ndarray, start: list[int], size: list[int], stride: list[int], mode: str, fill: Any) -> np.ndarray:
    picks, masks = [], []
    for d, s0, n, st in zip(x.shape, start, size, stride):
        coords = s0 + np.arange(n, dtype=np.int64) * st
        inside = (coords >= 0) & (coords < d)
        if n and d == 0 and mode != "FILL":
            raise SimulationError(f"slice reads {n} elements from an empty axis in mode {mode}")
        if mode == "STRICT_BOUNDS" and not inside.all():
            raise SimulationError(f"slice coordinates {coords.tolist()} are out of bounds for a dimension of {d}")
        if mode == "WRAP":
            coords = np.mod(coords, d) if n else coords
        elif mode == "CLAMP":
            coords = np.clip(coords, 0, d - 1)
        elif mode == "REFLECT":
            coords = _reflect(coords, d)
        elif mode == "FILL":
            masks.append(inside)
            coords = np.where(inside, coords, 0)
        picks.append(coords)
    if mode == "FILL" and x.size == 0:
        return np.full(tuple(size), _fill_value(fill, x.dtype), dtype=x.dtype)
    out = x[np.ix_(*picks)] if picks else x.copy()
    if mode == "FILL" and picks:
        keep = np.ones(out.shape, dtype=bool)
        for i, m in enumerate(masks):
            keep &= m.reshape([-1 if j == i else 1 for j in range(len(masks))])
        out = np.where(keep, out, _fill_value(fill, x.dtype))
    return out


def _reflect(coords: np.ndarray, d: int) -> np.ndarray:
    """TensorRT's kREFLECT: c = |x| mod (2d - 2); z = 2d - 2 - c when c >= d. One element repeats."""
    if d == 1:
        return np.zeros_like(coords)
    period = 2 * d - 2
    c = np.mod(np.abs(coords), period)
    return np.where(c >= d, period - c, c)


def _fill_value(fill: np.ndarray | None, dtype: np.dtype[Any]) -> Any:
    return np.zeros((), dtype) if fill is None else np.asarray(fill).reshape(()).astype(dtype)


@simulates("PADDING")
def padding(layer: Any) -> Kernel:
    """Zero padding of the trailing dims; a negative amount crops instead."""
    pre, post = dims(layer.pre_padding_nd), dims(layer.post_padding_nd)

    def run(ins: Any) -> list[np.ndarray]:
        x = ins[0]
        lead = x.ndim - len(pre)
        if lead < 0:
            raise SimulationError(f"{len(pre)}-D padding of a rank-{x.ndim} tensor")
        kept = []
        for d, b, a in zip(x.shape[lead:], pre, post):
            first, stop = max(-b, 0), d - max(-a, 0)
            if stop < first:
                raise SimulationError(f"padding {pre} / {post} crops more than the input shape {x.shape}")
            kept.append(slice(first, stop))
        widths = [(0, 0)] * lead + [(max(b, 0), max(a, 0)) for b, a in zip(pre, post)]
        return [np.pad(x[(Ellipsis, *kept)], widths)]

    return run


@simulates("REVERSE_SEQUENCE")
def reverse_sequence(layer: Any) -> Kernel:
    """For batch entry b, the first lens[b] elements along the sequence axis are reversed."""
    batch_axis, seq_axis = int(layer.batch_axis), int(layer.sequence_axis)

    def run(ins: Any) -> list[np.ndarray]:
        x, lens = ins[0], ins[1].reshape(-1).astype(np.int64)
        steps = x.shape[seq_axis]
        if lens.size != x.shape[batch_axis]:
            raise SimulationError(f"{lens.size} sequence lengths for a batch of {x.shape[batch_axis]}")
        if np.any((lens < 0) | (lens > steps)):
            raise SimulationError(f"sequence lengths {lens.tolist()} outside [0, {steps}]")
        t = np.arange(steps)[None, :]
        n = lens[:, None]
        index = np.where(t < n, n - 1 - t, t)  # [batch, step]
        if batch_axis > seq_axis:
            index = index.T
        shape = [1] * x.ndim
        shape[min(batch_axis, seq_axis)], shape[max(batch_axis, seq_axis)] = index.shape
        full = np.broadcast_to(index.reshape(shape), x.shape)
        return [np.take_along_axis(x, full, axis=seq_axis)]

    return run

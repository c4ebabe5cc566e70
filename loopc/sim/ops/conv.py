"""Convolution and Deconvolution, as TensorRT documents IConvolutionLayer and IDeconvolutionLayer (padding and
cropping by :mod:`loopc.semantics.conv`).

The kernel and bias are the layer's weights or, when those are empty, its inputs 1 and 2. Kernels
are GKCRS for a convolution ([M, C/G, *F] as ONNX's Conv has it) and CKRS for a deconvolution
([C, M/G, *F], ONNX's ConvTranspose). Both are one matrix product per group: a convolution over
patches gathered by a strided view (im2col), a deconvolution whose product is scattered back by
strided adds, one per kernel position.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from loopc.errors import SimulationError
from loopc.semantics.conv import NoWindows, Pads, Window, conv_padding, deconv_cropping
from loopc.sim.dtypes import is_float
from loopc.sim.ops._common import dims, widen
from loopc.sim.registry import Kernel, simulates


@dataclass(frozen=True)
class _Geometry(Window):
    """The attributes both layers share, read once from the layer."""

    maps: int
    groups: int
    weights: np.ndarray | None
    bias: np.ndarray | None


def _geometry(layer: Any) -> _Geometry:
    kernel = dims(layer.kernel_size_nd)
    n = len(kernel)
    if n not in (2, 3):
        raise SimulationError(f"a {n}-D kernel; TensorRT convolves over 2 or 3 spatial axes")
    pre, post = dims(layer.pre_padding), dims(layer.post_padding)
    if any(p < 0 for p in pre + post):
        raise SimulationError(f"negative padding {pre} / {post}; TensorRT takes padding >= 0")
    geometry = _Geometry(kernel, dims(layer.stride_nd), dims(layer.dilation_nd), pre, post, layer.padding_mode.name,
                         int(layer.num_output_maps), int(layer.num_groups), _weights(layer.kernel),
                         _weights(layer.bias))
    if geometry.maps % geometry.groups:
        raise SimulationError(f"{geometry.maps} output maps do not split into {geometry.groups} groups")
    return geometry


def _weights(weights: Any) -> np.ndarray | None:
    """Weights set on the layer as a float32 array, or None when empty (the input is used instead)."""
    array = weights if isinstance(weights, np.ndarray) else weights.numpy()
    return None if array.size == 0 else np.asarray(array, np.float32)


def _kernel(g: _Geometry, ins: Sequence[np.ndarray | None]) -> np.ndarray:
    """The layer's kernel weights, else its input 1."""
    if g.weights is not None:
        return g.weights
    given = ins[1] if len(ins) > 1 else None
    if given is None:
        raise SimulationError("the kernel is neither weights nor input 1")
    return widen(given).astype(np.float32, copy=False)


def _bias(g: _Geometry, ins: Sequence[np.ndarray | None]) -> np.ndarray | None:
    """The layer's bias weights, else its input 2, else none."""
    if g.bias is not None:
        return g.bias
    given = ins[2] if len(ins) > 2 else None
    return None if given is None else widen(given).astype(np.float32, copy=False)


def _float_input(x: np.ndarray, spatial: int) -> np.ndarray:
    if not is_float(x.dtype):
        raise SimulationError(f"a {x.dtype} input; the simulator convolves floating-point tensors")
    if x.ndim != spatial + 2:
        raise SimulationError(f"a rank-{x.ndim} input for a {spatial}-D kernel; it needs [N, C, {spatial} spatial]")
    return widen(x).astype(np.float32, copy=False)


def _add_bias(out: np.ndarray, bias: np.ndarray | None, maps: int) -> np.ndarray:
    if bias is None:
        return out
    if bias.size != maps:
        raise SimulationError(f"{bias.size} bias values for {maps} output maps")
    return out + bias.reshape((1, maps) + (1,) * (out.ndim - 2))


def _windowed(pads: Any, *args: Any) -> Pads:
    """``pads(*args)`` (padding or cropping), its refusal as the simulator's error."""
    try:
        return pads(*args)
    except NoWindows as exc:
        raise SimulationError(str(exc)) from None


def windows(x: np.ndarray, kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int]) -> np.ndarray:
    """A read-only view [N, C, *out, *kernel] of a padded input: element (o, k) is x at o * S + k * D."""
    spatial = x.ndim - 2
    out = [(x.shape[2 + i] - (1 + dilation[i] * (kernel[i] - 1))) // stride[i] + 1 for i in range(spatial)]
    steps = x.strides[2:]
    strides = (x.strides[:2] + tuple(st * s for st, s in zip(steps, stride))
               + tuple(st * d for st, d in zip(steps, dilation)))
    return as_strided(x, x.shape[:2] + tuple(out) + tuple(kernel), strides, writeable=False)


def grouped_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a[g] @ b[g] for each group g: one BLAS product per group (NumPy's stacked matmul is far slower
    than a loop over a few 2-D products); many small groups (depthwise) as one stacked product."""
    if a.shape[0] > _STACKED_GROUPS:
        return np.matmul(a, b)
    out = np.empty((a.shape[0], a.shape[1], b.shape[2]), np.result_type(a, b))
    for i in range(a.shape[0]):
        np.matmul(a[i], b[i], out=out[i])
    return out


#: Above this many groups, one stacked product beats a loop of 2-D ones.
_STACKED_GROUPS = 16


def _conv_matrix(w: np.ndarray, g: _Geometry, per_group: int, volume: int) -> np.ndarray:
    """A GKCRS kernel as [G, C/G * F, M/G]: the right operand of each group's patch product."""
    return np.ascontiguousarray(w.reshape(g.groups, g.maps // g.groups, per_group * volume).transpose(0, 2, 1))


@simulates("CONVOLUTION")
def convolution(layer: Any) -> Kernel:
    """Grouped N-D correlation: per group, im2col patches [N P, C/G * F] times the kernel [C/G * F, M/G]."""
    g = _geometry(layer)
    spatial = len(g.kernel)
    volume = math.prod(g.kernel)
    fixed: dict[int, np.ndarray] = {}  # weights set on the layer, as a matrix, by channels per group

    def run(ins: Any) -> list[np.ndarray]:
        x = _float_input(ins[0], spatial)
        w = _kernel(g, ins)
        n, c = x.shape[:2]
        if c % g.groups:
            raise SimulationError(f"{c} input channels do not split into {g.groups} groups")
        per_group = c // g.groups
        if w.size != g.maps * per_group * volume:
            raise SimulationError(f"a kernel of {w.size} values; {g.maps} maps of {per_group} channels x "
                                  f"{g.kernel} need {g.maps * per_group * volume}")
        kernel = fixed.get(per_group) if g.weights is not None else None
        if kernel is None:
            kernel = _conv_matrix(w, g, per_group, volume)
            if g.weights is not None:
                fixed[per_group] = kernel
        padded = np.pad(x, [(0, 0), (0, 0)] + _windowed(conv_padding, g, x.shape[2:]))
        view = windows(padded, g.kernel, g.stride, g.dilation)  # [N, C, *O, *F]
        out_sizes = view.shape[2:2 + spatial]
        # [N, G, C/G, *O, *F] -> [G, N, *O, C/G, *F]: per group, one row of C/G * F values per output position
        grouped = view.reshape((n, g.groups, per_group) + view.shape[2:])
        order = (1, 0, *range(3, 3 + spatial), 2, *range(3 + spatial, 3 + 2 * spatial))
        patches = grouped.transpose(order).reshape(g.groups, n * math.prod(out_sizes), per_group * volume)
        product = grouped_product(patches, kernel)  # [G, N P, M/G]
        out = product.reshape(g.groups, n, -1, g.maps // g.groups).transpose(1, 0, 3, 2)
        return [_add_bias(out.reshape((n, g.maps) + tuple(out_sizes)), _bias(g, ins), g.maps)]

    return run


# -- Deconvolution --------------------------------------------------------------------------------


def _deconv_matrix(w: np.ndarray, g: _Geometry, per_group: int, volume: int) -> np.ndarray:
    """A CKRS kernel as [G, M/G * F, C/G]: the left operand of each group's product with its inputs."""
    maps_per_group = g.maps // g.groups
    return np.ascontiguousarray(w.reshape(g.groups, per_group, maps_per_group * volume).transpose(0, 2, 1))


@simulates("DECONVOLUTION")
def deconvolution(layer: Any) -> Kernel:
    """Transposed grouped convolution: per group, the kernel [M/G * F, C/G] times the inputs [C/G, N I]
    gives every (output map, kernel position, input element) term; each kernel position's terms are
    added into the output at a strided offset."""
    g = _geometry(layer)
    spatial = len(g.kernel)
    volume = math.prod(g.kernel)
    maps_per_group = g.maps // g.groups
    fixed: dict[int, np.ndarray] = {}

    def run(ins: Any) -> list[np.ndarray]:
        x = _float_input(ins[0], spatial)
        w = _kernel(g, ins)
        n, c = x.shape[:2]
        sizes = x.shape[2:]
        if c % g.groups or w.size != c * maps_per_group * volume:
            raise SimulationError(f"a kernel of {w.size} values for {c} input channels in {g.groups} groups; "
                                  f"{g.maps} maps x {g.kernel} need {c * maps_per_group * volume}")
        per_group = c // g.groups
        kernel = fixed.get(per_group) if g.weights is not None else None
        if kernel is None:
            kernel = _deconv_matrix(w, g, per_group, volume)
            if g.weights is not None:
                fixed[per_group] = kernel
        # [N, G, C/G, I] -> [G, C/G, N I]
        inputs = x.reshape(n, g.groups, per_group, -1).transpose(1, 2, 0, 3).reshape(g.groups, per_group, -1)
        terms = grouped_product(kernel, inputs).reshape((g.groups, maps_per_group) + g.kernel + (n,) + tuple(sizes))
        full = tuple((size - 1) * s + dk for size, s, dk in zip(sizes, g.stride, g.extents))
        out = np.zeros((g.groups, maps_per_group, n) + full, np.float32)
        for position in itertools.product(*(range(f) for f in g.kernel)):
            target = tuple(slice(k * d, k * d + (size - 1) * s + 1, s)
                           for k, d, size, s in zip(position, g.dilation, sizes, g.stride))
            out[(slice(None),) * 3 + target] += terms[(slice(None), slice(None)) + position]
        crop = tuple(slice(before, length - after) for (before, after), length in zip(_windowed(deconv_cropping, g, sizes), full))
        cropped = out[(slice(None),) * 3 + crop]
        maps_first = cropped.transpose((2, 0, 1) + tuple(range(3, 3 + spatial)))
        maps_first = maps_first.reshape((n, g.maps) + cropped.shape[3:])
        return [_add_bias(maps_first, _bias(g, ins), g.maps)]

    return run

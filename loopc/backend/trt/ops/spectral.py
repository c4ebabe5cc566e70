"""DFT and STFT as products with constant cosine/sine matrices: TensorRT has no FFT.

With the signal's length known when the network is built, a DFT along an axis is one matrix product:
the signal axis and the (real, imaginary) axis are moved last and flattened, multiplied by a constant
[c·n, 2·m] matrix (``dft_length`` pads or truncates, ``onesided`` keeps m = L//2 + 1 bins, ``inverse``
conjugates and divides by L; an inverse one-sided DFT rebuilds the Hermitian half, real output), and
moved back. STFT frames the signal with a gather, applies the window, and takes that DFT of every
frame. Lengths computed when the engine runs (``dft_length``, ``frame_length``) would change the DFT's
matrices: refused. A frame step given as an input sizes the output like a shape
input (TensorRT knows its value when the engine runs).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.ops.cumulative import axis_is
from loopc.backend.trt.ops.linalg import matmul
from loopc.backend.trt.registry import converter, unsupported
from loopc.ir import Node
from loopc.semantics.attributes import attr
from loopc.trt import trt


def dft_matrix(n: int, components: int, length: int, inverse: bool, onesided: bool) -> np.ndarray:
    """The [components·n, columns] matrix taking [re(n) (, im(n))] to [re(m), im(m)] (or to the real
    signal of an inverse one-sided DFT): input sample k beyond ``length`` is dropped, missing ones are 0."""
    used = min(n, length)
    if inverse and onesided:  # numpy.fft.irfft: bins 0..L//2, each but 0 and L/2 counted twice
        bins = min(n, length // 2 + 1)
        k = np.arange(bins)[:, None]
        t = np.arange(length)[None, :]
        angle = 2 * np.pi * ((k * t) % length) / length
        edge = (k == 0) | ((length % 2 == 0) & (k == length // 2))  # their imaginary parts are ignored
        weight = np.where(edge, 1.0, 2.0) / length
        real = np.zeros((n, length))
        imag = np.zeros((n, length))
        real[:bins] = weight * np.cos(angle)
        imag[:bins] = np.where(edge, 0.0, -weight * np.sin(angle))  # Re((a + ib)(cos + i·sin))
        return np.concatenate([real, imag])[: components * n].astype(np.float32)
    m = length // 2 + 1 if onesided else length
    k = np.arange(used)[:, None]
    j = np.arange(m)[None, :]
    angle = 2 * np.pi * ((k * j) % length) / length
    scale = 1.0 / length if inverse else 1.0
    cos = np.zeros((n, m))
    sin = np.zeros((n, m))
    cos[:used] = scale * np.cos(angle)
    sin[:used] = scale * np.sin(angle) * (1.0 if inverse else -1.0)
    # (a + ib)(cos + i·sin) = (a·cos - b·sin) + i(a·sin + b·cos)
    rows = [np.concatenate([cos, sin], axis=1)]
    if components == 2:
        rows.append(np.concatenate([-sin, cos], axis=1))
    return np.concatenate(rows).astype(np.float32)


def dft_along(ctx: ConversionContext, node: Node, x: Any, axis: int, length: int, inverse: bool, onesided: bool,
              suffix: str = "") -> Any:
    """The DFT of ``x`` ([..., n, ..., 1 or 2]) along a known ``axis``, as ONNX's DFT lays it out."""
    shape = [int(d) for d in x.shape]
    rank, n, components = len(shape), shape[axis], shape[-1]
    others = [a for a in range(rank - 1) if a != axis]
    layer = ctx.network.add_shuffle(x)
    layer.first_transpose = tuple(others + [rank - 1, axis])
    layer.reshape_dims = tuple([0] * len(others) + [components * n])
    flat = ctx.out(layer, node, f"{suffix}signal")
    weights = dft_matrix(n, components, length, inverse, onesided)
    product = matmul(ctx, node, flat, ctx.constant(weights, node, f"{suffix}twiddles"), suffix=f"{suffix}product")
    parts = 1 if inverse and onesided else 2
    back = ctx.network.add_shuffle(product)
    back.reshape_dims = tuple([0] * len(others) + [parts, weights.shape[1] // parts])
    order = others + [rank - 1, axis]  # where each original axis now is: invert the permutation
    back.second_transpose = tuple(order.index(a) for a in range(rank))
    return ctx.out(back, node, suffix.rstrip("/"))


def _constant_int(ctx: ConversionContext, node: Node, index: int, what: str) -> int | None:
    """An optional integer input known when the network is built (None when absent)."""
    value = node.inputs[index] if len(node.inputs) > index else None
    if value is None:
        return None
    known = ctx.constant_of(value)
    if known is None:
        raise unsupported(node, f"a {what} computed when the engine runs (it sets an output shape)",
                          hint=f"make {what} a constant")
    return int(np.asarray(known).reshape(-1)[0])


def _out_length(length: int, inverse: bool, onesided: bool) -> int:
    return length if inverse or not onesided else length // 2 + 1


@converter("DFT")
def dft(ctx: ConversionContext, node: Node) -> None:
    x = ctx.get(node.inputs[0], node)
    shape = [int(d) for d in x.shape]
    rank = len(shape)
    inverse, onesided = bool(attr(node, "inverse")), bool(attr(node, "onesided"))
    if -1 in shape[:-1]:
        raise unsupported(node, "a DFT of a signal whose shape is known only when the engine runs")
    given = _constant_int(ctx, node, 1, "dft_length")
    axis_value = node.inputs[2] if len(node.inputs) > 2 else None
    if axis_value is None:  # older forms' axis attribute is input 2 by now
        candidates = [-2 % rank]
    elif ctx.constant_of(axis_value) is not None:
        candidates = [int(np.asarray(ctx.constant_of(axis_value)).reshape(-1)[0]) % rank]
    else:
        candidates = list(range(rank - 1))

    def length_on(a: int) -> int:
        return given if given is not None else (2 * (shape[a] - 1) if inverse and onesided else shape[a])

    results = []
    out_shapes = set()
    for a in candidates:
        if a == rank - 1:
            raise unsupported(node, "a DFT along the last axis (it holds the real and imaginary parts)")
        out = list(shape)
        out[a] = _out_length(length_on(a), inverse, onesided)
        out[-1] = 1 if inverse and onesided else 2
        out_shapes.add(tuple(out))
    if len(out_shapes) > 1:
        raise unsupported(node, "an axis computed when the engine runs, on which the output's shape depends",
                          hint="make the axis a constant")
    for a in candidates:
        results.append(dft_along(ctx, node, x, a, length_on(a), inverse, onesided,
                                 "" if len(candidates) == 1 else f"axis{a}/"))
    if len(candidates) == 1:
        ctx.set(node.outputs[0], results[0])
        return
    axis_t = ctx.get(axis_value, node)
    axis_nd = ctx.reshape(ctx.cast(axis_t, trt().int64, node, "axis64"), [1] * rank, node, "axis_nd")
    result = results[-1]
    for a in reversed(candidates[:-1]):
        chosen = axis_is(ctx, node, axis_nd, a, rank)
        result = ctx.out(ctx.network.add_select(chosen, results[a], result), node, "" if a == 0 else f"select{a}")
    ctx.set(node.outputs[0], result)


def _offsets(ctx: ConversionContext, node: Node, step: Any, samples: int, length: int) -> Any:
    """[frames, L] INT32 sample offsets i·step + j for a frame step given when the engine runs (a shape
    input: the frame count, 1 + (samples - L) // step, sizes the output)."""
    T = trt()
    step = ctx.cast(ctx.reshape(step, [1], node, "step1"), T.int32, node, "step32")
    spare = ctx.constant(np.array([samples - length], np.int32), node, "spare")
    frames = ctx.elementwise(ctx.elementwise(spare, step, "FLOOR_DIV", node, "more_frames"),
                             ctx.constant(np.array([1], np.int32), node, "first"), "SUM", node, "frame_count")
    layer = ctx.network.add_fill([0, 0], T.FillOperation.LINSPACE, T.int32)
    layer.set_input(0, ctx.cast(ctx.concat([frames, ctx.constant(np.array([length], np.int32), node, "length")],
                                           node, "offsets_shape"), T.int64, node, "offsets_shape64"))
    layer.set_input(1, ctx.constant(np.array(0, np.int32), node, "offset0"))
    layer.set_input(2, ctx.concat([step, ctx.constant(np.array([1], np.int32), node, "unit")], node, "strides"))
    return ctx.out(layer, node, "offsets")


@converter("STFT")
def stft(ctx: ConversionContext, node: Node) -> None:
    """Frames [B, frames, L, c] gathered at their offsets, windowed, and transformed along axis 2."""
    signal = ctx.get(node.inputs[0], node)
    shape = [int(d) for d in signal.shape]
    if len(shape) != 3 or shape[1] == -1:
        raise unsupported(node, "an STFT of a signal whose length is known only when the engine runs")
    step_value = node.inputs[1]
    known_step = ctx.constant_of(step_value)
    window_value = node.inputs[2] if len(node.inputs) > 2 else None
    window = ctx.get(window_value, node) if window_value is not None else None
    length = _constant_int(ctx, node, 3, "frame_length")
    if length is None:
        if window is None or int(window.shape[0]) == -1:
            raise unsupported(node, "an STFT without frame_length whose window length is not known")
        length = int(window.shape[0])
    if known_step is not None:
        step = int(np.asarray(known_step).reshape(-1)[0])
        frames = 1 + (shape[1] - length) // step if step >= 1 else 0
        if frames < 1:
            raise unsupported(node, f"an STFT of {shape[1]} samples in frames of {length} every {step}")
        offsets = ctx.constant((np.arange(frames)[:, None] * step + np.arange(length)[None, :]).astype(np.int32),
                               node, "offsets")
    else:
        offsets = _offsets(ctx, node, ctx.get(step_value, node), shape[1], length)
    framed = ctx.out(ctx.network.add_gather(signal, offsets, 1), node, "frames")  # [B, frames, L, c]
    if window is not None:
        window = ctx.reshape(ctx.cast(window, signal.dtype, node, "window_cast"), [1, 1, length, 1], node,
                             "window4")
        framed = ctx.elementwise(framed, window, "PROD", node, "windowed")
    onesided = bool(attr(node, "onesided"))
    ctx.set(node.outputs[0], dft_along(ctx, node, framed, 2, length, False, onesided))

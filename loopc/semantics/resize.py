"""Resize as ONNX defines it and as TensorRT's resize layer computes it.

Both resize one axis at a time: an output position x maps to an input coordinate (a coordinate
transformation), and the output reads the input pixels around it with weights (one tap for nearest,
after a rounding; two for linear; four for cubic, from Keys' kernel). ONNX maps x through the *scale* it
was given; TensorRT through the ratio of the axis' *lengths* (its documented formulas)::

    ALIGN_CORNERS  x * (in - 1) / (out - 1)
    ASYMMETRIC     x * in / out
    HALF_PIXEL     (x + 0.5) * in / out - 0.5

TensorRT's UPPER single-pixel selector maps every coordinate of an output axis of length 1 to 0.

Keys' kernel and the roundings are written for any numbers with ``+`` and ``*`` (and, for the roundings, a
floor and a ceiling): NumPy arrays here, and graph values that build the same ops in the passes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

import numpy as np


class Number(Protocol):
    """What Keys' kernel needs of its distances: NumPy arrays have it, and so do the graph values the passes
    wrap to build ops."""

    def __add__(self, other: Any, /) -> Any: ...
    def __mul__(self, other: Any, /) -> Any: ...
    def __rmul__(self, other: Any, /) -> Any: ...


N = TypeVar("N", bound=Number)

# --- shared by both: Keys' cubic kernel, roundings ------------------------------------------------------


def keys_near(d: N, a: float) -> N:
    """Keys' cubic kernel at distance ``0 <= d <= 1`` from a tap, coefficient ``a``: ((a + 2) d − (a + 3)) d² + 1."""
    return cast(N, ((a + 2) * d + -(a + 3)) * (d * d) + 1.0)


def keys_far(d: N, a: float) -> N:
    """Keys' cubic kernel at distance ``1 < d < 2`` from a tap: ((a d − 5a) d + 8a) d − 4a."""
    return cast(N, ((a * d + -5 * a) * d + 8 * a) * d + -4 * a)


def keys(d: np.ndarray, a: float) -> np.ndarray:
    """Keys' kernel at signed distances ``d`` (zero from a distance of 2 on)."""
    d = np.abs(d)
    return np.where(d <= 1, keys_near(d, a), np.where(d < 2, keys_far(d, a), 0.0))


def keys_taps(t: np.ndarray, a: float) -> np.ndarray:
    """Keys' weights of the taps at -1, 0, 1, 2 for fractional offsets ``t`` in [0, 1): [4, *t.shape]."""
    return np.stack([keys_far(t + 1, a), keys_near(t, a), keys_near(1 - t, a), keys_far(2 - t, a)])


#: A rounding: the shift added to a coordinate, then the ONNX op ("Floor" or "Ceil") that rounds it.
Rounding = tuple[float, str]

_ROUND: dict[str, Callable[[np.ndarray], np.ndarray]] = {"Floor": np.floor, "Ceil": np.ceil}


def rounded(coord: np.ndarray, rounding: Rounding) -> np.ndarray:
    """``coord`` rounded by ``rounding`` (as the graph computes it: the shift added only when not 0)."""
    shift, op = rounding
    return _ROUND[op](coord + shift if shift else coord)


# --- ONNX's Resize --------------------------------------------------------------------------------------

#: ONNX's nearest_mode → its rounding of the mapped coordinate (round_prefer_floor: ties go down).
NEAREST: dict[str, Rounding] = {"floor": (0.0, "Floor"), "ceil": (0.0, "Ceil"), "round_prefer_floor": (-0.5, "Ceil"),
                                "round_prefer_ceil": (0.5, "Floor")}


def onnx_coordinates(transform: str, n_in: int, n_out: int, scale: float, width: float,
                     crop: tuple[float, float] = (0.0, 1.0)) -> np.ndarray:
    """The input coordinate ONNX's reference maps each output position to (its formulas, in float64);
    ``width`` is the unrounded output length, ``scale`` × ``n_in`` (exactly ``n_out`` for sizes), and
    ``crop`` tf_crop_and_resize's region of the axis, as fractions of its last index."""
    x = np.arange(n_out, dtype=np.float64)
    if transform == "tf_crop_and_resize":  # in float32, as the roi is: its ties (1.5 from 0.3 · 5) are float32's
        start, end, last = np.float32(crop[0]), np.float32(crop[1]), np.float32(n_in - 1)
        if width == 1:
            moved = np.full(n_out, (end - start) * last / np.float32(2), np.float32)
        else:
            moved = x.astype(np.float32) * (end - start) * last / np.float32(width - 1)
        return (moved + start * last).astype(np.float64)
    if transform == "align_corners":
        return np.zeros(n_out) if width == 1 else x * (n_in - 1) / (width - 1)
    if transform == "asymmetric":
        return x / scale
    if transform == "pytorch_half_pixel" and width == 1:
        return np.full(n_out, -0.5)
    offset = n_in / 2 * (1 - n_out / width) if transform == "half_pixel_symmetric" else 0.0
    return offset + (x + 0.5) / scale - 0.5


# --- TensorRT's resize layer ----------------------------------------------------------------------------

#: How many innermost axes TensorRT's resize may change in each mode (its supported configurations).
TRT_RESIZABLE = {"NEAREST": 3, "LINEAR": 3, "CUBIC": 2}
#: TensorRT's ResizeRoundMode → its rounding of the mapped coordinate.
TRT_ROUNDING: dict[str, Rounding] = {"HALF_UP": (0.5, "Floor"), "HALF_DOWN": (-0.5, "Ceil"), "FLOOR": (0.0, "Floor"),
                                     "CEIL": (0.0, "Ceil")}
#: TensorRT's ResizeCoordinateTransformation names.
TRT_TRANSFORMS = ("ALIGN_CORNERS", "ASYMMETRIC", "HALF_PIXEL")


def trt_coordinates(transform: str, selector: str, n_in: int, n_out: int) -> np.ndarray:
    """The input coordinate (float64) TensorRT maps each output position of an axis to; ``transform`` one of
    :data:`TRT_TRANSFORMS`."""
    x = np.arange(n_out, dtype=np.float64)
    if n_out < 2 and selector == "UPPER":
        return np.zeros(n_out)
    assert transform in TRT_TRANSFORMS, transform
    return from_lengths(transform.lower(), x, n_in, n_out, max, lambda longer, x: x)


def from_lengths(transform: str, x: N, n_in: Any, n_out: Any, maximum: Callable[[Any, Any], Any],
                 zero_unless_longer: Callable[[Any, N], N]) -> N:
    """The input coordinate output position ``x`` maps to when an axis of length ``n_in`` becomes ``n_out``:
    TensorRT's formulas (module docstring), which are ONNX's when the sizes are given (its scale is then
    ``n_out / n_in``), with ONNX's ``pytorch_half_pixel`` too. Written once for NumPy (numbers and arrays) and
    for graph values (the passes that resize inside loops): ``maximum`` is the larger of two, and
    ``zero_unless_longer(n_out, c)`` is ``c`` where ``n_out > 1``, else 0 (a one-long output reads position 0)."""
    if transform == "align_corners":  # a one-long output reads position 0: x is 0 there
        return x * ((n_in - 1) / maximum(n_out - 1, 1))
    ratio = n_in / n_out
    if transform == "asymmetric":
        return x * ratio
    centred = (x + 0.5) * ratio - 0.5
    return zero_unless_longer(n_out, centred) if transform == "pytorch_half_pixel" else centred

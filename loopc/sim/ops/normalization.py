"""Local response normalization (ILRNLayer) across channels.

TensorRT's operator reference gives, for an input [D_0, ..., D_n] whose channel axis is n - 2 (the
third from last), ``y = x / (k + alpha / w * sum(x_j^2))^beta`` over the ``w`` channels centred on
each one, clipped at the edges. The reference's worked example (window 3, alpha 1, beta 1, k 0.1
on channels 0..4: 0.56603765 at channel 1) fixes the scaling at alpha / w and the window at
(w - 1) / 2 channels each side, which its formula's sum bounds state loosely.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from loopc.errors import SimulationError
from loopc.sim.ops._common import widen
from loopc.sim.registry import Kernel, simulates


def window_sums(squares: np.ndarray, axis: int, window: int) -> np.ndarray:
    """The sum of each element's ``window`` neighbours along ``axis`` (itself centred), zeros past the ends."""
    half = window // 2
    pad = [(0, 0)] * squares.ndim
    pad[axis] = (half, half)
    padded = np.pad(squares, pad)
    return sliding_window_view(padded, window, axis=axis).sum(axis=-1)


@simulates("LRN")
def lrn(layer: Any) -> Kernel:
    window = int(layer.window_size)
    alpha, beta, k = float(layer.alpha), float(layer.beta), float(layer.k)

    def run(ins: Any) -> list[np.ndarray]:
        x = widen(ins[0])
        if x.ndim < 3:
            raise SimulationError(f"LRN needs an input of rank 3 or more (channels third from last), got {x.ndim}")
        sums = window_sums(x * x, x.ndim - 3, window)
        with np.errstate(all="ignore"):
            return [x / (k + (alpha / window) * sums) ** beta]

    return run

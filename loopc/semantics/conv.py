"""How TensorRT's convolution and deconvolution layers pad and crop, as IConvolutionLayer and
IDeconvolutionLayer document it: the simulator computes the layers by it, the build report counts their outputs.

Shorthand of TensorRT's PaddingMode: I input size, B / A pre / post padding, S stride, F filter,
D dilation, DK = 1 + D (F - 1) the dilated filter, M = I + B + A.

* Convolution: EXPLICIT_ROUND_DOWN / _UP give floor / ceil((M - DK) / S) + 1 outputs (a last window
  that runs past the padding reads zeros); SAME_UPPER / SAME_LOWER give ceil(I / S) outputs with
  P = floor((I - 1) / S) S + DK - I padding, the odd element after (UPPER) or before (LOWER); a
  negative P (a dilated filter shorter than the stride) has no documented meaning and is an error.
* Deconvolution: the full output is (I - 1) S + DK long; EXPLICIT modes drop B elements at its start
  and A at its end; SAME modes drop P = max(DK - S, 0) the same way as a convolution pads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Pads = list[tuple[int, int]]


class NoWindows(ValueError):
    """The sizes and padding give a layer no output, or a padding TensorRT documents no meaning for."""


@dataclass(frozen=True)
class Window:
    """A layer's window over its spatial axes: filter, stride, dilation, padding and TensorRT's padding mode."""

    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    pre: tuple[int, ...]
    post: tuple[int, ...]
    mode: str

    @property
    def extents(self) -> tuple[int, ...]:
        """DK per spatial axis: how far one window reaches."""
        return tuple(1 + d * (f - 1) for f, d in zip(self.kernel, self.dilation))


def conv_padding(w: Window, sizes: Sequence[int]) -> Pads:
    """Zeros before and after each spatial axis of a convolution's input, by the padding mode."""
    pads: Pads = []
    for i, size in enumerate(sizes):
        s, dk = w.stride[i], w.extents[i]
        if w.mode in ("SAME_UPPER", "SAME_LOWER"):
            total = (size - 1) // s * s + dk - size
            if total < 0:  # TensorRT's formula gives no meaning to negative padding
                raise NoWindows(f"{w.mode} padding of axis {i} is {total} (a dilated kernel of {dk} shorter "
                                f"than the stride {s}); TensorRT documents no meaning for it")
            pads.append(split_pads(total, w.mode == "SAME_UPPER"))
            continue
        before, after = w.pre[i], w.post[i]
        padded = size + before + after
        if padded < dk:
            raise NoWindows(f"spatial axis {i} is {padded} long with padding, shorter than the kernel's {dk}")
        if w.mode == "EXPLICIT_ROUND_UP":  # the last window may run past the padding: it reads zeros there
            count = -(-(padded - dk) // s) + 1
            after += (count - 1) * s + dk - padded
        pads.append((before, after))
    return pads


def conv_output_sizes(w: Window, sizes: Sequence[int]) -> list[int]:
    """A convolution's output positions per spatial axis."""
    return [(size + before + after - extent) // stride + 1
            for size, (before, after), stride, extent in zip(sizes, conv_padding(w, sizes), w.stride, w.extents)]


def deconv_cropping(w: Window, sizes: Sequence[int]) -> Pads:
    """Elements dropped from the start and end of each axis of a deconvolution's full output."""
    crops: Pads = []
    for i, size in enumerate(sizes):
        s, dk = w.stride[i], w.extents[i]
        if w.mode in ("SAME_UPPER", "SAME_LOWER"):
            before, after = split_pads(max(dk - s, 0), w.mode == "SAME_UPPER")
        else:
            before, after = w.pre[i], w.post[i]
        if (size - 1) * s + dk - before - after < 1:
            raise NoWindows(f"spatial axis {i}: padding {before} + {after} leaves no output of the "
                            f"{(size - 1) * s + dk} deconvolved elements")
        crops.append((before, after))
    return crops


def split_pads(total: int, upper: bool) -> tuple[int, int]:
    """``total`` padding as (before, after) the SAME way (ONNX's and TensorRT's alike): the odd element after for
    SAME_UPPER, before for SAME_LOWER."""
    small = total // 2
    return (small, total - small) if upper else (total - small, small)

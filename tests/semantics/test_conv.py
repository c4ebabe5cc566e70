"""TensorRT's convolution padding and deconvolution cropping (:mod:`loopc.semantics.conv`), against values worked
by hand from IConvolutionLayer's and IDeconvolutionLayer's documented formulas."""

from __future__ import annotations

import pytest

from loopc.semantics.conv import NoWindows, Window, conv_output_sizes, conv_padding, deconv_cropping


def _window(mode: str, kernel: int = 3, stride: int = 2, dilation: int = 1, pre: int = 0, post: int = 0) -> Window:
    return Window((kernel,), (stride,), (dilation,), (pre,), (post,), mode)


@pytest.mark.parametrize(("mode", "size", "pads", "outputs"), [
    # P = floor((I - 1) / S) S + DK - I; ceil(I / S) outputs
    ("SAME_UPPER", 5, [(1, 1)], [3]),   # P = 2*2 + 3 - 5 = 2
    ("SAME_UPPER", 6, [(0, 1)], [3]),   # P = 2*2 + 3 - 6 = 1, the odd element after
    ("SAME_LOWER", 6, [(1, 0)], [3]),   # ... and before
    # floor / ceil((M - DK) / S) + 1 outputs, M = 6: floor(3 / 2) + 1 = 2, ceil(3 / 2) + 1 = 3
    ("EXPLICIT_ROUND_DOWN", 6, [(0, 0)], [2]),
    ("EXPLICIT_ROUND_UP", 6, [(0, 1)], [3]),  # the last window reads one zero past the input
])
def test_convolution_padding(mode: str, size: int, pads: list[tuple[int, int]], outputs: list[int]) -> None:
    assert conv_padding(_window(mode), [size]) == pads
    assert conv_output_sizes(_window(mode), [size]) == outputs


def test_a_dilated_kernel_shorter_than_its_stride_has_no_same_padding() -> None:
    # F = 1, S = 2, I = 4: P = 1*2 + 1 - 4 = -1, which TensorRT gives no meaning
    with pytest.raises(NoWindows, match="SAME_UPPER padding of axis 0 is -1"):
        conv_padding(_window("SAME_UPPER", kernel=1), [4])


def test_an_input_shorter_than_its_kernel_has_no_windows() -> None:
    with pytest.raises(NoWindows, match="2 long with padding, shorter than the kernel's 5"):
        conv_padding(_window("EXPLICIT_ROUND_DOWN", kernel=3, dilation=2), [2])


@pytest.mark.parametrize(("mode", "pre", "post", "crops"), [
    ("SAME_UPPER", 0, 0, [(0, 1)]),           # P = max(DK - S, 0) = 1, the odd element after
    ("SAME_LOWER", 0, 0, [(1, 0)]),
    ("EXPLICIT_ROUND_DOWN", 2, 1, [(2, 1)]),  # B and A dropped as given
])
def test_deconvolution_cropping(mode: str, pre: int, post: int, crops: list[tuple[int, int]]) -> None:
    assert deconv_cropping(_window(mode, pre=pre, post=post), [3]) == crops


def test_a_deconvolution_cropped_to_nothing_is_refused() -> None:
    # I = 1, S = 2, F = 3: the full output is 3 long; 2 + 1 cropped leaves none
    with pytest.raises(NoWindows, match="leaves no output of the 3 deconvolved elements"):
        deconv_cropping(_window("EXPLICIT_ROUND_DOWN", pre=2, post=1), [1])

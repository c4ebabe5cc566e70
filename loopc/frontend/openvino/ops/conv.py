"""Convolutions: Convolution, GroupConvolution, ConvolutionBackpropData, GroupConvolutionBackpropData.

Each is ONNX's Conv or ConvTranspose. The grouped forms' filters ``[G, C_out/G, C_in/G, k...]`` (and
``[G, C_in/G, C_out/G, k...]`` transposed) are ONNX's ``[G * ..., ..., k...]`` with the group axis merged
into the next, which is a Reshape of contiguous data.

A transposed convolution is the "full" one (no pads, ``stride * (X - 1) + dilated kernel`` long) cut to
start at ``begin``, zeros past its end. OpenVINO's CPU plugin (measured; its spec says otherwise for
explicit pads and for the totals' halves) cuts so:

* without ``output_shape``: explicit pads cut ``[pads_begin, full - pads_end + output_padding)``;
  same_upper, same_lower and valid cut nothing.
* with ``output_shape`` the output is that long and starts at ``pads_begin`` (explicit), 0 (valid), or,
  with ``total = full + output_padding - output_shape``, at ``max(ceil(total / 2), 0)`` (same_upper) or
  ``max(floor(total / 2), 0)`` (same_lower).

An end past the full output adds zeros, which ONNX's pads cannot say: that part is a Pad after the
ConvTranspose.
"""

from __future__ import annotations

import numpy as np

from loopc.frontend.openvino.importer import Op
from loopc.frontend.openvino.ops._common import const_ints, dim, optional_input
from loopc.frontend.openvino.ops._window import spatial_list, spatial_rank, window
from loopc.frontend.openvino.registry import translates
from loopc.ir import Value


def _kernel(op: Op, filters: Value, n: int) -> list[int]:
    """The filters' last ``n`` dims, which must be known to build."""
    rank = op.rank(1)
    sizes = [dim(filters, rank - n + k) for k in range(n)]
    if any(size is None for size in sizes):
        raise op.unsupported(f"the filters' spatial dims {filters.shape} are not static; TensorRT builds a "
                             f"convolution with a fixed kernel")
    return [int(size) for size in sizes if size is not None]


def _check_filters_rank(op: Op, n: int, grouped: bool) -> None:
    want = n + 2 + int(grouped)
    if op.rank(1) != want:
        raise op.error(f"the filters have rank {op.rank(1)}; with {n} spatial axes they need rank {want}")


def _merge_groups(op: Op, filters: Value) -> tuple[Value, int]:
    """``[G, A, B, k...]`` filters as ``[G * A, B, k...]``, and G."""
    groups = dim(filters, 0)
    if groups is None:
        raise op.unsupported("the filters' group count (dim 0) is not static")
    rest = [dim(filters, k) for k in range(2, op.rank(1))]
    if all(d is not None for d in rest):
        target = op.const([-1] + rest, np.int64)
    else:
        target = op.op("Concat", [op.const([-1], np.int64), op.op("Shape", [filters], {"start": 2})], {"axis": 0})
    return op.op("Reshape", [filters, target]), groups


def _convolution(op: Op, grouped: bool) -> list[Value]:
    op.expect_inputs(2)
    x, filters = op.inputs
    n = spatial_rank(op)
    _check_filters_rank(op, n, grouped)
    group = 1
    if grouped:
        filters, group = _merge_groups(op, filters)
    w = window(op, x, _kernel(op, op.inputs[1], n))
    return [op.op("Conv", [x, filters], {**w.attrs(), "group": group})]


@translates("Convolution")
def convolution(op: Op) -> list[Value]:
    return _convolution(op, grouped=False)


@translates("GroupConvolution")
def group_convolution(op: Op) -> list[Value]:
    return _convolution(op, grouped=True)


def _transposed(op: Op, grouped: bool) -> list[Value]:
    op.expect_inputs(2, 3)
    x, filters = op.inputs[:2]
    n = spatial_rank(op)
    _check_filters_rank(op, n, grouped)
    kernel = _kernel(op, filters, n)
    group = 1
    if grouped:
        filters, group = _merge_groups(op, filters)
    strides = spatial_list(op, "strides", n, 1)
    dilations = spatial_list(op, "dilations", n, 1)
    extra = spatial_list(op, "output_padding", n, 0)
    mode = op.choice_attr("auto_pad", ("explicit", "notset", "same_upper", "same_lower", "valid"), "explicit")
    if any(v < 1 for v in strides + dilations):
        raise op.error(f"strides {strides} and dilations {dilations} must be positive")
    if any(v < 0 for v in extra):
        raise op.error(f"output_padding {extra} must not be negative")
    full = None
    if optional_input(op, 2) is not None:
        full = _full_lengths(op, x, kernel, strides, dilations)
        wanted = const_ints(op, 2, "output_shape")
        if len(wanted) != n:
            raise op.error(f"output_shape {wanted} has {len(wanted)} values for {n} spatial axes")
        begin = [_shape_begin(op, mode, k, length + pad - out)
                 for k, (length, pad, out) in enumerate(zip(full, extra, wanted))]
        end = [length - b - out for length, b, out in zip(full, begin, wanted)]
    elif mode in ("explicit", "notset"):
        begin, end = spatial_list(op, "pads_begin", n, 0), spatial_list(op, "pads_end", n, 0)
        if any(p < 0 for p in begin + end):
            raise op.error(f"pads {begin} {end} must not be negative")
        end = [e - p for e, p in zip(end, extra)]  # output_padding un-crops the end
    else:
        begin, end = [0] * n, [-p for p in extra]
    attrs = {"kernel_shape": kernel, "strides": strides, "dilations": dilations, "group": group,
             "pads": [max(p, 0) for p in begin + end]}
    y = op.op("ConvTranspose", [x, filters], attrs)
    widen = [max(-p, 0) for p in end]
    if any(widen):
        y = op.op("Pad", [y, op.const([0] * (n + 2) + [0, 0] + widen, np.int64)], {"mode": "constant"})
    return [y]


def _full_lengths(op: Op, x: Value, kernel: list[int], strides: list[int], dilations: list[int]) -> list[int]:
    """The uncut output's spatial lengths; needed (so the input's dims must be static) to meet output_shape."""
    sizes = [dim(x, 2 + k) for k in range(len(kernel))]
    if any(size is None for size in sizes):
        raise op.unsupported(f"the input's spatial dims {x.shape} are not static; the cut that gives output_shape "
                             f"depends on them")
    return [s * (int(size) - 1) + (k - 1) * d + 1 for size, k, s, d in zip(sizes, kernel, strides, dilations)
            if size is not None]


def _shape_begin(op: Op, mode: str, axis: int, total: int) -> int:
    if mode in ("explicit", "notset"):
        return spatial_list(op, "pads_begin", op.rank(0) - 2, 0)[axis]
    if mode == "valid":
        return 0
    return max(total - total // 2 if mode == "same_upper" else total // 2, 0)


@translates("ConvolutionBackpropData")
def convolution_backprop_data(op: Op) -> list[Value]:
    return _transposed(op, grouped=False)


@translates("GroupConvolutionBackpropData")
def group_convolution_backprop_data(op: Op) -> list[Value]:
    return _transposed(op, grouped=True)

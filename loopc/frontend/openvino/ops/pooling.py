"""Pools: MaxPool (1, 8, 14) and AvgPool (1, 14) as ONNX's MaxPool and AveragePool.

OpenVINO's rounding types count windows differently from ONNX's ``ceil_mode`` (measured on its CPU
plugin): ``ceil`` keeps every window ``ceil((padded - dilated kernel) / stride) + 1`` gives, even one
that starts past the input; ``ceil_torch`` drops a last window that starts in the end padding, as
ONNX's ceil_mode does; an including-pad average divides by the whole kernel, even where a ceil
window runs past the end padding. So with the spatial dims known, loopc works out the window count
itself and emits floor rounding with the end pads that give exactly that count — a window's values
do not depend on pads it does not reach, and the extra pads count as zeros in an including-pad
average just as OpenVINO counts them. A window wholly in the padding has no ONNX meaning (OpenVINO
gives -FLT_MAX, or 0 / 0): loopc refuses it.

MaxPool-8's indices count in the unpadded input flattened from ``axis``. TensorRT's pooling gives none,
so they are found from the window's taps (:func:`max_indices`) — only when something reads them.
"""

from __future__ import annotations

import numpy as np

from loopc.frontend.openvino.importer import Op
from loopc.frontend.openvino.ops._common import axis as normalize_axis, cast, dim, output_used
from loopc.frontend.openvino.ops._window import Window, spatial_list, spatial_rank, window
from loopc.frontend.openvino.registry import translates
from loopc.ir import Value


def _rounding(op: Op) -> str:
    choices = ("floor", "ceil", "ceil_torch") if op.version >= 14 else ("floor", "ceil")
    return op.choice_attr("rounding_type", choices, "floor")


def _pool_window(op: Op, dilated: bool, empty_ok: bool) -> tuple[Window, int]:
    """The window with floor rounding's end pads, and ONNX's ceil_mode (1 only when the dims are unknown)."""
    op.expect_inputs(1)
    x = op.inputs[0]
    n = spatial_rank(op)
    kernel = spatial_list(op, "kernel", n)
    w = window(op, x, kernel, spatial_list(op, "dilations", n, 1) if dilated else [1] * n)
    rounding = _rounding(op)
    sizes = [dim(x, 2 + k) for k in range(n)]
    if w.auto_pad is not None:  # same_upper/same_lower: ceil(in / stride) windows, unless ceil adds one
        for k, (s, d) in enumerate(zip(w.strides, w.dilations)):
            if rounding == "ceil" and (w.kernel[k] - 1) * d + 1 < s:
                raise op.unsupported(f"auto_pad={w.auto_pad} with rounding_type='ceil' and a stride {s} longer than "
                                     f"the kernel along spatial axis {k}: OpenVINO keeps a window SAME padding has "
                                     "not")
        return w, 0
    if any(size is None for size in sizes):
        return w, _dynamic_ceil_mode(op, w, rounding, empty_ok)
    for k, size in enumerate(sizes):
        assert size is not None
        w.end[k] = _end_pad(op, k, size, w, rounding, empty_ok)
    return w, 0


def _end_pad(op: Op, k: int, size: int, w: Window, rounding: str, empty_ok: bool) -> int:
    """The end pad that makes floor rounding give OpenVINO's window count along spatial axis ``k``."""
    s, d, begin = w.strides[k], w.dilations[k], w.begin[k]
    span = (w.kernel[k] - 1) * d + 1
    padded = size + begin + w.end[k]
    if padded < span:
        raise op.error(f"the kernel spans {span} along spatial axis {k}, more than the padded length {padded}")
    count = (padded - span) // s + 1 if rounding == "floor" else -(-(padded - span) // s) + 1
    if rounding == "ceil_torch" and (count - 1) * s >= size + begin:
        count -= 1
    taps = (np.arange(count)[:, None] * s - begin + np.arange(w.kernel[k])[None, :] * d)
    # a window must read the input, or (an average counting the pads) at least the pads, not only past them
    inside = ((taps >= (-begin if empty_ok else 0)) & (taps < size + (w.end[k] if empty_ok else 0))).any(axis=1)
    if not inside.all():
        raise op.unsupported(f"window {int(np.argmin(inside))} along spatial axis {k} covers only padding "
                             f"(OpenVINO gives -FLT_MAX or 0/0 there; ONNX and TensorRT give no such value)")
    return max((count - 1) * s + span - size - begin, 0)


def _dynamic_ceil_mode(op: Op, w: Window, rounding: str, empty_ok: bool) -> int:
    """Unknown spatial dims: ONNX's ceil_mode means OpenVINO's rounding only where no window can start in
    the end padding, and no window can lie in the padding only where the pads are shorter than the kernel."""
    for k, (s, d, begin, end) in enumerate(zip(w.strides, w.dilations, w.begin, w.end)):
        span = (w.kernel[k] - 1) * d + 1
        if not empty_ok and (begin >= span or end >= span or d > 1 and (begin or end)):
            raise op.unsupported(f"pads {w.begin} {w.end} may leave a window wholly in the padding along spatial "
                                 f"axis {k}, and the spatial dims are not static to tell")
        if rounding == "ceil" and s + end > span:
            raise op.unsupported(f"rounding_type='ceil' with spatial dims that are not static: a window may "
                                 f"start in the end padding along axis {k} (stride {s} plus pad {end} exceeds "
                                 f"kernel {span}), which OpenVINO keeps and ONNX drops")
    return int(rounding != "floor")


@translates("MaxPool", 1, 8, 14)
def max_pool(op: Op) -> list[Value]:
    x = op.inputs[0] if op.inputs else None
    w, ceil_mode = _pool_window(op, dilated=op.version >= 8, empty_ok=False)
    attrs = {**w.attrs(), "ceil_mode": ceil_mode}
    if op.version < 8:
        return [op.op("MaxPool", [x], attrs)]
    index_type = op.dtype_attr("index_element_type") if "index_element_type" in op.layer.data else np.dtype(np.int64)
    if index_type not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise op.error(f"index_element_type {index_type} is not i32 or i64")
    assert x is not None
    rank = op.rank(0)
    start = normalize_axis(op, op.int_attr("axis", 0), rank)
    pooled = op.op("MaxPool", [x], attrs)
    if not output_used(op, 1):
        _, indices = op.em.multi("MaxPool", [x], 2, attrs)  # nothing reads it: a dead node that goes
        return [pooled, indices]
    indices = max_indices(op, x, pooled, w, start)
    if start > 1:
        inner = [dim(x, k) for k in range(start, rank)]
        static = [d for d in inner if d is not None]
        if len(static) != len(inner):
            raise op.unsupported(f"axis={start} counts indices within dims {x.shape} that are not static")
        indices = op.op("Mod", [indices, op.const(int(np.prod(static)), np.int64)], {"fmod": 0})
    return [pooled, cast(op, indices, index_type)]


def max_indices(op: Op, x: Value, pooled: Value, w: Window, start: int) -> Value:
    """Where each maximum is, counted from axis 0 (``start`` 0) or within each image (1), from the taps.

    TensorRT's pooling gives no indices, so each window tap is a strided Slice of the input padded with
    -inf; the index is the first tap in the window's row-major order that equals the maximum (a padding
    tap never does), its flat position a constant per tap. Needs the spatial dims static.
    """
    sizes = [dim(x, 2 + k) for k in range(len(w.kernel))]
    if w.auto_pad is not None or any(size is None for size in sizes):
        raise op.unsupported("the indices output with spatial dims that are not static: loopc finds where each "
                             "maximum is from the window's taps, which need the dims")
    lengths = [int(size) for size in sizes if size is not None]
    n = len(lengths)
    dtype = x.dtype if x.dtype is not None else np.dtype(np.float32)
    lowest = -np.inf if dtype.kind == "f" else np.iinfo(dtype.name).min
    padded = op.op("Pad", [x, op.const([0, 0] + w.begin + [0, 0] + w.end, np.int64), op.const(lowest, dtype)],
                   {"mode": "constant"})
    counts = [(size + b + e - (k - 1) * d - 1) // s + 1
              for size, b, e, k, d, s in zip(lengths, w.begin, w.end, w.kernel, w.dilations, w.strides)]
    place = [int(np.prod(lengths[k + 1:])) for k in range(n)]
    axes = op.const(list(range(2, 2 + n)), np.int64)
    index: Value | None = None
    for tap in reversed(list(np.ndindex(*w.kernel))):
        first = [t * d for t, d in zip(tap, w.dilations)]
        last = [f + (c - 1) * s + 1 for f, c, s in zip(first, counts, w.strides)]
        values = op.op("Slice", [padded, op.const(first, np.int64), op.const(last, np.int64), axes,
                                 op.const(w.strides, np.int64)])
        grids = np.meshgrid(*[np.arange(c) * s - b + f for c, s, b, f in zip(counts, w.strides, w.begin, first)],
                            indexing="ij")
        flat = op.const(sum(g * p for g, p in zip(grids, place)).reshape([1, 1] + counts).astype(np.int64))
        index = flat if index is None else op.op("Where", [op.op("Equal", [values, pooled]), flat, index])
    assert index is not None
    if start > 1:
        return index
    channels = dim(x, 1)
    if channels is None:
        raise op.unsupported(f"axis={start} counts indices across channels, and the channel count is not static")
    area = int(np.prod(lengths))
    index = op.op("Add", [index, op.const(np.arange(channels).reshape([1, channels] + [1] * n) * area, np.int64)])
    if start == 1:
        return index
    images = op.op("Range", [op.const(0, np.int64), op.em.dim(x, 0), op.const(1, np.int64)])
    images = op.op("Reshape", [images, op.const([-1] + [1] * (n + 1), np.int64)])
    return op.op("Add", [index, op.op("Mul", [images, op.const(channels * area, np.int64)])])


@translates("AvgPool", 1, 14)
def avg_pool(op: Op) -> list[Value]:
    include_pad = not op.bool_attr("exclude-pad", False)
    w, ceil_mode = _pool_window(op, dilated=False, empty_ok=include_pad)
    if include_pad and ceil_mode:
        raise op.unsupported("rounding_type ceil with exclude-pad=false and spatial dims that are not static: "
                             "OpenVINO divides a window past the end padding by the whole kernel, ONNX by less")
    attrs = {**w.attrs(), "ceil_mode": ceil_mode, "count_include_pad": int(include_pad)}
    return [op.op("AveragePool", [op.inputs[0]], attrs)]

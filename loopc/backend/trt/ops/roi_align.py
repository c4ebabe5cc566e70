"""RoiAlign, composed from layers TensorRT has (it has no RoiAlign layer).

ONNX's RoiAlign (as onnxruntime and ONNX's reference compute it) samples each output bin of roi r at
s×s points, y = start + i·bin + (iy + ½)·bin / s (x likewise). A point beyond [-1, H] (or [-1, W])
reads nothing; one within is clamped into [0, H-1] and read bilinearly from its corners y_low =
floor(y) and y_high = min(y_low + 1, H-1) with weights 1 - ly and ly. ``avg`` averages the weighted
sums over the bin; ``max`` takes the largest single weighted corner, w_k · v_k, over the bin's
points (onnxruntime's and the node tests' max, not the max of interpolated values).

Bilinear weights are separable, so each axis gets, per roi, the row of its 2·s·out corner indices
and weights (in the order bin, sample, corner) from elementwise layers on the rois. The corners'
values are one Gather from the features laid out [N·H·W, C] at the flat index (b·H + y)·W + x, an
exact read; the weights multiply them, and a Reduce over each bin's (2s)×(2s) corners gives avg
(sum / s², as onnxruntime divides) or max.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.ops.reduce import mask
from loopc.backend.trt.registry import converter
from loopc.ir import Node, text_attr
from loopc.semantics.attributes import attr
from loopc.trt import trt

#: coordinate_transformation_mode → the shift subtracted from the scaled roi corners.
_SHIFT = {"half_pixel": 0.5, "output_half_pixel": 0.0}


def _refusal(node: Node) -> str | None:
    mode = text_attr(node, "mode", "avg")
    if mode not in ("avg", "max"):
        return f"mode={mode!r} (RoiAlign pools with avg or max)"
    coords = text_attr(node, "coordinate_transformation_mode", "half_pixel")
    if coords not in _SHIFT:
        return f"coordinate_transformation_mode={coords!r}"
    if int(node.attrs.get("sampling_ratio", 0)) <= 0:
        return ("sampling_ratio=0 (adaptive: the number of samples per bin depends on each roi's size, which a "
                "TensorRT network cannot shape per roi); export with a fixed sampling_ratio (torchvision's default is 2)")
    return None


def _axis_corners(ctx: ConversionContext, node: Node, rois: Any, length: Any, column: int, out: int,
                  ratio: int, scale: float, shift: float, at_least_one: bool, axis: str) -> tuple[Any, Any]:
    """The corner indices (INT64) and weights (float32), each [R, out·ratio·2], of every roi's samples
    along one axis (``column`` is the roi's start coordinate on it, ``column + 2`` its end; ``length``
    is the axis's length as a float32 [1, 1]). Invalid samples (beyond [-1, length]) weigh 0."""
    def const(value: Any, what: str) -> Any:
        return ctx.constant(np.asarray(value, np.float32).reshape(1, -1), node, f"{axis}_{what}")

    def op(a: Any, b: Any, how: str, what: str) -> Any:
        return ctx.elementwise(a, b, how, node, f"{axis}_{what}")

    def corner(c: int) -> Any:
        return ctx.out(ctx.network.add_gather(rois, ctx.constant(np.array([c], np.int64), node, f"{axis}_col{c}"),
                                              1), node, f"{axis}_roi{c}")

    begin = op(op(corner(column), const(scale, "scale"), "PROD", "scaled0"), const(shift, "shift"), "SUB", "start")
    end = op(op(corner(column + 2), const(scale, "scale1"), "PROD", "scaled1"), const(shift, "shift1"), "SUB", "end")
    size = op(end, begin, "SUB", "size")
    if at_least_one:  # output_half_pixel forces malformed rois to 1x1
        size = op(size, const(1.0, "one"), "MAX", "size1")
    bin_size = op(size, const(float(out), "out"), "DIV", "bin")
    grid = np.indices((out, ratio, 2)).reshape(3, -1)  # bin, sample, corner
    # start + i·bin + (iy + ½)·bin / s, in onnxruntime's order of operations
    coord = op(op(begin, op(const(grid[0], "bins"), bin_size, "PROD", "offset"), "SUM", "bin_start"),
               op(op(const(grid[1] + 0.5, "samples"), bin_size, "PROD", "step"), const(float(ratio), "ratio"), "DIV",
                  "within"), "SUM", "coord")
    below = op(coord, const(-1.0, "minus_one"), "LESS", "below")
    beyond = op(coord, length, "GREATER", "beyond")
    valid = ctx.cast(ctx.unary(op(below, beyond, "OR", "outside"), "NOT", node, f"{axis}_inside"),
                     trt().float32, node, f"{axis}_valid")
    last = op(length, const(1.0, "one_l"), "SUB", "last")
    clamped = op(op(coord, const(0.0, "zero"), "MAX", "nonneg"), last, "MIN", "clamped")
    low = ctx.unary(clamped, "FLOOR", node, f"{axis}_low")
    frac = op(clamped, low, "SUB", "frac")
    high = op(op(low, const(1.0, "one_h"), "SUM", "next"), last, "MIN", "high")
    is_high = const(grid[2], "corner")
    index = op(low, op(is_high, op(high, low, "SUB", "gap"), "PROD", "step_up"), "SUM", "index_f")
    near = op(op(const(1.0, "one_w"), is_high, "SUB", "is_low"), op(const(1.0, "one_f"), frac, "SUB", "hy"), "PROD",
              "w_low")
    weight = op(op(near, op(is_high, frac, "PROD", "w_high"), "SUM", "w"), valid, "PROD", "weight")
    return ctx.cast(index, trt().int64, node, f"{axis}_index"), weight


@converter("RoiAlign", capability=_refusal)
def roi_align(ctx: ConversionContext, node: Node) -> None:
    x, rois, batch = (ctx.get(v, node) for v in node.inputs[:3])
    f32, i64 = trt().float32, trt().int64
    out_h, out_w = int(attr(node, "output_height")), int(attr(node, "output_width"))
    ratio = int(node.attrs["sampling_ratio"])
    scale = float(attr(node, "spatial_scale"))
    coords = text_attr(node, "coordinate_transformation_mode", "half_pixel")
    shift, at_least_one = _SHIFT[coords], coords == "output_half_pixel"
    channels = int(x.shape[1])

    data = ctx.cast(x, f32, node, "data")
    rois = ctx.cast(rois, f32, node, "rois")
    shape = ctx.shape_of(x, node)
    height, width = (ctx.reshape(ctx.gather1(shape, [a], node, what), [1, 1], node, f"{what}_2d")
                     for a, what in ((2, "height"), (3, "width")))
    rows, row_w = _axis_corners(ctx, node, rois, ctx.cast(height, f32, node, "height_f"), 1, out_h, ratio, scale,
                                shift, at_least_one, "y")
    cols, col_w = _axis_corners(ctx, node, rois, ctx.cast(width, f32, node, "width_f"), 0, out_w, ratio, scale,
                                shift, at_least_one, "x")

    # flat index (b·H + y)·W + x, [R, 2·s·out_h, 2·s·out_w], into the features laid out [N·H·W, C]
    b = ctx.unsqueeze(ctx.cast(batch, i64, node, "batch"), [1, 2], node, "batch_3d")
    y = ctx.unsqueeze(rows, [2], node, "rows_3d")
    xs = ctx.unsqueeze(cols, [1], node, "cols_3d")
    h3, w3 = (ctx.reshape(t, [1, 1, 1], node, f"{what}_3d") for t, what in ((height, "height"), (width, "width")))
    flat = ctx.elementwise(ctx.elementwise(ctx.elementwise(ctx.elementwise(b, h3, "PROD", node, "bh"), y, "SUM", node,
                                                          "bh_y"), w3, "PROD", node, "bhw"), xs, "SUM", node, "flat")
    layout = ctx.network.add_shuffle(data)
    layout.first_transpose = (0, 2, 3, 1)
    if channels >= 0:
        layout.reshape_dims = (-1, channels)
    else:
        minus_one = ctx.constant(np.array([-1], np.int64), node, "minus_one")
        layout.set_input(1, ctx.concat([minus_one, ctx.gather1(shape, [1], node, "channels")], node, "table_shape"))
    table = ctx.out(layout, node, "table")
    values = ctx.out(ctx.network.add_gather(table, flat, 0), node, "corners")

    weight = ctx.elementwise(ctx.unsqueeze(row_w, [2, 3], node, "row_w_4d"), ctx.unsqueeze(col_w, [1, 3], node,
                                                                                          "col_w_4d"),
                             "PROD", node, "corner_w")
    weighted = ctx.elementwise(values, weight, "PROD", node, "weighted")
    # no -1 wildcard: with no rois it would have no single solution
    inner = ctx.constant(np.array([out_h, 2 * ratio, out_w, 2 * ratio], np.int64), node, "bin_dims")
    bin_shape = ctx.concat([ctx.gather1(ctx.shape_of(weighted, node, "weighted_shape"), [0], node, "rois_count"),
                            inner, ctx.gather1(shape, [1], node, "channels")], node, "bins_shape")
    bins = ctx.reshape(weighted, bin_shape, node, "bins")
    mode = text_attr(node, "mode", "avg")
    how = trt().ReduceOperation.SUM if mode == "avg" else trt().ReduceOperation.MAX
    pooled = ctx.out(ctx.network.add_reduce(bins, how, mask([2, 4], 6), False), node, "pool")
    if mode == "avg":
        count = ctx.constant(np.full((1, 1, 1, 1), ratio * ratio, np.float32), node, "count")
        pooled = ctx.elementwise(pooled, count, "DIV", node, "mean")
    back = ctx.network.add_shuffle(pooled)
    back.first_transpose = (0, 3, 1, 2)
    result = ctx.out(back, node, "nchw" if x.dtype != f32 else "")
    ctx.set(node.outputs[0], ctx.cast(result, x.dtype, node) if x.dtype != f32 else result)

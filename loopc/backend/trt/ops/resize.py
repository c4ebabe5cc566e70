"""Resize (and Upsample, which the frontend rewrites into Resize) on IResizeLayer; GridSample on
IGridSampleLayer.

ONNX maps an output coordinate back through the *scale* it was given; TensorRT maps it through the
ratio of the axis' *lengths* (its documented formulas). They agree whenever input length × scale
is the output length. So a resize whose lengths are known at build time is checked axis by axis:
the input indices (nearest) or coordinates (linear, cubic) ONNX's reference computes must be the
ones TensorRT's formula gives. Where they are not, or the layer cannot take the form at all
(antialiasing, cubic on a third axis, an outer axis), the resize is built from gathers instead
(:mod:`loopc.backend.trt.ops.resize_taps`). Where lengths are known only at run time, only forms
the layer computes right for every length are taken: sizes (the scale *is* the ratio), or whole
scales ≥ 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext, np_dtype
from loopc.backend.trt.ops.resize_taps import MAX_TAPS, ambiguous, onnx_taps, resample
from loopc.backend.trt.registry import converter, unsupported
from loopc.ir import Node
from loopc.semantics.attributes import attr, text
from loopc.semantics.resize import TRT_RESIZABLE, TRT_ROUNDING, onnx_coordinates, rounded, trt_coordinates
from loopc.trt import trt

_MODES = {"nearest": "NEAREST", "linear": "LINEAR", "bilinear": "LINEAR", "cubic": "CUBIC", "bicubic": "CUBIC"}
#: ONNX coordinate_transformation_mode → TensorRT's transformation and single-pixel selector. UPPER
#: maps an output of length 1 to input coordinate 0, which is what ONNX's align_corners and
#: pytorch_half_pixel (at -0.5, read at the edge) do there.
_TRANSFORMS = {
    "half_pixel": ("HALF_PIXEL", "FORMULA"),
    "half_pixel_symmetric": ("HALF_PIXEL", "FORMULA"),
    "pytorch_half_pixel": ("HALF_PIXEL", "UPPER"),
    "align_corners": ("ALIGN_CORNERS", "UPPER"),
    "asymmetric": ("ASYMMETRIC", "FORMULA"),
}
#: ONNX nearest_mode → TensorRT ResizeRoundMode (the same rules on the mapped coordinate).
_NEAREST = {"round_prefer_floor": "HALF_DOWN", "round_prefer_ceil": "HALF_UP", "floor": "FLOOR", "ceil": "CEIL"}
#: Integer types whose every value float32 holds exactly (nearest resizes them as floats).
_EXACT_IN_FLOAT = {"int8", "uint8", "bool"}
_GRID_PADDING = {"zeros": "FILL", "border": "CLAMP", "reflection": "REFLECT"}


def _resize_refusal(node: Node) -> str | None:
    mode = text(node, "mode")
    if mode not in _MODES:
        return f"mode={mode!r}"
    transform = text(node, "coordinate_transformation_mode")
    if transform not in _TRANSFORMS and transform != "tf_crop_and_resize":
        return f"coordinate_transformation_mode={transform!r}"
    if _MODES[mode] == "NEAREST" and text(node, "nearest_mode") not in _NEAREST:
        return f"nearest_mode={text(node, 'nearest_mode')!r}"
    policy = text(node, "keep_aspect_ratio_policy")
    if policy not in ("stretch", "not_larger", "not_smaller"):
        return f"keep_aspect_ratio_policy={policy!r}"
    return None


@dataclass
class _Axis:
    """One axis of a resize: input length (-1: known at run time), output length (None: known at
    run time) and the scale ONNX maps coordinates with (None: output / input)."""

    n_in: int
    n_out: int | None
    scale: float | None = None


def _disagreement(node: Node, axis: int, spec: _Axis, mode: str, transform: str) -> tuple[str, str] | None:
    """Why TensorRT's resize would not compute ONNX's numbers on this axis (both lengths known), or None."""
    assert spec.n_out is not None
    n_in, n_out = spec.n_in, spec.n_out
    scale = n_out / n_in if spec.scale is None else spec.scale
    if n_in == 1 or (n_in == n_out and scale == 1):
        return None  # every tap reads the one pixel; ONNX leaves an axis of scale 1 as it is, as TensorRT does
    if mode == "CUBIC" and transform == "pytorch_half_pixel" and n_out == 1:
        return (f"cubic pytorch_half_pixel resize of axis {axis} from {n_in} to 1",
                "ONNX samples a single output pixel at -0.5, TensorRT at 0, and cubic weights tell them apart")
    theirs = onnx_coordinates(transform, n_in, n_out, scale, n_out if spec.scale is None else scale * n_in)
    trt_transform, selector = _TRANSFORMS[transform]
    ours = trt_coordinates(trt_transform, selector, n_in, n_out)
    if mode == "NEAREST":
        rounding = TRT_ROUNDING[_NEAREST[text(node, "nearest_mode")]]
        same = np.array_equal(np.clip(rounded(theirs, rounding), 0, n_in - 1),
                              np.clip(rounded(ours, rounding), 0, n_in - 1))
    elif mode == "LINEAR":  # a coordinate past either end reads the edge pixel
        same = np.allclose(np.clip(theirs, 0, n_in - 1), np.clip(ours, 0, n_in - 1), rtol=0, atol=1e-6 * n_in)
    else:
        same = np.allclose(theirs, ours, rtol=0, atol=1e-6 * n_in)
    if same:
        return None
    return (f"{transform} {mode.lower()} resize of axis {axis} from {n_in} to {n_out} by scale {scale:g}",
            f"TensorRT maps coordinates by the lengths' ratio {n_in}/{n_out}, ONNX by the scale; give sizes, or "
            "scales that make whole output lengths")


def _run_time_disagreement(axis: int, spec: _Axis, mode: str, transform: str) -> tuple[str, str] | None:
    """Why a resize with a length known only at run time may not compute ONNX's numbers, or None."""
    if spec.scale is not None and not (spec.scale >= 1 and float(spec.scale).is_integer()):
        return (f"scale {spec.scale:g} on axis {axis} of a length known only at run time",
                "TensorRT maps coordinates by the lengths' ratio, which is the scale only when length × scale is "
                "whole; give sizes, whole scales, or a fixed input shape")
    if mode == "CUBIC" and transform == "pytorch_half_pixel" and (spec.n_out is None or spec.n_out == 1):
        return (f"cubic pytorch_half_pixel resize of axis {axis} to a length known only at run time",
                "ONNX and TensorRT differ for an output of length 1; give constant sizes")
    return None


@converter("Resize", capability=_resize_refusal)
def resize(ctx: ConversionContext, node: Node) -> None:
    """One IResizeLayer, its output lengths static, from whole scales, or a shape tensor; integer data
    that float32 holds exactly is resized (nearest) as floats."""
    x = ctx.get(node.inputs[0], node)
    rank = len(x.shape)
    if rank == 0:
        raise unsupported(node, "Resize of a 0-D tensor")
    mode = _MODES[text(node, "mode")]
    transform = text(node, "coordinate_transformation_mode")
    data_type = np_dtype(x.dtype)
    if data_type.kind != "f" and (mode != "NEAREST" or data_type.name not in _EXACT_IN_FLOAT):
        raise unsupported(node, f"{mode.lower()} Resize of {data_type.name} data",
                          hint="TensorRT resizes floating-point tensors; cast the data first")
    axes = [int(a) % rank for a in node.attrs.get("axes", range(rank))]
    if len(set(axes)) != len(axes):
        raise unsupported(node, f"repeated axes {axes}")
    spec, sizes_tensor, by_scales = _lengths(ctx, node, tuple(x.shape), axes)
    empty = [a for a in axes if spec[a].n_out is not None and spec[a].n_out < 1]  # type: ignore[operator]
    if empty:
        raise unsupported(node, f"resize of axis {empty[0]} to length {spec[empty[0]].n_out}")
    reason = _layer_refusal(node, spec, axes, mode, transform, sizes_tensor is not None)
    if reason is not None:
        if not all(spec[a].n_in != -1 and spec[a].n_out is not None for a in axes):
            raise unsupported(node, *reason)
        ctx.set(node.outputs[0], _by_taps(ctx, node, x, spec, axes, mode, transform))
        return

    exact = data_type.kind != "f"
    layer = ctx.network.add_resize(ctx.cast(x, trt().float32, node, "as_float") if exact else x)
    _configure(layer, node, mode, transform)
    outs = [s.n_out for s in spec]
    if all(n is not None and n != -1 for n in outs):
        layer.shape = tuple(int(n) for n in outs)  # type: ignore[arg-type]
    elif by_scales:  # whole scales on axes of run-time length: floor(length × scale) is exact
        layer.scales = [float(s.scale) for s in spec if s.scale is not None]
    else:
        layer.set_input(1, _output_shape(ctx, node, x, spec, axes, sizes_tensor))
    y = ctx.out(layer, node)
    ctx.set(node.outputs[0], ctx.cast(y, x.dtype, node, "data") if exact else y)


def _lengths(ctx: ConversionContext, node: Node, shape: tuple[int, ...],
             axes: list[int]) -> tuple[list[_Axis], Any, bool]:
    """Each axis' input and output lengths and ONNX scale, from sizes (constant, or computed: then
    also the sizes as an INT64 tensor) or from constant scales (then True)."""
    inputs = list(node.inputs) + [None] * (4 - len(node.inputs))
    spec = [_Axis(d, d, 1.0) for d in shape]
    sizes, scales = ctx.constant_of(inputs[3]), ctx.constant_of(inputs[2])
    if inputs[3] is not None and (sizes is None or sizes.size):
        if sizes is not None:
            _sizes_spec(node, spec, axes, [int(s) for s in sizes.reshape(-1)])
            return spec, None, False
        if text(node, "keep_aspect_ratio_policy") != "stretch":
            raise unsupported(node, "keep_aspect_ratio_policy with sizes computed at run time",
                              hint="give constant sizes")
        for a in axes:
            spec[a] = _Axis(shape[a], None)
        return spec, ctx.cast(ctx.get(inputs[3], node), trt().int64, node, "sizes"), False
    if inputs[2] is None or (scales is not None and not scales.size):
        raise unsupported(node, "Resize with neither scales nor sizes")
    if scales is None:
        raise unsupported(node, "scales computed at run time", hint="TensorRT sizes a resize from integer "
                          "lengths and maps coordinates by their ratio, not by a scale; give constant scales, or sizes")
    values = [float(s) for s in scales.reshape(-1)]
    if len(values) != len(axes):
        raise unsupported(node, f"{len(values)} scales for {len(axes)} axes")
    for a, s in zip(axes, values):
        if s <= 0:
            raise unsupported(node, f"scale {s:g} on axis {a} (scales must be positive)")
        spec[a] = _Axis(shape[a], int(np.floor(s * shape[a])) if shape[a] != -1 else None, s)
    return spec, None, True


def _configure(layer: Any, node: Node, mode: str, transform: str) -> None:
    """The interpolation, coordinate mapping, single-pixel selector, rounding and cubic settings."""
    tr = trt()
    layer.resize_mode = getattr(tr.InterpolationMode, mode)
    trt_transform, selector = _TRANSFORMS[transform]
    layer.coordinate_transformation = getattr(tr.ResizeCoordinateTransformation, trt_transform)
    layer.selector_for_single_pixel = getattr(tr.ResizeSelector, selector)
    rounding = _NEAREST[text(node, "nearest_mode")] if mode == "NEAREST" else "FLOOR"
    layer.nearest_rounding = getattr(tr.ResizeRoundMode, rounding)
    layer.cubic_coeff = float(attr(node, "cubic_coeff_a"))
    layer.exclude_outside = bool(int(attr(node, "exclude_outside")))


def _sizes_spec(node: Node, spec: list[_Axis], axes: list[int], sizes: list[int]) -> None:
    """Output lengths from constant sizes; with a keep_aspect_ratio_policy, one scale for all ``axes``
    (the smallest or largest ratio) and lengths rounded half up, as ONNX computes them."""
    if len(sizes) != len(axes):
        raise unsupported(node, f"{len(sizes)} sizes for {len(axes)} axes")
    policy = text(node, "keep_aspect_ratio_policy")
    if policy == "stretch":
        for a, n in zip(axes, sizes):
            spec[a] = _Axis(spec[a].n_in, n)
        return
    dims = [spec[a].n_in for a in axes]
    if -1 in dims:
        raise unsupported(node, f"keep_aspect_ratio_policy={policy!r} on axes of run-time length",
                          hint="fix the input's shape on the resized axes")
    ratios = [n / d for n, d in zip(sizes, dims)]
    scale = min(ratios) if policy == "not_larger" else max(ratios)
    for a, d in zip(axes, dims):
        spec[a] = _Axis(d, int(scale * d + 0.5), scale)


def _may_shrink(spec: _Axis) -> bool:
    if spec.scale is not None:
        return spec.scale < 1
    return spec.n_out is None or spec.n_in == -1 or spec.n_out < spec.n_in


def _layer_refusal(node: Node, spec: list[_Axis], axes: list[int], mode: str, transform: str,
                   computed_sizes: bool) -> tuple[str, str] | None:
    """Why one IResizeLayer would not compute ONNX's numbers, as (what, hint), or None."""
    if transform == "tf_crop_and_resize":
        return ("tf_crop_and_resize to lengths known only at run time", "TensorRT's resize reads the whole input; "
                "loopc crops and resizes with gathers when the sizes and the input's resized axes are fixed")
    if mode != "NEAREST" and int(attr(node, "antialias")) and any(_may_shrink(spec[a]) for a in axes):
        return (f"antialiased {mode.lower()} downscaling to lengths known only at run time",
                "TensorRT's resize has no antialiasing filter; loopc builds the filter from gathers when the sizes "
                "and the input's resized axes are fixed")
    changed = []
    for a in axes:
        s = spec[a]
        if s.n_in != -1 and s.n_out is not None:
            reason = _disagreement(node, a, s, mode, transform)
            if s.n_out != s.n_in:
                changed.append(a)
        else:
            reason = _run_time_disagreement(a, s, mode, transform)
            if s.scale != 1.0:
                changed.append(a)
        if reason is not None:
            return reason
    rank = len(spec)
    if computed_sizes and "axes" not in node.attrs:
        changed = []  # any axis may change: TensorRT checks the lengths it is given when it runs
    if changed and min(changed) < rank - TRT_RESIZABLE[mode]:
        return (f"{mode.lower()} resize of axis {min(changed)} of a rank-{rank} input to a length known only at run "
                "time", f"TensorRT resizes only the innermost {TRT_RESIZABLE[mode]} axes in this mode; loopc builds it "
                "from gathers when the lengths are fixed")
    return None


def _by_taps(ctx: ConversionContext, node: Node, x: Any, spec: list[_Axis], axes: list[int], mode: str,
             transform: str) -> Any:
    """ONNX's resize as gathers and weighted sums, axis by axis (all lengths known), computed in float32."""
    plans = []
    crops = _crop_region(ctx, node, axes) if transform == "tf_crop_and_resize" else {}
    for a in axes:
        s = spec[a]
        assert s.n_out is not None
        scale = s.n_out / s.n_in if s.scale is None else s.scale
        width = s.n_out if s.scale is None else scale * s.n_in
        crop = crops.get(a, (0.0, 1.0))
        if s.n_out == s.n_in and scale == 1 and crop == (0.0, 1.0):
            continue  # ONNX leaves an axis of scale 1 (and no crop) as it is
        if crops and s.scale is not None:
            raise unsupported(node, "tf_crop_and_resize by scales", hint="onnxruntime sizes the output by length × "
                              "crop × scale, ONNX's reference by length × scale; give sizes")
        if ambiguous(transform, s.n_out, width):
            raise unsupported(node, f"{transform} resize of axis {a} from {s.n_in} to {s.n_out} by scale {scale:g}",
                              hint="onnxruntime divides by the output length and ONNX's reference by length × "
                              "scale; give sizes, or scales that make whole output lengths")
        index, weight, outside = onnx_taps(node, mode, transform, s.n_in, s.n_out, scale, width, crop)
        if index.shape[0] > MAX_TAPS:
            raise unsupported(node, f"a resize of axis {a} reading {index.shape[0]} input pixels per output pixel",
                              hint=f"at most {MAX_TAPS} are built as gathers")
        plans.append((a, index, weight, outside))
    tr = trt()
    # weighted taps need floats; integer data (nearest only) is gathered as floats too, as the layer path does
    narrow = x.dtype != tr.float32 and (mode != "NEAREST" or np_dtype(x.dtype).kind != "f")
    y = ctx.cast(x, tr.float32, node, "as_float") if narrow else x
    for a, index, weight, outside in plans:
        y = resample(ctx, node, y, a, index, weight, outside)
    if not plans:
        y = ctx.out(ctx.network.add_identity(y), node)
    return ctx.cast(y, x.dtype, node, "data") if narrow else y


def _crop_region(ctx: ConversionContext, node: Node, axes: list[int]) -> dict[int, tuple[float, float]]:
    """tf_crop_and_resize's region per axis: roi holds the starts, then the ends (one per axis in ``axes``)."""
    roi = ctx.constant_of(node.inputs[1] if len(node.inputs) > 1 else None)
    if roi is None:
        raise unsupported(node, "tf_crop_and_resize without a constant roi", hint="give the crop region as a constant")
    values = [float(v) for v in roi.reshape(-1)]
    if len(values) != 2 * len(axes):
        raise unsupported(node, f"a roi of {len(values)} values for {len(axes)} axes")
    return {a: (values[i], values[len(axes) + i]) for i, a in enumerate(axes)}


def _output_shape(ctx: ConversionContext, node: Node, x: Any, spec: list[_Axis], axes: list[int],
                  sizes: Any) -> Any:
    """The output shape as a 1-D INT64 shape tensor: the input's dims, with the resized axes' lengths
    from ``sizes`` (a tensor, one entry per axis in ``axes``) or from the known lengths."""
    rank = len(spec)
    source = ctx.shape_of(x, node, "in_shape")
    if sizes is not None:
        source = ctx.concat([source, sizes], node, "dims")
        picks = [rank + axes.index(a) if a in axes else a for a in range(rank)]
        return ctx.gather1(source, picks, node, "out_shape")
    known = np.array([s.n_out if s.n_out is not None else 0 for s in spec], np.int64)
    fixed = ctx.constant(known, node, "lengths")
    source = ctx.concat([source, fixed], node, "dims")
    picks = [rank + a if spec[a].n_out is not None and spec[a].n_out != -1 else a for a in range(rank)]
    return ctx.gather1(source, picks, node, "out_shape")


# -- GridSample -----------------------------------------------------------------------------------


def _grid_sample_refusal(node: Node) -> str | None:
    mode = text(node, "mode")
    if mode not in _MODES:
        return f"mode={mode!r}"
    padding = text(node, "padding_mode")
    if padding not in _GRID_PADDING:
        return f"padding_mode={padding!r}"
    return None


@converter("GridSample", capability=_grid_sample_refusal)
def grid_sample(ctx: ConversionContext, node: Node) -> None:
    """IGridSampleLayer takes ONNX's layout ([N, C, *spatial] and [N, *out, k]) as it is; TensorRT
    samples 2-D and 3-D grids, and cubic only on 2-D ones."""
    x = ctx.get(node.inputs[0], node)
    grid = ctx.get(node.inputs[1], node)
    rank = len(x.shape)
    mode = _MODES[text(node, "mode")]
    if rank not in (4, 5):
        raise unsupported(node, f"GridSample of a rank-{rank} input (TensorRT samples 2-D and 3-D grids)")
    if np_dtype(x.dtype).kind != "f":
        raise unsupported(node, f"GridSample of {np_dtype(x.dtype).name} data",
                          hint="TensorRT samples floating-point tensors; cast the data first")
    if mode == "CUBIC" and rank != 4:
        raise unsupported(node, "cubic GridSample of a 3-D grid (TensorRT's cubic sampling is 2-D only)")
    padding = text(node, "padding_mode")
    if mode == "CUBIC" and padding == "border":
        raise unsupported(node, "cubic GridSample with border padding", hint="ONNX's reference clamps the sampling "
                          "point and onnxruntime clamps each tap, which differ, and TensorRT does not say which it "
                          "does; use zeros or reflection padding, or linear sampling")
    if len(grid.shape) != rank:
        raise unsupported(node, f"a rank-{len(grid.shape)} grid for a rank-{rank} input")
    tr = trt()
    widen = grid.dtype != x.dtype  # TensorRT samples with a grid of the data's type: both in float32
    if widen:
        x, grid = ctx.cast(x, tr.float32, node, "data_f32"), ctx.cast(grid, tr.float32, node, "grid_f32")
    layer = ctx.network.add_grid_sample(x, grid)
    layer.interpolation_mode = getattr(tr.InterpolationMode, mode)
    layer.align_corners = bool(int(attr(node, "align_corners")))
    layer.sample_mode = getattr(tr.SampleMode, _GRID_PADDING[padding])
    y = ctx.out(layer, node)
    ctx.set(node.outputs[0], ctx.cast(y, ctx.get(node.inputs[0], node).dtype, node, "data") if widen else y)

"""Interpolate-1, -4 and -11 as ONNX's Resize (after a zero Pad when pads_begin/pads_end ask for one).

Resize gets full-rank scales or sizes (1, or the dim, on axes not listed). What maps, from the specs
and checked against OpenVINO's CPU plugin:

* ``nearest``: Resize's nearest with the same coordinate transformation and rounding.
  ``tf_half_pixel_for_nn`` is ``(x + 0.5) / scale``, half a pixel past half_pixel's coordinate ``h``, so
  floor of it is round_prefer_ceil of ``h`` and round_prefer_floor of it is ceil of ``h``; its ceil and
  round_prefer_ceil have no Resize form. ``simple`` is ceil on a downsampled axis and truncation (floor,
  after the clamp to the edge) on the others; nearest being separable, mixed scales are two Resizes.
* ``linear_onnx`` is Resize's linear; OpenVINO's ``linear`` is a triangle filter normalized over the
  taps inside the input, the same numbers when it does not antialias. With ``antialias`` on a
  downsampled axis its spec stretches the filter (not as Resize's antialias does) while its CPU plugin
  ignores the flag: refused.
* ``cubic``: Resize's cubic with ``cubic_coeff_a = cube_coeff``, edge taps clamped (exclude_outside=0).
* ``bilinear_pillow`` / ``bicubic_pillow``: Resize's antialiased linear / cubic, half_pixel, the weights
  normalized over the taps inside the input (exclude_outside=1), as Pillow computes them.
* Interpolate-1 is what OpenVINO converts it to: Interpolate-4 on sizes with nearest_mode ``simple``, the
  asymmetric transformation (align_corners when asked; half_pixel for ``linear`` without pads unless
  the input is 4-D resized on axes {2, 3}), cube_coeff -0.75; ``linear`` is linear_onnx below rank 5.
  ``area`` has no Resize form.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loopc.frontend.openvino.importer import Op
from loopc.frontend.openvino.ops._common import axes as normalize_axes, cast, const_ints, dim, i64, optional_input
from loopc.frontend.openvino.registry import translates
from loopc.ir import Value

TRANSFORMS = ("half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn", "align_corners")
ROUNDINGS = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")
#: tf_half_pixel_for_nn's rounding → the half_pixel rounding that picks the same pixel.
TF_HALF_PIXEL = {"floor": "round_prefer_ceil", "round_prefer_floor": "ceil"}


@dataclass
class Spec:
    """One Interpolate in the terms all three versions share."""

    mode: str
    by_sizes: bool
    transform: str = "half_pixel"
    rounding: str = "round_prefer_floor"
    antialias: bool = False
    cube_coeff: float = -0.75


@translates("Interpolate", 1)
def interpolate1(op: Op) -> list[Value]:
    op.expect_inputs(2)
    rank = op.rank(0)
    listed = normalize_axes(op, op.ints_attr("axes"), rank)
    mode = op.choice_attr("mode", ("nearest", "linear", "cubic", "linear_onnx", "area"))
    if mode == "area":
        raise op.unsupported("mode='area' (an average over each output pixel's footprint) has no Resize form")
    if mode == "linear":
        mode = "linear_onnx" if rank < 5 else "linear"
    pads = [op.ints_attr(key, [0]) for key in ("pads_begin", "pads_end")]
    transform = "asymmetric"
    if op.bool_attr("align_corners", False):
        transform = "align_corners"
    elif mode.startswith("linear") and not any(pads[0] + pads[1]) and not (rank == 4 and sorted(listed) == [2, 3]):
        transform = "half_pixel"
    spec = Spec(mode, True, transform, "simple", op.bool_attr("antialias", False))
    return [_resize(op, spec, listed, 1, pads)]


@translates("Interpolate", 4, 11)
def interpolate(op: Op) -> list[Value]:
    v4 = op.version < 11
    op.expect_inputs(3, 4) if v4 else op.expect_inputs(2, 3)
    modes = ("nearest", "linear", "linear_onnx", "cubic") + (() if v4 else ("bilinear_pillow", "bicubic_pillow"))
    by_sizes = op.choice_attr("shape_calculation_mode", ("sizes", "scales")) == "sizes"
    spec = Spec(op.choice_attr("mode", modes), by_sizes,
                op.choice_attr("coordinate_transformation_mode", TRANSFORMS, "half_pixel"),
                op.choice_attr("nearest_mode", ROUNDINGS, "round_prefer_floor"),
                op.bool_attr("antialias", False), op.float_attr("cube_coeff", -0.75))
    rank = op.rank(0)
    axes_at = 3 if v4 else 2
    given = optional_input(op, axes_at)
    listed = normalize_axes(op, const_ints(op, axes_at, "axes"), rank) if given is not None else list(range(rank))
    pads = [op.ints_attr(key, [0]) for key in ("pads_begin", "pads_end")]
    return [_resize(op, spec, listed, 1 if not v4 or by_sizes else 2, pads)]


def _resize(op: Op, spec: Spec, listed: list[int], k: int, pads: list[list[int]]) -> Value:
    """Resize ``listed`` axes of the padded input to input ``k``'s sizes or by its scales."""
    x = _pad(op, op.inputs[0], pads)
    rank = op.rank(0)
    values = op.constant(k)
    if values is not None and values.size != len(listed):
        raise op.error(f"{'sizes' if spec.by_sizes else 'scales'} has {values.size} values for axes {listed}")
    scales = _static_scales(x, listed, values, spec.by_sizes)
    if spec.mode == "nearest" and spec.rounding == "simple" and scales is not None and values is not None:
        shrunk = [a for a, s in zip(listed, scales) if s < 1]
        grown = [a for a, s in zip(listed, scales) if s > 1]
        if shrunk and grown:  # nearest is separable: the shrunk axes (ceil), then the others (floor)
            flat = np.asarray(values).reshape(-1)
            for group in (shrunk, [a for a in listed if a not in shrunk]):
                picked = [listed.index(a) for a in group]
                x = _one_resize(op, spec, x, group, flat[picked], [scales[i] for i in picked])
            return x
    return _one_resize(op, spec, x, listed, values if values is not None else op.inputs[k], scales)


def _one_resize(op: Op, spec: Spec, x: Value, listed: list[int], source: np.ndarray | Value,
                scales: list[float] | None) -> Value:
    attrs = _attrs(op, spec, scales)
    if spec.by_sizes:
        return op.op("Resize", [x, None, None, _full(op, x, listed, source, sizes=True)], attrs)
    return op.op("Resize", [x, None, _full(op, x, listed, source, sizes=False)], attrs)


def _pad(op: Op, x: Value, pads: list[list[int]]) -> Value:
    """Zeros before and after, one count per axis (short lists end in zeros, long ones are cut, as OpenVINO
    reads them)."""
    rank = op.rank(0)
    begin, end = ((p + [0] * rank)[:rank] for p in pads)
    if any(p < 0 for p in begin + end):
        raise op.unsupported(f"negative pads {begin} {end}: crop the input first")
    if not any(begin + end):
        return x
    return op.op("Pad", [x, op.const(begin + end, np.int64)], {"mode": "constant"})


def _static_scales(x: Value, listed: list[int], values: np.ndarray | None, by_sizes: bool) -> list[float] | None:
    """Each listed axis' scale when the operands and dims tell it, else None."""
    if values is None:
        return None
    flat = [float(v) for v in np.asarray(values).reshape(-1)]
    if not by_sizes:
        return flat
    lengths = [dim(x, a) for a in listed]
    if any(length is None for length in lengths):
        return None
    return [out / float(length) for out, length in zip(flat, lengths) if length is not None]


def _full(op: Op, x: Value, listed: list[int], source: np.ndarray | Value, sizes: bool) -> Value:
    """Full-rank sizes (int64) or scales (float32) from the listed axes' values (known, or a value)."""
    rank = op.rank(0)
    if isinstance(source, np.ndarray):
        flat = source.reshape(-1)
        if sizes:
            full = [dim(x, a) for a in range(rank)]
            for a, v in zip(listed, flat):
                full[a] = int(v)
            if all(d is not None for d in full):
                return op.const(full, np.int64)
        else:
            scales = np.ones(rank, np.float32)
            scales[listed] = flat.astype(np.float32)
            return op.const(scales)
    parts: list[Value] = []
    given = op.const(source) if isinstance(source, np.ndarray) else source
    values = i64(op, given, vector=True) if sizes else cast(op, given, np.dtype(np.float32))
    for a in range(rank):
        if a in listed:
            parts.append(op.op("Gather", [values, op.const([listed.index(a)], np.int64)], {"axis": 0}))
        else:
            parts.append(op.em.dim(x, a, keep_1d=True) if sizes else op.const([1.0], np.float32))
    return op.op("Concat", parts, {"axis": 0})


def _attrs(op: Op, spec: Spec, scales: list[float] | None) -> dict[str, object]:
    if spec.mode == "nearest":
        transform, rounding = _nearest(op, spec, scales)
        return {"mode": "nearest", "coordinate_transformation_mode": transform, "nearest_mode": rounding}
    if spec.transform == "tf_half_pixel_for_nn" and not spec.mode.endswith("pillow"):
        raise op.unsupported(f"coordinate_transformation_mode='tf_half_pixel_for_nn' with mode={spec.mode!r}: "
                             f"Resize has it for nothing but nearest")
    if spec.mode in ("bilinear_pillow", "bicubic_pillow"):
        attrs: dict[str, object] = {"mode": "linear" if spec.mode == "bilinear_pillow" else "cubic",
                                    "coordinate_transformation_mode": "half_pixel", "antialias": 1,
                                    "exclude_outside": 1}
        if spec.mode == "bicubic_pillow":
            attrs["cubic_coeff_a"] = spec.cube_coeff
        return attrs
    attrs = {"mode": "cubic" if spec.mode == "cubic" else "linear",
             "coordinate_transformation_mode": spec.transform}
    if spec.mode == "cubic":
        attrs["cubic_coeff_a"] = spec.cube_coeff
    elif spec.mode == "linear" and spec.antialias and (scales is None or any(v < 1 for v in scales)):
        raise op.unsupported("mode='linear' with antialias, downsampling (or scales not static): OpenVINO's CPU "
                             "plugin ignores antialias where its spec stretches the filter; loopc refuses rather "
                             "than pick one")
    return attrs


def _nearest(op: Op, spec: Spec, scales: list[float] | None) -> tuple[str, str]:
    rounding = spec.rounding
    if rounding == "simple":
        if scales is None:
            raise op.unsupported("nearest_mode='simple' with scales that are not static: it rounds up on downsampled "
                                 "axes and down on the others")
        rounding = "ceil" if any(s < 1 for s in scales) else "floor"  # _resize splits mixed scales
    if spec.transform != "tf_half_pixel_for_nn":
        return spec.transform, rounding
    if rounding not in TF_HALF_PIXEL:
        raise op.unsupported(f"coordinate_transformation_mode='tf_half_pixel_for_nn' with nearest_mode="
                             f"{spec.rounding!r}{' (downsampling)' if spec.rounding == 'simple' else ''}: Resize has "
                             f"no such rounding")
    return "half_pixel", TF_HALF_PIXEL[rounding]

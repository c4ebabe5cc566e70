"""Whole-model OpenVINO ops (convolutions, pools, Interpolate, space/depth, normalizations, FakeQuantize,
attention) against OpenVINO's CPU plugin (f32) on the same IR.

Every case runs twice: ``test_ir`` checks the translation itself (loopc's IR interpreter against
OpenVINO), and ``test_end_to_end`` runs the frontend, the passes, the real TensorRT builder and the
simulator — skipped, naming the op, while the backend has no converter for an op the translation uses.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset1 as o1
import openvino.opset5 as o5
import openvino.opset8 as o8
import openvino.opset9 as o9
import openvino.opset13 as o13
import pytest
from openvino.utils.node_factory import NodeFactory

from loopc.backend.trt.registry import CONVERTERS
from loopc.compiler import optimize
from loopc.errors import UnsupportedConversionError, UnsupportedOpError
from loopc.frontend.openvino import import_ir
from loopc.ir import Graph
from tests.frontend.openvino.harness import Case, check, check_ir, param, save
from tests.frontend.openvino.test_bad_input import check_one_line, run_cli

RNG = np.random.default_rng(11)
F32 = np.float32

def const(value: Any, dtype: Any = F32) -> Any:
    return o13.constant(np.array(value, dtype))


def data(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(F32)


def node(opset: str, op_type: str, inputs: list[Any], attrs: dict[str, Any]) -> Any:
    return NodeFactory(opset).create(op_type, [i.output(0) if hasattr(i, "output") else i for i in inputs], attrs)


def unary(shape: list[int], fn: Callable[[Any], Any], values: np.ndarray | None = None) -> Case:
    x = param("x", shape)
    return list(fn(x).outputs()), [x], {"x": data(*shape) if values is None else values}


# ---------------------------------------------------------------------------------------------- convolutions
def _conv(shape: list[int], filters: list[int], grouped: bool = False, **attrs: Any) -> Case:
    x = param("x", shape)
    w = const(data(*filters))
    n = len(shape) - 2
    args = {"strides": [1] * n, "pads_begin": [0] * n, "pads_end": [0] * n, "dilations": [1] * n, **attrs}
    out = (o1.group_convolution if grouped else o1.convolution)(x, w, **args)
    return [out], [x], {"x": data(*shape)}


def _deconv(shape: list[int], filters: list[int], grouped: bool = False, output_shape: list[int] | None = None,
            **attrs: Any) -> Case:
    x = param("x", shape)
    n = len(shape) - 2
    inputs = [x, const(data(*filters))] + ([] if output_shape is None else [const(output_shape, np.int64)])
    args = {"strides": [1] * n, "pads_begin": [0] * n, "pads_end": [0] * n, "dilations": [1] * n,
            "auto_pad": "explicit", "output_padding": [0] * n, **attrs}
    kind = "GroupConvolutionBackpropData" if grouped else "ConvolutionBackpropData"
    return [node("opset1", kind, inputs, args)], [x], {"x": data(*shape)}


def _conv_dynamic() -> Case:
    x = param("x", [-1, 2, -1, -1])
    out = o1.convolution(x, const(data(3, 2, 3, 3)), [2, 2], [0, 0], [0, 0], [1, 1], "same_upper")
    return [out], [x], {"x": data(2, 2, 7, 6)}


CONV: dict[str, Callable[[], Case]] = {
    "conv2d": lambda: _conv([1, 3, 6, 7], [4, 3, 3, 3]),
    "conv2d_pads_strides_dilations": lambda: _conv([2, 2, 9, 8], [3, 2, 3, 2], strides=[2, 1], pads_begin=[1, 0],
                                                   pads_end=[2, 1], dilations=[2, 3]),
    "conv1d": lambda: _conv([2, 3, 10], [2, 3, 4], strides=[3], pads_begin=[2], pads_end=[1]),
    "conv3d": lambda: _conv([1, 2, 5, 4, 6], [2, 2, 2, 3, 2], pads_begin=[1, 0, 1], pads_end=[0, 1, 1]),
    "conv2d_same_upper": lambda: _conv([1, 2, 7, 8], [3, 2, 4, 3], strides=[2, 3], auto_pad="same_upper"),
    "conv2d_same_lower": lambda: _conv([1, 2, 7, 8], [3, 2, 4, 3], strides=[2, 3], auto_pad="same_lower"),
    "conv2d_valid": lambda: _conv([1, 2, 7, 8], [3, 2, 3, 3], pads_begin=[2, 2], pads_end=[1, 1], auto_pad="valid"),
    "conv2d_dynamic_same_upper": _conv_dynamic,
    "group_conv2d": lambda: _conv([1, 6, 5, 5], [3, 4, 2, 3, 3], grouped=True, pads_begin=[1, 1], pads_end=[1, 1]),
    "group_conv2d_depthwise": lambda: _conv([2, 4, 6, 6], [4, 1, 1, 3, 3], grouped=True, strides=[2, 2],
                                            auto_pad="same_lower"),
    "group_conv1d": lambda: _conv([1, 4, 9], [2, 3, 2, 3], grouped=True, dilations=[2]),
    "deconv2d": lambda: _deconv([1, 3, 4, 5], [3, 2, 3, 3]),
    "deconv2d_strides_pads": lambda: _deconv([2, 2, 4, 3], [2, 3, 3, 2], strides=[2, 3], pads_begin=[1, 0],
                                             pads_end=[2, 1], dilations=[1, 2]),
    "deconv2d_output_padding": lambda: _deconv([1, 2, 3, 3], [2, 2, 3, 3], strides=[3, 2], pads_begin=[1, 1],
                                               pads_end=[0, 1], output_padding=[2, 1]),
    "deconv1d": lambda: _deconv([1, 2, 5], [2, 3, 4], strides=[2], pads_begin=[1], pads_end=[2]),
    "deconv3d": lambda: _deconv([1, 2, 3, 2, 3], [2, 2, 2, 2, 3], strides=[2, 1, 2]),
    "deconv2d_same_upper_no_shape": lambda: _deconv([1, 2, 4, 4], [2, 2, 3, 3], strides=[2, 2], pads_begin=[1, 1],
                                                    auto_pad="same_upper"),
    "deconv2d_valid": lambda: _deconv([1, 2, 4, 4], [2, 2, 3, 3], strides=[2, 2], pads_end=[1, 1], auto_pad="valid"),
    "deconv2d_output_shape_explicit": lambda: _deconv([1, 2, 5, 5], [2, 2, 3, 3], strides=[2, 2],
                                                      output_shape=[9, 8]),
    "deconv2d_output_shape_same_upper": lambda: _deconv([1, 2, 5, 5], [2, 2, 3, 3], strides=[2, 2],
                                                        output_shape=[9, 8], auto_pad="same_upper"),
    "deconv2d_output_shape_same_lower": lambda: _deconv([1, 2, 5, 5], [2, 2, 3, 3], strides=[2, 2],
                                                        output_shape=[9, 8], auto_pad="same_lower"),
    "deconv2d_output_shape_wider": lambda: _deconv([1, 2, 5, 5], [2, 2, 3, 3], strides=[2, 2], output_shape=[14, 12],
                                                   auto_pad="same_upper"),
    "deconv2d_output_shape_output_padding": lambda: _deconv([1, 2, 4, 4], [2, 2, 3, 3], strides=[3, 3],
                                                            output_shape=[10, 9], output_padding=[1, 2]),
    "deconv2d_output_shape_explicit_pads": lambda: _deconv([1, 2, 5, 5], [2, 2, 3, 3], strides=[2, 2],
                                                           output_shape=[12, 7], pads_begin=[1, 3], pads_end=[2, 0]),
    "deconv1d_output_shape_same_lower_odd": lambda: _deconv([1, 2, 5], [2, 3, 4], strides=[2], output_shape=[7],
                                                            auto_pad="same_lower"),
    "deconv1d_output_shape_valid": lambda: _deconv([1, 2, 5], [2, 3, 4], strides=[2], output_shape=[9],
                                                   auto_pad="valid"),
    "group_deconv2d": lambda: _deconv([1, 4, 3, 4], [2, 2, 3, 2, 2], grouped=True, strides=[2, 2], pads_begin=[0, 1],
                                      pads_end=[1, 0]),
    "group_deconv2d_output_shape": lambda: _deconv([1, 4, 3, 4], [2, 2, 3, 2, 2], grouped=True, strides=[2, 2],
                                                   output_shape=[7, 9], auto_pad="same_lower"),
}

ALL: dict[str, Callable[[], Case]] = {**CONV}


# ---------------------------------------------------------------------------------------------- refusals
REFUSED: dict[str, tuple[Callable[[], Case], type[Exception], str]] = {
    "conv_dynamic_kernel": (lambda: _conv_computed_filters(), UnsupportedOpError, "spatial dims"),
    "deconv_output_shape_dynamic_input": (lambda: _deconv_dynamic_output_shape(), UnsupportedOpError,
                                          "cut that gives output_shape"),
}


def _conv_computed_filters() -> Case:
    x, w = param("x", [1, 2, 5, 5]), param("w", [3, 2, -1, -1])
    return [o1.convolution(x, w, [1, 1], [0, 0], [0, 0], [1, 1])], [x, w], {}


def _deconv_dynamic_output_shape() -> Case:
    x = param("x", [1, 2, -1, -1])
    out = node("opset1", "ConvolutionBackpropData", [x, const(data(2, 2, 3, 3)), const([9, 9], np.int64)],
               {"strides": [2, 2], "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1]})
    return [out], [x], {}





# ---------------------------------------------------------------------------------------------- pools
def _pool(kind: str, opset: str, shape: list[int], kernel: list[int], dynamic: bool = False, **attrs: Any) -> Case:
    x = param("x", [-1, shape[1]] + [-1] * (len(shape) - 2) if dynamic else shape)
    n = len(kernel)
    args = {"strides": [1] * n, "pads_begin": [0] * n, "pads_end": [0] * n, "kernel": kernel,
            "rounding_type": "floor", "auto_pad": "explicit", **attrs}
    if kind == "MaxPool" and opset != "opset1":
        args.setdefault("dilations", [1] * n)
    if kind == "AvgPool":
        args.setdefault("exclude-pad", False)
    return list(node(opset, kind, [x], args).outputs()), [x], {"x": data(*shape)}


def _pool_indices_only(axis: int) -> Case:
    outputs, params, feeds = _pool("MaxPool", "opset8", [2, 3, 5, 6], [2, 2], strides=[2, 2], axis=axis)
    return [outputs[1]], params, feeds


def _values_only(case: Case) -> Case:
    """MaxPool-8 with nothing reading its indices (what converters usually write)."""
    outputs, params, feeds = case
    return outputs[:1], params, feeds


def _pool_ties() -> Case:
    """Small integers make windows with equal maxima: the index is the first in the window's row-major order."""
    outputs, params, _ = _pool("MaxPool", "opset8", [2, 2, 6, 7], [3, 3], strides=[2, 2], pads_begin=[1, 1],
                               pads_end=[1, 1])
    return outputs, params, {"x": RNG.integers(-2, 3, (2, 2, 6, 7)).astype(F32)}


def _pool_dynamic_batch() -> Case:
    x = param("x", [-1, 3, 5, 6])
    out = node("opset8", "MaxPool", [x], {"strides": [1, 2], "pads_begin": [1, 0], "pads_end": [0, 1],
                                          "kernel": [2, 3], "rounding_type": "floor", "auto_pad": "explicit",
                                          "dilations": [2, 1]})
    return list(out.outputs()), [x], {"x": data(2, 3, 5, 6)}


POOL: dict[str, Callable[[], Case]] = {
    "maxpool1": lambda: _pool("MaxPool", "opset1", [1, 2, 6, 7], [3, 2], strides=[2, 1], pads_begin=[1, 0],
                              pads_end=[1, 1]),
    "maxpool1_ceil": lambda: _pool("MaxPool", "opset1", [1, 2, 6, 7], [2, 2], strides=[2, 2], rounding_type="ceil"),
    "maxpool1_same_upper": lambda: _pool("MaxPool", "opset1", [1, 2, 7, 6], [3, 2], strides=[2, 2],
                                         auto_pad="same_upper"),
    "maxpool1_same_lower": lambda: _pool("MaxPool", "opset1", [1, 2, 7, 6], [3, 2], strides=[2, 2],
                                         auto_pad="same_lower"),
    "maxpool1_valid": lambda: _pool("MaxPool", "opset1", [1, 2, 7, 6], [3, 2], strides=[2, 2], pads_begin=[1, 1],
                                    auto_pad="valid"),
    "maxpool1_1d": lambda: _pool("MaxPool", "opset1", [2, 3, 9], [3], strides=[2], pads_begin=[1], pads_end=[2]),
    "maxpool1_3d": lambda: _pool("MaxPool", "opset1", [1, 2, 4, 5, 6], [2, 2, 3], strides=[2, 1, 2]),
    "maxpool8_indices": lambda: _pool("MaxPool", "opset8", [2, 3, 5, 6], [2, 3], strides=[2, 2], pads_begin=[1, 1],
                                      pads_end=[0, 1]),
    "maxpool8_indices_axis1_i32": lambda: _pool("MaxPool", "opset8", [2, 3, 5, 6], [2, 2], strides=[1, 2], axis=1,
                                                index_element_type="i32"),
    "maxpool8_indices_axis2": lambda: _pool("MaxPool", "opset8", [2, 3, 5, 6], [3, 2], strides=[2, 2], axis=-2,
                                            rounding_type="ceil"),
    "maxpool8_dilations": lambda: _pool("MaxPool", "opset8", [1, 2, 9, 8], [3, 2], strides=[2, 1], dilations=[2, 3],
                                        pads_begin=[2, 1], pads_end=[1, 2]),
    "maxpool8_indices_ties": lambda: _pool_ties(),
    "maxpool8_indices_dynamic_batch": lambda: _pool_dynamic_batch(),
    "maxpool8_indices_only": lambda: _pool_indices_only(0),
    "maxpool8_indices_only_axis3": lambda: _pool_indices_only(3),
    "maxpool14_ceil_torch": lambda: _pool("MaxPool", "opset14", [1, 2, 7, 6], [2, 2], strides=[3, 2],
                                          pads_begin=[1, 1], pads_end=[1, 1], rounding_type="ceil_torch"),
    "maxpool14_ceil": lambda: _pool("MaxPool", "opset14", [1, 2, 7, 6], [3, 3], strides=[3, 2], pads_begin=[1, 0],
                                    rounding_type="ceil"),
    "maxpool8_dynamic_floor": lambda: _values_only(_pool("MaxPool", "opset8", [2, 2, 7, 6], [3, 2], dynamic=True,
                                                         strides=[2, 2], pads_begin=[1, 0], pads_end=[1, 1])),
    "maxpool8_dynamic_ceil": lambda: _values_only(_pool("MaxPool", "opset8", [2, 2, 7, 6], [3, 2], dynamic=True,
                                                        strides=[2, 2], rounding_type="ceil")),
    "maxpool1_dynamic_same_upper": lambda: _pool("MaxPool", "opset1", [2, 2, 7, 6], [3, 2], dynamic=True,
                                                 strides=[2, 2], auto_pad="same_upper"),
    "avgpool1": lambda: _pool("AvgPool", "opset1", [1, 2, 6, 7], [3, 2], strides=[2, 1], pads_begin=[1, 0],
                              pads_end=[1, 1]),
    "avgpool1_exclude_pad": lambda: _pool("AvgPool", "opset1", [1, 2, 6, 7], [3, 3], strides=[2, 2],
                                          pads_begin=[1, 1], pads_end=[1, 1], **{"exclude-pad": True}),
    "avgpool1_ceil_include_pad": lambda: _pool("AvgPool", "opset1", [1, 2, 6, 7], [2, 2], strides=[2, 2],
                                               pads_begin=[1, 0], rounding_type="ceil"),
    "avgpool1_ceil_exclude_pad": lambda: _pool("AvgPool", "opset1", [1, 2, 6, 7], [2, 2], strides=[2, 2],
                                               pads_begin=[1, 0], rounding_type="ceil", **{"exclude-pad": True}),
    "avgpool1_pad_only_window_include_pad": lambda: _pool("AvgPool", "opset1", [1, 1, 5], [2], strides=[3],
                                                          pads_begin=[1], pads_end=[2]),
    "avgpool1_same_lower": lambda: _pool("AvgPool", "opset1", [1, 2, 7, 6], [3, 2], strides=[2, 2],
                                         auto_pad="same_lower", **{"exclude-pad": True}),
    "avgpool1_same_upper_include_pad": lambda: _pool("AvgPool", "opset1", [1, 2, 7, 6], [3, 2], strides=[2, 2],
                                                     auto_pad="same_upper"),
    "avgpool1_valid_ceil": lambda: _pool("AvgPool", "opset1", [1, 2, 7, 6], [3, 2], strides=[2, 2], auto_pad="valid",
                                         rounding_type="ceil", pads_begin=[1, 1]),
    "maxpool8_same_upper_ceil": lambda: _pool("MaxPool", "opset8", [1, 2, 7, 6], [3, 2], strides=[2, 2],
                                              auto_pad="same_upper", rounding_type="ceil"),
    "avgpool1_3d": lambda: _pool("AvgPool", "opset1", [1, 2, 4, 5, 6], [2, 2, 3], strides=[2, 1, 2],
                                 pads_begin=[0, 1, 1], pads_end=[1, 1, 0]),
    "avgpool14_ceil_torch": lambda: _pool("AvgPool", "opset14", [1, 2, 7, 6], [2, 2], strides=[3, 2],
                                          pads_begin=[1, 1], pads_end=[1, 1], rounding_type="ceil_torch"),
    "avgpool14_ceil_torch_exclude": lambda: _pool("AvgPool", "opset14", [1, 2, 7, 6], [2, 3], strides=[3, 2],
                                                  pads_begin=[1, 1], pads_end=[1, 1], rounding_type="ceil_torch",
                                                  **{"exclude-pad": True}),
    "avgpool1_dynamic": lambda: _pool("AvgPool", "opset1", [2, 2, 7, 6], [3, 2], dynamic=True, strides=[2, 2],
                                      pads_begin=[1, 0], pads_end=[1, 1], **{"exclude-pad": True}),
}

def _adaptive(kind: str, shape: list[int], out: list[int], values_only: bool = False) -> Case:
    x = param("x", shape)
    if kind == "avg":
        return [o8.adaptive_avg_pool(x, const(out, np.int64))], [x], {"x": data(*shape)}
    pooled = o8.adaptive_max_pool(x, const(out, np.int64), "i32")  # OpenVINO's CPU runs no i64 indices
    outputs = list(pooled.outputs())
    return (outputs[:1] if values_only else outputs), [x], {"x": data(*shape)}


POOL.update({
    "adaptive_avg_even": lambda: _adaptive("avg", [2, 3, 6, 8], [3, 2]),
    "adaptive_avg_global": lambda: _adaptive("avg", [2, 3, 5, 7], [1, 1]),
    "adaptive_avg_uneven": lambda: _adaptive("avg", [2, 2, 5, 6], [3, 4]),
    "adaptive_avg_uneven_1d": lambda: _adaptive("avg", [2, 2, 7], [3]),
    "adaptive_avg_uneven_3d": lambda: _adaptive("avg", [1, 2, 5, 4, 3], [2, 4, 2]),
    "adaptive_max_even": lambda: _adaptive("max", [2, 3, 6, 8], [3, 2]),
    "adaptive_max_uneven_values": lambda: _adaptive("max", [2, 2, 5, 6], [3, 4], values_only=True),
    "adaptive_max_upsampling_values": lambda: _adaptive("max", [1, 2, 3, 4], [5, 4], values_only=True),
})

ALL.update(POOL)

REFUSED.update({
    "maxpool_window_in_padding": (lambda: _pool("MaxPool", "opset8", [1, 1, 5], [2], strides=[3], pads_begin=[1],
                                                pads_end=[2]), UnsupportedOpError, "covers only padding"),
    "adaptive_max_uneven_indices": (lambda: _adaptive("max", [2, 2, 5, 6], [3, 4]), UnsupportedOpError,
                                    "bins of unequal size"),
    "maxpool_indices_dynamic": (lambda: _pool("MaxPool", "opset8", [1, 1, 5], [2], dynamic=True), UnsupportedOpError,
                                "the indices output with spatial dims that are not static"),
    "maxpool_ceil_dynamic_past_end": (lambda: _pool("MaxPool", "opset8", [1, 1, 5], [1], dynamic=True, strides=[3],
                                                    rounding_type="ceil"), UnsupportedOpError,
                                      "which OpenVINO keeps and ONNX drops"),
    "avgpool_ceil_dynamic_include_pad": (lambda: _pool("AvgPool", "opset1", [1, 1, 5, 5], [2, 2], dynamic=True,
                                                       strides=[2, 2], rounding_type="ceil"), UnsupportedOpError,
                                         "divides a window past the end padding"),
    # a last window starting in the end pad: OpenVINO's output is 3 x 3 on a 4 x 4 input, ONNX's 2 x 2
    "maxpool_ceil_dynamic_end_pad": (lambda: _pool("MaxPool", "opset1", [1, 1, 4, 4], [2, 2], dynamic=True,
                                                   strides=[2, 2], pads_end=[1, 1], rounding_type="ceil"),
                                     UnsupportedOpError, "which OpenVINO keeps and ONNX drops"),
    # windows starting at 6 of a 6-long axis read past the pads too: OpenVINO gives NaN there
    "avgpool_include_pad_window_past_the_pads": (lambda: _pool("AvgPool", "opset1", [1, 1, 6, 6], [2, 2],
                                                               strides=[3, 3], rounding_type="ceil"),
                                                 UnsupportedOpError, "covers only padding"),
    "maxpool_same_upper_ceil_stride_over_kernel": (lambda: _pool("MaxPool", "opset1", [1, 1, 6, 6], [2, 2],
                                                                 dynamic=True, strides=[3, 3], auto_pad="same_upper",
                                                                 rounding_type="ceil"),
                                                   UnsupportedOpError, "OpenVINO keeps a window"),
})


# ---------------------------------------------------------------------------------------------- space/depth
def _space(kind: str, shape: list[int], mode: str, block: int) -> Case:
    return unary(shape, lambda x: node("opset1", kind, [x], {"mode": mode, "block_size": block}))


def _shuffle(x: Any, axis: int, group: int) -> Any:
    return node("opset1", "ShuffleChannels", [x], {"axis": axis, "group": group})


def _shuffle_dynamic() -> Case:
    x = param("x", [-1, 6, -1])
    return [_shuffle(x, 1, 2)], [x], {"x": data(3, 6, 4)}


def _grid_sample(mode: str, padding: str, align: bool) -> Case:
    x, grid = param("x", [2, 3, 5, 6]), param("grid", [2, 4, 7, 2])
    out = o9.grid_sample(x, grid, {"mode": mode, "padding_mode": padding, "align_corners": align})
    # a little past [-1, 1], so the padding modes matter; off the pixel centres and halves, so no rounding ties
    points = (RNG.uniform(-1.2, 1.2, (2, 4, 7, 2)) + 0.0137).astype(F32)
    return [out], [x, grid], {"x": data(2, 3, 5, 6), "grid": points}


SPACE: dict[str, Callable[[], Case]] = {
    **{f"grid_sample_{m}_{p}{'_aligned' if a else ''}": (lambda m=m, p=p, a=a: _grid_sample(m, p, a))
       for m in ("bilinear", "bicubic", "nearest") for p in ("zeros", "border", "reflection") for a in (False, True)
       if (m, p) != ("bicubic", "border")},
    "depth_to_space_blocks_first": lambda: _space("DepthToSpace", [2, 8, 2, 3], "blocks_first", 2),
    "depth_to_space_depth_first": lambda: _space("DepthToSpace", [2, 8, 2, 3], "depth_first", 2),
    "depth_to_space_3d_blocks_first": lambda: _space("DepthToSpace", [1, 6, 4], "blocks_first", 3),
    "depth_to_space_5d_depth_first": lambda: _space("DepthToSpace", [1, 16, 2, 1, 3], "depth_first", 2),
    "depth_to_space_5d_blocks_first": lambda: _space("DepthToSpace", [1, 16, 2, 1, 3], "blocks_first", 2),
    "space_to_depth_blocks_first": lambda: _space("SpaceToDepth", [2, 3, 4, 6], "blocks_first", 2),
    "space_to_depth_depth_first": lambda: _space("SpaceToDepth", [2, 3, 4, 6], "depth_first", 2),
    "space_to_depth_3d": lambda: _space("SpaceToDepth", [1, 2, 6], "depth_first", 3),
    "shuffle_channels": lambda: unary([2, 6, 3, 2], lambda x: _shuffle(x, 1, 3)),
    "shuffle_channels_last_axis": lambda: unary([2, 3, 8], lambda x: _shuffle(x, -1, 2)),
    "shuffle_channels_dynamic_batch": lambda: _shuffle_dynamic(),
    "space_to_depth_5d_blocks_first": lambda: _space("SpaceToDepth", [1, 2, 4, 2, 6], "blocks_first", 2),
}


# ---------------------------------------------------------------------------------------------- normalizations
def _group_norm(shape: list[int], groups: int, eps: float) -> Case:
    channels = shape[1]
    return unary(shape, lambda x: node("opset12", "GroupNormalization",
                                       [x, const(data(channels)), const(data(channels))],
                                       {"num_groups": groups, "epsilon": eps}))


def _lrn(shape: list[int], axes: list[int], size: int, alpha: float = 0.3, beta: float = 0.75,
         bias: float = 1.0) -> Case:
    return unary(shape, lambda x: o1.lrn(x, const(axes, np.int64), alpha, beta, bias, size))


def _batch_norm(version: Any, shape: list[int]) -> Case:
    channels = shape[1]
    variance = const(RNG.random(channels).astype(F32) + 0.5)
    return unary(shape, lambda x: version.batch_norm_inference(x, const(data(channels)), const(data(channels)),
                                                               const(data(channels)), variance, 1e-3))


NORM: dict[str, Callable[[], Case]] = {
    "batch_norm1": lambda: _batch_norm(o1, [2, 3, 4, 5]),
    "batch_norm5": lambda: _batch_norm(o5, [2, 3, 4, 5]),
    "batch_norm5_2d": lambda: _batch_norm(o5, [4, 6]),
    "group_norm": lambda: _group_norm([2, 6, 3, 4], 3, 1e-5),
    "group_norm_one_group_3d": lambda: _group_norm([2, 4, 5], 1, 1e-3),
    "group_norm_per_channel_5d": lambda: _group_norm([1, 4, 2, 3, 2], 4, 1e-2),
    "lrn_channels": lambda: _lrn([2, 7, 3, 4], [1], 3),
    "lrn_channels_size5": lambda: _lrn([1, 8, 2, 2], [1], 5, alpha=0.7, beta=0.5, bias=2.0),
    "lrn_channels_3d": lambda: _lrn([2, 6, 5], [1], 3),
    "lrn_spatial": lambda: _lrn([2, 3, 5, 6], [2, 3], 3),
    "lrn_spatial_size5": lambda: _lrn([1, 2, 6, 7], [3, 2], 5, alpha=2.0, beta=0.6, bias=2.0),
}


# ---------------------------------------------------------------------------------------------- FakeQuantize
def _fake_quantize(shape: list[int], levels: int, low: Any, high: Any, out_low: Any, out_high: Any,
                   values: np.ndarray | None = None) -> Case:
    return unary(shape, lambda x: o1.fake_quantize(x, const(low), const(high), const(out_low), const(out_high),
                                                   levels), values)


#: Values a step's width away from every rounding tie, so f32 evaluation order cannot move one across.
RAMP = (np.linspace(-1.3, 1.3, 48, dtype=np.float64) + 0.0123).astype(F32).reshape(2, 3, 2, 4)

QUANT: dict[str, Callable[[], Case]] = {
    "fake_quantize_scalar_ranges": lambda: _fake_quantize([2, 3, 2, 4], 256, -1.0, 1.0, -1.0, 1.0, RAMP),
    "fake_quantize_u8_like": lambda: _fake_quantize([2, 3, 2, 4], 256, 0.0, 1.0, 0.0, 255.0, RAMP),
    "fake_quantize_per_channel": lambda: _fake_quantize(
        [2, 3, 2, 4], 16, [[[[-1.0]], [[-0.5]], [[0.0]]]], [[[[1.0]], [[0.75]], [[1.2]]]],
        [[[[-2.0]], [[0.0]], [[1.0]]]], [[[[2.0]], [[3.0]], [[-1.0]]]], RAMP),
    "fake_quantize_two_levels": lambda: _fake_quantize([2, 3, 2, 4], 2, -0.5, 0.5, -1.0, 1.0, RAMP),
    "fake_quantize_reversed_output_range": lambda: _fake_quantize([2, 3, 2, 4], 5, -0.7, 0.9, 4.0, 0.0, RAMP),
    "fake_quantize_computed_ranges": lambda: _fake_quantize_computed(),
}


def _fake_quantize_computed() -> Case:
    x, low = param("x", [2, 3, 2, 4]), param("low", [1, 3, 1, 1])
    out = o1.fake_quantize(x, low, o1.add(low, const(1.5)), const(-1.0), const(1.0), 7)
    return [out], [x, low], {"x": RAMP, "low": np.array([-1.0, -0.25, 0.5], F32).reshape(1, 3, 1, 1)}


# ---------------------------------------------------------------------------------------------- attention
def _sdpa(q: list[int], k: list[int], v: list[int], causal: bool, mask: list[int] | None = None,
          mask_type: Any = F32, scale: float | None = None) -> Case:
    query, key, value = param("q", q), param("k", k), param("v", v)
    params = [query, key, value]
    feeds = {"q": data(*q), "k": data(*k), "v": data(*v)}
    inputs: list[Any] = [query, key, value]
    if mask is not None:
        m = param("m", mask, mask_type)
        params.append(m)
        inputs.append(m)
        feeds["m"] = RNG.random(mask) > 0.3 if mask_type is bool else data(*mask)
        if mask_type is bool:
            feeds["m"][..., 0] = True  # no row wholly masked
    if scale is not None:
        if mask is None:
            inputs.append(const(0.0))
        inputs.append(const(scale))
    out = node("opset13", "ScaledDotProductAttention", inputs, {"causal": causal})
    return [out], params, feeds


ATTENTION: dict[str, Callable[[], Case]] = {
    "sdpa": lambda: _sdpa([2, 5, 8], [2, 6, 8], [2, 6, 4], False),
    "sdpa_causal": lambda: _sdpa([2, 3, 5, 8], [2, 3, 5, 8], [2, 3, 5, 8], True),
    "sdpa_causal_ignores_mask": lambda: _sdpa([2, 2, 4, 8], [2, 2, 4, 8], [2, 2, 4, 8], True, [2, 1, 4, 4]),
    "sdpa_causal_rectangular": lambda: _sdpa([1, 2, 4, 8], [1, 2, 6, 8], [1, 2, 6, 3], True),
    "sdpa_float_mask": lambda: _sdpa([2, 2, 4, 8], [2, 2, 6, 8], [2, 2, 6, 8], False, [2, 1, 4, 6]),
    "sdpa_bool_mask_broadcast_rows": lambda: _sdpa([2, 2, 4, 8], [2, 2, 6, 8], [2, 2, 6, 8], False, [2, 2, 1, 6],
                                                   bool),
    "sdpa_scale": lambda: _sdpa([2, 4, 8], [2, 6, 8], [2, 6, 8], False, [2, 4, 6], scale=0.3),
    "sdpa_scale_zero_mask": lambda: _sdpa([2, 4, 8], [2, 6, 8], [2, 6, 8], False, scale=0.7),
    "sdpa_broadcast_batch": lambda: _sdpa([1, 3, 4, 8], [2, 1, 6, 8], [2, 3, 6, 5], False),
    "sdpa_dynamic_causal": lambda: _sdpa_dynamic(),
}


def _sdpa_dynamic() -> Case:
    query, key, value = param("q", [-1, 2, -1, 8]), param("k", [-1, 2, -1, 8]), param("v", [-1, 2, -1, 8])
    out = node("opset13", "ScaledDotProductAttention", [query, key, value], {"causal": True})
    return [out], [query, key, value], {"q": data(2, 2, 3, 8), "k": data(2, 2, 5, 8), "v": data(2, 2, 5, 8)}


ALL.update({**SPACE, **NORM, **QUANT, **ATTENTION})

REFUSED.update({
    "lrn_channels_and_spatial_axes": (lambda: _lrn([1, 2, 5, 5], [1, 2, 3], 3), UnsupportedOpError,
                                      "axes [1, 2, 3]"),
    "lrn_even_size": (lambda: _lrn([1, 6, 2, 2], [1], 4), UnsupportedOpError, "size 4"),
    "lrn_fractional_bias": (lambda: _lrn([1, 6, 2, 2], [1], 3, bias=1.5), UnsupportedOpError, "truncates it to 1"),
    "fake_quantize_empty_input_range": (lambda: _fake_quantize([2, 3, 2, 4], 2, 0.0, 0.0, -1.0, 1.0),
                                        UnsupportedOpError, "input_low >= input_high"),
    "fake_quantize_reversed_input_range": (lambda: _fake_quantize([2, 3, 2, 4], 5, 0.9, -0.7, 0.0, 4.0),
                                           UnsupportedOpError, "input_low >= input_high"),
    "grid_sample_bicubic_border": (lambda: _grid_sample("bicubic", "border", False), UnsupportedOpError,
                                   "clamps each tap"),
    "depth_to_space_5d_dynamic": (lambda: unary([1, 16, -1, 1, 3], lambda x: node(
        "opset1", "DepthToSpace", [x], {"mode": "blocks_first", "block_size": 2}), np.zeros(0, F32)),
        UnsupportedOpError, "are not static"),
})


# ---------------------------------------------------------------------------------------------- Interpolate
def _interp4(shape: list[int], mode: str, sizes: list[int] | None = None, scales: list[float] | None = None,
             axes: list[int] | None = None, opset: str = "opset4", **attrs: Any) -> Case:
    x = param("x", shape)
    by_sizes = sizes is not None
    values = const(sizes, np.int64) if by_sizes else const(scales, F32)
    args = {"mode": mode, "shape_calculation_mode": "sizes" if by_sizes else "scales", **attrs}
    if opset == "opset4":
        n = len(sizes if by_sizes else scales or [])
        inputs = [x, values if by_sizes else const([1] * n, np.int64), const([1.0] * n) if by_sizes else values]
    else:
        inputs = [x, values]
    if axes is not None:
        inputs.append(const(axes, np.int64))
    return [node(opset, "Interpolate", inputs, args)], [x], {"x": data(*shape)}


def _interp1(shape: list[int], axes: list[int], sizes: list[int], mode: str, **attrs: Any) -> Case:
    x = param("x", shape)
    args = {"axes": axes, "mode": mode, "align_corners": False, "antialias": False, "pads_begin": [0],
            "pads_end": [0], **attrs}
    return [node("opset1", "Interpolate", [x, const(sizes, np.int64)], args)], [x], {"x": data(*shape)}


def _interp_computed_sizes() -> Case:
    x, like = param("x", [1, 2, 3, 4]), param("like", [-1, -1])
    sizes = o1.shape_of(like)
    out = node("opset11", "Interpolate", [x, sizes, const([2, 3], np.int64)],
               {"mode": "nearest", "shape_calculation_mode": "sizes", "coordinate_transformation_mode": "asymmetric",
                "nearest_mode": "floor"})
    return [out], [x, like], {"x": data(1, 2, 3, 4), "like": data(6, 7)}


def _interp_dynamic(mode: str, **attrs: Any) -> Case:
    x = param("x", [-1, 2, -1, -1])
    by_sizes = "sizes" in attrs
    values = const(attrs.pop("sizes"), np.int64) if by_sizes else const(attrs.pop("scales"))
    out = node("opset11", "Interpolate", [x, values, const([2, 3], np.int64)],
               {"mode": mode, "shape_calculation_mode": "sizes" if by_sizes else "scales", **attrs})
    return [out], [x], {"x": data(3, 2, 4, 5)}


NCHW = [1, 2, 4, 5]
INTERPOLATE: dict[str, Callable[[], Case]] = {
    "interp4_nearest_sizes": lambda: _interp4(NCHW, "nearest", sizes=[7, 9], axes=[2, 3]),
    "interp4_nearest_scales": lambda: _interp4(NCHW, "nearest", scales=[2.0, 1.5], axes=[2, 3],
                                               coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    "interp4_nearest_align_corners_ceil": lambda: _interp4(NCHW, "nearest", sizes=[7, 3], axes=[2, 3],
                                                           coordinate_transformation_mode="align_corners",
                                                           nearest_mode="ceil"),
    "interp4_nearest_pytorch_prefer_ceil": lambda: _interp4(NCHW, "nearest", sizes=[8, 1], axes=[2, 3],
                                                            coordinate_transformation_mode="pytorch_half_pixel",
                                                            nearest_mode="round_prefer_ceil"),
    "interp4_nearest_tf_floor": lambda: _interp4(NCHW, "nearest", sizes=[7, 3], axes=[2, 3],
                                                 coordinate_transformation_mode="tf_half_pixel_for_nn",
                                                 nearest_mode="floor"),
    "interp4_nearest_tf_prefer_floor": lambda: _interp4(NCHW, "nearest", sizes=[7, 3], axes=[2, 3],
                                                        coordinate_transformation_mode="tf_half_pixel_for_nn",
                                                        nearest_mode="round_prefer_floor"),
    "interp4_nearest_simple_up": lambda: _interp4(NCHW, "nearest", scales=[2.0, 3.0], axes=[2, 3],
                                                  coordinate_transformation_mode="asymmetric", nearest_mode="simple"),
    "interp4_nearest_simple_down": lambda: _interp4([1, 2, 8, 9], "nearest", sizes=[3, 4], axes=[2, 3],
                                                    coordinate_transformation_mode="asymmetric",
                                                    nearest_mode="simple"),
    "interp4_nearest_simple_mixed": lambda: _interp4(NCHW, "nearest", sizes=[9, 3], axes=[2, 3],
                                                     nearest_mode="simple"),
    "interp4_nearest_simple_mixed_scales": lambda: _interp4([2, 3, 8, 4], "nearest", scales=[0.5, 2.5], axes=[2, 3],
                                                            nearest_mode="simple",
                                                            coordinate_transformation_mode="asymmetric"),
    "interp1_nearest_mixed": lambda: _interp1([1, 2, 8, 4], [2, 3], [3, 9], "nearest"),
    "interp4_nearest_default_axes": lambda: _interp4([2, 3, 4], "nearest", sizes=[2, 6, 7],
                                                     coordinate_transformation_mode="asymmetric",
                                                     nearest_mode="floor"),
    "interp4_nearest_pads": lambda: _interp4(NCHW, "nearest", sizes=[9, 12], axes=[2, 3], pads_begin=[0, 0, 1, 2],
                                             pads_end=[0, 0, 2, 1], coordinate_transformation_mode="asymmetric",
                                             nearest_mode="floor"),
    "interp4_linear_onnx_half_pixel": lambda: _interp4(NCHW, "linear_onnx", sizes=[7, 9], axes=[2, 3]),
    "interp4_linear_onnx_align_corners": lambda: _interp4(NCHW, "linear_onnx", scales=[2.0, 0.6], axes=[2, 3],
                                                          coordinate_transformation_mode="align_corners"),
    "interp4_linear_onnx_asymmetric_down": lambda: _interp4([1, 2, 9, 8], "linear_onnx", sizes=[4, 3], axes=[2, 3],
                                                            coordinate_transformation_mode="asymmetric"),
    "interp4_linear_half_pixel": lambda: _interp4(NCHW, "linear", sizes=[7, 9], axes=[2, 3]),
    "interp4_linear_pytorch_down": lambda: _interp4([1, 2, 9, 8], "linear", sizes=[4, 3], axes=[2, 3],
                                                    coordinate_transformation_mode="pytorch_half_pixel"),
    "interp4_linear_antialias_up": lambda: _interp4(NCHW, "linear", sizes=[8, 7], axes=[2, 3], antialias=True),
    "interp4_linear_3d": lambda: _interp4([1, 1, 3, 4, 5], "linear", sizes=[5, 6, 4], axes=[2, 3, 4]),
    "interp4_cubic": lambda: _interp4(NCHW, "cubic", sizes=[7, 9], axes=[2, 3]),
    "interp4_cubic_coeff_align_corners": lambda: _interp4(NCHW, "cubic", sizes=[3, 8], axes=[2, 3], cube_coeff=-0.5,
                                                          coordinate_transformation_mode="align_corners"),
    "interp11_nearest_scales": lambda: _interp4(NCHW, "nearest", scales=[2.0, 2.0], axes=[2, 3], opset="opset11",
                                                coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    "interp11_linear_onnx_sizes": lambda: _interp4(NCHW, "linear_onnx", sizes=[3, 7], axes=[2, 3], opset="opset11"),
    "interp11_bilinear_pillow_down": lambda: _interp4([1, 2, 9, 8], "bilinear_pillow", sizes=[4, 3], axes=[2, 3],
                                                      opset="opset11"),
    "interp11_bilinear_pillow_up": lambda: _interp4(NCHW, "bilinear_pillow", sizes=[7, 9], axes=[2, 3],
                                                    opset="opset11"),
    "interp11_bicubic_pillow_down": lambda: _interp4([1, 2, 9, 8], "bicubic_pillow", sizes=[4, 5], axes=[2, 3],
                                                     opset="opset11", cube_coeff=-0.5),
    "interp11_bicubic_pillow_up": lambda: _interp4(NCHW, "bicubic_pillow", sizes=[7, 9], axes=[2, 3],
                                                   opset="opset11", cube_coeff=-0.5),
    "interp11_computed_sizes": _interp_computed_sizes,
    "interp11_dynamic_sizes": lambda: _interp_dynamic("linear_onnx", sizes=[7, 3]),
    "interp11_dynamic_scales": lambda: _interp_dynamic("nearest", scales=[2.0, 3.0],
                                                       coordinate_transformation_mode="asymmetric",
                                                       nearest_mode="floor"),
    "interp11_dynamic_fractional_scales": lambda: _interp_dynamic("nearest", scales=[2.0, 0.5],
                                                                  coordinate_transformation_mode="asymmetric",
                                                                  nearest_mode="floor"),
    "interp1_nearest": lambda: _interp1(NCHW, [2, 3], [8, 10], "nearest"),
    "interp1_nearest_down": lambda: _interp1([1, 2, 8, 9], [2, 3], [3, 4], "nearest"),
    "interp1_linear": lambda: _interp1(NCHW, [2, 3], [7, 9], "linear"),
    "interp1_linear_align_corners": lambda: _interp1(NCHW, [2, 3], [7, 9], "linear", align_corners=True),
    "interp1_linear_3d_half_pixel": lambda: _interp1([1, 2, 5], [2], [8], "linear"),
    "interp1_cubic": lambda: _interp1(NCHW, [2, 3], [7, 9], "cubic"),
}

ALL.update(INTERPOLATE)

REFUSED.update({
    "interp1_area": (lambda: _interp1(NCHW, [2, 3], [2, 2], "area"), UnsupportedOpError, "mode='area'"),
    "interp4_tf_half_pixel_ceil": (lambda: _interp4(NCHW, "nearest", sizes=[7, 3], axes=[2, 3],
                                                    coordinate_transformation_mode="tf_half_pixel_for_nn",
                                                    nearest_mode="ceil"), UnsupportedOpError, "no such rounding"),
    "interp4_simple_tf_half_pixel_down": (lambda: _interp4(NCHW, "nearest", sizes=[8, 3], axes=[2, 3],
                                                           nearest_mode="simple",
                                                           coordinate_transformation_mode="tf_half_pixel_for_nn"),
                                          UnsupportedOpError, "(downsampling)"),
    "interp4_linear_antialias_down": (lambda: _interp4(NCHW, "linear", sizes=[8, 3], axes=[2, 3], antialias=True),
                                      UnsupportedOpError, "CPU plugin ignores antialias"),
    "interp4_linear_onnx_tf_half_pixel": (lambda: _interp4(NCHW, "linear_onnx", sizes=[8, 3], axes=[2, 3],
                                                           coordinate_transformation_mode="tf_half_pixel_for_nn"),
                                          UnsupportedOpError, "for nothing but nearest"),
})


#: Cases the frontend translates exactly and the TensorRT backend refuses, with what it must say.
BACKEND_REFUSES = {
    # TensorRT maps coordinates by the lengths' ratio, the scale only when length × scale is whole (the
    # pillow modes' antialiased downscaling, on fixed lengths, is built from gathers and matches)
    "interp11_dynamic_fractional_scales": "known only at run time",
}


# ---------------------------------------------------------------------------------------------- a converted model
#: A small CNN in ONNX, for OpenVINO's own converter to write as IR: the attribute forms users' IRs hold
#: (MaxPool-8, Interpolate-11, GroupNormalization-12, f16 weights behind Convert, ...).
CNN = """
<ir_version: 10, opset_import: ["" : 21]>
cnn (float[1, 3, 16, 16] x) => (float[1, 4, H, W] y, float[1, A, B] att) {
  c1 = Conv <pads = [1, 1, 1, 1]> (x, w1, b1)
  r1 = Relu (c1)
  p1 = MaxPool <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], ceil_mode = 1> (r1)
  g1 = Conv <group = 8, pads = [1, 1, 1, 1]> (p1, wg, bg)
  n1 = GroupNormalization <num_groups = 4, epsilon = 1e-5> (g1, gs, gb)
  a1 = AveragePool <kernel_shape = [2, 2], strides = [2, 2]> (n1)
  u1 = ConvTranspose <strides = [2, 2], pads = [1, 1, 1, 1], output_padding = [1, 1]> (a1, wt, bt)
  z1 = Resize <mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"> (u1, , sc)
  l1 = LRN <size = 3, alpha = 0.001, beta = 0.75, bias = 1.0> (z1)
  d1 = DepthToSpace <blocksize = 2, mode = "CRD"> (l1)
  q = Conv (d1, wq)
  y = Resize <mode = "linear", coordinate_transformation_mode = "half_pixel"> (q, , sc2)
  f = Reshape (p1, shp)
  ft = Transpose <perm = [0, 2, 1]> (f)
  s = MatMul (ft, f)
  sm = Softmax <axis = -1> (s)
  att = MatMul (sm, ft)
}
"""


def _converted_cnn(folder: Path) -> Path:
    import onnx
    from onnx import numpy_helper

    rng = np.random.default_rng(5)
    weights = {"w1": (8, 3, 3, 3), "b1": (8,), "wg": (8, 1, 3, 3), "bg": (8,), "gb": (8,), "wt": (8, 8, 3, 3),
               "bt": (8,), "wq": (4, 2, 1, 1)}
    fixed = {"gs": np.linspace(0.5, 1.5, 8, dtype=F32), "sc": np.array([1, 1, 2, 2], F32),
             "sc2": np.array([1, 1, 2, 2], F32), "shp": np.array([1, 8, -1], np.int64)}
    model = onnx.parser.parse_model(CNN)
    arrays = {name: (rng.standard_normal(shape) * 0.3).astype(F32) for name, shape in weights.items()} | fixed
    model.graph.initializer.extend(numpy_helper.from_array(a, name) for name, a in arrays.items())
    onnx.save(model, str(folder / "cnn.onnx"))
    xml = folder / "cnn.xml"
    ov.save_model(ov.convert_model(str(folder / "cnn.onnx")), str(xml))  # f16 weights, as users save them
    return xml


def test_converted_cnn_ir(tmp_path: Path) -> None:
    xml = _converted_cnn(tmp_path)
    check_ir(xml, {"x": data(1, 3, 16, 16)}, tmp_path)


def test_converted_cnn_end_to_end(tmp_path: Path) -> None:
    xml = _converted_cnn(tmp_path)
    model = import_ir(xml)
    optimize(model)
    missing = _missing_converters(model.graph)
    if missing:
        pytest.skip(f"the backend has no converter for {', '.join(sorted(missing))} yet")
    check(xml, {"x": data(1, 3, 16, 16)}, tmp_path)


# ---------------------------------------------------------------------------------------------- tests
@pytest.mark.parametrize("name", ALL)
def test_ir(name: str, tmp_path: Path) -> None:
    outputs, params, feeds = ALL[name]()
    check_ir(ov.Model(outputs, params, name), feeds, tmp_path)


def _missing_converters(graph: Graph) -> set[str]:
    ops: set[str] = set()
    for node in graph.nodes:
        ops.add(node.op)
        for body in node.subgraphs():
            ops |= _missing_converters(body)
    return {op for op in ops if op not in CONVERTERS}


@pytest.mark.parametrize("name", ALL)
def test_end_to_end(name: str, tmp_path: Path) -> None:
    outputs, params, feeds = ALL[name]()
    xml = save(ov.Model(outputs, params, name), tmp_path / "model.xml")
    model = import_ir(xml)
    optimize(model)
    missing = _missing_converters(model.graph)
    if missing:
        pytest.skip(f"the backend has no converter for {', '.join(sorted(missing))} yet")
    if name in BACKEND_REFUSES:
        with pytest.raises(UnsupportedConversionError, match=BACKEND_REFUSES[name]):
            check(xml, feeds, tmp_path)
        return
    check(xml, feeds, tmp_path)


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused(name: str, tmp_path: Path) -> None:
    """The API raises the error type; ``loopc build`` exits 1 with one line naming the layer, writing nothing."""
    make, error, text = REFUSED[name]
    outputs, params, _ = make()
    xml = save(ov.Model(outputs, params, name), tmp_path / "model.xml")
    with pytest.raises(error, match=text.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")) as caught:
        import_ir(xml)
    plan = tmp_path / "model.plan"
    result = run_cli("build", str(xml), "-o", str(plan))
    assert result.exit_code == 1, result.stderr  # type: ignore[attr-defined]
    line = check_one_line(result.stderr, [text])  # type: ignore[attr-defined]
    assert str(caught.value).split(":")[0] in line and not plan.exists()


def test_maxpool8_reads_no_ceil_torch(tmp_path: Path) -> None:
    """ceil_torch came with MaxPool-14; in a MaxPool-8 layer it is an unknown rounding, refused by name."""
    outputs, params, _ = _pool("MaxPool", "opset14", [1, 1, 5], [2], rounding_type="ceil_torch")
    xml = save(ov.Model(outputs, params, "ceil_torch"), tmp_path / "model.xml")
    xml.write_text(xml.read_text().replace('type="MaxPool" version="opset14"', 'type="MaxPool" version="opset8"'))
    with pytest.raises(UnsupportedOpError, match="rounding_type='ceil_torch' is not one of floor, ceil"):
        import_ir(xml)

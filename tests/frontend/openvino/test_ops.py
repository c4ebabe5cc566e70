"""OpenVINO op translators against OpenVINO's CPU plugin (f32) on the same IR.

Each case builds a tiny model with OpenVINO's own opset builders (``NodeFactory`` where the Python
builders lack a version or attribute), runs it through loopc — frontend, passes, the real TensorRT
builder, the simulator — and compares every output with OpenVINO's: values, shapes and dtypes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset1 as o1
import openvino.opset2 as o2
import openvino.opset3 as o3
import openvino.opset4 as o4
import openvino.opset5 as o5
import openvino.opset6 as o6
import openvino.opset7 as o7
import openvino.opset8 as o8
import openvino.opset9 as o9
import openvino.opset10 as o10
import openvino.opset11 as o11
import openvino.opset12 as o12
import openvino.opset13 as o13
import openvino.opset15 as o15
import openvino.opset16 as o16
import pytest
from openvino.utils.node_factory import NodeFactory

from loopc.errors import UnsupportedOpError
from loopc.frontend.openvino import import_ir
from tests.frontend.openvino.harness import Case, check, param, run_loopc, save

RNG = np.random.default_rng(7)
F32 = np.float32

def const(value: Any, dtype: Any = None) -> Any:
    return o13.constant(np.array(value, dtype))


def data(*shape: int, dtype: Any = F32) -> np.ndarray:
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(shape).astype(dtype)
    return RNG.integers(-5, 6, shape).astype(dtype)


def node(opset: str, op_type: str, inputs: list[Any], attrs: dict[str, Any]) -> Any:
    return NodeFactory(opset).create(op_type, [i.output(0) if hasattr(i, "output") else i for i in inputs], attrs)


def unary(shape: list[int], fn: Callable[[Any], Any], dtype: Any = F32, values: np.ndarray | None = None) -> Case:
    x = param("x", shape, dtype)
    out = fn(x)
    return list(out.outputs()), [x], {"x": data(*shape, dtype=dtype) if values is None else values}


# ---------------------------------------------------------------------------------------------- shapes
def _shapeof_dynamic(output_type: str) -> Case:
    x = param("x", [-1, 3])
    shape = o3.shape_of(x, output_type)
    flat = o1.reshape(x, o1.reduce_prod(shape, const([0]), True), False)
    return [shape, flat], [x], {"x": data(4, 3)}


def _variadic_dynamic() -> Case:
    x = param("x", [2, -1])
    pieces = o1.variadic_split(x, const(1, np.int64), const([1, -1, 2], np.int64))
    return list(pieces.outputs()), [x], {"x": data(2, 7)}


def _broadcast_to_shape_of() -> Case:
    x, y = param("x", [-1, 1]), param("y", [-1, 4])
    return [o3.broadcast(x, o3.shape_of(y))], [x, y], {"x": data(3, 1), "y": data(3, 4)}


def _computed_slice() -> Case:
    x, n = param("x", [6, 4]), param("n", [1], np.int64)
    return [o8.slice(x, const([1], np.int64), n, const([1], np.int64))], [x, n], {"x": data(6, 4),
                                                                                    "n": np.array([4], np.int64)}


def _tile_computed() -> Case:
    x, y = param("x", [2, 3]), param("y", [-1])
    return [o1.tile(x, o3.shape_of(y))], [x, y], {"x": data(2, 3), "y": data(3)}


def _range4_computed(output_type: str) -> Case:
    n = param("n", [], np.int32)
    return [node("opset4", "Range", [const(-3, np.int64), n, const(2, np.int32)], {"output_type": output_type})], \
        [n], {"n": np.array(6, np.int32)}


def _eye(batch: list[int] | None, diagonal: int, computed: bool = False) -> Case:
    n = param("n", [], np.int32) if computed else const(3, np.int32)
    extra = {} if batch is None else {"batch_shape": const(batch, np.int64)}
    out = o9.eye(n, const(4, np.int64), const(diagonal, np.int64), "f32", **extra)
    return [out], [n] if computed else [], {"n": np.array(3, np.int32)} if computed else {}


def _reverse(mode: str, axes: list[Any]) -> Case:
    dtype = bool if mode == "mask" else np.int64
    return unary([2, 3, 4], lambda x: node("opset1", "Reverse", [x, const(axes, dtype)], {"mode": mode}))


def _range_computed() -> Case:
    n = param("n", [], np.int64)
    r = o1.range(const(1, np.int64), n, const(2, np.int64))
    return [r], [n], {"n": np.array(8, np.int64)}


SHAPES: dict[str, Callable[[], Case]] = {
    "shapeof1": lambda: unary([2, 3, 4], o1.shape_of),
    "shapeof3_i32": lambda: unary([2, 3, 4], lambda x: o3.shape_of(x, "i32")),
    "shapeof3_dynamic_i64": lambda: _shapeof_dynamic("i64"),
    "shapeof3_dynamic_i32": lambda: _shapeof_dynamic("i32"),
    "reshape_special_zero": lambda: unary([2, 3, 4], lambda x: o1.reshape(x, const([0, -1], np.int32), True)),
    "reshape_plain": lambda: unary([2, 3, 4], lambda x: o1.reshape(x, const([4, -1], np.int64), False)),
    "reshape_scalar": lambda: unary([1, 1], lambda x: o1.reshape(x, const([], np.int64), False)),
    "squeeze1": lambda: unary([2, 1, 3, 1], lambda x: o1.squeeze(x, const([1], np.int64))),
    "squeeze1_all": lambda: unary([2, 1, 3, 1], lambda x: node("opset1", "Squeeze", [x], {})),
    "squeeze15_all": lambda: unary([1, 2, 1], lambda x: o15.squeeze(x)),
    "squeeze1_non_unit_kept": lambda: unary([2, 1, 3], lambda x: o1.squeeze(x, const([0, 1], np.int32))),
    "squeeze1_negative": lambda: unary([2, 1, 3, 1], lambda x: o1.squeeze(x, const(-1, np.int64))),
    "squeeze1_dynamic_axis": lambda: unary([2, -1], lambda x: o1.squeeze(x, const([1], np.int64)),
                                           values=data(2, 1)),
    "squeeze15_skip": lambda: unary([2, 1, 3], lambda x: o15.squeeze(x, const([0, 1], np.int64), True)),
    "unsqueeze": lambda: unary([2, 3], lambda x: o1.unsqueeze(x, const([0, -1], np.int64))),
    "unsqueeze_scalar_axis": lambda: unary([2, 3], lambda x: o1.unsqueeze(x, const(1, np.int32))),
    "transpose": lambda: unary([2, 3, 4], lambda x: o1.transpose(x, const([2, 0, 1], np.int64))),
    "transpose_empty_order": lambda: unary([2, 3, 4], lambda x: o1.transpose(x, const([], np.int64))),
    "broadcast1_numpy": lambda: unary([3, 1], lambda x: o1.broadcast(x, const([2, 3, 4], np.int64))),
    "broadcast1_explicit": lambda: unary([3], lambda x: o1.broadcast(x, const([2, 3, 4], np.int64),
                                                                      const([1], np.int64), "EXPLICIT")),
    "broadcast3_numpy": lambda: unary([3, 1], lambda x: o3.broadcast(x, const([2, 3, 4], np.int32))),
    "broadcast3_bidirectional": lambda: unary([3, 1], lambda x: o3.broadcast(x, const([1, 4], np.int64),
                                                                              broadcast_spec="BIDIRECTIONAL")),
    "broadcast3_explicit": lambda: unary([2, 4], lambda x: o3.broadcast(x, const([2, 3, 4], np.int64),
                                                                         const([0, 2], np.int64), "EXPLICIT")),
    "broadcast3_to_shape_of": _broadcast_to_shape_of,
    "slice8_computed_stop": _computed_slice,
    "tile_computed_repeats": _tile_computed,
    "tile": lambda: unary([2, 3], lambda x: o1.tile(x, const([2, 3], np.int64))),
    "tile_short_repeats": lambda: unary([2, 3], lambda x: o1.tile(x, const([2], np.int64))),
    "tile_long_repeats": lambda: unary([2, 3], lambda x: o1.tile(x, const([2, 1, 2], np.int32))),
    "concat": lambda: unary([2, 3], lambda x: o1.concat([x, o1.negative(x), x], -1)),
    "split": lambda: unary([6, 4], lambda x: o1.split(x, const(0, np.int64), 3)),
    "split_negative_axis": lambda: unary([6, 4], lambda x: o1.split(x, const(-1, np.int32), 2)),
    "variadic_split": lambda: unary([2, 7], lambda x: o1.variadic_split(x, const(1, np.int64),
                                                                        const([1, -1, 2], np.int64))),
    "variadic_split_exact": lambda: unary([7, 2], lambda x: o1.variadic_split(x, const(-2, np.int32),
                                                                              const([3, 4], np.int32))),
    "variadic_split_dynamic": _variadic_dynamic,
    "range1_const": lambda: ([o1.range(const(2, np.int32), const(11, np.int32), const(3, np.int32))], [], {}),
    "range1_float": lambda: ([o1.range(const(0.5, F32), const(3.0, F32), const(0.75, F32))], [], {}),
    "range1_computed": _range_computed,
    "range4_f32_from_ints": lambda: ([node("opset4", "Range", [const(1, np.int32), const(7, np.int64),
                                                               const(2, np.int32)], {"output_type": "f32"})], [], {}),
    "range4_i32_whole_floats": lambda: ([node("opset4", "Range", [const(6.0, F32), const(0, np.int32),
                                                                  const(-2, np.int64)], {"output_type": "i32"})],
                                        [], {}),
    "range4_computed_i64": lambda: _range4_computed("i64"),
    "range4_computed_f32": lambda: _range4_computed("f32"),
    "reverse_index": lambda: _reverse("index", [0, 2]),
    "reverse_mask": lambda: _reverse("mask", [False, True, True]),
    "eye": lambda: _eye(None, 0),
    "eye_shifted_batched": lambda: _eye([2], -1),
    "eye_computed_rows": lambda: _eye([2, 1], 2, computed=True),
    "pad1_constant": lambda: unary([2, 3], lambda x: o1.pad(x, const([1, 0], np.int64), const([0, 2], np.int64),
                                                            "constant", const(1.5, F32))),
    "pad1_edge": lambda: unary([2, 3], lambda x: o1.pad(x, const([1, 2], np.int64), const([2, 1], np.int64),
                                                        "edge")),
    "pad12_reflect": lambda: unary([3, 4], lambda x: o12.pad(x, const([1, 2], np.int32), const([2, 1], np.int32),
                                                             "reflect")),
    "pad12_negative": lambda: unary([3, 4], lambda x: o12.pad(x, const([-1, 2], np.int64), const([1, -2], np.int64),
                                                              "constant")),
    "identity16": lambda: unary([2, 3], o16.identity),
}


# ---------------------------------------------------------------------------------------------- indexing
def _gather(version: Any, shape: list[int], indices: Any, axis: int, batch_dims: int | None = None) -> Case:
    x = param("x", shape)
    args = (x, const(indices, np.int64), const(axis, np.int64))
    out = version.gather(*args) if batch_dims is None else version.gather(*args, batch_dims=batch_dims)
    return [out], [x], {"x": data(*shape)}


def _gather_computed_index(index: int) -> Case:
    x, i = param("x", [3, 4]), param("i", [], np.int64)
    return [o8.gather(x, i, const(1, np.int64))], [x, i], {"x": data(3, 4), "i": np.array(index, np.int64)}


def _one_hot_computed_depth() -> Case:
    i, d = param("i", [3], np.int32), param("d", [], np.int64)
    out = o1.one_hot(i, d, const(1.0, F32), const(0.0, F32), -1)
    return [out], [i, d], {"i": np.array([2, 0, 4], np.int32), "d": np.array(5, np.int64)}


def _strided(shape: list[int], begin: list[int], end: list[int], stride: list[int] | None,
             values: np.ndarray | None = None, **masks: list[int]) -> Case:
    def build(x: Any) -> Any:
        b, e = const(begin, np.int64), const(end, np.int64)
        s = const(stride if stride is not None else [1] * len(begin), np.int64)
        zeros = [0] * len(begin)  # OpenVINO wants every mask as long as begin
        return o1.strided_slice(x, b, e, s, *(masks.get(key, zeros) for key in (
            "begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask", "ellipsis_mask")))

    return unary(shape, build, values=values)


def _topk(version: Any, shape: list[int], k: int, axis: int, mode: str, sort: str, **extra: Any) -> Case:
    x = param("x", shape)
    values = RNG.permutation(np.prod(shape)).reshape(shape).astype(F32)  # no ties
    out = version.topk(x, const(k, np.int64), axis, mode, sort, **extra)
    return list(out.outputs()), [x], {"x": values}


def _topk_computed_k() -> Case:
    x, k = param("x", [2, 6]), param("k", [], np.int32)
    values = RNG.permutation(12).reshape(2, 6).astype(F32)
    return list(o11.topk(x, k, 1, "max", "value").outputs()), [x, k], {"x": values, "k": np.array(4, np.int32)}


def _topk_ties() -> Case:
    x = param("x", [2, 6])
    out = o11.topk(x, const(3, np.int32), 1, "max", "value", "i64", True)
    values = np.array([[1, 3, 3, 0, 3, 2], [5, 5, 1, 5, 0, 5]], F32)
    return list(out.outputs()), [x], {"x": values}


def _one_hot(axis: int, indices: np.ndarray, negative_mode: str | None = None) -> Case:
    i = param("i", list(indices.shape), indices.dtype)
    args = (i, const(4, np.int64), const(2.5, F32), const(-1.0, F32), axis)
    out = o1.one_hot(*args) if negative_mode is None else o16.one_hot(*args, negative_indices_mode=negative_mode)
    return [out], [i], {"i": indices}


def _scatter_update(axis: int, indices: np.ndarray, data_shape: list[int]) -> Case:
    x = param("x", data_shape)
    update_shape = data_shape[:axis] + list(indices.shape) + data_shape[axis + 1:]
    u = param("u", update_shape)
    out = o3.scatter_update(x, const(indices, np.int64), u, const(axis, np.int64))
    return [out], [x, u], {"x": data(*data_shape), "u": data(*update_shape)}


def _scatter_nd(version: Any, negative: bool = False, **extra: Any) -> Case:
    x = param("x", [4, 3])
    u = param("u", [2, 3])
    out = version.scatter_nd_update(x, const([[-1], [1]] if negative else [[3], [1]], np.int32), u, **extra)
    return [out], [x, u], {"x": data(4, 3), "u": data(2, 3)}


def _scatter_elements(version: Any, axis: int, negative: bool = False, **extra: Any) -> Case:
    x = param("x", [3, 4])
    u = param("u", [2, 4])
    idx = np.array([[2, 0, 1, 2], [0, 1, 2, 1]], np.int64)
    if axis == 1:
        idx = np.array([[3, 0], [1, 2], [0, 3]], np.int64) - (4 if negative else 0)
        u = param("u", [3, 2])
    out = version.scatter_elements_update(x, const(idx), u, const(axis, np.int64), **extra)
    shape = [2, 4] if axis == 0 else [3, 2]
    return [out], [x, u], {"x": data(3, 4), "u": data(*shape)}


def _reverse_sequence(batch_axis: int, seq_axis: int, shape: list[int], lengths: list[int]) -> Case:
    x = param("x", shape)
    out = o1.reverse_sequence(x, const(lengths, np.int32), batch_axis, seq_axis)
    return [out], [x], {"x": data(*shape)}


INDEXING: dict[str, Callable[[], Case]] = {
    "gather1": lambda: _gather(o1, [4, 3], [[0, 3], [2, 2]], 0),
    "gather7_negative_axis": lambda: _gather(o7, [2, 5], [4, 0, 1], -1),
    "gather8_negative_indices": lambda: _gather(o8, [2, 5], [-1, 0, -5], 1),
    "gather8_scalar_index": lambda: _gather(o8, [3, 4], 2, 0),
    "gather8_batch1_axis1": lambda: _gather(o8, [2, 5, 3], [[0, 4, -1], [2, 2, 1]], 1, 1),
    "gather8_batch1_axis2": lambda: _gather(o8, [2, 3, 5, 2], [[0, 4], [-2, 1]], 2, 1),
    "gather7_batch_negative": lambda: _gather(o7, [2, 5, 3], [[0, 4], [2, 1]], 1, -1),
    "gather8_computed_index": lambda: _gather_computed_index(2),
    "gather8_computed_negative_index": lambda: _gather_computed_index(-3),
    "gather_nd5": lambda: unary([3, 4], lambda x: o5.gather_nd(x, const([[0, 1], [2, 3]], np.int32))),
    "gather_nd5_batch2": lambda: unary([2, 3, 4, 2], lambda x: o5.gather_nd(
        x, const(RNG.integers(0, 4, (2, 3, 2, 1)), np.int64), 2)),
    "gather_nd8_batch2": lambda: unary([2, 3, 4, 2], lambda x: o8.gather_nd(
        x, const(RNG.integers(0, 4, (2, 3, 2, 1)), np.int64), 2)),
    "gather_nd8_slices": lambda: unary([3, 4, 2], lambda x: o8.gather_nd(x, const([[2], [0]], np.int64))),
    "gather_elements": lambda: unary([3, 4], lambda x: o6.gather_elements(x, const([[0, 3], [1, 1], [2, 0]],
                                                                                  np.int32), 1)),
    "gather_elements_negative_axis": lambda: unary([3, 2], lambda x: o6.gather_elements(
        x, const([[2, 1], [0, 0]], np.int64), -2)),
    "slice8": lambda: unary([5, 6], lambda x: o8.slice(x, const([1, -1], np.int64), const([4, 0], np.int64),
                                                       const([2, -2], np.int64))),
    "slice8_axes": lambda: unary([5, 6, 2], lambda x: o8.slice(x, const([-4], np.int32), const([100], np.int32),
                                                               const([1], np.int32), const([-2], np.int32))),
    "strided_basic": lambda: _strided([5, 6], [1, 0], [4, 6], [2, 1]),
    "strided_masks": lambda: _strided([5, 6], [3, 2], [0, 5], [-1, 1], begin_mask=[1, 0], end_mask=[0, 1]),
    "strided_negative_stride_masked": lambda: _strided([5, 6], [0, 0], [0, 0], [-2, -1], begin_mask=[1, 1],
                                                       end_mask=[1, 1]),
    "strided_shrink": lambda: _strided([4, 5, 3], [2, 0, -1], [3, 5, 0], [1, 1, 1], begin_mask=[0, 1, 0],
                                       end_mask=[0, 1, 0], shrink_axis_mask=[1, 0, 1]),
    "strided_shrink_begin_masked": lambda: _strided([4, 5], [2, 0], [3, 5], [-2, 1], begin_mask=[1, 0],
                                                    shrink_axis_mask=[1, 0]),
    "strided_dynamic": lambda: _strided([-1, 5], [-2, 4], [0, 0], [1, -2], end_mask=[1, 1], values=data(6, 5)),
    "strided_new_axis": lambda: _strided([4, 5], [0, 1, 0], [0, 3, 0], [1, 1, 1], begin_mask=[0, 0, 1],
                                         end_mask=[0, 0, 1], new_axis_mask=[1, 0, 0]),
    "strided_ellipsis": lambda: _strided([2, 3, 4, 5], [0, 1], [0, 4], [1, 2], begin_mask=[0, 0], end_mask=[0, 0],
                                         ellipsis_mask=[1, 0]),
    "strided_ellipsis_new_shrink": lambda: _strided([2, 3, 4], [1, 0, 0, 2], [2, 0, 0, 3], [1, 1, 1, 1],
                                                    new_axis_mask=[0, 1, 0, 0], shrink_axis_mask=[1, 0, 0, 1],
                                                    ellipsis_mask=[0, 0, 1, 0]),
    "strided_short_spec": lambda: _strided([4, 5, 3], [1], [-1], [1]),
    "scatter_nd_update4": lambda: _scatter_nd(o13),
    "scatter_nd_update15": lambda: _scatter_nd(o15, reduction="none"),
    "scatter_update_axis0": lambda: _scatter_update(0, np.array([2, 0]), [4, 3]),
    "scatter_update_axis1_2d_indices": lambda: _scatter_update(1, np.array([[3, 0], [1, 4]]), [2, 5, 3]),
    "scatter_update_last_axis": lambda: _scatter_update(2, np.array([1]), [2, 3, 4]),
    "scatter_elements3": lambda: _scatter_elements(o3, 0),
    "scatter_elements12": lambda: _scatter_elements(o12, 1, reduction="none"),
    "scatter_elements12_negative_indices": lambda: _scatter_elements(o12, 1, reduction="none", negative=True),
    "scatter_nd_update15_negative_indices": lambda: _scatter_nd(o15, negative=True),
    "topk1_max_value": lambda: _topk(o1, [3, 6], 3, 1, "max", "value"),
    "topk1_min_index": lambda: _topk(o1, [6, 3], 2, 0, "min", "index"),
    "topk3_i64": lambda: _topk(o3, [2, 5], 4, -1, "max", "none", index_element_type="i64"),
    "topk11_vector": lambda: _topk(o11, [7], 3, 0, "min", "value", index_element_type="i32", stable=True),
    "topk11_index_order": lambda: _topk(o11, [2, 3, 6], 4, 2, "max", "index"),
    "topk11_stable_ties": _topk_ties,
    "topk11_computed_k": _topk_computed_k,
    "one_hot_last": lambda: _one_hot(-1, np.array([[0, 3], [1, 2]], np.int64)),
    "one_hot_first_out_of_range": lambda: _one_hot(0, np.array([0, -1, 3, 4, 2], np.int32)),
    "one_hot_middle": lambda: _one_hot(1, np.array([[0, 3, 1], [1, 2, 0]], np.int64)),
    "one_hot_computed_depth": _one_hot_computed_depth,
    "one_hot16_normalize": lambda: _one_hot(-1, np.array([0, -1, 3, -4, 4, -5], np.int64), "normalize"),
    "one_hot16_ignore_negative": lambda: _one_hot(0, np.array([0, -1, 3, -4], np.int32), "ignore_negative"),
    "reverse_sequence01": lambda: _reverse_sequence(0, 1, [3, 4, 2], [4, 1, 2]),
    "reverse_sequence10": lambda: _reverse_sequence(1, 0, [4, 3], [2, 3, 4]),
    "reverse_sequence_other_axes": lambda: _reverse_sequence(2, -1, [2, 3, 2, 4], [3, 1]),
}


# ---------------------------------------------------------------------------------------------- reductions
def _reduce(fn: Callable[..., Any], axes: Any, keep: bool, shape: list[int] = [2, 3, 4], dtype: Any = F32,
            values: np.ndarray | None = None) -> Case:
    return unary(shape, lambda x: fn(x, const(axes, np.int64), keep), dtype, values)


BOOLS = RNG.integers(0, 2, (2, 3, 4)).astype(bool)
BOOLS[0, :, 0] = True

REDUCE: dict[str, Callable[[], Case]] = {
    "reduce_max_keep": lambda: _reduce(o1.reduce_max, [1], True),
    "reduce_mean_two_axes": lambda: _reduce(o1.reduce_mean, [0, -1], False),
    "reduce_min_scalar_axis": lambda: _reduce(o1.reduce_min, -2, False),
    "reduce_prod": lambda: _reduce(o1.reduce_prod, [2], True),
    "reduce_sum_all": lambda: _reduce(o1.reduce_sum, [0, 1, 2], False),
    "reduce_l1": lambda: _reduce(o5.reduce_l1, [1], False),
    "reduce_l2": lambda: _reduce(o5.reduce_l2, [-1], True),
    "reduce_logical_and": lambda: _reduce(o1.reduce_logical_and, [2], False, dtype=bool, values=BOOLS),
    "reduce_logical_or": lambda: _reduce(o1.reduce_logical_or, [0, 2], True, dtype=bool, values=BOOLS),
    "reduce_sum_int": lambda: _reduce(o1.reduce_sum, [1], False, dtype=np.int32),
    "cumsum": lambda: unary([3, 4], lambda x: o3.cumsum(x, const(1, np.int64))),
    "cumsum_exclusive_reverse": lambda: unary([3, 4], lambda x: o3.cumsum(x, const(-2, np.int32), True, True)),
    "softmax1": lambda: unary([2, 3, 4], lambda x: o1.softmax(x, 1)),
    "softmax8_negative": lambda: unary([2, 3, 4], lambda x: o8.softmax(x, -1)),
    "log_softmax": lambda: unary([2, 5], lambda x: o5.log_softmax(x, -1)),
    "log_softmax_axis0": lambda: unary([4, 3], lambda x: o5.log_softmax(x, 0)),
    "mvn6_inside": lambda: unary([2, 3, 4], lambda x: o6.mvn(x, const([1, 2], np.int64), True, 1e-3, "inside_sqrt")),
    "mvn6_outside": lambda: unary([2, 3, 4], lambda x: o6.mvn(x, const([-1], np.int32), True, 0.5, "outside_sqrt")),
    "mvn6_mean_only": lambda: unary([2, 3, 4], lambda x: o6.mvn(x, const([0], np.int64), False, 1e-5, "inside_sqrt")),
    "normalize_l2_add": lambda: unary([2, 3, 4], lambda x: o1.normalize_l2(x, const([1], np.int64), 1e-3, "add")),
    "normalize_l2_max": lambda: unary([2, 3, 4], lambda x: o1.normalize_l2(x, const([-1, 1], np.int64), 0.5, "max")),
    "mvn1_across": lambda: unary([2, 3, 4], lambda x: node("opset2", "MVN", [x], {"across_channels": True,
                                                                                  "normalize_variance": True,
                                                                                  "eps": 0.5})),
    "mvn1_within": lambda: unary([2, 3, 4, 2], lambda x: node("opset2", "MVN", [x], {"across_channels": False,
                                                                                     "normalize_variance": True,
                                                                                     "eps": 1e-4})),
    "mvn1_reduction_axes": lambda: unary([2, 3, 4, 2], lambda x: node("opset2", "MVN", [x], {
        "reduction_axes": [2, 3], "normalize_variance": False, "eps": 1e-4})),
}


# ---------------------------------------------------------------------------------------------- activations
HALVES = np.array([-2.5, -1.5, -0.5, -0.4999, 0.0, 0.5, 1.5, 2.5, 2.4, -3.7], F32)


def _binary(fn: Callable[[Any, Any], Any], a: np.ndarray, b: np.ndarray) -> Case:
    x, y = param("a", list(a.shape), a.dtype), param("b", list(b.shape), b.dtype)
    return [fn(x, y)], [x, y], {"a": a, "b": b}


SPECIAL = np.array([1.5, -np.inf, np.nan, np.inf, 0.0, -2.0], F32)


def _non_zero(output_type: str) -> Case:
    x = param("x", [3, 4])
    values = data(3, 4)
    values[values < 0.3] = 0
    return [o3.non_zero(x, output_type)], [x], {"x": values}


INTS_A = np.array([7, -7, 7, -7, 0, 5], np.int32)
INTS_B = np.array([3, 3, -3, -3, 2, 5], np.int32)

ACTIVATIONS: dict[str, Callable[[], Case]] = {
    "gelu2": lambda: unary([3, 4], o2.gelu),
    "gelu7_erf": lambda: unary([3, 4], lambda x: o7.gelu(x, "erf")),
    "gelu7_tanh": lambda: unary([3, 4], lambda x: o7.gelu(x, "tanh")),
    "hsigmoid": lambda: unary([10], o5.hsigmoid, values=np.linspace(-5, 5, 10).astype(F32)),
    "swish": lambda: unary([3, 4], o4.swish),
    "swish_beta": lambda: unary([3, 4], lambda x: o4.swish(x, const(0.75, F32))),
    "elu": lambda: unary([3, 4], lambda x: o1.elu(x, 0.3)),
    "prelu_per_channel": lambda: unary([2, 3, 4], lambda x: o1.prelu(x, const([0.1, 0.2, 0.3], F32))),
    "prelu_last_axis": lambda: unary([2, 3, 4], lambda x: o1.prelu(x, const([0.1, 0.2, 0.3, 0.4], F32))),
    "prelu_scalar": lambda: unary([2, 3], lambda x: o1.prelu(x, const([0.25], F32))),
    "prelu_matrix": lambda: unary([2, 3], lambda x: o1.prelu(x, const([0.1, 0.2, 0.3], F32))),
    "round_half_even": lambda: unary([10], lambda x: o5.round(x, "half_to_even"), values=HALVES),
    "round_half_away": lambda: unary([10], lambda x: o5.round(x, "half_away_from_zero"), values=HALVES),
    "asinh": lambda: unary([3, 4], o4.asinh),
    "acosh": lambda: unary([5], o4.acosh, values=np.array([1.0, 1.5, 2.0, 10.0, 3.3], F32)),
    "atanh": lambda: unary([5], o4.atanh, values=np.array([-0.9, -0.2, 0.0, 0.5, 0.95], F32)),
    "convert_like": lambda: _binary(o1.convert_like, np.array([1.7, -2.2, 3.9], F32), np.array([1], np.int32)),
    "hard_sigmoid": lambda: unary([10], lambda x: o1.hard_sigmoid(x, const(0.3, F32), const(0.4, F32)),
                                  values=np.linspace(-4, 4, 10).astype(F32)),
    "selu": lambda: unary([3, 4], lambda x: o1.selu(x, const(1.6, F32), const(1.05, F32))),
    "is_nan": lambda: unary([6], o10.is_nan, values=SPECIAL),
    "is_inf": lambda: unary([6], o10.is_inf, values=SPECIAL),
    "is_inf_negative_only": lambda: unary([6], lambda x: o10.is_inf(x, {"detect_positive": False}), values=SPECIAL),
    "is_finite": lambda: unary([6], o10.is_finite, values=SPECIAL),
    "non_zero_i64": lambda: _non_zero("i64"),
    "non_zero_i32": lambda: _non_zero("i32"),
    "mod_float": lambda: _binary(o1.mod, np.array([5.5, -5.5, 5.5, -5.5, 3.0], F32),
                                 np.array([2.0, 2.0, -2.0, -2.0, 1.5], F32)),
    "floor_mod_float": lambda: _binary(o1.floor_mod, np.array([5.5, -5.5, 5.5, -5.5, 3.0], F32),
                                       np.array([2.0, 2.0, -2.0, -2.0, 1.5], F32)),
    "mod_int": lambda: _binary(o1.mod, INTS_A, INTS_B),
    "floor_mod_int": lambda: _binary(o1.floor_mod, INTS_A, INTS_B),
    "floor_mod_broadcast": lambda: _binary(o1.floor_mod, data(2, 3), np.array([0.7], F32)),
}


# ---------------------------------------------------------------------------------------------- products
def _matmul(a: list[int], b: list[int], ta: bool, tb: bool) -> Case:
    x, y = param("a", a), param("b", b)
    return [o1.matmul(x, y, ta, tb)], [x, y], {"a": data(*a), "b": data(*b)}


def _einsum(equation: str, *shapes: list[int]) -> Case:
    params = [param(f"x{k}", s) for k, s in enumerate(shapes)]
    return [o7.einsum(params, equation)], params, {f"x{k}": data(*s) for k, s in enumerate(shapes)}


LINALG: dict[str, Callable[[], Case]] = {
    "matmul": lambda: _matmul([2, 3], [3, 4], False, False),
    "matmul_transpose_a": lambda: _matmul([3, 2], [3, 4], True, False),
    "matmul_transpose_both_batched": lambda: _matmul([2, 1, 3, 2], [5, 4, 3], True, True),
    "matmul_vector_a": lambda: _matmul([3], [2, 3, 4], True, False),
    "matmul_vector_b": lambda: _matmul([2, 4, 3], [3], False, True),
    "matmul_vectors": lambda: _matmul([3], [3], False, False),
    "einsum_matmul": lambda: _einsum("ij,jk->ik", [2, 3], [3, 4]),
    "einsum_batched": lambda: _einsum("bij,bjk->bik", [2, 2, 3], [2, 3, 4]),
    "einsum_transpose_sum": lambda: _einsum("ijk->ki", [2, 3, 4]),
    "einsum_ellipsis": lambda: _einsum("...ij,...jk->...ik", [2, 2, 3], [2, 3, 4]),
}

ALL = {**SHAPES, **INDEXING, **REDUCE, **ACTIVATIONS, **LINALG}


#: OpenVINO writes an empty Const with size="1" (and one byte in the .bin); loopc's weights reader
#: wants the size to be exactly shape × element size, so these models do not load yet.


@pytest.mark.parametrize("name", ALL)
def test_op(name: str, tmp_path: Path) -> None:
    outputs, params, feeds = ALL[name]()
    check(ov.Model(outputs, params, name), feeds, tmp_path)


def test_round_half_away_from_zero_is_exact(tmp_path: Path) -> None:
    """Checked against the spec, not the CPU plugin: OpenVINO's CPU computes floor(|x| + 0.5) in f32,
    which rounds -0.49999997 to -1 (its reference implementation, std::round, gives -0)."""
    values = np.array([-0.49999997, 0.49999997, 1.4999999, 2.5, -2.5, -0.5, 3.0], F32)
    x = param("x", [len(values)])
    xml = save(ov.Model([o5.round(x, "half_away_from_zero")], [x], "round"), tmp_path / "model.xml")
    (got,) = run_loopc(xml, {"x": values}).values()
    expected = np.sign(values) * np.floor(np.abs(values.astype(np.float64)) + 0.5)
    np.testing.assert_array_equal(got, expected.astype(F32))


# ---------------------------------------------------------------------------------------------- refusals
def _refused(outputs: list[Any], params: list[Any]) -> ov.Model:
    return ov.Model(outputs, params, "refused")


REFUSED: dict[str, tuple[Callable[[], ov.Model], type[Exception], str]] = {
    "pad_symmetric": (lambda: _refused(*unary([3, 4], lambda x: o12.pad(
        x, const([1, 1], np.int64), const([1, 1], np.int64), "symmetric"))[:2]), UnsupportedOpError,
        "pad_mode='symmetric'"),
    "scatter_nd_sum": (lambda: _refused(*_scatter_nd(o15, reduction="sum")[:2]), UnsupportedOpError,
                       "reduction='sum'"),
    "scatter_elements_max": (lambda: _refused(*_scatter_elements(o12, 0, reduction="max")[:2]), UnsupportedOpError,
                             "reduction='max'"),
    "computed_axes": (lambda: _refused(*_computed_axes()), UnsupportedOpError, "input 1 (axes) must be a constant"),
    "range4_fractional_to_int": (lambda: _refused(*_range_fractional()), UnsupportedOpError, "cast the bounds"),
    "squeeze_all_dynamic": (lambda: _refused(*_squeeze_dynamic()), UnsupportedOpError, "give the axes"),
    "mvn1_axes_disagree": (lambda: _refused(*unary([2, 3, 4], lambda x: node("opset2", "MVN", [x], {
        "reduction_axes": [0, 2], "normalize_variance": True, "eps": 1e-4}))[:2]), UnsupportedOpError,
        "disagree with across_channels"),
}


def _computed_axes() -> tuple[list[Any], list[Any]]:
    x, a = param("x", [2, 3]), param("a", [1], np.int64)
    return [o1.reduce_sum(x, a, False)], [x, a]


def _range_fractional() -> tuple[list[Any], list[Any]]:
    start = param("s", [], F32)
    return [node("opset4", "Range", [start, const(4.0, F32), const(1.0, F32)], {"output_type": "i64"})], [start]


def _squeeze_dynamic() -> tuple[list[Any], list[Any]]:
    x = param("x", [2, -1])
    return [node("opset1", "Squeeze", [x], {})], [x]


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused(name: str, tmp_path: Path) -> None:
    make, error, text = REFUSED[name]
    xml = save(make(), tmp_path / "model.xml")
    with pytest.raises(error, match=text.replace("(", r"\(").replace(")", r"\)")):
        import_ir(xml)


def test_integer_divide_truncates_as_openvino_runs_it(tmp_path: Path) -> None:
    """Divide writes m_pythondiv="true" (floor, by the spec), yet OpenVINO's CPU plugin truncates: -3 / 2 is -1."""
    a = o1.parameter([6], np.int32, name="a")
    b = o1.parameter([6], np.int32, name="b")
    model = ov.Model([o1.result(o1.divide(a, b))], [a, b], "divide")
    got = check(model, {"a": np.array([-3, 3, 7, -7, 6, -1], np.int32), "b": np.array([2, 2, -2, -2, 3, 4], np.int32)},
                tmp_path)
    np.testing.assert_array_equal(next(iter(got.values())), [-1, 1, -3, 3, 2, 0])


def test_logical_xor_reads_opset1_like_opset2(tmp_path: Path) -> None:
    a = o1.parameter([4], np.bool_, name="a")
    b = o1.parameter([4], np.bool_, name="b")
    xml = tmp_path / "xor.xml"
    ov.save_model(ov.Model([o1.result(o2.logical_xor(a, b) if hasattr(o2, "logical_xor") else o1.logical_xor(a, b))],
                           [a, b], "xor"), str(xml))
    xml.write_text(xml.read_text().replace('type="LogicalXor" version="opset2"', 'type="LogicalXor" version="opset1"'))
    check(xml, {"a": np.array([0, 0, 1, 1], bool), "b": np.array([0, 1, 0, 1], bool)}, tmp_path)

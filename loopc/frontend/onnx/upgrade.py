"""Rewrite older ONNX op forms into the IR contract: the form of each op in the newest opset.

The backend then needs one converter per op, not one per op version. Each rewrite is local (a
node becomes a few nodes computing the same function) and runs before translation, at every
depth, since the importer calls :func:`upgrade_node` for each node it reads — loop bodies too.
Only what recurrent models use is covered (elementwise ops, activations, reductions, softmax,
shape ops, slicing, padding); ops whose old and new forms agree pass through untouched.

``onnx.version_converter`` is not used: it rewrites whole models, and its adapters do not all
reach into Loop/Scan bodies or cover every op in them, so a per-node rewrite is more predictable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from loopc.errors import UnsupportedOpError, located
from loopc.frontend.onnx.registry import UPGRADES, upgrades

if TYPE_CHECKING:
    from loopc.frontend.onnx.importer import Context

#: Attributes that only ever meant something to old runtimes (buffer reuse, training flags).
_OBSOLETE = {"consumed_inputs", "is_test"}

_LEGACY_BROADCAST = {"Add", "Sub", "Mul", "Div", "Pow", "Equal", "Greater", "Less", "And", "Or", "Xor"}
_REDUCE_18 = {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
              "ReduceLogSumExp", "ReduceSumSquare"}


def upgrade_node(ctx: Context, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    """``node`` in its newest-opset form, preceded by the Constant nodes that now feed it."""
    if node.domain not in ("", "ai.onnx"):
        return [node]
    node = _without(node, _OBSOLETE)
    rewrite = UPGRADES.get(node.op_type)
    return rewrite(ctx, node) if rewrite is not None else [node]


# ----------------------------------------------------------------------------------------- helpers


def _attrs(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _without(node: onnx.NodeProto, names: set[str]) -> onnx.NodeProto:
    if not any(a.name in names for a in node.attribute):
        return node
    new = onnx.NodeProto()
    new.CopyFrom(node)
    del new.attribute[:]
    new.attribute.extend(a for a in node.attribute if a.name not in names)
    return new


def _rebuild(node: onnx.NodeProto, inputs: list[str], drop: set[str], **extra: Any) -> onnx.NodeProto:
    """``node`` with new inputs, attributes ``drop`` removed and ``extra`` added."""
    attrs = {k: v for k, v in _attrs(node).items() if k not in drop}
    attrs.update(extra)
    return helper.make_node(node.op_type, inputs, list(node.output), name=node.name, **attrs)


def _const(ctx: Context, node: onnx.NodeProto, array: np.ndarray, what: str) -> tuple[str, onnx.NodeProto]:
    name = ctx.fresh(f"{node.name or node.output[0]}_{what}")
    return name, helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(array), name))


def _attr_to_input(ctx: Context, node: onnx.NodeProto, attr: str, position: int, since: int,
                   dtype: Any = np.int64) -> list[onnx.NodeProto]:
    """Before opset ``since``, ``attr`` was an attribute; it is now input ``position``."""
    attrs = _attrs(node)
    if ctx.opset >= since or attr not in attrs:
        return [node]
    name, const = _const(ctx, node, np.array(attrs[attr], dtype=dtype), attr)
    inputs = list(node.input) + [""] * max(0, position + 1 - len(node.input))
    inputs[position] = name
    return [const, _rebuild(node, inputs, {attr})]


def _rank(ctx: Context, name: str) -> int | None:
    shape = ctx.value(name).shape
    return None if shape is None else len(shape)


def _dtype(ctx: Context, name: str) -> np.dtype[Any]:
    return ctx.value(name).dtype or np.dtype(np.float32)


# ---------------------------------------------------------------------------------------- rewrites


@upgrades(*sorted(_LEGACY_BROADCAST))
def _legacy_broadcast(ctx: Context, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    """Opset < 7 binary ops: ``broadcast=1, axis=k`` aligns B with A's dims from k on. Appending
    trailing 1s to B gives the same alignment under numpy broadcasting, the only kind now."""
    attrs = _attrs(node)
    if ctx.opset >= 7 or not ({"broadcast", "axis"} & attrs.keys()):
        return [node]
    plain = _rebuild(node, list(node.input), {"broadcast", "axis"})
    if not attrs.get("broadcast") or "axis" not in attrs:
        return [plain]  # without axis, legacy broadcasting already aligned trailing dims
    rank_a, rank_b = _rank(ctx, node.input[0]), _rank(ctx, node.input[1])
    if rank_a is None or rank_b is None:
        raise located(UnsupportedOpError, ctx.describe(node), f"legacy broadcast with axis={attrs['axis']} needs the "
                      f"ranks of both inputs; run shape inference on the model first")
    axis = attrs["axis"] + rank_a if attrs["axis"] < 0 else attrs["axis"]
    trailing = rank_a - axis - rank_b
    if trailing <= 0:
        return [plain]
    axes, const = _const(ctx, node, np.arange(rank_b, rank_b + trailing, dtype=np.int64), "axes")
    aligned = ctx.fresh(f"{node.input[1]}_aligned")
    unsqueeze = helper.make_node("Unsqueeze", [node.input[1], axes], [aligned], name=ctx.fresh("unsqueeze"))
    return [const, unsqueeze, _rebuild(node, [node.input[0], aligned], {"broadcast", "axis"})]


@upgrades("Gemm")
def _gemm(ctx: Context, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    # Gemm < 7 had a `broadcast` flag for C; since 7, C always broadcasts unidirectionally.
    return [_without(node, {"broadcast"})]


@upgrades("Squeeze", "Unsqueeze")
def _squeeze_like(ctx: Context, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    return _attr_to_input(ctx, node, "axes", 1, 13)


@upgrades("ReduceSum")
def _reduce_sum(ctx: Context, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    return _attr_to_input(ctx, node, "axes", 1, 13)


@upgrades(*sorted(_REDUCE_18))
def _reduce(ctx: Context, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    return _attr_to_input(ctx, node, "axes", 1, 18)


@upgrades("Split")
def _split(ctx: Context, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    nodes = _attr_to_input(ctx, node, "split", 1, 13)
    last = nodes[-1]
    has_split = len(last.input) > 1 and last.input[1]
    if ctx.opset < 18 and not has_split and "num_outputs" not in _attrs(last):
        # An equal split was implicit before 18; now it is spelled num_outputs.
        nodes[-1] = _rebuild(last, [last.input[0]], set(), num_outputs=len(last.output))
    return nodes


@upgrades("Slice")
def _slice(ctx: Context, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    attrs = _attrs(node)
    if ctx.opset >= 10:
        return [node]
    consts, inputs = [], [node.input[0]]
    for key in ("starts", "ends", "axes"):
        if key in attrs:
            name, const = _const(ctx, node, np.array(attrs[key], dtype=np.int64), key)
            consts.append(const)
            inputs.append(name)
    return [*consts, _rebuild(node, inputs, {"starts", "ends", "axes"})]


@upgrades("Pad")
def _pad(ctx: Context, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    attrs = _attrs(node)
    if ctx.opset >= 11:
        return [node]
    pads = attrs.get("pads", attrs.get("paddings", []))  # Pad-1 called them paddings; same layout
    pads_name, pads_const = _const(ctx, node, np.array(pads, dtype=np.int64), "pads")
    value_name, value_const = _const(ctx, node, np.array(attrs.get("value", 0.0), dtype=_dtype(ctx, node.input[0])),
                                     "value")
    return [pads_const, value_const,
            _rebuild(node, [node.input[0], pads_name, value_name], {"pads", "paddings", "value"})]


@upgrades("Softmax", "LogSoftmax", "Hardmax")
def _softmax(ctx: Context, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    """Before 13, Softmax/LogSoftmax/Hardmax coerced the input to 2-D at ``axis`` (default 1) and
    normalized each row. Flatten, normalize the last axis, reshape back is that function; when
    ``axis`` is already the last axis the coercion groups nothing and ``axis=-1`` says it."""
    if ctx.opset >= 13:
        return [node]
    axis = _attrs(node).get("axis", 1)
    rank = _rank(ctx, node.input[0])
    if rank is not None and (axis if axis >= 0 else axis + rank) == rank - 1:
        return [_rebuild(node, list(node.input), {"axis"}, axis=-1)]
    base = node.name or node.output[0]
    flat, normed, shape = (ctx.fresh(f"{base}_{s}") for s in ("flat", "rows", "shape"))
    return [
        helper.make_node("Flatten", [node.input[0]], [flat], name=ctx.fresh("flatten"), axis=axis),
        helper.make_node(node.op_type, [flat], [normed], name=node.name, axis=-1),
        helper.make_node("Shape", [node.input[0]], [shape], name=ctx.fresh("shape")),
        helper.make_node("Reshape", [normed, shape], list(node.output), name=ctx.fresh("reshape")),
    ]


@upgrades("TopK")
def _topk(ctx: Context, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    attrs = _attrs(node)
    if ctx.opset >= 10 or "k" not in attrs:
        return [node]
    name, const = _const(ctx, node, np.array([attrs["k"]], dtype=np.int64), "k")
    return [const, _rebuild(node, [node.input[0], name], {"k"})]


@upgrades("Concat")
def _concat(ctx: Context, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    # Concat-1 made axis optional with default 1; it is required since 4.
    if ctx.opset < 4 and "axis" not in _attrs(node):
        return [_rebuild(node, list(node.input), set(), axis=1)]
    return [node]


@upgrades("Reshape")
def _reshape(ctx: Context, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    return _attr_to_input(ctx, node, "shape", 1, 5)


@upgrades("Cast")
def _cast(ctx: Context, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    # Cast-1 named the target type with a string ("FLOAT"); since 6 it is the TensorProto enum.
    to = _attrs(node).get("to")
    if isinstance(to, bytes):
        return [_rebuild(node, list(node.input), {"to"}, to=int(onnx.TensorProto.DataType.Value(to.decode())))]
    return [node]


@upgrades("Clip")
def _clip(ctx: Context, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    attrs = _attrs(node)
    if ctx.opset >= 11 or not ({"min", "max"} & attrs.keys()):
        return [node]
    consts, inputs = [], [node.input[0], "", ""]
    for position, key in ((1, "min"), (2, "max")):
        if key in attrs:
            name, const = _const(ctx, node, np.array(attrs[key], dtype=_dtype(ctx, node.input[0])), key)
            consts.append(const)
            inputs[position] = name
    while inputs[-1] == "":
        inputs.pop()
    return [*consts, _rebuild(node, inputs, {"min", "max"})]


@upgrades("Upsample", "Resize")
def _legacy_resize(ctx: Context, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    """Upsample (7: scales attribute; 9: input) and Resize-10 are Resize(X, "", scales) with asymmetric
    coordinates. Their nearest rounding (as onnxruntime runs them) floors on an axis of scale ≥ 1 and
    takes the ceiling on one of scale < 1; Resize-11+ has one rounding for all axes, so it is picked
    per node, and a node that enlarges some axes and shrinks others is refused."""
    if node.op_type == "Resize" and ctx.opset >= 11:
        return [node]
    attrs = _attrs(node)
    consts: list[onnx.NodeProto] = []
    values: np.ndarray | None
    if "scales" in attrs:
        values = np.array(attrs["scales"], dtype=np.float32)
        name, const = _const(ctx, node, values, "scales")
        consts, scales = [const], name
    else:
        scales = node.input[1]
        values = ctx.constants.get(scales)
    raw = attrs.get("mode", b"nearest")
    mode = raw.decode() if isinstance(raw, bytes) else str(raw)
    mode = {"bilinear": "linear"}.get(mode, mode)
    extra: dict[str, Any] = {"mode": mode, "coordinate_transformation_mode": "asymmetric"}
    if mode == "nearest":
        extra["nearest_mode"] = _legacy_rounding(ctx, node, values)
    resize = helper.make_node("Resize", [node.input[0], "", scales], list(node.output), name=node.name, **extra)
    return [*consts, resize]


def _legacy_rounding(ctx: Context, node: onnx.NodeProto, scales: np.ndarray | None) -> str:
    """floor when every scale is ≥ 1, ceil when every scale other than 1 is < 1. Scales known only at
    run time are judged by the inferred shapes: an axis that keeps its length has scale ≥ 1 (floor(d × s)
    < d for s < 1), which floors unless it is exactly 1, so beside a shrinking axis it is ambiguous."""
    if scales is not None:
        shrinks, grows = bool((scales < 1).any()), bool((scales > 1).any())
        what = f"scales {[float(s) for s in scales.reshape(-1)]}"
    else:
        shapes = [ctx.value(name).shape for name in (node.input[0], node.output[0])]
        before, after = ([d for d in shape if isinstance(d, int)] if shape is not None else [] for shape in shapes)
        if not before or any(shape is None or len(shape) != len(before) for shape in shapes) or \
                len(after) != len(before):
            raise located(UnsupportedOpError, ctx.describe(node), "nearest legacy resize whose scales and shapes "
                          "are not known (its rounding, floor when enlarging and ceil when shrinking, depends on "
                          "them)")
        shrinks = any(a < b for a, b in zip(after, before))
        grows = any(a >= b > 1 for a, b in zip(after, before))
        what = f"shapes {tuple(before)} to {tuple(after)}"
    if shrinks and grows:
        raise located(UnsupportedOpError, ctx.describe(node), f"nearest legacy resize by {what}: it floors on "
                      "enlarged axes and takes the ceiling on shrunk ones, and Resize has one rounding")
    return "ceil" if shrinks else "floor"


@upgrades("Dropout")
def _dropout(ctx: Context, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    return _attr_to_input(ctx, node, "ratio", 1, 12, np.float32)


__all__ = ["upgrade_node"]


@upgrades("GroupNormalization")
def _group_norm(ctx: Context, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    """GroupNormalization-18 took scale and bias per group; since 21 they are per channel. Repeating
    each group's value over its C / G channels is the same function."""
    if ctx.opset >= 21:
        return [node]
    groups = int(_attrs(node)["num_groups"])
    base = node.name or node.output[0]
    channels, size, grid = (ctx.fresh(f"{base}_{s}") for s in ("channels", "group_size", "grid"))
    groups_name, groups_const = _const(ctx, node, np.array([groups], np.int64), "groups")
    column_name, column_const = _const(ctx, node, np.array([1], np.int64), "column")
    flat_name, flat_const = _const(ctx, node, np.array([-1], np.int64), "flat")
    made = [groups_const, column_const, flat_const,
            helper.make_node("Shape", [node.input[0]], [channels], name=ctx.fresh("shape"), start=1, end=2),
            helper.make_node("Div", [channels, groups_name], [size], name=ctx.fresh("div")),
            helper.make_node("Concat", [groups_name, size], [grid], name=ctx.fresh("concat"), axis=0)]
    per_channel = []
    for param in node.input[1:3]:
        column, wide, flat = (ctx.fresh(f"{param}_{s}") for s in ("column", "per_group", "per_channel"))
        made += [helper.make_node("Unsqueeze", [param, column_name], [column], name=ctx.fresh("unsqueeze")),
                 helper.make_node("Expand", [column, grid], [wide], name=ctx.fresh("expand")),
                 helper.make_node("Reshape", [wide, flat_name], [flat], name=ctx.fresh("reshape"))]
        per_channel.append(flat)
    return [*made, _rebuild(node, [node.input[0], *per_channel], set())]


@upgrades("RoiAlign")
def _roi_align(ctx: Context, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    # RoiAlign-10 had no coordinate_transformation_mode: it sampled as 16's output_half_pixel (no -0.5
    # shift, rois at least 1x1); 16 made half_pixel the default.
    if ctx.opset < 16 and "coordinate_transformation_mode" not in _attrs(node):
        return [_rebuild(node, list(node.input), set(), coordinate_transformation_mode="output_half_pixel")]
    return [node]


@upgrades("DFT")
def _dft(ctx: Context, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    """DFT < 20 took its axis as an attribute whose default was 1 (input 2's default is -2)."""
    if ctx.opset >= 20:
        return [node]
    name, const = _const(ctx, node, np.array(_attrs(node).get("axis", 1), dtype=np.int64), "axis")
    inputs = (list(node.input) + ["", ""])[:2] + [name]
    return [const, _rebuild(node, inputs, {"axis"})]

"""Indexing: Gather (ONNX's take along an axis), GatherElements, GatherND, ScatterND and
ScatterElements, ReverseSequence, OneHot."""

from __future__ import annotations

import numpy as np

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.registry import converter, unsupported
from loopc.ir import Node
from loopc.semantics.attributes import attr
from loopc.trt import trt


@converter("Gather")
def gather(ctx: ConversionContext, node: Node) -> None:
    """Negative indices count from the end in both ONNX and TensorRT."""
    data, indices = (ctx.get(v, node) for v in node.inputs)
    axis = int(attr(node, "axis")) % len(data.shape)
    ctx.set(node.outputs[0], ctx.out(ctx.network.add_gather(data, indices, axis), node))


@converter("GatherElements")
def gather_elements(ctx: ConversionContext, node: Node) -> None:
    data, indices = (ctx.get(v, node) for v in node.inputs)
    axis = int(attr(node, "axis")) % len(data.shape)
    layer = ctx.network.add_gather_v2(data, indices, trt().GatherMode.ELEMENT)
    layer.axis = axis
    ctx.set(node.outputs[0], ctx.out(layer, node))


@converter("GatherND")
def gather_nd(ctx: ConversionContext, node: Node) -> None:
    """ONNX's batch_dims is TensorRT's number of elementwise dims."""
    data, indices = (ctx.get(v, node) for v in node.inputs)
    layer = ctx.network.add_gather_v2(data, indices, trt().GatherMode.ND)
    layer.num_elementwise_dims = int(attr(node, "batch_dims"))
    ctx.set(node.outputs[0], ctx.out(layer, node))


def _overwrites(node: Node) -> str | None:
    reduction = node.attrs.get("reduction", "none")
    return None if reduction == "none" else f"reduction={reduction!r}"


@converter("ScatterND", "ScatterElements", "Scatter", capability=_overwrites)
def scatter(ctx: ConversionContext, node: Node) -> None:
    """Writes without a reduction (``out[i] = v`` as exporters emit it); TensorRT scatters overwrite.
    Scatter (opsets 9-10, PyTorch's exporter below opset 11) is ScatterElements under its old name."""
    data, indices, updates = (ctx.get(v, node) for v in node.inputs)
    mode = trt().ScatterMode.ND if node.op == "ScatterND" else trt().ScatterMode.ELEMENT
    layer = ctx.network.add_scatter(data, indices, updates, mode)
    if node.op != "ScatterND":
        layer.axis = int(attr(node, "axis")) % len(data.shape)
    ctx.set(node.outputs[0], ctx.out(layer, node))


def _sequence_axes(node: Node) -> str | None:
    batch_axis, time_axis = int(node.attrs.get("batch_axis", 1)), int(node.attrs.get("time_axis", 0))
    if {batch_axis, time_axis} != {0, 1}:
        return f"batch_axis={batch_axis} with time_axis={time_axis} (ONNX allows 0 and 1)"
    return None


@converter("ReverseSequence", capability=_sequence_axes)
def reverse_sequence(ctx: ConversionContext, node: Node) -> None:
    """IReverseSequenceLayer: ONNX's and TensorRT's semantics agree (int32 or int64 lengths, axes 0 and 1)."""
    x, lens = (ctx.get(v, node) for v in node.inputs)
    batch_axis, time_axis = int(attr(node, "batch_axis")), int(attr(node, "time_axis"))
    layer = ctx.network.add_reverse_sequence(x, lens)
    layer.batch_axis, layer.sequence_axis = batch_axis, time_axis
    ctx.set(node.outputs[0], ctx.out(layer, node))


@converter("OneHot")
def one_hot(ctx: ConversionContext, node: Node) -> None:
    """IOneHotLayer; ONNX lets indices and depth be of any numeric type (floats truncate), TensorRT
    takes INT32 indices and a 0-D INT32 depth."""
    T = trt()
    indices, values = ctx.get(node.inputs[0], node), ctx.get(node.inputs[2], node)
    known = ctx.constant_of(node.inputs[1])
    if known is not None:
        depth = ctx.constant(np.array(int(known.reshape(-1)[0]), np.int32), node, "depth")
    else:
        fed = node.inputs[1]
        if fed is not None and fed.producer is None and fed.dtype is not None and fed.dtype.kind == "f":
            raise unsupported(node, f"a floating-point depth input {fed.name!r} (depth sizes the output: feed it "
                                    f"as int64)")
        depth = ctx.scalar0d(ctx.cast(ctx.get(fed, node), T.int32, node, "depth"), node, "depth0d")
    indices = ctx.cast(indices, T.int32, node, "indices")
    axis = int(attr(node, "axis")) % (len(indices.shape) + 1)
    ctx.set(node.outputs[0], ctx.out(ctx.network.add_one_hot(indices, values, depth, axis), node))

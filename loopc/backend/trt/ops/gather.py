"""Indexing: Gather (ONNX's take along an axis) and GatherElements (TensorRT kELEMENT mode)."""

from __future__ import annotations

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.registry import converter
from loopc.ir import Node
from loopc.trt import trt


@converter("Gather")
def gather(ctx: ConversionContext, node: Node) -> None:
    """Negative indices count from the end in both ONNX and TensorRT."""
    data, indices = (ctx.get(v, node) for v in node.inputs)
    axis = int(node.attrs.get("axis", 0)) % len(data.shape)
    ctx.set(node.outputs[0], ctx.out(ctx.network.add_gather(data, indices, axis), node))


@converter("GatherElements")
def gather_elements(ctx: ConversionContext, node: Node) -> None:
    data, indices = (ctx.get(v, node) for v in node.inputs)
    axis = int(node.attrs.get("axis", 0)) % len(data.shape)
    layer = ctx.network.add_gather_v2(data, indices, trt().GatherMode.ELEMENT)
    layer.axis = axis
    ctx.set(node.outputs[0], ctx.out(layer, node))

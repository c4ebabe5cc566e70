"""Transformer ops: RotaryEmbedding on TensorRT's rotary embedding layer.

TensorRT's layer takes a [batch, heads, sequence, head size] input, as ONNX's 4-D form is; ONNX's
3-D form ([batch, sequence, heads * head size], with ``num_heads``) is reshaped to it and back.
"""

from __future__ import annotations

from typing import Any

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.registry import converter, unsupported
from loopc.ir import Node
from loopc.trt import trt


def _heads_first(ctx: ConversionContext, node: Node, x: Any, heads: int) -> Any:
    """[b, s, heads * h] as [b, heads, s, h]."""
    layer = ctx.network.add_shuffle(x)
    layer.reshape_dims = (0, 0, heads, -1)
    layer.zero_is_placeholder = True
    layer.second_transpose = (0, 2, 1, 3)
    return ctx.out(layer, node, "heads_first")


def _heads_merged(ctx: ConversionContext, node: Node, x: Any) -> Any:
    """[b, heads, s, h] back to [b, s, heads * h]."""
    layer = ctx.network.add_shuffle(x)
    layer.first_transpose = (0, 2, 1, 3)
    layer.reshape_dims = (0, 0, -1)
    layer.zero_is_placeholder = True
    return ctx.out(layer, node, "heads_merged")


@converter("RotaryEmbedding")
def rotary_embedding(ctx: ConversionContext, node: Node) -> None:
    x, cos, sin = (ctx.get(v, node) for v in node.inputs[:3])
    rank = len(x.shape)
    heads = int(node.attrs.get("num_heads", 0))
    if rank == 3 and heads <= 0:
        raise unsupported(node, "RotaryEmbedding of a 3-D input without num_heads",
                          hint="set num_heads, which splits the hidden size into heads")
    if rank not in (3, 4):
        raise unsupported(node, f"RotaryEmbedding of a rank-{rank} input (it takes 3-D or 4-D inputs)")
    inner = _heads_first(ctx, node, x, heads) if rank == 3 else x
    layer = ctx.network.add_rotary_embedding(inner, cos, sin, bool(int(node.attrs.get("interleaved", 0))),
                                             int(node.attrs.get("rotary_embedding_dim", 0)))
    positions = node.inputs[3] if len(node.inputs) > 3 else None
    if positions is not None:
        layer.set_input(3, ctx.cast(ctx.get(positions, node), trt().int64, node, "positions"))
    y = ctx.out(layer, node, "rope" if rank == 3 else "")
    ctx.set(node.outputs[0], _heads_merged(ctx, node, y) if rank == 3 else y)

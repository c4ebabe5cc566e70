"""Rearrangements: DepthToSpace and SpaceToDepth over any number of spatial axes, ShuffleChannels.

On 4-D tensors they are ONNX's ops (blocks_first is ONNX's DCR, depth_first CRD; ONNX's SpaceToDepth
is blocks_first). Other ranks, and SpaceToDepth depth_first, are the Reshape–Transpose–Reshape the
spec defines them by, which needs the dims after the batch to be static.
"""

from __future__ import annotations

import numpy as np

from loopc.frontend.openvino.importer import Op
from loopc.frontend.openvino.ops._common import axis, dim
from loopc.frontend.openvino.ops._window import spatial_rank
from loopc.ir import Value
from loopc.frontend.openvino.registry import translates


def _attrs(op: Op) -> tuple[int, bool]:
    op.expect_inputs(1)
    block = op.int_attr("block_size", 1)
    if block < 1:
        raise op.error(f"block_size {block} must be positive")
    return block, op.choice_attr("mode", ("blocks_first", "depth_first")) == "blocks_first"


def _static_tail(op: Op, x: Value) -> list[int]:
    """The dims after the batch, which the reshapes spell out."""
    dims = [dim(x, k) for k in range(1, op.rank(0))]
    static = [d for d in dims if d is not None]
    if len(static) != len(dims):
        raise op.unsupported(f"dims {x.shape} after the batch are not static; a rank-{op.rank(0)} form is "
                             f"reshapes that spell them out")
    return static


def _rearrange(op: Op, x: Value, split: list[int], perm: list[int], merged: list[int]) -> Value:
    """Reshape to ``[N] + split``, transpose by ``perm``, reshape to ``[N] + merged`` (N copied)."""
    y = op.op("Reshape", [x, op.const([0] + split, np.int64)])
    y = op.op("Transpose", [y], {"perm": perm})
    return op.op("Reshape", [y, op.const([0] + merged, np.int64)])


@translates("DepthToSpace")
def depth_to_space(op: Op) -> list[Value]:
    block, blocks_first = _attrs(op)
    x = op.inputs[0]
    k = spatial_rank(op)
    if k == 2:
        return [op.op("DepthToSpace", [x], {"blocksize": block, "mode": "DCR" if blocks_first else "CRD"})]
    channels, *spatial = _static_tail(op, x)
    if channels % block**k:
        raise op.error(f"{channels} channels do not divide by block_size^{k} = {block**k}")
    depth = channels // block**k
    if blocks_first:  # [N, bs.., C', D..]
        split = [block] * k + [depth] + spatial
        perm = [0, k + 1] + [a for i in range(k) for a in (k + 2 + i, 1 + i)]
    else:  # [N, C', bs.., D..]
        split = [depth] + [block] * k + spatial
        perm = [0, 1] + [a for i in range(k) for a in (k + 2 + i, 2 + i)]
    return [_rearrange(op, x, split, perm, [depth] + [d * block for d in spatial])]


@translates("SpaceToDepth")
def space_to_depth(op: Op) -> list[Value]:
    block, blocks_first = _attrs(op)
    x = op.inputs[0]
    k = spatial_rank(op)
    if k == 2 and blocks_first:
        return [op.op("SpaceToDepth", [x], {"blocksize": block})]
    channels, *spatial = _static_tail(op, x)
    if any(d % block for d in spatial):
        raise op.error(f"spatial dims {spatial} do not divide by block_size {block}")
    split = [channels] + [a for d in spatial for a in (d // block, block)]  # [N, C, D1, bs, D2, bs, ..]
    blocks = [3 + 2 * i for i in range(k)]
    places = [2 + 2 * i for i in range(k)]
    perm = [0] + (blocks + [1] if blocks_first else [1] + blocks) + places
    return [_rearrange(op, x, split, perm, [channels * block**k] + [d // block for d in spatial])]


@translates("ShuffleChannels")
def shuffle_channels(op: Op) -> list[Value]:
    """Channels as ``[group, C / group]``, those two axes swapped, merged back: Reshape–Transpose–Reshape,
    the shapes read from the input at run time (only the shuffled axis must be static)."""
    op.expect_inputs(1)
    x = op.inputs[0]
    rank = op.rank(0)
    a = axis(op, op.int_attr("axis", 1), rank)
    group = op.int_attr("group", 1)
    channels = dim(x, a)
    if group < 1:
        raise op.error(f"group {group} must be positive")
    if channels is None:
        raise op.unsupported(f"axis {a} of {x.shape} is not static; the shuffle needs its length")
    if channels % group:
        raise op.error(f"{channels} channels do not divide into {group} groups")
    parts = []
    if a > 0:
        parts.append(op.op("Shape", [x], {"end": a}))
    parts.append(op.const([group, channels // group], np.int64))
    if a < rank - 1:
        parts.append(op.op("Shape", [x], {"start": a + 1}))
    split = op.op("Reshape", [x, op.op("Concat", parts, {"axis": 0})])
    perm = list(range(rank + 1))
    perm[a], perm[a + 1] = a + 1, a
    swapped = op.op("Transpose", [split], {"perm": perm})
    return [op.op("Reshape", [swapped, op.op("Shape", [x])])]

"""DepthToSpace and SpaceToDepth: a reshape to six axes, a transpose, a reshape back (two
IShuffleLayers, as onnx-tensorrt builds them). Dynamic dims are computed from the input's shape.

With block b, DCR orders an output channel's source as (row offset, column offset, channel),
CRD as (channel, row offset, column offset); SpaceToDepth is DepthToSpace's inverse in each mode.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.registry import converter, unsupported
from loopc.ir import Node

#: A target dim: a constant, or (axis, factor): the input's dim ``axis`` times ``factor``.
Dim = int | tuple[int, Fraction]

_ONE = Fraction(1)
#: mode -> (the six-axis view of [N, C, H, W] for block size b, its transpose).
_DEPTH_TO_SPACE = {
    "DCR": (lambda b: ((0, _ONE), b, b, (1, Fraction(1, b * b)), (2, _ONE), (3, _ONE)), (0, 3, 4, 1, 5, 2)),
    "CRD": (lambda b: ((0, _ONE), (1, Fraction(1, b * b)), b, b, (2, _ONE), (3, _ONE)), (0, 1, 4, 2, 5, 3)),
}
_SPACE_TO_DEPTH = {"DCR": (0, 3, 5, 1, 2, 4), "CRD": (0, 1, 3, 5, 2, 4)}


def _dims(ctx: ConversionContext, node: Node, x: Any, spec: tuple[Dim, ...], suffix: str) -> Any:
    """``spec`` as reshape dims: a list of ints when ``x``'s dims it reads are static, else a 1-D INT64
    shape tensor computed from ``x``'s shape."""
    shape = tuple(x.shape)
    if all(isinstance(d, int) or shape[d[0]] != -1 for d in spec):
        return [d if isinstance(d, int) else int(shape[d[0]] * d[1]) for d in spec]
    dims = ctx.shape_of(x, node, f"{suffix}_in")
    parts = []
    for i, d in enumerate(spec):
        if isinstance(d, int):
            parts.append(ctx.constant(np.array([d], np.int64), node, f"{suffix}{i}"))
            continue
        axis, factor = d
        part = ctx.gather1(dims, [axis], node, f"{suffix}{i}_dim")
        for value, op in ((factor.numerator, "PROD"), (factor.denominator, "DIV")):
            if value != 1:
                part = ctx.elementwise(part, ctx.constant(np.array([value], np.int64), node, f"{suffix}{i}_{op}"),
                                       op, node, f"{suffix}{i}_{op.lower()}")
        parts.append(part)
    return ctx.concat(parts, node, suffix)


def _shuffle(ctx: ConversionContext, node: Node, x: Any, view: tuple[Dim, ...], perm: tuple[int, ...],
             back: tuple[Dim, ...]) -> Any:
    """``x`` viewed as ``view``, transposed by ``perm``, reshaped to ``back`` (dims of ``x``)."""
    layer = ctx.network.add_shuffle(x)
    dims = _dims(ctx, node, x, view, "view")
    if isinstance(dims, list):
        layer.reshape_dims = tuple(dims)
    else:
        layer.set_input(1, dims)
    layer.second_transpose = perm
    moved = ctx.out(layer, node, "blocks")
    return ctx.reshape(moved, _dims(ctx, node, x, back, "out"), node)


def _block(node: Node) -> tuple[int, str] | str:
    """The block size and mode, or why they cannot be converted."""
    b = int(node.attrs.get("blocksize", 0))
    mode = node.attrs.get("mode", "DCR")
    mode = (mode.decode() if isinstance(mode, bytes) else str(mode)).upper()
    if b < 1:
        return f"blocksize={b}"
    if mode not in _SPACE_TO_DEPTH:
        return f"mode={mode!r}"
    return b, mode


def _refusal(node: Node) -> str | None:
    found = _block(node)
    return found if isinstance(found, str) else None


def _input(ctx: ConversionContext, node: Node) -> tuple[Any, int, str]:
    x = ctx.get(node.inputs[0], node)
    if len(x.shape) != 4:
        raise unsupported(node, f"{node.op} of a rank-{len(x.shape)} input (it needs [N, C, H, W])")
    found = _block(node)
    if isinstance(found, str):
        raise unsupported(node, found)
    return x, found[0], found[1]


@converter("DepthToSpace", capability=_refusal)
def depth_to_space(ctx: ConversionContext, node: Node) -> None:
    """[N, C, H, W] -> [N, C/b², H·b, W·b]."""
    x, b, mode = _input(ctx, node)
    channels = int(x.shape[1])
    if channels != -1 and channels % (b * b):
        raise unsupported(node, f"DepthToSpace of {channels} channels with blocksize {b} (b² must divide them)")
    view, perm = _DEPTH_TO_SPACE[mode]
    back = ((0, _ONE), (1, Fraction(1, b * b)), (2, Fraction(b)), (3, Fraction(b)))
    ctx.set(node.outputs[0], _shuffle(ctx, node, x, view(b), perm, back))


@converter("SpaceToDepth", capability=_refusal)
def space_to_depth(ctx: ConversionContext, node: Node) -> None:
    """[N, C, H, W] -> [N, C·b², H/b, W/b]."""
    x, b, mode = _input(ctx, node)
    if any(d != -1 and d % b for d in tuple(x.shape)[2:]):
        raise unsupported(node, f"SpaceToDepth of a {tuple(x.shape)} input with blocksize {b} (b must divide H and W)")
    view = ((0, _ONE), (1, _ONE), (2, Fraction(1, b)), b, (3, Fraction(1, b)), b)
    back = ((0, _ONE), (1, Fraction(b * b)), (2, Fraction(1, b)), (3, Fraction(1, b)))
    ctx.set(node.outputs[0], _shuffle(ctx, node, x, view, _SPACE_TO_DEPTH[mode], back))

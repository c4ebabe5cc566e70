"""Random ops: RandomUniform, RandomNormal, their *Like forms, and Bernoulli, as IFillLayer's
kRANDOM_UNIFORM / kRANDOM_NORMAL fills.

TensorRT's random fills take no seed, so ``seed`` is not honoured; ONNX allows that ("may not
produce the same values in different implementations, even if a seed is specified"). The fills
make FLOAT or HALF: other float types are drawn in FLOAT and cast.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import helper

from loopc.backend.trt.context import ConversionContext, trt_dtype
from loopc.backend.trt.registry import converter, unsupported
from loopc.ir import Loop, Node
from loopc.trt import trt

#: The largest float32 below 1: Bernoulli draws u in [0, this], so u < p is never true for p = 0 and
#: always true for p = 1, whatever the fill's rounding at its ends.
_BELOW_ONE = float(np.nextafter(np.float32(1), np.float32(0)))


def _output_type(node: Node, like: Any | None) -> Any:
    """The ``dtype`` attribute's TensorRT type, else ``like``'s type (the *Like ops), else FLOAT."""
    if "dtype" in node.attrs:
        return trt_dtype(helper.tensor_dtype_to_np_dtype(int(node.attrs["dtype"])))
    return like.dtype if like is not None else trt().float32


def _random_fill(ctx: ConversionContext, node: Node, shape_of: Any | None, uniform: bool, alpha: float,
                 beta: float, dtype: Any, suffix: str = "") -> Any:
    """A random fill of ``dtype`` shaped like the tensor ``shape_of`` (or the ``shape`` attribute)."""
    T = trt()
    if dtype not in (T.float32, T.float16, T.bfloat16):
        raise unsupported(node, f"{node.op} of type {dtype} (TensorRT draws floating-point values only)")
    drawn = dtype if dtype != T.bfloat16 else T.float32
    op = T.FillOperation.RANDOM_UNIFORM if uniform else T.FillOperation.RANDOM_NORMAL
    if shape_of is None:
        layer = ctx.network.add_fill([int(d) for d in node.attrs["shape"]], op, drawn)
    else:
        dims = tuple(shape_of.shape)
        layer = ctx.network.add_fill(dims if -1 not in dims else [0] * len(dims), op, drawn)
        if -1 in dims:
            layer.set_input(0, ctx.shape_of(shape_of, node, "shape"))
    layer.alpha, layer.beta = alpha, beta
    y = ctx.out(layer, node, suffix or ("" if drawn == dtype else "drawn"))
    return ctx.cast(y, dtype, node) if drawn != dtype else y


def _parameters(node: Node) -> tuple[float, float]:
    """(low, high) of a uniform op, (mean, scale) of a normal one: the fill's alpha and beta."""
    if node.op.startswith("RandomUniform"):
        return float(node.attrs.get("low", 0.0)), float(node.attrs.get("high", 1.0))
    return float(node.attrs.get("mean", 0.0)), float(node.attrs.get("scale", 1.0))


def _in_loop(node: Node) -> bool:
    graph = node.graph
    while graph is not None and graph.owner is not None:
        if isinstance(graph.owner, Loop):
            return True
        graph = graph.owner.graph
    return False


def _drawn_once(node: Node) -> str | None:
    """TensorRT computes a layer that does not depend on the trip once per loop run, and a fill depends
    on nothing that changes: in a loop body every trip would see the same draws, where ONNX draws anew."""
    if _in_loop(node):
        return f"{node.op} inside a loop body (TensorRT would draw once, not on every trip)"
    return None


def _proper_distribution(node: Node) -> str | None:
    """TensorRT's builder refuses an empty uniform range and a normal of no spread (measured)."""
    refusal = _drawn_once(node)
    if refusal is not None:
        return refusal
    alpha, beta = _parameters(node)
    if node.op.startswith("RandomUniform") and not alpha < beta:
        return f"{node.op} with low={alpha} not below high={beta} (TensorRT draws from a nonempty range)"
    if node.op.startswith("RandomNormal") and not beta > 0:
        return f"{node.op} with scale={beta} (TensorRT draws with a positive deviation)"
    return None


@converter("RandomUniform", "RandomUniformLike", "RandomNormal", "RandomNormalLike", capability=_proper_distribution)
def random_values(ctx: ConversionContext, node: Node) -> None:
    like = ctx.get(node.inputs[0], node) if node.op.endswith("Like") else None
    uniform = node.op.startswith("RandomUniform")
    alpha, beta = _parameters(node)
    ctx.set(node.outputs[0], _random_fill(ctx, node, like, uniform, alpha, beta, _output_type(node, like)))


@converter("Bernoulli", capability=_drawn_once)
def bernoulli(ctx: ConversionContext, node: Node) -> None:
    """1 where a uniform draw u in [0, 1) is below the probability p, else 0."""
    p = ctx.get(node.inputs[0], node)
    u = _random_fill(ctx, node, p, True, 0.0, _BELOW_ONE, trt().float32, "uniform")
    drawn = ctx.elementwise(u, ctx.cast(p, trt().float32, node, "p"), "LESS", node, "drawn")
    ctx.set(node.outputs[0], ctx.cast(drawn, _output_type(node, p), node))

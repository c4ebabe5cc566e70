"""Windowed pools: MaxPool, AveragePool, LpPool (one IPoolingLayer each, 1-D run as 2-D) and
GlobalLpPool (a reduction).

ONNX and TensorRT size a pool's output alike except in two places, which the converter bridges:
ceil_mode drops a last window that would start in the end padding (TensorRT's EXPLICIT_ROUND_UP
keeps it: a slice trims it), and auto_pad=SAME pads by max(0, ...) where TensorRT's SAME modes
can pad negatively (static sizes get ONNX's explicit pads instead). TensorRT's pooling has no
dilation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.ops.reduce import mask
from loopc.backend.trt.ops.shape import slice_axes
from loopc.backend.trt.ops.unary import scalar_like
from loopc.backend.trt.registry import converter, unsupported
from loopc.ir import Node
from loopc.trt import trt

_AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass(frozen=True)
class Window:
    """A pool's window attributes, defaults filled in (per spatial axis)."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    begin: tuple[int, ...]
    end: tuple[int, ...]
    auto_pad: str
    ceil: bool

    @staticmethod
    def of(node: Node) -> Window:
        kernel = tuple(int(k) for k in node.attrs["kernel_shape"])
        n = len(kernel)
        pads = [int(p) for p in node.attrs.get("pads", [0] * 2 * n)]
        return Window(kernel, tuple(int(s) for s in node.attrs.get("strides", [1] * n)),
                      tuple(int(d) for d in node.attrs.get("dilations", [1] * n)),
                      tuple(pads[:n]), tuple(pads[n:]), _text(node.attrs.get("auto_pad", "NOTSET")),
                      bool(node.attrs.get("ceil_mode", 0)))

    def reach(self) -> tuple[int, ...]:
        """The extent of a (dilated) window: (F - 1) * D + 1."""
        return tuple((f - 1) * d + 1 for f, d in zip(self.kernel, self.dilations))


@dataclass(frozen=True)
class Plan:
    """How TensorRT pools as ONNX does: its padding mode and pads, and how many outputs to keep per
    axis (None: all it makes)."""

    mode: str
    begin: tuple[int, ...]
    end: tuple[int, ...]
    keep: tuple[int | None, ...]


def onnx_pads(window: Window, spatial: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The pads ONNX uses on static sizes: auto_pad's (SAME: max(0, ...) split, the odd one at the
    end for UPPER), zeros for VALID, else the explicit ones."""
    if window.auto_pad == "VALID":
        return (0,) * len(spatial), (0,) * len(spatial)
    if window.auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        return window.begin, window.end
    begin, end = [], []
    for i, s, r in zip(spatial, window.strides, window.reach()):
        total = max(0, (-(-i // s) - 1) * s + r - i)
        small = total // 2
        begin.append(small if window.auto_pad == "SAME_UPPER" else total - small)
        end.append(total - begin[-1])
    return tuple(begin), tuple(end)


def onnx_output_sizes(window: Window, spatial: tuple[int, ...]) -> tuple[int, ...]:
    """ONNX's output length per axis (static sizes): floor or ceil of (I + pads - reach) / S + 1,
    less a last ceil window that would start in the end padding; ceil(I / S) for SAME."""
    if window.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return tuple(-(-i // s) for i, s in zip(spatial, window.strides))
    begin, end = onnx_pads(window, spatial)
    sizes = []
    for i, s, r, b, a in zip(spatial, window.strides, window.reach(), begin, end):
        span = i + b + a - r
        o = (-(-span // s) if window.ceil else span // s) + 1
        if window.ceil and (o - 1) * s >= i + b:
            o -= 1
        sizes.append(o)
    return tuple(sizes)


#: What an average divides by, which decides the padding a plan may change: NOTHING (a max, or an
#: average over the input cells only: any padding will do), PADDED (the window's overlap with the
#: padded input: the pads must stay), WHOLE (the full window: no window may run past the padding).
NOTHING, PADDED, WHOLE = "nothing", "padded", "whole"


def plan(window: Window, spatial: tuple[int, ...], counts: str = NOTHING) -> Plan | str:
    """TensorRT's padding for an undilated ``window`` over ``spatial`` (-1: dynamic), or why there is none.

    A static ceil_mode pool is sized exactly: padded at the end just far enough for the windows ONNX
    keeps (TensorRT refuses an exclusive average's padding as long as its window, which rounding up
    past the end can make); or, where the pads count, rounded up with the windows ONNX drops sliced off.
    """
    n = len(spatial)
    dynamic = -1 in spatial
    everything = (None,) * n
    if window.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if not dynamic:
            begin, end = onnx_pads(window, spatial)
            return Plan("EXPLICIT_ROUND_DOWN", begin, end, everything)
        if any(f < s for f, s in zip(window.kernel, window.strides)):
            return f"auto_pad={window.auto_pad} with a stride longer than the kernel on a dynamic spatial size"
        return Plan(window.auto_pad, (0,) * n, (0,) * n, everything)
    begin, end = onnx_pads(window, tuple(max(i, 0) for i in spatial))
    if not window.ceil:
        return Plan("EXPLICIT_ROUND_DOWN", begin, end, everything)
    if dynamic:
        if counts == WHOLE:
            return "ceil_mode=1 on a dynamic spatial size (its last windows may run past the padding)"
        # the last ceil window can start in the end padding only when F < S + A
        if any(f < s + a for f, s, a in zip(window.kernel, window.strides, end)):
            return "ceil_mode=1 on a dynamic spatial size whose last window may start in the padding"
        return Plan("EXPLICIT_ROUND_UP", begin, end, everything)
    wanted = onnx_output_sizes(window, spatial)
    geometry = list(zip(wanted, spatial, window.kernel, window.strides, begin, end))
    if counts == PADDED:
        made = [-(-(i + b + a - f) // s) + 1 for _, i, f, s, b, a in geometry]
        return Plan("EXPLICIT_ROUND_UP", begin, end, tuple(None if w == m else w for w, m in zip(wanted, made)))
    reach = [(w - 1) * s + f - i - b for w, i, f, s, b, _ in geometry]  # end padding the last kept window reads
    if counts == NOTHING:
        return Plan("EXPLICIT_ROUND_DOWN", begin, tuple(max(0, r) for r in reach), everything)
    end = tuple(max(a, r) for a, r in zip(end, reach))
    made = [(i + b + a - f) // s + 1 for i, f, s, b, a in zip(spatial, window.kernel, window.strides, begin, end)]
    return Plan("EXPLICIT_ROUND_DOWN", begin, end, tuple(None if w == m else w for w, m in zip(wanted, made)))


def window_refusal(node: Node) -> str | None:
    """What of a pool's attributes TensorRT cannot express (None when it can)."""
    if "kernel_shape" not in node.attrs:
        return f"{node.op} without kernel_shape"
    n = len(node.attrs["kernel_shape"])
    if not 1 <= n <= 3:
        return f"a {n}-D {node.op} (TensorRT pools 1-D as 2-D, 2-D and 3-D windows)"
    window = Window.of(node)
    if window.auto_pad not in _AUTO_PADS:
        return f"auto_pad={window.auto_pad!r}"
    if any(len(v) != n for v in (window.strides, window.dilations, window.begin, window.end)):
        return f"{node.op} attributes whose lengths differ from kernel_shape's {n}"
    if len(node.outputs) > 1 and node.outputs[1].is_used():
        return "MaxPool's Indices output (TensorRT's pooling layer does not say where its maxima are)"
    return None


def _lp_refusal(node: Node) -> str | None:
    p = int(node.attrs.get("p", 2))
    if p < 1:
        return f"LpPool with p={p} (p must be 1 or more)"
    return window_refusal(node)


def pool(ctx: ConversionContext, node: Node, x: Any, kind: str, counts: str = NOTHING) -> Any:
    """``x`` [N, C, *spatial] pooled as ``node``'s window says; ``kind`` is a PoolingType name and
    ``counts`` what an average divides by (see :data:`NOTHING`)."""
    window = Window.of(node)
    rank = len(x.shape)
    n = len(window.kernel)
    if rank != n + 2:
        raise unsupported(node, f"a {n}-D window over a rank-{rank} input (it needs [N, C, {n} spatial dims])")
    if any(d != 1 for d in window.dilations):
        raise unsupported(node, f"dilations={list(window.dilations)}")
    spatial = tuple(int(d) for d in x.shape[2:])
    found = plan(window, spatial, counts)
    if isinstance(found, str):
        raise unsupported(node, found)
    if n == 1:  # TensorRT pools 2-D and 3-D windows: [N, C, L] runs as [N, C, L, 1]
        window = Window(window.kernel + (1,), window.strides + (1,), (1, 1), window.begin, window.end,
                        window.auto_pad, window.ceil)
        found = Plan(found.mode, found.begin + (0,), found.end + (0,), found.keep + (None,))
        x = ctx.unsqueeze(x, [3], node, "as2d")
    layer = ctx.network.add_pooling_nd(x, getattr(trt().PoolingType, kind), window.kernel)
    layer.stride_nd = window.strides
    layer.pre_padding = found.begin
    layer.post_padding = found.end
    layer.padding_mode = getattr(trt().PaddingMode, found.mode)
    layer.average_count_excludes_padding = counts == NOTHING
    y = ctx.out(layer, node, "pool")
    if any(k is not None for k in found.keep):
        axes = [2 + i for i, k in enumerate(found.keep) if k is not None]
        sizes = [k for k in found.keep if k is not None]
        y = slice_axes(ctx, node, y, axes, [0] * len(axes), sizes, [1] * len(axes), "ceil_trim")
    if n == 1:
        y = ctx.squeeze(y, [3], node, "as1d")
    return y


def _as_float(ctx: ConversionContext, node: Node, x: Any) -> Any:
    """TensorRT pools floats (and quantized INT8): integers are pooled as exact float32 values."""
    T = trt()
    if x.dtype in (T.float32, T.float16, T.bfloat16):
        return x
    return ctx.cast(x, T.float32, node, "as_float")


@converter("MaxPool", capability=window_refusal)
def max_pool(ctx: ConversionContext, node: Node) -> None:
    x = ctx.get(node.inputs[0], node)
    y = pool(ctx, node, _as_float(ctx, node, x), "MAX")
    ctx.set(node.outputs[0], ctx.cast(y, x.dtype, node, "typed"))


@converter("AveragePool", capability=window_refusal)
def average_pool(ctx: ConversionContext, node: Node) -> None:
    x = ctx.get(node.inputs[0], node)
    counts = PADDED if int(node.attrs.get("count_include_pad", 0)) else NOTHING
    ctx.set(node.outputs[0], pool(ctx, node, x, "AVERAGE", counts))


def _power(ctx: ConversionContext, node: Node, x: Any, p: float, suffix: str) -> Any:
    return ctx.elementwise(x, scalar_like(ctx, p, x, node, f"{suffix}_p"), "POW", node, suffix)


def _magnitude_power(ctx: ConversionContext, node: Node, x: Any, p: int) -> Any:
    """|x|^p: ABS for p = 1, x·x for p = 2, else POW of |x| (exact for even p as well)."""
    if p == 2:
        return ctx.elementwise(x, x, "PROD", node, "square")
    magnitude = ctx.unary(x, "ABS", node, "abs")
    return magnitude if p == 1 else _power(ctx, node, magnitude, float(p), "pow")


def _root(ctx: ConversionContext, node: Node, x: Any, p: int) -> Any:
    if p == 1:
        return x
    if p == 2:
        return ctx.unary(x, "SQRT", node, "root")
    return _power(ctx, node, x, 1.0 / p, "root")


@converter("LpPool", capability=_lp_refusal)
def lp_pool(ctx: ConversionContext, node: Node) -> None:
    """(sum over the window of |x|^p)^(1/p): an average that counts the padding (zeros add nothing)
    times the window's size, with windows that all lie within the padding."""
    x = ctx.get(node.inputs[0], node)
    p = int(node.attrs.get("p", 2))
    mean = pool(ctx, node, _magnitude_power(ctx, node, x, p), "AVERAGE", WHOLE)
    size = float(np.prod(Window.of(node).kernel))
    total = ctx.elementwise(mean, scalar_like(ctx, size, mean, node, "window"), "PROD", node, "sum")
    ctx.set(node.outputs[0], _root(ctx, node, total, p))


@converter("GlobalLpPool")
def global_lp_pool(ctx: ConversionContext, node: Node) -> None:
    """(sum over the spatial axes of |x|^p)^(1/p), kept as ones."""
    x = ctx.get(node.inputs[0], node)
    rank = len(x.shape)
    if rank < 3:
        raise unsupported(node, f"GlobalLpPool of a rank-{rank} input (it needs [N, C, D1, ...])")
    p = int(node.attrs.get("p", 2))
    if p < 1:
        raise unsupported(node, f"GlobalLpPool with p={p} (p must be 1 or more)")
    powered = _magnitude_power(ctx, node, x, p)
    layer = ctx.network.add_reduce(powered, trt().ReduceOperation.SUM, mask(list(range(2, rank)), rank), True)
    ctx.set(node.outputs[0], _root(ctx, node, ctx.out(layer, node, "sum"), p))

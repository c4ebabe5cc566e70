"""A pool's window as ONNX defines it, and the padding that makes TensorRT's pooling layer size it
the same way (ONNX's SAME padding, :func:`same_pads`, is the convolutions' too).

ONNX and TensorRT size a pool's output alike except in two places: ceil_mode drops a last window
that would start in the end padding (TensorRT's EXPLICIT_ROUND_UP keeps it), and auto_pad=SAME
pads by max(0, ...) where TensorRT's SAME modes can pad negatively.
"""

from __future__ import annotations

from dataclasses import dataclass

from loopc.ir import Node, text_attr
from loopc.semantics.conv import split_pads

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def same_pads(size: int, stride: int, reach: int, upper: bool) -> tuple[int, int]:
    """ONNX's SAME padding of one axis: ceil(size / stride) windows of ``reach``, never negative."""
    return split_pads(max(0, (-(-size // stride) - 1) * stride + reach - size), upper)


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
                      tuple(pads[:n]), tuple(pads[n:]), text_attr(node, "auto_pad", "NOTSET"),
                      bool(node.attrs.get("ceil_mode", 0)))

    def lifted(self) -> Window:
        """This 1-D window as a 2-D one over [L, 1]."""
        return Window(self.kernel + (1,), self.strides + (1,), self.dilations + (1,), self.begin + (0,),
                      self.end + (0,), self.auto_pad, self.ceil)

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
    pads = [same_pads(i, s, r, window.auto_pad == "SAME_UPPER")
            for i, s, r in zip(spatial, window.strides, window.reach())]
    return tuple(b for b, _ in pads), tuple(e for _, e in pads)


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
    if window.auto_pad not in AUTO_PADS:
        return f"auto_pad={window.auto_pad!r}"
    if any(len(v) != n for v in (window.strides, window.dilations, window.begin, window.end)):
        return f"{node.op} attributes whose lengths differ from kernel_shape's {n}"
    return None

"""Sliding-window attributes shared by convolutions and pools: strides, dilations, pads and auto_pad.

OpenVINO writes one value per spatial axis in comma lists; ``auto_pad`` same_upper/same_lower/valid
replaces pads_begin/pads_end. With the spatial dims known the pads are worked out here (ONNX's
rule, which is OpenVINO's: the total ``max((ceil(in / s) - 1) * s + dilated kernel - in, 0)``, the odd
one at the end for same_upper, at the start for same_lower), so what follows sees only explicit pads;
with them unknown, ONNX's ``auto_pad`` string carries the mode.
"""

from __future__ import annotations

from dataclasses import dataclass

from loopc.frontend.openvino.importer import Op
from loopc.frontend.openvino.ops._common import dim
from loopc.ir import Value

AUTO_PADS = ("explicit", "notset", "same_upper", "same_lower", "valid")


@dataclass
class Window:
    """One op's window over ``n`` spatial axes; ``auto_pad`` is ONNX's spelling when the pads are not explicit."""

    kernel: list[int]
    strides: list[int]
    dilations: list[int]
    begin: list[int]
    end: list[int]
    auto_pad: str | None = None

    @property
    def pads(self) -> list[int]:
        return self.begin + self.end

    def attrs(self) -> dict[str, object]:
        """ONNX's kernel_shape, strides, dilations and pads (or auto_pad)."""
        out: dict[str, object] = {"kernel_shape": self.kernel, "strides": self.strides, "dilations": self.dilations}
        if self.auto_pad is None:
            out["pads"] = self.pads
        else:
            out["auto_pad"] = self.auto_pad
        return out


def spatial_list(op: Op, key: str, n: int, default: int | None = None) -> list[int]:
    """Attribute ``key`` with one value per spatial axis (``default`` for each when absent)."""
    values = op.ints_attr(key, None if default is None else [default] * n)
    if len(values) != n:
        raise op.error(f"attribute {key!r} has {len(values)} values for {n} spatial axes")
    return values


def window(op: Op, x: Value, kernel: list[int], dilations: list[int] | None = None) -> Window:
    """The window of ``op`` over ``x`` (rank 2 + len(kernel)) with pads made explicit where the dims allow."""
    n = len(kernel)
    strides = spatial_list(op, "strides", n, 1)
    dilations = dilations if dilations is not None else spatial_list(op, "dilations", n, 1)
    if any(s < 1 for s in strides) or any(d < 1 for d in dilations) or any(k < 1 for k in kernel):
        raise op.error(f"strides {strides}, dilations {dilations} and kernel {kernel} must be positive")
    mode = op.choice_attr("auto_pad", AUTO_PADS, "explicit")
    if mode in ("explicit", "notset"):
        begin, end = spatial_list(op, "pads_begin", n, 0), spatial_list(op, "pads_end", n, 0)
        if any(p < 0 for p in begin + end):
            raise op.unsupported(f"negative pads {begin} {end}: crop the input first")
        return Window(kernel, strides, dilations, begin, end)
    if mode == "valid":
        return Window(kernel, strides, dilations, [0] * n, [0] * n)
    sizes = [dim(x, 2 + k) for k in range(n)]
    if any(size is None for size in sizes):
        return Window(kernel, strides, dilations, [0] * n, [0] * n, auto_pad=mode.upper())
    begin, end = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        assert size is not None
        total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
        small = total // 2
        begin.append(small if mode == "same_upper" else total - small)
        end.append(total - begin[-1])
    return Window(kernel, strides, dilations, begin, end)


def spatial_rank(op: Op, k: int = 0) -> int:
    """How many spatial axes input ``k`` (``[N, C, spatial...]``) has; at least one."""
    rank = op.rank(k)
    if rank < 3:
        raise op.error(f"input {k} has rank {rank}; it must be [N, C, spatial...] with at least one spatial axis")
    return rank - 2

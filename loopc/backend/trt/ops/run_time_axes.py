"""Axes known only at run time, for ops whose TensorRT layers take their axes when the network is built
(Reduce*) or whose output shape follows the axes (Squeeze, Unsqueeze).

The number of axes is static (the axes input's length), so the output rank is known; which axes they
are is not. Each position d gets a flag, 1 when d is among the axes (a negative axis counts from the
end), computed with 1-D INT64 arithmetic: shape-tensor arithmetic, which TensorRT evaluates with the
shapes. Every layer that depends on the axes then takes them as dims: a reduction splits each axis in
two, (1, n) when flagged, else (n, 1), and reduces the second part (all of the axis, or nothing) with a
fixed axis; a rank that drops or grows is a reshape to dims computed from the flags and the input's
shape. So the output's shape follows the axes as TensorRT's shapes follow shape tensors, and the engine
takes any axes its optimization profile allows. (One conditional per axis, reduce or pass through,
would give shapes that depend on the branch taken, which TensorRT-RTX builds only for pinned axes.)

The axes are thus a shape tensor: a network input that feeds them needs its values in the profile, as
Slice's computed axes do, and axes computed in a loop from a per-trip value are refused. Axes that
repeat or lie outside the range are an ONNX error; an assertion on the flags refuses them (when the
engine is built, if the profile's values are invalid, and when it runs), where onnxruntime would
reduce or squeeze a repeated axis once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.registry import unsupported
from loopc.ir import Node, Value
from loopc.trt import trt


def axes_count(ctx: ConversionContext, node: Node, value: Value) -> int:
    """How many axes a computed axes input holds: its length, which must be static (it sets the rank)."""
    shape = tuple(ctx.get(value, node).shape)
    if len(shape) != 1:
        raise unsupported(node, f"a computed axes input of rank {len(shape)} (it must be 1-D)")
    if shape[0] < 0:
        raise unsupported(node, "a computed axes input of unknown length (its length sets the output rank)",
                          hint="give the axes input a static length")
    return int(shape[0])


def axis_flags(ctx: ConversionContext, node: Node, value: Value, rank: int, dims: Any = None) -> list[Any]:
    """For each position d in [0, rank): a [1] INT64 shape tensor, 1 when d is among the axes, else 0.

    Asserts that the axes are distinct and in [-rank, rank), and, when ``dims`` (the squeezed input's
    shape, a 1-D INT64 tensor) is given, that every dim they name is 1.
    """
    count = axes_count(ctx, node, value)
    source = ctx.get(value, node)
    varying = _loop_variant(ctx.network, source)
    if varying is not None:
        raise unsupported(node, f"axes computed from a value that changes from trip to trip (a loop's {varying} "
                                "layer: the axes must be a shape tensor)", hint="compute the axes outside the loop")
    axes = ctx.cast(source, trt().int64, node, "axes_i64")
    vec = lambda v, suffix: ctx.constant(np.array([v], np.int64), node, suffix)  # noqa: E731
    negative = ctx.elementwise(axes, vec(0, "axes_zero"), "LESS", node, "axes_negative")
    wrapped = ctx.elementwise(axes, vec(rank, "axes_rank"), "SUM", node, "axes_wrapped")
    axes = ctx.out(ctx.network.add_select(negative, wrapped, axes), node, "axes")
    one, zero = vec(1, "one"), vec(0, "zero")
    flags = []
    for d in range(rank):
        hit = ctx.elementwise(axes, vec(d, f"axis{d}"), "EQUAL", node, f"is_axis{d}")
        hits = ctx.out(ctx.network.add_select(hit, one, zero), node, f"hits{d}")
        flags.append(ctx.out(ctx.network.add_reduce(hits, trt().ReduceOperation.MAX, 1, True), node, f"flag{d}"))
    # Each flag needs an axis of its own, so the flags sum to the count only when the axes are distinct
    # and in range; a squeezed dim that is not 1 counts for nothing.
    counted = flags
    if dims is not None:
        unit = ctx.elementwise(dims, one, "EQUAL", node, "unit_dims")
        units = ctx.out(ctx.network.add_select(unit, ctx.constant(np.ones(rank, np.int64), node, "ones"),
                                               ctx.constant(np.zeros(rank, np.int64), node, "zeros")), node, "units")
        counted = [ctx.elementwise(f, ctx.gather1(units, [d], node, f"unit{d}"), "PROD", node, f"counted{d}")
                   for d, f in enumerate(flags)]
    total = ctx.out(ctx.network.add_reduce(ctx.concat(counted, node, "counted"), trt().ReduceOperation.SUM, 1, True),
                    node, "total")
    valid = ctx.elementwise(total, vec(count, "count"), "EQUAL", node, "valid_axes")
    what = "distinct axes in [-r, r) naming dims of length 1" if dims is not None else "distinct axes in [-r, r)"
    assertion = ctx.network.add_assertion(valid, f"{node.describe()}: the axes input must hold {count} {what}, "
                                                 f"r = {rank}")
    ctx.named(assertion, node, "axes_check")
    return flags


def split_dims(ctx: ConversionContext, node: Node, dims: Any, flags: list[Any]) -> tuple[Any, Any]:
    """Each dim split in two, (1, n) where flagged, else (n, 1): the kept and the reduced parts, as two
    1-D INT64 tensors. The kept part is the shape of a reduction that keeps its axes."""
    rank = len(flags)
    flagged = ctx.elementwise(ctx.concat(flags, node, "flags"), ctx.constant(np.array([1], np.int64), node, "set"),
                              "EQUAL", node, "flagged")
    ones = ctx.constant(np.ones(rank, np.int64), node, "unit_dims")
    kept = ctx.out(ctx.network.add_select(flagged, ones, dims), node, "kept_dims")
    reduced = ctx.out(ctx.network.add_select(flagged, dims, ones), node, "reduced_dims")
    return kept, reduced


def prefix_counts(ctx: ConversionContext, node: Node, flags: list[Any]) -> Any:
    """How many flags are set before each position, as a 1-D INT64 tensor (exclusive running sums)."""
    running = [ctx.constant(np.array([0], np.int64), node, "before0")]
    for d, flag in enumerate(flags[:-1]):
        running.append(ctx.elementwise(running[-1], flag, "SUM", node, f"before{d + 1}"))
    return ctx.concat(running, node, "before")


def squeezed_dims(ctx: ConversionContext, node: Node, dims: Any, flags: list[Any], count: int) -> Any:
    """``dims`` without the flagged positions, as a 1-D INT64 tensor of ``len(flags) - count`` dims
    (``[]`` when none remain).

    A kept position d lands at d - (flags set before d); output dim j sums the kept dims landing at j.
    """
    rank = len(flags)
    flag_vec = ctx.concat(flags, node, "flags")
    kept = ctx.elementwise(flag_vec, ctx.constant(np.array([0], np.int64), node, "unflagged"), "EQUAL", node, "kept")
    lands = ctx.elementwise(ctx.constant(np.arange(rank, dtype=np.int64), node, "positions"),
                            prefix_counts(ctx, node, flags), "SUB", node, "lands")
    none = ctx.constant(np.zeros(rank, np.int64), node, "no_dims")
    out = []
    for j in range(rank - count):
        here = ctx.elementwise(lands, ctx.constant(np.array([j], np.int64), node, f"out{j}"), "EQUAL", node,
                               f"lands_at{j}")
        here = ctx.elementwise(here, kept, "AND", node, f"kept_at{j}")
        picked = ctx.out(ctx.network.add_select(here, dims, none), node, f"picked{j}")
        out.append(ctx.out(ctx.network.add_reduce(picked, trt().ReduceOperation.SUM, 1, True), node, f"dim{j}"))
    if not out:
        return []  # a scalar
    return ctx.concat(out, node, "squeezed_dims")


def unsqueezed_dims(ctx: ConversionContext, node: Node, dims: Any, flags: list[Any]) -> Any:
    """1 at the flagged positions, ``dims`` in order at the others (1-D INT64, one entry per flag).

    An unflagged position p takes dim p - (flags set before p)."""
    rank = len(flags)
    flag_vec = ctx.concat(flags, node, "flags")
    source = ctx.elementwise(ctx.constant(np.arange(rank, dtype=np.int64), node, "positions"),
                             prefix_counts(ctx, node, flags), "SUB", node, "source")
    last = int(dims.shape[0]) - 1  # a flagged position's source may run past the end: clamp it
    source = ctx.elementwise(source, ctx.constant(np.array([last], np.int64), node, "last"), "MIN", node,
                             "source_clamped")
    taken = ctx.out(ctx.network.add_gather(dims, source, 0), node, "taken")
    is_new = ctx.elementwise(flag_vec, ctx.constant(np.array([1], np.int64), node, "flagged"), "EQUAL", node,
                             "is_new")
    ones = ctx.constant(np.ones(rank, np.int64), node, "new_dims")
    return ctx.out(ctx.network.add_select(is_new, ones, taken), node, "unsqueezed_dims")


#: Loop layers whose outputs change from trip to trip: no shape tensor can be computed from them.
_PER_TRIP = frozenset({"RECURRENCE", "ITERATOR"})


def _loop_variant(network: Any, tensor: Any) -> str | None:
    """The type of a loop layer whose per-trip values ``tensor`` is computed from (a shape read from one
    does not count), or None."""
    producers = {}
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        for k in range(layer.num_outputs):
            producers[layer.get_output(k).name] = layer
    seen: set[str] = set()
    stack = [tensor]
    while stack:
        current = stack.pop()
        layer = producers.get(current.name)
        if layer is None or current.name in seen:
            continue
        seen.add(current.name)
        kind = str(layer.type.name)
        if kind in _PER_TRIP:
            return kind
        if kind != "SHAPE":
            stack.extend(layer.get_input(k) for k in range(layer.num_inputs) if layer.get_input(k) is not None)
    return None

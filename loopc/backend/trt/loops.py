"""IR Loop → TensorRT ILoop: the IR already speaks TensorRT's loop language, so this is a walk.

=============================  ==========================================================
IR role                        TensorRT
=============================  ==========================================================
trip_count                     ITripLimitLayer kCOUNT (0-D INT32, saturated to [0, MAX_TRIPS])
condition                      ITripLimitLayer kWHILE on the body's condition tensor
counter                        IRecurrenceLayer 0 → counter + 1
iterator (axis, reverse)       IIteratorLayer
recurrence (init → next)       IRecurrenceLayer, input 1 set after the body is converted
output last                    ILoopOutputLayer kLAST_VALUE of the recurrence
output concat / reverse        kCONCATENATE / kREVERSE on axis 0, length = max_trips or trip count,
                               then a transpose to the output's axis
=============================  ==========================================================

Outer values read in the body are used directly: TensorRT treats them as loop invariants.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext, np_dtype
from loopc.backend.trt.registry import converter, node_error
from loopc.errors import InternalError
from loopc.ir import Loop, Node
from loopc.loop_rules import MAX_TRIPS, bound_hint, saturate_trips
from loopc.trt import trt



@converter("Loop")
def convert_loop(ctx: ConversionContext, node: Node) -> None:
    """Build ``node`` as one ILoop whose interior is the converted body."""
    if not isinstance(node, Loop):
        raise InternalError(f"{node.describe()}: a Loop node that is not an IR Loop")
    T = trt()
    net = ctx.network
    loop = net.add_loop()
    ctx.name_loop(loop, node)
    count = _int32_scalar(ctx, node.trip_count, node, "trip_count") if node.trip_count is not None else None
    if count is not None:
        ctx.named(loop.add_trip_limit(count, T.TripLimit.COUNT), node, "count")
    for k, it in enumerate(node.iterators):
        layer = loop.add_iterator(ctx.get(it.source, node), it.axis, it.reverse)
        ctx.set(it.param, ctx.out(layer, node, f"iterator{k}"))
    if node.counter is not None:
        _counter(ctx, node, loop)
    recurrences = []
    for k, rec in enumerate(node.recurrences):
        layer = ctx.named(loop.add_recurrence(ctx.get(rec.init, node)), node, f"recurrence{k}")
        ctx.set(rec.state, layer.get_output(0))
        recurrences.append(layer)

    ctx.convert_graph(node.body)

    for k, (rec, layer) in enumerate(zip(node.recurrences, recurrences)):
        nxt = ctx.get(rec.next, node)
        _check_carried_shape(node, rec.state.name, tuple(layer.get_input(0).shape), tuple(nxt.shape))
        if _producer_type(net, nxt) in _NEEDS_IDENTITY:
            nxt = ctx.out(net.add_identity(nxt), node, f"next{k}")
        layer.set_input(1, nxt)
    if node.condition is not None:
        cond = ctx.scalar0d(ctx.get(node.condition, node), node, "condition")
        if cond.dtype != T.bool:
            raise node_error(node, f"the loop condition must be bool, not {cond.dtype}")
        ctx.named(loop.add_trip_limit(cond, T.TripLimit.WHILE), node, "while")
    length = None
    for k, out in enumerate(node.loop_outputs):
        value = ctx.get(out.value, node)
        if out.kind == "last":
            layer = loop.add_loop_output(value, T.LoopOutput.LAST_VALUE)
        else:
            if length is None:
                length = _length(ctx, node, count)
            kind = T.LoopOutput.CONCATENATE if out.kind == "concat" else T.LoopOutput.REVERSE
            # stacked on axis 0, then moved: TensorRT's builder cannot size a stacked output on another axis
            # when the trip count is known only at run time ("No scan input/output tensor to derive shape")
            layer = loop.add_loop_output(value, kind, 0)
            layer.set_input(1, length)
            if out.axis != 0:
                stacked = ctx.out(layer, node, f"output{k}_stacked")
                layer = net.add_shuffle(stacked)
                rank = len(value.shape) + 1
                layer.first_transpose = [*range(1, out.axis + 1), 0, *range(out.axis + 1, rank)]
        ctx.set(out.result, ctx.out(layer, node, f"output{k}"))


def _check_carried_shape(node: Loop, name: str, first: tuple[int, ...], after: tuple[int, ...]) -> None:
    """TensorRT carries a value in one shape: refuse, by the carried value's name, a next value whose
    shape is known to differ (the builder would refuse it later, naming only its own layer)."""
    if len(first) == len(after) and all(a == b or -1 in (a, b) for a, b in zip(first, after)):
        return
    raise node_error(node, f"carried value {name!r} has shape {_dims(first)} when the loop starts and {_dims(after)} "
                           "after a trip; a TensorRT loop carries a value in one shape",
                     hint="loopc turns a value that only grows by Concat onto itself into a concatenated output; "
                          "compute this one otherwise, or collect the pieces as a scan output")


def _dims(shape: tuple[int, ...]) -> str:
    return "[" + ",".join("?" if d < 0 else str(d) for d in shape) + "]"


def _counter(ctx: ConversionContext, node: Loop, loop: Any) -> None:
    """The iteration number as a recurrence 0, 1, 2, ... in the counter value's own dtype."""
    assert node.counter is not None
    dtype = node.counter.dtype if node.counter.dtype is not None else np.dtype(np.int64)
    start = ctx.constant(np.zeros((), dtype), node, "counter_init")
    rec = ctx.named(loop.add_recurrence(start), node, "counter")
    i = rec.get_output(0)
    one = ctx.constant(np.ones((), dtype), node, "counter_one")
    nxt = ctx.elementwise(i, one, "SUM", node, "counter_next")
    rec.set_input(1, nxt)
    ctx.set(node.counter, i)


def _int32_scalar(ctx: ConversionContext, value: Any, node: Loop, role: str) -> Any:
    """A trip count or length as TensorRT wants it: a 0-D INT32 tensor (constant when known).

    The value is saturated to [0, MAX_TRIPS], never wrapped: ONNX's M is int64, and a cast alone
    turns 2**32 + 3 into 3 trips and 2**31 into a negative length. A negative M runs no trips (as
    onnxruntime does), and a loop needing more than MAX_TRIPS trips is out of any engine's reach.
    """
    known = ctx.constant_of(value)
    if known is not None:
        n = int(np.asarray(known).reshape(-1)[0])
        return ctx.constant(np.array(saturate_trips(n), np.int32), node, role)
    tensor = ctx.scalar0d(ctx.get(value, node), node, f"{role}_0d")
    kind = np_dtype(tensor.dtype).kind
    if kind not in "iu":
        raise node_error(node, f"the {role.replace('_', ' ')} must be an integer, not {tensor.dtype}")
    if tensor.dtype != trt().int32 and tensor.dtype != trt().int64:
        tensor = ctx.cast(tensor, trt().int32, node, f"{role}_widened")
    tensor = ctx.elementwise(tensor, ctx.scalar(0, tensor, node, f"{role}_zero"), "MAX", node, f"{role}_at_least_0")
    if tensor.dtype == trt().int64:
        top = ctx.scalar(MAX_TRIPS, tensor, node, f"{role}_int32_max")
        tensor = ctx.elementwise(tensor, top, "MIN", node, f"{role}_saturated")
    return ctx.cast(tensor, trt().int32, node, f"{role}_i32")


def _length(ctx: ConversionContext, node: Loop, count: Any) -> Any:
    """The build-time length of concatenated outputs: max_trips when given, else the trip count."""
    if node.max_trips is not None:
        return _int32_scalar(ctx, node.max_trips, node, "max_trips")
    if count is None:
        raise node_error(node, "the loop collects a value on every trip and has no trip count, so TensorRT has no "
                               "length for the collected output", hint=bound_hint())
    return count


# TensorRT-RTX rejects a Unary or Activation output as a recurrence's next value ("invalid
# inferred type"); an Identity in between is accepted. Other producers need none.
_NEEDS_IDENTITY = {"UNARY", "ACTIVATION", None}


def _producer_type(network: Any, tensor: Any) -> str | None:
    """The layer type that produces ``tensor`` (searched from the newest layer), None if not found."""
    for i in range(network.num_layers - 1, -1, -1):
        layer = network.get_layer(i)
        if any(layer.get_output(j).name == tensor.name for j in range(layer.num_outputs)):
            return str(layer.type.name)
    return None

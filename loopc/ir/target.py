"""TensorRT's loop rule, stated once: the target loopc's passes make every loop legal for.

TensorRT's builder cannot order a loop's layers when a layer inside the loop takes a *shape* (a size, slice
bounds, a count: an operand it evaluates as a shape tensor, see ``OpTraits.shape_operands``) from a value that
changes between trips, or sizes its result by per-trip data (``OpTraits.data_sized``): it fails an internal
assertion (``makeScopeNodesContiguous``) that names no layer. Nor can a loop carry a value whose shape changes
between trips (a recurrence keeps one shape). What changes between trips is what the loop's body computes
from its inputs (the counter, an iterator's slice, a carried state); a ``Shape`` read is not, since in a legal
loop every carried value keeps its shape.

:func:`illegal` answers for one node, :func:`illegal_carries` for a loop's carried values, :func:`violations`
for a whole model: the legalization passes rewrite until it is empty, and the verifier checks it once they are
done, naming the node before TensorRT's anonymous assertion could fire.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import onnx.defs

from loopc.ir.core import Graph, Node, Shape, Value
from loopc.ir.dependence import computed_from
from loopc.ir.loop import If, Loop, Recurrence, reads
from loopc.ir.ops import known_ops, traits
from loopc.semantics.attributes import attr



#: The ops :func:`illegal` can refuse: those that take an operand as a shape, or size their result by their data.
_SHAPE_TAKING = tuple(op for op in known_ops() if traits(op).shape_operands or traits(op).data_sized)


def per_trip_values(loop: Loop) -> set[Value]:
    """Every value of ``loop``'s body (nested graphs included) that may change between its trips: what is
    computed from the body's inputs, except through ``Shape``/``Size``. One walk in program order."""
    varying = set(loop.body.inputs)
    _spread(loop.body, varying)
    return varying


def _spread(graph: Graph, varying: set[Value]) -> None:
    for node in graph.nodes:
        nested = node.subgraphs()
        for sub in nested:
            _spread(sub, varying)
        if traits(node.op).shape_only:
            continue
        if not varying.isdisjoint(reads(node) if nested else node.inputs):
            varying.update(node.outputs)


def illegal(node: Node, loop: Loop, varying: set[Value] | None = None) -> str | None:
    """Why TensorRT cannot build ``node`` inside ``loop`` (the values of ``loop`` that change between trips
    are ``varying``, computed when not given); None when it can."""
    if varying is None:
        varying = per_trip_values(loop)
    facts = traits(node.op)
    if facts.data_sized and any(v in varying for v in node.inputs if v is not None):
        source = next(v for v in node.inputs if v is not None and v in varying)
        return f"the size of its result follows {_what(source, loop)}, which changes between trips"
    for slot in facts.shape_operands:
        operand = node.input(slot) if slot < len(node.inputs) else None
        if operand is not None and operand in varying:
            return f"it takes its {_operand_name(node.op, slot)} from {_what(operand, loop)}, which changes between trips"
    return None


def illegal_carries(loop: Loop) -> Iterator[tuple[Value, str]]:
    """Each carried value of ``loop`` whose shape is known to change between trips, with why."""
    for rec in loop.recurrences:
        if shape_changes(rec.init, rec.next):
            yield rec.state, (f"carried value '{rec.state.name}' has shape {_shape(rec.init.shape)} when the loop "
                              f"starts and {_shape(rec.next.shape)} after a trip")
        elif (growth := _growth(rec)) is not None:
            yield rec.state, (f"carried value '{rec.state.name}' grows on every trip "
                              f"({growth.describe()} concatenates onto it)")


def grows(rec: Recurrence) -> bool:
    """The next value concatenates something onto the state, or onto a reordering of it that keeps its length
    on the concatenation axis (a beam search's ``cat([history[beams], token])``), through any chain of
    Concats (``cat([cat([acc, a]), b])``) and either branch of a conditional (a ``break`` that skips a step)."""
    return _growth(rec) is not None


def _growth(rec: Recurrence) -> Node | None:
    """The Concat that makes ``rec`` grow (see :func:`grows`), or None."""
    stack, seen = [rec.next], set()
    while stack:
        value = stack.pop()
        producer = value.producer
        if producer is None or value in seen:
            continue
        seen.add(value)
        if isinstance(producer, If):
            slot = producer.outputs.index(value)
            stack.extend(branch.outputs[slot] for branch in producer.subgraphs())
            continue
        extended = [producer.input(operand) for result, operand, _ in traits(producer.op).extends
                    if result < len(producer.outputs) and producer.outputs[result] is value
                    and operand < len(producer.inputs)]
        if any(v is rec.state for v in extended):
            return producer
        if producer.op != "Concat" or len(producer.inputs) < 2:
            continue
        restacked = _restacked(producer, rec.state)
        if restacked is not None:
            return restacked
        axis = int(attr(producer, "axis"))
        if any(v is rec.state or reordered(v, rec.state, axis) for v in producer.inputs):
            return producer
        stack.extend(v for v in producer.inputs if v is not None)
    return None


def _restacked(node: Node, state: Value) -> Node | None:
    """The Concat growing one layer of per-layer caches stacked in ``state`` that ``node`` stacks again
    (``torch.stack([torch.cat([past[i], new_i], s) for i ...])``: a Concat of Unsqueezes of Concats that read
    ``state`` at a layer, by a Gather, through a Slice of all of it when ``past[:, i]`` exports as one)."""
    for layer in node.inputs:
        unsqueeze = layer.producer if layer is not None else None
        if unsqueeze is None or unsqueeze.op != "Unsqueeze" or unsqueeze.inputs[0] is None:
            continue
        grow = unsqueeze.inputs[0].producer
        if grow is not None and grow.op == "Concat" and any(_layer_of(v, state) for v in grow.inputs):
            return grow
    return None


def _layer_of(value: Value | None, state: Value) -> bool:
    read = value.producer if value is not None else None
    if read is None or read.op != "Gather" or read.inputs[0] is None:
        return False
    source = read.inputs[0]
    whole = source.producer
    return source is state or (whole is not None and whole.op == "Slice" and whole.inputs[0] is state)


def reordered(value: Value | None, state: Value, axis: int) -> bool:
    """``value`` is ``state`` reordered along an axis other than ``axis`` (``history[beams]``): a Gather of it,
    which keeps its length on ``axis``."""
    node = value.producer if value is not None else None
    if node is None or node.op != "Gather" or node.inputs[0] is not state or state.shape is None:
        return False
    rank = len(state.shape)
    return int(attr(node, "axis")) % rank != axis % rank


def shape_changes(init: Value, nxt: Value) -> bool:
    """Known to change: ranks differ, or a dim is a different static size in each. A symbolic dim is no
    evidence: two names may be one size (a model exported and read again names its dims anew)."""
    if init.shape is None or nxt.shape is None:
        return False
    if len(init.shape) != len(nxt.shape):
        return True
    return any(isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(init.shape, nxt.shape))


def violations(graph: Graph) -> Iterator[tuple[Loop, Node | Value, str]]:
    """Every break of TensorRT's loop rule in ``graph`` and the graphs it nests: (loop, node or carried value,
    why), inner loops' own breaks included."""
    for _, node in graph.structured():
        if isinstance(node, Loop):
            yield from loop_violations(node)


def loop_violations(loop: Loop) -> Iterator[tuple[Loop, Node | Value, str]]:
    """The breaks of the rule inside ``loop`` itself (its body and the graphs the body nests)."""
    for state, why in illegal_carries(loop):
        yield loop, state, why
    candidates = list(loop.body.find(*_SHAPE_TAKING))
    varying = per_trip_values(loop) if candidates else set()
    for _, node in candidates:
        reason = illegal(node, loop, varying)
        if reason is not None:
            yield loop, node, reason


def _what(value: Value, loop: Loop) -> str:
    """Which of the loop's per-trip inputs ``value`` is computed from, in words."""
    inputs = set(loop.body.inputs)
    source = next((v for v in computed_from(value, nested=True) if v in inputs), None)
    if source is None:
        return f"'{value.name}'"
    return _role(source, loop) if source is value else f"'{value.name}' (computed from {_role(source, loop)})"


@functools.cache
def _operand_name(op: str, slot: int) -> str:
    """The formal name ONNX's schema gives operand ``slot`` of ``op`` ("starts", "sizes")."""
    try:
        return str(onnx.defs.get_schema(op).inputs[slot].name)
    except (onnx.defs.SchemaError, IndexError):
        return f"operand {slot}"


def _role(value: Value, loop: Loop) -> str:
    if value is loop.counter:
        return "the trip counter"
    if any(it.param is value for it in loop.iterators):
        return f"iterator slice '{value.name}'"
    return f"carried value '{value.name}'"


def _shape(shape: Shape | None) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]" if shape is not None else "unknown"


__all__ = ["grows", "illegal", "illegal_carries", "reordered", "shape_changes", "loop_violations", "per_trip_values", "violations"]

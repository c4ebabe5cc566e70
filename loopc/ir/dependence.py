"""Which of a graph's inputs a value depends on, and how: by their values, or only by their shapes.

A conditional TensorRT cannot take is one the build must decide; what can decide it depends on what its
condition reads. ``Shape(x)[-1] == 1`` reads only a shape, which a profile that pins that dim decides;
``sr == 16000`` reads an input's value, which only fixing that input decides. The walk follows operands
back to the graph's inputs, switching to "shape only" past ``Shape`` and ``Size`` (their result does not
depend on their operand's values), and back at an op whose result's size follows its operands' values
(NonZero, NonMaxSuppression: a detector's box count). Loop-body parameters stop the walk: they are no input of
the model.
"""

from __future__ import annotations

from collections.abc import Iterator

from loopc.ir.core import Graph, Node, Value
from loopc.ir.loop import reads
from loopc.ir.ops import traits


def computed_from(value: Value, within: Graph | None = None, through_shapes: bool = False,
                  nested: bool = False) -> Iterator[Value]:
    """``value`` and every value it is computed from, each once (by nodes of ``within`` only, when given); the
    walk stops at ``Shape``/``Size``, whose results are a tensor's dims, not its data (what TensorRT's shape
    calculations may read), unless ``through_shapes``. With ``nested``, a node with nested graphs (a conditional)
    is computed from everything they read too."""
    seen: set[Value] = set()
    stack = [value]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        yield current
        node = current.producer
        if node is not None and (within is None or node.graph is within) and (
                through_shapes or not traits(node.op).shape_only):
            stack.extend(reads(node) if nested else (v for v in node.inputs if v is not None))


def input_dependence(value: Value | None, graph: Graph) -> tuple[list[Value], list[Value]]:
    """The inputs of ``graph`` that ``value`` depends on by their values, and those it reads only the shape of."""
    if value is None:
        return [], []
    inputs = set(graph.inputs)
    by_value: dict[Value, None] = {}
    by_shape: dict[Value, None] = {}
    seen: set[tuple[Value, bool]] = set()
    stack = [(value, False)]
    while stack:
        current, shape_only = stack.pop()
        if (current, shape_only) in seen:
            continue
        seen.add((current, shape_only))
        if current in inputs:
            (by_shape if shape_only else by_value)[current] = None
            continue
        node = current.producer
        if node is None:
            continue
        # past Shape/Size only shapes matter, until an op whose result's size follows its operands' values
        facts = traits(node.op)
        below = (shape_only and not facts.data_sized) or facts.shape_only
        stack.extend((operand, below) for operand in node.inputs if operand is not None)
    return list(by_value), [v for v in by_shape if v not in by_value]


def steers(value: Value) -> bool:
    """Whether input ``value`` looks like one that only steers control flow (an integer or bool of at most one
    dimension: a sample rate, a mode), which a user can fix at build time; not data like an image."""
    return value.dtype is not None and value.dtype.kind in "iub" and value.shape is not None and len(value.shape) <= 1


def root(graph: Graph) -> Graph:
    """The model's main graph, which holds ``graph`` (at any depth)."""
    while (up := graph.parent()) is not None:
        graph = up
    return graph


def deciding_hint(node: Node) -> str:
    """What the user can give so that the build decides conditional ``node`` (empty when nothing can)."""
    from loopc.spelling import option

    if node.graph is None:
        return ""
    by_value, by_shape = input_dependence(node.inputs[0], root(node.graph))
    steering = [v for v in by_value if steers(v)]
    if steering:
        names = ", ".join(repr(v.name) for v in steering)
        return (f"its condition depends on the value of input {names}: fix it at build time with "
                f"{option('--fix-input')} {steering[0].name}=VALUE")
    if by_value:
        names = ", ".join(repr(v.name) for v in by_value)
        return f"its condition depends on the data of input {names}, which no build-time choice decides"
    if by_shape:
        names = ", ".join(repr(v.name) for v in by_shape)
        return (f"its condition depends on the shape of input {names}: pin those dims so the build decides it "
                f"({option('--shapes')}, or {option('--inputs')} with an example)")
    return ""

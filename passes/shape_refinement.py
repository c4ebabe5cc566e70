"""Fill in value shapes the frontend could not know, with ONNX's own shape functions, node by node.

ONNX's inference runs once on the source model, before loopc's passes fold constants, declare loop
bodies' carried ranks, or inline conditionals; inside loop bodies it often knows nothing. Asking it
again per node, with what the IR knows now (constant operands included), recovers what those
rewrites made knowable — TorchScript's ``If(Shape(x)[1] == 1, Squeeze(x), x)`` folds only when
the dim is known. Only unknown dims are filled; nothing known is ever replaced.

A Reshape or ConstantOfShape whose target is assembled from pieces, some known and some not
(``[Shape(x)[0], 1, 2, 8]`` in a branch ONNX's inference never saw), gets the dims its known pieces give:
ONNX's node-by-node function sees only a target that is all known.

A loop state whose dims ONNX's inference could not prove (its initial value was computed by ops inference did
not follow, or a pass gave it a new one) gets its initial value's dims when the body, refined on that
assumption, gives the next trip's value the same dims: an induction over the trips. The assumptions that fail
are dropped together and the rest tried again, so states that depend on each other settle at once.

The walk carries the small values that constant folding will compute (``Shape`` of a shape just
learned, the arithmetic on it) to the shape functions further down, so one run settles a chain where
shapes and shape arithmetic alternate: an FPN's ``Resize(x, sizes=Shape(y)[2:])`` level after level,
which otherwise learned one level per round of the pass pipeline and did not settle.
"""

from __future__ import annotations

import numpy as np

from loopc.ir import Graph, Loop, Node, Shape, Value, constant_value
from loopc.ir.core import filled
from loopc.ir.builder import MAX_DATA, fully_typed, refine
from loopc.ir.ops import traits
from loopc.passes.constant_folding import fold
from loopc.passes.manager import PassResult


class ShapeRefinement:
    name = "shape-refinement"

    def __call__(self, graph: Graph) -> PassResult:
        computed: dict[Value, np.ndarray] = {}
        refined = _refine_all(graph, computed)
        return PassResult(graph, refined > 0, {"values": refined} if refined else {})


def _refine_all(graph: Graph, computed: dict[Value, np.ndarray]) -> int:
    """Refine every node of ``graph`` and its nested graphs, outer before inner; how many values learned."""
    refined = 0
    for _, node in graph.walk():
        if isinstance(node, Loop):
            refined += _settle_states(node, computed)
        if not traits(node.op).foldable or node.subgraphs():
            continue
        if not all(fully_typed(v) for v in node.outputs):
            refined += refine(node, computed)
            if node.op in ("Reshape", "ConstantOfShape"):
                refined += _shape_from_pieces(node, computed)
        values = fold(node, computed, MAX_DATA)
        if values is not None:
            computed.update(zip(node.outputs, values))
    return refined


def _settle_states(loop: Loop, computed: dict[Value, np.ndarray]) -> int:
    """Give the loop's states their initial values' dims where the body then keeps them (module docstring);
    their "last" outputs learn them too. How many states learned dims."""
    assumed = {rec: shape for rec in loop.recurrences if (shape := _sharper(rec.state.shape, rec.init.shape))}
    while assumed:
        before = {value: value.shape for value in _values_in(loop.body)}
        for rec, shape in assumed.items():
            rec.state.shape = shape
        _refine_all(loop.body, dict(computed))
        broken = {rec for rec, shape in assumed.items() if not _keeps(before[rec.state], shape, rec.next.shape)}
        if not broken:
            for out in loop.loop_outputs:
                if out.kind == "last":
                    out.result.learn_shape(out.value.shape)
            return len(assumed)
        for value, shape in before.items():
            value.shape = shape
        assumed = {rec: shape for rec, shape in assumed.items() if rec not in broken}
    return 0


def _values_in(graph: Graph) -> list[Value]:
    """Every value of ``graph`` and its nested graphs: their inputs and their nodes' results."""
    values = list(graph.inputs)
    for _, node in graph.walk():
        values += node.outputs
        for sub in node.subgraphs():
            values += sub.inputs
    return values


def _sharper(state: Shape | None, init: Shape | None) -> Shape | None:
    """``state``'s dims with the unknown ones ``init`` knows filled, or None when that teaches nothing."""
    new = filled(state, init)
    return new if new is not None and new != (state if state is not None else (None,) * len(new)) else None


def _keeps(known: Shape | None, assumed: Shape, next_shape: Shape | None) -> bool:
    """Whether the next trip's value is known to have every dim assumed of the state that was not ``known``."""
    old = known if known is not None else (None,) * len(assumed)
    return next_shape is not None and len(next_shape) == len(assumed) and all(
        was is not None or dim == have for was, dim, have in zip(old, assumed, next_shape))


def _shape_from_pieces(node: Node, computed: dict[Value, np.ndarray]) -> int:
    """Fill the unknown dims of a Reshape's or ConstantOfShape's result that its target's known entries give
    (a positive entry is the dim; a Reshape's 0 copies the input's dim unless ``allowzero``); 1 if anything was
    learned."""
    out, target = node.outputs[0], node.inputs[-1]
    source = node.inputs[0] if node.op == "Reshape" else None
    entries = _vector_entries(target, computed) if target is not None else None
    if entries is None or (out.shape is not None and len(out.shape) != len(entries)):
        return 0
    copy_zero = node.op == "Reshape" and not int(node.attrs.get("allowzero", 0))
    old = out.shape if out.shape is not None else (None,) * len(entries)
    dims = []
    for k, (have, entry) in enumerate(zip(old, entries)):
        if isinstance(have, int) or entry is None or entry < 0:
            dims.append(have)
        elif entry == 0 and copy_zero:
            dims.append(source.shape[k] if source is not None and source.shape is not None and k < len(source.shape)
                        else have)
        else:
            dims.append(entry)
    if tuple(dims) == out.shape:
        return 0
    out.shape = tuple(dims)
    return 1


def _vector_entries(value: Value, computed: dict[Value, np.ndarray]) -> list[int | None] | None:
    """The entries of the 1-D integer vector ``value``, None where unknown: known when computed or constant,
    or a Concat of pieces of known lengths."""
    known = computed.get(value)
    known = constant_value(value) if known is None else known
    if known is not None:
        return [int(x) for x in np.asarray(known).reshape(-1)]
    node = value.producer
    if node is None or node.op != "Concat" or int(node.attrs.get("axis", 0)) not in (0, -1):
        return None
    entries: list[int | None] = []
    for piece in node.inputs:
        if piece is None:
            return None
        found = _vector_entries(piece, computed)
        if found is None:
            if piece.shape is None or len(piece.shape) != 1 or not isinstance(piece.shape[0], int):
                return None
            found = [None] * piece.shape[0]
        entries += found
    return entries

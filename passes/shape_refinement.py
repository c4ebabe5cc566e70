"""Fill in value shapes the frontend could not know, with ONNX's own shape functions, node by node.

ONNX's inference runs once on the source model, before loopc's passes fold constants, declare loop
bodies' carried ranks, or inline conditionals; inside loop bodies it often knows nothing. Asking it
again per node, with what the IR knows now (constant operands included), recovers what those
rewrites made knowable — TorchScript's ``If(Shape(x)[1] == 1, Squeeze(x), x)`` folds only when
the dim is known. Only unknown dims are filled; nothing known is ever replaced.

A Reshape or ConstantOfShape whose target is assembled from pieces, some known and some not
(``[Shape(x)[0], 1, 2, 8]`` in a branch ONNX's inference never saw), gets the dims its known pieces give:
ONNX's node-by-node function sees only a target that is all known. A piece is read entry by entry, down to the
dims a ``Shape`` reports (``Unsqueeze(Gather(Shape(x), 1))`` is ``x``'s dim 1 when that is static, though the
others are not). So is a Range from ``s`` to ``s + k``: its length follows from ``k`` whatever ``s`` is.

A loop state whose dims ONNX's inference could not prove (its initial value was computed by ops inference did
not follow, or a pass gave it a new one) gets its initial value's dims when the body, refined on that
assumption, gives the next trip's value the same dims: an induction over the trips. Each dim is assumed on its
own (a cache that grows along one axis keeps its batch dim); the dims that fail are dropped together and the
rest tried again, so states that depend on each other settle at once. TorchScript's ``x.squeeze(1)`` on a
state is an If on ``Shape(x)[1] == 1`` that this decides, once the state's dim 1 is known in every trip.

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
from loopc.passes._why import declined
from loopc.passes.constant_folding import fold
from loopc.passes.fixed_ranges import _span
from loopc.passes.manager import PassResult
from loopc.semantics.attributes import attr


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
        if traits(node.op).foldable and not node.subgraphs():
            refined += refine_node(node, computed)
    return refined


def refine_node(node: Node, computed: dict[Value, np.ndarray]) -> int:
    """Fill the unknown dims of one plain node's results (ONNX's shape function, then a shape target's known
    pieces) and add its results to ``computed`` when they are small and computable; how many values learned.
    A rewrite that learns a dim partway through a body refines the readers below it with this."""
    refined = 0
    if not all(fully_typed(v) for v in node.outputs):
        refined += refine(node, computed)
        if node.op in ("Reshape", "ConstantOfShape"):
            refined += _shape_from_pieces(node, computed)
        elif node.op == "Range":
            refined += _range_length(node, computed)
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
        kept = {rec: _kept(before[rec.state], shape, rec.next.shape) for rec, shape in assumed.items()}
        if all(kept[rec] == shape for rec, shape in assumed.items()):
            for out in loop.loop_outputs:
                if out.kind == "last":
                    out.result.learn_shape(out.value.shape)
            return len(assumed)
        for value, shape in before.items():
            value.shape = shape
        for rec, shape in assumed.items():
            if kept[rec] != shape:
                declined(f"the state {rec.state.name!r} is not known to keep the dims of its initial value "
                         f"{rec.init.name!r} (assumed {_shown(shape)}): {rec.next.name!r} may have others", at=loop)
        assumed = {rec: shape for rec, shape in kept.items() if shape is not None}
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


def _kept(known: Shape | None, assumed: Shape, next_shape: Shape | None) -> Shape | None:
    """``assumed`` without the dims (assumed of the state, not ``known`` before) that the next trip's value is
    not known to have; None when no assumed dim is left. A dim assumed alone stands or falls alone: a state
    whose length along one axis grows can keep its batch dim, which others' dims may follow from."""
    old = known if known is not None else (None,) * len(assumed)
    if next_shape is None or len(next_shape) != len(assumed):
        return None
    dims = tuple(dim if was is not None or dim == have else was for was, dim, have in zip(old, assumed, next_shape))
    return dims if dims != old else None


def _shown(shape: Shape) -> str:
    """``shape`` as the IR text writes it."""
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _shape_from_pieces(node: Node, computed: dict[Value, np.ndarray]) -> int:
    """Fill the unknown dims of a Reshape's or ConstantOfShape's result that its target's known entries give
    (a positive entry is the dim; a Reshape's 0 copies the input's dim unless ``allowzero``); 1 if anything was
    learned."""
    out, target = node.outputs[0], node.inputs[-1]
    source = node.inputs[0] if node.op == "Reshape" else None
    entries = _vector_entries(target, computed) if target is not None else None
    if target is None or entries is None or entries.count(None) == len(entries):
        return 0  # a target computed at run time: nothing to learn
    if out.shape is not None and len(out.shape) != len(entries):
        return declined(f"its target {target.name!r} has {len(entries)} entries, its result "
                        f"{out.name!r} rank {len(out.shape)}", at=node) or 0
    copy_zero = node.op == "Reshape" and not int(attr(node, "allowzero"))
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


def _range_length(node: Node, computed: dict[Value, np.ndarray]) -> int:
    """The length of an integer Range from ``s`` to ``s + k`` by ``d``, ``k`` and ``d`` known though ``s`` is not:
    ``max(ceil(k / d), 0)`` (an attention mask's ``arange(past, past + q.size(2))``, ``q``'s length a known dim);
    1 if it was learned. A float Range's count is rounded arithmetic on its bounds: left alone."""
    out, span, delta = node.outputs[0], _span(node), node.inputs[2]
    if out.dtype is None or out.dtype.kind not in "iu" or span is None or delta is None \
            or (out.shape is not None and (len(out.shape) != 1 or isinstance(out.shape[0], int))):
        return 0
    k, d = _vector_entries(span, computed), _vector_entries(delta, computed)
    if k is None or d is None or len(k) != 1 or len(d) != 1 or k[0] is None or not d[0]:
        return 0
    out.shape = (max(-(-k[0] // d[0]), 0),)
    return 1


def _vector_entries(value: Value, computed: dict[Value, np.ndarray]) -> list[int | None] | None:
    """The entries of the small integer scalar or 1-D vector ``value``, None where unknown: known when computed
    or constant, or read entry by entry from the dims a ``Shape`` reports, through what moves entries without
    changing them (the exporters' ``Concat(Unsqueeze(Gather(Shape(x), k)), c)``: reshapes, Casts between
    integers, Gathers and Concats). A piece of known length but unknown entries is that many unknowns."""
    if value.shape is not None and len(value.shape) > 1:
        return None  # a matrix's rows are not entries
    known = computed.get(value)
    known = constant_value(value) if known is None else known
    if known is not None:
        array = np.asarray(known)
        return [int(x) for x in array.reshape(-1)] if array.ndim <= 1 and array.dtype.kind in "iu" else None
    node = value.producer
    found = _entries_through(node, computed) if node is not None else None
    if found is None and value.shape is not None and len(value.shape) == 1 and isinstance(value.shape[0], int):
        return [None] * value.shape[0]
    return found


def _entries_through(node: Node, computed: dict[Value, np.ndarray]) -> list[int | None] | None:
    """``_vector_entries`` of ``node``'s result, read from its operands."""
    source = node.inputs[0] if node.inputs else None
    if source is None:
        return None
    if node.op == "Shape" and source.shape is not None:  # ONNX clamps start and end as a Python slice does
        end = node.attrs.get("end")
        return [d if isinstance(d, int) else None
                for d in source.shape[int(attr(node, "start")):None if end is None else int(end)]]
    if traits(node.op).reshapes or (node.op == "Cast" and node.outputs[0].dtype is not None
                                    and node.outputs[0].dtype.kind in "iu"):
        return _vector_entries(source, computed)  # the same entries in the same order
    if node.op == "Gather" and int(attr(node, "axis")) == 0 and node.inputs[1] is not None:
        entries, picks = _vector_entries(source, computed), _vector_entries(node.inputs[1], computed)
        if entries is None or picks is None or any(p is None or not -len(entries) <= p < len(entries) for p in picks):
            return None
        return [entries[p] for p in picks if p is not None]
    if node.op == "Concat" and int(attr(node, "axis")) in (0, -1):
        parts = [_vector_entries(piece, computed) if piece is not None else None for piece in node.inputs]
        return None if any(p is None for p in parts) else [e for p in parts if p is not None for e in p]
    return None

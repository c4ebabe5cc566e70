"""Fill in value shapes the frontend could not know, with ONNX's own shape functions, node by node.

ONNX's inference runs once on the source model, before loopc's passes fold constants, declare loop
bodies' carried ranks, or inline conditionals; inside loop bodies it often knows nothing. Asking it
again per node, with what the IR knows now (constant operands included), recovers what those
rewrites made knowable — TorchScript's ``If(Shape(x)[1] == 1, Squeeze(x), x)`` folds only when
the dim is known. Only unknown dims are filled; nothing known is ever replaced.

A Reshape whose target is assembled from pieces, some known and some not (``[Shape(x)[0], 1, 2, 8]`` in a
branch ONNX's inference never saw), gets the dims its known pieces give: ONNX's node-by-node function
sees only a target that is all known.

The walk carries the small values that constant folding will compute (``Shape`` of a shape just
learned, the arithmetic on it) to the shape functions further down, so one run settles a chain where
shapes and shape arithmetic alternate: an FPN's ``Resize(x, sizes=Shape(y)[2:])`` level after level,
which otherwise learned one level per round of the pass pipeline and did not settle.
"""

from __future__ import annotations

import numpy as np

from loopc.ir import Graph, Node, Value, constant_value
from loopc.ir.builder import MAX_DATA, fully_typed, refine
from loopc.ir.ops import traits
from loopc.passes.constant_folding import fold
from loopc.passes.manager import PassResult


class ShapeRefinement:
    name = "shape-refinement"

    def __call__(self, graph: Graph) -> PassResult:
        refined = 0
        computed: dict[Value, np.ndarray] = {}
        for _, node in graph.walk():
            if not traits(node.op).foldable or node.subgraphs():
                continue
            if not all(fully_typed(v) for v in node.outputs):
                refined += refine(node, computed)
                if node.op == "Reshape":
                    refined += _reshape_from_pieces(node, computed)
            values = fold(node, computed, MAX_DATA)
            if values is not None:
                computed.update(zip(node.outputs, values))
        return PassResult(graph, refined > 0, {"values": refined} if refined else {})


def _reshape_from_pieces(node: Node, computed: dict[Value, np.ndarray]) -> int:
    """Fill the unknown dims of a Reshape's result that its target's known entries give (a positive entry
    is the dim; a 0 copies the input's dim unless ``allowzero``); 1 if anything was learned."""
    out, source, target = node.outputs[0], node.inputs[0], node.inputs[1]
    entries = _vector_entries(target, computed) if target is not None else None
    if entries is None or source is None or (out.shape is not None and len(out.shape) != len(entries)):
        return 0
    copy_zero = not int(node.attrs.get("allowzero", 0))
    old = out.shape if out.shape is not None else (None,) * len(entries)
    dims = []
    for k, (have, entry) in enumerate(zip(old, entries)):
        if isinstance(have, int) or entry is None or entry < 0:
            dims.append(have)
        elif entry == 0 and copy_zero:
            dims.append(source.shape[k] if source.shape is not None and k < len(source.shape) else have)
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

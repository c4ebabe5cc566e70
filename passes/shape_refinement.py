"""Fill in value shapes the frontend could not know, with ONNX's own shape functions, node by node.

ONNX's inference runs once on the source model, before loopc's passes fold constants, declare loop
bodies' carried ranks, or inline conditionals; inside loop bodies it often knows nothing. Asking it
again per node, with what the IR knows now (constant operands included), recovers what those
rewrites made knowable — TorchScript's ``If(Shape(x)[1] == 1, Squeeze(x), x)`` folds only when
the dim is known. Only unknown dims are filled; nothing known is ever replaced.

The walk carries the small values that constant folding will compute (``Shape`` of a shape just
learned, the arithmetic on it) to the shape functions further down, so one run settles a chain where
shapes and shape arithmetic alternate: an FPN's ``Resize(x, sizes=Shape(y)[2:])`` level after level,
which otherwise learned one level per round of the pass pipeline and did not settle.
"""

from __future__ import annotations

import numpy as np

from loopc.ir import Graph, Value
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
            values = fold(node, computed, MAX_DATA)
            if values is not None:
                computed.update(zip(node.outputs, values))
        return PassResult(graph, refined > 0, {"values": refined} if refined else {})

"""A conditional whose condition is a constant is the branch it takes, inlined.

TorchScript exports ``x.squeeze(1)`` as ``If(Shape(x)[1] == 1, Squeeze(x), x)``: its branches
have different ranks, which a TensorRT IIfConditional cannot merge. Once constant folding knows
the dim, the condition is a constant and only one branch can ever run. A branch reads outer values
directly, so inlining moves its nodes to where the conditional stood and reads its results instead.
"""

from __future__ import annotations

import numpy as np

from loopc.ir import Graph, If
from loopc.passes._util import constant_value, replace_uses
from loopc.passes.manager import PassResult


class StaticConditionals:
    name = "static-conditionals"

    def __call__(self, graph: Graph) -> PassResult:
        inlined = 0
        while self._inline_one(graph):
            inlined += 1
        return PassResult(graph, inlined > 0, {"conditionals": inlined} if inlined else {})

    def _inline_one(self, graph: Graph) -> bool:
        for outer, node in graph.walk():
            condition = constant_value(node.inputs[0]) if isinstance(node, If) else None
            if condition is None or np.asarray(condition).size != 1:
                continue
            assert isinstance(node, If)
            branch = node.then_branch if bool(np.asarray(condition).reshape(-1)[0]) else node.else_branch
            at = outer.nodes.index(node)
            outer.nodes[at:at + 1] = branch.nodes
            for result, value in zip(node.outputs, branch.outputs):
                replace_uses(graph, result, value)
            return True
        return False

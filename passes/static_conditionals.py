"""Conditionals that need no branching: inlined.

- A constant condition: TorchScript exports ``x.squeeze(1)`` as ``If(Shape(x)[1] == 1, Squeeze(x), x)``,
  whose branches have different ranks, which a TensorRT IIfConditional cannot merge. Once constant
  folding knows the dim, only one branch can ever run. A branch reads outer values directly, so
  inlining moves its nodes to where the conditional stood and reads its results instead.
- A short-circuit ``and``: TorchScript writes ``while step < n and token != end`` as
  ``If(step < n, token != end, False)``. That is ``And(step < n, token != end)`` with the branch's
  nodes run unconditionally — legal, as IR nodes have no side effects and a value computed but
  not chosen is never read. As an ``And`` the counter test becomes visible to counted-loops.
"""

from __future__ import annotations

import numpy as np

from loopc.ir import Graph, If, Node, Value
from loopc.ir import constant_value
from loopc.passes.manager import PassResult


class StaticConditionals:
    name = "static-conditionals"

    def __call__(self, graph: Graph) -> PassResult:
        inlined = 0
        while self._inline_one(graph):
            inlined += 1
        return PassResult(graph, inlined > 0, {"conditionals": inlined} if inlined else {})

    def _inline_one(self, graph: Graph) -> bool:
        for outer, node in graph.structured():
            if not isinstance(node, If):
                continue
            condition = constant_value(node.inputs[0])
            if condition is not None and np.asarray(condition).size == 1:
                taken = node.then_branch if bool(np.asarray(condition).reshape(-1)[0]) else node.else_branch
                _inline(graph, outer, node, taken, list(taken.outputs))
                return True
            if _short_circuit_and(node):
                both = Value(f"{node.outputs[0].name}_and", node.outputs[0].dtype, node.outputs[0].shape)
                node.then_branch.add(Node("And", [node.inputs[0], node.then_branch.outputs[0]], [both],
                                          origin=node.origin))
                _inline(graph, outer, node, node.then_branch, [both])
                return True
        return False


def _inline(graph: Graph, outer: Graph, node: If, branch: Graph, results: list[Value]) -> None:
    outer.insert_before(node, list(branch.nodes))
    for result, value in zip(node.outputs, results):
        result.replace_all_uses_with(value)
    outer.remove(node)


def _short_circuit_and(node: If) -> bool:
    """``If(a, b, False)`` with one bool output and a then-branch of plain nodes."""
    if len(node.outputs) != 1 or node.outputs[0].dtype != np.dtype(np.bool_) or node.inputs[0] is None:
        return False
    if node.inputs[0].shape not in ((), (1,)) or any(n.subgraphs() for n in node.then_branch.nodes):
        return False
    otherwise = constant_value(node.else_branch.outputs[0])
    return otherwise is not None and np.asarray(otherwise).size == 1 and not bool(np.asarray(otherwise).reshape(-1)[0])

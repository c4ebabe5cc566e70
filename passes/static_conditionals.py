"""Conditionals that need no branching: inlined.

- A constant condition: TorchScript exports ``x.squeeze(1)`` as ``If(Shape(x)[1] == 1, Squeeze(x), x)``,
  whose branches have different ranks, which a TensorRT IIfConditional cannot merge. Once constant
  folding knows the dim, only one branch can ever run. A branch reads outer values directly, so
  inlining moves its nodes to where the conditional stood and reads its results instead.
- A short-circuit ``and``: TorchScript writes ``while step < n and token != end`` as
  ``If(step < n, token != end, False)``. That is ``And(step < n, token != end)`` with the branch's
  nodes run unconditionally — legal, as IR nodes have no side effects and a value computed but
  not chosen is never read. As an ``And`` the counter test becomes visible to counted-loops.
- An empty guard: torchvision's ``batched_nms`` is ``If(boxes.numel() == 0, <empty>, nms(...))``.
  The branch whose results are all empty constants is the other branch's results cut to length 0
  when it is taken: ``Slice(r, 0, c ? 0 : len(r))`` along the empty axis, the other branch's nodes
  run unconditionally (legal for the same reason; on the empty inputs the guard exists for, they give
  results the cut drops). A TensorRT conditional cannot hold the NonZero-
  and NMS-sized tensors such a branch computes; outside one they build.
"""

from __future__ import annotations

import numpy as np

from loopc.ir import Graph, If, Node, Value
from loopc.ir import constant_value
from loopc.ir.builder import Builder
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
                result = node.outputs[0]
                both = Builder(node.then_branch, origin=node.origin).op(
                    "And", [node.inputs[0], node.then_branch.outputs[0]], name=f"{result.name}_and",
                    dtype=result.dtype, shape=result.shape)
                _inline(graph, outer, node, node.then_branch, [both])
                return True
            guarded = _empty_guard(node)
            if guarded is not None:
                branch, axes = guarded
                cuts: list[Node] = []
                b = Builder(outer, cuts, origin=node.origin)
                results = [_cut(b, node, value, axis, empty_when=branch is node.else_branch)
                           for value, axis in zip(branch.outputs, axes)]
                outer.insert_before(node, list(branch.nodes) + cuts)
                for result, value in zip(node.outputs, results):
                    result.replace_all_uses_with(value)
                outer.remove(node)
                return True
        return False


def _inline(graph: Graph, outer: Graph, node: If, branch: Graph, results: list[Value]) -> None:
    outer.insert_before(node, list(branch.nodes))
    for result, value in zip(node.outputs, results):
        result.replace_all_uses_with(value)
    outer.remove(node)


def _empty_guard(node: If) -> tuple[Graph, list[int]] | None:
    """The branch to run and, per result, the axis to cut, when the other branch's results are all empty
    constants of the running branch's dtypes, ranks and other (static) dims, and the running branch holds
    no loops or conditionals (it runs whichever way the condition goes)."""
    condition = node.inputs[0]
    if condition is None or condition.shape not in ((), (1,)):
        return None
    for empty, branch in ((node.then_branch, node.else_branch), (node.else_branch, node.then_branch)):
        if any(n.subgraphs() for n in branch.nodes):
            continue
        axes = [_empty_axis(constant_value(e), r) for e, r in zip(empty.outputs, branch.outputs)]
        if all(a is not None for a in axes):
            return branch, [a for a in axes if a is not None]
    return None


def _empty_axis(empty: np.ndarray | None, result: Value) -> int | None:
    """The first axis along which ``empty`` is empty, when cutting ``result`` there to length 0 gives it."""
    if empty is None or empty.size != 0 or result.dtype != empty.dtype or result.shape is None:
        return None
    if len(result.shape) != empty.ndim:
        return None
    axis = list(empty.shape).index(0)
    if any(k != axis and d != e for k, (d, e) in enumerate(zip(result.shape, empty.shape))):
        return None
    return axis


def _cut(b: Builder, node: If, value: Value, axis: int, empty_when: bool) -> Value:
    """``value`` cut to length 0 along ``axis`` when ``node``'s condition is ``empty_when``, else whole."""
    name = f"{node.name}_{value.name}"
    cond = node.inputs[0]
    assert cond is not None
    flag = b.op("Reshape", [cond, b.const(np.array([1], np.int64), name=f"{name}_one")], name=f"{name}_flag",
                dtype=np.dtype(np.bool_), shape=(1,))  # typed even where the condition is not
    shape = b.op("Shape", [value], name=f"{name}_shape")
    length = b.op("Gather", [shape, b.const(np.array([axis], np.int64), name=f"{name}_at")], {"axis": 0},
                  name=f"{name}_length")
    none = b.const(np.array([0], np.int64), name=f"{name}_none")
    end = b.op("Where", [flag, none, length] if empty_when else [flag, length, none], name=f"{name}_end")
    start = b.const(np.array([0], np.int64), name=f"{name}_start")
    return b.op("Slice", [value, start, end, b.const(np.array([axis], np.int64), name=f"{name}_axis")],
                name=f"{name}_cut", dtype=value.dtype,
                shape=tuple(None if k == axis else d for k, d in enumerate(value.shape or ())))


def _short_circuit_and(node: If) -> bool:
    """``If(a, b, False)`` with one bool output and a then-branch of plain nodes."""
    if len(node.outputs) != 1 or node.outputs[0].dtype != np.dtype(np.bool_) or node.inputs[0] is None:
        return False
    if node.inputs[0].shape not in ((), (1,)) or any(n.subgraphs() for n in node.then_branch.nodes):
        return False
    otherwise = constant_value(node.else_branch.outputs[0])
    return otherwise is not None and np.asarray(otherwise).size == 1 and not bool(np.asarray(otherwise).reshape(-1)[0])

"""Conditionals that need no branching: inlined.

- A constant condition: TorchScript exports ``x.squeeze(1)`` as ``If(Shape(x)[1] == 1, Squeeze(x), x)``,
  whose branches have different ranks, which a TensorRT IIfConditional cannot merge. Once constant
  folding knows the dim, only one branch can ever run. A branch reads outer values directly, so
  inlining moves its nodes to where the conditional stood and reads its results instead.
- A short-circuit ``and``: TorchScript writes ``while step < n and token != end`` as
  ``If(step < n, token != end, False)``. That is ``And(step < n, token != end)`` with the branch's
  nodes run unconditionally — legal, as IR nodes have no side effects and a value computed but
  not chosen is never read. As an ``And`` the counter test becomes visible to counted-loops. The same
  for ``or`` (``If(a, True, b)``: ``if gate or idx >= maxlen: break``), for a constant flag in the other
  branch (``not a and b``, ``not a or b``), and for flags both constant (``If(a, False, True)`` is ``not a``).
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
from loopc.passes._why import declined
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
            logic = _short_circuit(node)
            if logic is not None:
                branch, flag = logic
                _inline(graph, outer, node, branch, [flag])
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
    for empty, branch in ((node.then_branch, node.else_branch), (node.else_branch, node.then_branch)):
        arrays = [constant_value(e) for e in empty.outputs]
        if not all(a is not None and a.size == 0 for a in arrays):
            continue  # not a guard that gives empty results this way round
        if condition is None or condition.shape not in ((), (1,)):
            return declined("one branch gives empty results, but the condition is not known to be one flag",
                            at=node)
        if any(n.subgraphs() for n in branch.nodes):
            declined(f"the branch {empty.name!r} gives empty results, but {branch.name!r} holds a loop or a conditional, "
                     "which cannot run unconditionally", at=node)
            continue
        axes = [_empty_axis(a, r) for a, r in zip(arrays, branch.outputs)]
        if all(a is not None for a in axes):
            return branch, [a for a in axes if a is not None]
        declined(f"the branch {empty.name!r} gives empty results, but not of the types and other dims of "
                 f"what {branch.name!r} gives", at=node)
    return None


def _empty_axis(empty: np.ndarray | None, result: Value) -> int | None:
    """The first axis along which ``empty`` is empty, when cutting ``result`` there to length 0 gives it."""
    if empty is None or empty.size != 0 or result.dtype != empty.dtype or result.shape is None \
            or len(result.shape) != empty.ndim:
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


def _short_circuit(node: If) -> tuple[Graph, Value] | None:
    """An If with one bool result that one branch gives as a constant flag, as logic on its condition ``a``
    (``b`` what the other branch gives): ``If(a, b, False)`` is ``a and b``, ``If(a, True, b)`` is ``a or b``,
    ``If(a, False, b)`` is ``not a and b``, ``If(a, b, True)`` is ``not a or b``; two constant branches give
    ``a``, ``not a`` or a constant. The branch whose nodes to inline and the flag made at its end, or None."""
    if len(node.outputs) != 1 or node.outputs[0].dtype != np.dtype(np.bool_) or node.inputs[0] is None:
        return None  # not one flag
    held = [_flag(branch.outputs[0]) for branch in (node.then_branch, node.else_branch)]
    if held == [None, None]:
        return None  # not logic
    if node.inputs[0].shape not in ((), (1,)):
        return declined("a branch gives a constant flag, but the condition is not known to be one flag", at=node)
    k = 1 if held[1] is not None and (held[0] is None or held[1] is False) else 0  # the constant branch
    other = node.subgraphs()[1 - k]
    if held[1 - k] is None and any(n.subgraphs() for n in other.nodes):
        return declined(f"it is `a and b` or `a or b`, but `b` ({other.name!r}) holds a loop or a conditional, "
                        "which cannot run unconditionally", at=node)
    result, condition = node.outputs[0], node.inputs[0]
    b = Builder(other, origin=node.origin)
    if k == 0 and held[0] is False or k == 1 and held[1] is True:
        condition = _negated(b, condition, f"{result.name}_not")
    if held[1 - k] is not None:  # both constant: the (negated) condition, or the constant when they agree
        if held[0] == held[1]:
            return other, other.outputs[0]
        if condition.shape != result.shape:
            return declined("its branches give `not a` or `a`, but `a` is not of the result's shape", at=node)
        return other, condition
    op = "Or" if held[k] else "And"
    return other, b.op(op, [condition, other.outputs[0]], name=f"{result.name}_{op.lower()}", dtype=result.dtype,
                       shape=result.shape)


def _negated(b: Builder, flag: Value, name: str) -> Value:
    """``not flag``, pushed through the ``and``/``or`` that made it (De Morgan) and cancelling a ``not``: a loop's
    ``not (gate or idx >= maxlen)`` becomes ``not gate and not idx >= maxlen``, whose counter test counted-loops
    reads as a conjunct."""
    node = flag.producer
    if node is not None and node.op in ("Cast", "Identity") and node.inputs[0] is not None \
            and node.inputs[0].dtype == flag.dtype and node.inputs[0].shape == flag.shape:
        return _negated(b, node.inputs[0], name)  # a bool cast to bool is the flag itself
    if node is not None and node.op == "Not" and node.inputs[0] is not None and node.inputs[0].shape == flag.shape:
        return node.inputs[0]
    if node is not None and node.op in ("And", "Or") and len(node.inputs) == 2 \
            and all(v is not None for v in node.inputs):
        parts = [_negated(b, v, f"{name}{k}") for k, v in enumerate(node.inputs) if v is not None]
        return b.op("Or" if node.op == "And" else "And", parts, name=name, dtype=flag.dtype, shape=flag.shape)
    return b.op("Not", [flag], name=name, dtype=flag.dtype, shape=flag.shape)


def _flag(value: Value) -> bool | None:
    """The constant one-element bool ``value`` holds, or None."""
    held = constant_value(value)
    return None if held is None or np.asarray(held).size != 1 else bool(np.asarray(held).reshape(-1)[0])

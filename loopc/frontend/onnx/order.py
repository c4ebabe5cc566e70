"""Nodes in the order their values are made, as ONNX requires and some writers do not keep.

ONNX lists a graph's nodes so that each comes after whatever produces the values it reads, the values a loop
or branch body reads from the graphs around it included. onnxruntime sorts nodes itself and runs models that
break the rule; its own quantizer (``quantize_static``) writes one: a Loop listed before the node that makes a
value its body reads. So loopc puts each graph's nodes in that order before reading the model, moving only what
must move (Kahn's algorithm, taking the earliest listed node that is ready), and leaves a model that already
keeps the rule untouched. A graph whose nodes depend on each other in a cycle is left as it is: the validator
then names the first value read before it is made.
"""

from __future__ import annotations

import heapq

import onnx

from loopc.onnx_graphs import subgraphs


def in_dependence_order(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with the nodes of every graph in dependence order: ``model`` itself when they are, else a copy
    (a model the caller gave stays as given)."""
    if not any(_order(graph) for graph in [model.graph, *subgraphs(model.graph)]):
        return model
    ordered = onnx.ModelProto()
    ordered.CopyFrom(model)
    for graph in reversed([ordered.graph, *subgraphs(ordered.graph)]):  # inner first: a reorder copies the nodes
        order = _order(graph)
        if order:
            nodes = list(graph.node)
            del graph.node[:]
            graph.node.extend(nodes[k] for k in order)
    return ordered


def _order(graph: onnx.GraphProto) -> list[int] | None:
    """The positions of ``graph``'s nodes in dependence order; None when they are in it already, or depend on each
    other in a cycle."""
    nodes = list(graph.node)
    made = {name: k for k, node in enumerate(nodes) for name in node.output if name}
    reads = [_reads(node) for node in nodes]
    if all(made.get(name, k) <= k for k, names in enumerate(reads) for name in names):
        return None  # each value is made before (or by) the node that reads it: the usual case, checked in one pass
    needs = [sorted({made[name] for name in names if made.get(name, k) != k}) for k, names in enumerate(reads)]
    waiting = [len(needed) for needed in needs]
    readers: list[list[int]] = [[] for _ in nodes]
    for k, needed in enumerate(needs):
        for need in needed:
            readers[need].append(k)
    ready = [k for k, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        k = heapq.heappop(ready)
        order.append(k)
        for reader in readers[k]:
            waiting[reader] -= 1
            if waiting[reader] == 0:
                heapq.heappush(ready, reader)
    return order if len(order) == len(nodes) else None  # a cycle: the validator names it, in the model's order


def _reads(node: onnx.NodeProto) -> set[str]:
    """The names ``node`` reads: its inputs, and the outer values its bodies read (at any depth)."""
    names = {name for name in node.input if name}
    for attr in node.attribute:
        for body in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs:
            names |= _free(body)
    return names


def _free(graph: onnx.GraphProto) -> set[str]:
    """The names ``graph`` reads that it does not define itself (values of the graphs around it)."""
    defined = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    defined |= {name for node in graph.node for name in node.output}
    read = {name for node in graph.node for name in _reads(node)} | {v.name for v in graph.output}
    return read - defined


__all__ = ["in_dependence_order"]

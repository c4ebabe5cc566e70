"""A NumPy interpreter of loopc's IR for tests: the Loop docstring's reference semantics, with plain
nodes run by ONNX's reference evaluator (nodes keep newest-opset ONNX forms, so it applies as is).

It lets frontend tests compare a translated model with the ONNX test's expected outputs before a
backend exists; it is deliberately naive (one evaluator per node, cached) and only for small tests.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from loopc.ir import Graph, If, Loop, Node

Env = dict[int, Any]
_evaluators: dict[Node, ReferenceEvaluator] = {}  # keyed by the node itself, so ids are never reused


def run(graph: Graph, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    env: Env = {id(v): feeds[v.name] for v in graph.inputs}
    _run_nodes(graph, env)
    return [env[id(v)] for v in graph.outputs]


def _run_nodes(graph: Graph, env: Env) -> None:
    for node in graph.nodes:
        if isinstance(node, Loop):
            _loop(node, env)
        elif isinstance(node, If):
            branch = node.then_branch if bool(np.asarray(env[id(node.inputs[0])]).reshape(-1)[0]) else node.else_branch
            inner = dict(env)
            _run_nodes(branch, inner)
            for out, value in zip(node.outputs, branch.outputs):
                env[id(out)] = inner[id(value)]
        else:
            _plain(node, env)


def _plain(node: Node, env: Env) -> None:
    names = [f"i{k}" if v is not None else "" for k, v in enumerate(node.inputs)]
    if node not in _evaluators:
        attrs = {k: numpy_helper.from_array(np.asarray(v)) if isinstance(v, np.ndarray) else v
                 for k, v in node.attrs.items()}
        proto = helper.make_node(node.op, names, [f"o{k}" for k in range(len(node.outputs))], **attrs)
        _evaluators[node] = ReferenceEvaluator(proto)
    feeds = {n: env[id(v)] for n, v in zip(names, node.inputs) if v is not None}
    for out, value in zip(node.outputs, _evaluators[node].run(None, feeds)):
        env[id(out)] = value


def _loop(loop: Loop, env: Env) -> None:
    states = [env[id(r.init)] for r in loop.recurrences]
    trips = int(np.asarray(env[id(loop.trip_count)]).reshape(-1)[0]) if loop.trip_count is not None else None
    stacked: dict[int, list[Any]] = {id(o.value): [] for o in loop.loop_outputs if o.kind != "last"}
    i = 0
    while trips is None or i < trips:
        local = dict(env)
        if loop.counter is not None:
            local[id(loop.counter)] = np.array(i, dtype=np.int64)
        for it in loop.iterators:
            source = env[id(it.source)]
            index = source.shape[it.axis] - 1 - i if it.reverse else i
            local[id(it.param)] = np.take(source, index, axis=it.axis)
        for rec, state in zip(loop.recurrences, states):
            local[id(rec.state)] = state
        if loop.condition is not None and not bool(np.asarray(local[id(loop.condition)]).reshape(-1)[0]):
            break
        _run_nodes(loop.body, local)
        for key in stacked:
            stacked[key].append(local[key])
        states = [local[id(r.next)] for r in loop.recurrences]
        i += 1
    finals = {id(r.state): s for r, s in zip(loop.recurrences, states)}
    for out in loop.loop_outputs:
        if out.kind == "last":
            env[id(out.result)] = finals[id(out.value)]
        else:
            values = stacked[id(out.value)][::-1] if out.kind == "reverse" else stacked[id(out.value)]
            env[id(out.result)] = np.stack(values, axis=out.axis)


__all__ = ["run"]

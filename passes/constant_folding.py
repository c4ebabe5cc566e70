"""Fold nodes whose inputs are all constants, with ONNX's own reference implementation of the op.

Exporters compute many "attribute" inputs (Slice axes, Unsqueeze axes, reshape targets) from
constants through small chains of nodes. Folding them gives the backend the static operands
TensorRT wants, and the values come from onnx's reference evaluator, not from code of ours.
``Shape`` of a value whose shape is fully static folds too.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from loopc.ir import Graph, Node, Value
from loopc.passes._util import constant_value, replace_uses
from loopc.passes.manager import PassResult

#: Folding never materializes more than this many elements.
MAX_ELEMENTS = 1 << 20
NEVER = {"Constant", "Loop", "If", "Scan", "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
         "Bernoulli", "Multinomial", "SequenceEmpty", "SequenceInsert", "SequenceConstruct", "ConcatFromSequence"}


class ConstantFolding:
    name = "constant-folding"

    def __call__(self, graph: Graph) -> PassResult:
        folded = 0
        for g, node in list(graph.walk()):
            if node.op in NEVER or node.subgraphs() or node not in g.nodes:
                continue
            values = _fold(node)
            if values is None:
                continue
            at = g.nodes.index(node)
            g.nodes.remove(node)
            for k, (old, array) in enumerate(zip(node.outputs, values)):
                new = Value(old.name, array.dtype, tuple(array.shape))
                g.nodes.insert(at + k, Node("Constant", [], [new], {"value": array}, name=f"{node.name}_folded{k}"))
                replace_uses(graph, old, new)
            folded += 1
        return PassResult(graph, folded > 0, {"nodes": folded} if folded else {})


def _fold(node: Node) -> list[np.ndarray] | None:
    if node.op == "Shape" and node.inputs[0] is not None:
        shape = node.inputs[0].shape
        if shape is None or not all(isinstance(d, int) for d in shape):
            return None
        start, end = node.attrs.get("start", 0), node.attrs.get("end", len(shape))
        return [np.array(shape[slice(start, end)], np.int64)]
    arrays = [None if v is None else constant_value(v) for v in node.inputs]
    if any(a is None and v is not None for a, v in zip(arrays, node.inputs)):
        return None
    names = [f"in{i}" if v is not None else "" for i, v in enumerate(node.inputs)]
    proto = helper.make_node(node.op, names, [f"out{i}" for i in range(len(node.outputs))],
                             **{k: _attr(v) for k, v in node.attrs.items()})
    try:
        results = ReferenceEvaluator(proto).run(None, {n: np.asarray(a) for n, a in zip(names, arrays) if n})
    except Exception:
        return None  # an op the reference cannot evaluate stays for TensorRT
    if any(np.asarray(r).size > MAX_ELEMENTS for r in results):
        return None
    return [np.asarray(r) for r in results]


def _attr(value: Any) -> Any:
    return numpy_helper.from_array(value) if isinstance(value, np.ndarray) else value

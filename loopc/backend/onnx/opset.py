"""Which opset an exported model is stamped with: the oldest that reads every node as the IR means it.

IR nodes are in their newest-opset form (see :mod:`loopc.frontend.onnx.upgrade`), but runtimes lag behind
ONNX: onnxruntime and TensorRT's parser refuse the newest opsets. So each node asks for the oldest version
from which on every version of its op takes the attributes it sets and as many inputs as it has — for
ReduceMean with axes as an input that is 18, for Attention 23 — and the model gets the largest of those,
and never less than :data:`FLOOR`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import onnx
from onnx import defs

#: The oldest opset an export is stamped with: what TensorRT's parser and onnxruntime both read well.
FLOOR = 17


def export_opset(nodes: Iterable[onnx.NodeProto]) -> int:
    """The opset for ``nodes`` (every node of the model, nested graphs included)."""
    return max([FLOOR, *(_oldest(n.op_type, frozenset(a.name for a in n.attribute), len(n.input)) for n in nodes
                         if n.domain in ("", "ai.onnx"))])


@functools.lru_cache(maxsize=None)
def _oldest(op: str, attributes: frozenset[str], inputs: int) -> int:
    history = _history(op)
    oldest = history[-1].since_version if history else FLOOR
    for schema in reversed(history):
        if not attributes <= set(schema.attributes) or inputs > _max_inputs(schema):
            break
        oldest = schema.since_version
    return oldest


@functools.lru_cache(maxsize=None)
def _history(op: str) -> list[defs.OpSchema]:
    return sorted((s for s in defs.get_all_schemas_with_history() if s.name == op and s.domain == ""),
                  key=lambda s: s.since_version)


def _max_inputs(schema: defs.OpSchema) -> int:
    variadic = any(i.option == defs.OpSchema.FormalParameterOption.Variadic for i in schema.inputs)
    return 2**31 if variadic else len(schema.inputs)

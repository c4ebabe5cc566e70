"""Which opset an exported model is stamped with: the oldest that reads every node as the IR means it.

IR nodes are in their newest-opset form (see :mod:`loopc.frontend.onnx.upgrade`), but runtimes lag behind
ONNX: onnxruntime and TensorRT's parser refuse the newest opsets. So each node asks for the oldest version
from which on every version of its op takes the attributes it sets and as many inputs as it has — for
ReduceMean with axes as an input that is 18, for Attention 23 — and the model gets the largest of those,
and never less than :data:`FLOOR`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence

import onnx
from onnx import defs

#: The oldest opset an export is stamped with: what TensorRT's parser and onnxruntime both read well.
FLOOR = 17


def export_opset(nodes: Iterable[onnx.NodeProto], types: Mapping[str, str] | None = None) -> int:
    """The opset for ``nodes`` (every node of the model, nested graphs included); ``types`` gives the ONNX type
    (``tensor(float8e4m3fn)``) of the values it knows, by name (see :func:`value_types`)."""
    known = types or {}
    def typed(names: Iterable[str]) -> tuple[str, ...]:
        return tuple(known.get(name, "") if name else "" for name in names)

    return max([FLOOR, *(_oldest(n.op_type, frozenset(a.name for a in n.attribute), typed(n.input), typed(n.output))
                         for n in nodes if n.domain in ("", "ai.onnx"))])


def value_types(graphs: Iterable[onnx.GraphProto]) -> dict[str, str]:
    """The ONNX type of every typed value of ``graphs`` (inputs, outputs, initializers, value_info), by name."""
    found: dict[str, str] = {}
    for graph in graphs:
        for info in [*graph.input, *graph.output, *graph.value_info]:
            if info.type.HasField("tensor_type") and info.type.tensor_type.elem_type:
                found[info.name] = _type_text(info.type.tensor_type.elem_type)
        for tensor in graph.initializer:
            found[tensor.name] = _type_text(tensor.data_type)
    return found


def _type_text(elem_type: int) -> str:
    return f"tensor({onnx.TensorProto.DataType.Name(elem_type).lower()})"


@functools.lru_cache(maxsize=None)
def _oldest(op: str, attributes: frozenset[str], inputs: tuple[str, ...], outputs: tuple[str, ...]) -> int:
    history = _history(op)
    oldest = history[-1].since_version if history else FLOOR
    for schema in reversed(history):
        if not attributes <= set(schema.attributes) or len(inputs) > _max_inputs(schema) \
                or not _takes(schema, schema.inputs, inputs) or not _takes(schema, schema.outputs, outputs):
            break
        oldest = schema.since_version
    return oldest


def _takes(schema: defs.OpSchema, formals: Sequence[defs.OpSchema.FormalParameter], types: tuple[str, ...]) -> bool:
    """Whether ``formals`` (``schema``'s inputs or outputs) admit values of ``types`` ("" where a type is unknown or
    the value absent)."""
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    for k, given in enumerate(types):
        if given and formals:
            formal = formals[min(k, len(formals) - 1)].type_str
            if given not in allowed.get(formal, {formal}):
                return False
    return True


@functools.lru_cache(maxsize=None)
def _history(op: str) -> list[defs.OpSchema]:
    return sorted((s for s in defs.get_all_schemas_with_history() if s.name == op and s.domain == ""),
                  key=lambda s: s.since_version)


def _max_inputs(schema: defs.OpSchema) -> int:
    variadic = any(i.option == defs.OpSchema.FormalParameterOption.Variadic for i in schema.inputs)
    return 2**31 if variadic else len(schema.inputs)

"""Declared shapes that contradict what the graph computes: the computed shape wins, with a warning.

Graph tools and exporters write each value's type as they saw it, and some write it wrong (a Loop body
value declared with rank 1 that its node computes with rank 2). onnxruntime merges such a declaration
leniently, warns, and runs what the nodes compute; TensorRT's parser never reads it. loopc, which types a
value by its declaration where inference says nothing, takes the computed shape instead and warns once per
value. What onnxruntime refuses stays refused, by strict inference afterwards: a contradicted element type,
and the outputs of a Scan body, whose declared shapes onnxruntime's Scan needs to run.

"Computed" is what ONNX's inference finds with every declaration that may be wrong set aside (see
:func:`set_aside`): the value_info of every graph, the shapes of the main graph's outputs and of a Loop
body's outputs, and a Loop body's carried inputs (a carried value has its initial value's rank, which is
what onnxruntime feeds it, whatever the body declares). A declaration that the computed type leaves open (an
unknown rank or dim) is kept. A contradicted carried input is not corrected but refused (``value_types``):
onnxruntime types the body by that declaration, and refuses the models where the body then does not type-check.
"""

from __future__ import annotations

from collections.abc import Iterator

import onnx
from onnx import AttributeProto, helper

from loopc.frontend.onnx.validate import label

#: How a note names a Loop body's carried input: its declaration is one onnxruntime types the body by.
CARRIED = "carried body input"
#: A place a declaration was found: the description of its graph (empty for the main graph).
Where = str


def set_aside(proto: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``proto`` without the declarations :func:`corrected` may overrule (see the module)."""
    probe = onnx.ModelProto()
    probe.CopyFrom(proto)
    for vi in probe.graph.output:
        _clear_shape(vi)
    _set_aside(probe.graph)
    return probe


def corrected(proto: onnx.ModelProto, computed: onnx.ModelProto) -> tuple[onnx.ModelProto, list[str]] | None:
    """A copy of ``proto`` whose declared shapes ``computed`` (the inferred :func:`set_aside` copy)
    contradicts are the computed ones, and one warning per value changed; None where none is."""
    fixed = onnx.ModelProto()
    fixed.CopyFrom(proto)
    notes = list(_correct(fixed.graph, computed.graph, None, ""))
    return (fixed, notes) if notes else None


def _set_aside(graph: onnx.GraphProto) -> None:
    del graph.value_info[:]
    for node, body in _bodies(graph):
        if node.op_type == "Loop":
            for vi in [*body.input[2:], *body.output]:
                _clear_shape(vi)
        _set_aside(body)


def _correct(graph: onnx.GraphProto, computed: onnx.GraphProto, holder: onnx.NodeProto | None,
             where: Where) -> Iterator[str]:
    """Correct ``graph``'s declarations in place from ``computed`` (the same graph, inferred); say each."""
    types = {vi.name: vi.type for vi in [*computed.input, *computed.value_info, *computed.output]}
    declared: list[tuple[str, onnx.ValueInfoProto, bool]] = [("value", vi, False) for vi in graph.value_info]
    if holder is None:
        declared += [("graph output", vi, False) for vi in graph.output]
    elif holder.op_type == "Loop":
        declared += [("body output", vi, False) for vi in graph.output]
        declared += [(CARRIED, vi, True) for vi in graph.input[2:]]
    for kind, vi, rank_only in declared:
        found = types.get(vi.name)
        if found is not None and _contradicts(vi.type, found, rank_only):
            before = _show(vi.type)
            _take_shape(vi.type, found)
            yield (f"{kind} {vi.name!r}{where} is declared {before}, but the graph computes {_show(found)}; "
                   f"loopc uses the computed shape, as onnxruntime does")
    for (node, body), (_, twin) in zip(_bodies(graph), _bodies(computed)):
        yield from _correct(body, twin, node, f" in the body of {node.op_type} {label(node)!r}{where and ','}{where}")


def _contradicts(declared: onnx.TypeProto, computed: onnx.TypeProto, rank_only: bool) -> bool:
    """Another rank, or (unless ``rank_only``) two different static sizes of one dim."""
    mine, theirs = _dims(declared), _dims(computed)
    if mine is None or theirs is None:
        return False
    if len(mine) != len(theirs):
        return True
    return not rank_only and any(isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(mine, theirs))


def _take_shape(declared: onnx.TypeProto, computed: onnx.TypeProto) -> None:
    """The computed rank, and each dim as computed where it is known there, else as declared."""
    mine, theirs = _dims(declared), _dims(computed)
    assert mine is not None and theirs is not None
    dims = theirs if len(mine) != len(theirs) else [b if b is not None else a for a, b in zip(mine, theirs)]
    elem = declared.tensor_type.elem_type
    declared.CopyFrom(helper.make_tensor_type_proto(elem, dims))


def _dims(tp: onnx.TypeProto) -> list[int | str | None] | None:
    if not tp.HasField("tensor_type") or not tp.tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else _param(d.dim_param) for d in tp.tensor_type.shape.dim]


def _param(name: str) -> str | None:
    """A symbolic dim's name; ONNX's inference names a dim it knows nothing of ``unk__N``."""
    return None if not name or name.startswith("unk__") else name


def _show(tp: onnx.TypeProto) -> str:
    try:
        name = helper.tensor_dtype_to_np_dtype(tp.tensor_type.elem_type).name
    except (KeyError, ValueError):  # an element type numpy lacks, or none
        name = f"type {tp.tensor_type.elem_type}"
    return f"{name}[{','.join('?' if d is None else str(d) for d in _dims(tp) or [])}]"


def _clear_shape(vi: onnx.ValueInfoProto) -> None:
    if vi.type.HasField("tensor_type"):
        vi.type.tensor_type.ClearField("shape")


def _bodies(graph: onnx.GraphProto) -> Iterator[tuple[onnx.NodeProto, onnx.GraphProto]]:
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == AttributeProto.GRAPH:
                yield node, attr.g
            elif attr.type == AttributeProto.GRAPHS:
                for body in attr.graphs:
                    yield node, body

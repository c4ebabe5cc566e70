"""Ops ONNX defines as functions of other ops, expanded into those definitions when loopc has no
translator or converter of their own.

Many newer ONNX ops (LinearAttention, SoftmaxCrossEntropyLoss, CenterCropPad, AffineGrid, ...) come
with a definition in ONNX's own schema: a body of simpler ops, sometimes built for the node's
attributes and input types. Expanding a node into that body is exact by the spec, so such an op
builds as soon as loopc builds its parts, and a converter of its own (faster, or on a TensorRT layer
made for it) still wins whenever there is one. ONNX's inliner does the expansion: it names the body's
values apart, binds the function's attributes and picks the body for the model's opset.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

import onnx
import onnx.defs
import onnx.inliner
import onnx.shape_inference

from loopc.onnx_graphs import all_nodes, subgraphs

log = logging.getLogger(__name__)

#: Expansions nest (SoftmaxCrossEntropyLoss's body holds NegativeLogLikelihoodLoss): at most this deep.
MAX_DEPTH = 8


def expand_functions(model: onnx.ModelProto, opset: int, handled: Callable[[str], bool]) -> onnx.ModelProto:
    """``model`` with every default-domain node whose op is not ``handled`` but has a function body at
    ``opset`` replaced by that body (at every depth, loop bodies too); the model itself is not changed.

    An op whose expansion ONNX's inliner refuses is left as it is: it is then refused like any op
    loopc cannot build, by node.
    """
    refused: set[str] = set()
    for _ in range(MAX_DEPTH):
        wanted = sorted(op for op in _op_types(model.graph)
                        if op not in refused and not handled(op) and _has_function(op, opset))
        if not wanted:
            break
        for op in wanted:
            try:
                model = _declaring(onnx.inliner.inline_selected_functions(
                    _prepared(model, op, opset), [("", op)], inline_schema_functions=True), model.graph.value_info)
            except Exception as exc:  # noqa: BLE001 - the C++ inliner raises plain runtime errors
                log.debug("ONNX's function of %s is not expanded: %s", op, exc)
                refused.add(op)
    return model


def built_directly(op: str) -> bool:
    """Whether loopc builds ``op`` itself: a translator of the ONNX frontend's or a converter of the
    backend's (an op with neither is expanded into ONNX's definition of it, where ONNX has one)."""
    from loopc.backend.trt.registry import CONVERTERS
    from loopc.frontend.onnx.registry import TRANSLATORS

    return op == "Constant" or op in TRANSLATORS or op in CONVERTERS


def expanded_ops() -> list[str]:
    """The default-domain ops loopc builds only by ONNX's function definition of them (newest opset)."""
    return sorted({s.name for s in onnx.defs.get_all_schemas() if s.domain in ("", "ai.onnx")
                   and not built_directly(s.name) and _has_function(s.name, s.since_version)})


def _has_function(op: str, opset: int) -> bool:
    try:
        schema = onnx.defs.get_schema(op, opset)
    except onnx.defs.SchemaError:
        return False
    return bool(schema.has_function or schema.has_context_dependent_function)  # type: ignore[attr-defined]


def _prepared(model: onnx.ModelProto, op: str, opset: int) -> onnx.ModelProto:
    """A copy of ``model`` ready for expanding ``op``: every value typed (a body built for its node's
    input types asks for them), a placeholder type for the empty name of an absent optional input (the
    inliner asks for that too), and every attribute the schema gives a default stated on the ``op``
    nodes (a body refers to the node's attributes; one the node leaves out would bind to nothing)."""
    try:
        copy = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - expansions that need no types still work
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
    copy.graph.value_info.append(onnx.helper.make_tensor_value_info("", onnx.TensorProto.UNDEFINED, None))
    # The inliner looks types up in the main graph only: the bodies' values are declared there too, and every
    # initializer not declared as an input (inference types those for its own use, and writes no value_info).
    for graph in [copy.graph, *subgraphs(copy.graph)]:
        declared = {vi.name for vi in graph.input}
        copy.graph.value_info.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                                     for t in graph.initializer if t.name not in declared)
        if graph is not copy.graph:
            copy.graph.value_info.extend([*graph.input, *graph.value_info])
    defaults = [a.default_value for a in onnx.defs.get_schema(op, opset).attributes.values()
                if a.default_value.name]
    for node in all_nodes(copy.graph):
        if node.op_type == op and node.domain in ("", "ai.onnx"):
            present = {a.name for a in node.attribute}
            node.attribute.extend(d for d in defaults if d.name not in present)
    return copy


def _declaring(model: onnx.ModelProto, value_info: Iterable[onnx.ValueInfoProto]) -> onnx.ModelProto:
    """``model`` declaring ``value_info`` again, as the model given did: the types inferred for the
    inliner were for it alone (loopc infers its own, loop-carried values included)."""
    del model.graph.value_info[:]
    model.graph.value_info.extend(value_info)
    return model


def _op_types(graph: onnx.GraphProto) -> set[str]:
    return {n.op_type for n in all_nodes(graph) if n.domain in ("", "ai.onnx")}

"""onnxruntime's contrib ops (domain ``com.microsoft``, and the few it defines in the default domain) expanded
into standard ONNX ops before the model is validated, so that the rest of loopc reads them as any other nodes.

onnxruntime's quantizer (``quantize_dynamic``, ``MatMulNBitsQuantizer``) and its transformer optimizer
(``optimize_model``) write these ops into models people ship. Each expansion follows onnxruntime's definition
of the op (its contrib-op schemas and CPU kernels) and writes it with the model's opset
(:mod:`.emit`); quantized weights stay integer constants behind a DequantizeLinear, which TensorRT can run in
int8. A contrib op with no expansion here is left as it is, and refused by the validator naming its domain.

Expansions are found in :data:`EXPANSIONS` by ``(domain, op)``; a default-domain entry applies only when
the model's opset has no op of that name (onnxruntime's own LayerNormalization below opset 17).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import onnx
import onnx.shape_inference
from onnx import helper

from loopc.frontend.onnx.contrib.emit import Emitter, Known, Pending
from loopc.frontend.onnx.weightless import Weights
from loopc.onnx_graphs import subgraphs
from loopc.registry import Registry

log = logging.getLogger(__name__)

MICROSOFT = "com.microsoft"
#: (emitter) -> None: write the node's expansion with ``emitter`` and bind every output it has.
Expansion = Callable[[Emitter], None]
EXPANSIONS: Registry[tuple[str, str], Expansion] = Registry(
    "contrib-op expansion",
    loaders=("loopc.frontend.onnx.contrib.activations", "loopc.frontend.onnx.contrib.normalization",
             "loopc.frontend.onnx.contrib.attention", "loopc.frontend.onnx.contrib.matmul",
             "loopc.frontend.onnx.contrib.recurrent"),
)
#: Rounds of expansion at most: a node whose inputs another contrib node makes waits for that one's types.
MAX_ROUNDS = 8


def expands(*ops: str, domain: str = MICROSOFT) -> Callable[[Expansion], Expansion]:
    """Register the decorated function as the expansion of ``ops`` of ``domain``."""
    return EXPANSIONS.register(*((domain, op) for op in ops))


def contrib_ops() -> list[str]:
    """The contrib ops loopc expands (``loopc ops`` lists them), as ``domain.Op``."""
    return sorted(f"{domain or 'ai.onnx'}.{op}" for domain, op in EXPANSIONS)


def expand_contrib(proto: onnx.ModelProto, opset: int, weights: Weights | None = None) -> onnx.ModelProto:
    """``proto`` with every contrib node loopc knows replaced by standard ONNX nodes (a copy; ``proto`` itself
    is returned when it has none); ``weights``: what the stand-ins of a stripped ``proto`` stand for (see
    :mod:`loopc.frontend.onnx.weightless`)."""
    if not any(_expansion(node, opset) for node in _nodes(proto.graph)):
        return proto
    model = onnx.ModelProto()
    model.CopyFrom(proto)
    names = {name for graph in _graphs(model.graph) for name in _names(graph)}
    counter = [0]

    def fresh(base: str) -> str:
        while True:
            counter[0] += 1
            name = f"{base}__ms{counter[0]}"
            if name not in names:
                names.add(name)
                return name

    for _ in range(MAX_ROUNDS):
        known = _known(model, weights if weights is not None else Weights())
        # bodies before the graphs holding them: a graph's nodes are replaced by copies, its bodies' with them
        waiting = [_expand_graph(graph, opset, fresh, known) for graph in list(_innermost_first(model.graph))]
        left = [node for nodes in waiting for node in nodes]
        if not left:
            return model
    node, missing = left[0]
    raise Emitter(node, opset, fresh, Known()).error(
        f"the type of {missing!r} is not known, and the expansion of this onnxruntime op needs it",
        hint="declare the types of the model's inputs (or run onnx's shape inference on it)")


def _expansion(node: onnx.NodeProto, opset: int) -> Expansion | None:
    domain = "" if node.domain in ("", "ai.onnx") else node.domain
    found = EXPANSIONS.get((domain, node.op_type))
    if found is None or domain:
        return found
    try:  # a default-domain entry: only where ONNX has no such op at this opset
        onnx.defs.get_schema(node.op_type, opset, "")
        return None
    except onnx.defs.SchemaError:
        return found


def _expand_graph(graph: onnx.GraphProto, opset: int, fresh: Callable[[str], str],
                  known: Known) -> list[tuple[onnx.NodeProto, str]]:
    """Expand the contrib nodes of ``graph`` (not of its bodies) in place; returns the nodes left waiting."""
    nodes: list[onnx.NodeProto] = []
    waiting = []
    changed = False
    for node in graph.node:
        expansion = _expansion(node, opset)
        if expansion is None:
            nodes.append(node)
            continue
        emitter = Emitter(node, opset, fresh, known)
        try:
            expansion(emitter)
        except Pending as missing:
            waiting.append((node, str(missing)))
            nodes.append(node)
            continue
        log.debug("expanded %s %s into %d nodes", node.op_type, node.name, len(emitter.nodes))
        _type_outputs(emitter, known)
        nodes.extend(emitter.nodes)
        changed = True
    if changed:
        copies = [onnx.NodeProto() for _ in nodes]
        for copy, node in zip(copies, nodes):
            copy.CopyFrom(node)
        del graph.node[:]
        graph.node.extend(copies)
    return waiting


def _type_outputs(emitter: Emitter, known: Known) -> None:
    """Infer the types of the expansion's values from the types of what it reads, so that the next contrib node
    reading them is expanded in the same round (a one-node model given to ONNX's shape inference)."""
    made = {name for node in emitter.nodes for name in node.output}
    read = {name for node in emitter.nodes for name in node.input if name and name not in made}
    inputs = [helper.make_value_info(name, known.types[name]) for name in sorted(read) if name in known.types]
    inputs += [helper.make_tensor_value_info(name, t.data_type, list(t.dims)) for name, t in known.tensors.items()
               if name in read and name not in known.types]
    graph = helper.make_graph(emitter.nodes, "expansion", inputs, [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", emitter.opset)])
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception as exc:  # noqa: BLE001 - the model's own inference runs later, and says what is wrong
        log.debug("no types for the expansion of %s: %s", emitter.node.op_type, exc)
        return
    for vi in inferred.graph.value_info:
        known.types[vi.name] = vi.type


def _known(model: onnx.ModelProto, weights: Weights) -> Known:
    known = Known(weights=weights)
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception as exc:  # noqa: BLE001 - what inference gives is a help; the validator says what is wrong
        log.debug("shape inference before expanding contrib ops: %s", exc)
        inferred = model
    for graph in _graphs(inferred.graph):
        for vi in [*graph.input, *graph.value_info, *graph.output]:
            if vi.type.WhichOneof("value") is not None:
                known.types[vi.name] = vi.type
        for init in graph.initializer:
            known.tensors[init.name] = init
        for node in graph.node:
            if node.op_type == "Constant" and node.output:
                value = next((a.t for a in node.attribute if a.name == "value"), None)
                if value is not None:
                    known.tensors[node.output[0]] = value
    return known


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    yield graph
    yield from subgraphs(graph)


def _innermost_first(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    for node in graph.node:
        for attr in node.attribute:
            for body in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs):
                yield from _innermost_first(body)
    yield graph


def _nodes(graph: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    for g in _graphs(graph):
        yield from g.node


def _names(graph: onnx.GraphProto) -> Iterator[str]:
    for vi in [*graph.input, *graph.output, *graph.value_info]:
        yield vi.name
    for init in graph.initializer:
        yield init.name
    for node in graph.node:
        yield node.name
        yield from node.output

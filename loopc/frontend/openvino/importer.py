"""Translate an OpenVINO IR (``.xml`` + ``.bin``) into loopc's IR.

Layers are visited in dependency order (a cycle is an error naming a layer on it); each resolves
to a translator by type and version (:mod:`loopc.frontend.openvino.registry`) that emits
ONNX-named IR nodes. Shapes are never taken from the XML's declared port dims: every node's dtype
and shape is inferred as it is added, from its operands, with ONNX's shape functions — OpenVINO
re-infers them too, and body Parameters written as ``?`` get real shapes that way.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from loopc.errors import FrontendError, LoopcError, UnsupportedOpError, located
from loopc.fileio import check_readable
from loopc.ir.builder import Builder
from loopc.frontend.openvino.reader import IR, Layer, Net, Port, read_ir
from loopc.frontend.openvino.registry import check_version, resolve
from loopc.frontend.openvino.weights import Weights, element_type, parse_shape
from loopc.ir import Graph, If, Model, Node, Value, constant_value
from loopc.ir.ops import traits

log = logging.getLogger(__name__)

#: How many producers deep :meth:`Op.constant` looks through to find a constant operand.
FOLD_DEPTH = 8
#: TensorRT's ``Dims::MAX_DIMS``.
MAX_INPUT_RANK = 8


@dataclass
class Context:
    """One import: the weights, and the names given so far (every name is unique in the model)."""

    path: str
    weights: Weights
    names: set[str] = field(default_factory=set)
    #: A graph input's other tensor names, each to the name the input has.
    input_aliases: dict[str, str] = field(default_factory=dict)
    counter: int = 0
    #: Lower a bidirectional *Sequence op as one loop running both directions (``stack-directions``).
    stack_directions: bool = True

    def fresh(self, base: str) -> str:
        self.counter += 1
        name = f"{base}__{self.counter}"
        self.names.add(name)
        return name

    def unique(self, name: str) -> str:
        """``name`` itself if no value has it yet, else a fresh variant: user-visible names stay recognizable."""
        if name and name not in self.names:
            self.names.add(name)
            return name
        return self.fresh(name or "value")


def import_ir(xml: str | os.PathLike[str], weights: str | os.PathLike[str] | None = None, *,
              stack_directions: bool = True) -> Model:
    """Translate the IR at ``xml`` (weights from ``weights``, default: the ``.bin`` beside it);
    ``stack_directions`` as :class:`Context` says."""
    path = os.fspath(xml)
    if weights is not None:
        check_readable(weights, "--weights")
    bin_path = os.fspath(weights) if weights is not None else os.path.splitext(path)[0] + ".bin"
    ir = read_ir(path)
    ctx = Context(path, Weights(bin_path), stack_directions=stack_directions)
    graph = Graph(ir.net.name or "main")
    names: list[str] = []
    for result, value in translate_net(ctx, ir.net, graph):
        graph.add_output(value)
        name = output_name(ir.net, result, ir.version)
        names.append(name if name not in names else f"{name}.{len(names)}")
    if not graph.outputs:
        raise FrontendError(f"{path}: the model has no Result layer, so no outputs")
    model = Model(graph, path, 0, names)
    inputs = {v.name for v in graph.inputs}
    model.input_aliases = {alias: name for alias, name in ctx.input_aliases.items() if alias not in inputs}
    return model


def translate_net(ctx: Context, net: Net, graph: Graph, bound: dict[int, Value] | None = None) -> list[tuple[Layer, Value]]:
    """Emit ``net``'s layers into ``graph``; return its Result layers with their values, in XML order.

    ``bound`` gives the values of a body's Parameters (by layer id); without it Parameters become
    ``graph``'s inputs.
    """
    sources = _check_edges(ctx, net)
    values: dict[tuple[int, int], Value] = {}
    results: list[tuple[Layer, Value]] = []
    for layer in _topological(ctx, net, sources):
        inputs = [values[sources[(layer.id, port.id)]] for port in layer.inputs]
        if layer.type in ("Result", "Parameter", "Const"):
            check_version(layer, where(net, layer))
        if layer.type == "Result":
            if len(inputs) != 1:
                raise located(FrontendError, where(net, layer), f"a Result takes one input, not {len(inputs)}")
            results.append((layer, inputs[0]))
            continue
        if layer.type == "Parameter":
            outs = [_parameter(ctx, net, layer, graph, bound)]
        else:
            outs = _translate_layer(ctx, net, layer, inputs, graph)
        for port, value in zip(layer.outputs, outs):
            values[(layer.id, port.id)] = value
    position = {layer_id: k for k, layer_id in enumerate(net.layers)}
    return sorted(results, key=lambda item: position[item[0].id])


def output_name(net: Net, result: Layer, version: int) -> str:
    """The name OpenVINO's ``get_any_name()`` gives a Result's output: the least of its tensor names.

    Those are the Result's ``output_names`` (v11), else the producer port's names; reading IR v10,
    OpenVINO adds the legacy name ``<producer layer>.<output index>``.
    """
    names = list(result.output_names)
    for edge in net.edges:
        if edge.to_layer == result.id:
            producer = net.layers[edge.from_layer]
            index = next(k for k, p in enumerate(producer.outputs) if p.id == edge.from_port)
            names = names or list(producer.outputs[index].names)
            if version == 10:
                names.append(f"{producer.name}.{index}")
    return min(names) if names else result.name


def where(net: Net, layer: Layer) -> str:
    """How errors name a layer: inside which body, if not the top-level net."""
    return layer.describe() if net.where == "net" else f"{layer.describe()} in {net.where}"


@dataclass
class Op:
    """One layer being translated: its inputs as IR values, its attributes, and an emitter for its nodes."""

    ctx: Context
    net: Net
    layer: Layer
    inputs: list[Value]
    em: Builder
    #: The opset that introduced the op version this layer reads as.
    version: int

    @property
    def what(self) -> str:
        return where(self.net, self.layer)

    def error(self, message: str) -> LoopcError:
        return located(FrontendError, self.what, message)

    def unsupported(self, message: str) -> LoopcError:
        return located(UnsupportedOpError, self.what, message)

    def expect_inputs(self, *counts: int) -> None:
        if len(self.inputs) not in counts:
            wanted = " or ".join(str(c) for c in counts)
            raise self.error(f"takes {wanted} input(s), not {len(self.inputs)}")

    def check_input_ids(self) -> None:
        """Port maps name inputs by port id and OpenVINO binds them by position: the two must agree."""
        for k, port in enumerate(self.layer.inputs):
            if port.id != k:
                raise self.error(f"input port {k} has id {port.id}; the port map binds inputs by id, and "
                                 f"OpenVINO by position, so they must agree")

    # Attributes (``<data>``), read defensively: a bad value names the attribute.
    def attr(self, key: str, default: str | None = None) -> str:
        text = self.layer.data.get(key, default)
        if text is None:
            raise self.error(f"attribute {key!r} is required")
        return text

    def int_attr(self, key: str, default: int | None = None) -> int:
        return self._number(key, default, int, "an integer")

    def ints_attr(self, key: str, default: list[int] | None = None) -> list[int]:
        text = self.layer.data.get(key)
        if text is None or not text.strip():
            if default is None and text is None:
                raise self.error(f"attribute {key!r} is required")
            return list(default or [])
        try:
            return [int(part) for part in text.split(",")]
        except ValueError:
            raise self.error(f"attribute {key!r} is {text[:40]!r}, not a list of integers") from None

    def float_attr(self, key: str, default: float | None = None) -> float:
        return self._number(key, default, float, "a number")

    def _number(self, key: str, default: Any, kind: Any, noun: str) -> Any:
        text = self.layer.data.get(key)
        if text is None:
            if default is None:
                raise self.error(f"attribute {key!r} is required")
            return default
        try:
            return kind(text)
        except ValueError:
            raise self.error(f"attribute {key!r} is {text[:40]!r}, not {noun}") from None

    def floats_attr(self, key: str) -> list[float]:
        text = self.layer.data.get(key, "")
        try:
            return [float(part) for part in text.split(",") if part.strip()]
        except ValueError:
            raise self.error(f"attribute {key!r} is {text[:40]!r}, not a list of numbers") from None

    def bool_attr(self, key: str, default: bool) -> bool:
        text = self.layer.data.get(key)
        if text is None:
            return default
        if text.lower() in ("true", "1"):
            return True
        if text.lower() in ("false", "0"):
            return False
        raise self.error(f"attribute {key!r} is {text[:40]!r}, not true or false")

    def choice_attr(self, key: str, choices: Iterable[str], default: str | None = None) -> str:
        text = self.attr(key, default).lower()
        options = list(choices)
        if text not in options:
            raise self.unsupported(f"attribute {key}={text[:40]!r} is not one of {', '.join(options)}")
        return text

    def dtype_attr(self, key: str) -> np.dtype[Any]:
        return element_type(self.attr(key), f"{self.what}: attribute {key!r}")

    # Operands.
    def constant(self, k: int) -> np.ndarray | None:
        """Input ``k``'s value when it is computable now from constants (through a few nodes), else None."""
        return static_value(self.inputs[k]) if k < len(self.inputs) else None

    def require_constant(self, k: int, role: str) -> np.ndarray:
        value = self.constant(k)
        if value is None:
            raise self.unsupported(f"input {k} ({role}) must be a constant; it is computed at run time")
        return value

    def rank(self, k: int) -> int:
        shape = self.inputs[k].shape
        if shape is None:
            raise self.unsupported(f"the rank of input {k} is unknown, and this op needs it"
                                   + _unknown_because(self.inputs[k]))
        return len(shape)

    def op(self, op: str, inputs: Sequence[Value | None], attrs: dict[str, Any] | None = None) -> Value:
        return self.em.op(op, inputs, attrs)

    def const(self, array: Any, dtype: Any = None) -> Value:
        return self.em.const(array, dtype)


def static_value(value: Value | None, depth: int = FOLD_DEPTH) -> np.ndarray | None:
    """``value``'s array when a Constant produces it, or a short chain of foldable nodes from constants."""
    from loopc.passes.constant_folding import fold

    if value is None or value.producer is None:
        return None
    node = value.producer
    constant = constant_value(value)
    if constant is not None:
        return np.asarray(constant)
    if depth == 0 or not traits(node.op).foldable or node.subgraphs():
        return None
    if node.op == "Shape":
        folded = fold(node)  # a Shape of a static shape needs no constant operand
    else:
        known: dict[Value, np.ndarray] = {}
        for v in node.inputs:
            array = None if v is None else static_value(v, depth - 1)
            if v is not None and array is None:
                return None
            if v is not None and array is not None:
                known[v] = array
        folded = fold(node, known)
    return None if folded is None else folded[node.outputs.index(value)]



def _unknown_because(value: Value) -> str:
    """Why ``value`` has no rank, when a conditional made it: its branches give it different ranks (OpenVINO's ONNX
    frontend writes the empty tensor of a detector's ``numel() == 0`` guard as a scalar), which one TensorRT
    conditional cannot hold, with what would decide the conditional at build time."""
    stack: list[Value] = [value]
    seen: set[Value] = set()
    while stack:  # back through the values that lost their rank, to the conditional that lost it first
        current = stack.pop()
        node = current.producer
        if current in seen or current.shape is not None or node is None:
            continue
        seen.add(current)
        if isinstance(node, If):
            return _rank_lost_at(node, node.outputs.index(current))
        stack.extend(v for v in node.inputs if v is not None)
    return ""


def _rank_lost_at(node: If, k: int) -> str:
    from loopc.ir.dependence import deciding_hint

    shapes = [b.outputs[k].shape for b in (node.then_branch, node.else_branch)]
    ranks = [len(shape) for shape in shapes if shape is not None]
    if len(ranks) < 2 or ranks[0] == ranks[1]:
        return ""
    hint = deciding_hint(node)
    return (f": it is output {k} of {node.describe()}, rank {ranks[0]} in one branch and {ranks[1]} in the other, "
            f"and TensorRT needs one rank" + (f"; {hint}" if hint else ""))


def _check_types(node: Node) -> None:
    """Operands must have a type the op's ONNX schema allows (And takes bool), and those it binds to one type
    (Add's two ``T``) one dtype, as OpenVINO requires of the layer; TensorRT fails on the network otherwise, far
    from the layer."""
    import onnx

    try:
        schema = onnx.defs.get_schema(node.op, onnx.defs.onnx_opset_version())
    except onnx.defs.SchemaError:
        return
    variadic = onnx.defs.OpSchema.FormalParameterOption.Variadic
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    first: dict[str, np.dtype[Any]] = {}
    for k, value in enumerate(node.inputs):
        if not schema.inputs or value is None or value.dtype is None:
            continue
        formal = schema.inputs[min(k, len(schema.inputs) - 1)]
        if k >= len(schema.inputs) and not (formal.option == variadic and formal.is_homogeneous):
            continue
        kinds = allowed.get(formal.type_str, set())
        if kinds and _type_str(value.dtype) not in kinds | {None}:
            raise located(FrontendError, node.describe(), f"an operand of element type {value.dtype} meets "
                          f"{node.op}, which takes {', '.join(sorted(t[7:-1] for t in kinds))}; the model needs a Convert")
        dtype = first.setdefault(formal.type_str, value.dtype)
        if dtype != value.dtype:
            raise located(FrontendError, node.describe(), f"operands of element types {dtype} and {value.dtype} "
                          f"meet in {node.op}, which takes one type; the model needs a Convert")


def _type_str(dtype: np.dtype[Any]) -> str | None:
    """ONNX's name for ``dtype`` in type constraints (``tensor(float)``), None for a dtype ONNX has no name for."""
    import onnx
    from onnx import helper

    try:
        return f"tensor({onnx.TensorProto.DataType.Name(helper.np_dtype_to_tensor_dtype(dtype)).lower()})"
    except (KeyError, TypeError, ValueError):
        return None


def _translate_layer(ctx: Context, net: Net, layer: Layer, inputs: list[Value], graph: Graph) -> list[Value]:
    label = layer.name or f"layer{layer.id}"
    em = Builder(graph, label=label, origin=where(net, layer), names=ctx.fresh, check=_check_types)
    before = len(graph.nodes)
    if layer.type == "Const":
        array = ctx.weights.array(layer.data, where(net, layer))
        value = em.const(array)
        outs = [value]
    else:
        translator, version = resolve(layer, where(net, layer))
        outs = translator(Op(ctx, net, layer, inputs, em, version))
        if len(outs) != len(layer.outputs):
            raise located(FrontendError, where(net, layer), f"has {len(layer.outputs)} output port(s); "
                          f"the op gives {len(outs)}")
    added = set(graph.nodes[before:])
    for k, (port, value) in enumerate(zip(layer.outputs, outs)):
        _compare_declared(where(net, layer), port, value)
        if value.producer is not None and value.producer in added:
            value.name = ctx.unique(port.names[0] if port.names else (label if k == 0 else f"{label}.{k}"))
    return outs


def _compare_declared(what: str, port: Port, value: Value) -> None:
    """The XML's port dims are never used; say (with -v) where they disagree with what loopc inferred."""
    if value.shape is None or len(port.dims) != len(value.shape) and port.dims:
        return
    if any(d >= 0 and isinstance(v, int) and d != v for d, v in zip(port.dims, value.shape)):
        log.info("%s: output port %d declares dims %s; loopc infers %s and uses that", what, port.id,
                 list(port.dims), list(value.shape))


def _parameter(ctx: Context, net: Net, layer: Layer, graph: Graph, bound: dict[int, Value] | None) -> Value:
    """A graph input, or the value a body Parameter is bound to. A body Parameter's declared type and shape
    give way to what the loop feeds it (as OpenVINO re-infers them), but must still read: OpenVINO refuses
    an IR whose declaration does not."""
    what = where(net, layer)
    dtype = element_type(layer.data.get("element_type", ""), what)
    shape = parse_shape(layer.data.get("shape", ""), what)
    if bound is not None:
        if layer.id not in bound:
            raise located(FrontendError, what, "this body Parameter has no port_map input and is not "
                          "the current_iteration; nothing gives it a value")
        return bound[layer.id]
    port_names = layer.outputs[0].names if layer.outputs else []
    value = Value(ctx.unique(min(port_names) if port_names else layer.name), dtype, shape)
    ctx.input_aliases.update({name: value.name for name in port_names if name != value.name})
    if len(value.shape or ()) > MAX_INPUT_RANK:
        raise located(UnsupportedOpError, what, f"the input has rank {len(value.shape or ())}; TensorRT's "
                      f"tensors have at most {MAX_INPUT_RANK} dims")
    graph.add_input(value)
    return value


def _check_edges(ctx: Context, net: Net) -> dict[tuple[int, int], tuple[int, int]]:
    """Map each (layer, input port) to the (layer, output port) feeding it; every input needs exactly one."""
    sources: dict[tuple[int, int], tuple[int, int]] = {}
    for edge in net.edges:
        what = f"{ctx.path}: {net.where}: edge {edge.from_layer}:{edge.from_port} -> {edge.to_layer}:{edge.to_port}"
        src, dst = net.layers.get(edge.from_layer), net.layers.get(edge.to_layer)
        if src is None or dst is None:
            raise FrontendError(f"{what} names layer {edge.from_layer if src is None else edge.to_layer}, "
                                f"which does not exist")
        if not _has_port(src.outputs, edge.from_port):
            raise FrontendError(f"{what}: {src.describe()} has no output port {edge.from_port}")
        if not _has_port(dst.inputs, edge.to_port):
            raise FrontendError(f"{what}: {dst.describe()} has no input port {edge.to_port}")
        if (edge.to_layer, edge.to_port) in sources:
            raise FrontendError(f"{what}: input port {edge.to_port} of {dst.describe()} has two edges into it")
        sources[(edge.to_layer, edge.to_port)] = (edge.from_layer, edge.from_port)
    for layer in net.layers.values():
        for port in layer.inputs:
            if (layer.id, port.id) not in sources:
                raise located(FrontendError, where(net, layer), f"input port {port.id} is not connected")
    return sources


def _has_port(ports: list[Port], port_id: int) -> bool:
    return any(p.id == port_id for p in ports)


def _topological(ctx: Context, net: Net, sources: dict[tuple[int, int], tuple[int, int]]) -> list[Layer]:
    """Layers in an order where producers come first, XML order among equals; a cycle is an error."""
    position = {layer_id: k for k, layer_id in enumerate(net.layers)}
    waiting = {layer_id: 0 for layer_id in net.layers}
    readers: dict[int, list[int]] = {layer_id: [] for layer_id in net.layers}
    for (dst, _), (src, _) in sources.items():
        waiting[dst] += 1
        readers[src].append(dst)
    import heapq

    ready = [position[i] for i, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    ids = list(net.layers)
    order: list[Layer] = []
    while ready:
        layer_id = ids[heapq.heappop(ready)]
        order.append(net.layers[layer_id])
        for reader in readers[layer_id]:
            waiting[reader] -= 1
            if waiting[reader] == 0:
                heapq.heappush(ready, position[reader])
    if len(order) != len(net.layers):
        stuck = next(net.layers[i] for i, n in waiting.items() if n > 0)
        raise located(FrontendError, where(net, stuck), "the graph has a cycle through this layer")
    return order


__all__ = ["Context", "IR", "Op", "import_ir", "output_name", "static_value", "translate_net", "where"]

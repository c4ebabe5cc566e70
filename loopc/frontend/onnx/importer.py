"""Read an ONNX model (defensively) and translate its graph into loopc's IR.

Ordinary nodes keep their ONNX op type, inputs and attributes (the IR contract: the form of the
newest opset; older forms are rewritten on the way in by :mod:`loopc.frontend.onnx.upgrade`).
Nodes with subgraphs — Loop, Scan, If — and the recurrent ops loopc lowers itself are handed to
the translators registered in :data:`loopc.frontend.onnx.registry.TRANSLATORS`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

import numpy as np
import onnx
from onnx import helper

from loopc.errors import FrontendError, LoopcError, located
from loopc.fileio import check_readable
from loopc.frontend.formats import check_model_file, not_onnx
from loopc.frontend.onnx import newer_opsets, validate, weight_file, weightless
from loopc.frontend.onnx.contrib import expand_contrib
from loopc.frontend.onnx.functions import built_directly, expand_functions
from loopc.frontend.onnx.order import in_dependence_order
from loopc.frontend.onnx.registry import TRANSLATORS
from loopc.frontend.onnx.tensors import load_external_data
from loopc.frontend.onnx.upgrade import upgrade_node
from loopc.frontend.onnx.value_types import infer_types, type_of
from loopc.ir import Graph, Model, Value
from loopc.ir.builder import Builder

log = logging.getLogger(__name__)

#: Largest model file loopc reads; protobuf itself refuses more than 2 GiB.
MAX_MODEL_BYTES = 2**31 - 1


@dataclass
class Context:
    """What translating one model needs: its opset, inferred value types, and the names in scope."""

    opset: int
    value_info: dict[str, onnx.TypeProto] = field(default_factory=dict)
    counter: int = 0
    #: Arrays of the initializers and Constant nodes read so far, by name (rewrites of old op forms
    #: whose meaning depends on a value, as Resize-10's rounding does on its scales).
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    #: Lower a bidirectional RNN/GRU/LSTM as one loop running both directions (``stack-directions``).
    stack_directions: bool = True
    #: The tensors the stripped model's stand-ins stand for (see :mod:`loopc.frontend.onnx.weightless`).
    weights: weightless.Weights = field(default_factory=weightless.Weights)

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"{base}__{self.counter}"

    def value(self, name: str) -> Value:
        """A new IR value for ONNX name ``name``, typed from shape inference when it knows."""
        dtype, shape = type_of(self.value_info.get(name))
        return Value(name, dtype, shape)

    def describe(self, node: onnx.NodeProto) -> str:
        return f"node {validate.label(node)!r} ({node.op_type}, opset {self.opset})"

    def error(self, node: onnx.NodeProto, message: str, cls: type[LoopcError] = FrontendError,
              hint: str | None = None) -> LoopcError:
        """An error about ``node``, carrying its name and op (with the opset) as fields."""
        return validate.node_error(node, self.opset, message, cls, hint)


class Scope:
    """ONNX names visible in a graph: its own values, then its enclosing graphs' (outer-scope reads)."""

    def __init__(self, parent: Scope | None = None) -> None:
        self.parent = parent
        self.names: dict[str, Value] = {}

    def bind(self, name: str, value: Value) -> None:
        self.names[name] = value

    def lookup(self, name: str) -> Value | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return None


def import_model(model: onnx.ModelProto | str | os.PathLike[str], *, stack_directions: bool = True) -> Model:
    """Translate ``model`` (a ModelProto or a path) into an IR :class:`Model`; ``stack_directions``
    as :class:`Context` says.

    The model is validated first (:mod:`loopc.frontend.onnx.validate`): nothing is translated
    from a model that breaks the ONNX spec. Everything before translation works on the model without its
    weights (:mod:`loopc.frontend.onnx.weightless`); translation reads each weight once, into its array.
    """
    source = "<model>" if isinstance(model, onnx.ModelProto) else os.fspath(model)
    weights = weightless.Weights()
    proto = model if isinstance(model, onnx.ModelProto) else load(source, weights)
    opset = validate.default_opset(proto, source)
    proto = weightless.strip(proto, weights)
    # onnxruntime's contrib ops, as standard ones; the weights an expansion makes (repacked ones) stripped too
    proto = weightless.strip(expand_contrib(proto, opset, weights), weights)
    proto = in_dependence_order(proto)  # onnxruntime's quantizer can list a Loop before a value its body reads
    validate.validate_model(proto, source, opset, weights)
    _check_tensor_io(proto.graph, source, opset)
    proto = expand_functions(proto, opset, built_directly)
    proto = newer_opsets.declare_added_outputs(proto, opset)  # ops newer than the installed onnx, typed
    types, inferred, refusal = infer_types(proto, source, opset)
    validate.validate_types(inferred, opset)
    ctx = Context(opset, types, stack_directions=stack_directions, weights=weights)
    if refusal is not None:
        _refuse(ctx, proto.graph, refusal)
    graph = translate_graph(ctx, proto.graph, Scope(), proto.graph.name or "main")
    return Model(graph, source, opset, [v.name for v in graph.outputs])


def _refuse(ctx: Context, graph: onnx.GraphProto, refusal: LoopcError) -> NoReturn:
    """Raise ``refusal`` (strict inference's), unless translating ``graph`` finds a more specific error.

    loopc's own checks (the validator's, then the translators' of Scan and the RNNs) say more than
    ONNX's inference messages do, so their error comes first; a translator that trips over the
    contradiction in any other way only confirms it.
    """
    try:
        translate_graph(ctx, graph, Scope(), graph.name or "main")
    except LoopcError:
        raise
    except Exception:  # noqa: BLE001 - the model is refused either way, with the reason inference gave
        pass
    raise refusal


def _check_tensor_io(graph: onnx.GraphProto, source: str, opset: int) -> None:
    """Engine inputs and outputs are tensors: a sequence or optional at the boundary has no binding."""
    for kind, values in (("input", graph.input), ("output", graph.output)):
        for vi in values:
            which = vi.type.WhichOneof("value")
            if which in ("sequence_type", "optional_type", "map_type"):
                noun = {"sequence_type": "a sequence", "optional_type": "an optional", "map_type": "a map"}[which]
                raise FrontendError(f"{source} (opset {opset}): graph {kind} {vi.name!r} is {noun}; "
                                    f"TensorRT engines take tensors only")


#: Files from this size on are read with their weights left in the file (:mod:`.weight_file`); smaller ones whole.
WALKED_FROM = 64 << 20


def load(path: str, weights: weightless.Weights | None = None) -> onnx.ModelProto:
    """Load an ONNX file and its external data; every failure becomes one clear FrontendError. Given ``weights``,
    the large tensors' bytes stay in their files, the model holding stand-ins for them (see
    :mod:`loopc.frontend.onnx.weight_file`)."""
    check_model_file(path)  # another framework's model or an engine: say which, not how protobuf failed
    check_readable(path)
    if os.path.getsize(path) > MAX_MODEL_BYTES:
        raise FrontendError(f"{path}: larger than 2 GiB, which ONNX protobuf files cannot be")
    try:
        proto = _read(path, weights)
    except Exception as exc:
        raise FrontendError(f"{path}: not a readable ONNX model ({type(exc).__name__}: {exc}){not_onnx(path)}") \
            from None
    if not proto.ir_version and not proto.HasField("graph"):  # protobuf reads other bytes as an empty message
        raise FrontendError(f"{path}: not an ONNX model (it holds no graph){not_onnx(path)}")
    try:
        load_external_data(proto, path, weights.leave_in_file if weights is not None else lambda *_: False)
    except OSError as exc:
        raise FrontendError(f"{path}: cannot read external data ({type(exc).__name__}: {exc})") from None
    return proto


def _read(path: str, weights: weightless.Weights | None) -> onnx.ModelProto:
    """The model in ``path``, its weights left in the file when ``weights`` records them and the file is large
    enough for that to matter (the walk of the file is Python, slower than protobuf on many small nodes); what the
    walk cannot take apart is read whole by onnx, whose error then says what is wrong."""
    if weights is not None and os.path.getsize(path) >= WALKED_FROM:
        try:
            return weight_file.read(path, weights)
        except Exception:  # noqa: BLE001 - onnx reads it again and says why it cannot
            log.debug("%s read whole: its encoding is not what the walk of the file expects", path, exc_info=True)
    return onnx.load(path, load_external_data=False)


def translate_graph(
    ctx: Context, graph: onnx.GraphProto, scope: Scope, name: str, inputs: list[Value] | None = None,
    prologue: Callable[[Graph], None] | None = None,
) -> Graph:
    """Translate ``graph``; ``inputs`` (already bound in ``scope``) replace its declared inputs, and
    ``prologue`` adds nodes ahead of the graph's own (a body input reshaped as the body declares it)."""
    ir = Graph(name)
    if prologue is not None:
        prologue(ir)
    initializers = {init.name for init in graph.initializer}
    if inputs is None:
        for vi in graph.input:
            if vi.name in initializers:
                continue
            value = Value(vi.name, *type_of(vi.type))
            scope.bind(vi.name, value)
            ir.add_input(value)
    else:
        ir.set_inputs(inputs)
    for init in graph.initializer:
        if scope.parent is not None and scope.parent.lookup(init.name) is not None:
            continue  # an enclosing graph's initializer repeated, values and all (the validator checked): one value
        constant(ctx, scope, ir, init.name, _array(ctx, init, f"initializer {init.name!r}"))
    for node in graph.node:
        translate_node(ctx, node, scope, ir)
    for vi in graph.output:
        found = scope.lookup(vi.name)
        if found is None:
            raise FrontendError(f"graph {graph.name!r} output {vi.name!r} is never produced")
        ir.add_output(found)
    return ir


def translate_node(ctx: Context, node: onnx.NodeProto, scope: Scope, graph: Graph) -> None:
    if node.domain not in validate.DEFAULT_DOMAINS:  # the validator refused it already, naming its version
        raise validate.foreign_op(node, None)
    for rewritten in upgrade_node(ctx, node):
        _translate_one(ctx, rewritten, scope, graph)


def _translate_one(ctx: Context, node: onnx.NodeProto, scope: Scope, graph: Graph) -> None:
    structural = TRANSLATORS.get(node.op_type)
    if structural is not None:
        structural(ctx, node, scope, graph)
        return
    inputs = [lookup(ctx, node, scope, name) if name else None for name in node.input]
    attrs = {a.name: attribute(ctx, node, a) for a in node.attribute}
    if node.op_type == "Constant":
        constant(ctx, scope, graph, node.output[0], _constant_value(ctx, node, attrs))
        return
    outputs = [ctx.value(name) if name else Value(ctx.fresh("unused")) for name in node.output]
    # typed by ONNX's inference of the whole model (Context.value)
    Builder(graph, origin=ctx.describe(node), infer=False).node(node.op_type, inputs, outputs, attrs,
                                                                 name=node.name or outputs[0].name)
    for name, value in zip(node.output, outputs):
        if name:
            scope.bind(name, value)


def lookup(ctx: Context, node: onnx.NodeProto, scope: Scope, name: str) -> Value:
    value = scope.lookup(name)
    if value is None:
        raise located(FrontendError, ctx.describe(node), f"input {name!r} is not defined before it is used")
    return value


def constant(ctx: Context, scope: Scope, graph: Graph, name: str, array: np.ndarray) -> Value:
    """Bind ``name`` to a Constant node holding ``array``."""
    value = Builder(graph).const(array, name=name)
    scope.bind(name, value)
    ctx.constants[name] = array
    return value


def attribute(ctx: Context, node: onnx.NodeProto, attr: onnx.AttributeProto) -> Any:
    """An attribute's Python value: tensors as arrays, graphs left as GraphProto for their translator."""
    if attr.ref_attr_name:
        raise located(FrontendError, ctx.describe(node), f"attribute {attr.name!r} refers to a function attribute")
    value = helper.get_attribute_value(attr)
    if isinstance(value, onnx.TensorProto):
        return _array(ctx, value, f"{ctx.describe(node)} attribute {attr.name!r}")
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode("utf-8", errors="replace") for v in value]
    return value


def _constant_value(ctx: Context, node: onnx.NodeProto, attrs: dict[str, Any]) -> np.ndarray:
    if "value" in attrs:
        return np.asarray(attrs["value"])
    for key, dtype in (("value_float", np.float32), ("value_int", np.int64)):
        if key in attrs:
            return np.array(attrs[key], dtype=dtype)
    for key, dtype in (("value_floats", np.float32), ("value_ints", np.int64)):
        if key in attrs:
            return np.array(attrs[key], dtype=dtype)
    raise located(FrontendError, ctx.describe(node), "Constant without a supported value attribute")


def _array(ctx: Context, tensor: onnx.TensorProto, what: str) -> np.ndarray:
    """``tensor``'s values: the original's, for a stand-in of the stripped model."""
    return ctx.weights.array(tensor, what)

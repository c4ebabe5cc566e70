"""Check an ONNX model against the ONNX spec before any of it is translated, as onnx.checker and
onnxruntime do, so that a malformed model is one error naming the node — never a wrong answer or a
crash deep inside a pass or TensorRT.

Two walks, each visiting every node once (names and types in dicts; schemas cached per op and opset):

* :func:`validate_model`, before shape inference: IR version and opsets; names defined once (SSA), and
  never redefining a name of an enclosing graph; each node against its schema — the op exists in the
  model's opset, its attributes are known, typed as the schema says and present when required, its
  inputs and outputs as many as the schema allows; every tensor the file holds (see :mod:`.tensors`; the
  originals of a stripped model's stand-ins, :mod:`.weightless`). onnx's own checker then runs on the
  stripped model as a backstop for whatever this walk does not look at.
* :func:`validate_types`, on the inferred model: each operand's type against the schema's type
  constraints (Loop's ``M`` is an int64 tensor, ``cond`` a bool one); Loop's ``M`` and ``cond`` hold
  one element and its body's inputs and outputs have the types the node gives them; an ``axis``
  names a dim of the input it indexes; Transpose's ``perm`` permutes its input's dims.
  :func:`check_output_types` compares the declared graph output types with what inference computes.

ONNX's shape inference, run strict by the importer, is the backstop for the rest (see :mod:`.inference`).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

import onnx
from onnx import AttributeProto, TensorProto
from onnx.defs import OpSchema

from loopc.errors import FrontendError, LoopcError, UnsupportedOpError
from loopc.frontend.onnx import newer_opsets, weightless
from loopc.frontend.onnx.weightless import Weights
from loopc.ir.ops import traits
from loopc.spelling import warn

log = logging.getLogger(__name__)

#: The oldest IR version ONNX's checker reads (every exporter since 2017 writes a newer one).
MIN_IR_VERSION = 3
DEFAULT_DOMAINS = ("", "ai.onnx")

_SINGLE = OpSchema.FormalParameterOption.Single
_VARIADIC = OpSchema.FormalParameterOption.Variadic
_ATTR_TYPES = {v: k for k, v in AttributeProto.AttributeType.items()}
#: INT attributes whose value is a TensorProto data type.
_DTYPE_ATTRS = frozenset({"to", "dtype", "output_dtype"})
_DATA_TYPES = frozenset(v for v in TensorProto.DataType.values() if v != TensorProto.UNDEFINED)
_ELEM_NAMES = {v: k.lower() for k, v in TensorProto.DataType.items() if v}
_CONSTANT_VALUES = ("value", "value_float", "value_floats", "value_int", "value_ints", "value_string",
                    "value_strings", "sparse_value")
#: Deprecated ops read all the same: the frontend rewrites them into their replacement's form
#: (GroupNormalization-18's per-group scale and bias become opset 21's per-channel ones).
UPGRADED_DEPRECATED = frozenset({"GroupNormalization"})
#: What an operand is called in messages, where its formal name alone says little.
_ROLES = {("Loop", "M"): "trip count M", ("Loop", "cond"): "condition cond", ("If", "cond"): "condition cond"}


def default_opset(proto: onnx.ModelProto, source: str) -> int:
    """The model's default-domain opset, after checking its IR version and every opset import.

    An IR version or opset newer than the installed onnx package knows is read as the newest loopc knows,
    with a warning (see :mod:`.newer_opsets`); its ops are checked node by node (:func:`validate_model`)."""
    if not MIN_IR_VERSION <= proto.ir_version <= newer_opsets.newest_ir_version():
        raise FrontendError(f"{source}: ir_version {proto.ir_version} is not one this onnx package reads "
                            f"({MIN_IR_VERSION} to {onnx.IR_VERSION}; loopc reads up to "
                            f"{newer_opsets.newest_ir_version()} as {onnx.IR_VERSION})")
    versions: dict[str, int] = {}
    for entry in proto.opset_import:
        domain = "" if entry.domain in DEFAULT_DOMAINS else entry.domain
        if domain in versions:
            raise FrontendError(f"{source}: opset_import names domain {entry.domain or 'ai.onnx'!r} twice")
        if entry.version < 1:
            raise FrontendError(f"{source}: opset_import gives domain {entry.domain or 'ai.onnx'!r} "
                                f"version {entry.version}; opset versions start at 1")
        versions[domain] = entry.version
    opset = versions.get("", 0)
    if opset < 1:
        raise FrontendError(f"{source}: the model imports no default-domain opset (ONNX's ops need one)",
                            hint="add an opset_import for domain '' (ai.onnx)")
    newer = newer_opsets.notice(proto.ir_version, opset, source)
    if newer is not None:
        warn(newer)
    return opset


def validate_model(proto: onnx.ModelProto, source: str, opset: int, weights: Weights | None = None) -> None:
    """Names, node schemas and tensors at every depth; then onnx's checker (see the module docstring).
    ``weights``: what the stand-ins of a stripped ``proto`` stand for."""
    initialized = {init.name for init in proto.graph.initializer}
    for vi in proto.graph.input:
        which = vi.type.WhichOneof("value")
        untyped = which is None or which == "tensor_type" and not vi.type.tensor_type.elem_type
        if untyped and vi.name not in initialized:
            raise FrontendError(f"{source}: graph input {vi.name!r} declares no "
                                f"{'type' if which is None else 'element type'}",
                                hint="give each model input its element type (and shape)")
    weights = weights if weights is not None else Weights()
    structure = _Structure(opset, {("" if e.domain in DEFAULT_DOMAINS else e.domain): e.version
                                   for e in proto.opset_import}, weights)
    structure.graph(proto.graph, "the main graph")
    _onnx_checker(proto, source, opset, weights)


def validate_types(inferred: onnx.ModelProto, opset: int) -> None:
    """Operand types against the schemas' type constraints, and Loop's M and cond, at every depth."""
    _Types(opset).graph(inferred.graph)


def check_output_types(graph: onnx.GraphProto, declared: list[int], opset: int, source: str) -> None:
    """The main graph's outputs as ``declared`` (elem types, 0 where none) against what inference computed."""
    producers = {name: node for node in graph.node for name in node.output if name}
    for vi, want in zip(graph.output, declared):
        got = vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else 0
        if want and got and want != got:
            message = (f"graph output {vi.name!r} is declared {_dtype(want)}, but the graph computes "
                       f"{_dtype(got)} there")
            node = producers.get(vi.name)
            if node is None:
                raise FrontendError(f"{source}: {message}")
            raise node_error(node, opset, message, hint="fix the output's declared type or the node")


# ------------------------------------------------------------------------------------- helpers


def label(node: onnx.NodeProto) -> str:
    """How a node is named in messages: its name, else its first output."""
    return node.name or next((o for o in node.output if o), "?")


#: Why a custom domain's op is not read, and what to do, by domain (any other domain: ``None``).
_DOMAIN_HINTS = {
    "com.microsoft": "it is one of onnxruntime's contrib ops, which onnxruntime's optimizers and fusion tools write: "
                     "give loopc the model from before them, or export it with standard ONNX ops",
    None: "expand it into standard ONNX ops before exporting the model (an op only a custom runtime or plugin "
          "implements cannot be built)",
}


def foreign_op(node: onnx.NodeProto, version: int | None) -> LoopcError:
    """The refusal of ``node``, an op of a domain other than ONNX's default one, whose opset the model imports
    at ``version`` (None: it imports none): named with its domain and that domain's version."""
    opset = f"{node.domain} opset {version}" if version is not None else f"domain {node.domain}"
    return UnsupportedOpError(
        f"op {node.op_type!r} of domain {node.domain!r} is not one loopc reads: loopc converts the ops of ONNX's "
        "default domain that `loopc ops` lists", node=label(node), op=node.op_type, opset=opset,
        hint=_DOMAIN_HINTS.get(node.domain, _DOMAIN_HINTS[None]))


def node_error(node: onnx.NodeProto, opset: int, message: str, cls: type[LoopcError] = FrontendError,
               hint: str | None = None) -> LoopcError:
    """An error about ``node``: its name, op and opset as fields (the message shows all three)."""
    return cls(message, node=label(node), op=node.op_type, opset=opset, hint=hint)


@dataclass(frozen=True)
class _Param:
    """A formal input: what the checks need of it, read from the schema once."""

    name: str
    type_str: str
    required: bool  # a Single input: never left empty
    allowed: frozenset[str]  # the types it takes
    binds: bool  # its type parameter must be one type across the node's operands


@dataclass(frozen=True)
class _Op:
    """One op's schema at one opset, as plain Python (pybind's accessors build new objects on each call)."""

    since: int
    deprecated: bool
    inputs: tuple[_Param, ...]
    inputs_range: tuple[int, int]
    outputs_range: tuple[int, int]
    attributes: dict[str, int]  # name -> AttributeProto type
    required: tuple[str, ...]  # the attributes a node must give


@functools.cache
def _op(op: str, opset: int) -> _Op | None:
    try:
        schema = onnx.defs.get_schema(op, opset, "")
    except onnx.defs.SchemaError:
        found = newer_opsets.added_schema(op, opset)  # added by an opset the installed onnx lacks
        if found is None:
            return None
        schema = found
    constraints = {c.type_param_str: frozenset(c.allowed_type_strs) for c in schema.type_constraints}
    inputs = tuple(
        _Param(p.name, p.type_str, p.option == _SINGLE, constraints.get(p.type_str, frozenset({p.type_str})),
               p.type_str in constraints and (p.option != _VARIADIC or p.is_homogeneous))
        for p in schema.inputs)
    attributes = schema.attributes
    # AttrType is a pybind11 enum: onnx's stub leaves out the .value it has.
    types = {name: int(a.type.value) for name, a in attributes.items()}  # type: ignore[attr-defined]
    return _Op(schema.since_version, schema.deprecated, inputs, (schema.min_input, schema.max_input),
               (schema.min_output, schema.max_output), types,
               tuple(name for name, a in attributes.items() if a.required))


def _count(low: int, high: int, noun: str) -> str:
    plural = f"{noun}s"
    if low == high:
        return f"exactly {low} {noun if low == 1 else plural}"
    if high >= 2**31 - 1:
        return f"at least {low} {noun if low == 1 else plural}"
    return f"{low} to {high} {plural}"


def _dtype(elem: int) -> str:
    return _display(f"tensor({_ELEM_NAMES.get(elem, str(elem))})")


def _display(type_str: str) -> str:
    """``tensor(float)`` → ``float32``, as NumPy (and loopc's other messages) name types."""
    inner = type_str[len("tensor("):-1] if type_str.startswith("tensor(") else type_str
    return {"float": "float32", "double": "float64"}.get(inner, inner)


def _type_str(tp: onnx.TypeProto | None) -> str | None:
    """A TypeProto as the schemas spell types (``tensor(float)``, ``seq(tensor(int64))``); None if unknown."""
    if tp is None:
        return None
    which = tp.WhichOneof("value")
    if which == "tensor_type":
        name = _ELEM_NAMES.get(tp.tensor_type.elem_type)
        return f"tensor({name})" if name else None
    if which in ("sequence_type", "optional_type"):
        inner = _type_str(getattr(tp, which).elem_type)
        return f"{'seq' if which == 'sequence_type' else 'optional'}({inner})" if inner else None
    return None


def _allowed(types: Iterable[str]) -> str:
    """``an int64 tensor``, ``a float16, float32 or float64 tensor``."""
    tensors = sorted(_display(t) for t in types if t.startswith("tensor("))
    if not tensors:
        return "one of " + ", ".join(sorted(types))
    shown = tensors if len(tensors) <= 6 else tensors[:6] + [f"{len(tensors) - 6} more"]
    text = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]
    return f"{'an' if text[0] in 'aeio' else 'a'} {text} tensor"


_What = TypeVar("_What")


class _Scoped(Generic[_What]):
    """Names visible in a graph and its enclosing graphs, with the depth that defined each (one dict)."""

    def __init__(self) -> None:
        self.where: dict[str, tuple[int, _What]] = {}
        self.depth = 0
        self._frames: list[list[tuple[str, tuple[int, _What] | None]]] = []

    def enter(self) -> None:
        self.depth += 1
        self._frames.append([])

    def leave(self) -> None:
        for name, previous in reversed(self._frames.pop()):
            if previous is None:
                del self.where[name]
            else:
                self.where[name] = previous
        self.depth -= 1

    def define(self, name: str, what: _What) -> None:
        self._frames[-1].append((name, self.where.get(name)))
        self.where[name] = (self.depth, what)


# ----------------------------------------------------------------------------------- structure


class _Structure:
    """Names, schemas, attributes, arity and tensors, graph by graph."""

    def __init__(self, opset: int, domains: dict[str, int], weights: Weights) -> None:
        self.opset = opset
        self.domains = domains  #: every imported domain's version (the default domain as "")
        self.names: _Scoped[str | onnx.NodeProto | onnx.TensorProto] = _Scoped()
        self.weights = weights

    def graph(self, graph: onnx.GraphProto, where: str) -> None:
        names = self.names
        names.enter()
        inputs: set[str] = set()
        for vi in graph.input:
            if not vi.name:
                raise FrontendError(f"{where}: an input has no name")
            if vi.name in inputs:
                raise FrontendError(f"{where}: input {vi.name!r} is declared twice")
            inputs.add(vi.name)
            names.define(vi.name, "a graph input")
        for init in graph.initializer:
            what = f"initializer {init.name!r}"
            if not init.name:
                raise FrontendError(f"{where}: an initializer has no name")
            if init.name not in inputs and not self._repeated(init, where):  # an input's default is allowed
                self._fresh(init.name, what, where)
                names.define(init.name, init)
            self.weights.check(init, what)
        for sparse in graph.sparse_initializer:
            raise UnsupportedOpError(f"{where}: sparse initializer {sparse.values.name!r} is not supported; "
                                     f"store it as a dense initializer")
        for node in graph.node:
            outputs = list(node.output)
            self.node(node, list(node.input), outputs)
            for name in outputs:
                if name:
                    if name in names.where:
                        self._fresh(name, f"output {name!r}", where, node)
                    names.define(name, node)
        for vi in graph.output:
            if vi.name not in names.where:
                raise FrontendError(f"{where}: output {vi.name!r} is never produced")
        names.leave()

    def _repeated(self, init: onnx.TensorProto, where: str) -> bool:
        """Whether ``init`` repeats an enclosing graph's initializer of the same name: one value, as onnx.checker and
        onnxruntime read it (graph tools and quantizers copy an outer weight into a loop body). Other values under
        the same name are an error naming both."""
        prior = self.names.where.get(init.name)
        if prior is None or prior[0] == self.names.depth or not isinstance(prior[1], onnx.TensorProto):
            return False
        first, second = (self.weights.array(t, f"initializer {init.name!r}") for t in (prior[1], init))
        if first.dtype != second.dtype or first.shape != second.shape or first.tobytes() != second.tobytes():
            raise FrontendError(f"{where}: initializer {init.name!r} has other values than the initializer of that "
                                "name in an enclosing graph; ONNX names a value once in a graph and the graphs it "
                                "encloses", hint="rename one of them")
        return True

    def _fresh(self, name: str, what: str, where: str, node: onnx.NodeProto | None = None) -> None:
        """``name`` must not be defined yet, here or in an enclosing graph (ONNX's SSA rule)."""
        prior = self.names.where.get(name)
        if prior is None:
            return
        depth, by = prior
        if isinstance(by, onnx.NodeProto):
            by = f"node {label(by)!r}"
        elif isinstance(by, onnx.TensorProto):
            by = f"initializer {by.name!r}"
        if depth == self.names.depth:
            message = f"{what} is defined twice (first by {by})"
        else:
            message = (f"{what} redefines a name of an enclosing graph (defined there by {by}); "
                       f"ONNX names a value once in a graph and the graphs it encloses")
        if node is None:
            raise FrontendError(f"{where}: {message}")
        raise node_error(node, self.opset, message)

    def node(self, node: onnx.NodeProto, inputs: list[str], outputs: list[str]) -> None:
        if node.domain not in DEFAULT_DOMAINS:
            raise foreign_op(node, self.domains.get(node.domain))
        where = self.names.where
        for name in inputs:
            if name and name not in where:
                raise node_error(node, self.opset, f"input {name!r} is not defined before it is used")
        op = _op(node.op_type, self.opset)
        if op is None:
            raise node_error(node, self.opset, self._unknown(node.op_type), UnsupportedOpError
                             if self.opset > onnx.defs.onnx_opset_version() else FrontendError)
        changed = newer_opsets.changed_in(node.op_type, self.opset)
        if changed is not None:
            raise node_error(node, self.opset, f"{node.op_type} changed in opset {changed[0]} ({changed[1]}), which "
                             f"the installed onnx package does not define (it knows opsets up to "
                             f"{onnx.defs.onnx_opset_version()}): loopc would read it with its older meaning",
                             UnsupportedOpError, hint=f"install {changed[1]} or newer, or export the model with "
                             f"opset {changed[0] - 1}")
        if op.deprecated and node.op_type not in UPGRADED_DEPRECATED:
            raise node_error(node, self.opset, f"{node.op_type} is deprecated in opset {self.opset}",
                             hint="export the model with an opset that still defines it, or with its replacement")
        self._arity(node, op, inputs, outputs)
        if op.required or node.attribute:
            self._attributes(node, op)
        elif node.op_type == "Constant":
            self._constant(node, set())

    def _unknown(self, op: str) -> str:
        known = newer_opsets.newest_opset()
        newest = _op(op, known)
        if newest is None and self.opset > onnx.defs.onnx_opset_version():
            return (f"{op!r} is not an op of any opset loopc knows (up to {known}, the installed onnx package "
                    f"up to {onnx.defs.onnx_opset_version()}); the model's opset {self.opset} may have added it")
        if newest is None:
            return f"{op!r} is not an ONNX op"
        return f"{op} does not exist in opset {self.opset}; it was added in opset {newest.since}"

    def _arity(self, node: onnx.NodeProto, op: _Op, inputs: list[str], outputs: list[str]) -> None:
        for kind, names, (low, high) in (("input", inputs, op.inputs_range), ("output", outputs, op.outputs_range)):
            if not low <= len(names) <= high:
                raise node_error(node, self.opset, f"{node.op_type} takes {_count(low, high, kind)}, "
                                 f"the node has {len(names)}")
        if "" in inputs:
            last = len(op.inputs) - 1
            for i, name in enumerate(inputs):
                param = op.inputs[min(i, last)]
                if not name and param.required:
                    raise node_error(node, self.opset, f"input {param.name} is required, but the node leaves "
                                     f"it empty")

    def _attributes(self, node: onnx.NodeProto, op: _Op) -> None:
        seen: set[str] = set()
        for attr in node.attribute:
            self._attribute(node, op, attr, seen)
            seen.add(attr.name)
        for name in op.required:
            if name not in seen:
                raise node_error(node, self.opset, f"required attribute {name!r} is missing")
        if node.op_type == "Constant":
            self._constant(node, seen)

    def _constant(self, node: onnx.NodeProto, seen: set[str]) -> None:
        """Exactly one value, and one loopc reads (the schema makes each optional)."""
        given = [k for k in _CONSTANT_VALUES if k in seen]
        if len(given) != 1:
            raise node_error(node, self.opset, f"a Constant takes exactly one of {', '.join(_CONSTANT_VALUES)}; "
                             f"this one has {', '.join(given) or 'none'}")
        if given[0] in ("value_string", "value_strings"):
            raise node_error(node, self.opset, f"{given[0]}: string constants are not supported (TensorRT has no "
                             f"string type)", UnsupportedOpError)

    def _attribute(self, node: onnx.NodeProto, op: _Op, attr: AttributeProto, seen: set[str]) -> None:
        name = attr.name
        if name in seen:
            raise node_error(node, self.opset, f"attribute {name!r} is given twice")
        if attr.ref_attr_name:
            raise node_error(node, self.opset, f"attribute {name!r} refers to {attr.ref_attr_name!r} "
                             f"(ref_attr_name), which only a node inside a function may do")
        want = op.attributes.get(name)
        if want is None:
            takes = ", ".join(sorted(op.attributes)) or "none"
            raise node_error(node, self.opset, f"{node.op_type} has no attribute {name!r} (it takes: {takes})")
        if attr.type != want:
            raise node_error(node, self.opset, f"attribute {name!r} is {_ATTR_TYPES.get(attr.type, attr.type)}; "
                             f"{node.op_type} takes it as {_ATTR_TYPES[want]}")
        if want == AttributeProto.INT:
            if name in _DTYPE_ATTRS and attr.i not in _DATA_TYPES:
                raise node_error(node, self.opset, f"attribute {name}={attr.i} is not an ONNX data type")
        elif want in (AttributeProto.SPARSE_TENSOR, AttributeProto.SPARSE_TENSORS):
            raise node_error(node, self.opset, f"attribute {name!r} is a sparse tensor, which loopc does not "
                             f"read; store the value as a dense tensor", UnsupportedOpError)
        elif want in (AttributeProto.TENSOR, AttributeProto.TENSORS):
            for tensor in [attr.t] if want == AttributeProto.TENSOR else attr.tensors:
                try:
                    self.weights.check(tensor, f"attribute {name!r}")
                except LoopcError as exc:
                    raise node_error(node, self.opset, exc.message, type(exc), exc.hint) from None
        elif want in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
            for graph in [attr.g] if want == AttributeProto.GRAPH else attr.graphs:
                self._signature(node, name, graph)
                self.graph(graph, f"node {label(node)!r} ({node.op_type}, opset {self.opset}) {name}")

    def _signature(self, node: onnx.NodeProto, name: str, graph: onnx.GraphProto) -> None:
        """A body's inputs and outputs as many as its node gives and takes (checked before the body's own
        nodes, whose errors would otherwise hide the cause)."""
        ins, outs = len(graph.input), len(graph.output)
        if node.op_type == "Loop":
            n = len(node.input) - 2
            k = len(node.output) - n
            if k < 0:
                message = f"{n} loop-carried inputs but only {len(node.output)} outputs"
            elif ins != 2 + n:
                message = (f"the body has {ins} inputs; a Loop with {n} loop-carried value(s) needs {2 + n} "
                           f"(iteration_num, cond, then the carried values)")
            elif outs != 1 + n + k:
                message = (f"the body has {outs} outputs; a Loop with {n} carried value(s) and {k} scan output(s) "
                           f"needs {1 + n + k} (cond, carried..., scan...)")
            else:
                return
        elif node.op_type == "Scan":
            given = len(node.input) - (1 if self.opset < 9 else 0)  # Scan-8 starts with sequence_lens
            if ins == given and outs == len(node.output):
                return
            message = (f"the body has {ins} inputs and {outs} outputs; this Scan has {given} state and scan "
                       f"inputs and {len(node.output)} outputs, and its body needs as many of each")
        elif node.op_type == "If":
            if ins:
                message = f"{name} declares {ins} inputs; If branches take none"
            elif outs != len(node.output):
                message = f"{name} has {outs} outputs, the node {len(node.output)}"
            else:
                return
        else:
            return
        raise node_error(node, self.opset, message)


def _onnx_checker(proto: onnx.ModelProto, source: str, opset: int, weights: Weights) -> None:
    """onnx.checker as a backstop, its error made one line naming the node (its context names it).

    The checker wants every main-graph input and output to declare its shape, and every output its
    element type; onnxruntime and loopc take an input of unknown rank and infer the outputs, so for
    the check an undeclared one is given a placeholder, then cleared.
    """
    placeholders = []
    ir_version = proto.ir_version
    proto.ir_version = min(ir_version, onnx.IR_VERSION)  # a newer one is read as the newest onnx reads (warned)
    for vi in proto.graph.input:
        if vi.type.HasField("tensor_type") and not vi.type.tensor_type.HasField("shape"):
            vi.type.tensor_type.shape.SetInParent()
            placeholders.append((vi.type.tensor_type, "shape"))
    for vi in proto.graph.output:
        if vi.type.WhichOneof("value") is None:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT
            placeholders.append((vi.type, "tensor_type"))
        elif vi.type.HasField("tensor_type"):
            tensor = vi.type.tensor_type
            if not tensor.elem_type:
                tensor.elem_type = TensorProto.FLOAT
                placeholders.append((tensor, "elem_type"))
            if not tensor.HasField("shape"):
                tensor.shape.SetInParent()
                placeholders.append((tensor, "shape"))
    try:
        onnx.checker.check_model(weightless.for_checker(proto, weights))
    except onnx.checker.ValidationError as exc:
        text = str(exc)
        first = next((line.strip() for line in text.splitlines() if line.strip()), "invalid model")
        found = re.search(r"Name: (\S*) OpType: (\S+)", text)
        if found and found[2] in UPGRADED_DEPRECATED and "is deprecated" in first:
            log.debug("onnx.checker stopped at %s, which loopc upgrades: %s", found[2], first)
            return
        if found and newer_opsets.added_schema(found[2], opset) is not None:
            log.debug("onnx.checker stopped at %s, an op newer than the installed onnx: %s", found[2], first)
            return
        message = f"{first} (onnx.checker)"
        if found:
            raise FrontendError(message, node=found[1] or "?", op=found[2], opset=opset) from None
        raise FrontendError(f"{source}: {message}") from None
    except Exception as exc:  # the checker is a backstop, not the authority: its own failures are not the model's
        log.debug("onnx.checker could not check %s: %s", source, exc)
    finally:
        proto.ir_version = ir_version
        for message, field in reversed(placeholders):
            message.ClearField(field)


# --------------------------------------------------------------------------------------- types


class _Types:
    """Operand types (as inference left them) against the schemas' type constraints."""

    def __init__(self, opset: int) -> None:
        self.opset = opset
        self.types: _Scoped[tuple[str, onnx.TypeProto | onnx.TensorProto]] = _Scoped()

    def graph(self, graph: onnx.GraphProto) -> None:
        types = self.types
        types.enter()
        for vi in [*graph.input, *graph.value_info, *graph.output]:
            type_str = _type_str(vi.type)
            if type_str is not None:
                types.define(vi.name, (type_str, vi.type))
        for init in graph.initializer:
            types.define(init.name, (f"tensor({_ELEM_NAMES.get(init.data_type)})", init))
        for node in graph.node:
            self.node(node)
            for attr in node.attribute:
                if attr.type == AttributeProto.GRAPH:
                    self.graph(attr.g)
                elif attr.type == AttributeProto.GRAPHS:
                    for sub in attr.graphs:
                        self.graph(sub)
        types.leave()

    def node(self, node: onnx.NodeProto) -> None:
        op = _op(node.op_type, self.opset)
        if op is None or not op.inputs:
            return
        where = self.types.where
        last = len(op.inputs) - 1
        bound: dict[str, tuple[str, str, _Param]] = {}
        for i, name in enumerate(node.input):
            found = where.get(name) if name else None
            if found is None:
                continue
            actual = found[1][0]
            param = op.inputs[i if i < last else last]
            if actual not in param.allowed:
                raise node_error(node, self.opset, f"{_role(node, param)} {name!r} must be "
                                 f"{_allowed(param.allowed)}, not {_display(actual)}")
            if param.binds:
                first, first_name, first_param = bound.setdefault(param.type_str, (actual, name, param))
                if first != actual:
                    raise node_error(node, self.opset, f"{_role(node, param)} {name!r} is {_display(actual)}, but "
                                     f"{_role(node, first_param)} {first_name!r} is {_display(first)}; "
                                     f"{node.op_type} takes one type for both")
        if traits(node.op_type).axis is not None:
            self._axis(node)
        elif node.op_type == "Transpose":
            self._perm(node)
        elif node.op_type == "Loop":
            self._loop(node)

    def _axis(self, node: onnx.NodeProto) -> None:
        """An ``axis`` given to an op that indexes its first input's dims with it is one of those dims."""
        axis = next((a.i for a in node.attribute if a.name == "axis" and a.type == AttributeProto.INT), None)
        found = self.types.where.get(node.input[0]) if axis is not None and node.input and node.input[0] else None
        dims = _dims(found[1][1]) if found is not None else None
        if axis is None or dims is None:
            return
        if not -len(dims) <= axis < len(dims):
            raise node_error(node, self.opset, f"attribute axis={axis} is out of range for input {node.input[0]!r} "
                             f"of rank {len(dims)} (it must lie in [{-len(dims)}, {len(dims) - 1}])")

    def _perm(self, node: onnx.NodeProto) -> None:
        """Transpose's ``perm`` lists each dim of its input once (TensorRT would index dims with it)."""
        perm = next((list(a.ints) for a in node.attribute if a.name == "perm" and a.type == AttributeProto.INTS), None)
        found = self.types.where.get(node.input[0]) if perm is not None and node.input and node.input[0] else None
        dims = _dims(found[1][1]) if found is not None else None
        if perm is None or dims is None:
            return
        if sorted(perm) != list(range(len(dims))):
            raise node_error(node, self.opset, f"attribute perm={perm} is not a permutation of the dims of input "
                             f"{node.input[0]!r}, which has rank {len(dims)}",
                             hint=f"give perm each of 0 to {len(dims) - 1} once" if dims else
                             "a rank-0 input takes perm=[] (or none)")

    def _loop(self, node: onnx.NodeProto) -> None:
        """M and cond, and the body's cond input and output, hold one element in at most one dim; the
        body's inputs and outputs have the types the node gives them: an int64 iteration number, bool
        conds, and each carried value's own type. (A body that does not fit the node is its translator's to report.)"""
        where = self.types.where
        operands = []
        for role, name in zip(("trip count M", "condition cond"), node.input):
            found = where.get(name) if name else None
            if found is not None:
                operands.append((role, name, found[1][1]))
        body = next((a.g for a in node.attribute if a.name == "body" and a.type == AttributeProto.GRAPH), None)
        if body is not None and len(body.input) == len(node.input) and len(body.output) >= len(node.input) - 1:
            operands += self._loop_body(node, list(body.input), list(body.output))
        for role, name, typed in operands:
            dims = _dims(typed)
            if dims is not None and any(isinstance(d, int) and d != 1 for d in dims):
                raise node_error(node, self.opset, f"{role} {name!r} must hold one element, not shape {dims}")
            if dims is not None and len(dims) > 1:  # one element, but a TensorRT trip limit reads a scalar
                raise node_error(node, self.opset, f"{role} {name!r} has shape {dims}; loopc takes a scalar (or "
                                 f"[1]) there", UnsupportedOpError, hint="reshape it to a scalar before the Loop")

    def _loop_body(self, node: onnx.NodeProto, ins: list[onnx.ValueInfoProto],
                   outs: list[onnx.ValueInfoProto]) -> list[tuple[str, str, onnx.TypeProto]]:
        """The body's inputs and outputs against the node's; returns its cond input and output."""
        fixed = [(ins[0], "iteration number input", "tensor(int64)"), (ins[1], "cond input", "tensor(bool)"),
                 (outs[0], "cond output", "tensor(bool)")]
        for vi, role, want in fixed:
            actual = _type_str(vi.type)
            if actual is not None and actual != want:
                raise node_error(node, self.opset, f"the body's {role} {vi.name!r} must be {_allowed([want])}, "
                                 f"not {_display(actual)}")
        if iteration_rank(ins[0]) not in (None, 0, 1):
            raise node_error(node, self.opset, f"the body's iteration number input {ins[0].name!r} is declared "
                             f"{_dims(ins[0].type)}; ONNX gives iteration_num as a scalar",
                             hint="declare it a scalar (onnxruntime also takes [1])")
        for name, vi_in, vi_out in zip(node.input[2:], ins[2:], outs[1:]):
            found = self.types.where.get(name) if name else None
            outer = found[1][0] if found is not None else None
            for role, vi in (("input", vi_in), ("output", vi_out)):
                inner = _type_str(vi.type)
                if outer and inner and inner != outer:
                    raise node_error(node, self.opset, f"loop-carried {name!r} is {_display(outer)}, but the body's "
                                     f"{role} {vi.name!r} is {_display(inner)}")
        return [(f"the body's {role}", vi.name, vi.type) for vi, role, _ in fixed[1:]]


def iteration_rank(vi: onnx.ValueInfoProto) -> int | None:
    """How a Loop body declares its iteration number: None (no shape), 0 (a scalar, as the spec gives it),
    1 (``[1]``, as paddle2onnx writes it and onnxruntime feeds it), or -1 for anything else."""
    dims = _dims(vi.type)
    if dims is None:
        return None
    if not dims:
        return 0
    return 1 if len(dims) == 1 and dims[0] in (1, "?") else -1


def _role(node: onnx.NodeProto, param: _Param) -> str:
    return _ROLES.get((node.op_type, param.name), f"input {param.name}")


def _dims(typed: onnx.TypeProto | onnx.TensorProto) -> list[int | str] | None:
    """The static dims of a typed value or an initializer (``?`` where unknown); None if its rank is unknown."""
    if isinstance(typed, onnx.TensorProto):
        return [int(d) for d in typed.dims]
    if not typed.HasField("tensor_type") or not typed.tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else "?" for d in typed.tensor_type.shape.dim]

"""The types of an ONNX model's values: ONNX's shape inference, made sound for loop-carried values.

ONNX's inference types a Loop body from what the body declares for its carried inputs, and
exporters declare what they saw: PyTorch types a list that grows by one element a trip by its
empty initial value (``i64[0]``, while trip 1 carries ``i64[1]``); onnxscript and paddle2onnx
declare nothing; and ONNX's inference leaves a Loop's final carried values without dims. So three
corrections run around inference, and inference runs again after each:

* a carried input the body leaves untyped gets the rank of its initial value, every dim unknown (a
  carried value may change its dims from trip to trip, never its rank);
* a Loop's final carried value has the dims its initial value and its next value share (it is one
  of them), where its type does not say more;
* a carried input keeps a declared dim only where the next value, inferred with that declaration,
  has the same dim — then every trip has it, by induction. Where the next value says otherwise or
  nothing, inference runs again from the model as written with that dim unknown, and without what
  that body declares of its next values' dims and of its other values (an exporter wrote those from
  the same first trip), until every carried dim left agrees with its next value's.

A declaration that inference neither contradicts nor confirms (a next value it cannot infer) is
trusted, as every other declared type is.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto, helper

from loopc.errors import LoopcError, UnsupportedOpError
from loopc.frontend.onnx import declarations, validate
from loopc.frontend.onnx.inference import inference_error
from loopc.spelling import warn

#: Rounds of inference at most: declared ranks and result dims flow one loop level per round, and a
#: dim found unproven may make another one unproven (it fed it), one round each. A model that needs
#: more (loops nested deeper than this) keeps what the last round found.
MAX_ROUNDS = 16

#: The ops of the default domain that hold graphs; only their nodes are searched for loops.
_HOLDS_GRAPHS = frozenset(
    schema.name for schema in onnx.defs.get_all_schemas_with_history()
    if schema.domain in ("", "ai.onnx")
    and any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in schema.attributes.values())
)

#: Where a Loop's body is: (node index, attribute name) from the main graph down, level by level.
Path = tuple[tuple[int, str], ...]


def infer_types(proto: onnx.ModelProto, source: str,
                opset: int) -> tuple[dict[str, onnx.TypeProto], onnx.ModelProto, LoopcError | None]:
    """Value types by name (at every depth), the inferred model, and strict inference's refusal if any.

    The main graph's declared output element types are set aside while inference runs, so that it
    says what the graph computes there; a declared type the graph contradicts is an error. The first
    run is strict, as onnx.checker's is. Where it fails, declared shapes the graph contradicts are
    replaced by the computed ones, with a warning each (:mod:`loopc.frontend.onnx.declarations`), and it
    runs again: a declared type or shape, or an attribute, that a node's inference still contradicts is
    returned as an error naming the node (raised after loopc's own type checks, whose messages say more);
    inference then runs again leniently for the types.
    """
    declared = [vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else 0 for vi in proto.graph.output]
    inferred, refusal, failed = _strict_outputs_free(proto, declared, opset)
    if failed and (fixed := _computed_shapes_win(proto)) is not None:
        proto = fixed
        inferred, refusal, _ = _strict_outputs_free(proto, declared, opset)
    if refusal is None:  # else strict inference found the cause, which may lie inside a body
        validate.check_output_types(inferred.graph, declared, opset, source)
    for vi, elem in zip(inferred.graph.output, declared):
        if elem:
            vi.type.tensor_type.elem_type = elem
    inferred = _sound_for_loops(proto, inferred)
    types: dict[str, onnx.TypeProto] = {}

    def collect(graph: onnx.GraphProto, holder: onnx.NodeProto | None) -> None:
        for vi in [*graph.input, *graph.output, *graph.value_info]:
            known = types.get(vi.name)
            if known is not None and holder is not None and _conflict(known, vi.type):
                raise _reused_name(holder, vi.name, known, vi.type, opset)
            types[vi.name] = vi.type
        for _, node, body in _nested(graph):
            collect(body, node)

    collect(inferred.graph, None)
    return types, inferred, refusal


def _strict_outputs_free(proto: onnx.ModelProto, declared: list[int],
                         opset: int) -> tuple[onnx.ModelProto, LoopcError | None, bool]:
    """Strict inference (see :func:`_strict`) with the main graph's output element types set aside."""
    for vi in proto.graph.output:
        if vi.type.HasField("tensor_type"):
            vi.type.tensor_type.elem_type = 0
    try:
        return _strict(proto, opset)
    finally:
        for vi, elem in zip(proto.graph.output, declared):
            if elem:
                vi.type.tensor_type.elem_type = elem


def _computed_shapes_win(proto: onnx.ModelProto) -> onnx.ModelProto | None:
    """``proto`` with the declared shapes the graph contradicts replaced, each with a warning (see
    :mod:`loopc.frontend.onnx.declarations`); None where it contradicts none, or contradicts a Loop body's
    carried input (onnxruntime types the body by that declaration, and refuses some such models)."""
    computed = _inferred(declarations.set_aside(proto))
    for _ in range(MAX_ROUNDS):  # carried inputs get their initial values' ranks, one loop level a round
        if not _declare_carried_types(computed.graph, {}):
            break
        computed = _inferred(computed)
    found = declarations.corrected(proto, computed)
    if found is None or any(note.startswith(declarations.CARRIED) for note in found[1]):
        return None
    for note in found[1]:
        warn(note)
    return found[0]


def _conflict(first: onnx.TypeProto, second: onnx.TypeProto) -> bool:
    """Whether two types of one name disagree: another dtype or rank, or two different static dims (dims
    named differently, or unknown, may be equal)."""
    if first == second:
        return False
    (a_dtype, a_shape), (b_dtype, b_shape) = type_of(first), type_of(second)
    if a_dtype != b_dtype:
        return True
    if a_shape is None or b_shape is None:
        return False
    return len(a_shape) != len(b_shape) or any(isinstance(a, int) and isinstance(b, int) and a != b
                                                 for a, b in zip(a_shape, b_shape))


def _reused_name(holder: onnx.NodeProto, name: str, first: onnx.TypeProto, second: onnx.TypeProto,
                 opset: int) -> LoopcError:
    """A body naming a value as another graph of the model does, with another type (a body input that
    shadows an outer value, a body value named like its own node's output): ONNX scopes the names, but
    loopc types values by name, so one of them would get the other's type."""
    def show(tp: onnx.TypeProto) -> str:
        dtype, shape = type_of(tp)
        dims = "?" if shape is None else ",".join("?" if d is None else str(d) for d in shape)
        return f"{dtype or '?'}[{dims}]"

    return validate.node_error(
        holder, opset, f"its body names a value {name!r} ({show(second)}) that another graph of the model names "
        f"with another type ({show(first)}); loopc needs each name to have one type across a graph and its bodies",
        UnsupportedOpError, hint="rename the body's value")


def type_of(type_proto: onnx.TypeProto | None) -> tuple[np.dtype[Any] | None, tuple[Any, ...] | None]:
    """A tensor type's dtype and dims (a symbolic dim by its name, an unknown one as None)."""
    if type_proto is None:
        return None, None
    key = type_proto.SerializeToString()  # one call; reading the type field by field costs a dozen
    found = _TYPES.get(key)
    if found is None:
        found = _TYPES[key] = _read_type(type_proto)
        if len(_TYPES) > _MAX_TYPES:
            _TYPES.clear()
    return found


#: Types already read, by their serialized form: a model's values share a few types.
_TYPES: dict[bytes, tuple[np.dtype[Any] | None, tuple[Any, ...] | None]] = {}
_MAX_TYPES = 1 << 14


def _read_type(type_proto: onnx.TypeProto) -> tuple[np.dtype[Any] | None, tuple[Any, ...] | None]:
    if not type_proto.HasField("tensor_type"):
        return None, None
    tensor = type_proto.tensor_type
    dtype = None
    if tensor.elem_type:
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
        except Exception:
            dtype = None  # an element type numpy lacks
    if not tensor.HasField("shape"):
        return dtype, None
    return dtype, tuple(_dim(d) for d in tensor.shape.dim)


def _dim(d: onnx.TensorShapeProto.Dimension) -> int | str | None:
    """A dim's size, or its symbol; ONNX's inference writes ``unk__N`` for a dim it knows nothing of."""
    if d.HasField("dim_value"):
        return d.dim_value
    return None if not d.dim_param or d.dim_param.startswith("unk__") else d.dim_param


# -- inference runs ---------------------------------------------------------------------------------

def _strict(proto: onnx.ModelProto, opset: int) -> tuple[onnx.ModelProto, LoopcError | None, bool]:
    """Strict inference's model, or the lenient one and strict inference's refusal as an error (None where it
    names no node); and whether strict inference failed."""
    try:
        return onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True, data_prop=True), None, False
    except onnx.shape_inference.InferenceError as exc:
        return _inferred(proto), inference_error(exc, proto.graph, opset), True
    except Exception:
        return _inferred(proto), None, True


def _inferred(proto: onnx.ModelProto) -> onnx.ModelProto:
    try:
        return onnx.shape_inference.infer_shapes(proto, data_prop=True)
    except Exception:
        copy = onnx.ModelProto()
        copy.CopyFrom(proto)  # inference is a help, not a requirement: types then come from the graph
        return copy


def _sound_for_loops(proto: onnx.ModelProto, inferred: onnx.ModelProto) -> onnx.ModelProto:
    """``inferred`` with the corrections of the module's docstring (``proto`` is the model as written)."""
    unproven: set[tuple[Path, int, int]] = set()
    for _ in range(MAX_ROUNDS):
        if _declare_carried_types(inferred.graph, {}):
            inferred = _inferred(inferred)
            continue
        found = set(_unproven_carried_dims(inferred.graph, ())) - unproven
        if not found:
            break
        unproven |= found
        written = onnx.ModelProto()
        written.CopyFrom(proto)  # inferred types of values downstream of the dims are stale: start over
        for path, index, axis in unproven:
            dims = _graph_at(written.graph, path).input[index].type.tensor_type.shape.dim
            if axis < len(dims):
                dims[axis].Clear()
        for path in {path for path, _, _ in unproven}:
            _forget_declared_dims(_graph_at(written.graph, path))
        inferred = _inferred(written)
    return inferred


# -- the corrections ------------------------------------------------------------------------------

def _declare_carried_types(graph: onnx.GraphProto, outer: dict[str, onnx.TypeProto]) -> bool:
    """The first two corrections, at every depth: undeclared carried inputs get their initial
    values' rank, final carried values the dims shared by initial and next; whether any changed."""
    nested = list(_nested(graph))
    if not nested:
        return False
    known = dict(outer)
    own = {vi.name: vi for vi in [*graph.value_info, *graph.output]}
    for vi in [*graph.input, *graph.value_info, *graph.output]:
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
            known[vi.name] = vi.type
    for init in graph.initializer:
        known[init.name] = helper.make_tensor_type_proto(init.data_type, list(init.dims))
    changed = False
    for _, node, body in nested:
        if node.op_type == "Loop":
            for name, vi in zip(node.input[2:], body.input[2:]):
                source = known.get(name)
                if source is None or (vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape")):
                    continue
                rank = len(source.tensor_type.shape.dim)
                vi.type.CopyFrom(helper.make_tensor_type_proto(source.tensor_type.elem_type, [None] * rank))
                changed = True
            for init, nxt, result in zip(node.input[2:], body.output[1:], node.output):
                changed |= _declare_result(own.get(result), type_of(known.get(init))[1], type_of(nxt.type)[1])
        changed |= _declare_carried_types(body, known)
    return changed


def _declare_result(vi: onnx.ValueInfoProto | None, init: tuple[Any, ...] | None,
                    nxt: tuple[Any, ...] | None) -> bool:
    """Give a final carried value (``vi``, as inference typed it) the dims its initial value ``init``
    and its next value ``nxt`` share, where its type leaves them unknown; whether it learnt any."""
    if vi is None or not vi.type.HasField("tensor_type") or init is None or nxt is None or len(init) != len(nxt):
        return False
    tensor = vi.type.tensor_type
    changed = not tensor.HasField("shape")
    if changed:
        tensor.shape.SetInParent()
        tensor.shape.dim.extend(onnx.TensorShapeProto.Dimension() for _ in init)
    if len(tensor.shape.dim) != len(init):
        return False
    for dim, a, b in zip(tensor.shape.dim, init, nxt):
        if a is not None and a == b and _dim(dim) is None:
            if isinstance(a, int):
                dim.dim_value = a
            else:
                dim.dim_param = a
            changed = True
    return changed


def _unproven_carried_dims(graph: onnx.GraphProto, path: Path) -> Iterator[tuple[Path, int, int]]:
    """(body path, input index, axis) of each known carried-input dim its next value does not keep."""
    for step, node, body in _nested(graph):
        here = (*path, step)
        if node.op_type == "Loop":
            for index, (state, nxt) in enumerate(zip(body.input[2:], body.output[1:]), start=2):
                _, dims = type_of(state.type)
                _, next_dims = type_of(nxt.type)
                for axis, dim in enumerate(dims or ()):
                    kept = next_dims is not None and len(next_dims) == len(dims or ()) and next_dims[axis] == dim
                    if dim is not None and not kept:
                        yield here, index, axis
        yield from _unproven_carried_dims(body, here)


def _nested(graph: onnx.GraphProto) -> Iterator[tuple[tuple[int, str], onnx.NodeProto, onnx.GraphProto]]:
    """Each graph a node of ``graph`` holds: ((node index, attribute name), node, graph)."""
    for index, node in enumerate(graph.node):
        if node.op_type not in _HOLDS_GRAPHS:
            continue
        for attr in node.attribute:
            if attr.type == AttributeProto.GRAPH:
                yield (index, attr.name), node, attr.g


def _forget_declared_dims(body: onnx.GraphProto) -> None:
    """Leave a Loop body's next values (rank aside) and its other values to inference."""
    for vi in body.output[1:]:
        for dim in vi.type.tensor_type.shape.dim:
            dim.Clear()
    _forget_value_info(body)


def _forget_value_info(graph: onnx.GraphProto) -> None:
    del graph.value_info[:]
    for _, _, body in _nested(graph):
        _forget_value_info(body)


def _graph_at(graph: onnx.GraphProto, path: Path) -> onnx.GraphProto:
    for index, name in path:
        graph = next(a.g for a in graph.node[index].attribute if a.name == name)
    return graph

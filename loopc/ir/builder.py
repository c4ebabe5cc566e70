"""The one way frontends and passes make IR nodes, and the one IR → ONNX node conversion.

A :class:`Builder` appends to a graph (or to a list of nodes a pass inserts later) and gives what it makes
three things every node needs:

* **names**, deterministic per model: ``name(base)`` is ``<label>_<base>`` passed through the builder's
  naming function: a frontend's makes model-unique names (``x_add__7``), a pass keeps the names it derives
  from the loop or value it rewrites;
* an **origin**: the source node a frontend lowers, or for a pass the node it inserts beside (set on
  insertion), so errors and layer names lead back to the user's node;
* **types**: a result whose dtype or dims the caller leaves unknown is filled from ONNX's own shape function
  for the op (:func:`refine`), shown the operands' types and the small constants among them.

It also clones a loop's trip (:meth:`Builder.trip`), what unrolling and peeling are made of. The IR →
ONNX conversion (:func:`node_proto`) lives here because type inference needs it; ONNX's reference evaluator
(constant folding, the interpreter) reads the same protos.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from loopc.ir.core import Graph, Node, Shape, Value, constant_value
from loopc.ir.loop import Loop
from loopc.ir.ops import traits

I64 = np.dtype(np.int64)

#: Constant operands up to this many elements are shown to ONNX's shape functions (axes, shapes, repeats).
MAX_DATA = 64


# --- IR → ONNX --------------------------------------------------------------------------------------

def operand_names(node: Node) -> list[str]:
    """``in<k>`` for each present operand, ``""`` for an absent one: callers feed operands by position."""
    return [f"in{k}" if v is not None else "" for k, v in enumerate(node.inputs)]


def result_names(node: Node) -> list[str]:
    return [f"out{k}" for k in range(len(node.outputs))]


def node_proto(node: Node) -> onnx.NodeProto:
    """``node`` as an ONNX node reading :func:`operand_names` and writing :func:`result_names`."""
    return helper.make_node(node.op, operand_names(node), result_names(node),
                            **{k: attribute(v) for k, v in node.attrs.items()})


def attribute(value: Any) -> Any:
    """An IR attribute as ``onnx.helper.make_node`` takes it (arrays and NumPy scalars as TensorProto)."""
    return numpy_helper.from_array(np.asarray(value)) if isinstance(value, (np.ndarray, np.generic)) else value


# --- types from ONNX's shape functions --------------------------------------------------------------

def infer(node: Node, known: Mapping[Value, np.ndarray] | None = None) -> list[onnx.TypeProto | None]:
    """ONNX's shape function for ``node``: each result's type (None where it cannot tell). It is shown the
    small operands that are constants or in ``known``."""
    nothing: list[onnx.TypeProto | None] = [None] * len(node.outputs)
    arrays = [None if v is None else known[v] if known is not None and v in known else constant_value(v)
              for v in node.inputs]
    try:
        found = shape_function(node, [None if v is None else v.shape for v in node.inputs],
                               [a if a is not None and np.asarray(a).size <= MAX_DATA else None for a in arrays])
    except Exception:  # noqa: BLE001  (a shape function that cannot tell is no information)
        return nothing
    return nothing if found is None else [found.get(name) for name in result_names(node)]


def shape_function(node: Node, shapes: Sequence[Sequence[Any] | None],
                   arrays: Sequence[Any]) -> dict[str, onnx.TypeProto] | None:
    """ONNX's shape function for ``node`` with operands of ``shapes`` (None: unknown rank) and values ``arrays``
    (None where not shown): the results' types by name. None when the op has no schema or an operand no dtype;
    the shape function's own refusal is raised."""
    try:
        schema = onnx.defs.get_schema(node.op, onnx.defs.onnx_opset_version())
    except onnx.defs.SchemaError:
        return None
    types: dict[str, onnx.TypeProto] = {}
    data: dict[str, onnx.TensorProto] = {}
    for name, value, shape, array in zip(operand_names(node), node.inputs, shapes, arrays):
        if value is None:
            continue
        if value.dtype is None:
            return None
        elem = helper.np_dtype_to_tensor_dtype(np.dtype(value.dtype))
        types[name] = helper.make_tensor_type_proto(elem, None if shape is None else list(shape))
        if array is not None:
            data[name] = numpy_helper.from_array(np.asarray(array), name)
    found: dict[str, onnx.TypeProto] = onnx.shape_inference.infer_node_outputs(schema, node_proto(node), types, data)
    return found


def refine(node: Node, known: Mapping[Value, np.ndarray] | None = None) -> int:
    """Fill ``node``'s results' unknown dtypes and dims from its op's shape function (shown the constant
    operands and those in ``known``); how many changed. Nothing known is ever replaced."""
    return sum(_merge(value, inferred) for value, inferred in zip(node.outputs, infer(node, known)))


def fully_typed(value: Value) -> bool:
    return value.dtype is not None and value.shape is not None and all(isinstance(d, int) for d in value.shape)


def _merge(value: Value, inferred: onnx.TypeProto | None) -> int:
    """Fill ``value``'s unknown dtype and dims from ``inferred``; 1 if anything was learned."""
    if inferred is None or not inferred.HasField("tensor_type"):
        return 0
    learned = 0
    if value.dtype is None and inferred.tensor_type.elem_type:
        value.dtype = np.dtype(helper.tensor_dtype_to_np_dtype(inferred.tensor_type.elem_type))
        learned = 1
    if not inferred.tensor_type.HasField("shape"):
        return learned
    dims: Shape = tuple(d.dim_value if d.HasField("dim_value") else None for d in inferred.tensor_type.shape.dim)
    if value.shape is None:
        value.shape = dims
        return 1
    if len(value.shape) != len(dims):
        return learned  # disagreement: keep what the maker said
    merged = tuple(old if isinstance(old, int) or new is None else new for old, new in zip(value.shape, dims))
    if merged == value.shape:
        return learned
    value.shape = merged
    return 1


# --- the builder -------------------------------------------------------------------------------------

def _as_is(name: str) -> str:
    return name


class Builder:
    """Makes nodes into ``graph``, or into ``nodes`` (a list the caller inserts) when given.

    ``label`` prefixes the names :meth:`name` derives; ``names`` makes them unique (a frontend's; then nodes
    are named too), else names are the caller's own and a node is named after its first result. ``origin``
    is set on every node; ``infer`` fills unknown result types; ``check`` sees each ordinary node made (a
    frontend's validation).
    """

    def __init__(self, graph: Graph, nodes: list[Node] | None = None, *, label: str = "", origin: str = "",
                 names: Callable[[str], str] = _as_is, infer: bool = True,
                 check: Callable[[Node], None] | None = None) -> None:
        self.graph = graph
        self.nodes = nodes
        self.label = label
        self.origin = origin
        self._names = names
        self._infer = infer
        self._check = check

    def into(self, target: Graph | list[Node]) -> Builder:
        """The same builder making nodes into another graph (a loop body being built) or list."""
        graph, nodes = (target, None) if isinstance(target, Graph) else (self.graph, target)
        return Builder(graph, nodes, label=self.label, origin=self.origin, names=self._names, infer=self._infer,
                       check=self._check)

    def standing_for(self, node: Node) -> Builder:
        """The same builder, its nodes traced to ``node``'s origin: a copy or rewrite of ``node`` itself."""
        return Builder(self.graph, self.nodes, label=self.label, origin=node.origin, names=self._names,
                       infer=self._infer, check=self._check)

    def name(self, base: str) -> str:
        """A name derived from ``base`` (and the label), unique if the naming function makes it so."""
        return self._names(f"{self.label}_{base}" if self.label else base)

    def value(self, base: str, dtype: np.dtype[Any] | None = None, shape: Shape | None = None) -> Value:
        """A new value named after ``base``, made by no node yet (a loop parameter, a result to come)."""
        return Value(self.name(base), dtype, shape)

    def node(self, op: str, inputs: Sequence[Value | None], outputs: Sequence[Value],
             attrs: dict[str, Any] | None = None, *, name: str = "") -> Node:
        """A node writing the given results; typed from its op's shape function where they are not."""
        if not name and self._names is not _as_is:
            name = self.name(op.lower())
        return self.place(Node(op, inputs, outputs, dict(attrs or {}), name=name, origin=self.origin))

    def place(self, made: Node) -> Node:
        """Put a node made elsewhere (a loop, a conditional) where this builder makes nodes."""
        if not made.origin:
            made.origin = self.origin
        if self.nodes is not None:
            self.nodes.append(made)
        else:
            self.graph.add(made)
        if made.subgraphs() or made.op == "Constant":
            return made  # typed by their makers
        if self._check is not None:
            self._check(made)
        if self._infer and not all(fully_typed(v) for v in made.outputs):
            refine(made)
        return made

    def op(self, op: str, inputs: Sequence[Value | None], attrs: dict[str, Any] | None = None, *,
           name: str | None = None, dtype: np.dtype[Any] | None = None, shape: Shape | None = None,
           out: Value | None = None) -> Value:
        """One single-result node; its result is ``out`` (a value made before) or a new one named ``name``
        as given, else derived from the op."""
        result = out if out is not None else Value(name if name is not None else self.name(op.lower()))
        if result.dtype is None:
            result.dtype = dtype
        if result.shape is None:
            result.shape = shape
        self.node(op, inputs, [result], attrs)
        return result

    def multi(self, op: str, inputs: Sequence[Value | None], count: int, attrs: dict[str, Any] | None = None,
              dtype: np.dtype[Any] | None = None) -> list[Value]:
        """A node of ``count`` results."""
        outs = [Value(self.name(f"{op.lower()}{k}"), dtype) for k in range(count)]
        self.node(op, inputs, outs, attrs)
        return outs

    def const(self, array: Any, dtype: Any = None, *, name: str | None = None) -> Value:
        """A Constant node holding ``array`` (as ``dtype`` when given)."""
        value = np.asarray(array, dtype=dtype)
        result = Value(name if name is not None else self.name("const"), value.dtype, tuple(value.shape))
        self.node("Constant", [], [result], {"value": value})
        return result

    def dim(self, value: Value, axis: int, keep_1d: bool = False) -> Value:
        """Length of ``value`` along ``axis`` as an int64 scalar (``[1]`` if ``keep_1d``): a constant when
        the shape is static, else ``Shape`` then ``Gather``, which TensorRT evaluates as a shape tensor."""
        static = value.shape[axis] if value.shape is not None and -len(value.shape) <= axis < len(value.shape) else None
        if isinstance(static, int):
            return self.const([static] if keep_1d else static, np.int64)
        shape = self.op("Shape", [value], dtype=I64, shape=(len(value.shape),) if value.shape is not None else None)
        index = self.const([axis] if keep_1d else axis, np.int64)
        return self.op("Gather", [shape, index], {"axis": 0}, dtype=I64, shape=(1,) if keep_1d else ())

    def trip(self, loop: Loop, index: int, states: Sequence[Value]) -> Callable[[Value], Value]:
        """Make a copy of trip ``index`` of ``loop``'s body on ``states`` (one per recurrence); returns what a
        body value is on that trip (an outer value is itself).

        The counter is a constant there, so counter arithmetic folds, and a Where on a folded test is the
        side it picks when that side has the Where's shape: a peeled trip of a skewed loop leaves its idle
        layer's work unread, for dead code to remove."""
        mapping: dict[Value, Value] = dict(zip((r.state for r in loop.recurrences), states))
        suffix = f"{loop.name}_t{index}"
        if loop.counter is not None:
            mapping[loop.counter] = self.const(np.array(index, np.int64), name=f"{suffix}_counter")
        for it in loop.iterators:
            at = self.const(np.array(-1 - index if it.reverse else index, np.int64), name=f"{it.param.name}_{suffix}_at")
            mapping[it.param] = self.op("Gather", [it.source, at], {"axis": it.axis}, name=f"{it.param.name}_{suffix}",
                                        dtype=it.param.dtype, shape=it.param.shape)
        for node in loop.body.nodes:
            inputs = [None if v is None else mapping.get(v, v) for v in node.inputs]
            known = [constant_value(v) for v in inputs]
            exact = traits(node.op).numpy
            out = node.outputs[0] if node.outputs else None
            if node.op == "Where" and known[0] is not None and np.asarray(known[0]).size == 1:
                chosen = inputs[1] if bool(np.asarray(known[0]).reshape(-1)[0]) else inputs[2]
                assert chosen is not None and out is not None
                if _shape_of_where(chosen, inputs):
                    mapping[out] = chosen
                    continue
            elif exact is not None and out is not None and inputs and all(k is not None for k in known):
                mapping[out] = self.const(exact(*known), name=f"{out.name}_{suffix}")
                continue
            outputs = [Value(f"{v.name}_{suffix}", v.dtype, v.shape) for v in node.outputs]
            copy = Node(node.op, inputs, outputs, dict(node.attrs), origin=node.origin)
            self.place(copy)
            mapping.update(zip(node.outputs, outputs))
        return lambda value: mapping.get(value, value)


def _shape_of_where(chosen: Value, operands: Sequence[Value | None]) -> bool:
    """Whether ``chosen`` has the shape of the Where of ``operands``: a broadcast of all three, which picking
    one side would lose unless that side is already the whole."""
    shapes = [v.shape for v in operands if v is not None]
    if len(shapes) != 3 or chosen.shape is None or any(s is None or not all(isinstance(d, int) for d in s)
                                                        for s in shapes):
        return False
    try:
        return tuple(np.broadcast_shapes(*shapes)) == tuple(chosen.shape)  # type: ignore[arg-type]
    except ValueError:
        return False

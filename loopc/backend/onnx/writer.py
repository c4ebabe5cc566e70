"""The loop IR written back as ONNX with onnx-graphsurgeon: plain nodes as they are, structure as ``Loop``/``If``.

Ordinary IR nodes already are ONNX nodes in their newest-opset form, so they are written one for one; the
constants of the main graph become initializers. Values keep their IR names (renamed only where two scopes
used the same one), so an exported node still names the value it came from. Loops are written by
:mod:`loopc.backend.onnx.loops`.

One exception, for TensorRT's ONNX parser: a 0-d quantized weight (onnxruntime's quantizer quantizes scalar
operands such as the ``1`` of ``1 - z``, which folding makes an int8 constant) is written as ``[1]``, its
DequantizeLinear followed by a Reshape back to 0-d. The parser reshapes a 0-d DequantizeLinear input to ``[1]``
with a Shuffle layer, and TensorRT's builder refuses a quantized constant read by anything but a Dequantize
layer ("Quantized constant ... is only allowed before DQ").
"""

from __future__ import annotations

import itertools
from collections import ChainMap
from collections.abc import Iterable, MutableMapping
from typing import Any

import numpy as np
import onnx_graphsurgeon as gs
from onnx import numpy_helper
from onnx_graphsurgeon.ir.tensor import LazyValues

from loopc.errors import BackendError
from loopc.ir import Graph, If, Loop, Model, Node, Value
from loopc.trt.dtypes import FOUR_BIT, HELD_QUANTIZED

#: IR value → the tensor standing for it; a nested graph's scope is a child of its parent's.
Scope = MutableMapping[Value, gs.Tensor]


class Writer:
    """Writes one model; owns the names, so that every tensor of the exported model has its own."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self._taken: set[str] = set()
        self._main_nodes: list[gs.Node] = []
        #: 0-d quantized weights written as [1] (see the module's docstring).
        self._lifted: set[Value] = set()

    # --- names and tensors --------------------------------------------------------------------------------

    def fresh(self, base: str) -> str:
        """``base``, or ``base__<k>`` if a tensor of the model already has it."""
        name, k = base, 1
        while name in self._taken:
            k += 1
            name = f"{base}__{k}"
        self._taken.add(name)
        return name

    def variable(self, base: str, dtype: Any = None, shape: Any = None) -> gs.Variable:
        return gs.Variable(self.fresh(base), dtype=dtype, shape=_dims(shape))

    def typed(self, value: Value, name: str | None = None) -> gs.Variable:
        """A tensor typed as ``value`` is."""
        return self.variable(name or value.name, value.dtype, value.shape)

    def read(self, scope: Scope, value: Value | None, what: str) -> gs.Tensor:
        if value is None:
            return gs.Variable.empty()
        tensor = scope.get(value)
        if tensor is None:
            raise BackendError(f"{what} reads {value.name!r}, which no enclosing graph defines")
        return tensor

    def op(self, nodes: list[gs.Node], op: str, inputs: Iterable[gs.Tensor], base: str, dtype: Any = None,
           shape: Any = None, attrs: dict[str, Any] | None = None) -> gs.Variable:
        """Append one node of the writer's own (index arithmetic, casts) and return its result."""
        out = self.variable(base, dtype, shape)
        nodes.append(gs.Node(op, name=out.name, attrs=attrs or {}, inputs=list(inputs), outputs=[out]))
        return out

    def const(self, nodes: list[gs.Node], array: Any, base: str) -> gs.Tensor:
        """A constant: an initializer of the main graph, a ``Constant`` node in a nested one."""
        array = np.asarray(array)
        if nodes is self._main_nodes:
            return constant(self.fresh(base), array)
        return self.op(nodes, "Constant", [], base, array.dtype, array.shape,
                       {"value": constant(self.fresh(f"{base}_value"), array)})

    # --- graphs -------------------------------------------------------------------------------------------

    def main_graph(self) -> gs.Graph:
        graph = self.model.graph
        names = [name for name, _ in self.model.outputs()]
        self._taken.update(v.name for v in graph.inputs)
        self._taken.update(names)
        scope: Scope = {}
        inputs = []
        for value in graph.inputs:
            tensor = gs.Variable(value.name, dtype=value.dtype, shape=_dims(value.shape))
            scope[value] = tensor
            inputs.append(tensor)
        nodes = self._main_nodes
        self.nodes(graph.nodes, scope, nodes)
        outputs = self.yields(nodes, [self.read(scope, value, "the model's outputs") for _, value in
                                      self.model.outputs()], graph.name, names)
        return gs.Graph(nodes=nodes, inputs=inputs, outputs=outputs, name=graph.name or "main")

    def subgraph(self, graph: Graph, inputs: list[gs.Variable], nodes: list[gs.Node],
                 outputs: list[gs.Tensor]) -> gs.Graph:
        return gs.Graph(nodes=nodes, inputs=inputs, outputs=outputs, name=self.fresh(graph.name or "body"))

    def yields(self, nodes: list[gs.Node], tensors: Iterable[gs.Tensor], what: str,
               names: Iterable[str] | None = None) -> list[gs.Tensor]:
        """The tensors a graph yields (named ``names`` when given). ONNX wants each made by a node of the graph
        and named once, so a graph input, an outer value or a repeated tensor goes through an ``Identity``."""
        own = {id(t) for node in nodes for t in node.outputs}
        result: list[gs.Tensor] = []
        for tensor, name in zip(tensors, names if names is not None else itertools.repeat(None)):
            if id(tensor) in own and all(t is not tensor for t in result):
                tensor.name = name or tensor.name
                result.append(tensor)
                continue
            out = gs.Variable(name or self.fresh(f"{tensor.name}_out"), dtype=tensor.dtype,
                              shape=getattr(tensor, "shape", None))
            nodes.append(gs.Node("Identity", name=out.name, inputs=[tensor], outputs=[out]))
            result.append(out)
        return result

    def nodes(self, nodes: Iterable[Node], scope: Scope, out: list[gs.Node]) -> None:
        """Write ``nodes`` into ``out``, binding their results in ``scope``."""
        from loopc.backend.onnx.loops import write_loop

        for node in nodes:
            if isinstance(node, Loop):
                write_loop(self, node, scope, out)
            elif isinstance(node, If):
                self.conditional(node, scope, out)
            elif node.op == "Constant" and _scalar_weight(node):
                self._lifted.add(node.outputs[0])
                scope[node.outputs[0]] = self.const(out, np.reshape(node.attrs["value"], [1]), node.outputs[0].name)
            elif node.op == "Constant" and out is self._main_nodes and set(node.attrs) == {"value"}:
                scope[node.outputs[0]] = self.const(out, node.attrs["value"], node.outputs[0].name)
            elif node.op == "DequantizeLinear" and node.inputs[0] in self._lifted:
                self.scalar_dequantize(node, scope, out)
            else:
                self.plain(node, scope, out)

    def plain(self, node: Node, scope: Scope, out: list[gs.Node]) -> None:
        inputs = [self.read(scope, v, node.describe()) for v in node.inputs]
        results = [self.typed(v) for v in node.outputs]
        attrs = {k: _attribute(self, k, v) for k, v in node.attrs.items()}
        out.append(gs.Node(node.op, name=self.fresh(node.name or results[0].name), attrs=attrs, inputs=inputs,
                           outputs=results))
        scope.update(zip(node.outputs, results))

    def scalar_dequantize(self, node: Node, scope: Scope, out: list[gs.Node]) -> None:
        """A DequantizeLinear of a 0-d weight written [1]: dequantized as [1], reshaped back to 0-d."""
        value = node.outputs[0]
        inputs = [self.read(scope, v, node.describe()) for v in node.inputs]
        wide = self.variable(f"{value.name}_1d", value.dtype, [1])
        out.append(gs.Node(node.op, name=self.fresh(node.name or wide.name), inputs=inputs, outputs=[wide],
                           attrs={k: _attribute(self, k, v) for k, v in node.attrs.items()}))
        result = self.typed(value)
        # an initializer at any depth, as the passes would hoist it: exporting the export changes nothing
        shape = constant(self.fresh(f"{value.name}_shape"), np.zeros(0, np.int64))
        out.append(gs.Node("Reshape", name=result.name, inputs=[wide, shape], outputs=[result]))
        scope[value] = result

    def conditional(self, node: If, scope: Scope, out: list[gs.Node]) -> None:
        cond = self.read(scope, node.inputs[0], node.describe())
        branches = []
        for branch in (node.then_branch, node.else_branch):
            inner: Scope = ChainMap({}, scope)
            body: list[gs.Node] = []
            self.nodes(branch.nodes, inner, body)
            yields = self.yields(body, [self.read(inner, v, node.describe()) for v in branch.outputs], branch.name)
            branches.append(self.subgraph(branch, [], body, yields))
        results = [self.typed(v) for v in node.outputs]
        out.append(gs.Node("If", name=self.fresh(node.name or "if"), inputs=[cond], outputs=results,
                           attrs={"then_branch": branches[0], "else_branch": branches[1]}))
        scope.update(zip(node.outputs, results))


def _scalar_weight(node: Node) -> bool:
    """Whether a Constant is a 0-d quantized weight that only DequantizeLinear nodes read (as their input)."""
    array = np.asarray(node.attrs.get("value"))
    uses = node.outputs[0].uses()
    return set(node.attrs) == {"value"} and array.ndim == 0 and array.dtype in HELD_QUANTIZED and bool(uses) \
        and all(isinstance(u.user, Node) and u.user.op == "DequantizeLinear" and u.slot == 0 for u in uses)


def _dims(shape: Any) -> Any:
    """IR dims as ONNX dims: sizes, symbolic names, None for unknown (a rank-unknown value has no shape)."""
    return None if shape is None else [d if isinstance(d, (int, str)) else None for d in shape]


def _attribute(writer: Writer, name: str, value: Any) -> Any:
    """An IR attribute as onnx-graphsurgeon writes it: arrays (and NumPy scalars) as tensors."""
    if isinstance(value, (np.ndarray, np.generic)):
        return constant(writer.fresh(name), np.asarray(value))
    return value


def constant(name: str, array: np.ndarray) -> gs.Constant:
    """``array`` as onnx-graphsurgeon's constant; a 4-bit one as the tensor ONNX's helper packs two to a byte
    (onnx-graphsurgeon would write a byte per element, which no reader takes)."""
    if array.dtype in FOUR_BIT:
        return gs.Constant(name, LazyValues(numpy_helper.from_array(array, name)))
    return gs.Constant(name, array)

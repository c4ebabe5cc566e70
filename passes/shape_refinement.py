"""Fill in value shapes the frontend could not know, with ONNX's own shape functions, node by node.

ONNX's inference runs once on the source model, before loopc's passes fold constants, declare loop
bodies' carried ranks, or inline conditionals; inside loop bodies it often knows nothing. Asking it
again per node, with what the IR knows now (constant operands included), recovers what those
rewrites made knowable — TorchScript's ``If(Shape(x)[1] == 1, Squeeze(x), x)`` folds only when
the dim is known. Only unknown dims are filled; nothing known is ever replaced.

The walk carries the small values that constant folding will compute (``Shape`` of a shape just
learned, the arithmetic on it) to the shape functions further down, so one run settles a chain where
shapes and shape arithmetic alternate: an FPN's ``Resize(x, sizes=Shape(y)[2:])`` level after level,
which otherwise learned one level per round of the pass pipeline and did not settle.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx
from onnx import helper, numpy_helper

from loopc.ir import Graph, Node, Value
from loopc.ir.core import Shape
from loopc.ir.onnx_node import node_proto, operand_names, result_names
from loopc.ir.ops import traits
from loopc.passes.constant_folding import fold, operand
from loopc.passes.manager import PassResult

#: Constant operands up to this size are shown to the shape functions (axes, shapes, repeats).
MAX_DATA = 64


class ShapeRefinement:
    name = "shape-refinement"

    def __call__(self, graph: Graph) -> PassResult:
        refined = 0
        computed: dict[Value, np.ndarray] = {}
        for _, node in graph.walk():
            if not traits(node.op).foldable or node.subgraphs():
                continue
            if not all(_known(v) for v in node.outputs):
                refined += refine(node, computed)
            values = fold(node, computed, MAX_DATA)
            if values is not None:
                computed.update(zip(node.outputs, values))
        return PassResult(graph, refined > 0, {"values": refined} if refined else {})


def refine(node: Node, known: Mapping[Value, np.ndarray] | None = None) -> int:
    """Fill ``node``'s outputs' unknown dtypes and dims from its op's shape function (shown the constant
    operands and those in ``known``); how many changed."""
    return sum(_merge(value, inferred) for value, inferred in zip(node.outputs, infer(node, known)))


def _known(value: Value) -> bool:
    return value.shape is not None and all(isinstance(d, int) for d in value.shape)


def infer(node: Node, known: Mapping[Value, np.ndarray] | None = None) -> list[onnx.TypeProto | None]:
    """ONNX's shape function for ``node``: each result's type (None where it cannot tell); it is shown the
    small operands that are constants or in ``known``."""
    nothing: list[onnx.TypeProto | None] = [None] * len(node.outputs)
    try:
        schema = onnx.defs.get_schema(node.op, onnx.defs.onnx_opset_version())
    except onnx.defs.SchemaError:
        return nothing
    names = operand_names(node)
    types: dict[str, onnx.TypeProto] = {}
    data: dict[str, onnx.TensorProto] = {}
    for name, value in zip(names, node.inputs):
        if value is None:
            continue
        if value.dtype is None:
            return nothing
        elem = helper.np_dtype_to_tensor_dtype(np.dtype(value.dtype))
        types[name] = helper.make_tensor_type_proto(elem, None if value.shape is None else list(value.shape))
        array = operand(value, known)
        if array is not None and np.asarray(array).size <= MAX_DATA:
            data[name] = numpy_helper.from_array(np.asarray(array), name)
    try:
        found = onnx.shape_inference.infer_node_outputs(schema, node_proto(node), types, data)
    except Exception:  # noqa: BLE001  (a shape function that cannot tell is no information)
        return nothing
    return [found.get(name) for name in result_names(node)]


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
        return learned  # disagreement: keep what the frontend said
    merged = tuple(old if isinstance(old, int) or new is None else new for old, new in zip(value.shape, dims))
    if merged == value.shape:
        return learned
    value.shape = merged
    return 1

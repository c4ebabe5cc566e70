"""Fold nodes whose inputs are all constants, computing each as the IR's interpreter does.

Exporters compute many "attribute" inputs (Slice axes, Unsqueeze axes, reshape targets) from
constants through small chains of nodes. Folding them gives the backend the static operands
TensorRT wants. The values come from :func:`loopc.ir.interpret.evaluate`, the node evaluator the
interpreter runs (ONNX's reference evaluator, with loopc's kernels where that reference is wrong),
so a folded graph means what the unfolded one did. A node the evaluator cannot run is not folded:
it stays for TensorRT.
``Shape`` and ``Size`` of a value whose shape is fully static fold too (an If on a rank, as ONNX's
AffineGrid function tests ``Size(size) == 4``, then has a constant condition).

Sizes are known before anything is computed: ONNX's shape functions (shown the constant operands)
give each result's shape first. A result larger than loopc's tensor limit is a
:class:`~loopc.errors.LimitError` naming the node (a ConstantOfShape of [2**40] is the model's
mistake, and whoever computed it would need that memory, TensorRT included); a result within the
limit but above :data:`MAX_ELEMENTS` is not folded, left to TensorRT to compute where it runs rather
than stored in the engine. An op whose result size depends on its operands' values (Expand, Tile,
Range, ...) is never evaluated when the shape functions cannot tell that size.

A DequantizeLinear of a quantized constant (int8, uint8, int4, uint4, float8 e4m3fn) is not folded: the weight
reaches TensorRT as a constant of its own type under a Dequantize layer, which the builder fuses with the layer
that reads it, and the engine holds a quarter (an eighth) of the float bytes. An int32 one (a quantized bias:
TensorRT wants float biases) and a 16-bit one fold. A QuantizeLinear of a float constant (the float
initializer -> Q -> DQ that NVIDIA ModelOpt writes) folds to the quantized constant, so its DQ then reads one;
not one whose quotient x / scale leaves int32 (ONNX's reference evaluator converts it to int32 before it
saturates, so it would wrap), which TensorRT's Quantize layer computes instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import ml_dtypes
import numpy as np
from onnx import helper

from loopc.ir import Graph, Node, Value, constant_value
from loopc.ir.builder import Builder, infer
from loopc.ir.interpret import InterpretError, evaluate
from loopc.ir.ops import traits
from loopc.limits import check_constant
from loopc.passes._why import declined
from loopc.passes.manager import PassResult
from loopc.trt.dtypes import HELD_QUANTIZED

#: Folding never materializes more than this many elements.
MAX_ELEMENTS = 1 << 20
#: Integer types QuantizeLinear makes (it rounds to an int32 first, then clips).
_INTEGER_QUANTIZED = frozenset(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, ml_dtypes.int4,
                                                      ml_dtypes.uint4))


class ConstantFolding:
    name = "constant-folding"

    def __call__(self, graph: Graph) -> PassResult:
        folded = 0
        for g, node in list(graph.walk()):
            if not traits(node.op).foldable or node.subgraphs() or node.graph is not g:
                continue
            values = folding(node)
            if not isinstance(values, list):
                if values is not None:
                    declined(values, at=node)
                continue
            made: list[Node] = []
            b = Builder(g, made)
            for old, array in zip(node.outputs, values):
                old.replace_all_uses_with(b.const(array, name=old.name))
            g.insert_before(node, made)
            g.remove(node)
            folded += 1
        return PassResult(graph, folded > 0, {"nodes": folded} if folded else {})


def fold(node: Node, known: Mapping[Value, np.ndarray] | None = None,
         max_elements: int = MAX_ELEMENTS) -> list[np.ndarray] | None:
    """The values of ``node``'s outputs when its inputs are constants (or it is a Shape of a static shape);
    ``known`` adds operand values the caller has computed but not yet made constants. None when an operand
    is not known, or a result has more than ``max_elements`` elements (or another reason :func:`folding` gives)."""
    values = folding(node, known, max_elements)
    return values if isinstance(values, list) else None


def folding(node: Node, known: Mapping[Value, np.ndarray] | None = None,
            max_elements: int = MAX_ELEMENTS) -> list[np.ndarray] | str | None:
    """:func:`fold`'s values, or why ``node`` is not folded though its operands are all known (a str); None
    when they are not (then folding does not concern it)."""
    if node.op == "Shape" and node.inputs[0] is not None:
        dims = _shape_dims(node)
        return None if dims is None or not all(isinstance(d, int) for d in dims) else [np.array(dims, np.int64)]
    if node.op == "Size" and node.inputs[0] is not None and node.inputs[0].shape is not None:
        static = [d for d in node.inputs[0].shape if isinstance(d, int)]
        return [np.array(math.prod(static), np.int64)] if len(static) == len(node.inputs[0].shape) else None
    if node.op == "Gather" and node.inputs[0] is not None and node.inputs[0].producer is not None:
        picked = _static_dims_picked(node)
        if picked is not None:
            return [picked]
    arrays = []
    for v in node.inputs:
        array = None if v is None else operand(v, known)
        if array is None and v is not None:
            return None  # an operand known only at run time: nothing to fold
        arrays.append(array)
    kept = _kept_quantized(node, arrays)
    if kept is not None:
        return kept
    sizes = _result_sizes(node, known)
    if sizes is None and traits(node.op).value_shaped:
        return "ONNX's shape functions cannot tell the size of its result before computing it"
    if sizes is not None and any(n > max_elements for n in sizes):
        return _too_large(max(sizes), max_elements)
    try:
        results = evaluate(node, [None if a is None else np.asarray(a) for a in arrays])
    except InterpretError as error:
        return f"loopc's evaluator cannot compute it ({str(error).removeprefix(node.describe() + ': ')})"
    largest = max((np.asarray(r).size for r in results), default=0)
    return _too_large(largest, max_elements) if largest > max_elements else [np.asarray(r) for r in results]


def _kept_quantized(node: Node, arrays: list[Any]) -> str | None:
    """Why a DequantizeLinear or QuantizeLinear whose operands are all known stays (see the module's docstring)."""
    if node.op == "DequantizeLinear" and np.asarray(arrays[0]).dtype in HELD_QUANTIZED:
        return "a quantized weight stays quantized: TensorRT fuses its dequantize with the layer that reads it"
    if node.op == "QuantizeLinear" and node.outputs[0].dtype in _INTEGER_QUANTIZED:
        x, scale = (np.abs(np.asarray(a, np.float64)) for a in arrays[:2])
        if x.size and (not np.all(np.isfinite(x)) or not np.all(scale > 0)
                       or x.max() / scale.min() >= 2.0**31):
            return ("a quotient x / scale is not finite or beyond int32, which ONNX's reference evaluator "
                    "wraps instead of saturating: TensorRT's Quantize layer computes it")
    return None


def _too_large(elements: int, max_elements: int) -> str:
    """Why a result of ``elements`` is not stored as a constant."""
    return (f"its result would hold {elements} elements, more than the {max_elements} folding stores: "
            "TensorRT computes it where it runs")


def operand(value: Value, known: Mapping[Value, np.ndarray] | None = None) -> Any:
    """``value``'s array when it is a constant or in ``known``; else None."""
    if known is not None and value in known:
        return known[value]
    return constant_value(value)


def _result_sizes(node: Node, known: Mapping[Value, np.ndarray] | None = None) -> list[int] | None:
    """Each result's element count from ONNX's shape functions, before computing anything; None when
    they cannot tell. A result above loopc's tensor limit raises :class:`LimitError` here."""
    sizes = []
    for k, (value, found) in enumerate(zip(node.outputs, infer(node, known))):
        if found is None or not found.HasField("tensor_type") or not found.tensor_type.HasField("shape"):
            return None
        dims = found.tensor_type.shape.dim
        if not all(d.HasField("dim_value") for d in dims):
            return None
        shape = [d.dim_value for d in dims]
        elem = found.tensor_type.elem_type
        dtype = helper.tensor_dtype_to_np_dtype(elem) if elem else (value.dtype or np.dtype(np.int64))
        check_constant(shape, dtype, f"{node.describe()}: folding its output {k} ({value.name!r})")
        sizes.append(math.prod(shape))
    return sizes


def _shape_dims(shape: Node) -> tuple[Any, ...] | None:
    """The dims a ``Shape`` node returns (its ``start``/``end`` applied), static or not."""
    dims = shape.inputs[0].shape if shape.inputs[0] is not None else None
    if dims is None:
        return None
    return dims[slice(shape.attrs.get("start", 0), shape.attrs.get("end", len(dims)))]


def _static_dims_picked(gather: Node) -> np.ndarray | None:
    """``Shape(x)[k]`` when dim ``k`` of ``x`` is static though others are not (TorchScript tests
    ``x.size(1) == 1`` before a squeeze; the answer is known when the dim is), through an integer Cast
    between them (OpenVINO's ShapeOf in i32)."""
    shape = gather.inputs[0].producer if gather.inputs[0] is not None else None
    dtype = np.dtype(np.int64)
    if shape is not None and shape.op == "Cast" and shape.outputs[0].dtype is not None \
            and shape.outputs[0].dtype.kind in "iu" and shape.inputs[0] is not None:
        dtype, shape = shape.outputs[0].dtype, shape.inputs[0].producer
    indices = constant_value(gather.inputs[1]) if len(gather.inputs) > 1 else None
    if shape is None or shape.op != "Shape" or indices is None or np.asarray(indices).dtype.kind not in "iu":
        return None
    dims = _shape_dims(shape)
    if dims is None:
        return None
    index = np.asarray(indices)
    if np.any(index >= len(dims)) or np.any(index < -len(dims)):
        return None
    picked = np.vectorize(lambda k: dims[int(k)] if isinstance(dims[int(k)], int) else -1, otypes=[np.int64])(index)
    return None if np.any(picked < 0) else picked.astype(dtype)

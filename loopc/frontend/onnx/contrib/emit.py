"""What an expansion of a contrib node knows and how it writes ONNX nodes.

An expansion writes standard ONNX nodes in the form of the *model's* opset (they are validated, typed
and upgraded with the model's other nodes afterwards), so the few ops whose form changed between
opsets are written through :class:`Emitter`'s helpers: reductions and Unsqueeze take their axes as an
attribute before opset 13 (ReduceMean before 18), LayerNormalization exists from opset 17, Gelu from
20, per-axis DequantizeLinear from 13. An expansion asks :class:`Known` for the types, ranks and
constant values it needs; one it cannot have yet (a value another contrib node makes) defers the node
to the next round, after the types are inferred again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from loopc.errors import FrontendError, LoopcError, UnsupportedOpError
from loopc.frontend.onnx import validate
from loopc.frontend.onnx.weightless import Weights


class Pending(Exception):
    """An expansion needs a type that is not known yet: the node waits for the next round."""


@dataclass
class Known:
    """Types (by name, at every depth) and constant values (initializers and Constant nodes) of the model."""

    types: dict[str, onnx.TypeProto] = field(default_factory=dict)
    tensors: dict[str, onnx.TensorProto] = field(default_factory=dict)
    #: What the stand-ins among ``tensors`` stand for (a stripped model's; see :mod:`loopc.frontend.onnx.weightless`).
    weights: Weights = field(default_factory=Weights)

    def dtype(self, name: str) -> np.dtype[Any]:
        if name in self.tensors:
            return np.dtype(helper.tensor_dtype_to_np_dtype(self.tensors[name].data_type))
        tp = self.types.get(name)
        if tp is None or not tp.HasField("tensor_type") or not tp.tensor_type.elem_type:
            raise Pending(name)
        return np.dtype(helper.tensor_dtype_to_np_dtype(tp.tensor_type.elem_type))

    def dims(self, name: str) -> list[int | None]:
        """``name``'s dims (None where unknown); its rank must be known."""
        if name in self.tensors:
            return [int(d) for d in self.tensors[name].dims]
        tp = self.types.get(name)
        if tp is None or not tp.HasField("tensor_type") or not tp.tensor_type.HasField("shape"):
            raise Pending(name)
        return [d.dim_value if d.HasField("dim_value") else None for d in tp.tensor_type.shape.dim]

    def rank(self, name: str) -> int:
        return len(self.dims(name))

    def array(self, name: str) -> np.ndarray | None:
        """The values of ``name`` when it is an initializer or a Constant node's output."""
        tensor = self.tensors.get(name)
        return None if tensor is None else self.weights.array(tensor, f"the value of {name!r}")


class Emitter:
    """Writes the ONNX nodes one contrib node becomes, in the form of the model's opset.

    Args:
        node: the contrib node (its name prefixes every value made, its outputs are bound last).
        opset: the model's default-domain opset.
        fresh: a model-unique name for a base.
        known: what the model's types and constants say.
    """

    def __init__(self, node: onnx.NodeProto, opset: int, fresh: Callable[[str], str], known: Known) -> None:
        self.node = node
        self.opset = opset
        self.fresh = fresh
        self.known = known
        self.nodes: list[onnx.NodeProto] = []
        self.attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        self._base = validate.label(node).replace("/", "_").strip("_") or node.op_type

    # -- the node being expanded ---------------------------------------------------------------------

    def input(self, k: int) -> str | None:
        """The node's input ``k``, None where it is absent or left empty."""
        return self.node.input[k] if k < len(self.node.input) and self.node.input[k] else None

    def output(self, k: int) -> str | None:
        return self.node.output[k] if k < len(self.node.output) and self.node.output[k] else None

    def attr(self, name: str, default: Any = None) -> Any:
        value = self.attrs.get(name, default)
        return value.decode() if isinstance(value, bytes) else value

    def error(self, message: str, hint: str | None = None, cls: type[LoopcError] = UnsupportedOpError) -> LoopcError:
        version = f"{self.node.domain} opset 1" if self.node.domain else self.opset
        return cls(message, node=validate.label(self.node), op=self.node.op_type, opset=version, hint=hint)

    def invalid(self, message: str) -> LoopcError:
        return self.error(message, cls=FrontendError)

    def need(self, k: int, what: str) -> str:
        name = self.input(k)
        if name is None:
            raise self.invalid(f"input {what} is required")
        return name

    def bind(self, k: int, value: str) -> None:
        """Give the node's output ``k`` (when it has one) ``value``."""
        name = self.output(k)
        if name is not None:
            self.nodes.append(helper.make_node("Identity", [value], [name], name=self.fresh(f"{self._base}_out{k}")))

    # -- nodes ---------------------------------------------------------------------------------------

    def ops(self, op_type: str, inputs: Sequence[str | None], outputs: int = 1, **attrs: Any) -> list[str]:
        names = [self.fresh(f"{self._base}_{op_type.lower()}") for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, [i or "" for i in inputs], names, name=names[0], **attrs))
        return names

    def op(self, op_type: str, *inputs: str | None, **attrs: Any) -> str:
        return self.ops(op_type, inputs, 1, **attrs)[0]

    def const(self, array: Any, dtype: Any = None, base: str = "const") -> str:
        a = np.asarray(array, dtype=dtype)
        name = self.fresh(f"{self._base}_{base}")
        self.nodes.append(helper.make_node("Constant", [], [name], name=name, value=numpy_helper.from_array(a, name)))
        self.known.tensors[name] = numpy_helper.from_array(a, name)
        return name

    def scalar(self, value: float, like: str) -> str:
        """A 0-d constant of ``like``'s float type (a value the expansion made has the node's float type)."""
        try:
            dtype = self.known.dtype(like)
        except Pending:
            dtype = self.float_type()
        return self.const(np.array(value, dtype=dtype), base="scalar")

    def float_type(self) -> np.dtype[Any]:
        """The float type the node computes in: that of its first float input."""
        for name in self.node.input:
            if name:
                dtype = self.known.dtype(name)
                if dtype.kind == "f":
                    return dtype
        raise Pending(self.node.input[0] if self.node.input else self.node.op_type)

    def ints(self, values: Sequence[int]) -> str:
        return self.const(np.array(values, np.int64), base="ints")

    # -- ops whose form depends on the opset -----------------------------------------------------------

    def reduce(self, op_type: str, x: str, axes: Sequence[int], keepdims: int = 1) -> str:
        """A reduction over ``axes``: axes an input from opset 13 (ReduceMean, ReduceMax: 18), else an attribute."""
        since = 13 if op_type == "ReduceSum" else 18
        if self.opset >= since:
            return self.op(op_type, x, self.ints(axes), keepdims=keepdims)
        return self.op(op_type, x, axes=list(axes), keepdims=keepdims)

    def unsqueeze(self, x: str, axes: Sequence[int]) -> str:
        if self.opset >= 13:
            return self.op("Unsqueeze", x, self.ints(axes))
        return self.op("Unsqueeze", x, axes=list(axes))

    def slice(self, x: str, starts: Sequence[int], ends: Sequence[int], axes: Sequence[int]) -> str:
        return self.op("Slice", x, self.ints(starts), self.ints(ends), self.ints(axes))

    def dim(self, x: str, axis: int) -> str:
        """``x``'s dim ``axis`` as a 0-d int64 (Range and arithmetic on it)."""
        return self.op("Gather", self.op("Shape", x), self.const(np.array(axis, np.int64)), axis=0)

    def dequantize(self, q: str, scale: str, zero: str | None, axis: int = 1) -> str:
        """DequantizeLinear (per tensor, or per ``axis`` for a 1-D scale); before opset 13, which has no axis,
        ``(q - zero) * scale`` in float with the scale shaped to broadcast along ``axis``."""
        per_axis = self.known.rank(scale) == 1 and self.known.dims(scale)[0] != 1
        along = {"axis": axis} if per_axis else {}
        zeros = self.known.array(zero) if zero is not None else None
        if (self.opset >= 13 or not per_axis) and zeros is not None and zeros.dtype == np.int8 and zeros.any() \
                and self.known.array(q) is not None:
            # TensorRT lets an int8 constant feed only a Dequantize layer, which has no zero point: the weight
            # stays one (a symmetric one), and the zero point's share is subtracted after, in float
            rank = self.known.rank(q)
            shift = self.op("DequantizeLinear", zero, scale, **({"axis": 0} if per_axis else {}))
            if per_axis and axis % rank != rank - 1:
                shift = self.op("Reshape", shift, self.ints([-1 if i == axis % rank else 1 for i in range(rank)]))
            return self.op("Sub", self.op("DequantizeLinear", q, scale, **along), shift)
        if self.opset >= 13 or not per_axis:
            return self.op("DequantizeLinear", q, scale, zero, **along)
        wide = self.op("Cast", q, to=helper.np_dtype_to_tensor_dtype(self.known.dtype(scale)))
        if zero is not None:
            wide = self.op("Sub", wide, self.op("Cast", zero, to=helper.np_dtype_to_tensor_dtype(self.known.dtype(scale))))
        rank = self.known.rank(q)
        shaped = self.op("Reshape", scale, self.ints([-1 if i == axis % rank else 1 for i in range(rank)]))
        return self.op("Mul", wide, shaped)

    def layer_norm(self, x: str, gamma: str, beta: str | None, epsilon: float, axis: int = -1) -> str:
        """LayerNormalization over the dims from ``axis`` (negative); written out before opset 17."""
        if self.opset >= 17:
            return self.op("LayerNormalization", x, gamma, beta, axis=axis, epsilon=epsilon)
        axes = list(range(axis, 0))
        centered = self.op("Sub", x, self.reduce("ReduceMean", x, axes))
        variance = self.reduce("ReduceMean", self.op("Mul", centered, centered), axes)
        y = self.op("Mul", self.op("Div", centered, self.op("Sqrt", self.op("Add", variance, self.scalar(epsilon, x)))),
                    gamma)
        return y if beta is None else self.op("Add", y, beta)

    def rms_norm(self, x: str, gamma: str, epsilon: float, axis: int = -1) -> str:
        """``x / sqrt(mean(x²) + epsilon) * gamma`` over the dims from ``axis`` (negative), as onnxruntime's
        SimplifiedLayerNormalization computes it."""
        mean_square = self.reduce("ReduceMean", self.op("Mul", x, x), list(range(axis, 0)))
        return self.op("Mul", self.op("Div", x, self.op("Sqrt", self.op("Add", mean_square, self.scalar(epsilon, x)))),
                       gamma)

    def gelu(self, x: str, approximate: str = "none") -> str:
        """Gelu (opset 20), else written out: ``0.5 x (1 + erf(x / √2))``, or with tanh for ``approximate``."""
        if self.opset >= 20:
            return self.op("Gelu", x, approximate=approximate)
        half = self.op("Mul", x, self.scalar(0.5, x))
        if approximate == "tanh":
            cube = self.op("Mul", self.op("Mul", x, x), x)
            inner = self.op("Add", x, self.op("Mul", cube, self.scalar(0.044715, x)))
            t = self.op("Tanh", self.op("Mul", inner, self.scalar(math.sqrt(2 / math.pi), x)))
        else:
            t = self.op("Erf", self.op("Mul", x, self.scalar(1 / math.sqrt(2), x)))
        return self.op("Mul", half, self.op("Add", t, self.scalar(1.0, x)))


def elem_type(dtype: Any) -> int:
    return int(helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))


INT32, INT64, FLOAT = TensorProto.INT32, TensorProto.INT64, TensorProto.FLOAT

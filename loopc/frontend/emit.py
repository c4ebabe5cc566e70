"""The one way frontends add IR nodes: each named after, and traced back to, the source node it lowers.

A frontend makes an :class:`Emitter` per source node (ONNX node, OpenVINO layer); everything that
node lowers to gets a deterministic name ``<label>_<op>__N`` and the source node's description as
its ``origin``, so errors and dumps point at the user's node.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from loopc.ir import Graph, Node, Value
from loopc.ir.core import Shape

I64 = np.dtype(np.int64)


class Emitter:
    """Adds nodes to ``graph``; ``fresh`` makes model-unique names, ``on_add`` sees each node (type inference)."""

    def __init__(self, graph: Graph, label: str, origin: str, fresh: Callable[[str], str],
                 on_add: Callable[[Node], None] | None = None) -> None:
        self.graph = graph
        self.label = label
        self.origin = origin
        self._fresh = fresh
        self._on_add = on_add

    def into(self, graph: Graph) -> Emitter:
        """The same emitter writing into another graph (a loop body being built)."""
        return Emitter(graph, self.label, self.origin, self._fresh, self._on_add)

    def name(self, base: str) -> str:
        """A fresh model-unique name derived from this node's label."""
        return self._fresh(f"{self.label}_{base}")

    def fresh(self, base: str) -> Value:
        return Value(self.name(base))

    def op(
        self,
        op: str,
        inputs: Sequence[Value | None],
        attrs: dict[str, Any] | None = None,
        *,
        dtype: np.dtype[Any] | None = None,
        shape: Shape | None = None,
        out: Value | None = None,
    ) -> Value:
        """One single-output node; ``out`` supplies a pre-made result (a source node's named output)."""
        result = out if out is not None else self.fresh(op.lower())
        if result.dtype is None:
            result.dtype = dtype
        if result.shape is None:
            result.shape = shape
        self.add(op, inputs, [result], attrs)
        return result

    def multi(self, op: str, inputs: Sequence[Value | None], count: int, attrs: dict[str, Any] | None = None,
              dtype: np.dtype[Any] | None = None) -> list[Value]:
        outs = [self.fresh(f"{op.lower()}{k}") for k in range(count)]
        for out in outs:
            out.dtype = dtype
        self.add(op, inputs, outs, attrs)
        return outs

    def add(self, op: str, inputs: Sequence[Value | None], outputs: list[Value], attrs: dict[str, Any] | None) -> Node:
        node = self.graph.add(Node(op, inputs, outputs, dict(attrs or {}), name=self.name(op.lower()),
                                   origin=self.origin))
        if self._on_add is not None:
            self._on_add(node)
        return node

    def const(self, array: Any, dtype: Any = None) -> Value:
        value = np.array(array, dtype=dtype)
        result = self.fresh("const")
        result.dtype, result.shape = value.dtype, tuple(value.shape)
        self.add("Constant", [], [result], {"value": value})
        return result

    def dim(self, value: Value, axis: int, keep_1d: bool = False) -> Value:
        """Length of ``value`` along ``axis`` as an int64 scalar (``[1]`` if ``keep_1d``): a constant when
        the shape is static, else ``Shape`` then ``Gather`` — which TensorRT evaluates as a shape tensor."""
        static = value.shape[axis] if value.shape is not None and -len(value.shape) <= axis < len(value.shape) else None
        if isinstance(static, int):
            return self.const([static] if keep_1d else static, np.int64)
        shape = self.op("Shape", [value], dtype=I64, shape=(len(value.shape),) if value.shape is not None else None)
        index = self.const([axis] if keep_1d else axis, np.int64)
        return self.op("Gather", [shape, index], {"axis": 0}, dtype=I64, shape=(1,) if keep_1d else ())

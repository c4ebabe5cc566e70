"""Narrow products: a matrix product whose result is only partly read multiplies by the columns read.

``a·B`` whose only reader is a Split of the last axis, with pieces at either end never read, computes
those columns for nothing. The product takes B's read columns instead (a Slice of B, or a narrower
constant when B is one) and the Split keeps the pieces in between. ONNX's GRU with
``linear_before_reset=0`` is the case in point: ``H·Rᵀ``'s h columns are never read (the step
multiplies ``r ⊙ H`` by Rhᵀ instead), so its product costs 2H² per row instead of 3H².

The kept columns are one contiguous range, even when an unread piece sits between read ones: a
Concat of B's pieces made TensorRT-RTX's builder fail ("FC inner dimension mismatch"), a Slice does
not.
"""

from __future__ import annotations

import numpy as np

from loopc.ir import Graph, Node, Value, constant_value
from loopc.ir.builder import Builder
from loopc.ir.core import Dim
from loopc.passes._why import no
from loopc.passes.manager import PassResult
from loopc.semantics.attributes import attr


class NarrowProducts:
    name = "narrow-products"

    def __call__(self, graph: Graph) -> PassResult:
        narrowed = sum(_narrow(g, node) for g, node in list(graph.find("MatMul")))
        return PassResult(graph, narrowed > 0, {"products": narrowed} if narrowed else {})


def _narrow(graph: Graph, matmul: Node) -> bool:
    product, b = matmul.outputs[0], matmul.inputs[1]
    uses = product.uses()
    split = uses[0].user if len(uses) == 1 and uses[0].slot == 0 else None
    if not isinstance(split, Node) or split.op != "Split" or b is None:
        return False  # not read by a Split alone
    if b.shape is None or product.shape is None:
        return no(f"the shape of {b.name!r} or of {product.name!r} is unknown", at=matmul)
    if len(b.shape) < 2 or attr(split, "axis") not in (-1, len(product.shape) - 1):
        return False  # a 1-D B is contracted, not a matrix of columns; a Split of another axis keeps them all
    read = [k for k, piece in enumerate(split.outputs) if piece.is_used()]
    if not read or (read[0], read[-1]) == (0, len(split.outputs) - 1):
        return False  # the columns at both ends are read
    sizes = _piece_sizes(split, b.shape[-1])
    if sizes is None:
        return no(f"the widths of the pieces {split.describe()} cuts are unknown (or uneven)", at=matmul)
    first, last = read[0], read[-1] + 1
    start, end = sum(sizes[:first]), sum(sizes[:last])
    made: list[Node] = []
    matmul.set_input(1, _columns(Builder(graph, made), b, start, end, f"{product.name}_read"))
    graph.insert_before(matmul, made)
    product.shape = (*product.shape[:-1], end - start)
    kept, home = split.outputs[first:last], split.graph  # the Split may sit in a loop body below
    assert home is not None
    if len(kept) == 1:
        kept[0].replace_all_uses_with(product)
        home.remove(split)
        return True
    sized: list[Node] = []
    pieces = Builder(home, sized).const(np.array(sizes[first:last], np.int64), name=f"{product.name}_pieces")
    home.insert_before(split, sized)
    split.set_outputs(kept)
    split.set_inputs([product, pieces])
    split.drop_attr("num_outputs")
    return True


def _piece_sizes(split: Node, columns: Dim) -> list[int] | None:
    """The Split's piece sizes along the columns, when they are known."""
    if "split" in split.attrs:
        return None  # the frontends give sizes as an input (opset 13's form); an attribute is not ours
    given = constant_value(split.inputs[1]) if len(split.inputs) > 1 and split.inputs[1] is not None else None
    if given is not None:
        sizes = [int(s) for s in np.asarray(given).reshape(-1)]
        return sizes if sum(sizes) == columns and len(sizes) == len(split.outputs) else None
    count = len(split.outputs)
    if not isinstance(columns, int) or columns % count:
        return None  # uneven pieces (opset 18's last-piece rule) are left alone
    return [columns // count] * count


def _columns(builder: Builder, b: Value, start: int, end: int, name: str) -> Value:
    """B's columns [start, end): a narrower constant when B is one, else a Slice of it."""
    array = constant_value(b)
    if array is not None:
        return builder.const(np.ascontiguousarray(np.asarray(array)[..., start:end]), name=name)
    bounds = [builder.const(np.array([number], np.int64), name=f"{name}_{part}")
              for part, number in (("start", start), ("end", end), ("axis", -1))]
    shape = (*b.shape[:-1], end - start) if b.shape is not None else None
    return builder.op("Slice", [b, *bounds], name=name, shape=shape)

"""``Squeeze(Slice(x, s, s + 1))`` along an axis whose start ``s`` is data is ``Gather(x, s)``.

``jax.lax.dynamic_slice(table, (token, 0), (1, d))[0]`` — a greedy decoder's embedding lookup as
jax2onnx writes it — is a Slice from ``Concat(Unsqueeze(token), 0)`` to that plus ``[1, d]``, then a
Squeeze of axis 0. TensorRT reads a slice's bounds as shape tensors, which its builder cannot take
from values a loop computes in each trip (``makeScopeNodesContiguous``); a Gather reads its index as
data. The rewrite is exact in every run the model allows: the Squeeze needs the slice to be one row
long, and a one-row ONNX Slice starting at ``s`` (``s + dim`` when negative) is the row that Gather
picks for ``s`` (it too counts a negative index from the end). Axes with constant bounds stay a Slice.
"""

from __future__ import annotations

import numpy as np

from loopc.ir import Graph, Node, Value, constant_value
from loopc.ir.builder import Builder
from loopc.passes.manager import PassResult


class SqueezedRows:
    name = "squeezed-rows"

    def __call__(self, graph: Graph) -> PassResult:
        rewritten = 0
        for g, node in list(graph.walk()):
            if node.op == "Squeeze" and node.graph is g and _rewrite(g, node):
                rewritten += 1
        return PassResult(graph, rewritten > 0, {"slices": rewritten} if rewritten else {})


def _rewrite(g: Graph, squeeze: Node) -> bool:
    sliced = squeeze.inputs[0]
    if sliced is None or sliced.producer is None or sliced.producer.op != "Slice" or len(sliced.uses()) != 1:
        return False
    node = sliced.producer
    if len(node.inputs) < 4:
        return False
    data, starts, ends, axes = node.inputs[:4]
    steps = constant_value(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else None
    axis_list = constant_value(axes)
    if data is None or data.shape is None or starts is None or ends is None or axis_list is None \
            or (steps is not None and np.any(np.asarray(steps) != 1)):
        return False
    rank = len(data.shape)
    at = [int(a) % rank for a in np.asarray(axis_list).reshape(-1)]
    begins, sizes = _parts(starts), _sizes(ends, starts)
    squeezed = _squeezed_axes(squeeze, rank)
    if begins is None or sizes is None or squeezed is None or len(begins) != len(at) or len(sizes) != len(at):
        return False
    rows = {a: begin for a, begin, size in zip(at, begins, sizes) if isinstance(begin, Value) and size == 1}
    if not rows or set(rows) != squeezed or any(a not in rows and (isinstance(b, Value) or b < 0)
                                                for a, b in zip(at, begins)):
        return False  # a data start off the squeezed axes, or a negative constant one, is left as it is
    made: list[Node] = []
    b = Builder(g, made).standing_for(squeeze)
    kept = [(begin, begin + size, a) for a, begin, size in zip(at, begins, sizes) if not isinstance(begin, Value)]
    result = data
    if kept:
        result = b.op("Slice", [data, *(b.const(np.array(column, np.int64), name=f"{node.name}_{what}")
                                        for what, column in zip(("starts", "ends", "axes"), zip(*kept)))],
                      name=f"{sliced.name}_static", dtype=data.dtype)
    for axis in sorted(rows, reverse=True):  # each Gather drops its axis: the later axes first
        result = b.op("Gather", [result, rows[axis]], {"axis": axis}, name=f"{squeeze.outputs[0].name}_row{axis}",
                      dtype=data.dtype)
    g.insert_before(squeeze, made)
    squeeze.outputs[0].replace_all_uses_with(result)
    g.remove(squeeze)
    g.remove(node)
    return True


def _parts(starts: Value) -> list[Value | int] | None:
    """Each entry of a 1-D ``starts``: an int when constant, else the 0-d value it was unsqueezed from."""
    array = constant_value(starts)
    if array is not None:
        return [int(v) for v in np.asarray(array).reshape(-1)]
    node = starts.producer
    pieces = list(node.inputs) if node is not None and node.op == "Concat" else [starts]
    found: list[Value | int] = []
    for piece in pieces:
        array = constant_value(piece)
        if array is not None:
            found.extend(int(v) for v in np.asarray(array).reshape(-1))
            continue
        unsqueeze = piece.producer if piece is not None else None
        if unsqueeze is None or unsqueeze.op != "Unsqueeze" or unsqueeze.inputs[0] is None \
                or unsqueeze.inputs[0].shape != ():
            return None
        found.append(unsqueeze.inputs[0])
    return found


def _sizes(ends: Value, starts: Value) -> list[int] | None:
    """The constant lengths when ``ends`` is ``starts + lengths``."""
    node = ends.producer
    if node is None or node.op != "Add" or len(node.inputs) != 2:
        return None
    for a, b in (node.inputs, node.inputs[::-1]):
        lengths = constant_value(b)
        if a is starts and lengths is not None:
            return [int(v) for v in np.asarray(lengths).reshape(-1)]
    return None


def _squeezed_axes(squeeze: Node, rank: int) -> set[int] | None:
    axes = squeeze.inputs[1] if len(squeeze.inputs) > 1 else None
    listed = constant_value(axes) if axes is not None else squeeze.attrs.get("axes")
    return None if listed is None else {int(a) % rank for a in np.asarray(listed).reshape(-1)}

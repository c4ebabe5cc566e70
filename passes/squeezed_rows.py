"""``Squeeze(Slice(x, s, s + 1))`` along an axis whose start ``s`` is data is ``Gather(x, s)``.

``jax.lax.dynamic_slice(table, (token, 0), (1, d))[0]`` — a greedy decoder's embedding lookup as
jax2onnx writes it — is a Slice from ``Concat(Unsqueeze(token), 0)`` to that plus ``[1, d]``, then a
Squeeze of axis 0. TensorRT reads a slice's bounds as shape tensors, which its builder cannot take
from values a loop computes in each trip (``makeScopeNodesContiguous``); a Gather reads its index as
data. The rewrite is exact in every run the model allows: the Squeeze needs the slice to be one row
long, and a one-row ONNX Slice starting at ``s`` (``s + dim`` when negative) is the row that Gather
picks for ``s`` (it too counts a negative index from the end; a start below ``-dim``, which Slice clamps
to the first row, is raised to ``-dim``). Axes with constant bounds stay a Slice.

tf2onnx writes ``x[:, i]`` as a Slice from ``[0, i]`` with ends raised past every axis (1e9) and a step
past the axis on ``i``'s: one element at ``i``, the same row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.ir import Graph, Node, Value, constant_value
from loopc.ir.builder import Builder
from loopc.passes._offending import Offending
from loopc.passes._why import declined, kept_if, no
from loopc.passes._util import TO_THE_END, listed_axes, lower_bounds, vector_entries
from loopc.passes.manager import PassResult


class SqueezedRows:
    name = "squeezed-rows"
    benefit = 100  # see loopc.passes.legalize

    def __call__(self, graph: Graph) -> PassResult:
        rewritten, offending = 0, Offending()
        for g, node in list(graph.find("Squeeze", "Slice")):
            if node.op == "Squeeze" and node.graph is g:
                sliced = node.inputs[0].producer if node.inputs[0] is not None else None
                if sliced is None or sliced.op != "Slice":
                    continue
                with kept_if(lambda: offending.node(sliced)):
                    done = _rewrite(g, node, sliced)
                if done:
                    offending.changed()
                    rewritten += 1
            elif node.op == "Slice" and not _squeezed(node) and offending.node(node):
                declined("the slice's result is not squeezed: only a one-row slice squeezed away is a row", at=node)
        return PassResult(graph, rewritten > 0, {"slices": rewritten} if rewritten else {})


def _squeezed(node: Node) -> bool:
    """Whether a Squeeze reads the result of ``node``."""
    return any(isinstance(u.user, Node) and u.user.op == "Squeeze" and u.slot == 0 for u in node.outputs[0].uses())


def _rewrite(g: Graph, squeeze: Node, node: Node) -> bool:
    """Replace ``squeeze`` of the Slice ``node`` by Gathers when it picks rows at data starts; else say why."""
    sliced = node.outputs[0]
    if len(sliced.uses()) != 1:
        return no("the slice's result is read by more than the Squeeze", at=node)
    if len(node.inputs) < 4:
        return no("the slice names no axes", at=node)
    data, starts, ends, axes = node.inputs[:4]
    steps = constant_value(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else None
    axis_list = constant_value(axes)
    if data is None or data.shape is None or starts is None or ends is None:
        return no("the slice's data has no known rank", at=node)
    if axis_list is None:
        return no("the slice's axes are not constant", at=node)
    rank = len(data.shape)
    at = [int(a) % rank for a in np.asarray(axis_list).reshape(-1)]
    begins, lengths = vector_entries(starts), _lengths(data, at, starts, ends, steps)
    squeezed = _squeezed_axes(squeeze, rank)
    if begins is None or len(begins) != len(at):
        return no("the slice's starts are not constants and unsqueezed scalars, one per axis", at=node)
    if lengths is None or len(lengths) != len(at):
        return no("the slice's ends are not its starts plus constant lengths (nor past the end of every axis)",
                  at=node)
    if squeezed is None:
        return no("the Squeeze's axes are not constant", at=node)
    rows = {a: begin for a, begin, length in zip(at, begins, lengths) if isinstance(begin, Value) and length == 1}
    if not rows or set(rows) != squeezed:
        return no("the axes the Squeeze drops are not the axes the slice cuts one row of at a computed start",
                  at=node)
    if any(a not in rows and (isinstance(b, Value) or b < 0) for a, b in zip(at, begins)):
        return no("the slice has a computed start off the squeezed axes, or a negative constant one", at=node)
    dims = {a: data.shape[a] for a in rows}
    if not all(isinstance(d, int) for d in dims.values()):
        return no("the slice's data has no static length along a squeezed axis", at=node)
    made: list[Node] = []
    b = Builder(g, made).standing_for(squeeze)
    kept = [(begin, data.shape[a] if length is None else begin + length, a)
            for a, begin, length in zip(at, begins, lengths) if isinstance(begin, int)]
    kept = [(begin, end, a) for begin, end, a in kept if (begin, end) != (0, data.shape[a])]
    result = data
    if kept:
        result = b.op("Slice", [data, *(b.const(np.array(column, np.int64), name=f"{node.name}_{what}")
                                        for what, column in zip(("starts", "ends", "axes"), zip(*kept)))],
                      name=f"{sliced.name}_static", dtype=data.dtype)
    for axis in sorted(rows, reverse=True):  # each Gather drops its axis: the later axes first
        start = rows[axis]
        # a start below -dim is clamped to the first row by Slice; Gather must be shown it
        first = b.const(np.array(-int(dims[axis] or 0), start.dtype), name=f"{squeeze.outputs[0].name}_first{axis}")
        index = b.op("Max", [start, first], name=f"{squeeze.outputs[0].name}_at{axis}", dtype=start.dtype, shape=())
        result = b.op("Gather", [result, index], {"axis": axis}, name=f"{squeeze.outputs[0].name}_row{axis}",
                      dtype=data.dtype)
    g.insert_before(squeeze, made)
    squeeze.outputs[0].replace_all_uses_with(result)
    g.remove(squeeze)
    g.remove(node)
    return True


def _lengths(data: Value, at: list[int], starts: Value, ends: Value, steps: Any) -> list[int | None] | None:
    """Each sliced axis's length, None for "to the end of the axis": the ``lengths`` of ``ends = starts +
    lengths`` (unit steps), or tf2onnx's strided slice, whose ends are all at least :data:`TO_THE_END`:
    one element where the step is that large too, the rest of the axis where it is 1."""
    step_list = [1] * len(at) if steps is None else [int(v) for v in np.asarray(steps).reshape(-1)]
    if all(step == 1 for step in step_list):
        sizes = _sizes(ends, starts)
        if sizes is not None:
            return list(sizes)
    lows = lower_bounds(ends)
    if lows is None or len(lows) != len(at) or len(step_list) != len(at) \
            or any(low is None or low < TO_THE_END for low in lows):
        return None
    if any(step != 1 and step < TO_THE_END for step in step_list):
        return None
    return [None if step == 1 else 1 for step in step_list]


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
    listed = listed_axes(squeeze)
    return None if listed is None else {a % rank for a in listed}

"""A ScatterND that keeps only its in-range writes (``NonZero`` of a mask) writes the rest to a spare row.

jax's ``x.at[i].set(v)`` (``FILL_OR_DROP``), as jax2onnx writes it, drops out-of-range writes by
gathering the indices and updates at ``NonZero(mask)``. NonZero's length follows its data, which
TensorRT's builder cannot place in a loop (``makeScopeNodesContiguous``). The same writes happen when
every index is kept and a dropped one is sent to a row appended past the end of axis 0, cut off after:
``Slice(ScatterND(Concat(x, x[:1]), Where(mask, idx, [n, 0...]), v), 0, n)``. The kept rows are
written exactly as before; the spare row, written or not, is not in the result. The spare is a copy of
the first row rather than a constant so that its other dims may be dynamic (a decoder's batch).

When: the indices and updates are both gathered on axis 0 at the positions of one 1-D mask, axis 0 of
the data has a static length ``n`` of at least one row, and the scatter has no reduction.
"""

from __future__ import annotations

import numpy as np

from loopc.ir import Graph, Node, Value, constant_value
from loopc.ir.builder import Builder
from loopc.passes._offending import Offending
from loopc.passes._why import kept_if, no
from loopc.passes.manager import PassResult
from loopc.semantics.attributes import attr


class DroppedWrites:
    name = "dropped-writes"
    benefit = 90  # see loopc.passes.legalize

    def __call__(self, graph: Graph) -> PassResult:
        rewritten, offending = 0, Offending()
        for g, node in list(graph.find("ScatterND")):
            with kept_if(lambda: any(offending.node(n) for n in _data_sized_behind(node))):
                done = _rewrite(g, node)
            if done:
                offending.changed()
                rewritten += 1
        return PassResult(graph, rewritten > 0, {"scatters": rewritten} if rewritten else {})


def _data_sized_behind(scatter: Node) -> list[Node]:
    """The NonZero nodes whose positions ``scatter``'s indices or updates are gathered at (a few reshapes
    apart): the nodes TensorRT cannot build in a loop that this rewrite removes."""
    found = []
    for value in scatter.inputs[1:3]:
        picked = _gathered_at(value)
        node = picked[1].producer if picked is not None else None
        while node is not None and node.op in ("Squeeze", "Reshape", "Transpose") and node.inputs[0] is not None:
            node = node.inputs[0].producer
        if node is not None and node.op == "NonZero":
            found.append(node)
    return found


def _rewrite(g: Graph, scatter: Node) -> bool:
    """Write ``scatter``'s dropped writes to a spare row instead (see the module's docstring); else say why."""
    if attr(scatter, "reduction") != "none":
        return no(f"the ScatterND combines its writes (reduction {scatter.attrs['reduction']})", at=scatter)
    data, kept_indices, kept_updates = scatter.inputs[:3]
    picked = [_gathered_at(v) for v in (kept_indices, kept_updates)]
    if picked[0] is None or picked[1] is None or picked[0][1] is not picked[1][1]:
        return no("the ScatterND's indices and updates are not both gathered on axis 0 at the same positions",
                  at=scatter)
    if data is None or data.shape is None or not data.shape or not isinstance(data.shape[0], int):
        return no("the ScatterND's data has no static length along axis 0", at=scatter)
    (indices, positions), (updates, _) = picked[0], picked[1]
    mask = _mask_of(positions)
    depth = indices.shape[-1] if indices.shape else None
    if mask is None or mask.shape is None or len(mask.shape) != 1:
        return no("the positions its indices are gathered at are not those of a NonZero of one 1-D boolean mask, "
                  "flattened", at=scatter)
    if indices.shape is None or len(indices.shape) != 2 or not isinstance(depth, int) \
            or indices.shape[0] != mask.shape[0]:
        return no("the ScatterND's gathered indices are not a [k, depth] matrix with one row per mask entry",
                  at=scatter)
    rows = data.shape[0]
    if rows < 1:
        return no("the ScatterND's data has no row to copy as the spare one", at=scatter)
    made: list[Node] = []
    b = Builder(g, made).standing_for(scatter)
    name = scatter.outputs[0].name
    ends = [b.const(np.array([at], np.int64), name=f"{name}_{what}") for what, at in (("from", 0), ("to", rows))]
    axis = b.const(np.array([0], np.int64), name=f"{name}_axis")
    first = b.const(np.array([1], np.int64), name=f"{name}_one_row")
    spare = b.op("Slice", [data, ends[0], first, axis], name=f"{name}_spare", dtype=data.dtype,
                 shape=(1, *data.shape[1:]))
    padded = b.op("Concat", [data, spare], {"axis": 0}, name=f"{name}_padded", dtype=data.dtype,
                  shape=(rows + 1, *data.shape[1:]))
    column = b.op("Unsqueeze", [mask, b.const(np.array([1], np.int64), name=f"{name}_column")],
                  name=f"{name}_kept", dtype=mask.dtype, shape=(mask.shape[0], 1))
    elsewhere = b.const(np.array([[rows] + [0] * (depth - 1)], indices.dtype), name=f"{name}_spare_index")
    sent = b.op("Where", [column, indices, elsewhere], name=f"{name}_indices", dtype=indices.dtype,
                shape=indices.shape)
    written = b.op("ScatterND", [padded, sent, updates], name=f"{name}_all", dtype=data.dtype, shape=padded.shape)
    b.op("Slice", [written, *ends, axis], out=Value(
        f"{name}_kept_rows", data.dtype, data.shape))
    result = made[-1].outputs[0]
    g.insert_before(scatter, made)
    scatter.outputs[0].replace_all_uses_with(result)
    g.remove(scatter)
    return True


def _gathered_at(value: Value | None) -> tuple[Value, Value] | None:
    """``(x, positions)`` when ``value`` is ``Gather(x, positions)`` on axis 0."""
    node = value.producer if value is not None else None
    if node is None or node.op != "Gather" or int(attr(node, "axis")) != 0:
        return None
    source, positions = node.inputs[:2]
    return None if source is None or positions is None else (source, positions)


def _mask_of(positions: Value) -> Value | None:
    """The 1-D mask when ``positions`` is its ``NonZero`` flattened to 1-D (by Squeeze, Reshape or a
    Transpose of the ``[1, k]`` positions)."""
    value = positions
    while value.producer is not None and value.producer.op in ("Squeeze", "Reshape", "Transpose"):
        node = value.producer
        if node.op == "Transpose" and list(node.attrs.get("perm", [])) not in ([1, 0], []):
            return None
        if node.op == "Reshape" and np.size(constant_value(node.inputs[1])) != 1:
            return None
        source = node.inputs[0]
        if source is None:
            return None
        value = source
    nonzero = value.producer
    if nonzero is None or nonzero.op != "NonZero" or positions.shape is None or len(positions.shape) != 1:
        return None
    mask = nonzero.inputs[0]
    return mask if mask is not None and mask.dtype == np.dtype(bool) else None

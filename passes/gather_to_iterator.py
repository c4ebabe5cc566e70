"""``x[i]`` inside a loop — a loop-invariant tensor indexed by the trip number — is an iterator.

ONNX Loop bodies read their inputs by the iteration number, or by a counter of their own that
starts at 0 and steps by 1 (tf2onnx, TorchScript; see :mod:`loopc.passes._induction`):
``Gather(x, i)`` (``x[i]``) or ``Slice(x, [i], [i + 1], [a])`` (``x[i:i+1]``, PyTorch's export of slicing). TensorRT iterates
natively with IIteratorLayer, which streams slices instead of indexing each trip (and its builder
rejects some counter-indexed slices outright). The rewrite is exact: both read slice ``i`` along
the same axis (the Slice form keeps the axis, so an Unsqueeze restores it), and both are errors
when ``i`` is past the end.
"""

from __future__ import annotations

import numpy as np

from loopc.ir import Graph, Loop, LoopIterator, Node, Value, constant_value
from loopc.ir.builder import I64, Builder
from loopc.passes._induction import Affine, Induction
from loopc.passes._offending import Offending
from loopc.passes._why import declined, kept_if
from loopc.passes._util import TO_THE_END, lower_bounds, rows_cut, same_dim, vector_entries
from loopc.passes.manager import PassResult
from loopc.semantics.attributes import attr


class GatherToIterator:
    name = "gather-to-iterator"
    benefit = 30  # see loopc.passes.legalize

    def __call__(self, graph: Graph) -> PassResult:
        rewritten, offending = 0, Offending()
        for outer, node in graph.structured():
            # TensorRT's builder wants an iterator exactly as long as the loop's trip count, so
            # a loop with none (a while loop) keeps its indexed reads
            if isinstance(node, Loop) and node.trip_count is not None:
                rewritten += self._rewrite(graph, outer, node, offending)
            elif isinstance(node, Loop):
                _uncounted(node, offending)
        return PassResult(graph, rewritten > 0, {"iterators": rewritten} if rewritten else {})

    def _rewrite(self, graph: Graph, outer: Graph, loop: Loop, offending: Offending) -> int:
        count = loop.trip_count
        assert count is not None  # __call__ rewrites counted loops only
        induction = Induction(loop)
        rewritten = 0
        for node in list(loop.body.nodes):
            if node.op not in ("Gather", "Slice"):
                continue
            with kept_if(lambda: offending.node(node)):
                found = _iterated(induction, node, count, nested=outer is not graph)
            if found is None:
                continue
            axis, reverse = found
            data = node.inputs[0]
            assert data is not None  # _iterated found its rows
            out = node.outputs[0]
            restored: list[Node] = []
            b = Builder(loop.body, restored)
            element = b.value(f"{out.name}_iter", out.dtype,
                              None if data.shape is None else data.shape[:axis] + data.shape[axis + 1:])
            loop.add_iterator(LoopIterator(element, data if reverse else _first_trips(outer, loop, data, axis), axis,
                                           reverse))
            if node.op == "Slice":  # x[i:i+1] keeps the axis x[i] drops
                axes = b.const(np.array([axis], np.int64), name=f"{out.name}_axis")
                element = b.op("Unsqueeze", [element, axes], name=f"{out.name}_kept", dtype=out.dtype, shape=out.shape)
                loop.body.insert_before(node, restored)
            out.replace_all_uses_with(element)
            loop.body.remove(node)
            offending.changed()
            rewritten += 1
        return rewritten


def _iterated(induction: Induction, node: Node, count: Value, nested: bool) -> tuple[int, bool] | None:
    """The axis of the invariant data the Gather or Slice ``node`` reads row ``i`` of on trip ``i`` (or row
    ``n - 1 - i``: then reversed), where an iterator can read it in a loop of ``count`` trips (one in a loop
    body when ``nested``); else None, saying why."""
    what = "the slice" if node.op == "Slice" else "the Gather"
    data = node.inputs[0] if node.inputs else None
    if data is None or not induction.invariant(data):
        return declined(f"{what}'s data changes between trips (an iterator reads a tensor made before the loop)",
                        at=node)
    axis = _gather_axis(induction, node) if node.op == "Gather" else _slice_axis(induction, node)
    reverse = node.op == "Gather" and axis is None and _reversed_index(induction, node, data)
    if reverse:
        axis = int(attr(node, "axis"))
    rank = len(data.shape) if data.shape is not None else None
    if axis is None:
        return declined(f"{what} does not read row i of its data on trip i: "
                        + ("its index is not the trip number" if node.op == "Gather" else
                           "its bounds are not [i] and [i + 1] for the trip number i"), at=node)
    if axis < 0 and rank is None:
        return declined(f"{what}'s axis is negative and its data's rank unknown", at=node)
    axis = axis + rank if axis < 0 and rank is not None else axis
    if (nested or reverse) and not trip_long(data, axis, count):
        # cutting data to the trips would put a Slice in the enclosing loop's body, and
        # TensorRT's builder fails on such an iterator input (makeScopeNodesContiguous)
        return declined(f"{what}'s data is not known to be as long as the loop's trips along axis {axis}, and "
                        + ("it reads the rows from the end" if reverse else
                           "cutting it to them would put a Slice in the enclosing loop"), at=node)
    return axis, reverse


def _uncounted(loop: Loop, offending: Offending) -> None:
    """Say why the slices of ``loop``, a loop with no trip count, that read a row by the trip number stay."""
    induction: Induction | None = None
    for node in loop.body.nodes:
        if node.op == "Slice" and offending.node(node):
            induction = induction or Induction(loop)
            if _slice_axis(induction, node) is not None:
                declined("the slice reads row i on trip i, but its loop has no trip count (it stops on a "
                         "condition), and an iterator must be exactly as long as the loop's trips", at=node)


def _first_trips(outer: Graph, loop: Loop, data: Value, axis: int) -> Value:
    """``data`` cut to the loop's trip count along ``axis``, unless it is known to be that long.

    TensorRT's builder rejects an iterator longer than its loop's trip count, which ONNX allows
    (the rows past the last trip are never read)."""
    count = loop.trip_count
    assert count is not None
    if trip_long(data, axis, count):
        return data
    nodes: list[Node] = []
    b = Builder(outer, nodes)
    trips = count
    if count.dtype != I64:
        trips = b.op("Cast", [count], {"to": 7}, name=f"{data.name}_trips_i64", dtype=I64, shape=count.shape)
    end = b.op("Reshape", [trips, b.const(np.array([1], np.int64), name=f"{data.name}_trips_dims")],
               name=f"{data.name}_trips_end")
    start = b.const(np.array([0], np.int64), name=f"{data.name}_trips_start")
    axes = b.const(np.array([axis], np.int64), name=f"{data.name}_trips_axis")
    shape = None if data.shape is None else data.shape[:axis] + (None,) + data.shape[axis + 1:]
    cut = b.op("Slice", [data, start, end, axes], name=f"{data.name}_trips", dtype=data.dtype, shape=shape)
    outer.insert_before(loop, nodes)
    return cut


def _length_of(data: Value, axis: int, count: Value) -> bool:
    """Whether ``count`` is ``data``'s length along ``axis``: both static, or ``Shape(data)[axis]``."""
    known = constant_value(count)
    if known is not None and data.shape is not None and isinstance(data.shape[axis], int):
        return int(np.asarray(known).reshape(-1)[0]) == data.shape[axis]
    node = count.producer
    if node is None or node.op != "Gather" or node.inputs[0] is None or node.inputs[0].producer is None:
        return False
    shape = node.inputs[0].producer
    index = constant_value(node.inputs[1])
    if shape.op != "Shape" or shape.attrs or shape.inputs[0] is None or index is None or np.size(index) != 1:
        return False
    measured, at = shape.inputs[0], int(np.asarray(index).reshape(-1)[0])
    return (measured is data and at == axis) or same_dim((measured, at), data, axis) or _same_symbol(
        measured, at, data, axis)


def _same_symbol(a: Value, i: int, b: Value, j: int) -> bool:
    """Whether dim ``i`` of ``a`` and dim ``j`` of ``b`` carry one symbolic name (in ONNX, one size)."""
    if a.shape is None or b.shape is None or not (-len(a.shape) <= i < len(a.shape) and -len(b.shape) <= j < len(b.shape)):
        return False
    return isinstance(a.shape[i], str) and a.shape[i] == b.shape[j]


def trip_long(data: Value, axis: int, count: Value) -> bool:
    """Whether ``data`` is provably ``count`` long along ``axis``, as an iterator of a loop of ``count`` trips must be
    for TensorRT's builder: by its dims, or because it is already cut to ``count``."""
    cut = rows_cut(data)
    return _length_of(data, axis, count) or (cut is not None and cut[1:] == (count, axis))


def _gather_axis(induction: Induction, node: Node) -> int | None:
    index = node.inputs[1]
    if index is None or index.shape != () or not _is_trip(induction, index):
        return None
    return int(attr(node, "axis"))


def _slice_axis(induction: Induction, node: Node) -> int | None:
    """The axis of ``Slice(x, [i], [i + 1], [axis], [1])`` with ``i`` the trip number (or of tf2onnx's
    strided slice of row ``i``, see :func:`_strided_axis`), else None."""
    starts, ends = node.inputs[1], node.inputs[2]
    axes = node.inputs[3] if len(node.inputs) > 3 else None
    steps = node.inputs[4] if len(node.inputs) > 4 else None
    start, end = induction.affine(starts), induction.affine(ends)
    if start is None or end is None or not start.is_counter or end != Affine(None, 1, 1):
        return _strided_axis(induction, node)
    if _shape(starts) != (1,) or (steps is not None and not _is(steps, [1])):
        return None
    if axes is None:
        return 0
    value = constant_value(axes)
    return int(np.asarray(value).reshape(-1)[0]) if value is not None and np.asarray(value).size == 1 else None


def _strided_axis(induction: Induction, node: Node) -> int | None:
    """The axis ``a`` of tf2onnx's ``x[:, i, :]``: a Slice over every axis of ``x`` whose starts are
    ``[0, .., i, .., 0]``, whose steps are 1 and ends at least :data:`TO_THE_END` on the other axes, and
    that takes one row on ``a``: a step and end of at least :data:`TO_THE_END` (the ends come as
    ``Max(starts + 1, 10^9)``), or step 1 and end ``i + 1``. Row ``i`` along ``a``, the others whole,
    as TensorFlow means its slice, and as an iterator reads."""
    rank = len(node.inputs[0].shape) if node.inputs[0] is not None and node.inputs[0].shape is not None else None
    axes = constant_value(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] is not None else None
    steps = constant_value(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else None
    starts, ends = vector_entries(node.inputs[1]), lower_bounds(node.inputs[2])
    if rank is None or axes is None or steps is None or starts is None or ends is None:
        return None
    axes_list = [int(a) % rank for a in np.asarray(axes).reshape(-1)]
    steps_list = [int(v) for v in np.asarray(steps).reshape(-1)]
    if sorted(axes_list) != list(range(rank)) or not len(starts) == len(ends) == len(steps_list) == rank:
        return None
    picked = [(k, v) for k, v in enumerate(starts) if isinstance(v, Value)]
    if len(picked) != 1 or not _is_trip(induction, picked[0][1]):
        return None
    k = picked[0][0]
    whole = all(starts[j] == 0 and steps_list[j] == 1 and (ends[j] or 0) >= TO_THE_END for j in range(rank) if j != k)
    end_entries = vector_entries(node.inputs[2])
    end_k = end_entries[k] if end_entries is not None else None
    one_row = (steps_list[k] >= TO_THE_END and (ends[k] or 0) >= TO_THE_END) or (
        steps_list[k] == 1 and isinstance(end_k, Value) and induction.affine(end_k) == Affine(None, 1, 1))
    return axes_list[k] if whole and one_row else None


def _reversed_index(induction: Induction, node: Node, data: Value) -> bool:
    """Whether ``node`` is ``Gather(data, n - 1 - t)`` on trip ``t``, ``n`` being ``data``'s length along the
    gathered axis: a reversed iterator (given that ``data`` is as long as the loop runs trips)."""
    index = node.inputs[1]
    found = induction.affine(index) if index is not None and index.shape == () else None
    if found is None or found.step != -1 or data.shape is None:
        return False
    axis = int(attr(node, "axis")) % max(len(data.shape), 1)
    if found.base is None:
        size = data.shape[axis]
        return isinstance(size, int) and found.const == size - 1
    base, const = found.base, found.const
    if const == 0 and base.producer is not None and base.producer.op == "Sub" and _is(base.producer.inputs[1], 1):
        base, const = base.producer.inputs[0], -1  # type: ignore[assignment]
    length = base.producer if base is not None else None
    measured = length.inputs[0].producer if length is not None and length.op == "Gather" and length.inputs[0] else None
    return (const == -1 and measured is not None and measured.op == "Shape" and not measured.attrs
            and measured.inputs[0] is data and _is(length.inputs[1], axis))  # type: ignore[union-attr]


def _is_trip(induction: Induction, value: Value) -> bool:
    found = induction.affine(value)
    return found is not None and found.is_counter


def _shape(value: Value | None) -> object:
    return None if value is None else value.shape


def _is(value: Value | None, expected: object) -> bool:
    found = constant_value(value)
    return found is not None and np.array_equal(np.asarray(found).reshape(-1), np.asarray(expected).reshape(-1))

"""Small IR queries and edits the passes share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from loopc.ir import Graph, If, Loop, LoopOutput, Node, Recurrence, Value, constant_int, constant_value
from loopc.ir.bounds import Bounder
from loopc.ir.dependence import computed_from
from loopc.ir.builder import Builder
from loopc.ir.ops import traits
from loopc.semantics.attributes import attr

I64 = np.dtype(np.int64)


def recurrences(graph: Graph) -> list[tuple[Graph, Loop, Recurrence]]:
    """Every (enclosing graph, loop, recurrence) at any depth, listed up front so passes may edit."""
    return [(g, node, rec) for g, node in graph.structured() if isinstance(node, Loop) for rec in list(node.recurrences)]


def replace_all(replacements: dict[Value, Value]) -> int:
    """Every read of a key of ``replacements`` reads its replacement instead (through the use lists, so
    the cost is the number of reads moved). Chains resolve to their end: ``{a: b, b: c}`` makes reads of
    ``a`` read ``c``."""
    moved = 0
    for old, new in replacements.items():
        seen = 0
        while new in replacements and seen <= len(replacements):
            new, seen = replacements[new], seen + 1
        moved += old.replace_all_uses_with(new)
    return moved


def constant_trips(loop: Loop) -> int | None:
    """``loop``'s trip count when it is a constant (as written: not yet saturated), else None."""
    value = constant_value(loop.trip_count)
    return None if value is None else int(np.asarray(value).reshape(-1)[0])


def runs_a_trip(loop: Loop) -> bool:
    """Whether every run of ``loop`` runs at least one trip, from its trip count (a condition, which may stop
    it before the first, is the caller's to rule out)."""
    trips = constant_trips(loop)
    if trips is not None:
        return trips >= 1
    interval = Bounder().interval(loop.trip_count)
    return interval is not None and interval[0] >= 1


class TripCounter(NamedTuple):
    """A carried count of a loop's trips: in a trip, before it (``before``) and with it (``after``); after the
    loop, the trips run (``run``)."""

    before: Value
    after: Value
    run: Value


def stopping_branch(value: Value) -> tuple[If, Graph] | None:
    """When ``value`` is an If's output that one of its branches yields as a constant false: the If and that branch.
    Read as a loop's next condition, it is a ``break``: a trip that takes that branch is the last."""
    node = value.producer
    if not isinstance(node, If):
        return None
    k = node.outputs.index(value)
    for branch in node.subgraphs():
        held = constant_value(branch.outputs[k])
        if held is not None and np.asarray(held).size == 1 and not bool(np.asarray(held).reshape(-1)[0]):
            return node, branch
    return None


def trip_counter(outer: Graph, loop: Loop) -> TripCounter:
    """Count ``loop``'s trips in a recurrence from 0, stepping by 1 (what :func:`trips_run` reads back)."""
    before: list[Node] = []
    b = Builder(outer, before)
    zero = b.const(np.array(0, np.int64), name=f"{loop.name}_trips0")
    outer.insert_before(loop, before)
    made: list[Node] = []
    body = Builder(loop.body, made)
    state = body.value(f"{loop.name}_trips", I64, ())
    step = body.op("Add", [state, body.const(np.array(1, np.int64), name=f"{loop.name}_one")],
                   name=f"{loop.name}_trips_next")
    first = next(iter(loop.body.nodes), None)  # at the top of the body, so that any node of a trip may read it
    if first is None:
        for node in made:
            loop.body.add(node)
    else:
        loop.body.insert_before(first, made)
    loop.add_recurrence(Recurrence(state, zero, step))
    final = b.value(f"{loop.name}_trips_run", I64, ())
    loop.add_output(LoopOutput("last", state, final))
    return TripCounter(state, step, final)


def trips_run(outer: Graph, loop: Loop) -> Value:
    """The number of trips ``loop`` ran, as a value after it: a carried counter's last value."""
    return trip_counter(outer, loop).run


def first_rows(b: Builder, padded: Value, count: Value, axis: int) -> Value:
    """``padded[..., :count, ...]`` (along ``axis``): a while loop's concatenated output cut from its padded
    length to the trips actually run (``count``, an int64 scalar)."""
    axes = b.const(np.array([axis], np.int64), name=f"{padded.name}_axes")
    end = b.op("Unsqueeze", [count, b.const(np.array([0], np.int64), name=f"{padded.name}_dim0")],
               name=f"{padded.name}_end")
    start = b.const(np.array([0], np.int64), name=f"{padded.name}_start")
    return b.op("Slice", [padded, start, end, axes], name=f"{padded.name}_cut")


def rows_cut(value: Value) -> tuple[Value, Value, int] | None:
    """``(source, count, axis)`` when ``value`` is ``source``'s first ``count`` rows along ``axis``, written as
    :func:`first_rows` writes it (its end ``count`` unsqueezed or reshaped to one entry, cast first or not)."""
    node = value.producer
    if node is None or node.op != "Slice" or len(node.inputs) != 4 or node.inputs[0] is None:
        return None
    end = node.inputs[2].producer if node.inputs[2] is not None else None
    count = end.inputs[0] if end is not None and end.op in ("Unsqueeze", "Reshape") else None
    if count is not None and count.producer is not None and count.producer.op == "Cast":
        count = count.producer.inputs[0]
    axis = constant_int(node.inputs[3])
    if count is None or axis is None or constant_int(node.inputs[1]) != 0:
        return None
    return node.inputs[0], count, axis


def merge_stacked_axis(b: Builder, stacked: Value, piece: Value, axis: int, name: str) -> Value:
    """Merge axes ``axis`` and ``axis + 1`` of ``stacked`` (pieces of ``piece``'s shape stacked on a new
    ``axis``): concatenating the pieces along ``axis``. ``piece`` needs a known rank."""
    assert piece.shape is not None
    rank = len(piece.shape)
    sizes = [d for d in piece.shape if isinstance(d, int)]
    if len(sizes) == rank:
        sizes[axis] = -1
        dims = b.const(np.array(sizes, np.int64), name=f"{name}_dims")
        return b.op("Reshape", [stacked, dims], name=f"{name}_merged")
    shape = b.op("Shape", [stacked], name=f"{name}_shape", dtype=I64, shape=(rank + 1,))
    parts = []
    for part, (start, end) in (("head", (0, axis)), ("tail", (axis + 2, rank + 1))):
        starts = b.const(np.array([start], np.int64), name=f"{name}_{part}_start")
        ends = b.const(np.array([end], np.int64), name=f"{name}_{part}_end")
        parts.append(b.op("Slice", [shape, starts, ends], name=f"{name}_{part}"))
    joined = b.const(np.array([-1], np.int64), name=f"{name}_joined")
    target = b.op("Concat", [parts[0], joined, parts[1]], {"axis": 0}, name=f"{name}_dims")
    return b.op("Reshape", [stacked, target], name=f"{name}_merged")


#: A Slice end this large keeps the whole axis (exporters write INT64_MAX, or INT32_MAX).
_WHOLE = 2**31 - 1


def dim_origin(value: Value, axis: int) -> int | tuple[Value, int]:
    """Where ``value``'s dim ``axis`` comes from: its size when static, else the earliest (tensor, axis) it
    provably equals, through ops that keep a dim, a loop's iterators and a Resize's kept dims. Two dims with
    the same origin are equal in every run, whatever their sizes."""
    seen = 0
    while seen < 10_000:
        seen += 1
        shape = value.shape
        if shape is None or not -len(shape) <= axis < len(shape):
            return value, axis
        axis %= len(shape)
        if isinstance(shape[axis], int):
            return int(shape[axis])  # type: ignore[arg-type]
        step = _dim_before(value, axis)
        if step is None:
            return value, axis
        value, axis = step
    return value, axis


def _dim_before(value: Value, axis: int) -> tuple[Value, int] | None:
    """The (operand, axis) ``value``'s dim ``axis`` equals, one op back, or None."""
    node = value.producer
    if node is None:
        return _iterated_dim(value, axis)
    data = node.inputs[0] if node.inputs else None
    if data is None or data.shape is None:
        return None
    if traits(node.op).same_shape:
        return data, axis
    if traits(node.op).elementwise and value.shape is not None:
        return _broadcast_dim(node, len(value.shape), axis)
    if node.op == "MatMul" and len(data.shape) >= 2 and axis < len(data.shape) - 1 and _rank(node.input(1)) == 2:
        return data, axis  # the batch dims and rows of x·W
    if node.op in ("Unsqueeze", "Squeeze"):
        axes = constant_value(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] is not None else None
        if axes is None:
            return None
        rank = len(value.shape or ()) if node.op == "Unsqueeze" else len(data.shape)
        marked = sorted(int(a) % rank for a in np.asarray(axes).reshape(-1))
        if node.op == "Unsqueeze":
            return None if axis in marked else (data, axis - sum(1 for a in marked if a < axis))
        kept = [a for a in range(rank) if a not in marked]
        return data, kept[axis]
    if node.op == "Gather":
        index = node.inputs[1]
        if index is None or index.shape is None:
            return None
        where, width = int(attr(node, "axis")) % len(data.shape), len(index.shape)
        if axis < where:
            return data, axis
        return (data, axis - width + 1) if axis >= where + width else (index, axis - where)
    if node.op == "Slice" and _keeps_axis(node, axis, len(data.shape)):
        return data, axis
    if node.op == "Resize" and len(node.inputs) > 3 and node.inputs[3] is not None:
        return (data, axis) if same_dim(shape_entry_source(node.inputs[3], axis), data, axis) else None
    return None


def _broadcast_dim(node: Node, rank: int, axis: int) -> tuple[Value, int] | None:
    """The operand an elementwise result's dim ``axis`` comes from: the one operand of full rank, when every
    other one is too short to reach that dim (it broadcasts along the leading dims it lacks)."""
    full = [v for v in node.inputs if v is not None and _rank(v) == rank]
    others = [v for v in node.inputs if v is not None and v not in full]
    if len(full) != 1 or any(_rank(v) is None or rank - _rank(v) <= axis for v in others):  # type: ignore[operator]
        return None
    return full[0], axis


def _rank(value: Value | None) -> int | None:
    return None if value is None or value.shape is None else len(value.shape)


def same_dim(source: int | tuple[Value, int] | None, value: Value, axis: int) -> bool:
    """Whether a shape entry's ``source`` (see :func:`shape_entry_source`) is provably ``value``'s dim ``axis``."""
    if source is None:
        return False
    return (source if isinstance(source, int) else dim_origin(*source)) == dim_origin(value, axis)


def _keeps_axis(node: Node, axis: int, rank: int) -> bool:
    """Whether a Slice leaves ``axis`` whole: not sliced, or from 0 to the end with step 1."""
    parts = [constant_value(v) if v is not None else None for v in node.inputs[1:5]]
    if any(p is None for p in parts[:3]) or (len(node.inputs) > 4 and node.inputs[4] is not None and parts[3] is None):
        return False
    starts, ends, axes = (np.asarray(p).reshape(-1) for p in parts[:3])
    steps = np.asarray(parts[3]).reshape(-1) if len(node.inputs) > 4 and node.inputs[4] is not None else np.ones_like(starts)
    for start, end, at, step in zip(starts, ends, axes, steps):
        if int(at) % rank == axis and not (int(start) == 0 and int(end) >= _WHOLE and int(step) == 1):
            return False
    return True


def _iterated_dim(value: Value, axis: int) -> tuple[Value, int] | None:
    """An iterator's slice has its source's dims but the iterated one."""
    graph = next((u.user.graph for u in value.uses() if isinstance(u.user, Node)), None)
    loop = graph.owner if graph is not None else None
    if not isinstance(loop, Loop):
        return None
    for iterator in loop.iterators:
        if iterator.param is value:
            return iterator.source, axis if axis < iterator.axis else axis + 1
    return None


def shape_entry_source(vector: Value, index: int) -> int | tuple[Value, int] | None:
    """What entry ``index`` of the int64 vector ``vector`` is: a constant, or (tensor, axis) when it is that
    dim of the tensor; read through Concat, Slice, Cast, Unsqueeze and Gather of a ``Shape`` (of a scalar, or of
    constant entries of the vector)."""
    array = constant_value(vector)
    if array is not None:
        flat = np.asarray(array).reshape(-1)
        return int(flat[index]) if 0 <= index < flat.size else None
    node = vector.producer
    if node is None:
        return None
    if node.op == "Shape" and node.inputs[0] is not None:
        start = int(attr(node, "start"))
        rank = len(node.inputs[0].shape or ())
        return (node.inputs[0], index + (start % rank if rank else start)) if rank else None
    if node.op == "Concat":
        found = concat_piece(node, index)
        return None if found is None else shape_entry_source(*found)
    if node.op in ("Cast", "Identity") and node.inputs[0] is not None:
        return shape_entry_source(node.inputs[0], index)
    if node.op == "Unsqueeze" and node.inputs[0] is not None and node.inputs[0].shape == ():
        return _scalar_source(node.inputs[0])
    if node.op == "Gather" and int(attr(node, "axis")) == 0 and node.inputs[0] is not None:
        picks = constant_value(node.inputs[1])
        if picks is None or np.ndim(picks) != 1 or not 0 <= index < np.size(picks) or int(picks[index]) < 0:
            return None
        return shape_entry_source(node.inputs[0], int(picks[index]))
    if node.op == "Slice" and node.inputs[0] is not None and len(node.inputs) >= 3:
        first = constant_int(node.inputs[1])
        step = constant_int(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else 1
        if first is None or first < 0 or step != 1:
            return None
        return shape_entry_source(node.inputs[0], index + first)
    return None


def concat_piece(node: Node, index: int) -> tuple[Value, int] | None:
    """The operand of a Concat of 1-D pieces of static lengths that holds entry ``index``, and the entry's
    index in it."""
    for piece in node.inputs:
        if piece is None or piece.shape is None or len(piece.shape) != 1 or not isinstance(piece.shape[0], int):
            return None
        if index < piece.shape[0]:
            return piece, index
        index -= piece.shape[0]
    return None


def _scalar_source(scalar: Value) -> int | tuple[Value, int] | None:
    node = scalar.producer
    if node is not None and node.op in ("Cast", "Identity") and node.inputs[0] is not None:
        return _scalar_source(node.inputs[0])
    if node is not None and node.op == "Gather" and node.inputs[0] is not None:
        picked = constant_int(node.inputs[1])
        if picked is not None and node.inputs[1] is not None and node.inputs[1].shape == () and picked >= 0:
            return shape_entry_source(node.inputs[0], picked)
    return None


#: A slice bound at or past this is "to the end": tf2onnx writes 10^9 in a strided slice (and a step that leaves
#: after one element) for TF's ``x[:, i]``; PyTorch's exporters write INT64_MAX for ``x[-1:]``.
TO_THE_END = 10**9


def vector_entries(value: Value | None) -> list[int | Value] | None:
    """A 1-D integer vector entry by entry: an int where known, the scalar value where an Unsqueeze puts
    one (tf2onnx's ``Concat(c, Unsqueeze(i), c)``), through Casts."""
    if value is None:
        return None
    known = constant_value(value)
    if known is not None:
        return [int(v) for v in np.asarray(known).reshape(-1)]
    node = value.producer
    if node is None:
        return None
    if node.op == "Cast":
        return vector_entries(node.inputs[0])
    if node.op == "Unsqueeze" and node.inputs[0] is not None and node.inputs[0].shape == ():
        return [node.inputs[0]]
    if node.op == "Concat":
        parts = [vector_entries(v) for v in node.inputs]
        if any(p is None for p in parts):
            return None
        return [e for p in parts if p is not None for e in p]
    return None


def lower_bounds(value: Value | None) -> list[int | None] | None:
    """What each entry of a 1-D integer vector is at least (None: unknown), through Cast, Max and Concat."""
    if value is None:
        return None
    known = constant_value(value)
    if known is not None:
        return [int(np.floor(v)) for v in np.asarray(known, np.float64).reshape(-1)]
    node = value.producer
    if node is None:
        return None
    if node.op == "Cast":
        return lower_bounds(node.inputs[0])
    if node.op == "Max":
        sides = [b for b in (lower_bounds(v) for v in node.inputs) if b is not None]
        if not sides or len({len(b) for b in sides}) != 1:
            return None
        return [max((e for e in column if e is not None), default=None) for column in zip(*sides)]
    if node.op in ("Concat", "Unsqueeze"):
        parts = [vector_entries(value)]
        return None if parts[0] is None else [e if isinstance(e, int) else None for e in parts[0]]
    return None


def as_i64(b: Builder, name: str, value: Value) -> Value:
    """``value`` (a one-element count) as an int64 scalar."""
    if value.shape != ():
        value = b.op("Reshape", [value, b.const(np.zeros(0, np.int64), name=f"{name}_dims")], name=f"{name}_scalar",
                     shape=())
    return value if value.dtype == I64 else b.op("Cast", [value], {"to": 7}, name=f"{name}_i64", dtype=I64, shape=())


def listed_axes(node: Node) -> list[int] | None:
    """The axes a Squeeze, Unsqueeze or reduction lists as constants (operand 1, or the ``axes`` attribute of
    older opsets), as written; None when it lists none or they are computed."""
    operand = node.input(1)
    listed = constant_value(operand) if operand is not None else node.attrs.get("axes")
    return None if listed is None else [int(a) for a in np.asarray(listed).reshape(-1)]

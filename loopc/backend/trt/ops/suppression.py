"""NonMaxSuppression as a TensorRT loop over the boxes in score order.

TensorRT has an NMS layer (``add_nms``), but TensorRT-RTX's builder has no kernel for it ("has no
runners that implement it"), and its outputs follow another order (by score across classes, ties
unspecified). So the op is built from layers every builder has, following ONNX exactly:

* ``overlaps[b, i, j]``: box j overlaps box i by more than ``iou_threshold`` (IoU computed as
  onnxruntime computes it; degenerate boxes overlap nothing).
* ``rank[b, c, i]``: box i's place in class c's descending score order, ties to the lower index.
* A loop of N trips: trip r takes the box of rank r if no selected box suppressed it, records it,
  and suppresses the boxes it overlaps (its row of ``overlaps``, gathered).
* The first ``max_output_boxes_per_class`` recorded boxes of each (batch, class), read in
  (batch, class, rank) order: ONNX's output order.

The ranks and ``overlaps`` take B·C·N² and B·N² elements (comparisons of every pair), built once;
each trip reads one row per (batch, class).

A box count the data decides (boxes gathered by a NonZero, as detectors' score filters do) cannot size
a tensor in a TensorRT loop, so the boxes are padded to the count's static upper bound
(:mod:`loopc.ir.bounds`) with boxes that are never candidates and score below every real one: each
real box keeps its rank and its overlaps, so the result is the same.
"""

from __future__ import annotations

import math

from typing import Any

import numpy as np

from loopc.backend.trt.context import ConversionContext
from loopc.backend.trt.ops.nonzero import nonzero_positions
from loopc.backend.trt.registry import converter
from loopc.ir import Node
from loopc.ir.bounds import Bounder
from loopc.semantics.attributes import attr
from loopc.trt import trt

#: The most boxes padded to: the loop runs one trip per box over [B, N, N] overlaps.
MAX_PADDED_BOXES = 4096
#: Most elements of the [batches, classes, boxes, boxes] ranking table (2^26 floats: 256 MiB).
MAX_TABLE = 1 << 26


def _box_count(node: Node) -> int | str:
    """The static box count, or the bound padded to (a data-dependent count), or why there is none."""
    count = _unchecked_box_count(node)
    scores = node.inputs[1].shape if node.inputs[1] is not None else None
    if isinstance(count, int) and scores is not None and len(scores) == 3:
        table = math.prod(d for d in scores[:2] if isinstance(d, int) and d > 0) * count * count
        if table > MAX_TABLE:
            return (f"NonMaxSuppression of {count} boxes per class: its ranking table would hold {table} elements "
                    f"(more than {MAX_TABLE}); keep fewer candidates before it (TopK)")
    return count


def _unchecked_box_count(node: Node) -> int | str:
    boxes, scores = node.inputs[0], node.inputs[1]
    shape = boxes.shape if boxes is not None else None
    if shape is None or len(shape) != 3:
        return "NonMaxSuppression of boxes of unknown rank"
    if isinstance(shape[1], int):
        return shape[1]
    if not (isinstance(shape[0], int) and scores is not None and scores.shape is not None
            and all(isinstance(d, int) for d in scores.shape[:2])):
        return "NonMaxSuppression of a box count not known when the network is built, with batches or classes" \
               " not known either"
    bounder = Bounder()
    found = [b for b in ((bounder.of(boxes) or (None,) * 3)[1], (bounder.of(scores) or (None,) * 3)[2])
             if b is not None]
    if not found:
        return "NonMaxSuppression of a box count neither known nor bounded when the network is built (the" \
               " loop needs a static size to pad to)"
    if min(found) > MAX_PADDED_BOXES:
        return f"NonMaxSuppression of a box count bounded only by {min(found)} (more than {MAX_PADDED_BOXES})"
    return min(found)


def _static_boxes(node: Node) -> str | None:
    count = _box_count(node)
    return count if isinstance(count, str) else None


def _corners(ctx: ConversionContext, node: Node, boxes: Any, center: bool) -> list[Any]:
    """[first_min, first_max, second_min, second_max] of each box, each [B, N, 1] (first = y, or x)."""
    coords = [ctx.out(ctx.network.add_gather(boxes, ctx.constant(np.array([k], np.int32), node, f"coord{k}_idx"), 2),
                      node, f"coord{k}") for k in range(4)]
    if center:  # [x_center, y_center, width, height]
        two = ctx.constant(np.full((1, 1, 1), 2, np.float32), node, "two")
        halves = [ctx.elementwise(coords[k], two, "DIV", node, f"half{k}") for k in (2, 3)]
        return [ctx.elementwise(coords[k], half, op, node, f"{op.lower()}{k}")
                for k, half in zip((0, 1), halves) for op in ("SUB", "SUM")]
    return [ctx.elementwise(coords[a], coords[a + 2], op, node, f"{op.lower()}{a}")
            for a in (0, 1) for op in ("MIN", "MAX")]


def _overlaps(ctx: ConversionContext, node: Node, boxes: Any, center: bool, iou_threshold: Any) -> Any:
    """[B, N, N] FLOAT, 1 where box j overlaps box i by more than the threshold, else 0."""
    lo0, hi0, lo1, hi1 = _corners(ctx, node, boxes, center)

    def row(t: Any, name: str) -> Any:  # [B, N, 1] -> [B, 1, N]
        layer = ctx.network.add_shuffle(t)
        layer.first_transpose = (0, 2, 1)
        return ctx.out(layer, node, f"{name}_row")

    def extent(lo: Any, hi: Any, name: str) -> tuple[Any, Any]:
        """The box's own extent on an axis, and its intersection's with every other box (at least 0)."""
        own = ctx.elementwise(hi, lo, "SUB", node, f"{name}_extent")
        low = ctx.elementwise(lo, row(lo, f"{name}_lo"), "MAX", node, f"{name}_cut_lo")
        high = ctx.elementwise(hi, row(hi, f"{name}_hi"), "MIN", node, f"{name}_cut_hi")
        zero = ctx.constant(np.zeros((1, 1, 1), np.float32), node, f"{name}_zero")
        return own, ctx.elementwise(ctx.elementwise(high, low, "SUB", node, f"{name}_cut"), zero, "MAX", node,
                                    f"{name}_cut_pos")

    own0, cut0 = extent(lo0, hi0, "a0")
    own1, cut1 = extent(lo1, hi1, "a1")
    area = ctx.elementwise(own0, own1, "PROD", node, "area")  # [B, N, 1]
    inter = ctx.elementwise(cut0, cut1, "PROD", node, "intersection")
    union = ctx.elementwise(ctx.elementwise(area, row(area, "area"), "SUM", node, "areas"), inter, "SUB", node,
                            "union")
    zero = ctx.constant(np.zeros((1, 1, 1), np.float32), node, "zero")
    positive = [ctx.elementwise(t, zero, "GREATER", node, f"{name}_positive")
                for t, name in ((inter, "intersection"), (area, "area"), (row(area, "area_j"), "area_j"),
                                (union, "union"))]
    iou = ctx.elementwise(inter, union, "DIV", node, "iou")
    hit = ctx.elementwise(iou, iou_threshold, "GREATER", node, "too_close")
    for k, p in enumerate(positive):
        hit = ctx.elementwise(hit, p, "AND", node, f"overlap{k}")
    return ctx.cast(hit, trt().float32, node, "overlaps")


def _rank(ctx: ConversionContext, node: Node, scores: Any, n: int) -> Any:
    """[B, C, N] FLOAT: how many boxes come before box i in descending score order (ties: lower index)."""
    mine = ctx.reshape(scores, [0, 0, n, 1], node, "scores_i", zero_copies=True)
    theirs = ctx.reshape(scores, [0, 0, 1, n], node, "scores_j", zero_copies=True)
    higher = ctx.elementwise(theirs, mine, "GREATER", node, "higher")
    equal = ctx.elementwise(theirs, mine, "EQUAL", node, "tie")
    earlier = ctx.constant(np.tril(np.ones((n, n), bool), -1)[None, None], node, "earlier")  # j < i
    before = ctx.elementwise(higher, ctx.elementwise(equal, earlier, "AND", node, "tie_earlier"), "OR", node, "before")
    counted = ctx.cast(before, trt().float32, node, "before_f")
    return ctx.out(ctx.network.add_reduce(counted, trt().ReduceOperation.SUM, 1 << 3, False), node, "rank")


def _order(ctx: ConversionContext, node: Node, rank: Any, n: int) -> Any:
    """[B, C, N] INT32: the box of each rank (``rank`` inverted, once, before the loop)."""
    at = ctx.elementwise(ctx.reshape(rank, [0, 0, n, 1], node, "rank_col", zero_copies=True),
                         ctx.constant(np.arange(n, dtype=np.float32).reshape(1, 1, 1, n), node, "places"), "EQUAL",
                         node, "at_place")  # [B, C, box, rank]
    boxes = ctx.constant(np.arange(n, dtype=np.float32).reshape(1, 1, n, 1), node, "boxes_index")
    placed = ctx.elementwise(ctx.cast(at, trt().float32, node, "at_place_f"), boxes, "PROD", node, "placed")
    summed = ctx.out(ctx.network.add_reduce(placed, trt().ReduceOperation.SUM, 1 << 2, False), node, "order_f")
    return ctx.cast(summed, trt().int32, node, "order")


def _greedy(ctx: ConversionContext, node: Node, order: Any, candidates: Any, overlaps: Any, n: int
            ) -> tuple[Any, Any]:
    """The loop: per trip r, whether (batch, class)'s rank-r box is selected, and which box it is.
    Each trip reads one row of ``overlaps`` ([B, N, N]) per (batch, class): O(B·C·N) work."""
    T = trt()
    loop = ctx.network.add_loop()
    ctx.named(loop.add_trip_limit(ctx.constant(np.array(n, np.int32), node, "trips"), T.TripLimit.COUNT), node,
              "count")
    box = ctx.out(loop.add_iterator(order, 2, False), node, "box")  # [B, C]
    alive = ctx.named(loop.add_recurrence(candidates), node, "alive")
    box_col = ctx.reshape(box, [0, 0, 1], node, "box_col", zero_copies=True)
    pick = ctx.network.add_gather_v2(alive.get_output(0), box_col, T.GatherMode.ELEMENT)
    pick.axis = 2
    chosen = ctx.out(pick, node, "chosen")  # [B, C, 1]: the box is still a candidate
    row = ctx.network.add_gather_v2(overlaps, box_col, T.GatherMode.ND)
    row.num_elementwise_dims = 1
    overlapped = ctx.out(row, node, "overlapped")  # [B, C, N]
    half = ctx.constant(np.full((1, 1, 1), 0.5, np.float32), node, "half")
    hit = ctx.elementwise(ctx.elementwise(overlapped, half, "GREATER", node, "overlaps_row"), chosen, "AND", node,
                          "hit")
    alive.set_input(1, ctx.elementwise(alive.get_output(0), ctx.unary(hit, "NOT", node, "spared"), "AND", node,
                                       "still_alive"))
    outputs = []
    for name, t in (("selected", ctx.cast(chosen, T.int32, node, "chosen_i")), ("box", box_col)):
        step = ctx.reshape(t, [0, 0], node, f"{name}_step", zero_copies=True)
        out = loop.add_loop_output(step, T.LoopOutput.CONCATENATE, 2)
        out.set_input(1, ctx.constant(np.array(n, np.int32), node, f"{name}_length"))
        outputs.append(ctx.out(out, node, f"{name}_by_rank"))
    return outputs[0], outputs[1]


def _scalar_input(ctx: ConversionContext, node: Node, index: int, default: Any, dtype: Any) -> Any:
    """An optional scalar input (or ``default`` when absent) as a [1, 1, 1] tensor of ``dtype``."""
    value = node.inputs[index] if len(node.inputs) > index else None
    if value is None:
        return ctx.constant(np.full((1, 1, 1), default, dtype), node, f"input{index}_default")
    t = ctx.get(value, node)
    return ctx.reshape(ctx.cast(t, trt().float32 if dtype == np.float32 else t.dtype, node, f"input{index}_f"),
                       [1, 1, 1], node, f"input{index}_3d")


def _padded(ctx: ConversionContext, node: Node, t: Any, axis: int, size: int, value: float, name: str) -> Any:
    """``t`` (rank 3, static but for ``axis``, at most ``size`` long there) padded with ``value`` to ``size``."""
    dims = list(t.shape)
    dims[axis] = size
    filler = ctx.constant(np.full(dims, value, np.float32), node, f"{name}_filler")
    layer = ctx.network.add_slice(ctx.concat([t, filler], node, f"{name}_and_filler", axis=axis), [0] * 3, dims,
                                  [1] * 3)
    return ctx.out(layer, node, f"{name}_padded")


@converter("NonMaxSuppression", capability=_static_boxes)
def non_max_suppression(ctx: ConversionContext, node: Node) -> None:
    T = trt()
    boxes, scores = ctx.get(node.inputs[0], node), ctx.get(node.inputs[1], node)
    boxes = ctx.cast(boxes, T.float32, node, "boxes_f")
    scores = ctx.cast(scores, T.float32, node, "scores_f")
    n = _box_count(node)
    assert isinstance(n, int)
    real = None
    if int(boxes.shape[2]) == -1:  # four coordinates, as ONNX defines the input
        boxes = ctx.reshape(boxes, [int(boxes.shape[0]), -1, 4], node, "boxes_4")
    if int(boxes.shape[1]) == -1:
        count = ctx.cast(ctx.gather1(ctx.shape_of(boxes, node, "boxes_shape"), [1], node, "count"), T.float32, node,
                         "count_f")
        real = ctx.elementwise(ctx.constant(np.arange(n, dtype=np.float32)[None, None], node, "slots"),
                               ctx.reshape(count, [1, 1, 1], node, "count3"), "LESS", node, "real")
        boxes = _padded(ctx, node, boxes, 1, n, 0.0, "boxes")
        scores = _padded(ctx, node, scores, 2, n, -np.inf, "scores")  # after every real box in rank order
    center = int(attr(node, "center_point_box")) == 1
    iou_threshold = _scalar_input(ctx, node, 3, 0.0, np.float32)
    rank = _rank(ctx, node, scores, n)
    if len(node.inputs) > 4 and node.inputs[4] is not None:
        candidates = ctx.elementwise(scores, _scalar_input(ctx, node, 4, 0.0, np.float32), "GREATER", node, "scored")
    else:
        candidates = ctx.elementwise(rank, ctx.constant(np.full((1, 1, 1), -1, np.float32), node, "minus_one"),
                                     "GREATER", node, "scored")  # every box
    if real is not None:
        candidates = ctx.elementwise(candidates, real, "AND", node, "real_candidates")
    overlaps = _overlaps(ctx, node, boxes, center, iou_threshold)
    selected, box = _greedy(ctx, node, _order(ctx, node, rank, n), candidates, overlaps, n)
    # The first max_output_boxes_per_class selected of each (batch, class): a running count along rank.
    limit = _scalar_input(ctx, node, 2, 0, np.int64)
    limit = ctx.elementwise(limit, ctx.constant(np.full((1, 1, 1), n, np.int64), node, "n"), "MIN", node, "limit_n")
    limit = ctx.cast(ctx.elementwise(limit, ctx.constant(np.zeros((1, 1, 1), np.int64), node, "none"), "MAX", node,
                                     "limit_pos"), T.int32, node, "limit")
    axis = ctx.constant(np.array(2, np.int32), node, "rank_axis")
    running = ctx.out(ctx.network.add_cumulative(selected, axis, T.CumulativeOperation.SUM, False, False), node,
                      "running")
    within = ctx.unary(ctx.elementwise(running, limit, "GREATER", node, "over"), "NOT", node, "within")
    kept = ctx.elementwise(ctx.elementwise(selected, ctx.constant(np.ones((1, 1, 1), np.int32), node, "one"),
                                           "EQUAL", node, "is_selected"), within, "AND", node, "kept")
    positions = nonzero_positions(ctx, node, ctx.reshape(kept, [-1], node, "kept_flat"))  # (batch, class, rank)
    flat_box = ctx.reshape(box, [-1], node, "box_flat")
    box_index = ctx.out(ctx.network.add_gather(flat_box, positions, 0), node, "box_of")
    classes = int(scores.shape[1])
    if classes != -1:
        per_batch = ctx.scalar(classes * n, positions, node, "per_batch")
    else:
        shape = ctx.cast(ctx.shape_of(scores, node, "scores_shape"), T.int32, node, "scores_shape32")
        c = ctx.gather1(shape, [1], node, "classes")
        per_batch = ctx.elementwise(c, ctx.scalar(n, c, node, "n32"), "PROD", node, "per_batch")
    batch = ctx.elementwise(positions, per_batch, "FLOOR_DIV", node, "batch")
    in_batch = ctx.elementwise(positions, ctx.elementwise(batch, per_batch, "PROD", node, "batch_start"), "SUB",
                               node, "in_batch")
    cls = ctx.elementwise(in_batch, ctx.scalar(n, in_batch, node, "n_boxes"), "FLOOR_DIV", node, "class")
    columns = [ctx.reshape(t, [-1, 1], node, f"{name}_col") for t, name in
               ((batch, "batch"), (cls, "class"), (box_index, "box"))]
    ctx.set(node.outputs[0], ctx.cast(ctx.concat(columns, node, "rows", axis=1), T.int64, node))

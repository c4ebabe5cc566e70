"""NonMaxSuppression, lowered to a TensorRT loop, against onnxruntime and a case worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend.trt.oracle import check_onnx

HEADER = '<ir_version: 8, opset_import: ["" : 11]>'
RNG = np.random.default_rng(7)


def _boxes(batches: int, n: int, center: bool) -> np.ndarray:
    """Boxes that overlap often: corners in [0, 10), sizes in [1, 4) (corner pairs in either order)."""
    a = RNG.uniform(0, 10, (batches, n, 2)).astype(np.float32)
    size = RNG.uniform(1, 4, (batches, n, 2)).astype(np.float32)
    if center:
        return np.concatenate([a, size], axis=2)
    b = a + size
    flip = RNG.random((batches, n, 1)) < 0.3
    return np.concatenate([np.where(flip, b, a), np.where(flip, a, b)], axis=2).astype(np.float32)


@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("limit, iou, score", [(3, 0.3, 0.4), (100, 0.5, 0.0), (2, 0.0, -1.0), (0, 0.5, 0.1)])
def test_nms_against_onnxruntime(center, limit, iou, score):
    boxes, scores = _boxes(2, 12, bool(center)), RNG.random((2, 3, 12)).astype(np.float32)
    scores[0, 1, 3] = scores[0, 1, 5]  # a tie: the lower index comes first
    check_onnx(f"""{HEADER}
        g (float[2,12,4] boxes, float[2,3,12] scores, int64[1] m, float[1] iou, float[1] score) => (int64[K,3] y) {{
            y = NonMaxSuppression <center_point_box = {center}> (boxes, scores, m, iou, score)
        }}""", {"boxes": boxes, "scores": scores, "m": np.array([limit], np.int64),
                "iou": np.array([iou], np.float32), "score": np.array([score], np.float32)})


def test_nms_without_the_optional_thresholds():
    """No score threshold keeps every box (negative scores too); the IoU threshold defaults to 0."""
    boxes, scores = _boxes(1, 8, False), RNG.uniform(-1, 1, (1, 2, 8)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[1,8,4] boxes, float[1,2,8] scores, int64[1] m) => (int64[K,3] y) {{
            y = NonMaxSuppression (boxes, scores, m)
        }}""", {"boxes": boxes, "scores": scores, "m": np.array([5], np.int64)})


def test_nms_by_hand():
    """Box 1 (score .9) is selected first and suppresses box 0 (IoU 81/100 > .5), not box 2 (disjoint);
    class 1's order is box 2, then 0 (1 is below the score threshold)."""
    boxes = np.array([[[0, 0, 10, 10], [0, 1, 10, 11], [20, 20, 30, 30]]], np.float32)
    scores = np.array([[[0.8, 0.9, 0.3], [0.5, 0.05, 0.7]]], np.float32)
    out = check_onnx(f"""{HEADER}
        g (float[1,3,4] boxes, float[1,2,3] scores, int64[1] m, float[1] iou, float[1] score) => (int64[K,3] y) {{
            y = NonMaxSuppression (boxes, scores, m, iou, score)
        }}""", {"boxes": boxes, "scores": scores, "m": np.array([10], np.int64),
                "iou": np.array([0.5], np.float32), "score": np.array([0.1], np.float32)})
    assert out["y"].tolist() == [[0, 0, 1], [0, 0, 2], [0, 1, 2], [0, 1, 0]]


@pytest.mark.parametrize("threshold", [0.3, 0.0, 1.0])
def test_nms_of_boxes_a_score_filter_kept(threshold):
    """The box count is NonZero's (a detector's score filter): padded to its bound, 12; the filter keeps 7 boxes
    (of which NMS keeps 6), every box (NMS keeps 9), or none."""
    rng = np.random.default_rng(11)
    corners = rng.uniform(0, 10, (12, 2)).astype(np.float32)
    boxes = np.concatenate([corners, corners + rng.uniform(1, 4, (12, 2)).astype(np.float32)], axis=1)
    scores = rng.random(12).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[12,4] boxes, float[12] scores, float threshold) => (int64[K] keep, int64[K,3] rows) {{
            live = Greater(scores, threshold)
            where = NonZero(live)
            index = Squeeze <axes = [0]> (where)
            kept_boxes = Gather <axis = 0> (boxes, index)
            kept_scores = Gather <axis = 0> (scores, index)
            batched = Unsqueeze <axes = [0]> (kept_boxes)
            scores2 = Unsqueeze <axes = [0]> (kept_scores)
            scores3 = Unsqueeze <axes = [0]> (scores2)
            m = Constant <value = int64[1] {{100}}> ()
            iou = Constant <value = float[1] {{0.1}}> ()
            rows = NonMaxSuppression (batched, scores3, m, iou)
            two = Constant <value = int64[1] {{2}}> ()
            column = Gather <axis = 1> (rows, two)
            keep = Squeeze <axes = [1]> (column)
        }}""", {"boxes": boxes, "scores": scores, "threshold": np.array(threshold, np.float32)})

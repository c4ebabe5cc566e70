"""NonMaxSuppression, lowered to a TensorRT loop, against onnxruntime and a case worked out by hand."""

from __future__ import annotations

import numpy as np
import onnx.parser
import onnxruntime as ort
import pytest

from loopc.backend.trt import to_network
from loopc.compiler import optimize
from loopc.errors import LoopcError
from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import build_and_simulate, check_onnx

HEADER = '<ir_version: 8, opset_import: ["" : 11]>'
HEADER13 = '<ir_version: 8, opset_import: ["" : 13]>'
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


def test_boxes_of_a_count_with_no_bound_are_refused_in_one_line():
    """Boxes as long as an input's dynamic axis: no static size to pad the loop's tensors to."""
    text = f"""{HEADER}
        g (float[1,N,4] boxes, float[1,1,N] scores) => (int64[K,3] y) {{
            y = NonMaxSuppression (boxes, scores)
        }}"""
    with pytest.raises(LoopcError) as caught:
        to_network(import_model(onnx.parser.parse_model(text)))
    message = str(caught.value)
    assert "\n" not in message and "NonMaxSuppression" in message and "neither known nor bounded" in message


def test_a_ranking_table_too_large_is_refused_in_one_line():
    """A detector head's 8,400 anchors in 80 classes: a [1, 80, 8400, 8400] table (5.6e9 elements) is
    refused before anything is built, not left to exhaust memory."""
    text = f"""{HEADER}
        g (float[1,8400,4] boxes, float[1,80,8400] scores) => (int64[K,3] y) {{
            y = NonMaxSuppression (boxes, scores)
        }}"""
    with pytest.raises(LoopcError) as caught:
        to_network(import_model(onnx.parser.parse_model(text)))
    message = str(caught.value)
    assert "\n" not in message and "ranking table would hold 5644800000 elements" in message


def test_boxes_whose_coordinate_axis_is_not_inferred():
    """A filtered [1, n, ?] reshape of the boxes (RetinaNet's): read as ONNX's [B, N, 4]."""
    rng = np.random.default_rng(12)
    corners = rng.uniform(0, 10, (8, 2)).astype(np.float32)
    boxes = np.concatenate([corners, corners + rng.uniform(1, 4, (8, 2)).astype(np.float32)], axis=1).reshape(-1)
    text = f"""{HEADER13}
        g (float[32] flat, float[8] scores, int64[2] rows) => (int64[K,3] y) {{
            half = Constant <value = float {{0.2}}> ()
            live = Greater(scores, half)
            where = NonZero(live)
            axis0 = Constant <value = int64[1] {{0}}> ()
            index = Squeeze(where, axis0)
            boxes = Reshape(flat, rows)
            kept = Gather <axis = 0> (boxes, index)
            batched = Unsqueeze(kept, axis0)
            kept_scores = Gather <axis = 0> (scores, index)
            scores2 = Unsqueeze(kept_scores, axis0)
            scores3 = Unsqueeze(scores2, axis0)
            m = Constant <value = int64[1] {{10}}> ()
            iou = Constant <value = float[1] {{0.0}}> ()
            y = NonMaxSuppression (batched, scores3, m, iou)
        }}"""
    inputs = {"flat": boxes, "scores": rng.random(8).astype(np.float32), "rows": np.array([8, 4], np.int64)}
    proto = onnx.parser.parse_model(text)
    model = import_model(proto)
    optimize(model)  # the ranks the compiler knows when it converts
    _, got = build_and_simulate(model, inputs)
    want = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)[0]
    assert 0 < len(want) < (inputs["scores"] > 0.2).sum()  # NMS drops some of the boxes the filter kept
    np.testing.assert_array_equal(got["y"], want)


def test_nms_of_a_few_hundred_boxes():
    """Detector-sized input (one row of overlaps per trip keeps the loop's work linear in the boxes)."""
    boxes, scores = _boxes(1, 300, False), RNG.random((1, 4, 300)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[1,300,4] boxes, float[1,4,300] scores, int64[1] m, float[1] iou, float[1] score) => (int64[K,3] y) {{
            y = NonMaxSuppression (boxes, scores, m, iou, score)
        }}""", {"boxes": boxes, "scores": scores, "m": np.array([50], np.int64),
                "iou": np.array([0.4], np.float32), "score": np.array([0.2], np.float32)})

"""An If whose one branch yields empty constants (torchvision's ``batched_nms``: nothing when there are no
boxes, else NMS of them) becomes the other branch cut to length 0 when the empty one is taken: a TensorRT
conditional cannot hold the NonZero- and NMS-sized tensors, which build outside one. Against onnxruntime,
with boxes, and with none (where the branch the If skipped runs on empty tensors and is cut away)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from loopc.compiler import optimize
from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import build_and_simulate

HEADER = '<ir_version: 8, opset_import: ["" : 13]>'

FILTER = """
    live = Greater(scores, threshold)
    where = NonZero(live)
    zero_axis = Constant <value = int64[1] {0}> ()
    index = Squeeze(where, zero_axis)
    kept = Gather <axis = 0> (boxes, index)
    kept_scores = Gather <axis = 0> (scores, index)
    kept_classes = Gather <axis = 0> (classes, index)
    shape = Shape(kept)
    size = ReduceProd <keepdims = 0> (shape)
    none = Constant <value = int64 {0}> ()
    no_boxes = Equal(size, none)
"""

NMS = """
    top = ReduceMax <keepdims = 0> (kept)
    one = Constant <value = float {1}> ()
    spread = Add(top, one)
    classes_f = Cast <to = 1> (kept_classes)
    offsets = Mul(classes_f, spread)
    column_axis = Constant <value = int64[1] {1}> ()
    offsets2 = Unsqueeze(offsets, column_axis)
    shifted = Add(kept, offsets2)
    batch_axis = Constant <value = int64[1] {0}> ()
    batched = Unsqueeze(shifted, batch_axis)
    scores2 = Unsqueeze(kept_scores, batch_axis)
    scores3 = Unsqueeze(scores2, batch_axis)
    most = Constant <value = int64[1] {100}> ()
    iou = Constant <value = float[1] {0.2}> ()
    rows = NonMaxSuppression(batched, scores3, most, iou)
"""


def _boxes() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    corners = rng.uniform(0, 10, (10, 2)).astype(np.float32)
    return {"boxes": np.concatenate([corners, corners + rng.uniform(1, 4, (10, 2)).astype(np.float32)], axis=1),
            "scores": rng.random(10).astype(np.float32), "classes": rng.integers(0, 2, 10).astype(np.int64)}


def _check(text: str, threshold: float) -> None:
    proto = onnx.parser.parse_model(text)
    onnx.checker.check_model(proto)
    model = import_model(proto)
    stats = optimize(model)
    assert stats.get("static-conditionals.conditionals") == 1, stats
    inputs = {**_boxes(), "threshold": np.array(threshold, np.float32)}
    _, got = build_and_simulate(model, inputs)
    want = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)
    assert got["keep"].shape == want[0].shape and got["keep"].dtype == want[0].dtype
    np.testing.assert_array_equal(got["keep"], want[0])


@pytest.mark.parametrize("threshold", [0.2, 1.0])
def test_batched_nms_guard(threshold):
    """torchvision's form: the empty result in the then-branch, a 1-D keep list."""
    _check(f"""{HEADER}
        g (float[10,4] boxes, float[10] scores, int64[10] classes, float threshold) => (int64[K] keep) {{
            {FILTER}
            keep = If (no_boxes) <
                then_branch = g1 () => (int64[0] nothing) {{ nothing = Constant <value = int64[0] {{}}> () }},
                else_branch = g2 () => (int64[K] kept_index) {{
                    {NMS}
                    two = Constant <value = int64[1] {{2}}> ()
                    column = Gather <axis = 1> (rows, two)
                    kept_index = Squeeze(column, column_axis)
                }}
            >
        }}""", threshold)


@pytest.mark.parametrize("threshold", [0.2, 1.0])
def test_guard_in_the_else_branch_of_rows(threshold):
    """The mirror: the empty result [0, 3] in the else-branch (condition negated), NMS's rows kept whole."""
    _check(f"""{HEADER}
        g (float[10,4] boxes, float[10] scores, int64[10] classes, float threshold) => (int64[K,3] keep) {{
            {FILTER}
            some = Not(no_boxes)
            keep = If (some) <
                then_branch = g2 () => (int64[K,3] rows) {{
                    {NMS}
                }},
                else_branch = g1 () => (int64[0,3] nothing) {{ nothing = Constant <value = int64[0,3] {{}}> () }}
            >
        }}""", threshold)

"""NonMaxSuppression-5 and -9 (what OpenVINO's ONNX, PyTorch and TensorFlow frontends write) as ONNX's
NonMaxSuppression, plus the two outputs ONNX's lacks.

Both versions select what ONNX's op selects, with the same defaults (no ``max_output_boxes_per_class`` keeps no
box) and ``box_encoding`` for ``center_point_box``; with dynamic shapes OpenVINO returns exactly the selected rows,
as ONNX does. ``selected_scores`` is each row's ``(batch, class, score)``, read back from the scores;
``valid_outputs`` is the row count. ``sort_result_descending`` orders the rows by score across batches and classes
instead of ONNX's (batch, class, score) order: a stable descending sort of the scores, ties kept in ONNX's order as
OpenVINO keeps them. A Soft-NMS sigma other than a constant 0 (which rescores boxes instead of dropping them) is
not what ONNX's op computes and is refused.
"""

from __future__ import annotations

import numpy as np
from onnx import helper

from loopc.frontend.openvino.importer import Op
from loopc.frontend.openvino.ops._common import cast, i64, optional_input, output_used
from loopc.frontend.openvino.registry import translates
from loopc.ir import Value


@translates("NonMaxSuppression", 5, 9)
def non_max_suppression(op: Op) -> list[Value]:
    op.expect_inputs(2, 3, 4, 5, 6)
    center = op.choice_attr("box_encoding", ("corner", "center"), "corner") == "center"
    descending = op.bool_attr("sort_result_descending", True)
    index_type = np.dtype(np.int32 if op.choice_attr("output_type", ("i64", "i32"), "i64") == "i32" else np.int64)
    sigma = optional_input(op, 5)
    if sigma is not None:
        known = op.constant(5)
        if known is None or np.any(np.asarray(known) != 0):
            raise op.unsupported("Soft-NMS (soft_nms_sigma other than a constant 0) rescores boxes rather than "
                                 "dropping them; loopc computes hard NMS only")
    boxes, scores = op.inputs[0], op.inputs[1]
    inputs: list[Value | None] = [boxes, scores]
    limit = optional_input(op, 2)
    if limit is not None:
        inputs.append(i64(op, limit, vector=True))
    for k in (3, 4):
        value = optional_input(op, k)
        if value is not None:
            inputs.extend([None] * (k - len(inputs)) + [_vector(op, cast(op, value, np.dtype(np.float32)))])
    selected = op.op("NonMaxSuppression", inputs, {"center_point_box": int(center)})
    picked = _scores(op, selected, scores) if descending or output_used(op, 1) else None
    if descending:
        assert picked is not None
        order = _descending(op, picked)
        selected = op.op("Gather", [selected, order], {"axis": 0})
        picked = op.op("Gather", [picked, order], {"axis": 0})
    outputs = [cast(op, selected, index_type)]
    if output_used(op, 1):
        assert picked is not None
        head = op.op("Cast", [op.op("Slice", [selected, op.const([0], np.int64), op.const([2], np.int64),
                                              op.const([1], np.int64)])],
                     {"to": helper.np_dtype_to_tensor_dtype(scores.dtype or np.dtype(np.float32))})
        column = op.op("Unsqueeze", [picked, op.const([1], np.int64)])
        outputs.append(op.op("Concat", [head, column], {"axis": 1}))
    else:
        outputs.append(op.const(np.zeros((0, 3), scores.dtype or np.float32)))
    count = op.op("Slice", [op.op("Shape", [selected]), op.const([0], np.int64), op.const([1], np.int64)])
    outputs.append(cast(op, count, index_type))
    return outputs


def _vector(op: Op, value: Value) -> Value:
    """A threshold as ONNX's reference reads it, ``[1]`` (OpenVINO's are scalars)."""
    return op.op("Reshape", [value, op.const([1], np.int64)])


def _scores(op: Op, selected: Value, scores: Value) -> Value:
    """Each selected row's score, ``scores[batch, class, box]``."""
    return op.op("GatherND", [scores, selected])


def _descending(op: Op, picked: Value) -> Value:
    """The row order of a stable descending sort of ``picked``: TopK of every row, whose ties go to the lower
    index (ONNX's rule), so equal scores keep their (batch, class) order."""
    _, order = op.em.multi("TopK", [picked, op.op("Shape", [picked])], 2, {"axis": 0, "largest": 1, "sorted": 1})
    return order

"""NonMaxSuppression-5 and -9 against OpenVINO's CPU plugin on the same IR: every output (indices, their scores,
the count), both box encodings, both orders, and the op inside an If's else-body as OpenVINO's ONNX frontend
writes it (a detector's post-processing that picks its IoU threshold at run time)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import openvino as ov
import openvino.opset1 as o1
import openvino.opset5 as o5
import openvino.opset9 as o9
import pytest
from onnx import TensorProto, helper

from loopc.errors import UnsupportedOpError
from loopc.frontend.openvino import import_ir
from tests.frontend.openvino.harness import check, check_ir, param, save

BATCH, CLASSES, BOXES = 2, 3, 10


def _inputs(seed: int, center: bool = False) -> dict[str, np.ndarray]:
    """Boxes that overlap often, and scores without ties (tie order is the one thing the ops may differ on)."""
    rng = np.random.default_rng(seed)
    corner = rng.uniform(0, 4, (BATCH, BOXES, 2)).astype(np.float32)
    size = rng.uniform(2, 5, (BATCH, BOXES, 2)).astype(np.float32)
    boxes = np.concatenate([corner + size / 2, size] if center else [corner, corner + size], 2)
    scores = rng.permutation(BATCH * CLASSES * BOXES).reshape(BATCH, CLASSES, BOXES).astype(np.float32)
    return {"boxes": boxes, "scores": scores / scores.size}


def _constants(limit: int, iou: float, score: float) -> list[Any]:
    return [o1.constant(np.array(limit, np.int64)), o1.constant(np.array(iou, np.float32)),
            o1.constant(np.array(score, np.float32))]


@pytest.mark.parametrize("opset, encoding, descending, index_type", [
    (o9, "corner", False, "i64"),   # what OpenVINO's ONNX frontend writes
    (o9, "center", True, "i32"),    # the op's own defaults for the order; TensorFlow's i32
    (o5, "corner", True, "i64"),
])
def test_every_output_matches_openvino(opset: Any, encoding: str, descending: bool, index_type: str,
                                       tmp_path: Path) -> None:
    boxes, scores = param("boxes", [BATCH, BOXES, 4]), param("scores", [BATCH, CLASSES, BOXES])
    nms = opset.non_max_suppression(boxes, scores, *_constants(6, 0.2, 0.2), box_encoding=encoding,
                                    sort_result_descending=descending, output_type=index_type)
    model = ov.Model([o1.result(out) for out in nms.outputs()], [boxes, scores], "nms")
    got = check(model, _inputs(5, encoding == "center"), tmp_path, rtol=0, atol=0)
    assert 0 < len(next(iter(got.values()))) < BATCH * CLASSES * 6  # some boxes kept, some suppressed


def test_in_an_if_else_body_as_the_onnx_frontend_writes_it(tmp_path: Path) -> None:
    """ONNX's If whose branches run NMS at two IoU thresholds, chosen by the best score; converted by OpenVINO.
    The translation is checked by loopc's IR interpreter: TensorRT's builder asserts on the NMS loops inside a
    conditional (``makeScopeNodesContiguous``), for the ONNX model through loopc's ONNX frontend too."""
    def branch(name: str, iou: str) -> onnx.GraphProto:
        return helper.make_graph(
            [helper.make_node("NonMaxSuppression", ["boxes", "scores", "limit", iou, "floor"], [name])], name, [],
            [helper.make_tensor_value_info(name, TensorProto.INT64, ["k", 3])])

    nodes = [helper.make_node("ReduceMax", ["scores"], ["best"], keepdims=0),
             helper.make_node("Less", ["best", "confident"], ["unsure"]),
             helper.make_node("Squeeze", ["unsure"], ["wide"]),
             helper.make_node("If", ["wide"], ["selected"], then_branch=branch("loose", "iou_wide"),
                              else_branch=branch("strict", "iou"))]
    constants = [helper.make_tensor("limit", TensorProto.INT64, [1], [3]),
                 helper.make_tensor("iou", TensorProto.FLOAT, [1], [0.3]),
                 helper.make_tensor("iou_wide", TensorProto.FLOAT, [1], [0.7]),
                 helper.make_tensor("floor", TensorProto.FLOAT, [1], [0.05]),
                 helper.make_tensor("confident", TensorProto.FLOAT, [1], [0.9])]
    graph = helper.make_graph(
        nodes, "nms_if", [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [BATCH, BOXES, 4]),
                          helper.make_tensor_value_info("scores", TensorProto.FLOAT, [BATCH, CLASSES, BOXES])],
        [helper.make_tensor_value_info("selected", TensorProto.INT64, ["k", 3])], constants)
    source = tmp_path / "nms_if.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), source)
    xml = save(ov.convert_model(source), tmp_path / "nms_if.xml")
    assert 'type="NonMaxSuppression" version="opset9"' in xml.read_text()
    for seed, scale in ((7, 1.0), (8, 0.5)):  # both branches: a best score above and below the choice
        feeds = _inputs(seed)
        feeds["scores"] = feeds["scores"] * scale
        check_ir(xml, feeds, tmp_path, rtol=0, atol=0)


def test_soft_nms_is_refused(tmp_path: Path) -> None:
    boxes, scores = param("boxes", [1, BOXES, 4]), param("scores", [1, 1, BOXES])
    nms = o9.non_max_suppression(boxes, scores, *_constants(4, 0.3, 0.0), o1.constant(np.array(0.5, np.float32)))
    xml = save(ov.Model([o1.result(nms.output(0))], [boxes, scores], "soft"), tmp_path / "soft.xml")
    with pytest.raises(UnsupportedOpError, match="Soft-NMS"):
        import_ir(xml)

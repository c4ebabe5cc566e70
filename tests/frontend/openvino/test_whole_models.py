"""Whole models with their loops as OpenVINO IR: the ONNX corpus's models converted by OpenVINO's own
``convert_model`` and saved as IR (f32 weights), then run by OpenVINO's CPU plugin and through loopc."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import pytest

from tests.frontend.openvino.harness import check, save

CORPUS = Path(__file__).resolve().parents[2] / "models" / "torch_whole"


@pytest.mark.parametrize("name, rtol, atol", [
    ("unet_ddim", 1e-3, 1e-3),    # a UNet (Conv, GroupNorm, attention, resampling) in a 10-step loop
    ("ocr_crnn", 1e-4, 1e-5),     # conv encoder, BiLSTM, CTC greedy decoding loop
    ("whisper_greedy", 1e-4, 1e-5),  # conv audio front end, decoder in a greedy while loop
    ("yolo_nms", 1e-4, 1e-5),     # conv detector head, greedy NMS in a while loop
])
def test_a_converted_whole_model_matches_openvino(name: str, rtol: float, atol: float, tmp_path: Path) -> None:
    xml = save(ov.convert_model(str(CORPUS / f"{name}.onnx")), tmp_path / f"{name}.xml")
    feeds = dict(np.load(CORPUS / f"{name}.inputs.npz"))
    check(xml, feeds, tmp_path, rtol=rtol, atol=atol)

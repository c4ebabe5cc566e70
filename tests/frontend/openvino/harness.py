"""Check a model built with OpenVINO's opset API end to end: saved as IR, then run by OpenVINO's CPU
plugin and through loopc (see :mod:`tests.frontend.openvino.oracle`), outputs compared."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov

from tests.frontend.openvino.oracle import compare, run_loopc, run_openvino


def save(model: ov.Model, path: Path, compress: bool = False) -> Path:
    ov.save_model(model, str(path), compress_to_fp16=compress)
    return path


def check(model: ov.Model | Path, inputs: Mapping[str, Any], tmp_path: Path, *, rtol: float = 1e-4,
          atol: float = 1e-5, max_trips: int | None = None, compress: bool = False,
          stack_directions: bool = True) -> dict[str, np.ndarray]:
    """Assert loopc's outputs match OpenVINO's on the same IR; return loopc's."""
    xml = model if isinstance(model, Path) else save(model, tmp_path / "model.xml", compress)
    feeds = {name: np.asarray(value) for name, value in inputs.items()}
    got = run_loopc(xml, feeds, max_trips, stack_directions)
    compare(got, run_openvino(xml, feeds), rtol, atol)
    return got

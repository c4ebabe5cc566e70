"""Check a model built with OpenVINO's opset API end to end: saved as IR, then run by OpenVINO's CPU
plugin and through loopc (see :mod:`tests.frontend.openvino.oracle`), outputs compared."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset13 as o13

from loopc.frontend.openvino import import_ir
from loopc.ir.interpret import interpret
from tests.frontend.openvino.oracle import compare, run_loopc, run_openvino


#: A test model: its outputs, its parameters, and the inputs to feed them.
Case = tuple[list[Any], list[Any], dict[str, np.ndarray]]


def param(name: str, shape: list[int], dtype: Any = np.float32) -> Any:
    """A Parameter of OpenVINO's opset API."""
    return o13.parameter(shape, dtype, name=name)


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


def check_ir(model: ov.Model | Path, inputs: Mapping[str, Any], tmp_path: Path, *, rtol: float = 1e-4,
             atol: float = 1e-5, compress: bool = False) -> list[np.ndarray]:
    """Assert the IR loopc's frontend makes means what OpenVINO computes: loopc's IR interpreter on the
    translated model against OpenVINO's CPU plugin on the same IR, outputs by position. Checks a
    translator on its own, before or beside a backend that builds its ops."""
    xml = model if isinstance(model, Path) else save(model, tmp_path / "model.xml", compress)
    feeds = {name: np.asarray(value) for name, value in inputs.items()}
    got = interpret(import_ir(xml), feeds)
    want = run_openvino(xml, feeds)
    assert len(got) == len(want), f"loopc's IR has {len(got)} outputs, OpenVINO's model {len(want)}"
    for actual, (name, expected) in zip(got, want.items()):
        actual = np.asarray(actual)
        assert actual.shape == expected.shape, f"{name}: shape {actual.shape} != OpenVINO's {expected.shape}"
        assert actual.dtype == expected.dtype, f"{name}: dtype {actual.dtype} != OpenVINO's {expected.dtype}"
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=name)
    return [np.asarray(a) for a in got]

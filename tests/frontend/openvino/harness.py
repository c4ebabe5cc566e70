"""Check an OpenVINO model end to end against the OpenVINO runtime as the oracle.

The model (an ``openvino.Model`` written to disk with ``save_model``, or an existing ``.xml``) runs
on OpenVINO's CPU plugin with f32 inference precision, and through loopc: frontend, passes, the
real TensorRT builder, then the simulator on the built network. Outputs are compared by position,
name, shape, dtype and value.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov

from loopc.compiler import optimize
from loopc.frontend.openvino import import_ir
from tests.backend.trt.oracle import build_and_simulate

CPU_F32 = {"INFERENCE_PRECISION_HINT": "f32"}


def save(model: ov.Model, path: Path, compress: bool = False) -> Path:
    ov.save_model(model, str(path), compress_to_fp16=compress)
    return path


def run_openvino(xml: Path, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Outputs keyed by ``get_any_name()``, in ``model.outputs`` order."""
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(xml)), "CPU", CPU_F32)
    request = compiled.create_infer_request()
    # ov.Tensor keeps a 0-d array's shape (a plain ndarray would be fed as [1]).
    feeds = {port.get_any_name(): ov.Tensor(np.array(inputs[port.get_any_name()], copy=True, order="C"))
             for port in compiled.inputs}
    result = request.infer(feeds)
    return {port.get_any_name(): np.asarray(result[port]) for port in compiled.outputs}


def run_loopc(xml: Path, inputs: Mapping[str, np.ndarray], max_trips: int | None = None) -> dict[str, np.ndarray]:
    model = import_ir(xml)
    optimize(model, max_trips=max_trips)
    _, outputs = build_and_simulate(model, dict(inputs))
    return outputs


def check(model: ov.Model | Path, inputs: Mapping[str, Any], tmp_path: Path, *, rtol: float = 1e-4,
          atol: float = 1e-5, max_trips: int | None = None, compress: bool = False) -> dict[str, np.ndarray]:
    """Assert loopc's outputs match OpenVINO's on the same IR; return loopc's."""
    xml = model if isinstance(model, Path) else save(model, tmp_path / "model.xml", compress)
    feeds = {name: np.asarray(value) for name, value in inputs.items()}
    want = run_openvino(xml, feeds)
    got = run_loopc(xml, feeds, max_trips)
    assert list(got) == list(want), f"outputs {list(got)} != OpenVINO's {list(want)}"
    for name, expected in want.items():
        assert got[name].shape == expected.shape, f"{name}: shape {got[name].shape} != {expected.shape}"
        assert got[name].dtype == expected.dtype, f"{name}: dtype {got[name].dtype} != {expected.dtype}"
        np.testing.assert_allclose(got[name], expected, rtol=rtol, atol=atol, err_msg=name)
    return got

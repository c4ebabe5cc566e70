"""A Parameter's tensor may have several names (``names="d,delta"`` in the IR); OpenVINO takes data by any of
them, and so must loopc: ``loopc.run``, ``loopc.build``'s example inputs and ``--shapes``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset8 as o8
import pytest

import loopc
from loopc.errors import LoopcError
from loopc.profiles import ShapeProfile

X = np.arange(6, dtype=np.float32).reshape(2, 3)
D = np.array([[0.5, -1.0, 2.0]], np.float32)


def two_named_inputs(tmp_path: Path) -> Path:
    """y = x * 2 + delta, where delta's tensor is named both "delta" and "d"; x has a dynamic batch."""
    x = o8.parameter([-1, 3], np.float32, name="x")
    delta = o8.parameter([1, 3], np.float32, name="delta_param")
    delta.output(0).get_tensor().set_names({"delta", "d"})
    y = o8.add(o8.multiply(x, o8.constant(np.float32(2))), delta)
    y.output(0).get_tensor().set_names({"y"})
    xml = tmp_path / "model.xml"
    ov.save_model(ov.Model([y], [x, delta], "aliases"), str(xml), compress_to_fp16=False)
    assert 'names="d,delta"' in xml.read_text() or 'names="delta,d"' in xml.read_text()
    return xml


def openvino(xml: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(xml)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    return np.asarray(compiled.create_infer_request().infer(feeds)[compiled.outputs[0]])


@pytest.mark.parametrize("name", ["delta", "d"])
def test_an_input_is_fed_by_any_of_its_names(tmp_path: Path, name: str) -> None:
    xml = two_named_inputs(tmp_path)
    feeds = {"x": X, name: D}
    got = loopc.run(xml, feeds)["y"]
    np.testing.assert_allclose(got, openvino(xml, feeds))
    np.testing.assert_allclose(got, X * 2 + D)  # by hand


def test_the_same_input_by_two_of_its_names_is_an_error(tmp_path: Path) -> None:
    xml = two_named_inputs(tmp_path)
    with pytest.raises(LoopcError, match=r"input '(d|delta)' is given twice, as '(d|delta)' and as '(d|delta)'"):
        loopc.run(xml, {"x": X, "delta": D, "d": D})


@pytest.mark.parametrize("name", ["delta", "d"])
def test_build_takes_shapes_and_examples_by_any_name(tmp_path: Path, name: str) -> None:
    xml = two_named_inputs(tmp_path)
    plan = tmp_path / "model.plan"
    shapes = ShapeProfile.from_specs(min_shapes=f"x:1x3,{name}:1x3", opt_shapes=f"x:2x3,{name}:1x3",
                                     max_shapes=f"x:4x3,{name}:1x3")
    report = loopc.build(xml, plan, shapes=shapes, inputs={"x": X, name: D})
    assert plan.stat().st_size > 0
    # the network input takes the least of the names (OpenVINO's get_any_name()); x's bounds are the flags'
    assert set(report.inputs) == {"x", "d"}
    assert (report.inputs["x"].min, report.inputs["x"].opt, report.inputs["x"].max) == ([1, 3], [2, 3], [4, 3])

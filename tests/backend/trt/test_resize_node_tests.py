"""ONNX's node tests of Resize, Upsample and GridSample: through loopc (built with the real builder,
simulated, compared with the expected outputs the tests ship, or refused for the reason listed),
through TensorRT's own parser (its networks, simulated, hold the RESIZE and GRID_SAMPLE kernels
honest), and through loopc again with the scales, sizes and roi the tests feed made constants, as
exporters write them."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from tests.conformance import MATCH, compare, node_test_cases, run_case
from loopc.errors import LoopcError
from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import build_and_simulate
from tests.onnx_cases import loopc_failures

PATTERNS = ("test_resize", "test_upsample", "test_gridsample")

_RUN_TIME_SCALES = "scales computed at run time"
_CROP = "tf_crop_and_resize"
_ANTIALIAS = "antialiased"
_POLICY = "keep_aspect_ratio_policy with sizes computed at run time"

#: The node tests feed scales, sizes and roi as graph inputs. TensorRT sizes a resize from integer
#: lengths and maps coordinates by their ratio, so scales known only at run time are refused (as
#: TensorRT's own parser refuses them); so are crops (tf_crop_and_resize), antialiased downscaling and
#: aspect policies to sizes known only at run time (loopc builds those from gathers when they are fixed).
REFUSED = {
    **{f"test_resize_{s}": _RUN_TIME_SCALES for s in (
        "upsample_scales_nearest", "downsample_scales_nearest", "upsample_scales_linear",
        "upsample_scales_linear_align_corners", "downsample_scales_linear", "downsample_scales_linear_align_corners",
        "upsample_scales_cubic", "upsample_scales_cubic_align_corners", "downsample_scales_cubic",
        "downsample_scales_cubic_align_corners", "upsample_scales_cubic_A_n0p5_exclude_outside",
        "downsample_scales_cubic_A_n0p5_exclude_outside", "upsample_scales_cubic_asymmetric",
        "downsample_scales_linear_antialias", "downsample_scales_cubic_antialias", "upsample_scales_nearest_axes_2_3",
        "upsample_scales_nearest_axes_3_2", "downsample_scales_linear_half_pixel_symmetric",
        "upsample_scales_linear_half_pixel_symmetric")},
    "test_upsample_nearest": _RUN_TIME_SCALES,
    **{f"test_resize_tf_crop_and_resize{s}": _CROP for s in ("", "_extrapolation_value", "_axes_2_3", "_axes_3_2")},
    "test_resize_downsample_sizes_linear_antialias": _ANTIALIAS,
    "test_resize_downsample_sizes_cubic_antialias": _ANTIALIAS,
    **{f"test_resize_{s}_sizes_nearest_{p}": _POLICY for s in ("upsample", "downsample")
       for p in ("not_larger", "not_smaller")},
}

#: With constant scales, sizes and roi, only align_corners by scales without a whole output length stays
#: refused (onnxruntime divides by the rounded length, ONNX's reference by the unrounded one).
REFUSED_WITH_CONSTANTS = {
    "test_resize_downsample_scales_linear_align_corners": "align_corners resize of axis 2",
    "test_resize_downsample_scales_cubic_align_corners": "align_corners resize of axis 2",
}


def _array(value) -> np.ndarray:
    return numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else np.asarray(value)


def _cases() -> list:
    cases = [c for p in PATTERNS for c in node_test_cases(p)]
    assert len(cases) >= 56, [c.name for c in cases]
    return cases


def test_node_cases_through_loopc():
    wrong = loopc_failures(_cases(), REFUSED)
    assert not wrong, "\n".join(wrong)


def test_parser_networks_simulate_to_the_expected_outputs():
    """Every case TensorRT's parser builds (its network, not ours) simulates to the expected outputs."""
    built = [run_case(case, "trt-onnx") for case in _cases()]
    built = [r for r in built if r.built]
    assert len(built) >= 28
    wrong = [f"{r.name}: {r.status}: {r.detail}" for r in built if r.status != MATCH]
    assert not wrong, "\n".join(wrong)


def _with_constant_parameters(case) -> tuple[onnx.ModelProto, dict]:
    """The case's model with every input but X made an initializer, and X's feed."""
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    inputs, _ = case.data_sets[0]
    graph = model.graph
    feeds = {}
    for value_info, tensor in zip(list(graph.input), inputs):
        array = _array(tensor)
        if value_info.name == "X":
            feeds["X"] = array
        else:
            graph.initializer.append(numpy_helper.from_array(array, value_info.name))
    kept = [vi for vi in graph.input if vi.name == "X"]
    del graph.input[:]
    graph.input.extend(kept)
    return model, feeds


def test_resize_cases_with_constant_scales_and_sizes():
    wrong, matched = [], 0
    for case in _cases():
        if "gridsample" in case.name:
            continue
        model, feeds = _with_constant_parameters(case)
        try:
            _, got = build_and_simulate(import_model(model), feeds)
        except LoopcError as exc:
            reason = REFUSED_WITH_CONSTANTS.get(case.name)
            if reason is None or reason not in str(exc):
                wrong.append(f"{case.name}: refused: {exc}")
            continue
        if case.name in REFUSED_WITH_CONSTANTS:
            wrong.append(f"{case.name}: built, but should be refused")
            continue
        want = _array(case.data_sets[0][1][0])
        problem = compare(got[model.graph.output[0].name], want, case.rtol, case.atol)
        if problem:
            wrong.append(f"{case.name}: {problem}")
        matched += 1
    assert not wrong, "\n".join(wrong)
    assert matched >= 38

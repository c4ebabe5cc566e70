"""RoiAlign (composed from Gather, elementwise and Reduce layers) against onnxruntime: both pooling
modes, sampling ratios, spatial scales, both coordinate modes and opset 10's implicit one, rois
partly or wholly outside the image and malformed ones, a roi count known only at run time (none
too), features of run-time size, float16; the refusal of the adaptive sampling ratio; ONNX's node tests."""

from __future__ import annotations

import numpy as np
import onnx.parser
import pytest

from loopc.backend.trt import to_network
from tests.conformance import node_test_cases
from loopc.errors import LoopcError
from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import build_and_simulate, check_onnx
from tests.onnx_cases import loopc_failures

RNG = np.random.default_rng(7)
#: Two images of 3 channels, 6x8 pixels; values of both signs, so max of weighted corners is not the
#: max of interpolated values.
X = RNG.standard_normal((2, 3, 6, 8)).astype(np.float32)
#: Boxes (x1, y1, x2, y2) in image coordinates before spatial_scale: inside, across each border, wholly
#: outside, reversed (x2 < x1), and thinner than a pixel.
ROIS = np.array([[1.0, 1.0, 10.0, 7.0], [-4.0, -3.0, 5.0, 4.0], [9.0, 6.0, 20.0, 15.0], [-30.0, 2.0, -9.0, 6.0],
                 [12.0, 8.0, 3.0, 2.0], [5.2, 4.1, 5.4, 4.3], [0.0, 0.0, 16.0, 12.0]], np.float32)
BATCH = np.array([0, 1, 1, 0, 1, 0, 1], np.int64)


def model(attrs: str, opset: int = 16, x_dims: str = "2,3,6,8") -> str:
    return f"""<ir_version: 8, opset_import: ["" : {opset}]>
        g (float[{x_dims}] x, float[R,4] rois, int64[R] batch) => (float[R,C,H,W] y) {{
            y = RoiAlign <{attrs}> (x, rois, batch)
        }}"""


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("coords", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("ratio", [1, 2, 3])
def test_modes_ratios_and_coordinate_modes(mode, coords, ratio):
    attrs = (f'mode = "{mode}", coordinate_transformation_mode = "{coords}", output_height = 3, output_width = 2, '
             f"sampling_ratio = {ratio}, spatial_scale = 0.5")
    check_onnx(model(attrs), {"x": X, "rois": ROIS, "batch": BATCH}, atol=1e-5)


@pytest.mark.parametrize("scale", [1.0, 0.25, 0.0625])
def test_spatial_scales(scale):
    attrs = f"output_height = 4, output_width = 4, sampling_ratio = 2, spatial_scale = {scale}"
    check_onnx(model(attrs), {"x": X, "rois": ROIS / scale * 0.5, "batch": BATCH}, atol=1e-5)


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_opset_10_samples_as_output_half_pixel(mode):
    """RoiAlign-10 had no coordinate_transformation_mode (torchvision exports it, aligned=False)."""
    attrs = f'mode = "{mode}", output_height = 2, output_width = 3, sampling_ratio = 2, spatial_scale = 0.5'
    check_onnx(model(attrs, opset=10), {"x": X, "rois": ROIS, "batch": BATCH}, atol=1e-5)


@pytest.mark.parametrize("count", [1, 4, 0])
def test_roi_count_known_only_at_run_time(count):
    """R comes from NonMaxSuppression in detectors: any number, none included."""
    attrs = "output_height = 2, output_width = 2, sampling_ratio = 2, spatial_scale = 0.5"
    check_onnx(model(attrs), {"x": X, "rois": ROIS[:count], "batch": BATCH[:count]}, atol=1e-5)


def test_features_of_run_time_size():
    attrs = 'mode = "max", output_height = 2, output_width = 2, sampling_ratio = 2, spatial_scale = 0.5'
    check_onnx(model(attrs, x_dims="N,C,H,W"), {"x": X, "rois": ROIS, "batch": BATCH}, atol=1e-5)


def test_half_precision_features_and_rois():
    """Computed in float32 and rounded once to float16 (onnxruntime computes in float16: a few ulps apart)."""
    text = """<ir_version: 8, opset_import: ["" : 16]>
        g (float16[2,3,6,8] x, float16[R,4] rois, int64[R] batch) => (float16[R,C,H,W] y) {
            y = RoiAlign <output_height = 3, output_width = 3, sampling_ratio = 2, spatial_scale = 0.5> (x, rois, batch)
        }"""
    check_onnx(text, {"x": X.astype(np.float16), "rois": ROIS.astype(np.float16), "batch": BATCH}, rtol=0,
               atol=2e-3)


def test_one_pixel_wide_features():
    x = RNG.standard_normal((1, 2, 1, 5)).astype(np.float32)
    rois = np.array([[0.0, 0.0, 4.0, 1.0], [-1.5, -0.5, 2.0, 1.5]], np.float32)
    attrs = "output_height = 2, output_width = 3, sampling_ratio = 2"
    check_onnx(model(attrs, x_dims="1,2,1,5"), {"x": x, "rois": rois, "batch": np.zeros(2, np.int64)}, atol=1e-5)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_one_sample_between_four_pixels_by_hand(sign):
    """A 1x1 roi of a 2x2 image with one sample at its centre (0.5, 0.5): every corner weighs 1/4, so avg
    is the pixels' mean and max the largest single w * v (1/4 of the largest value), not the interpolated
    value; a roi beyond the image reads 0 in both modes."""
    x = sign * np.array([[[[1.0, 2.0], [3.0, 4.0]]]], np.float32)
    rois = np.array([[0.0, 0.0, 1.0, 1.0], [5.0, 5.0, 6.0, 6.0]], np.float32)
    feeds = {"x": x, "rois": rois, "batch": np.zeros(2, np.int64)}
    for mode, inside in (("avg", sign * 2.5), ("max", 1.0 if sign > 0 else -0.25)):
        attrs = (f'mode = "{mode}", coordinate_transformation_mode = "output_half_pixel", output_height = 1, '
                 "output_width = 1, sampling_ratio = 1")
        _, got = build_and_simulate(import_model(onnx.parser.parse_model(model(attrs, x_dims="1,1,2,2"))), feeds)
        np.testing.assert_array_equal(got["y"].reshape(-1), np.float32([inside, 0.0]), err_msg=mode)


def test_adaptive_sampling_ratio_is_refused_in_one_line():
    with pytest.raises(LoopcError) as caught:
        to_network(import_model(onnx.parser.parse_model(model("output_height = 2, output_width = 2"))))
    message = str(caught.value)
    assert "\n" not in message and "sampling_ratio=0" in message and "RoiAlign" in message


def test_node_cases_match():
    cases = node_test_cases("test_roialign")
    assert len(cases) == 3, [c.name for c in cases]
    assert not loopc_failures(cases)

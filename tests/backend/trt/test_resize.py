"""Resize, Upsample and GridSample against onnxruntime: every mode, coordinate transformation and
nearest rounding TensorRT's resize takes; sizes and scales, constant and computed; axes; the
aspect-ratio policies; legacy Upsample and Resize-10; and the forms loopc refuses, with why."""

from __future__ import annotations

import numpy as np
import onnx.parser
import onnxruntime as ort
import pytest
from onnx.reference import ReferenceEvaluator

from loopc.backend.trt import to_network
from loopc.errors import LoopcError
from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import build_and_simulate, check_onnx

HEADER = '<ir_version: 9, opset_import: ["" : 19]>'
RNG = np.random.default_rng(7)
X = RNG.standard_normal((1, 2, 3, 4)).astype(np.float32)

NEAREST_MODES = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
TRANSFORMS = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"]


def refusal(text: str) -> str:
    """The one-line error loopc gives for a model it must refuse."""
    with pytest.raises(LoopcError) as caught:
        to_network(import_model(onnx.parser.parse_model(text)))
    message = str(caught.value)
    assert "\n" not in message
    return message


def check_onnx_free(text: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """loopc's outputs (built and simulated), for a comparison with another oracle than onnxruntime."""
    return build_and_simulate(import_model(onnx.parser.parse_model(text)), inputs)[1]


def resize_by_sizes(sizes: list[int], attrs: str, dims: str = "1,2,3,4") -> str:
    n = len(sizes)
    return f"""{HEADER}
        g (float[{dims}] x) => (float[A,B,C,D] y) {{
            s = Constant <value = int64[{n}] {{{", ".join(map(str, sizes))}}}> ()
            y = Resize <{attrs}> (x, , , s)
        }}"""


def resize_by_scales(scales: list[float], attrs: str, dims: str = "1,2,3,4") -> str:
    n = len(scales)
    return f"""{HEADER}
        g (float[{dims}] x) => (float[A,B,C,D] y) {{
            s = Constant <value = float[{n}] {{{", ".join(map(str, scales))}}}> ()
            y = Resize <{attrs}> (x, , s)
        }}"""


# -- every mode by sizes (the scale is then the lengths' ratio, which TensorRT maps by) ----------


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("nearest", NEAREST_MODES)
@pytest.mark.parametrize("sizes", [[1, 2, 7, 9], [1, 2, 2, 3], [1, 2, 1, 1]])
def test_nearest(sizes, nearest, transform):
    if transform == "half_pixel_symmetric" and sizes[2] == 1 and nearest in ("floor", "ceil"):
        pytest.skip("an exact tie that onnxruntime computes as 0.99999994: see test_nearest_tie_as_onnx_computes_it")
    check_onnx(resize_by_sizes(sizes, f'mode = "nearest", nearest_mode = "{nearest}", '
                                      f'coordinate_transformation_mode = "{transform}"'), {"x": X})


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("sizes", [[1, 2, 7, 9], [1, 2, 2, 3], [1, 2, 1, 6]])
def test_linear(sizes, transform):
    check_onnx(resize_by_sizes(sizes, f'mode = "linear", coordinate_transformation_mode = "{transform}"'), {"x": X})


@pytest.mark.parametrize("transform", [t for t in TRANSFORMS if t != "pytorch_half_pixel"] + ["pytorch_half_pixel"])
@pytest.mark.parametrize("exclude", [0, 1])
@pytest.mark.parametrize("sizes", [[1, 2, 7, 9], [1, 2, 2, 3]])
def test_cubic(sizes, exclude, transform):
    check_onnx(resize_by_sizes(sizes, f'mode = "cubic", coordinate_transformation_mode = "{transform}", '
                                      f'exclude_outside = {exclude}, cubic_coeff_a = -0.5'), {"x": X}, atol=1e-5)


def test_nearest_tie_as_onnx_computes_it():
    """3 → 1 rows by half_pixel_symmetric maps to row (0 + 0.5) · 3 - 0.5 = 1 exactly, which floor keeps:
    ONNX's reference (float64) says row 1, as TensorRT's formula does; onnxruntime's float32 says
    0.99999994 and floors it to row 0."""
    text = resize_by_sizes([1, 2, 1, 1], 'mode = "nearest", nearest_mode = "floor", '
                                         'coordinate_transformation_mode = "half_pixel_symmetric"')
    want = ReferenceEvaluator(onnx.parser.parse_model(text)).run(None, {"x": X})[0]
    np.testing.assert_array_equal(want, X[:, :, 1:2, 1:2])  # column (0 + 0.5) · 4 - 0.5 = 1.5 floors to 1
    np.testing.assert_array_equal(check_onnx_free(text, {"x": X})["y"], want)


def random_resize(rng: np.random.Generator) -> tuple[str, np.ndarray]:
    """A Resize of a random image by random constant scales or sizes, mode, transform and rounding."""
    h, w = (int(d) for d in rng.integers(1, 8, 2))
    attrs = (f'mode = "{rng.choice(["nearest", "linear", "cubic"])}", coordinate_transformation_mode = '
             f'"{rng.choice(TRANSFORMS)}", nearest_mode = "{rng.choice(NEAREST_MODES)}"')
    if rng.random() < 0.2:  # a crop: sizes and a roi reaching past the input now and then
        attrs = attrs.replace(str(attrs.split('"')[3]), "tf_crop_and_resize") + ", extrapolation_value = 9.0"
        lo, hi = rng.uniform(-0.3, 0.5, 2), rng.uniform(0.5, 1.3, 2)
        sizes = ", ".join(str(int(n)) for n in (1, 2, *rng.integers(1, 10, 2)))
        roi = ", ".join(f"{v:.2f}" for v in (0, 0, *lo, 1, 1, *hi))
        text = f"""{HEADER}
            g (float[1,2,{h},{w}] x) => (float[A,B,C,D] y) {{
                roi = Constant <value = float[8] {{{roi}}}> ()
                s = Constant <value = int64[4] {{{sizes}}}> ()
                y = Resize <{attrs}> (x, roi, , s)
            }}"""
    elif rng.random() < 0.5:
        scales = rng.choice([0.34, 0.5, 0.6, 0.75, 1.0, 1.25, 1.5, 1.7, 2.0, 2.3, 3.0], 2)
        scales = [max(s, 1 / d) for s, d in zip(scales, (h, w))]  # at least one output pixel
        text = resize_by_scales([1.0, 1.0, *scales], attrs, f"1,2,{h},{w}")
    else:
        text = resize_by_sizes([1, 2, *(int(n) for n in rng.integers(1, 10, 2))], attrs, f"1,2,{h},{w}")
    return text, rng.standard_normal((1, 2, h, w)).astype(np.float32)


def test_random_forms_match_or_are_refused():
    """No wrong numbers: each random Resize is refused in one line, or matches onnxruntime — or ONNX's
    reference, where onnxruntime's float32 lands a nearest coordinate just off an exact integer, or
    its tf_crop_and_resize places some crop regions elsewhere than the reference does."""
    rng = np.random.default_rng(2026)
    built = refused = 0
    for _ in range(80):
        text, x = random_resize(rng)
        proto = onnx.parser.parse_model(text)
        try:
            got = check_onnx_free(text, {"x": x})["y"]
        except LoopcError as exc:
            assert "\n" not in str(exc) and "is not supported by the TensorRT backend" in str(exc)
            refused += 1
            continue
        built += 1
        want = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        if got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5):
            continue
        assert 'mode = "nearest"' in text or "tf_crop_and_resize" in text, text
        reference = ReferenceEvaluator(proto).run(None, {"x": x})[0]
        np.testing.assert_allclose(got, reference, rtol=1e-5, atol=1e-6, err_msg=text)
    assert built >= 60 and refused >= 1, (built, refused)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_pytorch_half_pixel_to_one_pixel_of_an_odd_length(mode):
    """49 → 1 by sizes: the output has length 1, so pytorch_half_pixel reads the edge, though (1/49) · 49
    is 0.9999999999999999 in float64."""
    x = RNG.standard_normal((1, 1, 3, 49)).astype(np.float32)
    check_onnx(resize_by_sizes([1, 1, 3, 1], f'mode = "{mode}", coordinate_transformation_mode = "pytorch_half_pixel"',
                               "1,1,3,49"), {"x": x})


def test_trilinear_over_three_axes():
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[3,4,5] x) => (float[A,B,C] y) {{
            s = Constant <value = int64[3] {{5, 7, 3}}> ()
            y = Resize <mode = "linear", coordinate_transformation_mode = "align_corners"> (x, , , s)
        }}""", {"x": x})


def test_nearest_of_uint8_data():
    """An image in bytes: nearest resizes it as floats (exact) and casts back."""
    x = RNG.integers(0, 256, (1, 3, 4, 5), dtype=np.uint8)
    check_onnx(f"""{HEADER}
        g (uint8[1,3,4,5] x) => (uint8[A,B,C,D] y) {{
            s = Constant <value = int64[4] {{1, 3, 7, 9}}> ()
            y = Resize <mode = "nearest"> (x, , , s)
        }}""", {"x": x})


def test_nearest_of_uint8_data_by_gathers():
    """A fractional scale (no whole output length for TensorRT's resize layer) goes through gathers, which
    take no UINT8 either: the bytes are gathered as floats (exact) and cast back."""
    x = RNG.integers(0, 256, (1, 2, 7, 6), dtype=np.uint8)
    check_onnx(f"""{HEADER}
        g (uint8[1,2,7,6] x) => (uint8[A,B,C,D] y) {{
            s = Constant <value = float[4] {{1, 1, 1.7, 1}}> ()
            y = Resize <mode = "nearest"> (x, , s)
        }}""", {"x": x})


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_half_precision_data(mode):
    x = RNG.standard_normal((1, 2, 3, 4)).astype(np.float16)
    check_onnx(f"""{HEADER}
        g (float16[1,2,3,4] x) => (float16[A,B,C,D] y) {{
            s = Constant <value = int64[4] {{1, 2, 5, 7}}> ()
            y = Resize <mode = "{mode}"> (x, , , s)
        }}""", {"x": x}, rtol=2e-3, atol=2e-3)


def test_resize_inside_a_loop_body():
    """Each trip doubles the width of the carried row by linear interpolation, then keeps its last 4."""
    check_onnx(f"""{HEADER}
        g (float[1,4] x, int64 n) => (float[1,4] y) {{
            y = Loop (n, , x) <body = b (int64 i, bool c, float[1,4] v) => (bool c_out, float[1,4] w) {{
                c_out = Identity (c)
                s = Constant <value = float[2] {{1.0, 2.0}}> ()
                big = Resize <mode = "linear"> (v, , s)
                starts = Constant <value = int64[1] {{4}}> ()
                ends = Constant <value = int64[1] {{8}}> ()
                axes = Constant <value = int64[1] {{1}}> ()
                w = Slice (big, starts, ends, axes)
            }}>
        }}""", {"x": np.array([[1, 5, 2, 8]], np.float32), "n": np.array(3, np.int64)})


def test_linear_of_integer_data_is_refused():
    message = refusal(f"""{HEADER}
        g (int32[1,2,3,4] x) => (int32[A,B,C,D] y) {{
            s = Constant <value = int64[4] {{1, 2, 5, 7}}> ()
            y = Resize <mode = "linear"> (x, , , s)
        }}""")
    assert "linear Resize of int32 data is not supported" in message


# -- scales ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("scales", [[1.0, 1.0, 2.0, 3.0], [1.0, 1.0, 1.5, 0.5], [1.0, 1.0, 1.0, 0.25]])
def test_constant_scales_with_whole_output_lengths(scales, mode):
    x = RNG.standard_normal((1, 2, 4, 8)).astype(np.float32)
    check_onnx(resize_by_scales(scales, f'mode = "{mode}"', "1,2,4,8"), {"x": x}, atol=1e-5)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_whole_scales_on_run_time_lengths(mode):
    """Upsampling ×2 of an image whose size is known only when it runs (the layer's scales)."""
    x = RNG.standard_normal((2, 3, 5, 6)).astype(np.float32)
    check_onnx(resize_by_scales([1.0, 1.0, 2.0, 2.0], f'mode = "{mode}", coordinate_transformation_mode = '
                                '"asymmetric"', "N,3,H,W"), {"x": x})


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("transform", ["half_pixel", "asymmetric", "half_pixel_symmetric", "pytorch_half_pixel"])
def test_scales_whose_output_length_is_not_whole(transform, mode):
    """0.6 of 4 columns is 2 (2.4 unrounded): ONNX maps by 1/0.6, TensorRT's resize layer would map by
    4/2, so loopc gathers the taps itself."""
    x = RNG.standard_normal((1, 2, 5, 4)).astype(np.float32)
    check_onnx(resize_by_scales([1.0, 1.0, 1.7, 0.6], f'mode = "{mode}", coordinate_transformation_mode = '
                                f'"{transform}"', "1,2,5,4"), {"x": x}, atol=1e-5)


def test_align_corners_by_a_scale_without_a_whole_length_is_refused():
    """onnxruntime divides by the rounded output length, ONNX's reference by the unrounded one."""
    message = refusal(resize_by_scales([1.0, 1.0, 0.6, 0.6], 'mode = "linear", coordinate_transformation_mode = '
                                       '"align_corners"', "1,2,2,4"))
    assert "align_corners resize of axis 2 from 2 to 1 by scale 0.6 is not supported" in message


def test_fractional_scales_on_run_time_lengths_are_refused():
    message = refusal(resize_by_scales([1.0, 1.0, 0.5, 0.5], 'mode = "nearest"', "1,2,H,W"))
    assert "scale 0.5 on axis 2 of a length known only at run time" in message


def test_scales_fed_at_run_time_are_refused():
    message = refusal(f"""{HEADER}
        g (float[1,2,3,4] x, float[4] s) => (float[A,B,C,D] y) {{ y = Resize(x, , s) }}""")
    assert "scales computed at run time" in message


# -- sizes computed at run time, and axes ---------------------------------------------------------


def test_sizes_computed_from_another_tensor():
    """Resize a feature map to the spatial size of another (an FPN's top-down path)."""
    small = RNG.standard_normal((1, 2, 3, 4)).astype(np.float32)
    big = RNG.standard_normal((1, 2, 6, 9)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[1,2,H,W] x, float[1,2,P,Q] like) => (float[A,B,C,D] y) {{
            s = Shape(like)
            y = Resize <mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor">
                       (x, , , s)
        }}""", {"x": small, "like": big})


def test_computed_sizes_for_selected_axes():
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[N,3,4,5] x, float[P,Q] like) => (float[A,B,C,D] y) {{
            s = Shape(like)
            y = Resize <mode = "linear", axes = [-1, 2]> (x, , , s)
        }}""", {"x": x, "like": np.zeros((7, 2), np.float32)})


def test_constant_sizes_on_a_batch_of_run_time_length():
    x = RNG.standard_normal((3, 2, 4, 4)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[N,2,4,4] x) => (float[A,B,C,D] y) {{
            s = Constant <value = int64[2] {{6, 3}}> ()
            y = Resize <mode = "cubic", axes = [2, 3]> (x, , , s)
        }}""", {"x": x}, atol=1e-5)


@pytest.mark.parametrize("axes", ["[2, 3]", "[3, 2]", "[-1]"])
def test_constant_scales_for_selected_axes(axes):
    n = len(axes.split(","))
    scales = ", ".join(["2.0", "3.0"][:n])
    check_onnx(f"""{HEADER}
        g (float[1,2,3,4] x) => (float[A,B,C,D] y) {{
            s = Constant <value = float[{n}] {{{scales}}}> ()
            y = Resize <mode = "linear", axes = {axes}> (x, , s)
        }}""", {"x": X})


def test_cubic_on_three_axes_by_gathers():
    """TensorRT's cubic resize takes the innermost two axes; a third is gathered (onnxruntime takes
    only two axes too, so ONNX's reference is the oracle)."""
    text = resize_by_sizes([1, 3, 5, 6], 'mode = "cubic"')
    want = ReferenceEvaluator(onnx.parser.parse_model(text)).run(None, {"x": X})[0]
    np.testing.assert_allclose(check_onnx_free(text, {"x": X})["y"], want, rtol=1e-5, atol=1e-5)


def test_cubic_on_three_axes_of_run_time_length_is_refused():
    message = refusal(f"""{HEADER}
        g (float[1,C,H,W] x, float[P,Q,R] like) => (float[A,B,D,E] y) {{
            s = Shape(like)
            y = Resize <mode = "cubic", axes = [1, 2, 3]> (x, , , s)
        }}""")
    assert "cubic resize of axis 1 of a rank-4 input to a length known only at run time is not" in message


@pytest.mark.parametrize("opset", [11, 13])
def test_opset_11_and_13_forms_with_empty_roi_and_scales(opset):
    """As PyTorch exports F.interpolate(size=...) at these opsets: empty roi and scales, then sizes."""
    check_onnx(f"""<ir_version: 7, opset_import: ["" : {opset}]>
        g (float[1,2,3,4] x) => (float[A,B,C,D] y) {{
            roi = Constant <value = float[0] {{}}> ()
            scales = Constant <value = float[0] {{}}> ()
            s = Constant <value = int64[4] {{1, 2, 6, 5}}> ()
            y = Resize <mode = "linear", coordinate_transformation_mode = "pytorch_half_pixel"> (x, roi, scales, s)
        }}""", {"x": X})


@pytest.mark.parametrize("opset", [11, 13])
def test_opset_11_and_13_scales_with_an_empty_roi(opset):
    check_onnx(f"""<ir_version: 7, opset_import: ["" : {opset}]>
        g (float[1,2,3,4] x) => (float[A,B,C,D] y) {{
            roi = Constant <value = float[0] {{}}> ()
            scales = Constant <value = float[4] {{1, 1, 2, 2}}> ()
            y = Resize <mode = "cubic", coordinate_transformation_mode = "align_corners"> (x, roi, scales)
        }}""", {"x": X}, atol=1e-5)


# -- keep_aspect_ratio_policy and antialias -------------------------------------------------------


@pytest.mark.parametrize("policy", ["not_larger", "not_smaller"])
@pytest.mark.parametrize("sizes", [[8, 12], [6, 9], [4, 9]])
def test_keep_aspect_ratio(sizes, policy):
    x = RNG.standard_normal((1, 2, 2, 3)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[1,2,2,3] x) => (float[A,B,C,D] y) {{
            s = Constant <value = int64[2] {{{sizes[0]}, {sizes[1]}}}> ()
            y = Resize <mode = "nearest", axes = [2, 3], keep_aspect_ratio_policy = "{policy}"> (x, , , s)
        }}""", {"x": x})


def test_keep_aspect_ratio_whose_scale_is_not_the_lengths_ratio():
    """not_smaller of 2×4 to 1×3 scales by 0.75: 2 → round(1.5) = 2 rows, mapped by 0.75, not 2/2."""
    x = RNG.standard_normal((1, 1, 2, 4)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[1,1,2,4] x) => (float[A,B,C,D] y) {{
            s = Constant <value = int64[2] {{1, 3}}> ()
            y = Resize <mode = "linear", axes = [2, 3], keep_aspect_ratio_policy = "not_smaller"> (x, , , s)
        }}""", {"x": x})


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_antialias_while_enlarging_changes_nothing(mode):
    check_onnx(resize_by_sizes([1, 2, 6, 8], f'mode = "{mode}", antialias = 1'), {"x": X}, atol=1e-5)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("exclude", [0, 1])
def test_antialiased_downscaling(mode, exclude):
    x = RNG.standard_normal((1, 2, 9, 16)).astype(np.float32)
    check_onnx(resize_by_sizes([1, 2, 4, 3], f'mode = "{mode}", antialias = 1, exclude_outside = {exclude}',
                               "1,2,9,16"), {"x": x}, atol=1e-5)


def test_antialiased_downscaling_to_run_time_sizes_is_refused():
    message = refusal(f"""{HEADER}
        g (float[1,2,8,8] x, float[P,Q] like) => (float[A,B,C,D] y) {{
            s = Shape(like)
            y = Resize <mode = "linear", antialias = 1, axes = [2, 3]> (x, , , s)
        }}""")
    assert "antialiased linear downscaling to lengths known only at run time is not supported" in message


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("roi, sizes", [
    ("0, 0, 0.2, 0.3, 1, 1, 0.8, 0.9", "1, 2, 3, 5"),
    ("0, 0, -0.4, 0.5, 1, 1, 1.3, 0.5", "1, 2, 6, 1"),  # past both ends: extrapolation_value there
])
def test_tf_crop_and_resize_by_gathers(roi, sizes, mode):
    x = RNG.standard_normal((1, 2, 5, 6)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[1,2,5,6] x) => (float[A,B,C,D] y) {{
            roi = Constant <value = float[8] {{{roi}}}> ()
            s = Constant <value = int64[4] {{{sizes}}}> ()
            y = Resize <mode = "{mode}", coordinate_transformation_mode = "tf_crop_and_resize",
                        extrapolation_value = -7.5> (x, roi, , s)
        }}""", {"x": x}, atol=1e-5)


def test_tf_crop_and_resize_of_selected_axes():
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[N,3,4,5] x) => (float[A,B,C,D] y) {{
            roi = Constant <value = float[4] {{0.1, 0.25, 0.9, 1.2}}> ()
            s = Constant <value = int64[2] {{4, 3}}> ()
            y = Resize <mode = "linear", coordinate_transformation_mode = "tf_crop_and_resize", axes = [3, 2]>
                       (x, roi, , s)
        }}""", {"x": x})


def test_tf_crop_and_resize_refusals():
    by_scales = refusal(f"""{HEADER}
        g (float[1,2,4,4] x) => (float[A,B,C,D] y) {{
            roi = Constant <value = float[8] {{0, 0, 0.2, 0.2, 1, 1, 0.8, 0.8}}> ()
            s = Constant <value = float[4] {{1, 1, 2, 2}}> ()
            y = Resize <mode = "linear", coordinate_transformation_mode = "tf_crop_and_resize"> (x, roi, s)
        }}""")
    assert "tf_crop_and_resize by scales is not supported" in by_scales
    roi_fed = refusal(f"""{HEADER}
        g (float[1,2,4,4] x, float[8] roi) => (float[A,B,C,D] y) {{
            s = Constant <value = int64[4] {{1, 2, 3, 3}}> ()
            y = Resize <mode = "linear", coordinate_transformation_mode = "tf_crop_and_resize"> (x, roi, , s)
        }}""")
    assert "tf_crop_and_resize without a constant roi" in roi_fed


# -- legacy forms: Resize-10 and Upsample ---------------------------------------------------------


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("scales", ["1, 1, 2, 3", "1, 1, 0.5, 0.25", "1, 1, 1.5, 2.5"])
def test_resize_10(scales, mode):
    x = RNG.standard_normal((1, 1, 4, 8)).astype(np.float32)
    check_onnx(f"""<ir_version: 5, opset_import: ["" : 10]>
        g (float[1,1,4,8] x) => (float[A,B,C,D] y) {{
            s = Constant <value = float[4] {{{scales}}}> ()
            y = Resize <mode = "{mode}"> (x, s)
        }}""", {"x": x})


def test_resize_10_enlarging_one_axis_and_shrinking_another_is_refused():
    message = refusal("""<ir_version: 5, opset_import: ["" : 10]>
        g (float[1,1,4,8] x) => (float[A,B,C,D] y) {
            s = Constant <value = float[4] {1, 1, 2, 0.5}> ()
            y = Resize <mode = "nearest"> (x, s)
        }""")
    assert "floors on enlarged axes and takes the ceiling on shrunk ones" in message


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_upsample_9(mode):
    x = RNG.standard_normal((1, 2, 3, 4)).astype(np.float32)
    check_onnx(f"""<ir_version: 4, opset_import: ["" : 9]>
        g (float[1,2,3,4] x) => (float[A,B,C,D] y) {{
            s = Constant <value = float[4] {{1, 1, 2, 2.5}}> ()
            y = Upsample <mode = "{mode}"> (x, s)
        }}""", {"x": x})


def test_upsample_7_scales_attribute():
    x = RNG.standard_normal((1, 2, 3, 4)).astype(np.float32)
    check_onnx("""<ir_version: 3, opset_import: ["" : 7]>
        g (float[1,2,3,4] x) => (float[A,B,C,D] y) {
            y = Upsample <mode = "nearest", scales = [1.0, 1.0, 3.0, 2.0]> (x)
        }""", {"x": x})


# -- GridSample -----------------------------------------------------------------------------------


def grid(shape: tuple[int, ...], spread: float = 1.3) -> np.ndarray:
    """Normalized coordinates reaching past both ends (padding modes matter) and hitting exact ties."""
    g = RNG.uniform(-spread, spread, shape).astype(np.float32)
    g.reshape(-1)[:6] = [-1.0, 1.0, 0.0, 0.5, -0.5, 1.25]
    return g


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_16(mode, padding, align):
    if (mode, padding) == ("bicubic", "border"):
        pytest.skip("refused: see test_grid_sample_refusals")
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    check_onnx(f"""<ir_version: 8, opset_import: ["" : 16]>
        g (float[2,3,4,5] x, float[2,6,7,2] grid) => (float[A,B,C,D] y) {{
            y = GridSample <mode = "{mode}", padding_mode = "{padding}", align_corners = {align}> (x, grid)
        }}""", {"x": x, "grid": grid((2, 6, 7, 2))}, atol=1e-5)


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["linear", "nearest"])
def test_grid_sample_20_volumetric(mode, padding, align):
    x = RNG.standard_normal((1, 2, 3, 4, 5)).astype(np.float32)
    check_onnx(f"""<ir_version: 9, opset_import: ["" : 20]>
        g (float[1,2,3,4,5] x, float[1,2,3,4,3] grid) => (float[A,B,C,D,E] y) {{
            y = GridSample <mode = "{mode}", padding_mode = "{padding}", align_corners = {align}> (x, grid)
        }}""", {"x": x, "grid": grid((1, 2, 3, 4, 3))}, atol=1e-5)


def test_grid_sample_22_cubic_of_run_time_shapes():
    x = RNG.standard_normal((1, 2, 5, 6)).astype(np.float32)
    check_onnx("""<ir_version: 10, opset_import: ["" : 22]>
        g (float[N,C,H,W] x, float[N,P,Q,2] grid) => (float[A,B,D,E] y) {
            y = GridSample <mode = "cubic", padding_mode = "reflection"> (x, grid)
        }""", {"x": x, "grid": grid((1, 3, 4, 2))}, atol=1e-5)


def test_grid_sample_of_half_data_by_a_float_grid():
    x = RNG.standard_normal((1, 2, 4, 5)).astype(np.float16)
    check_onnx("""<ir_version: 9, opset_import: ["" : 20]>
        g (float16[1,2,4,5] x, float[1,3,3,2] grid) => (float16[A,B,C,D] y) {
            y = GridSample <mode = "linear", padding_mode = "zeros"> (x, grid)
        }""", {"x": x, "grid": grid((1, 3, 3, 2))}, rtol=2e-3, atol=2e-3)


def test_grid_sample_refusals():
    volumetric_cubic = refusal("""<ir_version: 9, opset_import: ["" : 20]>
        g (float[1,2,3,4,5] x, float[1,2,3,4,3] grid) => (float[A,B,C,D,E] y) {
            y = GridSample <mode = "cubic"> (x, grid)
        }""")
    assert "cubic GridSample of a 3-D grid" in volumetric_cubic
    one_d = refusal("""<ir_version: 9, opset_import: ["" : 20]>
        g (float[1,2,5] x, float[1,4,1] grid) => (float[A,B,C] y) { y = GridSample(x, grid) }""")
    assert "GridSample of a rank-3 input" in one_d
    cubic_border = refusal("""<ir_version: 9, opset_import: ["" : 20]>
        g (float[1,2,4,5] x, float[1,3,3,2] grid) => (float[A,B,C,D] y) {
            y = GridSample <mode = "cubic", padding_mode = "border"> (x, grid)
        }""")
    assert "cubic GridSample with border padding is not supported" in cubic_border


def test_cubic_border_is_refused_because_the_references_disagree():
    """The refusal's reason, shown: ONNX's reference and onnxruntime give different numbers."""
    text = """<ir_version: 9, opset_import: ["" : 20]>
        g (float[1,1,4,5] x, float[1,6,7,2] grid) => (float[A,B,C,D] y) {
            y = GridSample <mode = "cubic", padding_mode = "border"> (x, grid)
        }"""
    feeds = {"x": RNG.standard_normal((1, 1, 4, 5)).astype(np.float32), "grid": grid((1, 6, 7, 2))}
    reference = ReferenceEvaluator(onnx.parser.parse_model(text)).run(None, feeds)[0]
    runtime = ort.InferenceSession(onnx.parser.parse_model(text).SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    assert np.abs(reference - runtime).max() > 1e-2

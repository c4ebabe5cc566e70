"""torchvision's heatmaps-to-keypoints (written here as its export writes it): per roi, resize the K heatmaps to
the roi's size (rois clipped to the image, so the size has a bound), ArgMax of each flattened map, x and y from
the flat index and the map's width, and the score read there. TensorRT's builder cannot build the Resize in
the loop; ``bounded-resize`` makes it a canvas at the bound. Built with TensorRT's builder, simulated, and
compared with onnxruntime in each resize mode; a reader it cannot rewrite is refused, saying why."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from loopc.compiler import optimize
from loopc.errors import PassError
from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import build_and_simulate

K, M, SIDE = 3, 6, 20.0


def keypoints_model(mode: str = "cubic", transform: str = "half_pixel", clip: str = f"{SIDE}",
                    argmax: str = "ArgMax <axis = 1, keepdims = 0>", score: str = "Identity(at_peak)",
                    maps_count: str = "num") -> str:
    """``clip``: the image side the rois are clipped to ("" for no clip: no bound); ``argmax``: the op and
    attributes picking each map's peak; ``score``: what a map's score is (the value at its peak);
    ``maps_count``: the leading dim the maps are flattened to (``num_again`` is it, computed from data)."""
    clipped = (f"""low = Constant <value = float {{0}}> ()
        high = Constant <value = float {{{clip}}}> ()
        above = Max(rois, low)
        boxes = Min(above, high)""" if clip else "boxes = Identity(rois)")
    return f"""<ir_version: 8, opset_import: ["" : 13]>
    keypoints (float[N,{K},{M},{M}] maps, float[N,4] rois) => (int64[N,{K}] where, float[N,{K}] scores) {{
        {clipped}
        c0 = Constant <value = int64[1] {{0}}> ()
        c1 = Constant <value = int64[1] {{1}}> ()
        c2 = Constant <value = int64[1] {{2}}> ()
        c3 = Constant <value = int64[1] {{3}}> ()
        x0 = Gather <axis = 1> (boxes, c0)
        y0 = Gather <axis = 1> (boxes, c1)
        x1 = Gather <axis = 1> (boxes, c2)
        y1 = Gather <axis = 1> (boxes, c3)
        dx = Sub(x1, x0)
        dy = Sub(y1, y0)
        one = Constant <value = float {{1}}> ()
        wide = Clip(dx, one)
        tall = Clip(dy, one)
        widths2 = Ceil(wide)
        heights2 = Ceil(tall)
        widths = Squeeze(widths2, c1)
        heights = Squeeze(heights2, c1)
        shape = Shape(rois)
        n1 = Slice(shape, c0, c1)
        count = Squeeze(n1, c0)
        go = Constant <value = bool {{1}}> ()
        maps_shape = Shape(maps)
        k_scalar = Constant <value = int64 {{1}}> ()
        num = Gather <axis = 0> (maps_shape, k_scalar)
        nothing = Constant <value = float {{0}}> ()
        three = Constant <value = float {{{K}}}> ()
        zeros = Mul(rois, nothing)
        threes = Add(zeros, three)
        most = ReduceMax <keepdims = 0> (threes)
        num_again = Cast <to = 7> (most)
        where, scores = Loop (count, go) <body = body (int64 i, bool c) => (bool c_out, int64[{K}] pos, float[{K}] score) {{
            c_out = Identity(c)
            m = Gather <axis = 0> (maps, i)
            w = Gather <axis = 0> (widths, i)
            h = Gather <axis = 0> (heights, i)
            a1 = Constant <value = int64[1] {{1}}> ()
            m4 = Unsqueeze(m, a1)
            a0 = Constant <value = int64[1] {{0}}> ()
            h1 = Unsqueeze(h, a0)
            w1 = Unsqueeze(w, a0)
            hw = Concat <axis = 0> (h1, w1)
            hw_int = Cast <to = 7> (hw)
            m4_shape = Shape(m4)
            two = Constant <value = int64[1] {{2}}> ()
            lead = Slice(m4_shape, a0, two)
            sizes = Concat <axis = 0> (lead, hw_int)
            resized = Resize <mode = "{mode}", coordinate_transformation_mode = "{transform}"> (m4, , , sizes)
            big = Constant <value = int64[1] {{9223372036854775807}}> ()
            whole = Slice(resized, a0, big, a0)
            zero = Constant <value = int64 {{0}}> ()
            roi_map = Gather <axis = 1> (whole, zero)
            map_shape = Shape(roi_map)
            k2 = Constant <value = int64 {{2}}> ()
            width = Gather <axis = 0> (map_shape, k2)
            num1 = Unsqueeze({maps_count}, a0)
            minus = Constant <value = int64[1] {{-1}}> ()
            flat_shape = Concat <axis = 0> (num1, minus)
            flat = Reshape(roi_map, flat_shape)
            pos = {argmax} (flat)
            x_int = Mod(pos, width)
            rows = Sub(pos, x_int)
            y_int = Div(rows, width)
            picked_rows = Gather <axis = 1> (roi_map, y_int)
            picked = Gather <axis = 2> (picked_rows, x_int)
            all = Reshape(picked, minus)
            ks = Range(zero, num, k_scalar)
            kk = Mul(num, num)
            kk1 = Add(kk, num)
            base = Add(kk1, k_scalar)
            diagonal = Mul(ks, base)
            at_peak = Gather <axis = 0> (all, diagonal)
            score = {score}
        }}>
    }}"""


def _inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    rois = np.array([
        [2.0, 3.0, 9.5, 8.2],      # inside
        [-5.0, -4.0, 6.3, 7.0],    # across the top-left corner (clipped)
        [12.0, 9.0, 31.0, 40.0],   # across the bottom-right corner: the whole bound
        [4.0, 4.0, 4.2, 3.0],      # degenerate: one pixel
        [0.0, 0.0, 20.0, 20.0],    # the whole image
    ], np.float32)
    maps = rng.normal(size=(len(rois), K, M, M)).astype(np.float32)
    maps[0, 1] = 0.0  # all ties: the first position wins
    return {"maps": maps, "rois": rois}


def _ort(proto: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    return ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)


@pytest.mark.parametrize("mode, transform", [
    ("cubic", "half_pixel"), ("linear", "half_pixel"), ("linear", "align_corners"), ("nearest", "asymmetric"),
])
def test_keypoints_build_and_match(mode, transform):
    proto = onnx.parser.parse_model(keypoints_model(mode, transform))
    onnx.checker.check_model(proto)
    model = import_model(proto)
    stats = optimize(model)
    assert stats.get("bounded-resize.resizes") == 1, stats
    inputs = _inputs()
    _, got = build_and_simulate(model, inputs)
    where, scores = _ort(proto, inputs)
    np.testing.assert_array_equal(got["where"], where)
    np.testing.assert_allclose(got["scores"], scores, rtol=1e-5, atol=1e-6)


def test_the_peaks_are_spread_over_the_maps():
    """The oracle's peaks are not all at one place (so the comparison above compares something): sizes
    from 1x1 to the whole 20x20 bound, and the all-equal map's peak is its first position."""
    proto = onnx.parser.parse_model(keypoints_model())
    where, _ = _ort(proto, _inputs())
    assert where[0, 1] == 0 and where[3].tolist() == [0, 0, 0]
    assert where[2].max() > 19 * 20 - 20 or where[4].max() > 19 * 20 - 20 or len(set(where.reshape(-1))) > 8


@pytest.mark.parametrize("change, why", [
    ({"clip": ""}, "the sizes it resizes to have no bound"),  # rois not clipped
    ({"argmax": "ArgMax <axis = 1, keepdims = 0, select_last_index = 1>"},  # the last of ties: another order
     "no rule for a Reshape .*: it does not flatten the padded trailing axes for one ArgMax or ArgMin"),
    ({"score": "ReduceMax <axes = [1], keepdims = 0> (flat)"},  # a reader that would see the padding
     "no rule for a Reshape .*: it does not keep the padded axis and every axis before it"),
    ({"maps_count": "num_again"},  # flattened to a count not provably the maps'
     "no rule for a Reshape .*: it does not flatten the padded trailing axes for one ArgMax or ArgMin"),
])
def test_what_it_cannot_rewrite_is_refused_saying_why(change, why):
    model = import_model(onnx.parser.parse_model(keypoints_model(**change)))
    with pytest.raises(PassError, match=f"bounded-resize: .*{why}"):
        optimize(model)


@pytest.mark.parametrize("cap, rewritten", [(20 * 20, True), (20 * 20 - 1, False)])
def test_a_canvas_past_its_cap_is_refused(monkeypatch, cap, rewritten):
    """The canvas is 20 x 20 (the rois' bound): held only while that is within the cap."""
    from loopc.passes import bounded_resize

    monkeypatch.setattr(bounded_resize, "MAX_CANVAS", cap)
    model = import_model(onnx.parser.parse_model(keypoints_model()))
    if rewritten:
        assert "bounded-resize.resizes" in optimize(model)
    else:
        with pytest.raises(PassError, match="bounded-resize: a canvas at its bound would hold 400 positions"):
            optimize(model)

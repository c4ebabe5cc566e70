"""torchvision's mask pasting (``_onnx_paste_mask_in_image``, written here as its export writes it): per box,
resize the mask to the box's size, crop what is inside the image, pad it back with computed-size zeros and cut
it to the image. TensorRT's builder cannot build the Resize in the loop; ``pasted-resize`` makes it gathers
into the static frame. Built with TensorRT's builder, simulated, and compared with onnxruntime, for boxes
inside the image, across each edge, wholly outside it, and degenerate, in each resize mode."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from loopc.compiler import optimize
from loopc.errors import PassError
from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import build_and_simulate

H, W, M = 12, 16, 6


def paste_model(mode: str, transform: str, also_sum: bool = False) -> str:
    """The export's loop; ``also_sum`` also outputs each resized mask's sum (a second reader of it)."""
    header, outputs, body_out = (", float[N] totals", ", totals", ", float total") if also_sum else ("", "", "")
    extra = "total = ReduceSum <keepdims = 0> (r2)" if also_sum else ""
    return f"""<ir_version: 8, opset_import: ["" : 13]>
    paste (float[N,{M},{M}] masks, int64[N,4] boxes) => (float[N,{H},{W}] pasted{header}) {{
        shape = Shape(boxes)
        zero = Constant <value = int64[1] {{0}}> ()
        one = Constant <value = int64[1] {{1}}> ()
        n = Slice(shape, zero, one)
        count = Squeeze(n, zero)
        start = Constant <value = float[0,{H},{W}] {{}}> ()
        go = Constant <value = bool {{1}}> ()
        pasted{outputs} = Loop (count, go, start) <body = body (int64 i, bool c, float[K,{H},{W}] acc)
                => (bool c_out, float[L,{H},{W}] grown{body_out}) {{
            c_out = Identity(c)
            mask = Gather <axis = 0> (masks, i)
            box = Gather <axis = 0> (boxes, i)
            k0 = Constant <value = int64 {{0}}> ()
            k1 = Constant <value = int64 {{1}}> ()
            k2 = Constant <value = int64 {{2}}> ()
            k3 = Constant <value = int64 {{3}}> ()
            bx0 = Gather <axis = 0> (box, k0)
            by0 = Gather <axis = 0> (box, k1)
            bx1 = Gather <axis = 0> (box, k2)
            by1 = Gather <axis = 0> (box, k3)
            s1 = Constant <value = int64 {{1}}> ()
            s0 = Constant <value = int64 {{0}}> ()
            dw = Sub(bx1, bx0)
            dw1 = Add(dw, s1)
            w = Max(dw1, s1)
            dh = Sub(by1, by0)
            dh1 = Add(dh, s1)
            h = Max(dh1, s1)
            axes01 = Constant <value = int64[2] {{0, 1}}> ()
            mask4 = Unsqueeze(mask, axes01)
            ones = Constant <value = int64[2] {{1, 1}}> ()
            a0 = Constant <value = int64[1] {{0}}> ()
            h1 = Unsqueeze(h, a0)
            w1 = Unsqueeze(w, a0)
            sizes = Concat <axis = 0> (ones, h1, w1)
            resized = Resize <mode = "{mode}", coordinate_transformation_mode = "{transform}"> (mask4, , , sizes)
            r1 = Gather <axis = 0> (resized, k0)
            r2 = Gather <axis = 0> (r1, k0)
            x_0 = Max(bx0, s0)
            bx1p = Add(bx1, s1)
            width = Constant <value = int64 {{{W}}}> ()
            x_1 = Min(bx1p, width)
            y_0 = Max(by0, s0)
            by1p = Add(by1, s1)
            height = Constant <value = int64 {{{H}}}> ()
            y_1 = Min(by1p, height)
            ys = Sub(y_0, by0)
            ye = Sub(y_1, by0)
            ys1 = Unsqueeze(ys, a0)
            ye1 = Unsqueeze(ye, a0)
            a1 = Constant <value = int64[1] {{1}}> ()
            crop_y = Slice(r2, ys1, ye1, a0)
            xs = Sub(x_0, bx0)
            xe = Sub(x_1, bx0)
            xs1 = Unsqueeze(xs, a0)
            xe1 = Unsqueeze(xe, a0)
            crop = Slice(crop_y, xs1, xe1, a1)
            crop_shape = Shape(crop)
            crop_w = Gather <axis = 0> (crop_shape, k1)
            crop_w1 = Unsqueeze(crop_w, a0)
            y01 = Unsqueeze(y_0, a0)
            top_shape = Concat <axis = 0> (y01, crop_w1)
            top = ConstantOfShape(top_shape)
            below = Sub(height, y_1)
            below1 = Unsqueeze(below, a0)
            bottom_shape = Concat <axis = 0> (below1, crop_w1)
            bottom = ConstantOfShape(bottom_shape)
            column = Concat <axis = 0> (top, crop, bottom)
            hh = Constant <value = int64[1] {{{H}}}> ()
            column_cut = Slice(column, a0, hh, a0)
            column_shape = Shape(column_cut)
            rows = Gather <axis = 0> (column_shape, k0)
            rows1 = Unsqueeze(rows, a0)
            x01 = Unsqueeze(x_0, a0)
            left_shape = Concat <axis = 0> (rows1, x01)
            left = ConstantOfShape(left_shape)
            after = Sub(width, x_1)
            after1 = Unsqueeze(after, a0)
            right_shape = Concat <axis = 0> (rows1, after1)
            right = ConstantOfShape(right_shape)
            framed = Concat <axis = 1> (left, column_cut, right)
            ww = Constant <value = int64[1] {{{W}}}> ()
            frame = Slice(framed, a0, ww, a1)
            piece = Unsqueeze(frame, a0)
            grown = Concat <axis = 0> (acc, piece)
            {extra}
        }}>
    }}"""


def _inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    boxes = np.array([
        [3, 2, 9, 7],        # inside
        [-4, -3, 5, 4],      # across the top-left corner
        [10, 6, 20, 15],     # across the bottom-right corner
        [-10, 1, -5, 6],     # wholly left of the image
        [4, 14, 8, 19],      # wholly below it
        [7, 5, 6, 4],        # degenerate: resized to one pixel, cropped to none
        [0, 0, 15, 11],      # the whole image
        [2, -1, 2, 30],      # one column, taller than the image
    ], np.int64)
    return {"masks": rng.random((len(boxes), M, M)).astype(np.float32), "boxes": boxes}


def _check(text: str, inputs: dict[str, np.ndarray]) -> dict[str, int]:
    proto = onnx.parser.parse_model(text)
    onnx.checker.check_model(proto)
    model = import_model(proto)
    stats = optimize(model)
    _, got = build_and_simulate(model, inputs)
    want = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)
    assert got["pasted"].shape == want[0].shape
    np.testing.assert_allclose(got["pasted"], want[0], rtol=1e-5, atol=2e-6)
    return stats


@pytest.mark.parametrize("mode, transform", [
    ("linear", "half_pixel"), ("linear", "pytorch_half_pixel"), ("linear", "align_corners"),
    ("linear", "asymmetric"), ("cubic", "half_pixel"), ("nearest", "asymmetric"), ("nearest", "half_pixel"),
])
def test_paste_builds_and_matches(mode, transform):
    stats = _check(paste_model(mode, transform), _inputs())
    assert stats.get("pasted-resize.resizes") == 1, stats


def test_the_pasted_masks_are_not_trivially_zero():
    """The oracle's frames hold the resized masks (so the comparison above compares something)."""
    proto = onnx.parser.parse_model(paste_model("linear", "half_pixel"))
    inputs = _inputs()
    (want,) = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)
    inside = [(want[k] != 0).sum() for k in range(len(want))]
    assert inside[0] == 7 * 6 and inside[1] == 5 * 6 and inside[2] == 6 * 6 and inside[6] == 12 * 16
    assert inside[3] == 0 and inside[4] == 0 and inside[5] == 0 and inside[7] == 12


def test_a_resized_tensor_read_elsewhere_is_refused_saying_why():
    """Its size changes between trips wherever it is read: the pass cannot remove it, so it does not start."""
    text = paste_model("linear", "half_pixel", also_sum=True)
    model = import_model(onnx.parser.parse_model(text))
    with pytest.raises(PassError, match="pasted-resize: 'r2' is read by 2 nodes besides Shapes"):
        optimize(model)

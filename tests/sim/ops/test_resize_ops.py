"""RESIZE and GRID_SAMPLE kernels against TensorRT's documented semantics: small cases worked out by
hand, and naive per-pixel references written here from the documented formulas."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from loopc.errors import SimulationError
from loopc.sim import simulate

RNG = np.random.default_rng(3)


def resize_layer(nb: Any, x: np.ndarray, mode: str = "NEAREST", transform: str = "ASYMMETRIC",
                 rounding: str = "FLOOR", selector: str = "FORMULA", **attrs: Any) -> Any:
    t = nb.trt
    layer = nb.network.add_resize(nb.input("x", t.float32, x.shape))
    layer.resize_mode = getattr(t.InterpolationMode, mode)
    layer.coordinate_transformation = getattr(t.ResizeCoordinateTransformation, transform)
    layer.nearest_rounding = getattr(t.ResizeRoundMode, rounding)
    layer.selector_for_single_pixel = getattr(t.ResizeSelector, selector)
    for name, value in attrs.items():
        setattr(layer, name, value)
    nb.output(layer.get_output(0), "y")
    return layer


def run(nb: Any, x: np.ndarray) -> np.ndarray:
    return nb.build_and_simulate({"x": x})["y"]


# -- Resize, by hand ------------------------------------------------------------------------------


@pytest.mark.parametrize("rounding, expected", [
    # asymmetric 2 -> 4 maps to 0, 0.5, 1, 1.5: the ties at .5 and 1.5 tell the roundings apart
    ("HALF_DOWN", [10, 10, 20, 20]),
    ("HALF_UP", [10, 20, 20, 20]),  # 1.5 rounds to 2, clamped to the last index 1
    ("FLOOR", [10, 10, 20, 20]),
    ("CEIL", [10, 20, 20, 20]),
])
def test_nearest_roundings(nb: Any, rounding: str, expected: list[float]) -> None:
    x = np.array([[10, 20]], np.float32)
    resize_layer(nb, x, rounding=rounding, shape=(1, 4))
    np.testing.assert_array_equal(run(nb, x), [expected])


def test_nearest_half_pixel_downscale(nb: Any) -> None:
    # 5 -> 2: (x + 0.5) * 5/2 - 0.5 = 0.75, 3.25; HALF_DOWN -> 1, 3
    x = np.array([[1, 2, 3, 4, 5]], np.float32)
    resize_layer(nb, x, transform="HALF_PIXEL", rounding="HALF_DOWN", shape=(1, 2))
    np.testing.assert_array_equal(run(nb, x), [[2, 4]])


def test_linear_half_pixel_reads_the_edge_past_either_end(nb: Any) -> None:
    # 3 -> 5: coordinates -0.2, 0.4, 1.0, 1.6, 2.2; the first and last read the edge pixel
    x = np.array([[10, 20, 30]], np.float32)
    resize_layer(nb, x, mode="LINEAR", transform="HALF_PIXEL", shape=(1, 5))
    np.testing.assert_allclose(run(nb, x), [[10, 14, 20, 26, 30]], rtol=1e-6)


def test_linear_align_corners(nb: Any) -> None:
    x = np.array([[10, 20, 30]], np.float32)
    resize_layer(nb, x, mode="LINEAR", transform="ALIGN_CORNERS", shape=(1, 5))
    np.testing.assert_allclose(run(nb, x), [[10, 15, 20, 25, 30]], rtol=1e-6)


@pytest.mark.parametrize("transform, selector, expected", [
    ("HALF_PIXEL", "FORMULA", 20),  # (0 + 0.5) * 3 - 0.5 = 1
    ("HALF_PIXEL", "UPPER", 10),  # a single output pixel reads input coordinate 0
    ("ALIGN_CORNERS", "UPPER", 10),
    ("ASYMMETRIC", "FORMULA", 10),
])
def test_single_pixel_selector(nb: Any, transform: str, selector: str, expected: float) -> None:
    x = np.array([[10, 20, 30]], np.float32)
    resize_layer(nb, x, mode="LINEAR", transform=transform, selector=selector, shape=(1, 1))
    np.testing.assert_allclose(run(nb, x), [[expected]])


def test_cubic_at_a_pixel_is_that_pixel(nb: Any) -> None:
    """Align-corners 4 -> 7 lands on every input pixel at even outputs: Keys' weights there are 0, 1, 0, 0."""
    x = np.array([[1, 5, 2, 8]], np.float32)
    resize_layer(nb, x, mode="CUBIC", transform="ALIGN_CORNERS", shape=(1, 7))
    np.testing.assert_allclose(run(nb, x)[0, ::2], [1, 5, 2, 8], rtol=1e-6)


def test_scales_size_the_output_by_floor(nb: Any) -> None:
    x = np.array([[1, 2, 3]], np.float32)
    resize_layer(nb, x, scales=[1.0, 1.7])  # floor(3 * 1.7) = 5; asymmetric floor of 0, .6, 1.2, 1.8, 2.4
    np.testing.assert_array_equal(run(nb, x), [[1, 1, 2, 2, 3]])


def test_output_shape_as_an_input(nb: Any) -> None:
    t = nb.trt
    x = np.array([[1, 2], [3, 4]], np.float32)
    layer = nb.network.add_resize(nb.input("x", t.float32, (2, 2)))
    layer.set_input(1, nb.const(np.array([4, 3], np.int64)))
    nb.output(layer.get_output(0), "y")  # asymmetric floor: rows 0, 0, 1, 1; columns 0, 0, 1
    np.testing.assert_array_equal(run(nb, x), [[1, 1, 2], [1, 1, 2], [3, 3, 4], [3, 3, 4]])


def test_resizing_an_outer_axis_is_an_error(nb: Any) -> None:
    x = np.zeros((2, 2, 2), np.float32)
    resize_layer(nb, x, mode="CUBIC", shape=(3, 3, 3))
    with pytest.raises(SimulationError, match="resizes only the innermost 2 axes"):
        simulate(nb.network, {"x": x})


# -- Resize, against a naive reference ------------------------------------------------------------


def keys(d: float, a: float) -> float:
    d = abs(d)
    if d <= 1:
        return (a + 2) * d**3 - (a + 3) * d**2 + 1
    if d < 2:
        return a * d**3 - 5 * a * d**2 + 8 * a * d - 4 * a
    return 0.0


def naive_coordinate(x: int, n_in: int, n_out: int, transform: str, selector: str) -> float:
    if n_out == 1 and selector == "UPPER":
        return 0.0
    if transform == "ALIGN_CORNERS":
        return 0.0 if n_out == 1 else x * (n_in - 1) / (n_out - 1)
    if transform == "ASYMMETRIC":
        return x * n_in / n_out
    return (x + 0.5) * n_in / n_out - 0.5


def naive_taps(c: float, n_in: int, mode: str, a: float, exclude: bool) -> list[tuple[int, float]]:
    """(input index, weight) of each tap of one axis, written from the definitions."""
    if mode == "LINEAR":
        lo = math.floor(c)
        taps = [(lo, 1 - (c - lo)), (lo + 1, c - lo)]
    else:
        lo = math.floor(c)
        taps = [(i, keys(c - i, a)) for i in range(lo - 1, lo + 3)]
    if exclude:
        taps = [(i, w if 0 <= i < n_in else 0.0) for i, w in taps]
        total = sum(w for _, w in taps)
        taps = [(i, w / total) for i, w in taps]
    return [(min(max(i, 0), n_in - 1), w) for i, w in taps]


def naive_resize_2d(x: np.ndarray, out: tuple[int, int], mode: str, transform: str, selector: str, a: float,
                    exclude: bool) -> np.ndarray:
    (h, w), (oh, ow) = x.shape, out
    y = np.zeros(out)
    for i in range(oh):
        rows = naive_taps(naive_coordinate(i, h, oh, transform, selector), h, mode, a, exclude)
        for j in range(ow):
            cols = naive_taps(naive_coordinate(j, w, ow, transform, selector), w, mode, a, exclude)
            y[i, j] = sum(wr * wc * x[r, c] for r, wr in rows for c, wc in cols)
    return y


@pytest.mark.parametrize("out", [(7, 9), (2, 3), (1, 5)])
@pytest.mark.parametrize("transform", ["HALF_PIXEL", "ALIGN_CORNERS", "ASYMMETRIC"])
@pytest.mark.parametrize("mode, exclude, a", [("LINEAR", False, -0.75), ("CUBIC", False, -0.75),
                                              ("CUBIC", True, -0.5)])
def test_resize_2d_matches_the_naive_reference(nb: Any, mode: str, exclude: bool, a: float, transform: str,
                                               out: tuple[int, int]) -> None:
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    resize_layer(nb, x, mode=mode, transform=transform, selector="UPPER", shape=out, cubic_coeff=a,
                 exclude_outside=exclude)
    want = naive_resize_2d(x.astype(np.float64), out, mode, transform, "UPPER", a, exclude)
    np.testing.assert_allclose(run(nb, x), want, rtol=1e-5, atol=1e-5)


# -- GridSample -----------------------------------------------------------------------------------


def grid_layer(nb: Any, x: np.ndarray, grid: np.ndarray, mode: str, sample: str, align: bool) -> None:
    t = nb.trt
    layer = nb.network.add_grid_sample(nb.input("x", t.float32, x.shape), nb.input("g", t.float32, grid.shape))
    layer.interpolation_mode = getattr(t.InterpolationMode, mode)
    layer.sample_mode = getattr(t.SampleMode, sample)
    layer.align_corners = align
    nb.output(layer.get_output(0), "y")


SQUARE = np.array([[[[1, 2], [3, 4]]]], np.float32)


@pytest.mark.parametrize("point, mode, sample, align, expected", [
    ((0.0, 0.0), "LINEAR", "FILL", False, 2.5),  # the centre: a quarter of each pixel
    ((-1.0, -1.0), "LINEAR", "FILL", False, 0.25),  # the top-left outer corner: 1/4 of pixel 1, the rest zeros
    ((-1.0, -1.0), "LINEAR", "CLAMP", False, 1.0),
    ((-1.0, -1.0), "LINEAR", "REFLECT", False, 1.0),
    ((-1.0, -1.0), "LINEAR", "FILL", True, 1.0),  # with align_corners, -1 is pixel 1's centre
    ((1.0, -1.0), "LINEAR", "FILL", True, 2.0),  # x (the column) comes first in the grid
    ((0.5, 0.0), "LINEAR", "FILL", True, 2.75),  # columns 0.75 and rows 0.5: 1.75 + 0.5 * 2
    ((-0.2, 0.2), "NEAREST", "FILL", False, 3.0),  # column 0.3 -> 0, row 0.7 -> 1
    ((3.0, 0.0), "NEAREST", "FILL", False, 0.0),  # column 3.5 -> 4 (even), outside: zero
    ((3.0, 0.0), "NEAREST", "CLAMP", False, 2.0),  # clamped to column 1, row 0.5 -> 0 (even)
    ((2.0, -1.0), "NEAREST", "REFLECT", True, 1.0),  # column 2 mirrors at 1 to 0
])
def test_grid_sample_by_hand(nb: Any, point: tuple[float, float], mode: str, sample: str, align: bool,
                             expected: float) -> None:
    grid = np.array(point, np.float32).reshape(1, 1, 1, 2)
    grid_layer(nb, SQUARE, grid, mode, sample, align)
    got = nb.build_and_simulate({"x": SQUARE, "g": grid})["y"]
    np.testing.assert_allclose(got.reshape(()), expected, rtol=1e-6)


def naive_reflect(v: float, low: float, high: float) -> float:
    """Mirror ``v`` at low and high, bounce by bounce, until it is inside."""
    while v < low or v > high:
        v = 2 * low - v if v < low else 2 * high - v
    return v


def naive_grid_sample(x: np.ndarray, grid: np.ndarray, mode: str, sample: str, align: bool) -> np.ndarray:
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    k = len(spatial)
    out = np.zeros((n, c) + grid.shape[1:-1])
    for b in range(n):
        for pos in itertools.product(*(range(d) for d in grid.shape[1:-1])):
            coords, bounds = [], []
            for axis, length in enumerate(spatial):
                g = float(grid[(b, *pos, k - 1 - axis)])
                v = (g + 1) / 2 * (length - 1) if align else ((g + 1) * length - 1) / 2
                low, high = (0.0, length - 1.0) if align else (-0.5, length - 0.5)
                if mode == "NEAREST":
                    v = float(np.rint(v))
                if v < low or v > high:
                    v = min(max(v, 0), length - 1) if sample == "CLAMP" else naive_reflect(v, low, high) \
                        if sample == "REFLECT" else v
                coords.append(v)
                bounds.append((low, high))
            per_axis = []
            for v, length, (low, high) in zip(coords, spatial, bounds):
                if mode == "NEAREST":
                    taps = [(int(v), 1.0)]
                elif mode == "LINEAR":
                    lo = math.floor(v)
                    taps = [(lo, 1 - (v - lo)), (lo + 1, v - lo)]
                else:
                    lo = math.floor(v)
                    taps = [(i, keys(v - i, -0.75)) for i in range(lo - 1, lo + 3)]
                per_axis.append([(i, w, length, low, high) for i, w in taps])
            for combo in itertools.product(*per_axis):
                weight, index = 1.0, []
                for i, w, length, low, high in combo:
                    weight *= w
                    if sample == "CLAMP":
                        i = min(max(i, 0), length - 1)
                    elif sample == "REFLECT":
                        i = min(max(int(naive_reflect(i, low, high)), 0), length - 1)
                    index.append(i)
                if all(0 <= i < d for i, d in zip(index, spatial)):
                    out[(b, slice(None), *pos)] += weight * x[(b, slice(None), *index)]
    return out


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("sample", ["FILL", "CLAMP", "REFLECT"])
@pytest.mark.parametrize("mode", ["NEAREST", "LINEAR", "CUBIC"])
def test_grid_sample_2d_matches_the_naive_reference(nb: Any, mode: str, sample: str, align: bool) -> None:
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    grid = RNG.uniform(-2.5, 2.5, (2, 3, 4, 2)).astype(np.float32)
    grid_layer(nb, x, grid, mode, sample, align)
    got = nb.build_and_simulate({"x": x, "g": grid})["y"]
    np.testing.assert_allclose(got, naive_grid_sample(x, grid, mode, sample, align), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sample", ["FILL", "REFLECT"])
@pytest.mark.parametrize("mode", ["NEAREST", "LINEAR"])
def test_grid_sample_3d_matches_the_naive_reference(nb: Any, mode: str, sample: str) -> None:
    x = RNG.standard_normal((1, 2, 3, 4, 5)).astype(np.float32)
    grid = RNG.uniform(-1.5, 1.5, (1, 2, 3, 2, 3)).astype(np.float32)
    grid_layer(nb, x, grid, mode, sample, False)
    got = nb.build_and_simulate({"x": x, "g": grid})["y"]
    np.testing.assert_allclose(got, naive_grid_sample(x, grid, mode, sample, False), rtol=1e-5, atol=1e-5)


def test_interpolating_integer_data_is_an_error(nb: Any) -> None:
    t = nb.trt
    layer = nb.network.add_resize(nb.input("x", t.int8, (1, 2)))
    layer.resize_mode = t.InterpolationMode.LINEAR
    layer.shape = (1, 4)
    nb.output(layer.get_output(0), "y")
    with pytest.raises(SimulationError, match="linear resize of int8 data"):
        simulate(nb.network, {"x": np.array([[1, 2]], np.int8)})

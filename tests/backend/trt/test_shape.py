"""Data movement and shape computation (static and dynamic dims) against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend.trt.oracle import check_onnx

HEADER = '<ir_version: 8, opset_import: ["" : 18]>'
X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def ints(name: str, values: list[int]) -> str:
    return f"{name} = Constant <value = int64[{len(values)}] {{{', '.join(map(str, values))}}}> ()"


@pytest.mark.parametrize("x_type", ["float[2,3,4]", "float[N,3,4]"])
@pytest.mark.parametrize("target, allowzero, y", [
    ([0, -1], 0, "2,12"), ([4, 0, 2, -1], 0, "4,3,2,1"), ([-1], 0, "24"), ([6, 4], 1, "6,4"),
])
def test_reshape(x_type, target, allowzero, y):
    check_onnx(f"""{HEADER}
        g ({x_type} x) => (float[{y}] y) {{ {ints("s", target)}  y = Reshape <allowzero = {allowzero}> (x, s) }}""",
               {"x": X})


def test_reshape_to_a_computed_shape():
    check_onnx(f"""{HEADER}
        g (float[N,3,4] x) => (float[N,12] y) {{
            s = Shape <end = 1> (x)
            {ints("rest", [-1])}
            t = Concat <axis = 0> (s, rest)
            y = Reshape(x, t)
        }}""", {"x": X})


@pytest.mark.parametrize("x_type", ["float[2,3,4]", "float[N,3,4]", "float[N,M,4]"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_flatten(x_type, axis):
    check_onnx(f"""{HEADER}
        g ({x_type} x) => (float[A,B] y) {{ y = Flatten <axis = {axis}> (x) }}""", {"x": X})


@pytest.mark.parametrize("x_type", ["float[1,3,1,4]", "float[1,N,1,4]"])
def test_squeeze_unsqueeze(x_type):
    x = np.arange(12, dtype=np.float32).reshape(1, 3, 1, 4)
    check_onnx(f"""{HEADER}
        g ({x_type} x) => (float[A,B] a, float[C,D] b, float[F,G,H,I] c) {{
            {ints("ax", [0, -2])}
            a = Squeeze(x, ax)
            b = Squeeze(x, ax)
            {ints("up", [0, -1])}
            c = Unsqueeze(b, up)
        }}""", {"x": x})


def test_squeeze_without_axes():
    x = np.arange(12, dtype=np.float32).reshape(1, 3, 1, 4)
    check_onnx(f"""{HEADER}
        g (float[1,3,1,4] x) => (float[3,4] y) {{ y = Squeeze(x) }}""", {"x": x})


@pytest.mark.parametrize("perm", [None, [0, 2, 1], [2, 0, 1]])
def test_transpose(perm):
    attrs = f"<perm = [{', '.join(map(str, perm))}]>" if perm else ""
    check_onnx(f"""{HEADER}
        g (float[N,3,4] x) => (float[A,B,C] y) {{ y = Transpose {attrs} (x) }}""", {"x": X})


@pytest.mark.parametrize("x_type, x_shape, target", [
    ("float[3,1]", (3, 1), [2, 3, 4]), ("float[N,1]", (3, 1), [3, 5]), ("float[1]", (1,), [2, 2]),
    ("float[N,4]", (3, 4), [1, 1]),
])
def test_expand(x_type, x_shape, target):
    x = np.arange(np.prod(x_shape), dtype=np.float32).reshape(x_shape)
    check_onnx(f"""{HEADER}
        g ({x_type} x) => (float[A,B,C] y) {{ {ints("s", target)}  y = Expand(x, s) }}""".replace(
        "float[A,B,C]", "float[" + ",".join("ABCD"[:max(len(target), len(x_shape))]) + "]"), {"x": x})


def test_expand_a_unit_axis_to_a_runtime_zero():
    """Broadcasting takes a unit axis to 0 (TorchScript's ``zeros(0, n)`` accumulator), not max(1, 0)."""
    check_onnx(f"""{HEADER}
        g (float[N] x) => (float[Z,N] y) {{
            zero = Constant <value = float {{0}}> ()
            none = Constant <value = int64[1] {{0}}> ()
            n = Shape(x)
            s = Concat <axis = 0> (none, n)
            y = Expand(zero, s)
        }}""", {"x": np.arange(3, dtype=np.float32)})


def test_expand_to_a_runtime_shape():
    check_onnx(f"""{HEADER}
        g (float[1,4] x, float[N,M] like) => (float[N,4] y) {{ s = Shape(like)  y = Expand(x, s) }}""",
               {"x": np.arange(4, dtype=np.float32).reshape(1, 4), "like": np.zeros((3, 1), np.float32)})


@pytest.mark.parametrize("attrs", ["", "<start = 1>", "<start = -2, end = -1>", "<end = 1>", "<start = -5>"])
@pytest.mark.parametrize("x_type", ["float[2,3,4]", "float[N,3,M]"])
def test_shape_and_size(attrs, x_type):
    check_onnx(f"""{HEADER}
        g ({x_type} x) => (int64[K] s, int64 n) {{ s = Shape {attrs} (x)  n = Size(x) }}""", {"x": X})


def test_concat():
    check_onnx(f"""{HEADER}
        g (float[N,3,4] a, float[N,2,4] b) => (float[N,5,4] y, float[N,5,4] z) {{
            y = Concat <axis = 1> (a, b)
            z = Concat <axis = -2> (a, b)
        }}""", {"a": X, "b": X[:, :2] + 100})


@pytest.mark.parametrize("x_type", ["float[5,4]", "float[N,4]"])
def test_split_sizes_and_uneven_num_outputs(x_type):
    x = np.arange(20, dtype=np.float32).reshape(5, 4)
    check_onnx(f"""<ir_version: 8, opset_import: ["" : 18]>
        g ({x_type} x) => (float[A,4] a, float[B,4] b, float[C,4] c, float[D,4] d, float[E,4] e) {{
            a, b, c = Split <axis = 0, num_outputs = 3> (x)
            {ints("sizes", [1, 3])}
            d, e = Split <axis = -1> (x, sizes)
        }}""".replace("d, e = Split <axis = -1>", "d, e = Split <axis = 1>").replace(
        "float[D,4] d, float[E,4] e", "float[5,1] d, float[5,3] e"), {"x": x})


SLICES = [
    ([0], [2], [0], None), ([1, -3], [100, -1], [0, 2], None), ([-1], [-1000], [1], [-1]),
    ([2], [-9223372036854775807], [0], [-2]), ([0, 0], [9223372036854775807, 3], [2, 1], [2, 1]),
    ([-100], [100], [-1], None), ([3], [1], [1], None),
]


@pytest.mark.parametrize("x_type", ["float[2,3,4]", "float[N,M,4]"])
@pytest.mark.parametrize("starts, ends, axes, steps", SLICES)
def test_slice(x_type, starts, ends, axes, steps):
    extra = ""
    args = "x, st, en, ax"
    if steps is not None:
        extra = ints("sp", steps)
        args += ", sp"
    check_onnx(f"""{HEADER}
        g ({x_type} x) => (float[A,B,C] y) {{
            {ints("st", starts)}  {ints("en", ends)}  {ints("ax", axes)}  {extra}
            y = Slice({args})
        }}""", {"x": X})


def test_slice_with_runtime_bounds():
    check_onnx(f"""{HEADER}
        g (float[N,3,4] x, int64[2] st, int64[2] en) => (float[A,B,C] y) {{
            {ints("ax", [2, 0])}
            y = Slice(x, st, en, ax)
        }}""", {"x": X, "st": np.array([-3, 1]), "en": np.array([100, 2])})


@pytest.mark.parametrize("x_type", ["float[2,3,4]", "float[N,M,4]"])
@pytest.mark.parametrize("starts, ends, axes, steps", SLICES)
def test_slice_with_axes_and_steps_fed_as_inputs(x_type, starts, ends, axes, steps):
    """Every operand computed: the axes (negative ones too) and steps (negative ones too) are shape
    tensors, the clamping arithmetic runs on them."""
    steps = steps or [1] * len(axes)
    n = len(axes)
    feeds = {"x": X, "st": np.array(starts), "en": np.array(ends), "ax": np.array(axes), "sp": np.array(steps)}
    check_onnx(f"""{HEADER}
        g ({x_type} x, int64[{n}] st, int64[{n}] en, int64[{n}] ax, int64[{n}] sp) => (float[A,B,C] y) {{
            y = Slice(x, st, en, ax, sp)
        }}""", feeds)


def test_slice_with_int32_axes_fed_and_default_steps():
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x, int32[2] st, int32[2] en, int32[2] ax) => (float[A,B,C] y) {{
            y = Slice(x, st, en, ax)
        }}""", {"x": X, "st": np.array([1, -3], np.int32), "en": np.array([3, 100], np.int32),
               "ax": np.array([-1, 0], np.int32)})


@pytest.mark.parametrize("x_type", ["float[6,2]", "float[N,2]"])
@pytest.mark.parametrize("sizes", [[1, 3, 2], [0, 6, 0], [6, 0, 0]])
def test_split_sizes_fed_as_an_input(x_type, sizes):
    """Piece k starts at the sum of the sizes before it (zero sizes give empty pieces)."""
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    check_onnx(f"""{HEADER}
        g ({x_type} x, int64[3] s) => (float[A,2] a, float[B,2] b, float[C,2] c) {{
            a, b, c = Split <axis = 0> (x, s)
        }}""", {"x": x, "s": np.array(sizes, np.int64)})


@pytest.mark.parametrize("x_type", ["float[2,3,4]", "float[N,3,4]"])
def test_unsqueeze_by_no_axes_is_the_input(x_type):
    """tf2onnx's einsum writes Unsqueeze with an empty axes list (the empty constant was refused)."""
    check_onnx(f"""{HEADER}
        g ({x_type} x) => (float[A,3,4] y) {{
            none = Constant <value = int64[0] {{}}> ()
            y = Unsqueeze(x, none)
        }}""", {"x": X})

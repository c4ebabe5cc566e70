"""MaxPool, AveragePool, LpPool, GlobalLpPool, DepthToSpace and SpaceToDepth against onnxruntime,
each attribute form; the forms TensorRT cannot express are refused by node."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx.parser
import pytest

from loopc.backend.trt import to_network
from tests.conformance import MATCH, MISMATCH, WRONG_SHAPE, node_test_cases, run_case
from loopc.errors import UnsupportedConversionError
from loopc.frontend.onnx import import_model
from tests.backend.trt.oracle import build_and_simulate, check_onnx
from tests.onnx_cases import loopc_failures

RNG = np.random.default_rng(11)


def _model(op: str, attrs: str, dims: str, dtype: str = "float", opset: int = 22) -> str:
    """One ``op`` node from x to y, y of x's rank (its dims left to the op)."""
    out = ",".join(f"o{i}" for i in range(dims.count(",") + 1))
    return f"""<ir_version: 10, opset_import: ["" : {opset}]>
        g ({dtype}[{dims}] x) => ({dtype}[{out}] y) {{
            y = {op} <{attrs}> (x)
        }}"""


def _refusal(text: str) -> str:
    with pytest.raises(UnsupportedConversionError) as err:
        to_network(import_model(onnx.parser.parse_model(text)))
    return str(err.value)


X2 = RNG.standard_normal((2, 3, 9, 8)).astype(np.float32)

WINDOWS = [
    "kernel_shape = [3, 3]",
    "kernel_shape = [3, 2], strides = [2, 3]",
    "kernel_shape = [3, 3], pads = [1, 0, 2, 1]",
    "kernel_shape = [3, 3], strides = [2, 2], auto_pad = \"SAME_UPPER\"",
    "kernel_shape = [3, 2], strides = [2, 3], auto_pad = \"SAME_LOWER\"",
    "kernel_shape = [2, 3], strides = [4, 3], auto_pad = \"SAME_UPPER\"",  # a stride longer than the kernel
    "kernel_shape = [3, 3], strides = [2, 2], auto_pad = \"VALID\"",
    "kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1",
    "kernel_shape = [3, 2], strides = [3, 3], pads = [1, 1, 1, 1], ceil_mode = 1",  # a last window on the pad
    "kernel_shape = [1, 1], strides = [2, 3], ceil_mode = 1",  # ONNX drops windows TensorRT's rounding keeps
]


@pytest.mark.parametrize("window", WINDOWS)
def test_max_pool_2d(window: str) -> None:
    check_onnx(_model("MaxPool", window, "2,3,9,8"), {"x": X2})


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("include", [0, 1])
def test_average_pool_2d(window: str, include: int) -> None:
    check_onnx(_model("AveragePool", f"{window}, count_include_pad = {include}", "2,3,9,8"), {"x": X2})


@pytest.mark.parametrize("op, extra", [("MaxPool", ""), ("AveragePool", ", count_include_pad = 1"),
                                       ("LpPool", ", p = 3")])
@pytest.mark.parametrize("window", ["kernel_shape = [3], strides = [2], pads = [1, 2], ceil_mode = 1",
                                    "kernel_shape = [4], auto_pad = \"SAME_LOWER\""])
def test_pools_1d(op: str, extra: str, window: str) -> None:
    check_onnx(_model(op, window + extra, "2,3,11"), {"x": RNG.standard_normal((2, 3, 11)).astype(np.float32)},
               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op, extra", [("MaxPool", ""), ("AveragePool", ", count_include_pad = 0"),
                                       ("AveragePool", ", count_include_pad = 1"), ("LpPool", ", p = 2")])
@pytest.mark.parametrize("window", ["kernel_shape = [2, 3, 2], strides = [1, 2, 2], pads = [1, 0, 1, 0, 1, 1]",
                                    "kernel_shape = [3, 3, 3], strides = [2, 2, 2], ceil_mode = 1",
                                    "kernel_shape = [2, 2, 3], strides = [2, 1, 2], auto_pad = \"SAME_UPPER\""])
def test_pools_3d(op: str, extra: str, window: str) -> None:
    x = RNG.standard_normal((1, 2, 5, 6, 7)).astype(np.float32)
    check_onnx(_model(op, window + extra, "1,2,5,6,7"), {"x": x}, rtol=1e-5, atol=1e-5)


def test_max_pool_storage_order_without_indices_changes_nothing() -> None:
    check_onnx(_model("MaxPool", "kernel_shape = [2, 2], storage_order = 1", "2,3,9,8"), {"x": X2})


@pytest.mark.parametrize("dtype, numpy", [("uint8", np.uint8), ("int8", np.int8), ("float16", np.float16)])
def test_max_pool_of_integers_and_halves(dtype: str, numpy: type) -> None:
    info = np.iinfo(numpy) if numpy != np.float16 else None
    x = (RNG.integers(info.min, info.max + 1, (1, 2, 6, 6)) if info else RNG.standard_normal((1, 2, 6, 6)))
    check_onnx(_model("MaxPool", "kernel_shape = [3, 3], pads = [1, 1, 1, 1]", "1,2,6,6", dtype=dtype),
               {"x": x.astype(numpy)})


def test_average_pool_of_halves() -> None:
    x = RNG.standard_normal((1, 2, 6, 6)).astype(np.float16)
    check_onnx(_model("AveragePool", "kernel_shape = [3, 3], pads = [1, 1, 1, 1]", "1,2,6,6", dtype="float16"),
               {"x": x}, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("window", ["kernel_shape = [3, 3], pads = [1, 0, 2, 1]",
                                    "kernel_shape = [2, 3], strides = [2, 2], auto_pad = \"SAME_LOWER\"",
                                    "kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], ceil_mode = 1"])
def test_lp_pool(p: int, window: str) -> None:
    check_onnx(_model("LpPool", f"{window}, p = {p}", "2,3,9,8"), {"x": X2}, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("dims", ["2,3,7", "2,3,5,4", "1,2,3,4,5"])
def test_global_lp_pool(p: int, dims: str) -> None:
    """onnxruntime has no GlobalLpPool: the spec's (sum of |x|^p over the spatial axes)^(1/p)."""
    shape = tuple(int(d) for d in dims.split(","))
    x = RNG.standard_normal(shape).astype(np.float32)
    model = import_model(onnx.parser.parse_model(_model("GlobalLpPool", f"p = {p}", dims)))
    _, got = build_and_simulate(model, {"x": x})
    spatial = tuple(range(2, len(shape)))
    want = (np.abs(x.astype(np.float64)) ** p).sum(axis=spatial, keepdims=True) ** (1 / p)
    np.testing.assert_allclose(got["y"], want, rtol=1e-5)


# -- dynamic spatial sizes ----------------------------------------------------------------------


@pytest.mark.parametrize("op, window", [
    ("MaxPool", "kernel_shape = [3, 3], strides = [2, 2], auto_pad = \"SAME_UPPER\""),
    ("AveragePool", "kernel_shape = [3, 2], strides = [2, 2], auto_pad = \"SAME_LOWER\", count_include_pad = 1"),
    ("AveragePool", "kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 0, 0], ceil_mode = 1"),
    ("MaxPool", "kernel_shape = [3, 3], strides = [2, 1], pads = [0, 1, 1, 0]"),
])
def test_pools_of_dynamic_sizes(op: str, window: str) -> None:
    check_onnx(_model(op, window, "N,3,H,W"), {"x": X2})


@pytest.mark.parametrize("window, why", [
    ("kernel_shape = [2, 2], strides = [3, 3], auto_pad = \"SAME_UPPER\"", "stride longer than the kernel"),
    ("kernel_shape = [2, 2], strides = [3, 3], ceil_mode = 1", "last window may start in the padding"),
])
def test_dynamic_sizes_where_tensorrt_sizes_differently_are_refused(window: str, why: str) -> None:
    message = _refusal(_model("MaxPool", window, "N,3,H,W"))
    assert why in message and "'y' (MaxPool" in message


def _with_indices(window: str, dims: str, out: str, dtype: str = "float") -> str:
    return f"""<ir_version: 10, opset_import: ["" : 22]>
        g ({dtype}[{dims}] x) => ({dtype}[{out}] y, int64[{out}] i) {{
            y, i = MaxPool <{window}> (x)
        }}"""


@pytest.mark.parametrize("window, out", [
    ("kernel_shape = [3, 3], pads = [1, 0, 2, 1]", "2,3,10,7"),
    ("kernel_shape = [3, 2], strides = [2, 3], storage_order = 1", "2,3,4,3"),
    ("kernel_shape = [2, 3], strides = [2, 2], pads = [1, 1, 1, 1], ceil_mode = 1, storage_order = 1", "2,3,5,5"),
    ("kernel_shape = [2, 2], dilations = [2, 3], strides = [1, 2], pads = [1, 1, 0, 1]", "2,3,8,4"),
    ("kernel_shape = [3, 3], strides = [2, 2], auto_pad = \"SAME_LOWER\"", "2,3,5,4"),
])
def test_max_pool_indices(window: str, out: str) -> None:
    """Ties included: rounded values make equal maxima, where the first in window order wins."""
    x = np.round(X2 * 2) / 2
    check_onnx(_with_indices(window, "2,3,9,8", out), {"x": x})


@pytest.mark.parametrize("storage_order", [0, 1])
def test_max_pool_indices_1d_and_3d(storage_order: int) -> None:
    x1 = np.round(RNG.standard_normal((2, 3, 11)) * 2).astype(np.float32)
    check_onnx(_with_indices(f"kernel_shape = [3], strides = [2], pads = [1, 1], storage_order = {storage_order}",
                             "2,3,11", "2,3,6"), {"x": x1})
    x3 = RNG.standard_normal((1, 2, 5, 6, 4)).astype(np.float32)
    window = ("kernel_shape = [2, 3, 2], strides = [2, 2, 1], pads = [1, 0, 1, 0, 1, 0], "
              f"storage_order = {storage_order}")
    check_onnx(_with_indices(window, "1,2,5,6,4", "1,2,3,3,4"), {"x": x3})


def test_max_pool_indices_of_uint8() -> None:
    x = RNG.integers(0, 4, (1, 2, 6, 6)).astype(np.uint8)
    check_onnx(_with_indices("kernel_shape = [2, 2], strides = [2, 2]", "1,2,6,6", "1,2,3,3", "uint8"), {"x": x})


@pytest.mark.parametrize("dims, window, why", [
    ("N,3,9,8", "kernel_shape = [2, 2]", "Indices output of an input of dynamic shape"),
    ("1,3,9,8", "kernel_shape = [2, 2], pads = [2, 0, 0, 0]", "pads as long as the kernel"),
])
def test_max_pool_indices_refusals(dims: str, window: str, why: str) -> None:
    assert why in _refusal(_with_indices(window, dims, "a,b,c,d"))


@pytest.mark.parametrize("window, dims, pooled, output_shape", [
    ("kernel_shape = [2, 2], strides = [2, 2]", "2,3,8,6", "2,3,4,3", None),
    ("kernel_shape = [3, 2], strides = [3, 2], pads = [1, 0, 1, 0]", "2,3,7,6", "2,3,3,3", "2,3,7,6"),
    ("kernel_shape = [3], strides = [3]", "2,3,9", "2,3,3", None),
    ("kernel_shape = [2, 2, 2], strides = [2, 2, 2]", "1,2,4,6,4", "1,2,2,3,2", None),
])
def test_max_unpool_of_max_pool(window: str, dims: str, pooled: str, output_shape: str | None) -> None:
    """MaxPool's values and indices written back where they came from (zeros elsewhere)."""
    shape_input = ", shape" if output_shape else ""
    shape_const = (f"shape = Constant <value = int64[{dims.count(',') + 1}] {{{output_shape}}}> ()"
                   if output_shape else "")
    text = f"""<ir_version: 10, opset_import: ["" : 22]>
        g (float[{dims}] x) => (float[{dims}] y) {{
            {shape_const}
            p, i = MaxPool <{window}> (x)
            y = MaxUnpool <{window}> (p, i{shape_input})
        }}"""
    x = RNG.standard_normal(tuple(int(d) for d in dims.split(","))).astype(np.float32)
    check_onnx(text, {"x": x})


@pytest.mark.parametrize("window, shape, why", [
    ("kernel_shape = [3, 3], strides = [2, 2]", "", "overlapping windows"),
    ("kernel_shape = [2, 2], strides = [2, 2]", ", s", "output_shape [1, 1, 7, 7] other than the unpooled"),
    ("kernel_shape = [2, 2], strides = [2, 2]", ", n", "a computed output_shape"),
])
def test_max_unpool_refusals(window: str, shape: str, why: str) -> None:
    text = f"""<ir_version: 10, opset_import: ["" : 22]>
        g (float[1,1,3,3] p, int64[1,1,3,3] i, int64[4] n) => (float[1,1,a,b] y) {{
            s = Constant <value = int64[4] {{1, 1, 7, 7}}> ()
            y = MaxUnpool <{window}> (p, i{shape})
        }}"""
    assert why in _refusal(text)


def test_lp_pool_of_p_zero_is_refused() -> None:
    assert "p=0" in _refusal(_model("LpPool", "kernel_shape = [2, 2], p = 0", "1,1,4,4"))


# -- DepthToSpace, SpaceToDepth -----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("dims", ["2,12,3,4", "N,12,H,W"])
def test_depth_to_space(mode: str, dims: str) -> None:
    x = RNG.standard_normal((2, 12, 3, 4)).astype(np.float32)
    check_onnx(_model("DepthToSpace", f"blocksize = 2, mode = \"{mode}\"", dims, opset=13), {"x": x})


@pytest.mark.parametrize("dims", ["2,3,6,4", "N,3,H,W"])
def test_space_to_depth(dims: str) -> None:
    x = RNG.standard_normal((2, 3, 6, 4)).astype(np.float32)
    check_onnx(_model("SpaceToDepth", "blocksize = 2", dims, opset=13), {"x": x})


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_space_to_depth_modes_against_the_spec(mode: str) -> None:
    """Opset 28's mode, which onnxruntime does not run: each output channel read from the definition,
    DCR channel = (row offset · b + column offset) · C + c,
    CRD channel = (c · b + row offset) · b + column offset."""
    b, c = 2, 3
    x = RNG.standard_normal((1, c, 4, 6)).astype(np.float32)
    want = np.empty((1, c * b * b, 2, 3), np.float32)
    for ch, dy, dx in np.ndindex(c, b, b):
        channel = (dy * b + dx) * c + ch if mode == "DCR" else (ch * b + dy) * b + dx
        want[0, channel] = x[0, ch, dy::b, dx::b]
    model = import_model(onnx.parser.parse_model(_model("SpaceToDepth", f"blocksize = 2, mode = \"{mode}\"",
                                                        "1,3,4,6", opset=28)))
    _, got = build_and_simulate(model, {"x": x})
    np.testing.assert_array_equal(got["y"], want)


def test_depth_to_space_of_channels_the_block_does_not_divide_is_refused() -> None:
    assert "b² must divide" in _refusal(_model("DepthToSpace", "blocksize = 2", "1,6,2,2", opset=13))


# -- dilations (pooled by phase) ----------------------------------------------------------------

DILATED = [
    "kernel_shape = [2, 2], dilations = [2, 2]",
    "kernel_shape = [3, 2], dilations = [2, 3], strides = [1, 2], pads = [2, 1, 1, 1]",
    "kernel_shape = [2, 3], dilations = [3, 2], strides = [3, 2], ceil_mode = 1",
    "kernel_shape = [3, 2], dilations = [2, 3], strides = [2, 3], pads = [1, 1, 2, 1], ceil_mode = 1",
]
POOLS = [("MaxPool", ""), ("AveragePool", ", count_include_pad = 0"), ("AveragePool", ", count_include_pad = 1"),
         ("LpPool", ", p = 2")]


@pytest.mark.parametrize("window", DILATED)
@pytest.mark.parametrize("op, extra", POOLS)
def test_dilated_pools_2d(op: str, extra: str, window: str) -> None:
    check_onnx(_model(op, window + extra, "2,3,9,8"), {"x": X2}, rtol=1e-5, atol=1e-5)


def _same_pool_reference(x: np.ndarray, op: str, kernel: tuple[int, int], strides: tuple[int, int],
                         dilations: tuple[int, int], auto_pad: str, include: bool) -> np.ndarray:
    """ONNX's pool definition, one output at a time: SAME gives ceil(I / S) outputs and pads by
    (O - 1)·S + (F - 1)·D + 1 - I, the odd pad at the end for SAME_UPPER, at the start for SAME_LOWER."""
    outs, begins, ends = [], [], []
    for i, f, s, d in zip(x.shape[2:], kernel, strides, dilations):
        o = -(-i // s)
        total = max(0, (o - 1) * s + (f - 1) * d + 1 - i)
        begin = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
        outs.append(o)
        begins.append(begin)
        ends.append(total - begin)
    y = np.zeros(x.shape[:2] + tuple(outs), np.float64)
    for oh, ow in np.ndindex(*outs):
        cells, padded = [], 0
        for jh, jw in np.ndindex(*kernel):
            h = oh * strides[0] + jh * dilations[0] - begins[0]
            w = ow * strides[1] + jw * dilations[1] - begins[1]
            if 0 <= h < x.shape[2] and 0 <= w < x.shape[3]:
                cells.append(x[:, :, h, w].astype(np.float64))
            else:
                padded += 1
        stack = np.stack(cells)
        if op == "MaxPool":
            y[:, :, oh, ow] = stack.max(axis=0)
        elif op == "AveragePool":
            y[:, :, oh, ow] = stack.sum(axis=0) / (len(cells) + (padded if include else 0))
        else:
            y[:, :, oh, ow] = np.sqrt((stack ** 2).sum(axis=0))
    return y


@pytest.mark.parametrize("kernel, dilations, strides, auto_pad", [
    ((3, 2), (2, 2), (2, 1), "SAME_UPPER"),
    ((2, 3), (3, 2), (1, 3), "SAME_LOWER"),
])
@pytest.mark.parametrize("op, extra", POOLS)
def test_dilated_pools_with_same_padding(op: str, extra: str, kernel: tuple[int, int], dilations: tuple[int, int],
                                         strides: tuple[int, int], auto_pad: str) -> None:
    """onnxruntime pads a dilated SAME pool as if it were undilated (fewer outputs than ceil(I / S)),
    and ONNX's reference evaluator miscounts SAME_LOWER's: the spec's definition is the oracle."""
    window = (f"kernel_shape = {list(kernel)}, dilations = {list(dilations)}, strides = {list(strides)}, "
              f"auto_pad = \"{auto_pad}\"")
    model = import_model(onnx.parser.parse_model(_model(op, window + extra, "2,3,9,8")))
    _, got = build_and_simulate(model, {"x": X2})
    want = _same_pool_reference(X2, op, kernel, strides, dilations, auto_pad, "count_include_pad = 1" in extra)
    np.testing.assert_allclose(got["y"], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_dilated_pools_1d_and_3d(op: str) -> None:
    x1 = RNG.standard_normal((2, 3, 13)).astype(np.float32)
    check_onnx(_model(op, "kernel_shape = [3], dilations = [3], strides = [2], pads = [2, 1]", "2,3,13"), {"x": x1})
    x3 = RNG.standard_normal((1, 2, 7, 6, 8)).astype(np.float32)
    window = "kernel_shape = [2, 2, 3], dilations = [2, 3, 2], strides = [1, 2, 2], pads = [1, 0, 1, 1, 1, 0]"
    check_onnx(_model(op, window, "1,2,7,6,8"), {"x": x3}, rtol=1e-5, atol=1e-6)


def test_dilated_max_pool_of_a_dynamic_batch() -> None:
    check_onnx(_model("MaxPool", "kernel_shape = [2, 2], dilations = [2, 2], strides = [2, 1]", "N,3,9,8"),
               {"x": X2})


def test_dilated_pool_of_dynamic_spatial_sizes_is_refused() -> None:
    message = _refusal(_model("MaxPool", "kernel_shape = [2, 2], dilations = [2, 2]", "1,3,H,W"))
    assert "dilations=[2, 2] on a dynamic channel count or spatial size" in message


# -- ONNX's node tests --------------------------------------------------------------------------

NODE_OPS = {"MaxPool", "AveragePool", "LpPool", "GlobalLpPool", "GlobalMaxPool", "GlobalAveragePool", "MaxUnpool",
            "DepthToSpace", "SpaceToDepth"}
#: Refused by loopc, and why: the test's expected output places the indices as ONNX's reference does,
#: which is not what the spec says of output_shape (nor what onnxruntime and PyTorch do).
NODE_REFUSED = {"test_maxunpool_export_with_output_shape": "a computed output_shape"}
#: Where the network TensorRT's own parser builds is not what ONNX asks: it keeps the ceil window ONNX
#: drops (a wrong output shape), and it ignores SpaceToDepth's mode.
PARSER_WRONG = {"test_maxpool_2d_ceil_output_size_reduce_by_one": WRONG_SHAPE,
                "test_averagepool_2d_ceil_last_window_starts_on_pad": WRONG_SHAPE,
                "test_spacetodepth_crd_mode_example": MISMATCH}


def _node_cases() -> list[Any]:
    return [c for c in node_test_cases() if {n.op_type for n in c.model.graph.node} & NODE_OPS]


def test_node_tests_through_loopc() -> None:
    """Every node test of these ops builds with the real builder and matches ONNX's expected outputs,
    the dilated, LpPool, MaxPool-with-indices and MaxUnpool ones TensorRT's parser refuses included,
    or is refused for its reason."""
    cases = _node_cases()
    assert len(cases) >= 59 and set(NODE_REFUSED) <= {c.name for c in cases}
    wrong = loopc_failures(cases, NODE_REFUSED)
    assert not wrong, "\n".join(wrong)


def test_parser_built_networks_simulate_to_a_match() -> None:
    """The POOLING kernel run on networks NVIDIA's parser built: every one it builds matches, but where
    its network is not the op ONNX defines."""
    wrong, judged = [], 0
    for case in _node_cases():
        result = run_case(case, "trt-onnx")
        if not result.built:
            continue
        judged += 1
        if result.status != PARSER_WRONG.get(case.name, MATCH):
            wrong.append(f"{case.name}: {result.status}: {result.detail}")
    assert judged >= 38 and not wrong, "\n".join(wrong)


def test_pools_in_a_loop_body() -> None:
    """A state image downsampled and upsampled every trip (MaxPool with ceil, a dilated AveragePool,
    SpaceToDepth then DepthToSpace): pools inside a TensorRT loop."""
    x = RNG.standard_normal((1, 2, 6, 6)).astype(np.float32)
    check_onnx("""<ir_version: 10, opset_import: ["" : 19]>
        g (int64 n, float[1,2,6,6] x) => (float[1,2,6,6] final) {
            t = Constant <value = bool {1}> ()
            final = Loop (n, t, x) <body = b (int64 i, bool c, float[1,2,6,6] s) => (bool c2, float[1,2,6,6] s2) {
                small = MaxPool <kernel_shape = [3, 3], strides = [2, 2], pads = [0, 0, 1, 1], ceil_mode = 1> (s)
                blur = AveragePool <kernel_shape = [2, 2], dilations = [2, 2], pads = [1, 1, 1, 1]> (s)
                deep = SpaceToDepth <blocksize = 2> (blur)
                back = DepthToSpace <blocksize = 2, mode = "CRD"> (deep)
                reps = Constant <value = int64[4] {1, 1, 2, 2}> ()
                up = Tile (small, reps)
                s2 = Add (back, up)
                c2 = Identity (c)
            }>
        }""", {"n": np.array(3), "x": x}, rtol=1e-5, atol=1e-5)


def test_opset_1_lp_pools_take_a_fractional_p() -> None:
    """LpPool-1 and GlobalLpPool-1 have a float p (onnxruntime runs neither): (Σ |x|^p)^(1/p) by NumPy."""
    x = RNG.standard_normal((2, 3, 5, 4)).astype(np.float32)
    text = """<ir_version: 3, opset_import: ["" : 1]>
        g (float[2,3,5,4] x) => (float[2,3,2,3] y, float[2,3,1,1] z) {
            y = LpPool <kernel_shape = [3, 2], strides = [2, 1], p = 1.5> (x)
            z = GlobalLpPool <p = 2.5> (x)
        }"""
    _, got = build_and_simulate(import_model(onnx.parser.parse_model(text)), {"x": x})
    magnitude = np.abs(x.astype(np.float64))
    windows = np.lib.stride_tricks.sliding_window_view(magnitude ** 1.5, (3, 2), axis=(2, 3))[:, :, ::2]
    np.testing.assert_allclose(got["y"], windows.sum(axis=(-2, -1)) ** (1 / 1.5), rtol=1e-5)
    np.testing.assert_allclose(got["z"], (magnitude ** 2.5).sum(axis=(2, 3), keepdims=True) ** (1 / 2.5), rtol=1e-5)

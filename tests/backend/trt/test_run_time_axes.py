"""Reduce*, Squeeze and Unsqueeze whose axes are fed at run time (a graph input, or computed from shapes),
against onnxruntime: each op, keepdims 0 and 1, negative, unsorted and empty axes, noop_with_empty_axes,
dynamic input shapes, inside a Loop body; ONNX's node tests of these ops; and what is refused (repeated or
out-of-range axes, a squeezed dim that is not 1, axes of unknown length)."""

from __future__ import annotations

import numpy as np
import onnx.parser
import onnxruntime as ort
import pytest

from loopc.backend.trt import to_network
from tests.conformance import node_test_cases
from loopc.errors import BackendError, SimulationError, UnsupportedConversionError
from loopc.frontend.onnx import import_model
from loopc.profiles import ShapeProfile
from loopc.sim import simulate
from loopc.trt.config import build_serialized, builder_config, pin_profile
from tests.backend.trt.oracle import build_and_simulate, check_onnx
from tests.onnx_cases import loopc_failures

RNG = np.random.default_rng(7)
HEADER = '<ir_version: 8, opset_import: ["" : 18]>'
X = RNG.uniform(0.5, 2.0, (2, 3, 4)).astype(np.float32)
REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceL1",
              "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"]


def tensor_type(elem: str, rank: int) -> str:
    """An ONNX text type of ``rank`` symbolic dims (a scalar for rank 0)."""
    return f"{elem}[{','.join('ABCDEFGH'[:rank])}]" if rank else elem


def check_reduce(op: str, x_type: str, x: np.ndarray, axes: list[int], keepdims: int, extra: str = "",
                 rtol: float = 1e-5, atol: float = 1e-6) -> None:
    if axes:
        rank = x.ndim if keepdims else x.ndim - len(axes)
    else:
        rank = x.ndim if keepdims or "noop_with_empty_axes = 1" in extra else 0
    elem = x_type.split("[")[0]
    check_onnx(f"""{HEADER}
        g ({x_type} x, int64[{len(axes)}] axes) => ({tensor_type(elem, rank)} y) {{
            y = {op} <keepdims = {keepdims}{extra}> (x, axes)
        }}""", {"x": x, "axes": np.array(axes, np.int64)}, rtol=rtol, atol=atol)


# -- reductions ---------------------------------------------------------------------------------


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("axes", [[1], [-1, 0], [2, 0, 1], [0, 2]])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_over_axes_fed_as_an_input(op, axes, keepdims):
    check_reduce(op, "float[2,3,4]", X, axes, keepdims)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceL2"])
@pytest.mark.parametrize("axes", [[1], [-3, 2], [0, 1, 2]])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_of_dynamic_shapes(op, axes, keepdims):
    """Every dim dynamic: the conditionals' shapes and the mean's volume come from the shapes at run time."""
    check_reduce(op, "float[N,M,K]", X, axes, keepdims)


@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_with_unit_axes(keepdims):
    """A static unit axis needs no reduction (but still moves out of the way without keepdims)."""
    x = RNG.standard_normal((1, 3, 1, 2)).astype(np.float32)
    for axes in ([0], [2, 1], [-1, 0, 2], [0, 1, 2, 3]):
        check_reduce("ReduceMean", "float[1,3,1,2]", x, axes, keepdims)


@pytest.mark.parametrize("shape, x_type", [((2, 3, 1, 2, 2, 3), "float[2,3,1,2,2,3]"),
                                           ((2, 3, 1, 2, 2, 3), "float[A,B,C,D,E,F]"),
                                           ((2, 1, 2, 3, 1, 2, 2, 2), "float[2,1,2,3,1,2,2,2]")])
@pytest.mark.parametrize("axes", [[0, 4, -1], [1, 3], [-3], [0, 1, 2, 3, 4, 5]])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_of_high_ranks(shape, x_type, axes, keepdims):
    """Up to eight dims: one reduce layer takes three axes at a time (each viewed as two dims)."""
    x = RNG.uniform(0.5, 2.0, shape).astype(np.float32)
    for op in ("ReduceMean", "ReduceProd"):
        check_reduce(op, x_type, x, axes, keepdims)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceLogSumExp"])
@pytest.mark.parametrize("noop", [0, 1])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_over_an_empty_axes_input(op, noop, keepdims):
    """No axes: every axis, or (noop_with_empty_axes) the input as it is."""
    check_reduce(op, "float[2,3,4]", X, [], keepdims, f", noop_with_empty_axes = {noop}")


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_integer_mean_divides_once(dtype, keepdims):
    """Integer means truncate: summed over all the axes, then divided once (a mean of means would round
    twice: (0 + 1) / 2 = 0 where (1 + 3) / 4 = 1)."""
    x = np.array([[[1, 3], [-7, 0]], [[-3, -2], [5, 9]]], dtype)
    elem = "int32" if dtype == np.int32 else "int64"
    for axes in ([1, 2], [0], [-1, 0, 1]):
        check_reduce("ReduceMean", f"{elem}[2,2,2]", x, axes, keepdims)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_boolean_extremes(op):
    """Max and min of booleans (opset 20) are any and all; of an empty set, false and true."""
    x = np.array([[True, False, False], [False, False, False]])
    for axes, shape in (([1], "bool[2]"), ([0], "bool[3]"), ([-1, 0], "bool")):
        check_onnx(f"""<ir_version: 9, opset_import: ["" : 20]>
            g (bool[2,3] x, int64[{len(axes)}] axes) => ({shape} y) {{ y = {op} <keepdims = 0> (x, axes) }}""",
                   {"x": x, "axes": np.array(axes, np.int64)})
    # onnxruntime refuses an empty set of booleans; ONNX's reference gives the identities, false and true
    proto = onnx.parser.parse_model(f"""<ir_version: 9, opset_import: ["" : 20]>
        g (bool[2,0,4] x, int64[1] axes) => (bool[2,1,4] y) {{ y = {op} (x, axes) }}""")
    _, got = build_and_simulate(import_model(proto), {"x": np.zeros((2, 0, 4), bool), "axes": np.array([1])})
    np.testing.assert_array_equal(got["y"], np.full((2, 1, 4), op == "ReduceMin"))


def test_reduce_over_axes_computed_from_the_shape():
    """Axes computed in the graph, as exporters write them: the last axis, from the input's rank."""
    check_onnx(f"""{HEADER}
        g (float[N,3,4] x) => (float[N,3] y) {{
            shape = Shape(x)
            rank = Size(shape)
            one = Constant <value = int64 {{1}}> ()
            last = Sub(rank, one)
            zero = Constant <value = int64[1] {{0}}> ()
            axes = Unsqueeze(last, zero)
            y = ReduceSum <keepdims = 0> (x, axes)
        }}""", {"x": X})


def test_reduce_over_an_empty_set():
    """A reduced axis of length 0 gives each reduction's identity. (ONNX leaves the mean of nothing undefined:
    onnxruntime gives 0, ONNX's reference NaN, as loopc does, with constant axes too.)"""
    x = np.zeros((2, 0, 4), np.float32)
    for op in ("ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceLogSumExp", "ReduceLogSum",
               "ReduceL2", "ReduceSumSquare"):
        check_reduce(op, "float[2,0,4]", x, [1], 1)
        check_reduce(op, "float[2,0,4]", x, [-1], 0)


# -- Squeeze and Unsqueeze ------------------------------------------------------------------------


@pytest.mark.parametrize("x_type", ["float[1,3,1,5]", "float[A,B,C,D]"])
@pytest.mark.parametrize("axes", [[0], [-2], [2, 0], [0, -2], [2]])
def test_squeeze_axes_fed_as_an_input(x_type, axes):
    x = RNG.standard_normal((1, 3, 1, 5)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g ({x_type} x, int64[{len(axes)}] axes) => ({tensor_type("float", 4 - len(axes))} y) {{
            y = Squeeze(x, axes)
        }}""", {"x": x, "axes": np.array(axes, np.int64)})


def test_squeeze_to_a_scalar():
    check_onnx(f"""{HEADER}
        g (float[1,1] x, int64[2] axes) => (float y) {{ y = Squeeze(x, axes) }}""",
               {"x": np.array([[2.5]], np.float32), "axes": np.array([-1, 0], np.int64)})


@pytest.mark.parametrize("x_type", ["float[2,3,4]", "float[N,M,K]"])
@pytest.mark.parametrize("axes", [[0], [-1], [1, 4], [5, 4, 2], [-1, 0], [3]])
def test_unsqueeze_axes_fed_as_an_input(x_type, axes):
    check_onnx(f"""{HEADER}
        g ({x_type} x, int64[{len(axes)}] axes) => ({tensor_type("float", 3 + len(axes))} y) {{
            y = Unsqueeze(x, axes)
        }}""", {"x": X, "axes": np.array(axes, np.int64)})


@pytest.mark.parametrize("x_type", ["float[2,1,3,1,2]", "float[A,B,C,D,E]"])
def test_squeeze_and_unsqueeze_up_to_eight_dims(x_type):
    x = RNG.standard_normal((2, 1, 3, 1, 2)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g ({x_type} x, int64[3] un, int64[5] sq) => (float[A,B,C,D,E,F,G,H] u, float[A,B,C] s) {{
            u = Unsqueeze(x, un)
            s = Squeeze(u, sq)
        }}""", {"x": x, "un": np.array([7, 0, -4]), "sq": np.array([0, 2, -1, -4, 5])})


def test_unsqueeze_a_scalar():
    for axes in ([0], [-1, 0], [1, -2]):
        check_onnx(f"""{HEADER}
            g (float x, int64[{len(axes)}] axes) => ({tensor_type("float", len(axes))} y) {{
                y = Unsqueeze(x, axes)
            }}""", {"x": np.array(1.5, np.float32), "axes": np.array(axes, np.int64)})


def test_unsqueeze_by_an_empty_axes_input():
    check_onnx(f"""{HEADER}
        g (float[2,3,4] x, int64[0] axes) => (float[2,3,4] y) {{ y = Unsqueeze(x, axes) }}""",
               {"x": X, "axes": np.zeros(0, np.int64)})


def test_one_engine_for_every_axes_its_profile_allows():
    """The axes are dims to TensorRT, not constants: one network, built for a range of axes values,
    gives each axes in the range its own output shape."""
    text = f"""{HEADER}
        g (float[2,3,4] x, int64[2] axes, int64[1] one) => (float[A] y, float[B,C] z, float[D,E,F] u) {{
            y = ReduceMean <keepdims = 0> (x, axes)
            z = ReduceMax <keepdims = 0> (x, one)
            u = Unsqueeze(z, one)
        }}"""
    proto = onnx.parser.parse_model(text)
    session, network = to_network(import_model(proto))
    cfg = builder_config(session)
    ShapeProfile(min={"axes": (-3, -3), "one": (-3,)}, opt={"axes": (0, 1), "one": (0,)},
                 max={"axes": (2, 2), "one": (2,)}).apply(session.builder, network, cfg)
    build_serialized(session, network, cfg)
    oracle = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for axes, one in (([0, 1], [0]), ([2, -3], [-1]), ([-1, 1], [1]), ([1, 0], [-2])):
        feeds = {"x": X, "axes": np.array(axes, np.int64), "one": np.array(one, np.int64)}
        got = simulate(network, feeds)
        for name, want in zip(("y", "z", "u"), oracle.run(["y", "z", "u"], feeds)):
            assert got[name].shape == want.shape, (axes, one, name)
            np.testing.assert_allclose(got[name], want, rtol=1e-6, err_msg=f"{axes} {one} {name}")


# -- inside a loop --------------------------------------------------------------------------------


def test_axes_fed_to_a_loop_body():
    """Each trip reduces the carried state over the outer axes input (mean, kept), adds it back, and
    emits the state reduced without keepdims, squeezed and unsqueezed by other outer axes."""
    s0 = RNG.standard_normal((1, 3, 4)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (int64 n, float[1,3,4] s0, int64[1] ax, int64[2] sq, int64[1] sz, int64[1] un)
            => (float[1,3,4] s, float[T,4] sums, float[T,3,1,4] moved) {{
            t = Constant <value = bool {{1}}> ()
            s, sums, moved = Loop(n, t, s0) <body = b (int64 i, bool c, float[1,3,4] st) =>
                                               (bool c2, float[1,3,4] st2, float[4] out, float[3,1,4] mv) {{
                m = ReduceMean <keepdims = 1> (st, ax)
                st2 = Add(st, m)
                out = ReduceSum <keepdims = 0> (st2, sq)
                flat = Squeeze(st2, sz)
                mv = Unsqueeze(flat, un)
                c2 = Identity(c)
            }}>
        }}""", {"n": np.array(3), "s0": s0, "ax": np.array([-1]), "sq": np.array([1, 0]), "sz": np.array([-3]),
          "un": np.array([-2])},
        rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("s_type", ["float[2,3]", "float[N,M]"])
def test_axes_computed_from_shapes_in_a_loop_body(s_type):
    """Axes computed in the body from the carried state's shape (its last axis) are the same every trip."""
    s0 = RNG.standard_normal((2, 3)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (int64 n, {s_type} s0) => ({s_type} s) {{
            t = Constant <value = bool {{1}}> ()
            s = Loop(n, t, s0) <body = b (int64 i, bool c, {s_type} st) => (bool c2, {s_type} st2) {{
                shape = Shape(st)
                rank = Size(shape)
                one = Constant <value = int64 {{1}}> ()
                zero = Constant <value = int64[1] {{0}}> ()
                last0 = Sub(rank, one)
                last = Unsqueeze(last0, zero)
                m = ReduceMax <keepdims = 1> (st, last)
                st2 = Sub(st, m)
                c2 = Identity(c)
            }}>
        }}""", {"n": np.array(2), "s0": s0})


# -- what is refused ------------------------------------------------------------------------------


def _network(text: str) -> tuple[object, object]:
    return to_network(import_model(onnx.parser.parse_model(f"{HEADER}\n{text}")))


@pytest.mark.parametrize("op, x_shape, axes, keepdims", [
    ("ReduceSum", (2, 3, 4), [1, 1], 1), ("ReduceSum", (2, 3, 4), [1, -2], 0), ("ReduceMax", (2, 3, 4), [3], 1),
    ("ReduceMean", (2, 3, 4), [-4], 0), ("Squeeze", (1, 3, 1), [0, 0], None), ("Squeeze", (1, 3, 1), [1], None),
    ("Squeeze", (1, 3, 1), [3], None), ("Unsqueeze", (2, 3), [0, 0], None), ("Unsqueeze", (2, 3), [0, 4], None),
])
def test_invalid_axes_are_refused_when_run(op, x_shape, axes, keepdims):
    """Repeated axes (onnxruntime reduces or squeezes one once, and refuses it in Unsqueeze), axes out of
    range, and a squeezed dim that is not 1 are ONNX errors: the network's assertion stops the run."""
    attrs = f"<keepdims = {keepdims}>" if keepdims is not None else ""
    _, network = _network(f"""g (float[{','.join(map(str, x_shape))}] x, int64[{len(axes)}] axes) => (float[?] y) {{
        y = {op} {attrs} (x, axes)
    }}""")
    feeds = {"x": np.ones(x_shape, np.float32), "axes": np.array(axes, np.int64)}
    with pytest.raises(SimulationError, match=f"the axes input must hold {len(axes)} distinct axes"):
        simulate(network, feeds)


def test_invalid_axes_fail_the_build_for_a_profile_that_pins_them():
    """Where the profile pins the axes, TensorRT's builder checks the assertion itself."""
    session, network = _network("""g (float[2,3,4] x, int64[2] axes) => (float[A] y) {
        y = ReduceSum <keepdims = 0> (x, axes)
    }""")
    feeds = {"x": X, "axes": np.array([1, 1], np.int64)}
    cfg = builder_config(session)
    pin_profile(session, network, cfg, feeds)
    with pytest.raises(BackendError, match="the axes input must hold 2 distinct axes"):
        build_serialized(session, network, cfg)


@pytest.mark.parametrize("text, reason", [
    ("g (float[2,3,4] x, int64[K] axes) => (float[A] y) { y = ReduceSum(x, axes) }", "unknown length"),
    ("g (float[2,3] x, int64[K] axes) => (float[A,B,C] y) { y = Unsqueeze(x, axes) }", "unknown length"),
    ("g (float[2,3,4] x, int64[1,1] axes) => (float[A,B] y) { y = Squeeze(x, axes) }", "of rank 2"),
    ("g (float x, int64[1] axes) => (float y) { y = ReduceMax(x, axes) }", "rank-0 input"),
    ("g (float[1,3] x, int64[0] axes) => (float[A] y) { y = Squeeze(x, axes) }", "empty computed axes input"),
    ("""g (int64 n, float[2,3] s0, int64[1] a0) => (float[2,3] s, int64[1] a) {
            t = Constant <value = bool {1}> ()
            s, a = Loop(n, t, s0, a0) <body = b (int64 i, bool c, float[2,3] st, int64[1] ax) =>
                                                (bool c2, float[2,3] st2, int64[1] ax2) {
                st2 = ReduceMean <keepdims = 1> (st, ax)
                ax2 = Neg(ax)
                c2 = Identity(c)
            }>
        }""", "changes from trip to trip"),
])
def test_refused_when_converted(text, reason):
    with pytest.raises(UnsupportedConversionError, match=reason):
        _network(text)


# -- ONNX's node tests ----------------------------------------------------------------------------


def test_node_tests_of_these_ops():
    """Every node test of Reduce*, Squeeze and Unsqueeze (most feed their axes as a graph input) builds and
    matches."""
    cases = [c for c in node_test_cases() if c.name.startswith(("test_reduce", "test_squeeze", "test_unsqueeze"))]
    assert len(cases) >= 141
    wrong = loopc_failures(cases)
    assert not wrong, "\n".join(wrong)

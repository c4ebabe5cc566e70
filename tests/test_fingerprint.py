"""``describe_network`` on networks built by hand (TensorRT API or ONNX text), against counts worked out by hand.

MACs are batch × M × N × K for a matrix product (TensorRT's operand kinds and batch
broadcasting), the product of all label sizes for an einsum, N · M · output positions · C/groups ·
kernel volume for a convolution, N · C · input positions · M/groups · kernel volume for a
deconvolution, and Q Kᵀ plus the scores times V for an attention. The critical path is the
longest chain of layers from a recurrence's value to a next value or the kWHILE input; a
nested loop is one step. Layers that do not vary with the iterations are loop-invariant
(TensorRT computes them once), so they are not per-iteration work.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import numpy as np
import onnx
import onnx.parser
import pytest
from onnx import numpy_helper

from loopc.compiler import compile as compile_model
from loopc.fingerprint import (ConditionalInfo, IteratorInfo, LoopInfo, MacCounter, NetworkInfo, RecurrenceInfo,
                               describe_network, macs)
from loopc.sim import Simulator
from loopc.sim.network import read_network
from tests.conftest import NetworkBuilder

SAMPLES_DIR = pathlib.Path(__file__).resolve().parents[1] / "samples"
SAMPLES = ["greedy_gru_decoder.onnx", "nested_loops.onnx", "openvino/loop_if.xml", "openvino/loop_in_loop.xml"]


# -- helpers -------------------------------------------------------------------------------------

def named(layer: Any, name: str) -> Any:
    layer.name = name
    return layer.get_output(0)


def const(nb: NetworkBuilder, value: Any, name: str, dtype: Any = np.float32) -> Any:
    array = np.array(value, dtype=dtype)
    nb._keep = getattr(nb, "_keep", []) + [array]  # weights must outlive the network
    return named(nb.network.add_constant(array.shape, array), name)


def ew(nb: NetworkBuilder, a: Any, b: Any, op: str, name: str) -> Any:
    return named(nb.network.add_elementwise(a, b, getattr(nb.trt.ElementWiseOperation, op)), name)


def act(nb: NetworkBuilder, x: Any, kind: str, name: str) -> Any:
    return named(nb.network.add_activation(x, getattr(nb.trt.ActivationType, kind)), name)


def loop_of(nb: NetworkBuilder, name: str, trips: Any) -> Any:
    """A loop with a kCOUNT limit; ``trips`` is an int (a constant) or an INT32 0-D tensor."""
    loop = nb.network.add_loop()
    loop.name = name
    count = const(nb, trips, f"{name}_trips", np.int32) if isinstance(trips, int) else trips
    loop.add_trip_limit(count, nb.trt.TripLimit.COUNT)
    return loop


def recurrence(loop: Any, init: Any, name: str) -> Any:
    rec = loop.add_recurrence(init)
    rec.name = name
    return rec


def output(nb: NetworkBuilder, loop: Any, value: Any, name: str, kind: str = "LAST_VALUE", length: int = 0) -> Any:
    layer = loop.add_loop_output(value, getattr(nb.trt.LoopOutput, kind), 0)
    if kind != "LAST_VALUE":
        layer.set_input(1, const(nb, length, f"{name}_length", np.int32))
    return nb.output(named(layer, name), name)


def only_loop(info: NetworkInfo) -> LoopInfo:
    (loop,) = info.loops
    assert isinstance(loop, LoopInfo)
    return loop


# -- multiply-accumulates ------------------------------------------------------------------------

MATMULS = [  # operand shapes and kinds → batch × M × N × K
    ((5, 3), "NONE", (3, 4), "NONE", 5 * 4 * 3),
    ((1, 5, 3), "NONE", (2, 3, 4), "NONE", 2 * 5 * 4 * 3),  # batch 1 broadcast against 2
    ((2, 5, 3), "NONE", (1, 3, 4), "NONE", 2 * 5 * 4 * 3),
    ((2, 3, 5), "TRANSPOSE", (2, 3, 4), "NONE", 2 * 5 * 4 * 3),  # op0 [K, M]
    ((5, 3), "NONE", (4, 3), "TRANSPOSE", 5 * 4 * 3),  # op1 [N, K]
    ((3,), "VECTOR", (3, 4), "NONE", 4 * 3),  # a vector times a matrix: M = 1
    ((2, 3), "NONE", (3,), "VECTOR", 2 * 3),  # a matrix times a vector: N = 1
    ((2, 3), "VECTOR", (2, 3), "VECTOR", 2 * 3),  # two stacks of 2 vectors: 2 dot products of length 3
]


@pytest.mark.parametrize(("a", "op0", "b", "op1", "expected"), MATMULS)
def test_matrix_multiply_macs(nb: NetworkBuilder, a: tuple[int, ...], op0: str, b: tuple[int, ...], op1: str,
                              expected: int) -> None:
    loop = loop_of(nb, "L", 2)
    row = loop.add_iterator(nb.input("x", nb.trt.float32, (2, *a))).get_output(0)  # the per-iteration operand
    T = nb.trt.MatrixOperation
    product = named(nb.network.add_matrix_multiply(
        row, getattr(T, op0), const(nb, np.ones(b), "w"), getattr(T, op1)), "mm")
    output(nb, loop, product, "y", "CONCATENATE", 2)

    found = only_loop(describe_network(nb.network))

    assert (found.matmuls_per_iteration, found.macs_per_iteration) == (1, expected)
    assert found.layers_per_iteration == 1


EINSUMS = [
    ("ij,jk->ik", (2, 3), (3, 4), 2 * 3 * 4),
    ("bij,bjk->bik", (2, 2, 3), (2, 3, 4), 2 * 2 * 3 * 4),
    ("ij,ij->i", (3, 4), (1, 4), 3 * 4),  # i broadcast: 1 against 3, either way round
    ("ij,ij->i", (1, 4), (3, 4), 3 * 4),
]


@pytest.mark.parametrize(("equation", "a", "b", "expected"), EINSUMS)
def test_einsum_macs(nb: NetworkBuilder, equation: str, a: tuple[int, ...], b: tuple[int, ...],
                     expected: int) -> None:
    loop = loop_of(nb, "L", 2)
    row = loop.add_iterator(nb.input("x", nb.trt.float32, (2, *a))).get_output(0)
    product = named(nb.network.add_einsum([row, const(nb, np.ones(b), "w")], equation), "es")
    output(nb, loop, product, "y", "CONCATENATE", 2)

    found = only_loop(describe_network(nb.network))

    assert (found.matmuls_per_iteration, found.macs_per_iteration) == (1, expected)


def test_dynamic_batch_macs_are_unknown_until_measured(nb: NetworkBuilder) -> None:
    """h[B, 3] @ W[3, 3] twice per run: B × 3 × 3 MACs per iteration, averaged over the runs measured."""
    loop = loop_of(nb, "L", 2)
    rec = recurrence(loop, nb.input("x", nb.trt.float32, (-1, 3)), "h")
    T = nb.trt.MatrixOperation
    rec.set_input(1, named(nb.network.add_matrix_multiply(
        rec.get_output(0), T.NONE, const(nb, np.eye(3) * 0.5, "w"), T.NONE), "mm"))
    output(nb, loop, rec.get_output(0), "y")

    assert only_loop(describe_network(nb.network)).macs_per_iteration is None

    counter = MacCounter()
    simulator = Simulator(nb.network, observer=counter)
    got = simulator.run({"x": np.ones((5, 3), np.float32)})["y"]
    np.testing.assert_allclose(got, np.full((5, 3), 0.25))  # ones @ (I/2) @ (I/2)
    assert only_loop(describe_network(nb.network, counter.average)).macs_per_iteration == 5 * 3 * 3

    simulator.run({"x": np.ones((1, 3), np.float32)})  # two more products of batch 1
    assert only_loop(describe_network(nb.network, counter.average)).macs_per_iteration == (2 * 45 + 2 * 9) // 4


# -- convolutions and attention ------------------------------------------------------------------

CONV_LOOP = """<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4,H,W] x) => (float[N,4,H,W] last, float[3,N,4,S,T] ys) {
    trips = Constant <value = int64 {3}> ()
    last, ys = Loop (trips, "", x) <body = step (int64 i, bool c, float[N,4,H,W] x_in)
                                          => (bool c_out, float[N,4,H,W] x_out, float[N,4,S,T] y) {
        h = Conv <group = 2, strides = [2, 2], dilations = [2, 2], pads = [1, 2, 0, 1]> (x_in, w)
        y = ConvTranspose <group = 2, strides = [2, 2]> (h, wt)
        half = Constant <value = float {0.5}> ()
        x_out = Mul (x_in, half)
        c_out = Identity (c)
    }>
}"""


def conv_loop(spatial: int | None) -> onnx.ModelProto:
    """Three trips of a grouped, strided, dilated, asymmetrically padded Conv and a grouped, strided ConvTranspose
    on x [1, 4, 8, 8]; ``spatial`` None leaves H and W dynamic."""
    text = CONV_LOOP.replace("N,", "1,")
    if spatial is not None:
        text = text.replace("H,W", f"{spatial},{spatial}").replace("S,T", "6,9")
    model = onnx.parser.parse_model(text)
    model.graph.initializer.extend([
        numpy_helper.from_array(np.full((6, 2, 3, 3), 0.1, np.float32), "w"),  # Conv: [M, C/groups, 3, 3]
        numpy_helper.from_array(np.full((6, 2, 2, 3), 0.1, np.float32), "wt"),  # ConvTranspose: [C, M/groups, 2, 3]
    ])
    return model


# Conv: N 1, M 6 maps, C/groups = 4/2, kernel 3x3 dilated 2 (extent 5), stride 2; H padded 1 + 8 + 0 gives
# (9 - 5) // 2 + 1 = 3 rows, W padded 2 + 8 + 1 gives (11 - 5) // 2 + 1 = 4 columns.
CONV_MACS = 1 * 6 * (3 * 4) * (4 // 2) * (3 * 3)  # 1,296
# ConvTranspose of those [1, 6, 3, 4]: N 1, C 6, 3 x 4 input positions, M/groups = 4/2, kernel 2x3.
DECONV_MACS = 1 * 6 * (3 * 4) * (4 // 2) * (2 * 3)  # 864


def test_convolution_macs_static_and_measured_are_the_hand_count() -> None:
    compiled = compile_model(conv_loop(8))
    conv = next(lay for lay in read_network(compiled.network).layers if lay.type == "CONVOLUTION")
    assert conv.outputs[0].shape == (1, 6, 3, 4)  # TensorRT's own output size, as worked out above

    found = only_loop(describe_network(compiled.network))

    assert (found.matmuls_per_iteration, found.convolutions_per_iteration) == (0, 2)
    assert found.macs_per_iteration == CONV_MACS + DECONV_MACS == 2160
    counter = MacCounter()
    got = Simulator(compiled.network, observer=counter).run({"x": np.ones((1, 4, 8, 8), np.float32)})
    assert got["ys"].shape == (3, 1, 4, 6, 9)
    assert only_loop(describe_network(compiled.network, counter.average)).macs_per_iteration == 2160


def test_convolution_macs_of_dynamic_sizes_are_measured() -> None:
    compiled = compile_model(conv_loop(None))
    assert only_loop(describe_network(compiled.network)).macs_per_iteration is None

    counter = MacCounter()
    Simulator(compiled.network, observer=counter).run({"x": np.ones((1, 4, 8, 8), np.float32)})

    assert only_loop(describe_network(compiled.network, counter.average)).macs_per_iteration == 2160


PADDING_MODES = [  # a 3x3 kernel, stride 2, over 7 x 7 (8 x 8 for ROUND_UP); output rows, columns by hand
    ("EXPLICIT_ROUND_DOWN", (1, 0), (0, 0), 7, (3, 3)),  # rows (1 + 7 - 3) // 2 + 1, columns (7 - 3) // 2 + 1
    ("EXPLICIT_ROUND_UP", (0, 0), (0, 0), 8, (4, 4)),  # ceil((8 - 3) / 2) + 1: the last window reads padding
    ("SAME_UPPER", (0, 0), (0, 0), 7, (4, 4)),  # ceil(7 / 2)
]


@pytest.mark.parametrize(("mode", "pre", "post", "size", "out"), PADDING_MODES)
def test_convolution_macs_follow_the_padding_mode(nb: NetworkBuilder, mode: str, pre: tuple[int, int],
                                                  post: tuple[int, int], size: int, out: tuple[int, int]) -> None:
    loop = loop_of(nb, "L", 2)
    rec = recurrence(loop, nb.input("x", nb.trt.float32, (1, 4, size, size)), "x")
    kernel = np.full((2, 4, 3, 3), 0.1, np.float32)
    nb._keep = getattr(nb, "_keep", []) + [kernel]  # weights must outlive the network
    conv = nb.network.add_convolution_nd(rec.get_output(0), 2, (3, 3), kernel, nb.trt.Weights())
    conv.stride_nd, conv.pre_padding, conv.post_padding = (2, 2), pre, post
    conv.padding_mode = getattr(nb.trt.PaddingMode, mode)
    rec.set_input(1, act(nb, rec.get_output(0), "RELU", "relu"))
    output(nb, loop, named(conv, "conv"), "y", "CONCATENATE", 2)

    expected = 1 * 2 * (out[0] * out[1]) * 4 * (3 * 3)  # N · M · output positions · C · kernel
    assert tuple(conv.get_output(0).shape) == (1, 2, *out)  # TensorRT's own output size agrees
    assert only_loop(describe_network(nb.network)).macs_per_iteration == expected
    counter = MacCounter()
    got = Simulator(nb.network, observer=counter).run({"x": np.ones((1, 4, size, size), np.float32)})["y"]
    assert got.shape == (2, 1, 2, *out)
    assert only_loop(describe_network(nb.network, counter.average)).macs_per_iteration == expected


ATTENTION = """<ir_version: 10, opset_import: ["" : 23]>
g (float[1,2,3,4] q) => (float[1,2,3,4] y) {
    y = Attention (q, k, v)
}"""


def attention_model(in_loop: bool) -> onnx.ModelProto:
    """Attention of q [1, 2 heads, 3 queries, 4] over k, v [1, 2, 5 keys, 4]: in a loop's body (q its
    recurrence) TensorRT's IAttention cannot be built, so loopc writes the two matrix products."""
    text = ATTENTION if not in_loop else ATTENTION.replace("y = Attention (q, k, v)", """
    trips = Constant <value = int64 {2}> ()
    y = Loop (trips, "", q) <body = step (int64 i, bool c, float[1,2,3,4] q_in) => (bool c_out, float[1,2,3,4] q_out) {
        q_out = Attention (q_in, k, v)
        c_out = Identity (c)
    }>""")
    model = onnx.parser.parse_model(text)
    rng = np.random.default_rng(3)
    model.graph.initializer.extend([numpy_helper.from_array(rng.standard_normal((1, 2, 5, 4)).astype(np.float32), n)
                                    for n in ("k", "v")])
    return model


ATTENTION_MACS = 1 * 2 * 3 * 5 * 4 + 1 * 2 * 3 * 5 * 4  # Q Kᵀ: b · heads · queries · keys · 4; then · V: the same


def test_attention_in_a_loop_is_two_counted_matrix_products() -> None:
    compiled = compile_model(attention_model(in_loop=True))

    found = only_loop(describe_network(compiled.network))

    assert (found.matmuls_per_iteration, found.macs_per_iteration) == (2, ATTENTION_MACS)
    counter = MacCounter()
    Simulator(compiled.network, observer=counter).run({"q": np.ones((1, 2, 3, 4), np.float32)})
    assert only_loop(describe_network(compiled.network, counter.average)).macs_per_iteration == ATTENTION_MACS


def test_tensorrt_attention_layer_macs_static_and_measured() -> None:
    compiled = compile_model(attention_model(in_loop=False))
    (layer,) = [lay for lay in read_network(compiled.network).layers if lay.type == "ATTENTION_INPUT"]
    assert macs(layer, [None if t is None else t.shape for t in layer.inputs]) == ATTENTION_MACS

    counter = MacCounter()
    Simulator(compiled.network, observer=counter).run({"q": np.ones((1, 2, 3, 4), np.float32)})

    assert counter.average == {layer.index: ATTENTION_MACS}


# -- structure and critical path -----------------------------------------------------------------

def rnn_cell_loop(nb: NetworkBuilder) -> None:
    """h ← tanh(h @ W) + b four times, and a longer side chain that only feeds an output.

    (The bias comes last: TensorRT-RTX cannot infer the type of an activation feeding a recurrence.)
    """
    loop = loop_of(nb, "rnn", 4)
    rec = recurrence(loop, const(nb, [0.5, -0.5], "h0"), "h")
    h = rec.get_output(0)
    T = nb.trt.MatrixOperation
    product = named(nb.network.add_matrix_multiply(h, T.VECTOR, const(nb, np.eye(2), "W"), T.NONE), "matmul")
    new_h = ew(nb, act(nb, product, "TANH", "tanh"), const(nb, [0.1, 0.2], "b"), "SUM", "add")
    rec.set_input(1, new_h)
    side = h
    for k in range(5):
        side = act(nb, side, "RELU", f"side{k}")
    output(nb, loop, h, "h_last")
    output(nb, loop, side, "side_all", "CONCATENATE", 4)


def test_critical_path_follows_the_recurrence_not_the_longer_side_chain(nb: NetworkBuilder) -> None:
    rnn_cell_loop(nb)
    nb.serialize()  # TensorRT's builder accepts the network

    found = only_loop(describe_network(nb.network))

    assert found.critical_path == ["matmul", "tanh", "add"]
    assert found.layers_per_iteration == 3 + 5  # the constants are invariant: computed once
    assert (found.matmuls_per_iteration, found.macs_per_iteration) == (1, 2 * 2)
    assert (found.trip_limits, found.trip_count) == (["kCOUNT"], 4)
    assert found.iterators == []
    assert found.recurrences == [RecurrenceInfo("h", "h0", "add", [2])]
    assert [(o.kind, o.axis) for o in found.outputs] == [("kLAST_VALUE", None), ("kCONCATENATE", 0)]
    assert found.children == []


def test_trip_count_from_an_input_is_not_a_constant(nb: NetworkBuilder) -> None:
    loop = loop_of(nb, "L", nb.input("n", nb.trt.int32, ()))
    row = loop.add_iterator(nb.input("x", nb.trt.float32, (3, 2)), 1, True)
    row.name = "columns"
    output(nb, loop, act(nb, row.get_output(0), "RELU", "relu"), "y", "REVERSE", 2)

    found = only_loop(describe_network(nb.network))

    assert (found.trip_limits, found.trip_count) == (["kCOUNT"], None)
    assert found.iterators == [IteratorInfo("columns", 1, True)]
    assert [(o.kind, o.axis) for o in found.outputs] == [("kREVERSE", 0)]


def test_while_condition_ends_a_critical_path(nb: NetworkBuilder) -> None:
    """x ← 2x while 3x < 100: the condition's chain (scale, less) is longer than the update's (double)."""
    loop = nb.network.add_loop()
    loop.name = "grow"
    rec = recurrence(loop, nb.input("x", nb.trt.float32, ()), "x")
    x = rec.get_output(0)
    rec.set_input(1, ew(nb, x, const(nb, 2.0, "two"), "PROD", "double"))
    loop.add_trip_limit(ew(nb, ew(nb, x, const(nb, 3.0, "three"), "PROD", "scale"), const(nb, 100.0, "limit"),
                           "LESS", "less"), nb.trt.TripLimit.WHILE)
    output(nb, loop, x, "y")

    found = only_loop(describe_network(nb.network))

    assert (found.trip_limits, found.trip_count) == (["kWHILE"], None)
    assert found.critical_path == ["scale", "less"]
    assert found.layers_per_iteration == 3


def nested_loops(nb: NetworkBuilder) -> None:
    """outer: h ← 2 × inner(h), where inner: g ← g + 1 twice, starting from the outer h."""
    outer = loop_of(nb, "outer", 3)
    h_rec = recurrence(outer, const(nb, [1.0], "h0"), "h")
    inner = loop_of(nb, "inner", 2)
    g_rec = recurrence(inner, h_rec.get_output(0), "g")
    g_rec.set_input(1, ew(nb, g_rec.get_output(0), const(nb, [1.0], "one"), "SUM", "inner_add"))
    inner_out = named(inner.add_loop_output(g_rec.get_output(0), nb.trt.LoopOutput.LAST_VALUE), "inner_out")
    h_rec.set_input(1, ew(nb, inner_out, const(nb, [2.0], "two"), "PROD", "outer_mul"))
    output(nb, outer, h_rec.get_output(0), "y")


def test_a_nested_loop_is_one_step_of_its_parents_critical_path(nb: NetworkBuilder) -> None:
    nested_loops(nb)
    got = nb.build_and_simulate({})["y"]
    np.testing.assert_array_equal(got, [36.0])  # h ← 2(h + 2) three times from 1: 6, 16, 36

    info = describe_network(nb.network)

    outer = only_loop(info)
    assert outer.name == "outer" and outer.critical_path == ["loop inner", "outer_mul"]
    assert outer.layers_per_iteration == 1  # outer_mul; the inner loop's layers are its own
    (inner,) = outer.children
    assert isinstance(inner, LoopInfo)
    assert (inner.name, inner.trip_count, inner.critical_path) == ("inner", 2, ["inner_add"])
    assert inner.recurrences == [RecurrenceInfo("g", "h", "inner_add", [1])]
    assert [lp.name for lp in info.walk_loops()] == ["outer", "inner"]


def loop_with_a_conditional(nb: NetworkBuilder) -> None:
    """h ← relu(h) on the first trip, h − 2h after: the if-conditional's input, branches and output vary per trip."""
    loop = loop_of(nb, "L", 3)
    i_rec = recurrence(loop, const(nb, 0, "i0", np.int32), "i")
    i_rec.set_input(1, ew(nb, i_rec.get_output(0), const(nb, 1, "one", np.int32), "SUM", "i_next"))
    h_rec = recurrence(loop, const(nb, [1.0, 2.0], "h0"), "h")
    cond = nb.network.add_if_conditional()
    cond.name = "choose"
    cond.set_condition(ew(nb, i_rec.get_output(0), const(nb, 1, "bound", np.int32), "LESS", "first")).name = "cnd"
    entry = named(cond.add_input(h_rec.get_output(0)), "cin")
    doubled = ew(nb, entry, entry, "SUM", "else_double")
    negated = ew(nb, entry, doubled, "SUB", "else_neg")
    h_rec.set_input(1, named(cond.add_output(act(nb, entry, "RELU", "then_relu"), negated), "cout"))
    output(nb, loop, h_rec.get_output(0), "y")


def test_a_conditional_inside_a_loop_is_its_child(nb: NetworkBuilder) -> None:
    loop_with_a_conditional(nb)
    np.testing.assert_array_equal(nb.build_and_simulate({})["y"], [1.0, 2.0])  # [1,2] → [1,2] → [-1,-2] → [1,2]

    found = only_loop(describe_network(nb.network))

    assert found.children == [ConditionalInfo("choose", 3)]  # then_relu; else_double, else_neg
    assert found.critical_path == ["cin", "else_double", "else_neg", "cout"]
    # i_next, first, the condition, the conditional's input and output, and its three branch layers
    assert found.layers_per_iteration == 8


def test_a_conditional_nested_in_a_branch_counts_in_its_parent(nb: NetworkBuilder) -> None:
    """outer: then (inner: then |relu(x)| else −relu(x)) else sigmoid(x); the inner's input is computed in the outer."""
    x = nb.input("x", nb.trt.float32, (2,))
    outer = nb.network.add_if_conditional()
    outer.name = "outer"
    outer.set_condition(nb.input("c1", nb.trt.bool, ()))
    x_in = named(outer.add_input(x), "x_in")
    c2_in = named(outer.add_input(nb.input("c2", nb.trt.bool, ())), "c2_in")
    inner = nb.network.add_if_conditional()
    inner.name = "inner"
    inner.set_condition(c2_in)
    a_in = named(inner.add_input(act(nb, x_in, "RELU", "relu")), "a_in")
    T = nb.trt.UnaryOperation
    inner_out = named(inner.add_output(named(nb.network.add_unary(a_in, T.ABS), "abs"),
                                       named(nb.network.add_unary(a_in, T.NEG), "neg")), "inner_out")
    nb.output(named(outer.add_output(inner_out, act(nb, x_in, "SIGMOID", "sigmoid")), "outer_out"), "y")
    x_value = np.array([-1.0, 2.0], np.float32)
    got = nb.build_and_simulate({"x": x_value, "c1": np.array(True), "c2": np.array(False)})["y"]
    np.testing.assert_array_equal(got, [0.0, -2.0])

    info = describe_network(nb.network)

    # relu, the inner's condition, input and output, abs, neg; sigmoid
    assert info.loops == [ConditionalInfo("outer", 7, [ConditionalInfo("inner", 2)])]


def if_with_a_loop(nb: NetworkBuilder, inner_if: bool) -> None:
    """outer: then (a loop doubling x twice, or choosing relu(r) or 2r when ``inner_if``) else x."""
    outer = nb.network.add_if_conditional()
    outer.name = "outer"
    outer.set_condition(nb.input("c", nb.trt.bool, ()))
    x_in = named(outer.add_input(nb.input("x", nb.trt.float32, (2,))), "x_in")
    loop = loop_of(nb, "L", 2)
    rec = recurrence(loop, x_in, "r")
    if inner_if:
        inner = nb.network.add_if_conditional()
        inner.name = "inner"
        inner.set_condition(named(outer.add_input(nb.input("d", nb.trt.bool, ())), "d_in"))
        r_in = named(inner.add_input(rec.get_output(0)), "r_in")
        rec.set_input(1, named(inner.add_output(act(nb, r_in, "RELU", "relu"), ew(nb, r_in, r_in, "SUM", "twice")),
                               "inner_out"))
    else:
        rec.set_input(1, ew(nb, rec.get_output(0), rec.get_output(0), "SUM", "twice"))
    looped = named(loop.add_loop_output(rec.get_output(0), nb.trt.LoopOutput.LAST_VALUE), "looped")
    nb.output(named(outer.add_output(looped, x_in), "outer_out"), "y")


def test_a_loop_in_a_branch_is_the_conditionals_child(nb: NetworkBuilder) -> None:
    if_with_a_loop(nb, inner_if=False)
    got = nb.build_and_simulate({"c": np.array(True), "x": np.array([1.0, -1.0], np.float32)})
    np.testing.assert_array_equal(got["y"], [4.0, -4.0])

    (top,) = describe_network(nb.network).loops

    assert isinstance(top, ConditionalInfo) and top.name == "outer"
    assert [(c.kind, c.name) for c in top.children] == [("loop", "L")]


def test_if_in_a_loop_in_an_if_nests_three_deep(nb: NetworkBuilder) -> None:
    """Simulated only: TensorRT-RTX's builder fails an internal assertion on this nesting."""
    if_with_a_loop(nb, inner_if=True)
    got = Simulator(nb.network).run({"c": np.array(True), "d": np.array(False), "x": np.array([1.0, -1.0], np.float32)})
    np.testing.assert_array_equal(got["y"], [4.0, -4.0])

    (top,) = describe_network(nb.network).loops

    assert isinstance(top, ConditionalInfo) and top.name == "outer"
    (middle,) = top.children
    assert isinstance(middle, LoopInfo) and middle.name == "L"
    assert middle.children == [ConditionalInfo("inner", 2)]  # relu; twice


# -- the dictionary form -------------------------------------------------------------------------

@pytest.mark.parametrize("build", [rnn_cell_loop, nested_loops, loop_with_a_conditional])
def test_dict_round_trip_of_hand_built_networks(nb: NetworkBuilder, build: Any) -> None:
    build(nb)
    info = describe_network(nb.network)
    assert NetworkInfo.from_dict(json.loads(json.dumps(info.to_dict()))) == info


@pytest.mark.parametrize("sample", SAMPLES)
def test_dict_round_trip_of_samples(sample: str) -> None:
    info = describe_network(compile_model(SAMPLES_DIR / sample).network)
    assert list(info.walk_loops())  # each sample has loops
    assert NetworkInfo.from_dict(json.loads(json.dumps(info.to_dict()))) == info


def test_a_long_chain_and_a_shortcut_are_measured_whole(nb: NetworkBuilder) -> None:
    """h ← merge(step19999(… step0(h)), 2h): 20,000 steps, then the merge; the shortcut 2h is one step.

    Read in one walk: a path is never copied to extend it, so a body this long is no slower per layer.
    """
    steps = 20_000
    loop = loop_of(nb, "long", 2)
    rec = recurrence(loop, nb.input("x", nb.trt.float32, (1,)), "h")
    h = rec.get_output(0)
    one = const(nb, [1.0], "one")
    chain = h
    for k in range(steps):
        chain = ew(nb, chain, one, "SUM", f"step{k}")
    shortcut = ew(nb, h, const(nb, [2.0], "two"), "PROD", "shortcut")
    rec.set_input(1, ew(nb, chain, shortcut, "SUM", "merge"))
    output(nb, loop, h, "y")

    found = only_loop(describe_network(nb.network))

    assert found.critical_path == [f"step{k}" for k in range(steps)] + ["merge"]
    assert found.layers_per_iteration == steps + 2  # the steps, the shortcut and the merge
    assert found.recurrences == [RecurrenceInfo("h", "x", "merge", [1])]

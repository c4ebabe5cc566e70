"""benchmarks/decoder_cost.py's counts on hand-built ONNX Loops, against MACs and bytes worked out by hand."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from benchmarks.decoder_cost import HostLoop, benchmark_inputs, count_network, decoder_cases, onnx_macs, pinned

WIDTH = 16
F32 = TensorProto.FLOAT


def _loop_model(body_nodes: list[onnx.NodeProto], carried: list[tuple[str, list[int | None]]], nexts: list[str],
                cond_out: str, trips: int, inputs: list[onnx.ValueInfoProto]) -> onnx.ModelProto:
    """A Loop of ``trips`` trips carrying ``carried`` (name, shape; None: a length that grows) from the inputs of
    the same names (``*0``) to ``nexts``."""
    rng = np.random.default_rng(0)
    body = helper.make_graph(
        body_nodes, "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         *(helper.make_tensor_value_info(name, F32, shape) for name, shape in carried)],
        [helper.make_tensor_value_info(cond_out, TensorProto.BOOL, []),
         *(helper.make_tensor_value_info(name, F32, shape) for name, (_, shape) in zip(nexts, carried))])
    loop = helper.make_node("Loop", ["M", "go", *(f"{name}0" for name, _ in carried)],
                            [f"{name}_final" for name, _ in carried], body=body, name="loop")
    graph = helper.make_graph(
        [loop], "decoder", inputs,
        [helper.make_tensor_value_info(f"{name}_final", F32, shape) for name, shape in carried],
        [numpy_helper.from_array(np.array(trips, np.int64), "M"), numpy_helper.from_array(np.array(True), "go"),
         numpy_helper.from_array((rng.standard_normal((WIDTH, WIDTH)) / WIDTH).astype(np.float32), "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _h_step() -> list[onnx.NodeProto]:
    """h1 = tanh(h · W): [1, 16] x [16, 16], 256 MACs."""
    return [helper.make_node("MatMul", ["h", "W"], ["hw"]), helper.make_node("Tanh", ["hw"], ["h1"])]


def test_one_product_per_trip_costs_the_same_in_loopcs_loop_and_the_models_step() -> None:
    model = _loop_model([*_h_step(), helper.make_node("Identity", ["cond"], ["cond_out"])], [("h", [1, WIDTH])],
                        ["h1"], "cond_out", 3, [helper.make_tensor_value_info("h0", F32, [1, WIDTH])])
    loop = count_network(model)
    assert (loop.loops, loop.bound, loop.macs) == (1, 3, 1 * WIDTH * WIDTH)
    trips = list(HostLoop(model, {"h0": np.ones((1, WIDTH), np.float32)}).trips(3))
    assert [trip.macs for trip in trips] == [256, 256, 256]
    assert [(trip.state_in, trip.state_out) for trip in trips] == [(64, 64)] * 3  # h: 16 float32 in, 16 out


def test_a_convolution_in_the_step_costs_the_same_in_loopcs_loop_and_the_models_step() -> None:
    """h1 = tanh(conv(h, K)) with h [1, 2, 8], K [2, 2, 3], pads 1: 16 outputs × 2 channels × 3 taps = 96 MACs."""
    kernel = numpy_helper.from_array(np.full((2, 2, 3), 0.1, np.float32), "K")
    nodes = [helper.make_node("Constant", [], ["K"], value=kernel),
             helper.make_node("Conv", ["h", "K"], ["hk"], pads=[1, 1]), helper.make_node("Tanh", ["hk"], ["h1"]),
             helper.make_node("Identity", ["cond"], ["cond_out"])]
    model = _loop_model(nodes, [("h", [1, 2, 8])], ["h1"], "cond_out", 3,
                        [helper.make_tensor_value_info("h0", F32, [1, 2, 8])])
    assert count_network(model).macs == 96
    trips = list(HostLoop(model, {"h0": np.ones((1, 2, 8), np.float32)}).trips(3))
    assert [trip.macs for trip in trips] == [96, 96, 96]


def _attention_decoder(trips: int) -> onnx.ModelProto:
    """h1 = tanh(h · W); the cache [1, L, 16] grows by h1 each trip and is attended over with h1 as the query:
    scores = cache · h1ᵀ ([1, L, 16] x [1, 16, 1]), p = softmax over L, ctx = pᵀ · cache ([1, 1, L] x [1, L, 16]);
    h_next = h1 + ctx; the loop goes on while max|h_next| < 1e6 (always, but only the data says so)."""
    axes = {name: numpy_helper.from_array(np.array(values, np.int64), name)
            for name, values in (("ax1", [1]), ("ax2", [2]))}
    nodes = [
        *(helper.make_node("Constant", [], [name], value=tensor) for name, tensor in axes.items()),
        *_h_step(),
        helper.make_node("Unsqueeze", ["h1", "ax1"], ["piece"]),
        helper.make_node("Concat", ["cache", "piece"], ["cache1"], axis=1),
        helper.make_node("Unsqueeze", ["h1", "ax2"], ["query"]),
        helper.make_node("MatMul", ["cache1", "query"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["p"], axis=1),
        helper.make_node("Transpose", ["p"], ["pt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["pt", "cache1"], ["ctx"]),
        helper.make_node("Squeeze", ["ctx", "ax1"], ["ctx_row"]),
        helper.make_node("Add", ["h1", "ctx_row"], ["h_next"]),
        helper.make_node("Abs", ["h_next"], ["magnitude"]),
        helper.make_node("ReduceMax", ["magnitude"], ["largest"], keepdims=0),
        helper.make_node("Constant", [], ["huge"], value=numpy_helper.from_array(np.array(1e6, np.float32), "huge")),
        helper.make_node("Less", ["largest", "huge"], ["cond_out"]),
    ]
    inputs = [helper.make_tensor_value_info("h0", F32, [1, WIDTH]),
              helper.make_tensor_value_info("cache0", F32, [1, 2, WIDTH])]
    return _loop_model(nodes, [("h", [1, WIDTH]), ("cache", [1, None, WIDTH])], ["h_next", "cache1"], "cond_out",
                       trips, inputs)


def test_attention_over_a_grown_cache_costs_the_padded_length_in_loopcs_loop_and_the_valid_one_in_the_models() -> None:
    """A 2-position prompt, 4 trips: trip t attends over 3 + t positions (the cache after its write); loopc's
    buffer holds 2 + 4 = 6 positions on every trip. Per trip 256 (h · W) + 2 × 16 × positions."""
    model = _attention_decoder(4)
    loop = count_network(model)
    assert (loop.loops, loop.bound, loop.macs) == (1, 4, 256 + 2 * WIDTH * 6)  # one loop; 448
    # carried: the condition (a bool), h (16 float32), the buffer (6 positions x 16 float32), its length (int64)
    assert loop.state_bytes == 1 + 64 + 6 * 64 + 8
    rng = np.random.default_rng(1)
    inputs = {"h0": rng.standard_normal((1, WIDTH)).astype(np.float32),
              "cache0": rng.standard_normal((1, 2, WIDTH)).astype(np.float32)}
    trips = list(HostLoop(model, inputs).trips(4))
    assert [trip.macs for trip in trips] == [352, 384, 416, 448]
    # in: h (64 B) and the cache of 2 + t positions (64 B each); out: h and 3 + t positions
    assert [(trip.state_in, trip.state_out) for trip in trips] == [(64 + 64 * (2 + t), 64 + 64 * (3 + t))
                                                                    for t in range(4)]
    assert sum(trip.state_in + trip.state_out for trip in trips) == 2560


@pytest.mark.parametrize("op, shapes, out, attrs, expected", [
    ("MatMul", [(2, 3, 4, 5), (5, 6)], (2, 3, 4, 6), {}, 2 * 3 * 4 * 6 * 5),  # batch dims broadcast from the right
    ("MatMul", [(5,), (5, 6)], (6,), {}, 30),  # a vector times a matrix
    ("MatMul", [(5,), (2, 5, 6)], (2, 6), {}, 60),  # ... times a stack of two
    ("Gemm", [(2, 8), (12, 8)], (2, 12), {"transB": 1}, 2 * 12 * 8),
    ("Conv", [(1, 8, 10), (16, 8, 5)], (1, 16, 6), {}, 16 * 6 * 8 * 5),  # each output: 8 channels × 5 taps
    ("Relu", [(4, 4)], (4, 4), {}, 0),
])
def test_onnx_macs(op: str, shapes: list[tuple[int, ...]], out: tuple[int, ...], attrs: dict[str, int],
                   expected: int) -> None:
    node = helper.make_node(op, [f"x{k}" for k in range(len(shapes))], ["y"])
    node.attribute.extend(helper.make_attribute(name, value) for name, value in attrs.items())
    assert onnx_macs(node, shapes, [out]) == expected


def test_the_prompt_is_made_longer_by_repeating_it_and_the_length_input_asks_for_the_tokens() -> None:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["prompt"], ["out"])], "g",
        [helper.make_tensor_value_info("prompt", TensorProto.INT64, ["batch", "prompt_len"]),
         helper.make_tensor_value_info("max_len", TensorProto.INT64, []),
         helper.make_tensor_value_info("start", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("out", TensorProto.INT64, ["batch", "prompt_len"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    example = {"prompt": np.array([[5, 6, 7], [1, 2, 3]]), "max_len": np.array(12), "start": np.array(4)}
    inputs = benchmark_inputs(model, example, 5, 20)
    assert inputs["prompt"].tolist() == [[5, 6, 7, 5, 6], [1, 2, 3, 1, 2]]
    assert int(inputs["max_len"]) == 20 and int(inputs["start"]) == 4  # only a max_* scalar is a length
    fixed = pinned(model, inputs)
    assert [i.name for i in fixed.graph.input] == ["prompt"]  # the scalars are constants now
    assert [d.dim_value for d in fixed.graph.input[0].type.tensor_type.shape.dim] == [2, 5]


def test_the_decoders_are_the_corpus_cases_that_say_so_one_per_model_file() -> None:
    names = {case.name for case in decoder_cases()}
    assert {"kv_cache_decoder", "beam_search", "tacotron_cat_decoder", "gpt2_static_cache",
            "gpt2_static_cache_scripted", "greedy_decoder", "tf_while_greedy"} <= names
    assert "greedy_decoder_max_len" not in names  # the same file as greedy_decoder
    assert "yolo_nms" not in names and "lstm_cell_loop" not in names  # a box decode, a time loop: no decoders

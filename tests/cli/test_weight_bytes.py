"""The weight cost ``loopc build`` (its printout and ``--report``) and ``loopc inspect`` give, read back from the
TensorRT network: its constants' bytes by data type, and per loop those its body reads each trip, against bytes
worked out by hand (element count × bytes per element; INT4 two elements to a byte, rounded up)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import onnx
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

from loopc.cli import commands  # noqa: F401  (registers the subcommands)
from loopc.cli.main import cli
from loopc.fingerprint import describe_network, network_weight_bytes
from tests.conftest import NetworkBuilder

RNG = np.random.default_rng(0)


def invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return str(result.output)


def save(path: pathlib.Path, nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
         outputs: list[onnx.ValueInfoProto], initializers: list[onnx.TensorProto], opset: int = 17) -> str:
    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, initializers),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8 if opset < 21 else 10
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return str(path)


def built(tmp_path: pathlib.Path, model: str) -> tuple[dict[str, object], str]:
    """The build report and the printout of ``loopc build``."""
    printed = invoke("build", model, "-o", str(tmp_path / "m.plan"), "--report", str(tmp_path / "r.json"))
    return json.loads((tmp_path / "r.json").read_text()), printed


def row(n: int) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, n])


def loop_reading(tmp_path: pathlib.Path, weight_nodes: list[onnx.NodeProto], weight: str,
                 initializers: list[onnx.TensorProto], opset: int = 17) -> str:
    """A Loop of 3 trips carrying h [1, 8] through ``h = tanh(h @ weight)``; ``weight_nodes`` (in the body) make it."""
    body = helper.make_graph(
        [*weight_nodes, helper.make_node("MatMul", ["h", weight], ["hv"]), helper.make_node("Tanh", ["hv"], ["h_next"]),
         helper.make_node("Identity", ["cond"], ["cond_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_next", TensorProto.FLOAT, [1, 8])])
    return save(tmp_path / "loop.onnx", [helper.make_node("Loop", ["trips", "", "h0"], ["h"], body=body)], [row(8)],
                [helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 8])],
                [*initializers, numpy_helper.from_array(np.array(3, np.int64), "trips")], opset)


def test_a_float_matmul_weight_is_its_elements_times_four(tmp_path: pathlib.Path) -> None:
    w = numpy_helper.from_array(RNG.standard_normal((16, 8)).astype(np.float32), "W")
    model = save(tmp_path / "mm.onnx", [helper.make_node("MatMul", ["x", "W"], ["y"])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], [w])
    report, printed = built(tmp_path, model)
    assert report["weight_bytes"] == {"FLOAT": 16 * 8 * 4}
    assert "constant weights: 512 bytes (FLOAT 512)" in printed
    assert "constant weights: 512 bytes (FLOAT 512)" in invoke("inspect", model)


def test_a_loop_body_reads_its_weight_every_trip(tmp_path: pathlib.Path) -> None:
    weight = numpy_helper.from_array(RNG.standard_normal((8, 8)).astype(np.float32), "V")
    model = loop_reading(tmp_path, [], "V", [weight])
    report, printed = built(tmp_path, model)
    (loop,) = report["loops"]
    assert loop["weight_bytes_per_iteration"] == {"FLOAT": 8 * 8 * 4}
    assert report["weight_bytes"]["FLOAT"] == 256  # beside it only the trip count's integers
    assert "reading 256 bytes (FLOAT 256) of weights" in printed
    assert f"loop {loop['name']} reads 256 bytes (FLOAT 256) per iteration" in invoke("inspect", model)
    (pictured,) = json.loads(invoke("inspect", model, "--format", "json"))["loops"]
    assert pictured["weight_bytes_per_iteration"] == {"FLOAT": 256}


def test_an_int4_weight_counts_half_a_byte_an_element(tmp_path: pathlib.Path) -> None:
    """The body dequantizes an INT4 [8, 8] weight (32 bytes) by a float scale per column (8 × 4 bytes)."""
    quantized = helper.make_tensor("Vq", TensorProto.INT4, [8, 8], RNG.integers(-8, 8, 64).tolist())
    scale = numpy_helper.from_array(np.full(8, 0.1, np.float32), "scale")
    dequantize = helper.make_node("DequantizeLinear", ["Vq", "scale"], ["V"], axis=1)
    report, _ = built(tmp_path, loop_reading(tmp_path, [dequantize], "V", [quantized, scale], opset=21))
    assert report["loops"][0]["weight_bytes_per_iteration"] == {"FLOAT": 32, "INT4": 32}
    assert report["weight_bytes"]["INT4"] == 32 and report["weight_bytes"]["FLOAT"] == 32


def test_a_weight_reshaped_outside_the_loop_is_read_as_stored_and_odd_int4_rounds_up(nb: NetworkBuilder) -> None:
    """A FLOAT [4, 2] constant shuffled to [2, 4] before the loop is the body's weight (32 bytes); an INT4 constant
    of 15 elements (8 bytes) and a HALF one of 3 (6 bytes) outside any loop count for the network only."""
    trt = nb.trt
    weight = nb.const(RNG.standard_normal((4, 2)), np.float32)
    shuffle = nb.network.add_shuffle(weight)
    shuffle.reshape_dims = (2, 4)
    raw = np.zeros(8, np.uint8)
    nb._keep.append(raw)
    nb.network.add_constant((3, 5), trt.Weights(trt.DataType.INT4, raw.ctypes.data, 15))
    nb.const(np.ones(3), np.float16)
    loop = nb.network.add_loop()
    loop.add_trip_limit(nb.const(3, np.int32), trt.TripLimit.COUNT)
    state = loop.add_recurrence(nb.input("h0", trt.float32, (1, 2)))
    step = nb.network.add_matrix_multiply(state.get_output(0), trt.MatrixOperation.NONE, shuffle.get_output(0),
                                          trt.MatrixOperation.NONE).get_output(0)
    folded = nb.network.add_reduce(step, trt.ReduceOperation.SUM, 1 << 1, True).get_output(0)  # [1, 4] → [1, 1]
    added = nb.network.add_elementwise(state.get_output(0), folded, trt.ElementWiseOperation.SUM)
    state.set_input(1, added.get_output(0))
    nb.output(loop.add_loop_output(state.get_output(0), trt.LoopOutput.LAST_VALUE).get_output(0), "h")
    (info,) = describe_network(nb.network).loops
    assert info.weight_bytes_per_iteration == {"FLOAT": 32}
    assert network_weight_bytes(nb.network) == {"FLOAT": 32, "INT4": 8, "HALF": 6, "INT32": 4}

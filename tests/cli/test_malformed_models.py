"""Malformed or unusual models made from a real sample by one edit: `loopc build` says what is wrong in one
line and exits 1 (never 70, an internal error), and writes no plan."""

from __future__ import annotations

import pathlib

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from click.testing import CliRunner

from loopc.api import load_network
from loopc.cli import commands  # noqa: F401  (registers the subcommands)
from loopc.cli.main import cli
from loopc.sim import simulate

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "running_sum.onnx"  # x[5,3] -> total (Loop's carried sum), partials (its scan output)


def renamed(old: str, new: str, body_only: bool = False) -> onnx.ModelProto:
    """The sample with every use and definition of ``old`` named ``new`` (in the Loop's body only, if asked)."""
    model = onnx.load(SAMPLE)

    def rename(graph: onnx.GraphProto) -> None:
        for node in graph.node:
            node.input[:] = [new if n == old else n for n in node.input]
            node.output[:] = [new if n == old else n for n in node.output]
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    rename(attr.g)
        for vi in [*graph.input, *graph.output, *graph.value_info]:
            if vi.name == old:
                vi.name = new

    rename(next(n for n in model.graph.node if n.op_type == "Loop").attribute[0].g if body_only else model.graph)
    return model


def build(model: onnx.ModelProto, tmp_path: pathlib.Path) -> tuple[int, str, pathlib.Path]:
    path, plan = tmp_path / "model.onnx", tmp_path / "model.plan"
    onnx.save(model, path)
    result = CliRunner().invoke(cli, ["build", str(path), "-o", str(plan)])
    return result.exit_code, result.output.strip().splitlines()[-1], plan


def test_a_trip_count_of_shape_1x1_is_refused_by_the_validator(tmp_path: pathlib.Path) -> None:
    model = onnx.load(SAMPLE)
    squeeze = next(n for n in model.graph.node if n.output[0] == "trips")
    squeeze.op_type = "Unsqueeze"
    squeeze.input[:] = ["trips_1d", "zero_i"]  # [1] -> [1, 1]
    code, line, plan = build(model, tmp_path)
    assert (code, line) == (1, "loopc: error: node 'total' (Loop, opset 17): trip count M 'trips' has shape [1, 1]; "
                               "loopc takes a scalar (or [1]) there; reshape it to a scalar before the Loop")
    assert not plan.exists()


@pytest.mark.parametrize("which", ["x", "total"])
def test_an_input_or_output_name_longer_than_tensorrt_takes(tmp_path: pathlib.Path, which: str) -> None:
    kind = "input" if which == "x" else "output"
    long_name = (which * 5000)[:5000]
    code, line, plan = build(renamed(which, long_name), tmp_path)
    assert (code, line) == (1, f"loopc: error: {kind} '{long_name[:32]}...' has a name of 5000 characters; TensorRT "
                               f"takes at most 4095; rename the {kind} in the model")
    assert not plan.exists()


@pytest.mark.parametrize("length", [4090, 5000])
def test_a_long_inner_name_builds_and_computes(tmp_path: pathlib.Path, length: int) -> None:
    """Names loopc derives from a long value name are cut to what TensorRT takes (they were refused, or
    crashed its builder); the numbers are onnxruntime's."""
    model = renamed("init", "i" * length)
    code, line, plan = build(model, tmp_path)
    assert code == 0 and plan.exists(), line
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = simulate(load_network(model).network, {"x": x})
    np.testing.assert_allclose(got["total"], want[0])
    np.testing.assert_allclose(got["partials"], want[1])


@pytest.mark.parametrize("inner, outer, typed", [
    ("cond_in", "partials", "bool[]"), ("i", "total", "int64[]"), ("sum_out", "partials", "float32[3]"),
    ("sum_in", "trips", "float32[3]"),
])
def test_a_body_value_named_like_an_outer_one_of_another_type(tmp_path: pathlib.Path, inner: str, outer: str,
                                                              typed: str) -> None:
    """ONNX scopes a body's names (onnxruntime runs these), but loopc types values by name: a body value
    that takes an outer name with another type is refused by name, not mistyped (the verifier caught it as
    an internal error, or the outer value was refused for the body value's type)."""
    code, line, plan = build(renamed(inner, outer, body_only=True), tmp_path)
    assert code == 1, line
    assert line.startswith(f"loopc: error: node 'total' (Loop, opset 17): its body names a value {outer!r} ({typed}) "
                           f"that another graph of the model names with another type")
    assert line.endswith("loopc needs each name to have one type across a graph and its bodies; rename the body's "
                         "value")
    assert not plan.exists()


def test_a_body_input_named_like_an_outer_value_of_its_type_still_builds(tmp_path: pathlib.Path) -> None:
    """paddle2onnx names a body's carried inputs like the Loop's initial values: same types, no conflict."""
    model = renamed("sum_in", "init", body_only=True)
    code, line, plan = build(model, tmp_path)
    assert code == 0 and plan.exists(), line
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(simulate(load_network(model).network, {"x": x})["total"], want[0])

"""A conditional whose branches have different ranks and whose condition reads dims the build's profile pins
is decided at build time (TorchScript's ``x.squeeze(-1)``: ``If(Shape(x)[-1] == 1, Squeeze(x), x)``); the
network keeps its dynamic inputs. What the profile leaves open is refused, naming what would decide it."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from loopc.compiler import optimize
from loopc.errors import LoopcError
from loopc.frontend.onnx import import_model
from loopc.ir.dependence import input_dependence
from loopc.specialize import fix_inputs, pinned_dims
from loopc.profiles import ShapeProfile
from tests.backend.trt.oracle import build_and_simulate

SQUEEZE_LAST = """<ir_version: 8, opset_import: ["" : 17]>
    g (float[b, c, t] x, int64 mode) => (float[?] y) {
        shape = Shape (x)
        last = Constant <value_int = 2> ()
        t = Gather <axis = 0> (shape, last)
        one = Constant <value_int = 1> ()
        single = Equal (t, one)
        s = If (single) <
            then_branch = g1 () => (float[b, c] squeezed) {
                axes = Constant <value_ints = [2]> ()
                squeezed = Squeeze (x, axes)
            },
            else_branch = g2 () => (float[b, c, t] same) { same = Identity (x) }
        >
        two = Constant <value_float = 2.0> ()
        doubled = Mul (s, two)
        zero = Constant <value_int = 0> ()
        plain = Equal (mode, zero)
        y = If (plain) <
            then_branch = g3 () => (float[?] a) { a = Identity (doubled) },
            else_branch = g4 () => (float[?] b) { b = Neg (doubled) }
        >
    }"""


def oracle(proto: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    return ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]


@pytest.mark.parametrize("time", [1, 3])
def test_pinned_dims_decide_the_squeeze(time):
    proto = onnx.parser.parse_model(SQUEEZE_LAST)
    model = import_model(proto)
    stats = optimize(model, pinned={"x": (None, 4, time)})
    assert stats.get("profile-conditionals.conditionals") == 1, stats
    assert [v.shape[0] for v in model.graph.inputs if v.name == "x"] == ["b"], "the input stays dynamic"
    feeds = {"x": np.random.default_rng(time).standard_normal((2, 4, time)).astype(np.float32),
             "mode": np.array(1, np.int64)}
    _, got = build_and_simulate(model, feeds)
    np.testing.assert_allclose(got["y"], oracle(proto, feeds), rtol=1e-6)


def test_a_dim_left_free_is_not_decided():
    model = import_model(onnx.parser.parse_model(SQUEEZE_LAST))
    stats = optimize(model, pinned={"x": (2, 4, None)})
    assert "profile-conditionals.conditionals" not in stats


def test_condition_dependence_tells_shapes_from_values():
    model = import_model(onnx.parser.parse_model(SQUEEZE_LAST))
    graph = model.graph
    first, second = (node for node in graph.nodes if node.op == "If")
    assert [[v.name for v in vs] for vs in input_dependence(first.inputs[0], graph)] == [[], ["x"]]
    assert [[v.name for v in vs] for vs in input_dependence(second.inputs[0], graph)] == [["mode"], []]


def test_a_fixed_input_becomes_a_constant():
    proto = onnx.parser.parse_model(SQUEEZE_LAST)
    model = import_model(proto)
    fix_inputs(model, {"mode": 0})
    assert [v.name for v in model.graph.inputs] == ["x"]
    optimize(model, pinned={"x": (2, 4, 1)})
    assert not any(node.op == "If" for _, node in model.graph.walk())
    x = np.random.default_rng(0).standard_normal((2, 4, 1)).astype(np.float32)
    _, got = build_and_simulate(model, {"x": x})
    np.testing.assert_allclose(got["y"], oracle(proto, {"x": x, "mode": np.array(0, np.int64)}), rtol=1e-6)


@pytest.mark.parametrize("given, message", [
    ({"rate": 1}, "the model has no input 'rate' (its inputs: x, mode)"),
    ({"mode": 0.5}, "0.5 is not a value of the input's type int64"),
    ({"mode": [1, 2]}, "a value of shape [2] does not fit the input's shape a scalar"),
])
def test_fixing_refuses_what_does_not_fit(given, message):
    model = import_model(onnx.parser.parse_model(SQUEEZE_LAST))
    with pytest.raises(LoopcError) as caught:
        fix_inputs(model, given)
    assert message in str(caught.value)


def test_pinned_dims_come_from_equal_bounds_or_examples():
    profile = ShapeProfile.from_specs(min_shapes="x:1x4x1", opt_shapes="x:4x4x1", max_shapes="x:8x4x1",
                                      examples={"mode": np.array(0), "z": np.zeros((3, 2))})
    assert pinned_dims(profile) == {"x": (None, 4, 1), "mode": (), "z": (3, 2)}


def test_the_command_line_fixes_an_input_and_pins_shapes(tmp_path):
    from click.testing import CliRunner

    from loopc.cli import commands  # noqa: F401  (registers the commands)
    from loopc.cli.main import cli

    proto = onnx.parser.parse_model(SQUEEZE_LAST)
    model, inputs, plan = tmp_path / "squeeze.onnx", tmp_path / "x.npz", tmp_path / "squeeze.plan"
    onnx.save(proto, model)
    x = np.random.default_rng(1).standard_normal((3, 4, 1)).astype(np.float32)
    np.savez(inputs, x=x)
    refused = CliRunner().invoke(cli, ["build", str(model), "-o", str(plan)])
    assert refused.exit_code == 1 and not plan.exists()
    assert "condition depends on the shape of input 'x'" in refused.output and "--shapes" in refused.output
    built = CliRunner().invoke(cli, ["build", str(model), "-o", str(plan), "-i", str(inputs), "--fix-input", "mode=1"])
    assert built.exit_code == 0, built.output
    outputs = tmp_path / "y.npz"
    ran = CliRunner().invoke(cli, ["run", str(model), "-i", str(inputs), "--fix-input", "mode=1", "-o", str(outputs)])
    assert ran.exit_code == 0, ran.output
    want = oracle(proto, {"x": x, "mode": np.array(1, np.int64)})
    np.testing.assert_allclose(np.load(outputs)["y"], want, rtol=1e-6)


def test_a_count_of_data_is_no_shape_a_profile_decides():
    """``numel(nonzero(x)) == 0`` (a detector's empty guard) reads ``x``'s values through NonZero's size: pinning
    ``x``'s dims cannot decide it, and an image is nothing to fix at build time."""
    from loopc.ir.dependence import deciding_hint

    model = import_model(onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 17]>
        g (float[4] x) => (int64[?] y) {
            hits = NonZero (x)
            n = Size (hits)
            zero = Constant <value_int = 0> ()
            none = Equal (n, zero)
            y = If (none) <
                then_branch = g1 () => (int64 e) { e = Constant <value_int = 0> () },
                else_branch = g2 () => (int64[1, ?] h) { h = Identity (hits) }
            >
        }"""))
    guard = next(node for node in model.graph.nodes if node.op == "If")
    assert [[v.name for v in vs] for vs in input_dependence(guard.inputs[0], model.graph)] == [["x"], []]
    assert deciding_hint(guard) == "its condition depends on the data of input 'x', which no build-time choice decides"

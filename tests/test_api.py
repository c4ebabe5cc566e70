"""The Python API speaks as the commands do: the same options as keywords, inputs as a mapping or an ``.npz``,
every caller mistake a ``LoopcError`` naming the keyword, warnings attributed to the caller's line."""

from __future__ import annotations

import inspect
import pathlib
import re
import warnings

import numpy as np
import onnxruntime as ort
import pytest

import loopc
from loopc.cli.main import SUBCOMMANDS, cli
from loopc.trt import is_rtx

SAMPLES = pathlib.Path(__file__).resolve().parents[1] / "samples"
DECODER = SAMPLES / "greedy_gru_decoder.onnx"
DECODER_INPUTS = SAMPLES / "greedy_gru_decoder_inputs.npz"
RUNNING_SUM = SAMPLES / "running_sum.onnx"

#: Options a command has that its function does not take, and why.
CLI_ONLY = {
    "help": "click's", "verbose": "logging is the caller's to configure", "output": "a positional argument",
    "report": "the function returns the report", "max-tensor-size": "loopc.limits.tensor_limit() as a context",
    "O": "disable=loopc.passes.OPTIMIZATIONS", "reference": "loopc.check.compare", "rtol": "loopc.check.compare",
    "atol": "loopc.check.compare",
}


def onnxruntime_outputs(model: pathlib.Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return {out.name: value for out, value in zip(session.get_outputs(), session.run(None, feeds))}


@pytest.mark.parametrize("command", ["build", "run", "export"])
def test_every_option_of_a_command_is_a_keyword_of_its_function(command: str) -> None:
    clicked = cli.get_command(None, command)  # type: ignore[arg-type]
    flags = {max(param.opts, key=len).lstrip("-") for param in clicked.params if param.param_type_name == "option"}
    keywords = set(inspect.signature(getattr(loopc, command)).parameters)
    missing = {flag for flag in flags if flag not in CLI_ONLY and flag.replace("-", "_") not in keywords}
    assert not missing, f"loopc.{command} lacks keywords for {sorted(missing)}"
    assert SUBCOMMANDS[command][0].startswith("loopc.cli")


@pytest.mark.parametrize("name", ["build", "compile", "run", "export", "simulate"])
def test_each_function_documents_its_own_keywords(name: str) -> None:
    function = getattr(loopc, name)
    doc = inspect.getdoc(function) or ""
    assert "see :func:" not in doc.splitlines()[0]
    own = [p for p in inspect.signature(function).parameters if p not in ("model", "output", "network", "inputs")]
    undocumented = [p for p in own if not re.search(rf"\b{p}\b", doc)]
    assert not undocumented, f"loopc.{name}'s docstring does not say what {undocumented} do"


def test_run_takes_an_npz_path_or_a_mapping_and_matches_onnxruntime() -> None:
    feeds = dict(np.load(DECODER_INPUTS))
    by_path = loopc.run(DECODER, DECODER_INPUTS)
    by_mapping = loopc.run(str(DECODER), feeds)
    want = onnxruntime_outputs(DECODER, feeds)
    assert list(by_path) == list(want)
    for name, value in want.items():
        np.testing.assert_array_equal(by_path[name], value)
        np.testing.assert_array_equal(by_mapping[name], value)


def test_run_in_half_precision_stays_near_onnxruntime() -> None:
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    want = onnxruntime_outputs(RUNNING_SUM, {"x": x})
    for flags in ({"fp16": True}, {"bf16": True}, {"fp16": True, "fp16_state": True}):
        got = loopc.run(RUNNING_SUM, {"x": x}, **flags)
        for name, value in want.items():
            scale = float(np.abs(value).max())
            assert np.abs(got[name] - value).max() <= 6e-2 * scale, (flags, name)


def test_build_takes_shapes_as_text_or_a_mapping(tmp_path: pathlib.Path) -> None:
    as_text = loopc.build(RUNNING_SUM, tmp_path / "a.plan", shapes="x:5x3", target="SM86")
    assert as_text.target == ("sm86" if is_rtx() else "the GPU present")
    assert as_text.tensorrt.split()[0] in ("tensorrt", "tensorrt_rtx")
    as_mapping = loopc.build(RUNNING_SUM, tmp_path / "b.plan", shapes={"x": (5, 3)})
    assert as_text.inputs["x"].source == as_mapping.inputs["x"].source == "static"
    pinned = loopc.build(DECODER, tmp_path / "c.plan", inputs=DECODER_INPUTS)
    assert pinned.inputs["max_len"].source == "inputs" and pinned.engine_bytes > 0


def test_export_takes_the_commands_keywords(tmp_path: pathlib.Path) -> None:
    report = loopc.export(DECODER, tmp_path / "d.onnx", max_trips=16, disable=["loop-distribution"])
    assert report.optimizations["loop-distribution"] is False
    feeds = dict(np.load(DECODER_INPUTS))
    want, got = onnxruntime_outputs(DECODER, feeds), onnxruntime_outputs(tmp_path / "d.onnx", feeds)
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda tmp: loopc.run(RUNNING_SUM, 42), "inputs must be arrays by input name (a dict) or an .npz path"),
        (lambda tmp: loopc.run(RUNNING_SUM, tmp / "missing.npz"), "missing.npz"),
        (lambda tmp: loopc.run(RUNNING_SUM, {"x": np.zeros((5, 3), np.float32)}, fp16=True, bf16=True),
         "fp16= and bf16= ask for two half types"),
        (lambda tmp: loopc.compile(RUNNING_SUM, fp16_state=True), "fp16_state= puts loop state in the half type"),
        (lambda tmp: loopc.compile(RUNNING_SUM, disable=["no-such-pass"]), "disable names 'no-such-pass'"),
        (lambda tmp: loopc.build(RUNNING_SUM, tmp / "x.plan", shapes="x:5xQ"), "dimensions must be integers"),
        (lambda tmp: loopc.build(RUNNING_SUM, tmp / "x.plan", shapes={"y": (5, 3)}),
         "shapes= names y, which the model has no input called"),
        (lambda tmp: loopc.build(RUNNING_SUM, tmp / "x.plan", inputs={"x": np.zeros((2, 2), np.float32)}),
         "inputs=: input 'x'"),
        (lambda tmp: loopc.run(RUNNING_SUM, {"x": np.zeros((5, 3))}, executor="gpu"), "unknown executor 'gpu'"),
        (lambda tmp: loopc.compile(tmp / "nowhere.onnx"), "nowhere.onnx"),
    ],
)
def test_caller_mistakes_are_loopc_errors_naming_the_keyword(tmp_path: pathlib.Path, call, message: str) -> None:
    with pytest.raises(loopc.LoopcError, match=re.escape(message)):
        call(tmp_path)


def test_default_profile_warnings_point_at_the_callers_line(tmp_path: pathlib.Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        loopc.build(DECODER, tmp_path / "d.plan")
    (warning,) = [w for w in caught if "max_len" in str(w.message)]
    assert (warning.filename, warning.lineno) == (__file__, line)
    assert "set them with shapes=/min_shapes=/opt_shapes=/max_shapes= or inputs=" in str(warning.message)
    assert "--" not in str(warning.message)

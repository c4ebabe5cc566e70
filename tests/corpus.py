"""Corpora of real models: manifests of exports with example inputs and the framework's own outputs.

A manifest is a TOML file with one ``[[model]]`` table per case::

    [[model]]
    name = "keras_lstm"
    path = "keras_lstm.onnx"                  # paths are relative to the manifest (an OpenVINO IR: its .xml)
    inputs = "keras_lstm.inputs.npz"          # keyed by the model's input names
    expected = "keras_lstm.expected.npz"      # keyed by its output names, from the framework's eager run
    about = "Keras LSTM, tf2onnx 1.16, opset 17"
    rtol = 1e-4                               # optional (default 1e-4 / atol 1e-5)
    max-trips = 64                            # optional: the bound a user must give (an unbounded while loop)
    loopc-refuses = "fragment of the refusal" # optional: a known limit, stated by loopc's error

Each case is tried the way a user would: ``loopc build`` with no flags (then with its
``max-trips``), ``loopc run`` on the inputs compared with the expected outputs, and the same
with TensorRT's own ONNX parser for comparison (``benchmarks/corpus_table.py``).
"""

from __future__ import annotations

import os
import pathlib
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from loopc.errors import LoopcError
from loopc.fileio import load_arrays
from loopc.spelling import spelled

if TYPE_CHECKING:
    import onnx

KEYS = {"name", "path", "inputs", "expected", "about", "rtol", "atol", "max-trips", "loopc-refuses"}


@dataclass(frozen=True)
class Case:
    """One model of a manifest, with everything resolved to paths."""

    name: str
    suite: str
    model: pathlib.Path
    inputs: pathlib.Path
    expected: pathlib.Path
    about: str = ""
    rtol: float = 1e-4
    atol: float = 1e-5
    max_trips: int | None = None
    refusal: str | None = None

    @property
    def id(self) -> str:
        return f"{self.suite}/{self.name}"


@dataclass
class Attempt:
    """What one try gave: success, or the one-line error; for runs, the largest error against expected."""

    ok: bool
    detail: str = ""
    seconds: float = 0.0
    max_error: float | None = None

    def cell(self, width: int = 90) -> str:
        """The attempt as a Markdown table cell: ``yes (max error)`` or ``no: why``."""
        if self.ok:
            return "yes" if self.max_error is None else f"yes ({self.max_error:.1e})"
        text = self.detail.replace("|", "/")
        return "no: " + (text if len(text) <= width else text[: width - 1] + "…")


def load_manifest(path: str | os.PathLike[str]) -> list[Case]:
    """The cases of one manifest; a malformed one is a :class:`LoopcError` naming the case and key."""
    manifest = pathlib.Path(path)
    try:
        tables = tomllib.loads(manifest.read_text()).get("model", [])
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise LoopcError(f"{manifest}: not a readable manifest ({exc})") from None
    cases = []
    for k, table in enumerate(tables):
        where = f"{manifest}: model #{k + 1} ({table.get('name', '?')})"
        unknown = set(table) - KEYS
        missing = {"name", "path", "inputs", "expected"} - set(table)
        if unknown or missing:
            raise LoopcError(f"{where}: unknown keys {sorted(unknown)}, missing keys {sorted(missing)}")
        here = manifest.parent
        cases.append(Case(
            table["name"], here.name, here / table["path"], here / table["inputs"], here / table["expected"],
            table.get("about", ""), float(table.get("rtol", 1e-4)), float(table.get("atol", 1e-5)),
            table.get("max-trips"), table.get("loopc-refuses"),
        ))
    return cases


def load_corpus(root: str | os.PathLike[str]) -> list[Case]:
    """Every case of every ``cases.toml`` below ``root``, in a stable order."""
    return [case for manifest in sorted(pathlib.Path(root).glob("*/cases.toml")) for case in load_manifest(manifest)]


def build_with_loopc(case: Case, max_trips: int | None = None, pin_inputs: bool = False) -> Attempt:
    """``loopc build MODEL -o X.plan`` (with ``--max-trips`` when given, ``--inputs`` when pinned), nothing else."""
    from loopc.compiler import build

    inputs = case.inputs if pin_inputs else None
    with spelled("command line"):  # its refusals read as the command's
        return _timed(lambda out: build(case.model, out, max_trips=max_trips, inputs=inputs, warn=lambda message: None))


def build_with_parser(case: Case) -> Attempt:
    """TensorRT's own ONNX parser and builder, with the same default profile loopc gives; an OpenVINO IR case is
    not for it (it reads ONNX only), which is said rather than tried."""
    if case.model.suffix == ".xml":
        return Attempt(False, "TensorRT's ONNX parser reads ONNX, not OpenVINO IR")
    return _timed(lambda out: pathlib.Path(out).write_bytes(parser_plan(case.model)))


def parser_plan(model: onnx.ModelProto | str | os.PathLike[str]) -> bytes:
    """The plan TensorRT's own ONNX parser and builder make of ``model`` (a path or an ``onnx.ModelProto``), with
    the default profile loopc gives."""
    import onnx

    from loopc.profiles import ShapeProfile
    from loopc.trt.config import build_serialized, builder_config
    from loopc.trt.onnx_parser import parse_onnx

    parsed = parse_onnx(model)
    proto = model if isinstance(model, onnx.ModelProto) else onnx.load(model, load_external_data=False)
    dims = {vi.name: [d.dim_param or d.dim_value or None for d in vi.type.tensor_type.shape.dim]
            for vi in proto.graph.input}
    cfg = builder_config(parsed.session)
    ShapeProfile().apply(parsed.session.builder, parsed.network, cfg, dim_names=dims, warn=lambda m: None)
    return build_serialized(parsed.session, parsed.network, cfg)


def run(case: Case, frontend: str = "loopc") -> Attempt:
    """Simulate the model on the case's inputs and compare with its expected outputs."""
    from loopc import api

    start = time.perf_counter()
    try:
        got = api.run(case.model, load_arrays(case.inputs), frontend=frontend, max_trips=case.max_trips)
    except Exception as exc:  # noqa: BLE001  (an internal error is a result here, reported as such)
        return Attempt(False, _one_line(exc), time.perf_counter() - start)
    attempt = compare(got, load_arrays(case.expected), case.rtol, case.atol)
    attempt.seconds = time.perf_counter() - start
    return attempt


def compare(got: dict[str, np.ndarray], expected: dict[str, np.ndarray], rtol: float, atol: float) -> Attempt:
    """``np.allclose`` per output (Polygraphy's rule: ``|got - want| <= atol + rtol * |want|``)."""
    worst = 0.0
    for name, want in expected.items():
        if name not in got:
            return Attempt(False, f"output {name!r} missing (got {sorted(got)})")
        value = np.asarray(got[name])
        if value.shape != want.shape:
            return Attempt(False, f"output {name!r} has shape {value.shape}, expected {want.shape}")
        if value.size:
            error = np.abs(value.astype(np.float64) - want.astype(np.float64))
            worst = max(worst, float(error.max()))
            if not np.all(error <= atol + rtol * np.abs(want.astype(np.float64))):
                return Attempt(False, f"output {name!r} differs by up to {error.max():.3g}", max_error=worst)
    return Attempt(True, max_error=worst)


def openvino_outputs(xml: str | os.PathLike[str], inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The oracle for an OpenVINO IR: OpenVINO's CPU plugin on the same IR, at f32 inference precision (it
    computes in bf16 on CPUs that have it otherwise). Outputs keyed by ``get_any_name()``, in order."""
    import openvino as ov  # a test and benchmark dependency, not loopc's

    core = ov.Core()
    compiled = core.compile_model(core.read_model(os.fspath(xml)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    names = [port.get_any_name() for port in compiled.inputs]
    if sorted(names) != sorted(inputs):
        raise ValueError(f"{xml}: inputs {sorted(inputs)} do not match the IR's {sorted(names)}")
    # ov.Tensor keeps a 0-d array a scalar (a bare ndarray may be fed as [1]).
    feeds = {name: ov.Tensor(np.array(inputs[name], copy=True, order="C")) for name in names}
    result = compiled.create_infer_request().infer(feeds)
    outputs: dict[str, np.ndarray] = {}
    for port in compiled.outputs:
        if port.get_any_name() in outputs:
            raise ValueError(f"{xml}: two outputs are both named {port.get_any_name()!r}")
        outputs[port.get_any_name()] = np.asarray(result[port])
    return outputs


def _timed(step: Callable[[str], Any]) -> Attempt:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="loopc-corpus-") as tmp:
        try:
            step(os.path.join(tmp, "model.plan"))
        except Exception as exc:  # noqa: BLE001
            return Attempt(False, _one_line(exc), time.perf_counter() - start)
    return Attempt(True, seconds=time.perf_counter() - start)


def _one_line(exc: BaseException) -> str:
    kind = "" if isinstance(exc, LoopcError) else f"internal error: {type(exc).__name__}: "
    text = str(exc).strip().splitlines()
    return kind + (text[0] if text else "")

"""Inputs, reference outputs and the comparison of ``loopc check``'s ``numbers`` check.

References are an independent runtime on the same model file (onnxruntime, the OpenVINO runtime
computing in f32) or golden outputs saved earlier: a ``.npz`` keyed by output name, or the JSON
``polygraphy run --save-outputs`` writes. Comparison is Polygraphy's own comparator, so a tolerance
means here what it means in ``polygraphy run``: an element passes when its absolute error is within
``atol`` or its relative error within ``rtol``. Integer and boolean outputs (tokens, indices, masks) are equal or
not, element by element, whatever the tolerances: a report says how many elements differ, not an error.

A half-precision build's ``precision`` check compares each output with the float32 network's by scale
(:func:`compare_half`): elementwise relative error means little where half rounds small values to zero.
"""

from __future__ import annotations

import math
import pathlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from loopc.check.results import OutputComparison
from loopc.errors import LoopcError
from loopc.fileio import check_readable, load_arrays


def load_inputs(path: pathlib.Path) -> dict[str, np.ndarray]:
    """An ``.npz`` of arrays by input name, or Polygraphy's ``--save-inputs`` JSON (its first feed)."""
    if path.suffix.lower() != ".json":
        return load_arrays(path)
    feeds = _polygraphy_json(path, "inputs")
    if not isinstance(feeds, list) or not feeds or not isinstance(feeds[0], dict):
        raise LoopcError(f"inputs {path}: not Polygraphy saved inputs (`polygraphy run --save-inputs`): expected a "
                         "list of feeds")
    return _arrays(feeds[0], path)


def reference_outputs(reference: str | pathlib.Path, model: pathlib.Path, inputs: Mapping[str, np.ndarray],
                      weights: pathlib.Path | None = None) -> dict[str, np.ndarray]:
    """The outputs ``reference`` gives for ``inputs``: onnxruntime or OpenVINO running ``model`` (an OpenVINO IR
    with its ``weights``), or golden outputs saved in a file."""
    if reference == "onnxruntime":
        return _onnxruntime(model, inputs)
    if reference == "openvino":
        return _openvino(model, weights, inputs)
    path = pathlib.Path(reference)
    if path.suffix.lower() == ".npz":
        return load_arrays(path)
    results = _polygraphy_json(path, "outputs")
    runs = getattr(results, "lst", None)
    if not runs:
        raise LoopcError(f"reference {path}: not Polygraphy saved outputs (`polygraphy run --save-outputs`)")
    runner, iterations = runs[0]
    if len(runs) > 1:
        raise LoopcError(f"reference {path}: holds the outputs of {len(runs)} runners "
                         f"({', '.join(name for name, _ in runs)}); save one runner's outputs")
    if len(iterations) != 1:
        raise LoopcError(f"reference {path}: runner {runner} saved {len(iterations)} iterations; the check runs one "
                         "feed, so save one (the default --iterations 1)")
    return _arrays(dict(iterations[0]), path)


def compare(outputs: Mapping[str, np.ndarray], reference: Mapping[str, np.ndarray], rtol: float,
            atol: float) -> list[OutputComparison]:
    """Every reference output against the model's: floats by Polygraphy's ``simple`` comparator, other types exactly."""
    from polygraphy.comparator import IterationResult
    from polygraphy.comparator.compare import SimpleCompareFunc
    from polygraphy.logger import G_LOGGER

    compare_func = SimpleCompareFunc(rtol=rtol, atol=atol, check_shapes=True)

    def judge(name: str, got: np.ndarray, wanted: np.ndarray) -> OutputComparison:
        shape = list(got.shape)
        if got.shape != wanted.shape:
            return OutputComparison(name, False, shape=shape, reason=f"shape {shape}, reference {list(wanted.shape)}")
        if wanted.dtype.kind in "biu":  # tokens, indices, lengths, masks: equal or not, by element
            return _exact(name, got, wanted)
        if got.size == 0:
            return OutputComparison(name, True, 0.0, 0.0, shape)
        # its per-output report is for terminals (ours is the table); 0/0 relative errors are its business
        with G_LOGGER.verbosity(G_LOGGER.CRITICAL), np.errstate(divide="ignore", invalid="ignore"):
            result = compare_func(IterationResult({name: got}, runner_name="loopc"),
                                  IterationResult({name: wanted}, runner_name="reference"))[name]
        max_abs = _finite(result.max_absdiff)
        max_rel = 0.0 if max_abs == 0.0 else _finite(result.max_reldiff)
        return OutputComparison(name, bool(result), max_abs, max_rel, shape,
                                "" if bool(result) else f"beyond rtol {rtol:g} / atol {atol:g}")

    return _each_output(outputs, reference, "the model", judge)


def compare_half(outputs: Mapping[str, np.ndarray], fp32: Mapping[str, np.ndarray],
                 tolerance: float) -> list[OutputComparison]:
    """Every float32 output against the half network's: a float output passes when its largest error is at most
    ``tolerance`` of the float32 output's largest magnitude (non-finite values must agree), any other is equal."""

    def judge(name: str, got: np.ndarray, wanted: np.ndarray) -> OutputComparison:
        shape = list(got.shape)
        if got.shape != wanted.shape or got.dtype != wanted.dtype:
            return OutputComparison(name, False, shape=shape, reason=f"{got.dtype}{shape}, float32 network "
                                    f"{wanted.dtype}{list(wanted.shape)}")
        if wanted.dtype.kind != "f":
            return _exact(name, got, wanted)
        finite = np.isfinite(wanted)
        if not np.array_equal(got[~finite], wanted[~finite], equal_nan=True) or not np.isfinite(got[finite]).all():
            return OutputComparison(name, False, shape=shape, reason="its NaN or infinite elements differ from the "
                                    "float32 network's")
        error = float(np.abs(got[finite].astype(np.float64) - wanted[finite]).max(initial=0.0))
        scale = float(np.abs(wanted[finite]).max(initial=0.0))
        of_scale = error / scale if scale else (0.0 if error == 0 else math.inf)
        passed = of_scale <= tolerance
        return OutputComparison(name, passed, error, shape=shape, of_scale=of_scale if math.isfinite(of_scale)
                                else None, reason="" if passed else f"beyond {tolerance:g} of its scale")

    return _each_output(outputs, fp32, "the half network", judge)


def _each_output(outputs: Mapping[str, np.ndarray], wanted: Mapping[str, np.ndarray], whose: str,
                 judge: Callable[[str, np.ndarray, np.ndarray], OutputComparison]) -> list[OutputComparison]:
    """``judge`` on each wanted output and the one of the same name in ``outputs`` (``whose``); a missing one fails."""
    return [OutputComparison(name, False, reason=f"{whose} has no output {name!r}") if name not in outputs
            else judge(name, np.asarray(outputs[name]), np.asarray(want)) for name, want in wanted.items()]


def _exact(name: str, got: np.ndarray, wanted: np.ndarray) -> OutputComparison:
    """A non-float output of ``wanted``'s shape: it passes when every element is equal; no error is measured (a
    relative error of a token id means nothing), only how many elements differ."""
    differ = int(np.count_nonzero(got != wanted))
    return OutputComparison(name, not differ, shape=list(got.shape),
                            reason=f"{differ} of {wanted.size} elements differ" if differ else "")


def _finite(value: Any) -> float | None:
    number = float(value)
    return number if np.isfinite(number) else None


def _polygraphy_json(path: pathlib.Path, what: str) -> Any:
    from polygraphy.json import load_json

    check_readable(path, what)
    try:
        return load_json(str(path))
    except Exception as exc:  # noqa: BLE001  (Polygraphy raises whatever its decoders do)
        raise LoopcError(f"{what} {path}: not readable as Polygraphy JSON ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())[:200]})") from None


def _arrays(values: Mapping[str, Any], path: pathlib.Path) -> dict[str, np.ndarray]:
    arrays = {}
    for name, value in values.items():
        if not isinstance(value, np.ndarray):
            raise LoopcError(f"{path}: {name!r} is a {type(value).__name__}, not an array")
        arrays[str(name)] = value
    return arrays


def _onnxruntime(model: pathlib.Path, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    try:
        import onnxruntime as ort
    except ImportError:
        raise LoopcError("reference 'onnxruntime' needs the onnxruntime package (pip install 'loopc[check]')") from None
    try:
        options = ort.SessionOptions()
        options.log_severity_level = 3  # its shape warnings are not the check's findings
        session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        names = [out.name for out in session.get_outputs()]
        return dict(zip(names, session.run(names, dict(inputs))))
    except Exception as exc:  # noqa: BLE001  (onnxruntime raises its own exception types)
        raise LoopcError(f"onnxruntime could not run {model.name}: {' '.join(str(exc).split())[:300]}") from None


def _openvino(model_path: pathlib.Path, weights: pathlib.Path | None,
              inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    try:
        import openvino as ov
    except ImportError:
        raise LoopcError("reference 'openvino' needs the openvino package (pip install 'loopc[openvino]')") from None
    try:
        core = ov.Core()
        model = core.read_model(str(model_path), str(weights) if weights else None)
        # its CPU plugin computes in bf16 on CPUs that have it unless told otherwise
        compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        results = compiled(dict(inputs))
        return {out.get_any_name(): np.asarray(results[out]) for out in compiled.outputs}
    except Exception as exc:  # noqa: BLE001  (OpenVINO raises RuntimeError and its own types)
        raise LoopcError(f"OpenVINO could not run {model_path.name}: {' '.join(str(exc).split())[:300]}") from None

"""Running the checks of a manifest: build each model for each target, compare its numbers, fingerprint it.

Each model is compiled once (import, passes, TensorRT network), built once per target with the real
builder, and run once: by the simulator (the network every target is built from), or with
``executor="trt"`` by each engine whose target is this machine's GPU, through Polygraphy. A model's
failure never stops the others; a failure of loopc itself (an internal error) is an ``error``.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import pathlib
import tempfile
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from loopc import __version__
from loopc.check.baseline import differences
from loopc.check.compare import compare, compare_half, load_inputs, reference_outputs
from loopc.check.manifest import Entry, Invalid, Manifest
from loopc.check.results import ERROR, FAILED, PASSED, SKIPPED, CheckResult, OutputComparison, Report, \
    TargetResult
from loopc.errors import LoopcError
from loopc.fileio import OutputFile
from loopc.precision import Precision

Progress = Callable[[TargetResult, int, int], None]


@dataclasses.dataclass
class Options:
    executor: str = "sim"
    baseline: dict[str, dict[str, Any]] | None = None  #: fingerprints by ``model@target``; None: no comparison
    update_baseline: bool = False
    engines: pathlib.Path | None = None  #: keep the engines here (``model@target.plan``)
    shard: str | None = None


def run_manifest(manifest: Manifest, entries: Iterable[Entry | Invalid], options: Options,
                 progress: Progress | None = None) -> Report:
    """Check ``entries`` (all of ``manifest``'s, or one shard's) and return what was found."""
    from loopc.trt import trt

    entries = list(entries)
    started = datetime.datetime.now().replace(microsecond=0)
    clock = time.perf_counter()
    report = Report(str(manifest.path), __version__, trt().__version__, options.executor, options.shard,
                    started.isoformat())
    total = sum(len(e.targets) if isinstance(e, Entry) else 1 for e in entries)
    with tempfile.TemporaryDirectory(prefix="loopc-check-") as scratch:
        engines = options.engines or pathlib.Path(scratch)
        for entry in entries:
            for result in _check_entry(entry, options, engines):
                report.results.append(result)
                if progress:
                    progress(result, len(report.results), total)
    report.seconds = time.perf_counter() - clock
    return report


def _check_entry(entry: Entry | Invalid, options: Options, engines: pathlib.Path) -> list[TargetResult]:
    if isinstance(entry, Invalid):
        return [TargetResult(entry.name, "-", entry.source, entry.position,
                             [CheckResult("manifest", FAILED, entry.reason)])]
    results = [TargetResult(entry.name, target, entry.source, entry.position, precision=str(entry.precision))
               for target in entry.targets]
    start = time.perf_counter()
    try:
        inputs = load_inputs(entry.inputs)
        compiled = _compile(entry, entry.precision)
    except Exception as exc:  # noqa: BLE001  (each model stands alone; _failure tells ours from loopc's)
        status, message = _failure(exc)
        for result in results:
            result.checks += [CheckResult("build", status, message, seconds=time.perf_counter() - start),
                              *[CheckResult(check, SKIPPED, "not built") for check in _output_checks(entry)],
                              CheckResult("fingerprint", SKIPPED, "not built")]
        return results
    compile_seconds = time.perf_counter() - start
    plans: dict[str, bytes] = {}
    for result in results:
        plans[result.target] = _build(entry, compiled, inputs, result, engines, compile_seconds)
    built = [r for r in results if plans.get(r.target)]
    for result in results:
        if result not in built:
            result.checks += [CheckResult(check, SKIPPED, "not built") for check in _output_checks(entry)]
    if built:
        _numbers(entry, compiled, inputs, built, plans, options.executor)
    for result in results:
        _fingerprint(entry, result, options)
    return results


def _output_checks(entry: Entry) -> list[str]:
    """The checks of what the engine computes."""
    return ["numbers", *(["precision"] if entry.precision else [])]


def _compile(entry: Entry, precision: Precision) -> Any:
    from loopc.compiler import compile

    return compile(entry.path, max_trips=entry.max_trips, weights=entry.weights, precision=precision)


def _build(entry: Entry, compiled: Any, inputs: dict[str, np.ndarray], result: TargetResult,
           engines: pathlib.Path, compile_seconds: float) -> bytes:
    """Build for ``result.target``; on success the fingerprint is started and the plan returned."""
    from loopc.compiler import build_compiled
    from loopc.fingerprint import describe_network
    from loopc.profiles import ShapeProfile

    start = time.perf_counter()
    plan = engines / f"{entry.name}@{result.target}.plan"
    try:
        profile = ShapeProfile.from_specs(entry.shapes, None, None, None, inputs)
        report = build_compiled(compiled, OutputFile(plan, "engine"), shapes=profile, inputs=inputs,
                                target=result.target, warn=lambda message: None)
    except Exception as exc:  # noqa: BLE001
        status, message = _failure(exc)
        result.checks.append(CheckResult("build", status, message, seconds=time.perf_counter() - start))
        return b""
    seconds = compile_seconds + report.build_seconds
    result.checks.append(CheckResult("build", PASSED, seconds=seconds,
                                     details=f"compile {compile_seconds:.2f} s, build {report.build_seconds:.2f} s, "
                                             f"engine {report.engine_bytes} bytes"))
    reference = reference_build_seconds(result.target)
    result.fingerprint = {
        **describe_network(compiled.network).to_dict(),
        **({"precision": result.precision} if entry.precision else {}),
        "engine_bytes": report.engine_bytes,
        "build_seconds": round(report.build_seconds, 3),
        "build_ratio": round(report.build_seconds / reference, 3) if reference > 0 else None,
        "tensorrt": _trt_version(),
        "loopc": __version__,
    }
    return plan.read_bytes()


@dataclasses.dataclass
class _Run:
    """One target's outputs, or why it has none (the status and message its checks take)."""

    outputs: dict[str, np.ndarray] | None = None
    status: str = ""
    message: str = ""
    seconds: float = 0.0


def _numbers(entry: Entry, compiled: Any, inputs: dict[str, np.ndarray], built: list[TargetResult],
             plans: dict[str, bytes], executor: str) -> None:
    """Run each built target and record its ``numbers`` check against the reference and, for a half-precision
    build, its ``precision`` check against the float32 network (which ``numbers`` then checks instead)."""
    from loopc.trt import is_rtx

    runs = _runs(compiled, inputs, built, plans, executor, measure=True)
    fp32, halves = runs, {}
    if entry.precision and executor == "sim" and not is_rtx():
        halves = {result.target: CheckResult("precision", SKIPPED, "datacenter TensorRT picks the half layers "
                                             "itself (a builder flag); --executor trt measures them")
                  for result in built}
    elif entry.precision:
        fp32 = _fp32_runs(entry, inputs, built, plans, executor)
        halves = {result.target: _precision(entry, result, runs[result.target], fp32[result.target])
                  for result in built}
    try:
        reference = reference_outputs(entry.reference, entry.path, inputs, entry.weights)
    except Exception as exc:  # noqa: BLE001
        status, message = _failure(exc)
        reference, unreadable = None, CheckResult("numbers", status, f"reference: {message}")
    for result in built:
        run = fp32[result.target]
        if reference is None:
            result.checks.append(unreadable)
        elif run.outputs is None:
            result.checks.append(CheckResult("numbers", run.status, run.message, seconds=run.seconds))
        else:
            result.outputs = compare(run.outputs, reference, entry.rtol, entry.atol)
            result.checks.append(_verdict(
                "numbers", result.outputs, run.seconds,
                lambda o: f"max abs {o.max_abs:.3g}{_rel(o)}",
                lambda o: f"output {o.name!r}: max abs error {o.max_abs:.3g}{_rel(o)}, beyond rtol "
                          f"{entry.rtol:g} / atol {entry.atol:g}"))
        if result.target in halves:
            result.checks.append(halves[result.target])


def _runs(compiled: Any, inputs: dict[str, np.ndarray], built: list[TargetResult], plans: dict[str, bytes],
          executor: str, measure: bool = False) -> dict[str, _Run]:
    """Each target's outputs: one simulator run for all (they are built from one network), or each engine's.

    ``measure``: the fingerprints take the simulator's MACs per iteration, as the inputs made them.
    """
    if executor != "sim":
        return {result.target: _run_engine(compiled, inputs, result.target, plans[result.target])
                for result in built}
    from loopc.feeds import input_specs, prepare_inputs
    from loopc.fingerprint import MacCounter, describe_network
    from loopc.sim import Simulator

    start = time.perf_counter()
    counter = MacCounter()
    try:
        feeds = prepare_inputs(input_specs(compiled.network, compiled.model), inputs)
        run = _Run(Simulator(compiled.network, observer=counter).run(feeds))
    except Exception as exc:  # noqa: BLE001
        run = _Run(None, *_failure(exc))
    run.seconds = time.perf_counter() - start
    if measure and run.outputs is not None:
        measured = describe_network(compiled.network, counter.average).to_dict()["loops"]
        for result in built:
            if result.fingerprint is not None:
                result.fingerprint["loops"] = measured  # where shapes are dynamic
    return {result.target: run for result in built}


def _fp32_runs(entry: Entry, inputs: dict[str, np.ndarray], built: list[TargetResult], plans: dict[str, bytes],
               executor: str) -> dict[str, _Run]:
    """The float32 network's outputs for a half-precision entry: simulated, or each target's float32 engine."""
    from loopc.compiler import build_plan
    from loopc.profiles import ShapeProfile

    try:
        fp32 = _compile(entry, Precision())
        if executor != "sim":
            profile = ShapeProfile.from_specs(entry.shapes, None, None, None, inputs)
            plans = {result.target: build_plan(fp32, shapes=profile, inputs=inputs, target=result.target,
                                               warn=lambda message: None)[0] for result in built}
    except Exception as exc:  # noqa: BLE001
        status, message = _failure(exc)
        return {result.target: _Run(None, status, f"the float32 build: {message}") for result in built}
    return _runs(fp32, inputs, built, plans, executor)


def _run_engine(compiled: Any, inputs: dict[str, np.ndarray], target: str, plan: bytes) -> _Run:
    """Run ``plan`` on this machine's GPU through Polygraphy, when the GPU is the plan's target."""
    from loopc.feeds import input_specs, prepare_inputs
    from loopc.trt import gpu
    from loopc.trt.engine import run_plan

    here = gpu.compute_capability() or (0, 0)  # the command asked for a GPU before anything ran
    if target != f"sm{here[0]}{here[1]}":
        return _Run(None, SKIPPED, f"the GPU here is sm{here[0]}{here[1]}; an engine for {target} cannot run on it")
    start = time.perf_counter()
    try:
        run = _Run(run_plan(plan, prepare_inputs(input_specs(compiled.network, compiled.model), inputs)))
    except Exception as exc:  # noqa: BLE001
        run = _Run(None, *_failure(exc))
    run.seconds = time.perf_counter() - start
    return run


def _precision(entry: Entry, result: TargetResult, half: _Run, fp32: _Run) -> CheckResult:
    """The half network's (or engine's) outputs against the float32 one's, by scale."""
    if half.outputs is None or fp32.outputs is None:
        failed = half if half.outputs is None else fp32
        return CheckResult("precision", failed.status, failed.message)
    result.against_fp32 = compare_half(half.outputs, fp32.outputs, entry.half_tolerance)
    return _verdict("precision", result.against_fp32, half.seconds + fp32.seconds,
                    lambda o: f"max abs {o.max_abs:.3g}, {_g(o.of_scale)} of scale",
                    lambda o: f"{entry.precision.half} output {o.name!r}: max abs error {o.max_abs:.3g}, "
                              f"{_g(o.of_scale)} of its scale, beyond {entry.half_tolerance:g}")


def _verdict(check: str, outputs: list[OutputComparison], seconds: float, errors: Callable[[OutputComparison], str],
             beyond: Callable[[OutputComparison], str]) -> CheckResult:
    """A comparison as a check: one detail line per output (``errors`` where it has them), and for a failure the
    first failed output (``beyond`` when it failed by tolerance, else its reason) and how many more failed."""
    lines = [f"{o.name}: " + (o.reason or "equal" if o.max_abs is None else
                              errors(o) + (f" ({o.reason})" if o.reason else "")) for o in outputs]
    bad = [o for o in outputs if not o.passed]
    if not bad:
        return CheckResult(check, PASSED, details="\n".join(lines), seconds=seconds)
    first = bad[0]
    message = beyond(first) if first.max_abs is not None else f"output {first.name!r}: {first.reason}"
    if len(bad) > 1:
        message += f" (and {len(bad) - 1} more output(s))"
    return CheckResult(check, FAILED, message, "\n".join(lines), seconds)


def _fingerprint(entry: Entry, result: TargetResult, options: Options) -> None:
    """Compare with the baseline (or record it when updating); a build that failed has nothing to compare."""
    if result.fingerprint is None:
        result.checks.append(CheckResult("fingerprint", SKIPPED, "not built"))
        return
    if options.baseline is None:
        result.checks.append(CheckResult("fingerprint", SKIPPED, "no baseline given (--baseline FILE)"))
        return
    stored = options.baseline.get(result.id)
    if options.update_baseline:
        if stored is not None:
            result.differences = differences(stored, result.fingerprint, entry.thresholds)
        options.baseline[result.id] = result.fingerprint
        result.checks.append(CheckResult("fingerprint", PASSED, details="baseline updated"))
        return
    if stored is None:
        result.checks.append(CheckResult("fingerprint", FAILED, f"no baseline for {result.id}; record one with "
                                         "--update-baseline"))
        return
    result.differences = differences(stored, result.fingerprint, entry.thresholds)
    regressions = [d for d in result.differences if d.regression]
    details = "\n".join(f"{'REGRESSION ' if d.regression else ''}{d.what}: {d.baseline} -> {d.current}"
                        for d in result.differences)
    if regressions:
        first = regressions[0]
        message = f"{first.what}: {first.baseline} -> {first.current}"
        if len(regressions) > 1:
            message += f" (and {len(regressions) - 1} more regression(s))"
        result.checks.append(CheckResult("fingerprint", FAILED, message, details))
    else:
        result.checks.append(CheckResult("fingerprint", PASSED, details=details))


def _failure(exc: BaseException) -> tuple[str, str]:
    """A model's problem is a failure with loopc's one-line message; anything else is loopc's own error."""
    from loopc.errors import InternalError

    if isinstance(exc, LoopcError) and not isinstance(exc, InternalError):
        return FAILED, " ".join(str(exc).split())
    if isinstance(exc, MemoryError):
        return FAILED, "out of memory"
    return ERROR, f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())}"


def _rel(output: OutputComparison) -> str:
    """``, max rel 0.25``; nothing where the relative error is not finite (a reference element is 0 there)."""
    return "" if output.max_rel is None else f", max rel {output.max_rel:.3g}"


def _g(value: float | None) -> str:
    return "?" if value is None else f"{value:.3g}"


def _trt_version() -> str:
    from loopc.trt import trt

    return f"{trt().__name__} {trt().__version__}"


@functools.cache
def reference_build_seconds(target: str) -> float:
    """How long this machine takes to build a fixed small loop network for ``target`` (the best of three).

    Build times are compared as multiples of it, so a baseline recorded on one machine holds on another.
    """
    from loopc.compiler import build_compiled, compile

    model = _reference_model()
    times = []
    with tempfile.TemporaryDirectory(prefix="loopc-reference-") as scratch:
        for k in range(3):
            report = build_compiled(compile(model), OutputFile(pathlib.Path(scratch) / f"{k}.plan", "engine"),
                                    target=target, warn=lambda message: None)
            times.append(report.build_seconds)
    return min(times)


def _reference_model() -> Any:
    """An RNN step in a counted loop: h = tanh(x[t]·W + h·R), 16 trips, hidden 64."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w, r = (numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), name) for name in "WR")
    body = helper.make_graph(
        [helper.make_node("Gather", ["xs", "i"], ["x"], axis=0),
         helper.make_node("MatMul", ["x", "W"], ["xw"]),
         helper.make_node("MatMul", ["h", "R"], ["hr"]),
         helper.make_node("Add", ["xw", "hr"], ["s"]),
         helper.make_node("Tanh", ["s"], ["h_next"]),
         helper.make_node("Identity", ["c"], ["c_next"])],
        "step",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("c_next", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_next", TensorProto.FLOAT, [1, 64])],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "cond", "h0"], ["h"], body=body)],
        "reference",
        [helper.make_tensor_value_info("xs", TensorProto.FLOAT, [16, 1, 64]),
         helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 64])],
        [w, r, numpy_helper.from_array(np.array(16, np.int64), "M"), numpy_helper.from_array(np.array(True), "cond")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

"""Hold the simulator honest with networks NVIDIA's own ONNX parser builds.

For each ONNX backend node test shipped in the ``onnx`` package: import the model with
TensorRT's parser, build it with the real builder (profile pinned to the test's input shapes),
simulate the parsed network and compare with the test's expected outputs. Nothing here was
built by loopc, so agreement is evidence about the simulator, not about our own converters.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from loopc.api import load_network
from loopc.spelling import spelled
from loopc.errors import InternalError, LoopcError
from loopc.sim import Simulator
from loopc.sim.dtypes import is_float
from loopc.sim.registry import supported_layer_types
from loopc.trt.config import builder_config, build_serialized, pin_profile

log = logging.getLogger(__name__)

LOOP_LAYERS = frozenset({"TRIP_LIMIT", "ITERATOR", "RECURRENCE", "LOOP_OUTPUT"})

# Statuses, in the order a case moves through them.
NOT_TENSORS = "inputs/outputs not tensors"
PARSE_FAILED = "frontend rejected"
INTERNAL_ERROR = "internal error"
BUILD_FAILED = "builder rejected"
BUILT = "built, not simulated"
OUT_OF_SCOPE = "layer types out of scope"
WRONG_SHAPE = "parser's network has the wrong output shape"
MATCH = "match"
MISMATCH = "mismatch"
SIM_ERROR = "simulator error"
#: Simulated with outputs of the expected shapes, but drawn at random (a kRANDOM_* fill), so no value
#: can be compared with the test's: such cases are checked statistically by their op's own tests.
RANDOM = "random outputs"


@dataclass
class CaseResult:
    name: str
    status: str
    layer_types: frozenset[str] = frozenset()
    detail: str = ""
    seconds: float = 0.0
    #: Layers inside loop bodies (per iteration, all loops), when the network built.
    loop_layers: int = 0
    #: Import + build (TensorRT's builder) time, when the network built; ``seconds`` adds the rest.
    build_seconds: float = 0.0

    @property
    def built(self) -> bool:
        return self.status in (BUILT, OUT_OF_SCOPE, WRONG_SHAPE, MATCH, MISMATCH, SIM_ERROR, RANDOM)

    @property
    def in_scope(self) -> bool:
        return self.status in (WRONG_SHAPE, MATCH, MISMATCH, SIM_ERROR)

    @property
    def judged(self) -> bool:
        """In scope, and the parser's network could give the expected outputs at all."""
        return self.status in (MATCH, MISMATCH, SIM_ERROR)

    @property
    def has_loop(self) -> bool:
        return bool(self.layer_types & LOOP_LAYERS)


def node_test_cases(pattern: str | None = None) -> list[Any]:
    """The ONNX backend node test cases, optionally only those whose name contains ``pattern``."""
    from onnx.backend.test.case.node import collect_testcases

    with np.errstate(all="ignore"):
        cases = collect_testcases(None)
    return [c for c in cases if pattern is None or pattern in c.name]


def run_case(case: Any, frontend: str = "trt-onnx", max_trips: int | None = None, judge: bool = True) -> CaseResult:
    """Import (with ``frontend``, see :data:`loopc.api.FRONTENDS`), build, simulate and compare one case.

    ``max_trips`` is loopc's --max-trips (TensorRT's parser takes none). Without ``judge`` the case
    stops once built (status :data:`BUILT`): enough to count what a frontend builds."""
    start = time.perf_counter()
    with spelled("command line"):  # refusals read as `loopc run`'s, whose --max-trips this is
        result = _run_case(case, frontend, max_trips, judge)
    result.seconds = time.perf_counter() - start
    return result


def _run_case(case: Any, frontend: str, max_trips: int | None, judge: bool) -> CaseResult:
    name = case.name
    inputs, expected = case.data_sets[0]
    arrays = [a for a in map(_as_array, inputs) if a is not None]
    wanted = [a for a in map(_as_array, expected) if a is not None]
    if len(arrays) < len(inputs) or len(wanted) < len(expected):
        return CaseResult(name, NOT_TENSORS, detail=_refusal(case.model, frontend, max_trips))
    model = case.model
    initializers = {init.name for init in model.graph.initializer}
    input_names = [i.name for i in model.graph.input if i.name not in initializers]
    feeds = dict(zip(input_names, arrays))
    started = time.perf_counter()
    try:
        parsed = load_network(model, frontend, max_trips)
    except LoopcError as exc:
        return CaseResult(name, PARSE_FAILED, detail=str(exc))
    except InternalError as exc:  # a bug of ours, not a refusal: counted apart
        return CaseResult(name, INTERNAL_ERROR, detail=str(exc))
    network = parsed.network
    feeds = {k: v for k, v in feeds.items() if any(network.get_input(i).name == k for i in range(network.num_inputs))}
    try:
        cfg = builder_config(parsed.session)
        pin_profile(parsed.session, network, cfg, feeds)
        build_serialized(parsed.session, network, cfg)
    except LoopcError as exc:
        return CaseResult(name, BUILD_FAILED, detail=str(exc))
    except Exception as exc:  # TensorRT raises plain exceptions for bad profiles
        return CaseResult(name, BUILD_FAILED, detail=f"{type(exc).__name__}: {exc}")
    built_after = time.perf_counter() - started
    types = frozenset(network.get_layer(i).type.name for i in range(network.num_layers))
    if not judge:
        return CaseResult(name, BUILT, types, build_seconds=built_after)
    result = _judge(case, network, types, feeds, wanted)
    result.build_seconds = built_after
    if types & LOOP_LAYERS and result.built:
        from loopc.fingerprint import describe_network

        result.loop_layers = sum(lp.layers_per_iteration for lp in describe_network(network).walk_loops())
    return result


def _judge(case: Any, network: Any, types: frozenset[str], feeds: dict[str, np.ndarray],
           wanted: list[np.ndarray]) -> CaseResult:
    """Simulate a built network and compare its outputs with the case's expected ones."""
    name, model = case.name, case.model
    # In scope: the layer types the simulator runs (its registries say which).
    missing = types - supported_layer_types()
    if missing:
        return CaseResult(name, OUT_OF_SCOPE, types, ", ".join(sorted(missing)))
    output_names = [o.name for o in model.graph.output]
    wrong = declared_shape_mismatch(network, {n: w.shape for n, w in zip(output_names, wanted)})
    if wrong:
        return CaseResult(name, WRONG_SHAPE, types, wrong)
    try:
        sim = Simulator(network)
        feeds = {t.name: feeds[t.name].astype(t.dtype, copy=False) for t in sim.network.inputs}
        got = sim.run(feeds)
    except LoopcError as exc:
        return CaseResult(name, SIM_ERROR, types, str(exc))
    except Exception as exc:
        return CaseResult(name, SIM_ERROR, types, f"{type(exc).__name__}: {exc}")
    random = draws_random(network)
    for out_name, want in zip(output_names, wanted):
        if out_name not in got:
            return CaseResult(name, MISMATCH, types, f"output {out_name!r} missing from the network")
        if random:
            shape = got[out_name].shape
            problem = "" if shape == want.shape else f"shape {shape} != expected {want.shape}"
        else:
            problem = compare(got[out_name], want, case.rtol, case.atol)
        if problem:
            return CaseResult(name, MISMATCH, types, f"{out_name}: {problem}")
    if random:
        return CaseResult(name, RANDOM, types, "a random fill draws the outputs: shapes checked, values not comparable")
    return CaseResult(name, MATCH, types)


def draws_random(network: Any) -> bool:
    """Whether a layer of ``network`` draws random numbers (an IFillLayer in a kRANDOM_* mode)."""
    from loopc.sim.network import downcast

    for i in range(network.num_layers):
        layer = network.get_layer(i)
        if layer.type.name == "FILL" and downcast(layer, "FILL").operation.name != "LINSPACE":
            return True
    return False


def _refusal(model: onnx.ModelProto, frontend: str, max_trips: int | None) -> str:
    """What the frontend says of a model whose interface is not tensors (it should refuse it)."""
    try:
        load_network(model, frontend, max_trips)
    except LoopcError as exc:
        return str(exc)
    return "the frontend accepted a model whose inputs or outputs are not tensors"


def declared_shape_mismatch(network: Any, expected: dict[str, tuple[int, ...]]) -> str:
    """TensorRT's own shape inference (with the profile pinned) against the expected output shapes
    (-1: any length), as a one-line complaint, or "" when they agree.

    A static output dimension that differs from the expected one proves a network wrong without
    running anything (TensorRT's parser gets some ONNX attributes wrong, e.g. RNN ``layout=1``).
    """
    for i in range(network.num_outputs):
        tensor = network.get_output(i)
        want = expected.get(tensor.name)
        declared = tuple(tensor.shape)
        if want is None:
            continue
        if len(declared) != len(want) or any(-1 not in (d, w) and d != w for d, w in zip(declared, want)):
            return f"TensorRT declares output {tensor.name!r} as {declared}; expected {tuple(want)}"
    return ""


def _as_array(value: Any) -> np.ndarray | None:
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value)
    return None  # sequences, optionals, maps


def tolerances(dtype: np.dtype[Any], test_rtol: float, test_atol: float) -> list[tuple[float, float]]:
    """Accepted (rtol, atol) pairs: ours for the precision, or the test's own."""
    if not is_float(dtype):
        return [(0.0, 0.0)]
    if dtype.itemsize >= 4:
        ours = (1e-4, 1e-5)
    elif dtype == np.float16:
        ours = (1e-3, 1e-3)
    else:
        ours = (1e-2, 1e-2)
    return [ours, (test_rtol, test_atol)]


def compare(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str:
    """Empty when ``got`` matches ``want``; otherwise what differs."""
    if got.shape != want.shape:
        return f"shape {got.shape} != expected {want.shape}"
    if want.dtype == np.bool_ or got.dtype == np.bool_:
        bad = np.asarray(got != want.astype(got.dtype))
        return f"{int(bad.sum())} of {bad.size} values differ" if bad.any() else ""
    if not is_float(want.dtype) and not is_float(got.dtype):
        bad = np.asarray(got.astype(np.int64) != want.astype(np.int64))
        return f"{int(bad.sum())} of {bad.size} values differ" if bad.any() else ""
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    for r, a in tolerances(got.dtype if is_float(got.dtype) else want.dtype, rtol, atol):
        if np.allclose(g, w, rtol=r, atol=a, equal_nan=True):
            return ""
    r, a = tolerances(got.dtype if is_float(got.dtype) else want.dtype, rtol, atol)[0]
    bad = ~np.isclose(g, w, rtol=r, atol=a, equal_nan=True)
    with np.errstate(all="ignore"):
        err = np.max(np.abs(g - w)[bad])
    return f"{int(bad.sum())} of {bad.size} values differ, max abs error {err:.3g}"


@dataclass
class Sweep:
    results: list[CaseResult] = field(default_factory=list)

    def by_status(self, status: str) -> list[CaseResult]:
        return [r for r in self.results if r.status == status]

    @property
    def built(self) -> list[CaseResult]:
        return [r for r in self.results if r.built]

    @property
    def in_scope(self) -> list[CaseResult]:
        return [r for r in self.results if r.in_scope]

    @property
    def judged(self) -> list[CaseResult]:
        return [r for r in self.results if r.judged]

    def rate(self, results: Iterable[CaseResult]) -> float:
        listed = list(results)
        return sum(r.status == MATCH for r in listed) / len(listed) if listed else 1.0

    def table(self) -> str:
        scope = self.in_scope
        judged = self.judged
        loops = [r for r in judged if r.has_loop]
        lines = [
            f"{'ONNX node test cases':<40}{len(self.results):>6}",
            f"{'  inputs/outputs are tensors':<40}{len(self.results) - len(self.by_status(NOT_TENSORS)):>6}",
            f"{'  built by TensorRT parser + builder':<40}{len(self.built):>6}",
            f"{'  in scope (listed layer types only)':<40}{len(scope):>6}",
            f"{'    network provably wrong (out shape)':<40}{len(self.by_status(WRONG_SHAPE)):>6}",
            f"{'    judged: simulator can be compared':<40}{len(judged):>6}",
            f"{'  simulator matches expected outputs':<40}{len(self.by_status(MATCH)):>6}"
            f"   {100 * self.rate(judged):.1f}% of judged, {100 * self.rate(scope):.1f}% of in scope",
            f"{'  with loops: judged / matching':<40}{len(loops):>6} / {sum(r.status == MATCH for r in loops)}"
            f"   {100 * self.rate(loops):.1f}%",
        ]
        failures = [r for r in scope if r.status != MATCH]  # wrong-shape cases listed too, for the record
        if failures:
            lines.append("failures by layer type (a case counts under each type it uses):")
            counts: dict[str, int] = {}
            for r in failures:
                for t in r.layer_types:
                    counts[t] = counts.get(t, 0) + 1
            for t, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
                lines.append(f"  {t:<24}{n:>4}")
            lines.append("failing cases:")
            lines.extend(f"  {r.name}: {r.status}: {r.detail[:160]}" for r in failures)
        return "\n".join(lines)


def sweep(cases: Iterable[Any], frontend: str = "trt-onnx") -> Iterator[CaseResult]:
    for case in cases:
        yield run_case(case, frontend)

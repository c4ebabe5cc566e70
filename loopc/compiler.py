"""``loopc.compile`` and ``loopc.build``: model file → IR → passes → TensorRT network → engine.

Every check a user's model can fail happens before the builder runs, and the ``.plan`` is
written atomically, so a failed build never leaves a partial or clobbered file.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import onnx

from loopc.errors import BackendError
from loopc.fileio import OutputFile, load_arrays
from loopc.fingerprint import LoopInfo, NetworkInfo, Node, loops_and_weights
from loopc.gc_pause import gc_paused
from loopc.ir import Graph, Model, format_graph
from loopc.precision import Precision, PrecisionReport
from loopc.profiles import InputProfile, ShapeProfile, build_narrowing
from loopc.specialize import fix_inputs, pinned_dims
from loopc.spelling import option, warn as warn_user
from loopc.trt import trt
from loopc.trt.config import Session, build_target, builder_config
from loopc.trt.isolated import build_engine, prestart

if TYPE_CHECKING:
    from loopc.passes import PinnedDims
    from loopc.passes._why import Declines

log = logging.getLogger(__name__)


@dataclass
class BuildReport:
    model: str
    #: The outermost loops and if-conditionals, read back from the network (see :mod:`loopc.fingerprint`).
    loops: list[Node] = field(default_factory=list)
    passes: dict[str, int] = field(default_factory=dict)
    #: Each optimization pass, and whether it ran (``--disable``, ``-O0``); what it did is in ``passes``.
    optimizations: dict[str, bool] = field(default_factory=dict)
    layers: int = 0
    compile_seconds: float = 0.0
    build_seconds: float = 0.0
    engine_bytes: int = 0
    #: The optimization profile each input was built with, and where it came from.
    inputs: dict[str, InputProfile] = field(default_factory=dict)
    #: What ``--fp16`` / ``--bf16`` did, when asked.
    precision: PrecisionReport | None = None
    #: The compute capability the engine was built for (``sm89``), and the TensorRT whose runtime loads it.
    target: str = ""
    tensorrt: str = ""
    #: Per loop (``Loop 'name'``, or ``outside loops``), the rewrites that did not apply and why
    #: (``counted-loops: its trip count cannot be counted: ...``).
    declined: dict[str, list[str]] = field(default_factory=dict)
    #: Bytes of the network's constant weights by TensorRT data type (each loop's per-trip reads are in ``loops``).
    weight_bytes: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    def all_loops(self) -> list[LoopInfo]:
        """Every loop, nested ones included, outer before inner."""
        return list(self.network_info().walk_loops())

    def network_info(self) -> NetworkInfo:
        """The network as :mod:`loopc.fingerprint` describes it (its weights aside: ``weight_bytes``)."""
        return NetworkInfo(self.layers, self.loops)


@dataclass
class Compiled:
    """A compiled network with the objects that must outlive it."""

    model: Model
    session: Session
    network: Any
    report: BuildReport
    precision: Precision = Precision()


def load_ir(model: onnx.ModelProto | str | os.PathLike[str], frontend: str | None = None,
            weights: str | os.PathLike[str] | None = None, disabled: Collection[str] = ()) -> Model:
    """Import a model with loopc's own frontends (ONNX or OpenVINO IR, picked from the file unless given),
    without the lowering optimizations in ``disabled`` (``stack-directions``)."""
    from loopc.frontend import load

    return load(model, frontend, weights, stack_directions="stack-directions" not in disabled)


def optimize(
    model: Model, dump: Callable[[str, Graph], None] | None = None, max_trips: int | None = None,
    disabled: Collection[str] = (), pinned: PinnedDims | None = None, declines: Declines | None = None,
) -> dict[str, int]:
    """Run the canonicalization passes (verifying after each), without the optimizations in
    ``disabled``, deciding conditionals at the ``pinned`` dims; return their statistics. The rewrites that
    did not apply are recorded into ``declines``, when given."""
    from loopc.passes import PassManager, default_passes

    manager = PassManager(default_passes(max_trips, disabled, pinned), dump=dump)
    if declines is not None:
        manager.declines = declines
    model.graph = manager.run(model.graph)
    return manager.stats


def declined_by_loop(declines: Declines, graph: Graph) -> dict[str, list[str]]:
    """The reasons still about ``graph`` (not about nodes a later rewrite removed), one line each, per loop."""
    alive: set[object] = {node for _, node in graph.walk()}
    alive.add(None)
    grouped: dict[str, list[str]] = {}
    for loop, found in declines.by_loop().items():
        lines = [d.text() for d in found if (d.at.owner if isinstance(d.at, Graph) else d.at) in alive]
        if lines and loop in alive:
            grouped[loop.describe() if loop is not None else "outside loops"] = lines
    for loop_name, how in declines.slower.items():
        grouped.setdefault(loop_name, []).insert(0, f"made legal by {how}")
    return grouped


def compile(  # noqa: A001  (the public name users expect)
    model: onnx.ModelProto | str | os.PathLike[str],
    *,
    max_trips: int | None = None,
    dump_ir: Callable[[str, str], None] | None = None,
    progress: Callable[[str], None] | None = None,
    frontend: str | None = None,
    weights: str | os.PathLike[str] | None = None,
    disabled: Collection[str] = (),
    precision: Precision = Precision(),
    fixed: Mapping[str, Any] | None = None,
    pinned: PinnedDims | None = None,
) -> Compiled:
    """Import, canonicalize and convert ``model`` to a TensorRT network (not yet built).

    ``max_trips`` bounds while loops with scan outputs (see :func:`loopc.frontend.onnx.import_model`);
    ``progress`` is told each stage as it starts; ``frontend`` and ``weights`` go to :func:`load_ir`;
    ``disabled`` names optimization passes not to run (:data:`loopc.passes.OPTIMIZATIONS`); ``precision``
    asks for a half-precision network (see :mod:`loopc.precision`); ``fixed`` inputs become constants and
    ``pinned`` dims decide conditionals (see :mod:`loopc.specialize`).
    """
    from loopc.backend.trt.network import to_network
    from loopc.trt.loop_shapes import assert_legal
    from loopc.trt.read_back import read_back
    from loopc.passes import OPTIMIZATIONS
    from loopc.trt import is_rtx

    say = progress or (lambda stage: None)
    start = time.perf_counter()
    say("importing")
    ir = load_ir(model, frontend, weights, disabled)
    fix_inputs(ir, fixed or {})
    if dump_ir:
        dump_ir("frontend", format_graph(ir.graph))
    say("canonicalizing loops")
    dump = (lambda name, g: dump_ir(name, format_graph(g))) if dump_ir else None
    from loopc.passes._why import Declines

    declines = Declines()
    stats = optimize(ir, dump, max_trips, disabled, pinned, declines)
    halved = None
    if precision and is_rtx():
        say(f"retyping to {precision.half}")
        halved = to_half(ir, precision, dump)
    say("converting to a TensorRT network")
    session, network = to_network(ir)
    report = BuildReport(ir.source, passes=stats, layers=network.num_layers,
                         optimizations={name: name not in disabled for name in OPTIMIZATIONS})
    if precision:
        report.precision = halved or PrecisionReport(precision.half or "", precision.half_state, by="builder flag")
    with gc_paused():
        read = read_back(network)  # once, for the check and the report
        assert_legal(read)
        described, report.weight_bytes = loops_and_weights(read)
    report.loops = described.loops
    report.declined = declined_by_loop(declines, ir.graph)
    report.compile_seconds = time.perf_counter() - start
    return Compiled(ir, session, network, report, precision)


def to_half(model: Model, precision: Precision, dump: Callable[[str, Graph], None] | None = None) -> PrecisionReport:
    """Retype ``model`` for a half-precision network (TensorRT-RTX), once (a cast it makes is a model's cast to
    the next run), then drop what that left unread."""
    from loopc.ir import verify
    from loopc.passes import DeadCode, PassManager
    from loopc.passes.half_precision import HalfPrecision

    half_pass = HalfPrecision(precision.half or "fp16", precision.half_state)
    half_pass(model.graph)
    verify(model.graph, after=f"pass {half_pass.name}")
    if dump is not None:
        dump(half_pass.name, model.graph)
    model.graph = PassManager([DeadCode()], dump=dump).run(model.graph)
    return PrecisionReport.of_pass(precision, half_pass)


def build(
    model: onnx.ModelProto | str | os.PathLike[str],
    output: str | os.PathLike[str] | OutputFile,
    *,
    shapes: ShapeProfile | None = None,
    inputs: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    target: str | None = None,
    fp16: bool = False,
    bf16: bool = False,
    half_state: bool = False,
    max_trips: int | None = None,
    dump_ir: Callable[[str, str], None] | None = None,
    progress: Callable[[str], None] | None = None,
    warn: Callable[[str], None] | None = None,
    frontend: str | None = None,
    weights: str | os.PathLike[str] | None = None,
    disabled: Collection[str] = (),
    fixed: Mapping[str, Any] | None = None,
) -> BuildReport:
    """Compile ``model`` and write the serialized engine to ``output`` (checked first; see :class:`OutputFile`).

    Dynamic inputs take their profile from ``shapes``, then from the example ``inputs`` (arrays by
    name, or an ``.npz``), then loopc's default range (see :mod:`loopc.profiles`); ``warn`` is told
    each default chosen (default: :func:`warnings.warn`). ``report.inputs`` records every input's profile.
    ``fp16`` / ``bf16`` build in half precision (``half_state``: loop state too; see :mod:`loopc.precision`);
    the float32 engine is then built as well, for its size in ``report.precision``. ``fixed`` inputs are
    constants in the engine (see :mod:`loopc.specialize`).
    """
    precision = Precision.of(fp16, bf16, half_state)
    plan_file = output if isinstance(output, OutputFile) else OutputFile(output)
    prestart()  # the builder's worker process starts while the model compiles
    fixed = dict(fixed or {})
    examples = load_arrays(inputs) if isinstance(inputs, (str, os.PathLike)) else dict(inputs or {})
    examples = {name: value for name, value in examples.items() if name not in fixed}
    given = shapes or ShapeProfile()
    shapes = dataclasses.replace(given, examples={k: v for k, v in given.examples.items() if k not in fixed})
    pinned = pinned_dims(dataclasses.replace(shapes, examples={**examples, **shapes.examples}))
    options: dict[str, Any] = dict(max_trips=max_trips, frontend=frontend, weights=weights, disabled=disabled,
                                   fixed=fixed, pinned=pinned)
    compiled = compile(model, dump_ir=dump_ir, progress=progress, precision=precision, **options)
    report = build_compiled(compiled, plan_file, shapes=shapes, inputs=examples, target=target, progress=progress,
                            warn=warn)
    if report.precision is not None:
        if progress:
            progress("building the float32 engine, for its size")
        reference = compile(model, **options)
        report.precision.fp32_engine_bytes = len(build_plan(reference, shapes=shapes, inputs=examples, target=target,
                                                            warn=lambda message: None)[0])
    return report


def build_compiled(
    compiled: Compiled,
    output: OutputFile,
    *,
    shapes: ShapeProfile | None = None,
    inputs: Mapping[str, Any] | None = None,
    target: str | None = None,
    progress: Callable[[str], None] | None = None,
    warn: Callable[[str], None] | None = None,
) -> BuildReport:
    """Build an engine from a compiled network (see :func:`build`); one network can be built for several targets.

    Returns a report of its own: ``compiled.report`` with this build's profile, time and size.
    """
    if progress:
        progress("building the engine")
    plan, report = build_plan(compiled, shapes=shapes, inputs=inputs, target=target, warn=warn)
    output.write(lambda handle: handle.write(plan))
    return report


def build_plan(
    compiled: Compiled,
    *,
    shapes: ShapeProfile | None = None,
    inputs: Mapping[str, Any] | None = None,
    target: str | None = None,
    warn: Callable[[str], None] | None = None,
) -> tuple[bytes, BuildReport]:
    """The serialized engine of a compiled network, and its report (see :func:`build_compiled`)."""
    from loopc.feeds import input_specs, prepare_inputs

    session, network = compiled.session, compiled.network
    profile = (shapes or ShapeProfile()).renamed(compiled.model.input_aliases)
    if inputs:
        checked = prepare_inputs(input_specs(network, compiled.model), inputs, partial=True, origin=f"{option('--inputs')}: ")
        profile = dataclasses.replace(profile, examples={**profile.examples, **checked})
    dims = {v.name: tuple(v.shape) for v in compiled.model.graph.inputs if v.shape is not None}
    report = dataclasses.replace(compiled.report)
    said: dict[str, list[str]] = {}  # the warning lines of each attempt, by narrowing

    def attempt(narrow: str = "", refused: str = "") -> bytes:  # a moved default after a shape refusal
        cfg = builder_config(session, target=target, precision=compiled.precision)
        said[narrow] = []
        report.inputs = profile.apply(session.builder, network, cfg, dim_names=dims, warn=said[narrow].append,
                                      graph=compiled.model.graph, narrow=narrow, refused=refused)
        # in a worker process, so that a crash of TensorRT's builder is an error, not loopc's end
        return build_engine(compiled.model, network, report.inputs, target=target, precision=compiled.precision)

    start = time.perf_counter()
    try:
        try:
            plan = attempt()
        except BackendError as refusal:
            plan = build_narrowing(attempt, report.inputs, refusal)
    except BackendError as exc:
        for line in said.get("", []):
            (warn or warn_user)(line)
        defaulted = [name for name, rec in report.inputs.items() if rec.source == "default"]
        if not defaulted:
            raise
        raise BackendError(f"{exc} (input(s) {', '.join(defaulted)} had loopc's default profile; give their "
                           f"shapes or values with {option('--shapes')} or {option('--inputs')})") from exc
    for line in list(said.values())[-1]:
        (warn or warn_user)(line)
    report.build_seconds = time.perf_counter() - start
    report.engine_bytes = len(plan)
    report.target, report.tensorrt = build_target(target), f"{trt().__name__} {trt().__version__}"
    return plan, report

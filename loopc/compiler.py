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
import warnings
from collections.abc import Callable, Collection, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import onnx

from loopc.errors import BackendError
from loopc.fileio import OutputFile, load_arrays
from loopc.fingerprint import LoopInfo, NetworkInfo, Node, describe_network
from loopc.ir import Graph, Model, format_graph
from loopc.profiles import InputProfile, ShapeProfile
from loopc.trt.config import Session, build_serialized, builder_config

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

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    def all_loops(self) -> list[LoopInfo]:
        """Every loop, nested ones included, outer before inner."""
        return list(NetworkInfo(self.layers, self.loops).walk_loops())


@dataclass
class Compiled:
    """A compiled network with the objects that must outlive it."""

    model: Model
    session: Session
    network: Any
    report: BuildReport


def load_ir(model: onnx.ModelProto | str | os.PathLike[str], frontend: str | None = None,
            weights: str | os.PathLike[str] | None = None, disabled: Collection[str] = ()) -> Model:
    """Import a model with loopc's own frontends (ONNX or OpenVINO IR, picked from the file unless given),
    without the lowering optimizations in ``disabled`` (``stack-directions``)."""
    from loopc.frontend import load

    return load(model, frontend, weights, stack_directions="stack-directions" not in disabled)


def optimize(
    model: Model, dump: Callable[[str, Graph], None] | None = None, max_trips: int | None = None,
    disabled: Collection[str] = (),
) -> dict[str, int]:
    """Run the canonicalization passes (verifying after each), without the optimizations in
    ``disabled``; return their statistics."""
    from loopc.passes import PassManager, default_passes

    manager = PassManager(default_passes(max_trips, disabled), dump=dump)
    model.graph = manager.run(model.graph)
    return manager.stats


def compile(  # noqa: A001  (the public name users expect)
    model: onnx.ModelProto | str | os.PathLike[str],
    *,
    max_trips: int | None = None,
    dump_ir: Callable[[str, str], None] | None = None,
    progress: Callable[[str], None] | None = None,
    frontend: str | None = None,
    weights: str | os.PathLike[str] | None = None,
    disabled: Collection[str] = (),
) -> Compiled:
    """Import, canonicalize and convert ``model`` to a TensorRT network (not yet built).

    ``max_trips`` bounds while loops with scan outputs (see :func:`loopc.frontend.onnx.import_model`);
    ``progress`` is told each stage as it starts; ``frontend`` and ``weights`` go to :func:`load_ir`;
    ``disabled`` names optimization passes not to run (:data:`loopc.passes.OPTIMIZATIONS`).
    """
    from loopc.backend.trt.network import to_network
    from loopc.passes import OPTIMIZATIONS

    say = progress or (lambda stage: None)
    start = time.perf_counter()
    say("importing")
    ir = load_ir(model, frontend, weights, disabled)
    if dump_ir:
        dump_ir("frontend", format_graph(ir.graph))
    say("canonicalizing loops")
    stats = optimize(ir, (lambda name, g: dump_ir(name, format_graph(g))) if dump_ir else None, max_trips, disabled)
    say("converting to a TensorRT network")
    session, network = to_network(ir)
    report = BuildReport(ir.source, passes=stats, layers=network.num_layers,
                         optimizations={name: name not in disabled for name in OPTIMIZATIONS})
    report.loops = describe_network(network).loops
    report.compile_seconds = time.perf_counter() - start
    return Compiled(ir, session, network, report)


def build(
    model: onnx.ModelProto | str | os.PathLike[str],
    output: str | os.PathLike[str] | OutputFile,
    *,
    shapes: ShapeProfile | None = None,
    inputs: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    target: str | None = None,
    fp16: bool = False,
    max_trips: int | None = None,
    dump_ir: Callable[[str, str], None] | None = None,
    progress: Callable[[str], None] | None = None,
    warn: Callable[[str], None] | None = None,
    frontend: str | None = None,
    weights: str | os.PathLike[str] | None = None,
    disabled: Collection[str] = (),
) -> BuildReport:
    """Compile ``model`` and write the serialized engine to ``output`` (checked first; see :class:`OutputFile`).

    Dynamic inputs take their profile from ``shapes``, then from the example ``inputs`` (arrays by
    name, or an ``.npz``), then loopc's default range (see :mod:`loopc.profiles`); ``warn`` is told
    each default chosen (default: :func:`warnings.warn`). ``report.inputs`` records every input's profile.
    """
    plan_file = output if isinstance(output, OutputFile) else OutputFile(output)
    examples = load_arrays(inputs) if isinstance(inputs, (str, os.PathLike)) else dict(inputs or {})
    compiled = compile(model, max_trips=max_trips, dump_ir=dump_ir, progress=progress, frontend=frontend,
                       weights=weights, disabled=disabled)
    return build_compiled(compiled, plan_file, shapes=shapes, inputs=examples, target=target, fp16=fp16,
                          progress=progress, warn=warn)


def build_compiled(
    compiled: Compiled,
    output: OutputFile,
    *,
    shapes: ShapeProfile | None = None,
    inputs: Mapping[str, Any] | None = None,
    target: str | None = None,
    fp16: bool = False,
    progress: Callable[[str], None] | None = None,
    warn: Callable[[str], None] | None = None,
) -> BuildReport:
    """Build an engine from a compiled network (see :func:`build`); one network can be built for several targets.

    Returns a report of its own: ``compiled.report`` with this build's profile, time and size.
    """
    from loopc.feeds import input_specs, prepare_inputs

    session, network = compiled.session, compiled.network
    profile = (shapes or ShapeProfile()).renamed(compiled.model.input_aliases)
    if inputs:
        checked = prepare_inputs(input_specs(network, compiled.model), inputs, partial=True, origin="--inputs: ")
        profile = dataclasses.replace(profile, examples={**profile.examples, **checked})
    cfg = builder_config(session, target=target, fp16=fp16)
    dims = {v.name: tuple(v.shape) for v in compiled.model.graph.inputs if v.shape is not None}
    report = dataclasses.replace(compiled.report)
    report.inputs = profile.apply(session.builder, network, cfg, dim_names=dims, warn=warn or _warn)
    if progress:
        progress("building the engine")
    start = time.perf_counter()
    try:
        plan = build_serialized(session, network, cfg)
    except BackendError as exc:
        defaulted = [name for name, rec in report.inputs.items() if rec.source == "default"]
        if not defaulted:
            raise
        raise BackendError(f"{exc} (input(s) {', '.join(defaulted)} had loopc's default profile; give their "
                           "shapes or values with --shapes or --inputs)") from exc
    report.build_seconds = time.perf_counter() - start
    report.engine_bytes = len(plan)
    output.write(lambda handle: handle.write(plan))
    return report


def _warn(message: str) -> None:
    warnings.warn(message, stacklevel=5)  # the caller of loopc.build

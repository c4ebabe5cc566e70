"""loopc's Python API: the commands as functions, with the commands' options as keywords.

``loopc.build(model, "model.plan", fp16=True, max_trips=64)`` does what ``loopc build model.onnx -o model.plan
--fp16 --max-trips 64`` does. Every mistake a caller can make (a bad file, an option that does not fit the model,
two half types) raises a :class:`loopc.LoopcError` whose message names the keyword to change; warnings (an input
given loopc's default profile) point at the caller's line. Heavy modules are imported when a function runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, Union

from loopc.errors import LoopcError
from loopc.loop_rules import DEFAULT_MAX_ITERATIONS
from loopc.precision import Precision
from loopc.spelling import option

if TYPE_CHECKING:
    import numpy as np
    import onnx

    from loopc.compiler import BuildReport, Compiled
    from loopc.exporter import ExportReport
    from loopc.fileio import OutputFile
    from loopc.profiles import ShapeProfile, ShapeSpec as Shapes

#: ``loopc``: loopc's own frontend (ONNX or OpenVINO IR, from the file), passes and backend; ``onnx`` and
#: ``openvino`` force one of loopc's frontends; ``trt-onnx``: TensorRT's own ONNX parser.
FRONTENDS = ("loopc", "onnx", "openvino", "trt-onnx")
EXECUTORS = ("sim", "trt")

ModelSource = Union["onnx.ModelProto", str, os.PathLike[str]]
#: Input arrays by name, or the path of an ``.npz`` holding them.
Inputs = Union[Mapping[str, Any], str, os.PathLike[str]]


def build(
    model: ModelSource,
    output: str | os.PathLike[str] | OutputFile,
    *,
    inputs: Inputs | None = None,
    shapes: Shapes | ShapeProfile | None = None,
    min_shapes: Shapes | None = None,
    opt_shapes: Shapes | None = None,
    max_shapes: Shapes | None = None,
    target: str | None = None,
    fp16: bool = False,
    bf16: bool = False,
    fp16_state: bool = False,
    max_trips: int | None = None,
    frontend: str | None = None,
    weights: str | os.PathLike[str] | None = None,
    disable: Collection[str] = (),
    fix_input: Mapping[str, Any] | None = None,
    dump_ir: Callable[[str, str], None] | None = None,
    progress: Callable[[str], None] | None = None,
    warn: Callable[[str], None] | None = None,
) -> BuildReport:
    """Compile ``model`` (ONNX, or an OpenVINO IR ``.xml``) and write its TensorRT engine to ``output``, as
    ``loopc build`` does. The file is written atomically: a failed build leaves an existing one untouched.

    Args:
        inputs: example inputs (arrays by name, or an ``.npz``); each pins its input's profile to its shape
            (or its values, for a shape tensor) unless ``min_shapes``/``max_shapes`` name that input too.
        shapes: an input's fixed dims (min = opt = max), ``"x:1x3x224"`` or ``{"x": (1, 3, 224)}``;
            ``min_shapes``, ``opt_shapes``, ``max_shapes`` give a range. Inputs left dynamic get loopc's
            default (each dim min 1, opt 8, max 64), with one warning each.
        target: the compute capability to build for, ``"sm89"`` (default: the GPU present, else sm89).
        fp16, bf16: compute in half what may be; ``fp16_state`` puts loop-carried state in half too.
        max_trips: the length of outputs that grow in while loops nothing else bounds.
        frontend: ``"onnx"`` or ``"openvino"`` (default: from the file); ``weights``: an OpenVINO IR's ``.bin``.
        disable: optimizations to leave out (names in :data:`loopc.passes.OPTIMIZATIONS`).
        fix_input: inputs to fix at build time, by name (``{"sr": 16000}``): constants in the engine, which no
            longer takes them; for an input that only steers control flow (see :mod:`loopc.specialize`).
        dump_ir: told ``(stage, IR text)`` after the frontend and after each pass that changes the IR.
        progress: told each stage as it starts; ``warn``: told each default chosen (default: ``warnings.warn``).

    Returns:
        The :class:`~loopc.compiler.BuildReport`: loops, layers, engine size, times, each input's profile.
    """
    from loopc.compiler import build as build_engine

    examples = _arrays(inputs)
    profile = _profile(shapes, min_shapes, opt_shapes, max_shapes, examples)
    return build_engine(model, output, shapes=profile, inputs=examples, target=target, fp16=fp16, bf16=bf16,
                        half_state=fp16_state, max_trips=max_trips, dump_ir=dump_ir, progress=progress, warn=warn,
                        frontend=frontend, weights=weights, disabled=_disabled(disable), fixed=fix_input)


def compile(  # noqa: A001  (the public name users expect)
    model: ModelSource,
    *,
    fp16: bool = False,
    bf16: bool = False,
    fp16_state: bool = False,
    max_trips: int | None = None,
    frontend: str | None = None,
    weights: str | os.PathLike[str] | None = None,
    disable: Collection[str] = (),
    fix_input: Mapping[str, Any] | None = None,
    dump_ir: Callable[[str, str], None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Compiled:
    """Import and canonicalize ``model`` and make its TensorRT network, without building an engine (what
    ``loopc inspect`` shows). ``fp16``, ``bf16``, ``fp16_state``, ``max_trips``, ``frontend``, ``weights``,
    ``disable``, ``fix_input``, ``dump_ir`` and ``progress`` are :func:`build`'s.

    Returns:
        A :class:`~loopc.compiler.Compiled`: the loop IR (``model``), the ``network`` (an
        ``INetworkDefinition``, which :func:`simulate` runs) and its ``report``.
    """
    from loopc.compiler import compile as compile_model

    return compile_model(model, max_trips=max_trips, dump_ir=dump_ir, progress=progress, frontend=frontend,
                         weights=weights, disabled=_disabled(disable), precision=Precision.of(fp16, bf16, fp16_state),
                         fixed=fix_input)


def run(
    model: str | os.PathLike[str],
    inputs: Inputs,
    *,
    executor: str = "sim",
    frontend: str = "loopc",
    fp16: bool = False,
    bf16: bool = False,
    fp16_state: bool = False,
    max_trips: int | None = None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    weights: str | os.PathLike[str] | None = None,
    fix_input: Mapping[str, Any] | None = None,
) -> dict[str, np.ndarray]:
    """Run ``model`` on ``inputs`` as ``loopc run`` does, and return its outputs by the model's output names.

    Args:
        inputs: arrays (or anything ``np.asarray`` takes) by input name, or an ``.npz`` of them; converted and
            checked as ``loopc run -i`` does (another width of the same kind where the values fit).
        executor: ``"sim"``, the simulator on the CPU, or ``"trt"``, a real engine (needs an NVIDIA GPU).
        frontend: ``"loopc"`` (its ONNX or OpenVINO frontend, from the file), ``"onnx"``/``"openvino"``
            (forced), or ``"trt-onnx"``: TensorRT's own ONNX parser, to compare.
        fp16, bf16, fp16_state, max_trips, weights, fix_input: as for :func:`build`; the network is the one an
            engine built for these inputs' shapes holds (conditionals those shapes decide are decided).
        max_iterations: a loop still running after this many trips is an error, never a hang (simulator).
    """
    if executor not in EXECUTORS:
        raise LoopcError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    precision = Precision.of(fp16, bf16, fp16_state)
    import numpy as np

    from loopc.specialize import unfixed_feeds

    feeds_given = unfixed_feeds(_arrays(inputs), fix_input or {})
    if executor == "trt":
        from loopc.trt.engine import require_gpu

        require_gpu("--executor trt")
    pinned = {name: tuple(np.shape(value)) for name, value in feeds_given.items()}
    parsed = load_network(model, frontend, max_trips, weights, precision, fixed=fix_input, pinned=pinned)
    return run_network(parsed, feeds_given, executor, max_iterations)


def export(
    model: ModelSource,
    output: str | os.PathLike[str] | OutputFile,
    *,
    shapes: Shapes | None = None,
    max_trips: int | None = None,
    external_data: bool = False,
    frontend: str | None = None,
    weights: str | os.PathLike[str] | None = None,
    disable: Collection[str] = (),
    dump_ir: Callable[[str, str], None] | None = None,
) -> ExportReport:
    """Canonicalize ``model``'s loops as :func:`build` does and write the result as ONNX, as ``loopc export``
    does, for runtimes that read ONNX themselves (trtexec, onnxruntime's TensorRT provider, Triton).

    Args:
        shapes: input dims to fix before the passes run, ``"x:1x3x224"`` or ``{"x": (1, 3, 224)}``.
        external_data: write the weights to ``<output>.data`` (done anyway past protobuf's 2 GiB limit).
        max_trips, frontend, weights, disable, dump_ir: as for :func:`build`.
    """
    from loopc.exporter import export as export_onnx
    from loopc.profiles import parse_shapes

    return export_onnx(model, output, external_data=external_data, max_trips=max_trips, shapes=parse_shapes(shapes),
                       disabled=_disabled(disable), frontend=frontend, weights=weights, dump_ir=dump_ir)


def simulate(network: Any, inputs: Inputs, *, max_iterations: int = DEFAULT_MAX_ITERATIONS) -> dict[str, np.ndarray]:
    """Run any TensorRT ``INetworkDefinition`` (loopc's, TensorRT's parser's, one built by hand) on the CPU,
    following TensorRT's layer semantics; ``inputs`` and ``max_iterations`` as for :func:`run`."""
    from loopc.sim import simulate as simulate_network

    return simulate_network(network, _arrays(inputs), max_iterations=max_iterations)


def load_network(model: str | os.PathLike[str], frontend: str = "loopc", max_trips: int | None = None,
                 weights: str | os.PathLike[str] | None = None, precision: Precision = Precision(),
                 fixed: Mapping[str, Any] | None = None, pinned: Mapping[str, tuple[int, ...]] | None = None) -> Any:
    """Turn a model file into a TensorRT network (with its ``session``) using the chosen frontend; ``fixed`` and
    ``pinned`` as for :func:`loopc.compiler.compile`."""
    if frontend not in FRONTENDS:
        raise LoopcError(f"unknown frontend {frontend!r}; choose one of {', '.join(FRONTENDS)}")
    if frontend == "trt-onnx":
        from loopc.trt.onnx_parser import parse_onnx

        if precision:
            raise LoopcError(f"{precision.half} retypes loopc's network; TensorRT's own parser (trt-onnx) "
                             "builds the model's types")
        if fixed:
            raise LoopcError(f"{option('--fix-input')} rewrites loopc's network; TensorRT's own parser (trt-onnx) "
                             "takes every input")
        return parse_onnx(model)
    from loopc.compiler import compile as compile_model

    return compile_model(model, max_trips=max_trips, frontend=None if frontend == "loopc" else frontend,
                         weights=weights, precision=precision, fixed=fixed, pinned=pinned)


def run_network(parsed: Any, inputs: Mapping[str, Any], executor: str = "sim",
                max_iterations: int = DEFAULT_MAX_ITERATIONS) -> dict[str, np.ndarray]:
    """Run a network :func:`load_network` made on ``inputs`` (checked and converted for its inputs)."""
    from loopc.feeds import input_specs, prepare_inputs

    feeds = prepare_inputs(input_specs(parsed.network, getattr(parsed, "model", None)), inputs)
    if executor == "trt":
        from loopc.trt.engine import run_network as run_engine

        return run_engine(parsed.session, parsed.network, feeds)
    from loopc.sim import Simulator

    return Simulator(parsed.network, max_iterations).run(feeds)


def _arrays(inputs: Inputs | None) -> dict[str, Any]:
    """Input arrays by name, from a mapping or an ``.npz`` path."""
    if inputs is None:
        return {}
    if isinstance(inputs, (str, os.PathLike)):
        from loopc.fileio import load_arrays

        return load_arrays(inputs)
    if not isinstance(inputs, Mapping):
        raise LoopcError(f"inputs must be arrays by input name (a dict) or an .npz path, not {type(inputs).__name__}")
    return dict(inputs)


def _profile(shapes: Shapes | ShapeProfile | None, min_shapes: Shapes | None, opt_shapes: Shapes | None,
             max_shapes: Shapes | None, examples: Mapping[str, Any]) -> ShapeProfile:
    from loopc.profiles import ShapeProfile

    if isinstance(shapes, ShapeProfile):
        return shapes
    return ShapeProfile.from_specs(shapes, min_shapes, opt_shapes, max_shapes, examples)


def _disabled(disable: Collection[str]) -> tuple[str, ...]:
    """The optimizations to leave out, each checked against the names there are."""
    from loopc.passes import OPTIMIZATIONS

    names = (disable,) if isinstance(disable, str) else tuple(disable)
    unknown = [name for name in names if name not in OPTIMIZATIONS]
    if unknown:
        raise LoopcError(f"disable names {', '.join(map(repr, unknown))}; the optimizations are "
                         f"{', '.join(OPTIMIZATIONS)}")
    return names

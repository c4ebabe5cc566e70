"""The subcommands: ``build``, ``export``, ``inspect``, ``run`` and ``ops``."""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from loopc import api
from loopc.cli.main import F, cli, short_help, verbose_option
from loopc.frontend import FRONTENDS
from loopc.fileio import OutputFile, load_arrays, save_arrays
from loopc.limits import DEFAULT_MAX_TENSOR_BYTES, format_bytes, parse_size, tensor_limit
from loopc.picture import FORMATS as PICTURE_FORMATS
from loopc.precision import Precision, PrecisionReport
from loopc.loop_rules import DEFAULT_MAX_ITERATIONS
from loopc.optimizations import OPTIMIZATIONS

if TYPE_CHECKING:
    from loopc.check.results import OutputComparison
    from loopc.ir import Graph


MAX_TRIPS_HELP = "Bound on the trips of while loops that have scan outputs (TensorRT needs their length)."
FRONTEND_HELP = "Which of loopc's frontends reads MODEL (default: from its suffix and content)."
WEIGHTS_HELP = "An OpenVINO IR's .bin, when it is not beside the .xml."


#: The model a command reads: a file, but not checked as one by click, so that a folder gets loopc's own message
#: (a TensorFlow SavedModel: convert it with tf2onnx first).
model_argument = click.argument("model", type=click.Path())


def frontend_options(command: F) -> F:
    """``--frontend`` and ``--weights``, shared by the commands that import a model with loopc."""
    command = click.option("--weights", type=click.Path(dir_okay=False), help=WEIGHTS_HELP)(command)
    return click.option("--frontend", type=click.Choice(FRONTENDS), help=FRONTEND_HELP)(command)


def _disabled(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """-O0 and --disable, folded into one tuple of optimization passes not to run."""
    level, names = ctx.params.pop("opt_level", 1), tuple(value or ())
    return tuple(OPTIMIZATIONS) if level == 0 else names


def optimization_options(command: F) -> F:
    """``-O0`` and ``--disable PASS``: the optimization passes to leave out (the report lists which ran)."""
    command = click.option(
        "--disable", "disabled", multiple=True, type=click.Choice(OPTIMIZATIONS), callback=_disabled,
        help="Leave out this optimization pass (repeatable).")(command)
    return click.option("-O", "opt_level", type=click.IntRange(0, 1), default=1, show_default=True, is_eager=True,
                        expose_value=False, callback=lambda ctx, param, value: ctx.params.update(opt_level=value),
                        help="Optimization level: -O0 runs only the passes a build needs.")(command)


def _precision(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """--fp16, --bf16 and --fp16-state, folded into one :class:`loopc.precision.Precision`."""
    from loopc.precision import Precision

    return Precision.of(ctx.params.pop("fp16", False), ctx.params.pop("bf16", False), bool(value))


def precision_options(command: F) -> F:
    """``--fp16`` / ``--bf16`` / ``--fp16-state``: a half-precision network (see :mod:`loopc.precision`)."""
    command = click.option(
        "--fp16-state", "precision", is_flag=True, callback=_precision,
        help="With --fp16/--bf16: keep loop-carried state (and its update) in half too, not float32.")(command)
    for flag, what in (("--bf16", "bfloat16"), ("--fp16", "float16")):
        command = click.option(flag, is_flag=True, is_eager=True, expose_value=False,
                               callback=lambda ctx, param, value: ctx.params.update({param.name: value}),
                               help=f"Compute in {what} what may be: products and activations; accumulations, "
                                    "normalizations, softmax, shape work and loop state stay float32. "
                                    "(Datacenter TensorRT: its builder flag.)")(command)
    return command


def _tensor_limit(ctx: click.Context, param: click.Parameter, text: str | None) -> None:
    try:
        nbytes = parse_size(text) if text is not None else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None
    ctx.with_resource(tensor_limit(nbytes))  # in force until the command returns


def limit_option(command: F) -> F:
    """``--max-tensor-size``: how large one constant or input array loopc holds may be."""
    return click.option(
        "--max-tensor-size", callback=_tensor_limit, expose_value=False, metavar="SIZE",
        help=f"Largest constant or input array loopc holds in memory (default {format_bytes(DEFAULT_MAX_TENSOR_BYTES)}"
             "); e.g. 4GiB. Models declaring larger ones are refused before anything is allocated.",
    )(command)


def _teller(*outputs: OutputFile | None) -> Callable[[str], None]:
    """``click.echo`` to stdout, or to stderr when an output is written to stdout (``-o /dev/stdout``)."""
    to_stderr = any(out is not None and out.to_stdout for out in outputs)
    return lambda message: click.echo(message, err=to_stderr)


def _outputs(*outputs: OutputFile, reads: tuple[str | None, ...] = ()) -> None:
    """Refuse outputs that would overwrite each other or a file the command reads (a usage error)."""
    for k, out in enumerate(outputs):
        for other in [o.path for o in outputs[k + 1:]] + [r for r in reads if r]:
            if out.same_file(other):
                raise click.UsageError(f"{out.what} {out.path} is the same file as {other}, which this command "
                                       "also reads or writes")


def _dump_ir(stage: str, text: str) -> None:
    click.echo(f"--- IR after {stage} ---\n{text}", err=True)


FIX_INPUT_HELP = ("Fix an input at build time, NAME=VALUE (repeatable): it becomes a constant and the engine no "
                  "longer takes it; for an input that only steers control flow, like a sample rate.")
fix_input_option = click.option("--fix-input", "fix_input", multiple=True, metavar="NAME=VALUE", help=FIX_INPUT_HELP)


@cli.command(short_help=short_help("build"))
@model_argument
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Where to write the .plan.")
@click.option("--shapes", help="Input shapes, trtexec style: x:1x3x224,y:4 (sets min = opt = max).")
@click.option("--min-shapes", help="Smallest shapes of the optimization profile.")
@click.option("--opt-shapes", help="Shapes the builder optimizes for.")
@click.option("--max-shapes", help="Largest shapes of the optimization profile.")
@click.option("-i", "--inputs", "inputs_path", type=click.Path(dir_okay=False),
              help=".npz of example inputs: their shapes (and shape-tensor values) pin the profile.")
@click.option("--target", help="Compute capability to build for, e.g. sm89 (default: the GPU present, else sm89).")
@precision_options
@click.option("--max-trips", type=click.IntRange(min=1), help=MAX_TRIPS_HELP)
@click.option("--report", "report_path", type=click.Path(dir_okay=False), help="Write a JSON build report here.")
@click.option("--dump-ir", is_flag=True, help="Print the IR after the frontend and after each pass that changes it.")
@fix_input_option
@optimization_options
@frontend_options
@limit_option
@verbose_option
def build(
    model: str, output: str, shapes: str | None, min_shapes: str | None, opt_shapes: str | None,
    max_shapes: str | None, inputs_path: str | None, target: str | None, precision: Precision,
    max_trips: int | None, report_path: str | None, dump_ir: bool, disabled: tuple[str, ...], frontend: str | None,
    weights: str | None, fix_input: tuple[str, ...],
) -> None:
    """Compile MODEL into a TensorRT engine whose loops are TensorRT loops.

    Dynamic inputs without --shapes or --inputs get loopc's default profile (each dynamic dim and
    shape-tensor value min 1, opt 8, max 64, where the model takes that; else a range inside what the
    model requires), with one warning per input saying what was chosen and why.
    """
    from loopc.compiler import build as build_engine
    from loopc.profiles import ShapeProfile
    from loopc.specialize import parse_fixed

    plan_file = OutputFile(output, "-o")
    report_file = OutputFile(report_path, "--report") if report_path else None
    _outputs(plan_file, *([report_file] if report_file else []), reads=(model, inputs_path, weights))
    examples = load_arrays(inputs_path) if inputs_path else {}
    profile = ShapeProfile.from_specs(shapes, min_shapes, opt_shapes, max_shapes, examples)
    report = build_engine(model, plan_file, shapes=profile, inputs=examples, target=target,
                          fp16=precision.half == "fp16", bf16=precision.half == "bf16",
                          half_state=precision.half_state, max_trips=max_trips, dump_ir=_dump_ir if dump_ir else None,
                          progress=lambda stage: click.echo(f"loopc: {stage} ...", err=True),
                          warn=lambda message: click.echo(f"loopc: warning: {message}", err=True),
                          frontend=frontend, weights=weights, disabled=disabled, fixed=parse_fixed(fix_input))
    say = _teller(plan_file, report_file)
    for loop in report.all_loops():
        say(
            f"  loop {loop.name}: {'+'.join(loop.trip_limits)}, {len(loop.iterators)} iterator(s), "
            f"{len(loop.recurrences)} recurrence(s), outputs {', '.join(o.kind for o in loop.outputs) or 'none'}, "
            f"{loop.layers_per_iteration} layer(s) per iteration, reading "
            f"{weight_text(loop.weight_bytes_per_iteration)} of weights"
        )
    say(
        f"wrote {output}: {report.engine_bytes} bytes for {report.target} ({report.tensorrt}), {report.layers} layers, "
        f"{len(report.all_loops())} loop(s); "
        f"compile {report.compile_seconds:.2f} s, build {report.build_seconds:.2f} s"
    )
    say(f"  constant weights: {weight_text(report.weight_bytes)}")
    if report.precision is not None:
        _say_precision(say, report.precision, report.engine_bytes)
    if (click.get_current_context().obj or {}).get("verbose", 0):
        for line in _why_lines(report.declined):
            say(line)
    if report_file:
        report_file.write(lambda handle: handle.write(report.to_json().encode()))


def weight_text(by_type: dict[str, int]) -> str:
    """``1,050,624 bytes (FLOAT 1,048,576, INT4 2,048)``: weight bytes, by TensorRT data type when there are any."""
    total = sum(by_type.values())
    parts = ", ".join(f"{kind} {count:,}" for kind, count in by_type.items() if count)
    return f"{total:,} bytes" + (f" ({parts})" if parts else "")


def _weight_lines(report: Any) -> list[str]:
    """The network's constant weights by data type, and what each loop's body reads of them per iteration."""
    lines = [f"constant weights: {weight_text(report.weight_bytes)}"]
    lines += [f"  loop {loop.name} reads {weight_text(loop.weight_bytes_per_iteration)} per iteration"
              for loop in report.all_loops()]
    return lines


def _why_lines(declined: dict[str, list[str]]) -> list[str]:
    """The rewrites that did not apply, under the loop each concerns (``build -v``, ``inspect --why``)."""
    if not declined:
        return ["no pass recorded a rewrite that did not apply"]
    lines = ["rewrites that did not apply, and why:"]
    for loop, reasons in declined.items():
        lines.append(f"  {loop}:")
        lines.extend(f"    {reason}" for reason in reasons)
    return lines


def _say_precision(say: Callable[[str], None], precision: PrecisionReport, engine_bytes: int) -> None:
    if precision.by != "loopc":
        say(f"  {precision.half}: TensorRT's builder flag chooses each layer's precision")
        return
    ratio = f" ({engine_bytes / precision.fp32_engine_bytes:.2f}x)" if precision.fp32_engine_bytes else ""
    say(f"  {precision.half}: {precision.half_nodes} node(s) in half, {precision.weights} weight(s) stored in half, "
        f"{precision.casts} cast(s); float32 build {precision.fp32_engine_bytes} bytes{ratio}")
    kept = precision.kept_by_reason()
    if kept:
        say("  left in float32: " + "; ".join(f"{count} {reason}" for reason, count in kept.items()))


@cli.command(short_help=short_help("export"))
@model_argument
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Where to write the .onnx.")
@click.option("--shapes", help="Input shapes to fix before the passes run, trtexec style: x:1x3x224,y:4.")
@click.option("--max-trips", type=click.IntRange(min=1), help=MAX_TRIPS_HELP)
@click.option("--report", "report_path", type=click.Path(dir_okay=False),
              help="Write a JSON report here: ops, nodes and loops of the input and of the export, what each pass did.")
@click.option("--dump-ir", is_flag=True, help="Print the IR after the frontend and after each pass that changes it.")
@click.option("--external-data", is_flag=True,
              help="Write the weights to OUTPUT.data beside the model (done anyway past protobuf's 2 GiB limit).")
@optimization_options
@frontend_options
@limit_option
@verbose_option
def export(model: str, output: str, shapes: str | None, max_trips: int | None, report_path: str | None,
           dump_ir: bool, external_data: bool, disabled: tuple[str, ...], frontend: str | None,
           weights: str | None) -> None:
    """Canonicalize MODEL's loops as ``build`` does and write the result as ONNX, for runtimes that read ONNX
    themselves (trtexec, onnxruntime's TensorRT provider, Triton). MODEL may be ONNX or OpenVINO IR."""
    from loopc.exporter import export as export_onnx
    from loopc.profiles import parse_shapes

    out_file = OutputFile(output, "-o")
    report_file = OutputFile(report_path, "--report") if report_path else None
    _outputs(out_file, *([report_file] if report_file else []), reads=(model, weights))
    report = export_onnx(model, out_file, external_data=external_data, max_trips=max_trips,
                         shapes=parse_shapes(shapes), disabled=disabled, frontend=frontend, weights=weights,
                         dump_ir=_dump_ir if dump_ir else None)
    say = _teller(out_file, report_file)
    before, after = report.before, report.after
    say(f"wrote {output}: opset {report.opset}, {after.nodes} nodes (input {before.nodes}), {after.loops} loop(s) "
        f"(input {before.loops}), {after.conditionals} conditional(s) (input {before.conditionals}); "
        f"{report.seconds:.2f} s")
    if report.data_output:
        say(f"  weights: {report.data_output} ({report.data_bytes} bytes)")
    changes = report.op_changes()
    if changes:
        say("  ops: " + ", ".join(f"{op} {delta:+d}" for op, delta in changes.items()))
    if report.passes:
        say("  passes: " + ", ".join(f"{name} {count}" for name, count in report.passes.items()))
    if report_file:
        report_file.write(lambda handle: handle.write(report.to_json().encode()))


@cli.command(short_help=short_help("inspect"))
@model_argument
@click.option("--format", "fmt", type=click.Choice(PICTURE_FORMATS), default="text", show_default=True,
              help="text: the TensorRT network's loops and what loopc's passes changed (--ir adds the IR); json, "
                   "dot (Graphviz), svg or html: the TensorRT network's loops as data or a picture.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to this file instead of stdout.")
@click.option("--max-trips", type=click.IntRange(min=1), help=MAX_TRIPS_HELP)
@click.option("--ir", "show_ir", is_flag=True, help="text: also print each loop's IR after loopc's passes.")
@click.option("--why", "why", is_flag=True,
              help="Also print, per loop, the rewrites of loopc's passes that did not apply, and why.")
@click.option("--dump-ir", is_flag=True, help="Also print the IR after the frontend and after each pass.")
@optimization_options
@frontend_options
@limit_option
@verbose_option
def inspect(model: str, fmt: str, output: str | None, max_trips: int | None, show_ir: bool, why: bool,
            dump_ir: bool, disabled: tuple[str, ...], frontend: str | None, weights: str | None) -> None:
    """Show MODEL's loops as the TensorRT network holds them (trip limits, iterators, recurrences, outputs, work
    per iteration, critical path) and what loopc's passes did; --ir adds the loops' IR, --why the rewrites that
    did not apply."""
    from loopc.compiler import compile as compile_model
    from loopc.picture import render

    out_file = OutputFile(output, "-o") if output else None
    if out_file:
        _outputs(out_file, reads=(model, weights))
    compiled = compile_model(model, max_trips=max_trips, dump_ir=_dump_ir if dump_ir else None, frontend=frontend,
                             weights=weights, disabled=disabled)
    info = compiled.report.network_info()
    name = pathlib.Path(model).name
    if fmt == "text":
        text = "\n\n".join([*([_ir_loops(compiled.model.graph, name)] if show_ir else []),
                             render(info, fmt, f"{name} as a TensorRT network"),
                             "\n".join(_weight_lines(compiled.report)),
                             _pass_summary(compiled.report.passes),
                             *(["\n".join(_why_lines(compiled.report.declined))] if why else [])])
    else:  # a standalone .svg file is an XML document
        text = ('<?xml version="1.0" encoding="UTF-8"?>\n' if fmt == "svg" else "") + render(info, fmt, name)
        if why:  # beside the picture or data, not in it
            click.echo("\n".join(_why_lines(compiled.report.declined)), err=True)
    if out_file:
        out_file.write(lambda handle: handle.write(text.encode() + b"\n"))
    else:
        click.echo(text)


def _pass_summary(stats: dict[str, int]) -> str:
    """What loopc's passes changed, one pass a line (``passes.name``: how many of what)."""
    changed: dict[str, list[str]] = {}
    for key, count in stats.items():
        pass_name, _, what = key.partition(".")
        changed.setdefault(pass_name, []).append(f"{count} {what}")
    lines = [f"  {pass_name}: {', '.join(counts)}" for pass_name, counts in changed.items()]
    return "\n".join(["loopc's passes changed:", *lines] if lines else ["loopc's passes changed nothing"])


def _ir_loops(graph: Graph, name: str) -> str:
    """The IR's loops after canonicalization, each nested loop inside its parent."""
    from loopc.ir import Loop, format_loop

    loops = [node for _, node in graph.walk() if isinstance(node, Loop)]
    nested = {inner for loop in loops for _, inner in loop.body.walk() if isinstance(inner, Loop)}
    return "\n".join([f"{name}: {len(loops)} loop(s)"] + [format_loop(lp) for lp in loops if lp not in nested])


@cli.command(short_help=short_help("run"))
@model_argument
@click.option("-i", "--inputs", "inputs_path", type=click.Path(dir_okay=False), help=".npz of inputs by name.")
@click.option("-o", "--output", "output_path", type=click.Path(dir_okay=False), help="Write outputs to this .npz.")
@click.option("--reference", metavar="onnxruntime|openvino|FILE",
              help="Compare the outputs with onnxruntime or OpenVINO running MODEL, or with golden outputs (.npz or "
                   "polygraphy run --save-outputs JSON); exit 1 when one differs beyond --rtol/--atol.")
@click.option("--rtol", type=click.FloatRange(min=0), default=1e-4, show_default=True,
              help="With --reference: relative tolerance (Polygraphy's comparator).")
@click.option("--atol", type=click.FloatRange(min=0), default=1e-5, show_default=True,
              help="With --reference: absolute tolerance.")
@click.option("--executor", type=click.Choice(api.EXECUTORS), default="sim", show_default=True,
              help="sim: the CPU simulator; trt: a real engine (needs a GPU).")
@click.option("--frontend", type=click.Choice(api.FRONTENDS), default="loopc", show_default=True,
              help="How the model becomes a TensorRT network: loopc (its ONNX or OpenVINO frontend, from the "
                   "file), onnx or openvino (one of them, forced), or trt-onnx (TensorRT's own ONNX parser).")
@click.option("--weights", type=click.Path(dir_okay=False), help=WEIGHTS_HELP)
@click.option("--max-iterations", type=click.IntRange(min=1), default=DEFAULT_MAX_ITERATIONS, show_default=True,
              help="A loop still running after this many trips is an error (sim only).")
@click.option("--max-trips", type=click.IntRange(min=1), help=MAX_TRIPS_HELP)
@fix_input_option
@precision_options
@limit_option
@verbose_option
def run(
    model: str, inputs_path: str | None, output_path: str | None, reference: str | None, rtol: float, atol: float,
    executor: str, frontend: str, max_iterations: int, max_trips: int | None, weights: str | None,
    fix_input: tuple[str, ...], precision: Precision,
) -> None:
    """Run MODEL on the inputs and print (or save) its outputs; with --reference, say whether they match."""
    from loopc.specialize import parse_fixed

    output_file = OutputFile(output_path, "-o") if output_path else None
    if output_file:
        _outputs(output_file, reads=(model, inputs_path, weights, reference))
    inputs = load_arrays(inputs_path) if inputs_path else {}
    outputs = api.run(model, inputs, executor=executor, frontend=frontend, max_iterations=max_iterations,
                      max_trips=max_trips, weights=weights, fp16=precision.half == "fp16",
                      bf16=precision.half == "bf16", fp16_state=precision.half_state, fix_input=parse_fixed(fix_input))
    say = _teller(output_file)
    if output_file:
        save_arrays(output_file, outputs)
        say(f"wrote {len(outputs)} output(s) to {output_path}")
    for name, value in outputs.items():
        say(f"{name}: {value.dtype} {list(value.shape)}")
        if not output_file:
            say(f"{value}")
    if reference is not None:
        _compare_with(reference, model, weights, inputs, outputs, rtol, atol, say)


def _compare_with(reference: str, model: str, weights: str | None, inputs: dict[str, Any],
                  outputs: dict[str, Any], rtol: float, atol: float, say: Callable[[str], None]) -> None:
    """``loopc run --reference``: each reference output against loopc's, one line each; a mismatch fails."""
    from loopc.check.compare import compare, reference_outputs
    from loopc.errors import LoopcError

    wanted = reference_outputs(reference, pathlib.Path(model), inputs, pathlib.Path(weights) if weights else None)
    results = compare(outputs, wanted, rtol, atol)
    whom = reference if reference in ("onnxruntime", "openvino") else pathlib.Path(reference).name
    for result in results:
        say(f"{result.name}: {'matches' if result.passed else 'differs from'} {whom}: {_error_text(result)}")
    failed = [result.name for result in results if not result.passed]
    if failed:
        raise LoopcError(f"output(s) {', '.join(failed)} differ from {whom} beyond rtol {rtol:g} / atol {atol:g}")


def _error_text(result: OutputComparison) -> str:
    """How far one output is from the reference: exact, or its largest errors (or why it could not compare)."""
    if result.max_abs is None:  # an integer output, compared element by element, or one that could not compare
        return result.reason or ("equal" if result.passed else "not compared")
    if result.max_abs == 0:
        return "equal"
    rel = f", max rel error {result.max_rel:.3g}" if result.max_rel is not None else ""
    return f"max abs error {result.max_abs:.3g}{rel}" + (f" ({result.reason})" if result.reason else "")


@cli.command(short_help=short_help("ops"))
@verbose_option
def ops() -> None:
    """List the ONNX ops and OpenVINO IR types loopc reads, the TensorRT layer types the simulator runs, and the
    targets it builds for."""
    from loopc.backend.trt.registry import supported_ops
    from loopc.frontend.onnx.contrib import contrib_ops
    from loopc.frontend.onnx.functions import expanded_ops
    from loopc.frontend.onnx.registry import structural_ops
    from loopc.frontend.openvino.registry import openvino_types
    from loopc.sim import supported_layer_types
    from loopc.passes import SEQUENCE_OPS
    from loopc.trt import is_rtx
    from loopc.trt.config import targets

    click.echo("ONNX ops the TensorRT backend converts:")
    click.echo("  " + " ".join(sorted(supported_ops())))
    click.echo("ONNX ops the frontend lowers to loops and conditionals itself:")
    click.echo("  " + " ".join(structural_ops()))
    click.echo("ONNX ops built from ONNX's own definition of them (a function of other ops), when their parts are:")
    click.echo("  " + " ".join(expanded_ops()))
    click.echo("onnxruntime's contrib ops (and those it adds to the default domain), expanded into ONNX ops:")
    click.echo("  " + " ".join(contrib_ops()))
    click.echo("ONNX sequence ops, read when each sequence's length is known before the model runs, or when a loop "
               "appends to it (SequenceInsert) and it is stacked after the loop (ConcatFromSequence):")
    click.echo("  " + " ".join(SEQUENCE_OPS))
    click.echo("OpenVINO IR types (the opsets that introduced the versions read):")
    click.echo("  " + " ".join(f"{name}/{','.join(map(str, sorted(versions)))}"
                               for name, versions in sorted(openvino_types().items())))
    click.echo("TensorRT layer types the simulator runs:")
    click.echo("  " + " ".join(sorted(supported_layer_types())))
    if is_rtx():
        click.echo("Targets TensorRT-RTX builds for (--target):")
        click.echo("  " + " ".join(targets()))
    else:
        click.echo("Targets: datacenter TensorRT builds for the GPU present (--target is TensorRT-RTX's)")

"""The subcommands: ``run`` and ``ops``."""

from __future__ import annotations

import click

from loopc import api
from loopc.cli.main import cli
from loopc.fileio import load_arrays, save_arrays
from loopc.sim import DEFAULT_MAX_ITERATIONS, supported_layer_types


@cli.command()
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("-i", "--inputs", "inputs_path", type=click.Path(dir_okay=False), help=".npz of inputs by name.")
@click.option("-o", "--output", "output_path", type=click.Path(dir_okay=False), help="Write outputs to this .npz.")
@click.option("--executor", type=click.Choice(api.EXECUTORS), default="sim", show_default=True,
              help="sim: the CPU simulator; trt: a real engine (needs a GPU).")
@click.option("--frontend", type=click.Choice(api.FRONTENDS), default="trt-onnx", show_default=True,
              help="How the model becomes a TensorRT network (trt-onnx: TensorRT's own ONNX parser).")
@click.option("--max-iterations", type=click.IntRange(min=1), default=DEFAULT_MAX_ITERATIONS, show_default=True,
              help="A loop still running after this many trips is an error (sim only).")
def run(
    model: str, inputs_path: str | None, output_path: str | None, executor: str, frontend: str, max_iterations: int
) -> None:
    """Run MODEL on the inputs and print (or save) its outputs."""
    inputs = load_arrays(inputs_path) if inputs_path else {}
    outputs = api.run(model, inputs, executor=executor, frontend=frontend, max_iterations=max_iterations)
    if output_path:
        save_arrays(output_path, outputs)
        click.echo(f"wrote {len(outputs)} output(s) to {output_path}")
    for name, value in outputs.items():
        click.echo(f"{name}: {value.dtype} {list(value.shape)}")
        if not output_path:
            click.echo(f"{value}")


@cli.command()
def ops() -> None:
    """List the TensorRT layer types the simulator runs."""
    for name in sorted(supported_layer_types()):
        click.echo(name)

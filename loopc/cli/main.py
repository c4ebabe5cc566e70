"""``loopc``: one-line errors with exit codes that mean one thing (see :mod:`loopc.errors`), ``-v`` for detail."""

from __future__ import annotations

import importlib
import logging
import os
import sys
import traceback
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import click

from loopc import __version__
from loopc.errors import EXIT_INPUT, EXIT_INTERNAL, REPORT_HINT, LoopcError
from loopc.spelling import spelled
from loopc.trt import MODULES, force


#: Each subcommand: the module that defines it, imported only when the command runs or shows its own help, and
#: its line in ``loopc --help`` (its ``short_help``), so that ``loopc --help`` and ``--version`` import nothing heavy.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "build": ("loopc.cli.commands", "Compile a model into a TensorRT engine whose loops are TensorRT loops."),
    "run": ("loopc.cli.commands", "Run a model on inputs (simulated on the CPU, or an engine on a GPU)."),
    "inspect": ("loopc.cli.commands", "Show a model's loops and what each trip costs, without building."),
    "export": ("loopc.cli.commands", "Write a model back as ONNX with loopc's loops, for runtimes that read ONNX."),
    "check": ("loopc.cli.check", "Check models' engines against references and a baseline, for CI."),
    "ops": ("loopc.cli.commands", "List the ops loopc reads and the layer types its simulator runs."),
}


def short_help(name: str) -> str:
    """The line ``loopc --help`` shows for subcommand ``name``."""
    return SUBCOMMANDS[name][1]


class _Group(click.Group):
    """Turns exceptions into one line on stderr and the documented exit codes, and imports a subcommand's
    module only when that subcommand is wanted (see :data:`SUBCOMMANDS`).

    A closed stdout (``loopc ops | head``) is not an error: the reader has what it wanted.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in SUBCOMMANDS and cmd_name not in self.commands:
            importlib.import_module(SUBCOMMANDS[cmd_name][0])  # its decorators register it on the group
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl(list((name, summary) for name, (_, summary) in SUBCOMMANDS.items()))

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with spelled("command line"), warnings.catch_warnings():
                warnings.showwarning = _show_warning
                return super().invoke(ctx)
        except LoopcError as exc:
            _report(ctx, f"error: {exc}", EXIT_INPUT)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except BrokenPipeError:
            _silence_stdout()
            sys.exit(0)
        except MemoryError:
            _report(ctx, "error: out of memory (the model or its inputs need more than this process may "
                    "allocate)", EXIT_INPUT)
        except Exception as exc:
            _report(ctx, f"internal error: {type(exc).__name__}: {exc}", EXIT_INTERNAL)


def _show_warning(message: Warning | str, *args: Any, **kwargs: Any) -> None:
    """A warning as the command's other warnings read: one ``loopc: warning:`` line, not Python's two."""
    click.echo(f"loopc: warning: {message}", err=True)


def _report(ctx: click.Context, message: str, code: int) -> None:
    verbose = (ctx.obj or {}).get("verbose", 0)
    if verbose:
        traceback.print_exc()
    first = " ".join(message.split()) if message else ""  # one line, whatever the message held
    if code == EXIT_INTERNAL:
        first += f" ({REPORT_HINT}" + (")" if verbose else "; run with -v for the traceback)")
    click.echo(f"loopc: {first}", err=True)
    sys.exit(code)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that Python's flush at exit does not raise again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


VERBOSE_HELP = "More logging (-vv for TensorRT's own messages); tracebacks."
F = TypeVar("F", bound=Callable[..., Any])


def set_verbosity(verbose: int) -> None:
    """Log at WARNING, INFO (-v) or DEBUG (-vv and more)."""
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger().setLevel(level)


def _more_verbose(ctx: click.Context, _param: click.Parameter, count: int) -> None:
    if count:
        ctx.obj = ctx.obj if ctx.obj is not None else {}  # the group's dict: error reporting reads it
        ctx.obj["verbose"] = ctx.obj.get("verbose", 0) + count
        set_verbosity(ctx.obj["verbose"])


def verbose_option(command: F) -> F:
    """``-v`` on a subcommand too, so that ``loopc build ... -v`` works as ``loopc -v build ...`` does."""
    return click.option("-v", "--verbose", count=True, expose_value=False, callback=_more_verbose,
                        help=VERBOSE_HELP)(command)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="loopc")
@click.option("-v", "--verbose", count=True, help=VERBOSE_HELP)
@click.option(
    "--tensorrt",
    type=click.Choice(MODULES),
    default=None,
    help="TensorRT Python module to use (default: tensorrt if it imports, else tensorrt_rtx).",
)
@click.pass_context
def cli(ctx: click.Context, verbose: int, tensorrt: str | None) -> None:
    """Compile models with loops into TensorRT engines whose loops are TensorRT loops."""
    ctx.obj = {"verbose": verbose}
    set_verbosity(verbose)
    if tensorrt:
        force(tensorrt)


def main() -> None:
    cli(prog_name="loopc")

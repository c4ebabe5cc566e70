"""``loopc``: one-line errors (exit 1 for user errors, 2 for loopc's own bugs), ``-v`` for detail."""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import click

from loopc import __version__
from loopc.errors import LoopcError
from loopc.trt import MODULES, force


class _Group(click.Group):
    """Turns exceptions into one line on stderr and the documented exit codes."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LoopcError as exc:
            _report(ctx, f"error: {exc}", 1)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:
            _report(ctx, f"internal error: {type(exc).__name__}: {exc}", 2)


def _report(ctx: click.Context, message: str, code: int) -> None:
    verbose = (ctx.obj or {}).get("verbose", 0)
    if verbose:
        traceback.print_exc()
    hint = "" if verbose or code == 1 else " (run with -v for the traceback)"
    click.echo(f"loopc: {message.splitlines()[0] if message else ''}{hint}", err=True)
    sys.exit(code)


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
    from loopc.cli import commands  # noqa: F401  (registers the subcommands)

    cli(prog_name="loopc")

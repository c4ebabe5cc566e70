"""Exit codes mean one thing: 1 the user's input, 2 the command line, 70 a bug in loopc (with where to report it)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest
from click.testing import CliRunner

import loopc.api
from loopc.cli import commands  # noqa: F401  (registers the subcommands)
from loopc.cli.main import cli
from loopc.errors import EXIT_INPUT, EXIT_INTERNAL, EXIT_USAGE, LoopcError

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "running_sum.onnx"
LOOPC = pathlib.Path(sys.executable).with_name("loopc")


def test_the_documented_values() -> None:
    assert (EXIT_INPUT, EXIT_USAGE, EXIT_INTERNAL) == (1, 2, 70)


def test_a_bad_input_is_1(tmp_path: pathlib.Path) -> None:
    result = CliRunner().invoke(cli, ["run", str(tmp_path / "absent.onnx")])
    assert result.exit_code == 1
    assert result.output == f"loopc: error: {tmp_path / 'absent.onnx'}: no such file\n"


@pytest.mark.parametrize("args", [["build", str(SAMPLE)], ["run", str(SAMPLE), "--executor", "gpu"], ["frobnicate"],
                                  ["run", str(SAMPLE), "--max-iterations", "0"]])
def test_a_command_line_mistake_is_2(args: list[str]) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert "Usage:" in result.output or "Error:" in result.output


def _bug(*_args: object, **_kwargs: object) -> None:
    raise KeyError("an invariant that does not hold")


@pytest.mark.parametrize("verbose", [False, True])
def test_a_bug_in_loopc_is_70_and_says_where_to_report_it(monkeypatch: pytest.MonkeyPatch, verbose: bool) -> None:
    monkeypatch.setattr(loopc.api, "run", _bug)
    result = CliRunner().invoke(cli, ["-v"] * verbose + ["run", str(SAMPLE)])
    assert result.exit_code == 70
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("loopc: internal error: KeyError: 'an invariant that does not hold' (this is a bug in "
                           "loopc: please report it on loopc's issue tracker")
    assert ("Traceback (most recent call last)" in result.output) == verbose
    assert ("run with -v for the traceback" in last) != verbose


def test_an_error_message_of_several_lines_is_printed_as_one(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise LoopcError("first line\n  second line", node="n", op="Loop", hint="do this")

    monkeypatch.setattr(loopc.api, "run", refuse)
    result = CliRunner().invoke(cli, ["run", str(SAMPLE)])
    assert result.exit_code == 1
    assert result.output == "loopc: error: node 'n' (Loop): first line second line; do this\n"


def test_a_closed_stdout_is_not_an_error() -> None:
    proc = subprocess.run(f"'{LOOPC}' ops | head -c 10", shell=True, capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0
    assert proc.stdout == "ONNX ops t"
    assert proc.stderr == ""

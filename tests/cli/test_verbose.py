"""``-v`` works before or after the subcommand, as the error hint "run with -v" promises."""

from __future__ import annotations

import logging
import pathlib

import pytest
from click.testing import CliRunner

from loopc.cli import commands  # noqa: F401  (registers the subcommands)
from loopc.cli.main import cli


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize("command", ["build", "run", "inspect"])
def test_verbose_shows_the_traceback_either_side(tmp_path: pathlib.Path, command: str, where: str) -> None:
    args = [command, str(tmp_path / "absent.onnx")] + (["-o", str(tmp_path / "m.plan")] if command == "build" else [])
    args = ["-v", *args] if where == "before" else [*args, "-v"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    assert "Traceback (most recent call last)" in result.output
    assert result.output.strip().splitlines()[-1] == f"loopc: error: {tmp_path / 'absent.onnx'}: no such file"


@pytest.mark.parametrize(("args", "level"), [(["-v", "ops"], logging.INFO), (["ops", "-vv"], logging.DEBUG),
                                             (["-v", "ops", "-v"], logging.DEBUG), (["ops"], logging.WARNING)])
def test_verbosity_counts_on_both_sides(args: list[str], level: int) -> None:
    root = logging.getLogger()
    before = root.level
    try:
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        assert root.level == level
    finally:
        root.setLevel(before)

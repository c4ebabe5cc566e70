"""``inspect --why`` and ``build -v`` print, under each loop, the rewrites that did not apply and why."""

from __future__ import annotations

import pathlib

import onnx
import pytest
from click.testing import CliRunner

from loopc.cli import commands  # noqa: F401  (registers the subcommands)
from loopc.cli.main import cli
from tests.passes.test_why import data_stop


@pytest.fixture
def model(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "stop_on_sum.onnx"
    onnx.save(data_stop("stop_on_sum"), path)
    return path


def reasons(output: str) -> list[str]:
    """The lines of the reasons section, from its heading on."""
    lines = output.splitlines()
    start = lines.index("rewrites that did not apply, and why:")
    return lines[start:]


def test_inspect_why_names_the_loop_whose_trips_cannot_be_counted(model: pathlib.Path) -> None:
    result = CliRunner().invoke(cli, ["inspect", str(model), "--why"])
    assert result.exit_code == 0, result.output
    heading, loop, reason, *_ = reasons(result.output)
    assert "stop_on_sum" in loop
    assert reason.strip().startswith("counted-loops: its trip count cannot be counted: 'c_out'")


def test_inspect_without_why_prints_no_reasons(model: pathlib.Path) -> None:
    result = CliRunner().invoke(cli, ["inspect", str(model)])
    assert result.exit_code == 0, result.output
    assert "did not apply" not in result.output


def test_build_verbose_prints_the_reasons_after_the_build(model: pathlib.Path, tmp_path: pathlib.Path) -> None:
    result = CliRunner().invoke(cli, ["build", str(model), "-o", str(tmp_path / "m.plan"), "--max-trips", "100",
                                      "-v"])
    assert result.exit_code == 0, result.output
    lines = reasons(result.output)
    assert "stop_on_sum" in lines[1] and "counted-loops" in lines[2]
    assert result.output.index("wrote ") < result.output.index("rewrites that did not apply")


def test_a_loop_made_legal_the_slower_way_says_how_and_why_not_faster() -> None:
    """``samples/growing_cat.onnx`` grows a value it reads in the loop, five trips: unrolled, since no faster
    rule applies (the value is read inside the loop, so it is no concatenated output)."""
    sample = pathlib.Path(__file__).resolve().parents[2] / "samples" / "growing_cat.onnx"
    result = CliRunner().invoke(cli, ["inspect", str(sample), "--why"])
    assert result.exit_code == 0, result.output
    heading, loop, how, *_ = reasons(result.output)
    assert "/Loop" in loop
    assert how.strip().startswith("made legal by unroll: unrolled into 5 copies of its body (before it: ")
    assert "growing-concat: carried value 'out.13' is read inside the loop" in how

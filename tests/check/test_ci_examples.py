"""The CI examples in ``examples/ci`` run as written: each ``loopc check`` line, with the CI's variables filled in."""

from __future__ import annotations

import glob
import pathlib
import shlex
import shutil

import pytest
from click.testing import CliRunner

from loopc.cli import check as _check  # noqa: F401  (registers the subcommand)
from loopc.cli.main import cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARDS = 3
#: What each CI system puts in place of its variables for shard k (1-based) of 3.
VARIABLES = {
    "github-actions.yml": lambda k: {"${{ matrix.shard }}": str(k)},
    "gitlab-ci.yml": lambda k: {"$CI_NODE_INDEX": str(k), "$CI_NODE_TOTAL": str(SHARDS)},
}


def commands(example: pathlib.Path) -> list[str]:
    """The ``loopc check`` command lines of a workflow file (after ``run:`` or a script's ``-``)."""
    found = []
    for line in example.read_text().splitlines():
        text = line.strip().removeprefix("- ").removeprefix("run: ")
        if text.startswith("loopc check"):
            found.append(text)
    return found


def invoke(line: str) -> int:
    args = [arg for word in shlex.split(line)[1:] for arg in (sorted(glob.glob(word)) if "*" in word else [word])]
    result = CliRunner().invoke(cli, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code


@pytest.mark.parametrize("name", sorted(VARIABLES))
def test_the_example_runs_shards_then_merges(name: str, tmp_path: pathlib.Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    models = tmp_path / "models"
    models.mkdir()
    for stem in ("rnn.onnx", "rnn_inputs.npz"):
        shutil.copy(ROOT / "tests" / "check" / "project" / stem, models / stem)
    (models / "manifest.toml").write_text("".join(
        f"[[model]]\nname = 'rnn{k}'\npath = 'rnn.onnx'\ninputs = 'rnn_inputs.npz'\nreference = 'onnxruntime'\n"
        for k in range(4)))
    monkeypatch.chdir(tmp_path)
    assert invoke("loopc check models/manifest.toml --baseline models/baseline.json --update-baseline") == 0

    shard_line, merge_line = commands(ROOT / "examples" / "ci" / name)
    for k in range(1, SHARDS + 1):
        line = shard_line
        for variable, value in VARIABLES[name](k).items():
            line = line.replace(variable, value)
        assert invoke(line) == 0, line
    assert invoke(merge_line) == 0
    for report in ("loopc.xml", "loopc.md", "loopc.html"):
        assert (tmp_path / report).stat().st_size > 0
    assert (tmp_path / "loopc.md").read_text().count("rnn") >= 4

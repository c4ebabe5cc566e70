"""The README's quickstart, run line by line as a user types it: the export, the build, the run against
onnxruntime, with PyTorch's tokens, loopc's and onnxruntime's compared. The setup lines (a venv, pip) are what
this test environment already is; tests/test_package.py installs the wheel into a clean one."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
MARKER = "<!-- quickstart: tests/test_readme.py runs these lines -->"
SETUP = ("python3 -m venv", "pip install")


def quickstart() -> list[str]:
    """The commands of the README's quickstart block, comments dropped."""
    block = (ROOT / "README.md").read_text(encoding="utf-8").split(MARKER, 1)[1]
    body = block.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in body.splitlines() if line.split("#", 1)[0].strip()]


def test_the_setup_lines_ask_for_what_this_environment_has() -> None:
    setup = [line for line in quickstart() if line.startswith(SETUP)]
    assert setup and all(line.startswith(SETUP) for line in quickstart()[:len(setup)])
    pins = {name: version for line in setup for name, version in re.findall(r"(\w+)==([\w.]+)", line)}
    assert importlib.metadata.version("torch").split("+")[0] == pins["torch"]
    assert importlib.metadata.version("onnxruntime")  # the [check] extra


def test_the_quickstart_runs_line_by_line(tmp_path: pathlib.Path) -> None:
    shutil.copytree(ROOT / "samples" / "quickstart", tmp_path / "samples" / "quickstart")
    env = {**os.environ, "PATH": f"{pathlib.Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    printed = {}
    for line in quickstart():
        if line.startswith(SETUP):
            continue
        result = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 0, f"{line!r} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
        printed[line.split()[1] if line.startswith("loopc") else "export"] = result.stdout

    torch_tokens = ast.literal_eval(re.search(r"PyTorch's tokens: (\[.*\])", printed["export"]).group(1))
    run = printed["run"]
    values = re.search(r"^tokens: int64 \[\d+\]\n\[([^\]]*)\]", run, re.M)
    assert values is not None, run
    assert [int(v) for v in values.group(1).split()] == torch_tokens
    assert "tokens: matches onnxruntime: equal" in run
    assert "loop " in printed["inspect"] and (tmp_path / "quickstart" / "decoder.plan").stat().st_size > 0

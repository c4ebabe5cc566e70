"""The package as users get it: a wheel built from this tree, installed into a clean virtual environment with
``loopc[check]``, holds every module of the tree and runs every subcommand on the samples.

One test, so that the wheel is built and installed once whatever worker runs it (about a minute).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import venv

import numpy as np
import onnxruntime as ort

ROOT = pathlib.Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"


def tree_modules() -> list[str]:
    """Every module of the source tree, by the name it is installed under (``passes/`` is ``loopc.passes``)."""
    names = []
    for folder, package in ((ROOT / "loopc", "loopc"), (ROOT / "passes", "loopc.passes")):
        for path in sorted(folder.rglob("*.py")):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def sh(*args: str | os.PathLike[str], cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"{result.args} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_a_wheel_in_a_clean_venv_has_every_module_and_runs_every_subcommand(tmp_path: pathlib.Path) -> None:
    ok(sh(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", tmp_path / "dist", ROOT, cwd=tmp_path))
    (wheel,) = (tmp_path / "dist").glob("loopc-*.whl")
    venv.EnvBuilder(with_pip=True).create(tmp_path / "env")
    bin_dir = tmp_path / "env" / "bin"
    ok(sh(bin_dir / "python", "-m", "pip", "install", "--quiet", f"{wheel}[check]", cwd=tmp_path))
    work = tmp_path / "work"  # not the checkout: what runs is the installed package
    work.mkdir()

    missing = ok(sh(bin_dir / "python", "-c", "import importlib, sys\nfor name in sys.argv[1:]:\n"
                    "    try: importlib.import_module(name)\n    except ImportError as e: print(name, e)",
                    *tree_modules(), cwd=work))
    assert missing == "", f"modules of the tree missing from the wheel:\n{missing}"
    where = ok(sh(bin_dir / "python", "-c", "import loopc.passes; print(loopc.passes.__file__)", cwd=work))
    assert str(tmp_path / "env") in where

    loopc = bin_dir / "loopc"
    assert ok(sh(loopc, "--version", cwd=work)).strip() == "loopc, version 0.1.0"
    assert "Commands:" in ok(sh(loopc, "--help", cwd=work))
    assert "Loop" in ok(sh(loopc, "ops", cwd=work))
    model, inputs = SAMPLES / "greedy_gru_decoder.onnx", SAMPLES / "greedy_gru_decoder_inputs.npz"
    assert "loop /Loop__3: kCOUNT + kWHILE" in ok(sh(loopc, "inspect", model, cwd=work))
    ok(sh(loopc, "build", model, "-o", work / "decoder.plan", "-i", inputs, cwd=work))
    assert (work / "decoder.plan").stat().st_size > 0

    ok(sh(loopc, "run", model, "-i", inputs, "-o", work / "out.npz", cwd=work))
    feeds = dict(np.load(inputs))
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    want = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    got = dict(np.load(work / "out.npz"))
    assert got.keys() == want.keys() and all(np.array_equal(got[k], want[k]) for k in want)

    ok(sh(loopc, "export", model, "-o", work / "decoder.loopc.onnx", cwd=work))
    assert "matches onnxruntime" in ok(sh(loopc, "run", work / "decoder.loopc.onnx", "-i", inputs,
                                          "--reference", "onnxruntime", cwd=work))
    (work / "manifest.toml").write_text(f'[[model]]\npath = "{model}"\ninputs = "{inputs}"\n'
                                        'reference = "onnxruntime"\n')
    checked = sh(loopc, "check", work / "manifest.toml", "--json", work / "check.json", cwd=work)
    ok(checked)
    assert '"numbers"' in (work / "check.json").read_text()

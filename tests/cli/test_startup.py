"""``loopc --version`` and ``loopc --help`` answer without importing what the subcommands need (numpy, onnx,
TensorRT): how long they take is measured by benchmarks/cli_startup.py; here, what they load."""

from __future__ import annotations

import subprocess
import sys

import pytest

from loopc.cli.main import SUBCOMMANDS, cli

HEAVY = ("numpy", "onnx", "ml_dtypes", "tensorrt", "tensorrt_rtx", "loopc.ir", "loopc.passes", "loopc.sim")

PROBE = """
import sys
from loopc.cli.main import main
sys.argv = ["loopc", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print("LOADED", " ".join(sorted(name for name in sys.modules if name.split(".")[0] in {HEAVY_ROOTS}
                                or name in {HEAVY})))
"""


def loaded(args: list[str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """The modules of ``heavy`` (a package counts with its submodules) that ``loopc ARGS`` imported."""
    roots = {name for name in heavy if "." not in name}
    code = PROBE.replace("{HEAVY_ROOTS}", repr(roots)).replace("{HEAVY}", repr(set(heavy)))
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True).stdout
    return out.rsplit("LOADED", 1)[1].split()


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["-h"]])
def test_version_and_help_load_nothing_heavy(args: list[str]) -> None:
    assert loaded(args) == [], f"loopc {' '.join(args)} imported {loaded(args)}"


@pytest.mark.parametrize("command", list(SUBCOMMANDS))
def test_a_subcommands_help_loads_no_onnx_tensorrt_or_ir(command: str) -> None:
    """Its options may need numpy (sizes, files), never the model machinery."""
    heavy = tuple(name for name in HEAVY if name != "numpy")
    assert loaded([command, "--help"], heavy) == []


def test_the_help_lists_each_subcommand_with_its_own_short_help() -> None:
    for name in SUBCOMMANDS:
        command = cli.get_command(None, name)  # type: ignore[arg-type]
        assert command is not None and command.get_short_help_str(limit=200) == SUBCOMMANDS[name][1]
    assert set(cli.commands) == set(SUBCOMMANDS)

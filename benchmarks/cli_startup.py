"""How long does ``loopc`` take to answer before it does any work? ``--version`` and ``--help`` beside a bare
Python start, run in turn (A B A B ...) so that a drifting machine moves both alike; medians and their ratios.

    python benchmarks/cli_startup.py [--runs N]

A subcommand imports what it needs when it runs (see ``loopc.cli.main.SUBCOMMANDS``), so these two should cost
little more than starting Python and click.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import subprocess
import sys
import time

BIN = pathlib.Path(sys.executable).parent
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "loopc --version": [str(BIN / "loopc"), "--version"],
    "loopc --help": [str(BIN / "loopc"), "--help"],
}


def wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    for command in COMMANDS.values():  # warm the file cache
        wall(command)
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.runs):
        for name, command in COMMANDS.items():
            times[name].append(wall(command))
    base = times["python -c pass"]
    print(f"{'command':<18} {'median s':>9} {'ratio to python -c pass (median of pairs)':>44}")
    for name, runs in times.items():
        ratio = statistics.median(a / b for a, b in zip(runs, base))
        print(f"{name:<18} {statistics.median(runs):>9.3f} {ratio:>44.2f}")


if __name__ == "__main__":
    main()

"""loopc's structured fuzzer: mutants of the samples, ONNX's loop node tests and corpus exports (and of their
input files and output paths) through the ``loopc`` command, judged against onnxruntime; prints the table of
outcomes by mutation kind and every failure with the command that reproduces it. Exits 1 on any failure.

    python benchmarks/fuzz_table.py --count 2000            # the full run
    python benchmarks/fuzz_table.py --seed 0 --only 17 --keep fuzz-mutants   # one mutant, kept to look at

The implementation is ``tests/fuzz/runner.py`` (the short run in the test suite uses it too).
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from tests.fuzz.runner import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())

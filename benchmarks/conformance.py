"""Print how the simulator does on the ONNX node tests that TensorRT's own parser builds.

    python benchmarks/conformance.py [-k NAME_SUBSTRING] [-v]
"""

from __future__ import annotations

import argparse
import logging
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # for the tests package

from tests.conformance import Sweep, node_test_cases, sweep  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", dest="pattern", help="only cases whose name contains this")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case's status")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    start = time.perf_counter()
    result = Sweep()
    for case_result in sweep(node_test_cases(args.pattern)):
        result.results.append(case_result)
        if args.verbose:
            print(f"{case_result.name}: {case_result.status} {case_result.detail[:200]}", flush=True)
    print(result.table())
    print(f"time: {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

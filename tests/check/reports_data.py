"""Check reports written by hand for the report tests, with fingerprints read from real networks.

The statuses, messages and differences are made up to cover every case a report must show (a
pass, each kind of failure, loopc's own error, skips, a manifest problem, unicode, markup and
control characters); the loops are real: each fingerprint is what :func:`describe_network` reads
from the network loopc compiles for a sample. ``MIXED_COUNTS`` and ``MIXED_CASES`` are counted
by hand from the report below, not computed from it.
"""

from __future__ import annotations

import functools
import pathlib
from typing import Any

from loopc.check.results import ERROR, FAILED, PASSED, SKIPPED, CheckResult, Difference, OutputComparison, \
    Report, TargetResult

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"

#: Names chosen to break naive reports: a pipe and unicode (Markdown), markup (HTML), a control character (XML).
PIPE_MODEL = "nested | loops ✓ décodeur"
MARKUP_MODEL = 'broken <script>alert("x")</script> & co'
CONTROL_MESSAGE = "\x1b[31minternal\x1b[0m error\x00 in pass\x07 'canonicalize'\nsecond line"


@functools.cache
def _network(sample: str) -> dict[str, Any]:
    from loopc.compiler import compile
    from loopc.fingerprint import describe_network

    return describe_network(compile(str(SAMPLES / sample)).network).to_dict()


def fingerprint(sample: str, engine_bytes: int, build_seconds: float,
                build_ratio: float | None = 1.0) -> dict[str, Any]:
    """A sample's real network description with the build figures ``loopc check`` adds."""
    return {**_network(sample), "engine_bytes": engine_bytes, "build_seconds": build_seconds,
            "build_ratio": build_ratio, "tensorrt": "1.2.0.54", "loopc": "0.1.0"}


def _passed(build: float = 2.5, numbers: float = 0.4, fingerprint: float = 0.01) -> list[CheckResult]:
    return [CheckResult("build", PASSED, seconds=build), CheckResult("numbers", PASSED, seconds=numbers),
            CheckResult("fingerprint", PASSED, seconds=fingerprint)]


def _decoder_outputs(worst_abs: float) -> list[OutputComparison]:
    return [OutputComparison("tokens", True, shape=[12]),  # integers: equal, no error measured
            OutputComparison("hidden", True, worst_abs, 3.5e-6, [16])]


def mixed_report() -> Report:
    """Six models × targets: passes, each kind of failure, an error, skips and a manifest problem."""
    results = [
        # two targets that built the same loops: one picture for both
        TargetResult("greedy_gru_decoder", "sm80", "samples/greedy_gru_decoder.onnx", 0, _passed(2.1),
                     _decoder_outputs(1.2e-6), fingerprint("greedy_gru_decoder.onnx", 1_250_000, 2.1, 0.98)),
        TargetResult("greedy_gru_decoder", "sm89", "samples/greedy_gru_decoder.onnx", 0, _passed(2.4),
                     _decoder_outputs(2.5e-6), fingerprint("greedy_gru_decoder.onnx", 1_310_000, 2.4, 1.05)),
        # wrong numbers; the fingerprint moved within the thresholds
        TargetResult(PIPE_MODEL, "sm89", "samples/nested_loops.onnx", 1, [
            CheckResult("build", PASSED, seconds=0.9),
            CheckResult("numbers", FAILED, "output 'y': max abs error 0.5, max rel 0.25, beyond rtol 1e-05 / atol "
                        "1e-05", "y: max abs 0.5, max rel 0.25\nz | w: max abs 0, max rel 0", 0.2),
            CheckResult("fingerprint", PASSED, seconds=0.01)],
            [OutputComparison("y", False, 0.5, 0.25, [1]), OutputComparison("z | w", True, 0.0, 0.0, [1])],
            fingerprint("nested_loops.onnx", 40_960, 0.9),
            [Difference("build seconds", 0.8, 0.9, False)]),
        # per-iteration work up: a regression
        TargetResult("loop_if", "sm89", "samples/openvino/loop_if.xml", 2, [
            CheckResult("build", PASSED, seconds=0.7), CheckResult("numbers", PASSED, seconds=0.1),
            CheckResult("fingerprint", FAILED, "loop Loop_1_loop__38: layers per iteration: 6 -> 8",
                        "REGRESSION loop Loop_1_loop__38: layers per iteration: 6 -> 8\nengine bytes: 30000 -> 31000",
                        0.02)],
            [OutputComparison("Y", True, 0.0, 0.0, [3])],
            fingerprint("openvino/loop_if.xml", 31_000, 0.7),
            [Difference("loop Loop_1_loop__38: layers per iteration", 6, 8, True),
             Difference("engine bytes", 30_000, 31_000, False)]),
        # the model file is missing: the build fails, the rest is skipped
        TargetResult(MARKUP_MODEL, "sm89", "missing.onnx", 3, [
            CheckResult("build", FAILED, "missing.onnx: no such file", seconds=0.001),
            CheckResult("numbers", SKIPPED, "not built"), CheckResult("fingerprint", SKIPPED, "not built")]),
        # loopc's own error, with control characters and markup in the message and details
        TargetResult("crashes", "sm89", "samples/openvino/loop_in_loop.xml", 4, [
            CheckResult("build", ERROR, CONTROL_MESSAGE,
                        "Traceback (most recent call last):\n  File \"x.py\", line 1\n    a < b && c ]]> d\x0b\n"
                        "InternalError: boom", 0.3),
            CheckResult("numbers", SKIPPED, "not built"), CheckResult("fingerprint", SKIPPED, "not built")]),
        # a model table the manifest could not read
        TargetResult("model 6", "-", "", 5, [
            CheckResult("manifest", FAILED, "[[model]] 6: unknown key 'tolerance' (did you mean 'rtol'?)")]),
    ]
    return Report("tests/check/manifest.toml", "0.1.0", "1.2.0.54", "sim", None, "2025-03-04T05:06:07+02:00",
                  12.5, results)


#: Counted by hand from :func:`mixed_report`.
MIXED_COUNTS = {PASSED: 10, FAILED: 4, ERROR: 1, SKIPPED: 4}
#: (classname, testcase name) of every testcase, counted by hand: one per model × target × check.
MIXED_CASES = {
    ("loopc.check.greedy_gru_decoder", f"{check} [{target}]")
    for check in ("build", "numbers", "fingerprint") for target in ("sm80", "sm89")
} | {
    (f"loopc.check.{model}", f"{check} [sm89]")
    for model in (PIPE_MODEL, "loop_if", MARKUP_MODEL, "crashes") for check in ("build", "numbers", "fingerprint")
} | {("loopc.check.model 6", "manifest [-]")}
#: Models × targets in the order of the table.
MIXED_ROWS = [("greedy_gru_decoder", "sm80"), ("greedy_gru_decoder", "sm89"), (PIPE_MODEL, "sm89"),
              ("loop_if", "sm89"), (MARKUP_MODEL, "sm89"), ("crashes", "sm89"), ("model 6", "-")]


def passing_report() -> Report:
    """One model on one target, every check passed."""
    result = TargetResult("greedy_gru_decoder", "sm89", "samples/greedy_gru_decoder.onnx", 0, _passed(),
                          _decoder_outputs(1e-6), fingerprint("greedy_gru_decoder.onnx", 1_310_000, 2.4))
    return Report("manifest.toml", "0.1.0", "1.2.0.54", started="2025-03-04T05:06:07", seconds=3.0, results=[result])


def empty_report() -> Report:
    """A shard that got no models: every report must still be well formed."""
    return Report("manifest.toml", "0.1.0", "1.2.0.54", shard="3/3")

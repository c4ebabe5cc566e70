"""ONNX's own node tests for ops TensorRT lacks and loopc lowers (uint8 arithmetic computed in INT32,
CumProd, NonMaxSuppression, DFT/STFT, AffineGrid): built with the real builder, simulated, and compared
with the expected outputs the tests ship. The cases loopc refuses are listed with the reason it gives."""

from __future__ import annotations

import re

from loopc.conformance import MATCH, PARSE_FAILED, node_test_cases, run_case

#: Names (regular expressions, matched whole) of the cases that must match.
MATCHING = (
    r"test_(add|sub|mul|div|mod|max|min|greater|less)_uint8",
    r"test_(greater|less)_equal_uint8(_expanded)?",
    r"test_cumprod_.*",
    r"test_nonmaxsuppression_.*",
    r"test_dft(_axis|_inverse)?(_opset19)?",
    r"test_dft_(rfft|irfft)_opset19",
    r"test_affine_grid_(2d|3d|2d_align_corners)(_expanded)?",
)
#: Refused, and a phrase of the reason: an axis, or a frame step, given as an input sets the output's
#: shape (the one-sided DFT's length is on the axis the input picks).
REFUSED: dict[str, str] = {
    "test_dft_rfft": "an axis computed when the engine runs",
    "test_dft_irfft": "an axis computed when the engine runs",
    "test_stft": "a frame_step computed when the engine runs",
    "test_stft_with_window": "a frame_step computed when the engine runs",
    # 2 / (D - 1), or 0 when D == 1: a condition on the size input's values, branches of ranks 1 and 0
    "test_affine_grid_3d_align_corners": "rank 0 in one branch, 1 in the other",
    "test_affine_grid_3d_align_corners_expanded": "rank 0 in one branch, 1 in the other",
}


def _check(names: list[str]) -> list[str]:
    wrong = []
    for case in node_test_cases():
        if case.name not in names:
            continue
        result = run_case(case, "loopc")
        if case.name in REFUSED:
            ok = result.status == PARSE_FAILED and REFUSED[case.name] in result.detail
        else:
            ok = result.status == MATCH
        if not ok:
            wrong.append(f"{case.name}: {result.status}: {result.detail}")
        names.remove(case.name)
    return wrong + [f"{name}: not among ONNX's node tests" for name in names]


def test_node_cases_through_loopc():
    """One test over all cases (collecting ONNX's node tests takes seconds: not at collection time)."""
    pattern = re.compile("|".join(f"(?:{p})" for p in MATCHING))
    names = sorted({c.name for c in node_test_cases() if pattern.fullmatch(c.name)} | set(REFUSED))
    assert len(names) >= 13 + 9 + 10 + 12 + 8, names
    wrong = _check(names)
    assert not wrong, "\n".join(wrong)

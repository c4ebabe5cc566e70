"""ONNX's own node tests for ops TensorRT lacks and loopc lowers (uint8 arithmetic computed in INT32,
CumProd, NonMaxSuppression, DFT/STFT, AffineGrid): built with the real builder, simulated, and compared
with the expected outputs the tests ship. The cases loopc refuses are listed with the reason it gives."""

from __future__ import annotations

import re

from tests.conformance import node_test_cases
from tests.onnx_cases import loopc_failures

#: Names (regular expressions, matched whole) of the cases that must match.
MATCHING = (
    r"test_(add|sub|mul|div|mod|max|min|greater|less)_uint8",
    r"test_(greater|less)_equal_uint8(_expanded)?",
    r"test_cumprod_.*",
    r"test_nonmaxsuppression_.*",
    r"test_dft(_axis|_inverse)?(_opset19)?",
    r"test_dft_(rfft|irfft)_opset19",
    r"test_affine_grid_(2d|3d)(_align_corners)?(_expanded)?",
    r"test_stft_with_window",
)
#: Refused, and a phrase of the reason: an axis given as an input sets the output's shape (the one-sided
#: DFT's length is on the axis the input picks); a frame length given as an input sets the DFT's matrix.
REFUSED: dict[str, str] = {
    "test_dft_rfft": "an axis computed when the engine runs",
    "test_dft_irfft": "an axis computed when the engine runs",
    "test_stft": "a frame_length computed when the engine runs",
}


def test_node_cases_through_loopc():
    """One test over all cases (collecting ONNX's node tests takes seconds: not at collection time)."""
    pattern = re.compile("|".join(f"(?:{p})" for p in MATCHING))
    cases = [c for c in node_test_cases() if pattern.fullmatch(c.name) or c.name in REFUSED]
    assert len(cases) == 13 + 9 + 10 + 12 + 8, sorted(c.name for c in cases)
    assert set(REFUSED) <= {c.name for c in cases}
    wrong = loopc_failures(cases, REFUSED)
    assert not wrong, "\n".join(wrong)

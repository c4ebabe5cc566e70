"""``loopc ops``: the sequence ops the passes read and the targets TensorRT-RTX builds for, each under its heading."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from loopc.cli import commands  # noqa: F401  (registers the subcommands)
from loopc.cli.main import cli
from loopc.trt import is_rtx, trt


def section(heading_start: str) -> tuple[str, list[str]]:
    """The heading that starts with ``heading_start`` and the words listed under it."""
    result = CliRunner().invoke(cli, ["ops"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    (at,) = [i for i, line in enumerate(lines) if line.startswith(heading_start)]
    return lines[at], lines[at + 1].split()


def test_the_sequence_ops_are_listed_with_when_they_are_read() -> None:
    """ONNX's sequence ops (its operator list, less SequenceMap, which is built from its function body and listed
    there), each of which the static-sequences pass turns into tensors."""
    heading, listed = section("ONNX sequence ops")
    assert heading == ("ONNX sequence ops, read when each sequence's length is known before the model runs, or when a "
                       "loop appends to it (SequenceInsert) and it is stacked after the loop (ConcatFromSequence):")
    assert listed == ["ConcatFromSequence", "SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase",
                      "SequenceInsert", "SequenceLength", "SplitToSequence"]


def test_the_targets_are_listed_in_numeric_order_as_users_type_them() -> None:
    if not is_rtx():
        pytest.skip("compute-capability targets are a TensorRT-RTX feature")
    heading, listed = section("Targets")
    assert heading == "Targets TensorRT-RTX builds for (--target):"
    assert listed == [f"sm{int(m)}" for m in sorted(trt().ComputeCapability.__members__.values(), key=int)
                      if m.name.startswith("SM")]
    assert listed[:4] == ["sm75", "sm80", "sm86", "sm89"]  # tensorrt_rtx 1.x: then sm120, sm121

"""Attribute defaults come from ONNX's schemas: values as ONNX's operator documents state them."""

from __future__ import annotations

import numpy as np
import pytest

from loopc.errors import InternalError
from loopc.ir import Node, Value
from loopc.semantics.attributes import attr, text


def _node(op: str, **attrs: object) -> Node:
    return Node(op, [Value("x", np.dtype(np.float32), (2, 3))], [Value("y")], dict(attrs))


def test_an_absent_attribute_reads_its_documented_default() -> None:
    assert attr(_node("Gather"), "axis") == 0
    assert attr(_node("Softmax"), "axis") == -1
    assert attr(_node("Flatten"), "axis") == 1
    assert attr(_node("ReduceSum"), "keepdims") == 1
    assert attr(_node("LRN", size=3), "beta") == 0.75
    assert text(_node("Resize"), "coordinate_transformation_mode") == "half_pixel"


def test_a_present_attribute_wins() -> None:
    assert attr(_node("Gather", axis=1), "axis") == 1
    assert text(_node("Resize", mode=b"cubic"), "mode") == "cubic"


def test_a_required_attribute_has_no_default() -> None:
    with pytest.raises(InternalError, match="Concat has no attribute 'axis'"):
        attr(_node("Concat"), "axis")

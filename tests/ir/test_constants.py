"""Reading constants off the IR: ``constant_int`` takes one integer element, and nothing else."""

from __future__ import annotations

import numpy as np
import pytest

from loopc.ir import Node, Value, constant_int


def _constant(array: np.ndarray) -> Value:
    value = Value("c", array.dtype, array.shape)
    Node("Constant", [], [value], {"value": array})
    return value


@pytest.mark.parametrize("array, expected", [
    (np.array(7, np.int64), 7), (np.array([-3], np.int32), -3), (np.array([[5]], np.uint8), 5),
    (np.array([1, 2], np.int64), None), (np.array(2.0, np.float32), None), (np.array([], np.int64), None),
])
def test_one_integer_element_or_nothing(array, expected):
    assert constant_int(_constant(array)) == expected


def test_a_computed_value_is_not_a_constant():
    assert constant_int(Value("x", np.dtype(np.int64), ())) is None and constant_int(None) is None

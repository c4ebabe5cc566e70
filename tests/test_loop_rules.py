"""The loop rules the IR interpreter and the simulator share, against hand-worked values."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from loopc.errors import LoopcError
from loopc.loop_rules import MAX_TRIPS, endless, no_trips, padded, poison, saturate_trips


@pytest.mark.parametrize("count, trips", [(-5, 0), (0, 0), (7, 7), (2**31 - 1, 2**31 - 1), (2**40, 2**31 - 1)])
def test_trip_counts_saturate(count, trips):
    assert saturate_trips(count) == trips and MAX_TRIPS == 2**31 - 1


@pytest.mark.parametrize("dtype, check", [
    (np.float32, np.isnan), (np.float16, np.isnan), (ml_dtypes.bfloat16, lambda v: v != v),
    (ml_dtypes.float8_e4m3fn, lambda v: v != v), (np.bool_, lambda v: v is True),
    (np.int32, lambda v: v == -2**31), (np.int64, lambda v: v == -2**63), (np.uint8, lambda v: v == 0),
])
def test_poison_is_no_value_a_correct_computation_makes(dtype, check):
    assert check(poison(np.dtype(dtype)))


def test_stacked_outputs_pad_to_their_length_with_poison():
    stacked = np.array([[1, 2], [3, 4]], np.int32)  # two trips stacked on axis 1 of [2] values
    got = padded(stacked, 1, 2, 4, "out")
    np.testing.assert_array_equal(got, [[1, 2, -2**31, -2**31], [3, 4, -2**31, -2**31]])
    assert padded(stacked, 1, 2, 2, "out") is stacked
    with pytest.raises(LoopcError, match="out: the loop ran 2 trips, but this output was built to hold 1 .* the bound "
                                         "max_trips= gives.*build with a bound on its trips, at least the most it runs, "
                                         "with max_trips=N"):
        padded(stacked, 1, 2, 1, "out")


def test_a_loop_that_ran_no_trips_stacks_nothing_along_its_axis():
    assert no_trips((3, 5), 1, np.dtype(np.float32)).shape == (3, 0, 5)
    assert "did not end within 9 trips" in endless("loop 'x'", 9)

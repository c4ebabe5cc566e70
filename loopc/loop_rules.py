"""What a loop does at its edges, stated once: the IR interpreter and the simulator both follow these rules
(each still computes the loop's body its own way), and the backend and the frontends build loops by them.

- **Trip counts saturate** to ``[0, MAX_TRIPS]``, never wrap: ONNX's ``M`` is an int64, a negative count runs
  no trip, and TensorRT's trip limit is an int32, so a loop needing more than ``MAX_TRIPS`` trips is out of
  any engine's reach.
- **A loop that does not end** within ``max_iterations`` trips (``DEFAULT_MAX_ITERATIONS`` unless the caller
  says otherwise) is an error, not a hang.
- **Stacked outputs are padded** to their length with a value no correct computation makes (NaN, the most
  negative integer, True): TensorRT leaves the padding "arbitrary", so anything that reads it must show up
  as a mismatch rather than pass by luck.
- **A loop that ran no trips** gives its last-value outputs their initial values, and its stacked outputs
  length 0 along their axis with the element shape of the value stacked.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from loopc.errors import LoopcError
from loopc.limits import check_constant
from loopc.spelling import option

#: Most trips any loop runs (TensorRT's trip limit is an int32).
MAX_TRIPS = 2**31 - 1
#: Trips a loop may run before the interpreter or the simulator calls it endless.
DEFAULT_MAX_ITERATIONS = 100_000


def bound_hint() -> str:
    """What gives a loop whose trips loopc cannot tell a length for its collected outputs: the user's bound,
    spelled as the user gives it (``--max-trips N`` on the command line, ``max_trips=N`` in Python)."""
    flag = option("--max-trips")
    return f"give a bound on its trips, at least the most it runs, with {flag}{'N' if flag.endswith('=') else ' N'}"


def saturate_trips(count: int) -> int:
    """A trip count as loopc runs it: saturated to [0, MAX_TRIPS], never wrapped."""
    return min(max(int(count), 0), MAX_TRIPS)


def endless(what: str, max_iterations: int) -> str:
    """The error for a loop still running after ``max_iterations`` trips."""
    return f"{what} did not end within {max_iterations} trips; raise max_iterations if it should run longer"


def poison(dtype: np.dtype[Any]) -> Any:
    """What padding (and any element TensorRT leaves arbitrary) holds: a value no correct computation
    produces. NaN for floating types (the narrow ones NumPy does not class as floats too), True for bools,
    the most negative value for integers."""
    if dtype.kind in "fc" or (dtype.kind == "V" and "float" in dtype.name):
        return np.nan
    if dtype == np.bool_:
        return True
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return 0


def no_trips(element_shape: tuple[int, ...], axis: int, dtype: np.dtype[Any]) -> np.ndarray:
    """A stacked output of a loop that ran no trips: length 0 along ``axis``."""
    return np.empty(element_shape[:axis] + (0,) + element_shape[axis:], dtype=dtype)


def padded(stacked: np.ndarray, axis: int, trips: int, length: int, what: str,
           error: type[LoopcError] = LoopcError) -> np.ndarray:
    """``stacked`` (the ``trips`` values stacked on ``axis``) padded to ``length`` with :func:`poison`;
    ``error`` (naming ``what``) when the length is shorter than the trips run. A padded output is allocated
    at its full length whatever the trips run, so it is held to loopc's limit for one tensor first."""
    if length < trips:
        raise error(f"{what}: the loop ran {trips} trips, but this output was built to hold {length} (its length is "
                    "fixed when the engine is built: the loop's trip count, or for a while loop with none the bound "
                    f"{option('--max-trips')} gives)", hint=f"{bound_hint().replace('give', 'build with', 1)}")
    if length == trips:
        return stacked
    shape = list(stacked.shape)
    shape[axis] = length
    check_constant(shape, stacked.dtype, f"{what}, padded to its length {length} whatever the trips run")
    widths = [(0, 0)] * stacked.ndim
    widths[axis] = (0, length - trips)
    return np.pad(stacked, widths, constant_values=poison(stacked.dtype))

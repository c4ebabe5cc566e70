"""Canonicalization and optimization passes over the loop IR, installed as ``loopc.passes``.

One module per pass; :func:`default_passes` is the pipeline ``loopc build`` runs.
"""

from __future__ import annotations

from loopc.passes.dead_code import DeadCode
from loopc.passes.gather_to_iterator import GatherToIterator
from loopc.passes.growing_concat import GrowingConcat
from loopc.passes.invariants import Invariants
from loopc.passes.manager import Pass, PassManager, PassResult
from loopc.passes.sequence_accumulation import SequenceAccumulation
from loopc.passes.trip_limits import TripLimits
from loopc.passes.unroll import Unroll

__all__ = ["DeadCode", "GatherToIterator", "GrowingConcat", "Invariants", "Pass", "PassManager", "PassResult",
           "SequenceAccumulation", "TripLimits", "Unroll", "default_passes"]


def default_passes() -> list[Pass]:
    """The canonicalization pipeline, in the order that lets each pass feed the next."""
    return [
        Invariants(), TripLimits(), SequenceAccumulation(), GrowingConcat(), Unroll(), GatherToIterator(), DeadCode()
    ]

"""Canonicalization and optimization passes over the loop IR, installed as ``loopc.passes``.

One module per pass; :func:`default_passes` is the pipeline ``loopc build`` runs.
"""

from __future__ import annotations

from loopc.passes.dead_code import DeadCode
from loopc.passes.gather_to_iterator import GatherToIterator
from loopc.passes.invariants import Invariants
from loopc.passes.manager import Pass, PassManager, PassResult
from loopc.passes.sequence_accumulation import SequenceAccumulation
from loopc.passes.trip_limits import TripLimits

__all__ = ["DeadCode", "GatherToIterator", "Invariants", "Pass", "PassManager", "PassResult",
           "SequenceAccumulation", "TripLimits", "default_passes"]


def default_passes() -> list[Pass]:
    """The canonicalization pipeline, in the order that lets each pass feed the next."""
    return [Invariants(), TripLimits(), SequenceAccumulation(), GatherToIterator(), DeadCode()]

"""Canonicalization and optimization passes over the loop IR, installed as ``loopc.passes``.

One module per pass; :func:`default_passes` is the pipeline ``loopc build`` runs.
"""

from __future__ import annotations

from collections.abc import Collection

from loopc.optimizations import OPTIMIZATIONS
from loopc.passes._sequence_lengths import SEQUENCE_OPS
from loopc.passes.bounded_resize import BoundedResize
from loopc.passes.broadcast_carries import BroadcastCarries
from loopc.passes.constant_folding import ConstantFolding
from loopc.passes.counted_loops import CountedLoops
from loopc.passes.dead_code import DeadCode
from loopc.passes.dropped_writes import DroppedWrites
from loopc.passes.float_trip_count import FloatTripCount
from loopc.passes.gather_to_iterator import GatherToIterator
from loopc.passes.growing_concat import GrowingConcat
from loopc.passes.fixed_ranges import FixedRanges
from loopc.passes.grown_buffers import GrownBuffers
from loopc.passes.heads_first import HeadsFirst
from loopc.passes.identities import Identities
from loopc.passes.inline_one_trip import InlineOneTrip
from loopc.passes.invariants import Invariants
from loopc.passes.loop_distribution import LoopDistribution
from loopc.passes.narrow_products import NarrowProducts
from loopc.passes.pasted_resize import PastedResize
from loopc.passes.profile_conditionals import PinnedDims, ProfileConditionals
from loopc.passes.row_slices import RowSlices
from loopc.passes.legalize import Rule, legal_at_the_end, legalization
from loopc.passes.manager import Pass, PassManager, PassResult, Phase
from loopc.passes.scatter_to_concat import ScatterToConcat
from loopc.passes.sequence_accumulation import SequenceAccumulation
from loopc.passes.shape_refinement import ShapeRefinement
from loopc.passes.squeezed_rows import SqueezedRows
from loopc.passes.stacked_outputs import StackedOutputs
from loopc.passes.static_conditionals import StaticConditionals
from loopc.passes.static_sequences import StaticSequences
from loopc.passes.steady_carries import SteadyCarries
from loopc.passes.trip_limits import TripLimits
from loopc.passes.unroll import Unroll
from loopc.passes.wavefront import Wavefront
from loopc.passes.weight_layout import WeightLayout
from loopc.passes.while_outputs import WhileOutputs

__all__ = ["BoundedResize", "BroadcastCarries", "ConstantFolding", "CountedLoops", "DeadCode", "DroppedWrites", "FixedRanges", "FloatTripCount", "GatherToIterator", "GrowingConcat", "GrownBuffers", "HeadsFirst", "Identities", "InlineOneTrip", "Invariants", "LoopDistribution", "NarrowProducts", "OPTIMIZATIONS", "Pass", "PassManager", "PassResult", "Phase", "PastedResize", "PinnedDims", "ProfileConditionals",
           "RowSlices", "SEQUENCE_OPS", "ScatterToConcat", "SequenceAccumulation", "ShapeRefinement", "SqueezedRows", "StackedOutputs", "StaticConditionals", "StaticSequences", "SteadyCarries", "TripLimits", "Unroll", "Wavefront", "WeightLayout", "WhileOutputs",
           "default_passes"]




def default_passes(max_trips: int | None = None, disabled: Collection[str] = (), pinned: PinnedDims | None = None
                   ) -> list[Phase]:
    """The pipeline ``loopc build`` runs, as phases each run to a fixed point, without the optimizations named
    in ``disabled`` (see :data:`OPTIMIZATIONS`; the others are needed to build):

    1. canonicalize: fold, refine shapes, decide what the build can decide, count loops, remove dead code;
    2. legalize: make every loop legal for TensorRT (:mod:`loopc.passes.legalize`), canonicalizing after each
       rewrite; a loop left illegal is refused here, naming per rule why it did not apply;
    3. optimize: what makes legal loops faster;
    4. finalize: pad the collected outputs of while loops, and drop what is dead;
    5. layout: split attention's heads after one Reshape and Transpose (:mod:`loopc.passes.heads_first`) and
       hold the products' weights as TensorRT stores them once (:mod:`loopc.passes.weight_layout`), after
       every folding, which would undo it.

    ``max_trips`` is the user's bound on while loops' trips (``--max-trips``), never a guess; ``pinned``, the
    dims the build's profile pins (see :mod:`loopc.passes.profile_conditionals`). Dead code goes early too: the
    accumulation passes count a carried value's readers, and unrolling and while-outputs refuse what they
    cannot express, so no dead reader may be left for them to see.
    """
    unknown = sorted(set(disabled) - set(OPTIMIZATIONS))
    if unknown:
        raise ValueError(f"cannot disable {', '.join(unknown)}: the optimizations are {', '.join(OPTIMIZATIONS)}")

    def kept(passes: list[Pass]) -> list[Pass]:
        return [p for p in passes if p.name not in disabled]

    canonicalize = kept([
        ShapeRefinement(), ConstantFolding(), ProfileConditionals(pinned or {}), StaticConditionals(), Identities(),
        StaticSequences(), NarrowProducts(), Invariants(), InlineOneTrip(), CountedLoops(), TripLimits(), DeadCode(),
        SequenceAccumulation()])
    rules: list[Rule] = [FixedRanges(), RowSlices(), SqueezedRows(), GatherToIterator(), DroppedWrites(), GrowingConcat(),
                         PastedResize(), BoundedResize(), SteadyCarries(), BroadcastCarries(), GrownBuffers(max_trips),
                         Unroll()]
    optimize = kept([StackedOutputs(), ScatterToConcat(), LoopDistribution(), Wavefront(),
                     FloatTripCount(max_trips)])
    return [Phase("canonicalize", canonicalize), legalization(canonicalize, rules),
            Phase("optimize", [*canonicalize, *optimize]),
            Phase("finalize", [*canonicalize, WhileOutputs(max_trips)], ensure=legal_at_the_end),
            Phase("layout", kept([HeadsFirst(), WeightLayout()]))]

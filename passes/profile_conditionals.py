"""Conditionals the build's profile decides: inlined.

TorchScript exports ``x.squeeze(-1)`` as ``If(Shape(x)[-1] == 1, Squeeze(x), x)``: branches of different
ranks, which one TensorRT IIfConditional cannot merge. With dynamic dims the condition is not a
constant, so static-conditionals cannot inline it; but an engine only ever sees the shapes its profile
admits, and where the profile pins the dims the condition reads (min = max, from ``--shapes`` or the
example inputs), only one branch can ever run in it. Silero VAD's decoder is such a model.

The pass asks what each such condition is at the pinned dims: it gives the graph's inputs those dims,
refines shapes and folds constants as shape-refinement does, reads the conditions, and then puts every
shape back — the network keeps its dynamic inputs, and nothing but the decided conditionals changes.
Only conditionals TensorRT cannot take (branches of different ranks) are decided: the others stay
run-time conditionals, valid at any shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from loopc.ir import Graph, If, Value
from loopc.passes._why import Declines, declined, recording
from loopc.passes.manager import PassResult
from loopc.passes.shape_refinement import _refine_all, _values_in
from loopc.passes.static_conditionals import _inline

#: Dims per input name: an int where the profile pins the dim, None where it leaves it free.
PinnedDims = Mapping[str, Sequence[int | None]]


class ProfileConditionals:
    name = "profile-conditionals"

    def __init__(self, pinned: PinnedDims) -> None:
        self.pinned = pinned

    def __call__(self, graph: Graph) -> PassResult:
        undecided = [node for _, node in graph.find("If") if isinstance(node, If) and ranks_differ(node)]
        if not undecided or not self.pinned:
            for conditional in undecided:
                declined("its branches give results of different ranks, and the profile pins no dims", at=conditional)
            return PassResult(graph, False)
        decided = self._decide(graph, undecided)
        for conditional in undecided:
            if conditional not in decided:
                declined("its branches give results of different ranks, and its condition is not decided by "
                         "the dims the profile pins", at=conditional)
        for outer, node in graph.structured():
            if node in decided:
                taken = node.then_branch if decided[node] else node.else_branch
                _inline(graph, outer, node, taken, list(taken.outputs))
        return PassResult(graph, bool(decided), {"conditionals": len(decided)} if decided else {})

    def _decide(self, graph: Graph, nodes: list[If]) -> dict[If, bool]:
        """Each of ``nodes`` whose condition is a constant at the pinned dims, with that constant."""
        before = {value: value.shape for value in _values_in(graph)}
        try:
            for value in graph.inputs:
                pins = self.pinned.get(value.name)
                if pins is not None and value.shape is not None and len(pins) == len(value.shape):
                    value.shape = tuple(d if isinstance(d, int) else p for d, p in zip(value.shape, pins))
            computed: dict[Value, np.ndarray] = {}
            with recording(self.name, Declines()):  # what refining at the pinned dims declines is not the graph's
                _refine_all(graph, computed)
            conditions = {node: computed.get(node.inputs[0]) for node in nodes if node.inputs[0] is not None}
        finally:
            for value, shape in before.items():
                value.shape = shape
        return {node: bool(np.asarray(c).reshape(-1)[0]) for node, c in conditions.items()
                if c is not None and np.asarray(c).size == 1}


def ranks_differ(node: If) -> bool:
    """Whether some result of ``node`` has one known rank in one branch and another in the other."""
    for a, b in zip(node.then_branch.outputs, node.else_branch.outputs):
        if a.shape is not None and b.shape is not None and len(a.shape) != len(b.shape):
            return True
    return False

"""What a legalizing rule's reasons are about: the nodes and carried values TensorRT cannot build where they are.

A rule looks at every node of its form (every Slice, every Range, every carried value), and TensorRT builds most
of them as they are: a rule that leaves a legal node alone has declined nothing, and saying so would bury the
reasons that matter. :class:`Offending` answers, from :mod:`loopc.ir.target`, whether a node or carried value breaks
TensorRT's loop rule (each loop's per-trip values computed once per run); :func:`loopc.passes._why.kept_if`
keeps the reasons a rule records while it looks at one only when it does.
"""

from __future__ import annotations

from loopc.ir import Graph, Loop, Node, Recurrence, Value
from loopc.ir.target import illegal, illegal_carries, per_trip_values


class Offending:
    """Asked by one run of a rule; :meth:`changed` after each of its rewrites, which may change what varies."""

    def __init__(self) -> None:
        self._varying: dict[Loop, set[Value]] = {}
        self._carried: dict[Loop, set[Value]] = {}

    def node(self, node: Node) -> bool:
        """Whether TensorRT cannot build ``node`` inside one of the loops around it."""
        graph: Graph | None = node.graph
        while graph is not None and graph.owner is not None:
            owner = graph.owner
            if isinstance(owner, Loop) and illegal(node, owner, self._per_trip(owner)) is not None:
                return True
            graph = owner.graph
        return False

    def carry(self, loop: Loop, rec: Recurrence) -> bool:
        """Whether ``loop`` cannot carry ``rec``'s value: its shape changes between trips."""
        carried = self._carried.get(loop)
        if carried is None:
            carried = self._carried[loop] = {state for state, _ in illegal_carries(loop)}
        return rec.state in carried

    def carries(self, loop: Loop) -> bool:
        """Whether ``loop`` carries a value whose shape changes between trips."""
        return next(illegal_carries(loop), None) is not None

    def changed(self) -> None:
        self._varying.clear()
        self._carried.clear()

    def _per_trip(self, loop: Loop) -> set[Value]:
        varying = self._varying.get(loop)
        if varying is None:
            varying = self._varying[loop] = per_trip_values(loop)
        return varying


__all__ = ["Offending"]

"""A stacked loop output read backwards, or with its trips moved to another axis, is stacked that way: after the
loop, ``Slice(ys, -1, -inf, axis, -1)`` becomes TensorRT's kREVERSE output, and a ``Transpose`` that only moves
the trip axis 0 to axis k becomes a kCONCATENATE (or kREVERSE) output on axis k. Either writes the trips where
they belong as they run, instead of copying them after the loop.

ONNX's ``Loop`` stacks its scan outputs forward on axis 0, so ``loopc export`` writes the other forms as this
Slice and Transpose (and exporters reversing or transposing a sequence write the same); reading the export back
gives the loop its outputs again. A loop that can stop early keeps its forward outputs: their reversed form is
not supported.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from loopc.ir import Graph, Loop, LoopOutput, Node, constant_value
from loopc.passes._why import declined
from loopc.passes.manager import PassResult


class StackedOutputs:
    name = "stacked-outputs"

    def __call__(self, graph: Graph) -> PassResult:
        rewritten = 0
        for _, node in graph.structured():
            if not isinstance(node, Loop):
                continue
            for out in node.loop_outputs:
                readers = [use.user for use in out.result.uses()]
                if out.kind == "last" or not readers:
                    continue
                backwards = out.kind == "concat" and all(_reverses(r, out) for r in readers)
                if backwards and node.condition is None:
                    node.update(out, kind="reverse")
                    out.result.learn_shape(readers[0].outputs[0].shape)  # type: ignore[union-attr]
                elif out.axis == 0 and (axis := _moved_to(readers)) is not None:
                    node.update(out, axis=axis)
                    out.result.shape = readers[0].outputs[0].shape  # type: ignore[union-attr]
                else:
                    if backwards:
                        declined(f"its output {out.result.name!r} is read backwards, but the loop can stop early",
                                 at=node)
                    continue
                for reader in readers:
                    assert isinstance(reader, Node) and reader.graph is not None
                    reader.outputs[0].replace_all_uses_with(out.result)
                    reader.graph.remove(reader)
                rewritten += 1
        return PassResult(graph, rewritten > 0, {"outputs": rewritten} if rewritten else {})


def _reverses(reader: object, out: LoopOutput) -> bool:
    """Whether ``reader`` is a Slice reading all of ``out``'s stacking axis backwards."""
    if not isinstance(reader, Node) or reader.op != "Slice" or len(reader.inputs) != 5 or reader.inputs[0] is not out.result:
        return False
    parts = [constant_value(v) for v in reader.inputs[1:]]
    if any(p is None or np.size(p) != 1 for p in parts):
        return False
    start, end, axis, step = (int(np.asarray(p).reshape(-1)[0]) for p in parts)
    rank = len(out.result.shape) if out.result.shape is not None else None
    on_axis = axis == out.axis or (rank is not None and axis % rank == out.axis)
    return on_axis and step == -1 and start == -1 and end <= -(2**31)


def _moved_to(readers: Sequence[object]) -> int | None:
    """The axis k when every reader is a ``Transpose`` moving only the trip axis 0 to axis k, else None."""
    perms = {tuple(r.attrs.get("perm", ())) if isinstance(r, Node) and r.op == "Transpose" else () for r in readers}
    if len(perms) != 1:
        return None
    perm = perms.pop()
    if 0 not in perm:
        return None
    axis = perm.index(0)
    moved = tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, len(perm)))
    return axis if axis > 0 and perm == moved else None

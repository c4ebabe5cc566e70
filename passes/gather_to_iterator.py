"""``x[i]`` inside a loop — Gather of a loop-invariant tensor by the iteration counter — is an iterator.

ONNX Loop bodies index their inputs by the iteration number; TensorRT iterates natively with
IIteratorLayer, which streams slices instead of gathering each trip. The rewrite is exact: both
read slice ``i`` along the same axis, and both are errors when ``i`` is past the end.
"""

from __future__ import annotations

from loopc.ir import Graph, Loop, LoopIterator, Value
from loopc.passes._util import replace_uses
from loopc.passes.manager import PassResult


class GatherToIterator:
    name = "gather-to-iterator"

    def __call__(self, graph: Graph) -> PassResult:
        rewritten = 0
        for _, node in list(graph.walk()):
            if isinstance(node, Loop) and node.counter is not None:
                rewritten += self._rewrite(graph, node)
        return PassResult(graph, rewritten > 0, {"iterators": rewritten} if rewritten else {})

    def _rewrite(self, graph: Graph, loop: Loop) -> int:
        inner = {id(v) for v in loop.body.inputs} | {id(v) for _, n in loop.body.walk() for v in n.outputs}
        rewritten = 0
        for gather in [n for n in loop.body.nodes if n.op == "Gather"]:
            data, index = gather.inputs[0], gather.inputs[1]
            if index is not loop.counter or data is None or id(data) in inner or index.shape != ():
                continue
            axis = int(gather.attrs.get("axis", 0))
            rank = len(data.shape) if data.shape is not None else None
            if axis < 0:
                if rank is None:
                    continue
                axis += rank
            element = Value(f"{gather.outputs[0].name}_iter", gather.outputs[0].dtype, gather.outputs[0].shape)
            loop.iterators.append(LoopIterator(element, data, axis))
            loop.body.nodes.remove(gather)
            loop.sync()
            replace_uses(graph, gather.outputs[0], element)
            rewritten += 1
        return rewritten

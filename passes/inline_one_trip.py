"""Inline a loop that runs exactly one trip: its body, run once, in place of the loop.

``nn.LSTMCell`` exports as an ONNX LSTM of sequence length 1, which loopc lowers to a loop; in a
user's time loop that is a nested loop launched every step. Inlined, it costs no loop, and its work
joins the enclosing trip, where the other passes (loop distribution above all) can see it. The
loop must have a constant trip count of 1, no condition and no nested graphs (as unrolling needs).
"""

from __future__ import annotations

from loopc.ir import Graph, Loop
from loopc.passes._util import constant_trips
from loopc.passes._why import declined
from loopc.passes.manager import PassResult
from loopc.passes.unroll import cannot_unroll, unroll


class InlineOneTrip:
    name = "inline-one-trip"

    def __call__(self, graph: Graph) -> PassResult:
        inlined = 0
        for outer, node in graph.structured():
            if not isinstance(node, Loop) or constant_trips(node) != 1:
                continue
            blocked = cannot_unroll(node)
            if blocked is not None:
                declined(f"it runs one trip, but is inlined only when {blocked}", at=node)
                continue
            unroll(outer, node)
            inlined += 1
        return PassResult(graph, inlined > 0, {"loops": inlined} if inlined else {})


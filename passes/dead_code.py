"""Remove what no graph output needs: nodes, loop outputs, carried values, iterators, counters.

Liveness flows backwards from the graph outputs through every nesting level at once, because a
loop body reads outer values directly. A recurrence is live only if its state is read by
something live, so a carried value that only feeds itself (``h = h + 1`` never read) dies too;
a loop's trip limits are live whenever the loop is, since they decide how many trips run.
"""

from __future__ import annotations

from loopc.ir import Graph, If, Loop, Node
from loopc.passes.manager import PassResult


class DeadCode:
    name = "dead-code"

    def __call__(self, graph: Graph) -> PassResult:
        live = _liveness(graph)
        stats = {"nodes": 0, "loop_outputs": 0, "recurrences": 0, "iterators": 0, "counters": 0}
        _sweep(graph, live, stats)
        return PassResult(graph, any(stats.values()), {k: v for k, v in stats.items() if v})


def _liveness(graph: Graph) -> set[int]:
    live = {id(v) for v in graph.outputs}
    nodes = [node for _, node in graph.walk()]
    changed = True
    while changed:
        before = len(live)
        for node in reversed(nodes):
            if not any(id(v) in live for v in node.outputs):
                continue
            if isinstance(node, Loop):
                _mark_loop(node, live)
            elif isinstance(node, If):
                live.add(id(node.inputs[0]))
                for k, out in enumerate(node.outputs):
                    if id(out) in live:
                        live.update(id(b.outputs[k]) for b in node.subgraphs())
            else:
                live.update(id(v) for v in node.inputs if v is not None)
        changed = len(live) != before
    return live


def _mark_loop(loop: Loop, live: set[int]) -> None:
    live.update(id(v) for v in (loop.trip_count, loop.max_trips, loop.condition) if v is not None)
    for out in loop.loop_outputs:
        if id(out.result) in live:
            live.add(id(out.value))
    for rec in loop.recurrences:
        if id(rec.state) in live:
            live.update((id(rec.init), id(rec.next)))
    for it in loop.iterators:
        if id(it.param) in live:
            live.add(id(it.source))


def _sweep(graph: Graph, live: set[int], stats: dict[str, int]) -> None:
    kept: list[Node] = []
    for node in graph.nodes:
        if not any(id(v) in live for v in node.outputs):
            stats["nodes"] += 1
            continue
        if isinstance(node, Loop):
            _trim_loop(node, live, stats)
        for sub in node.subgraphs():
            _sweep(sub, live, stats)
        kept.append(node)
    graph.nodes = kept


def _trim_loop(loop: Loop, live: set[int], stats: dict[str, int]) -> None:
    outputs = [o for o in loop.loop_outputs if id(o.result) in live]
    recurrences = [r for r in loop.recurrences if id(r.state) in live]
    iterators = [it for it in loop.iterators if id(it.param) in live]
    stats["loop_outputs"] += len(loop.loop_outputs) - len(outputs)
    stats["recurrences"] += len(loop.recurrences) - len(recurrences)
    stats["iterators"] += len(loop.iterators) - len(iterators)
    loop.loop_outputs, loop.recurrences, loop.iterators = outputs, recurrences, iterators
    if loop.counter is not None and id(loop.counter) not in live:
        loop.counter = None
        stats["counters"] += 1
    loop.sync()

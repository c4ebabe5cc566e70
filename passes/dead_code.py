"""Remove what no graph output needs: nodes, loop outputs, carried values, iterators, counters.

Liveness flows backwards from the graph outputs through every nesting level at once, because a
loop body reads outer values directly. A recurrence is live only if its state is read by
something live, so a carried value that only feeds itself (``h = h + 1`` never read) dies too —
which is why this is a marking pass from the outputs, not "remove what has no uses". A loop's trip
limits are live whenever the loop is, since they decide how many trips run.

Marking is a worklist over values, each visited once; sweeping removes dead nodes last to first,
inner graphs before the graphs around them, so no node is removed while something still reads it.
"""

from __future__ import annotations

from loopc.ir import Graph, If, Loop, Value
from loopc.passes.manager import PassResult


class DeadCode:
    name = "dead-code"

    def __call__(self, graph: Graph) -> PassResult:
        live = _liveness(graph)
        stats = {"nodes": 0, "loop_outputs": 0, "recurrences": 0, "iterators": 0, "counters": 0, "if_outputs": 0}
        _sweep(graph, live, stats)
        return PassResult(graph, any(stats.values()), {k: v for k, v in stats.items() if v})


def _liveness(graph: Graph) -> set[Value]:
    """Every value something live reads, from the graph's outputs back."""
    params: dict[Value, list[Value]] = {}  # a loop-body parameter -> the outer and body values it stands for
    for _, node in graph.structured():
        if isinstance(node, Loop):
            for rec in node.recurrences:
                params[rec.state] = [rec.init, rec.next]
            for it in node.iterators:
                params[it.param] = [it.source]
    live: set[Value] = set()
    work: list[Value | None] = list(graph.outputs)
    while work:
        value = work.pop()
        if value is None or value in live:
            continue
        live.add(value)
        work.extend(params.get(value, ()))
        producer = value.producer
        if isinstance(producer, Loop):
            work.extend(v for v in (producer.trip_count, producer.max_trips, producer.condition) if v is not None)
            work.extend(o.value for o in producer.loop_outputs if o.result is value)
        elif isinstance(producer, If):
            work.extend(v for v in producer.inputs[:1] if v is not None)  # the condition
            k = producer.outputs.index(value)
            work.extend(branch.outputs[k] for branch in producer.subgraphs())
        elif producer is not None:
            work.extend(producer.inputs)  # None among them: an omitted operand, skipped when popped
    return live


def _sweep(graph: Graph, live: set[Value], stats: dict[str, int]) -> None:
    for node in reversed(graph.nodes):
        if live.isdisjoint(node.outputs):
            graph.remove(node)
            stats["nodes"] += 1
            continue
        if isinstance(node, Loop):
            _trim_loop(node, live, stats)
        elif isinstance(node, If):
            _trim_if(node, live, stats)
        for sub in node.subgraphs():
            _sweep(sub, live, stats)


def _trim_loop(loop: Loop, live: set[Value], stats: dict[str, int]) -> None:
    outputs = [o for o in loop.loop_outputs if o.result not in live]
    recurrences = [r for r in loop.recurrences if r.state not in live]
    iterators = [it for it in loop.iterators if it.param not in live]
    stats["loop_outputs"] += len(outputs)
    stats["recurrences"] += len(recurrences)
    stats["iterators"] += len(iterators)
    if outputs or recurrences or iterators:
        loop.remove_roles([*outputs, *recurrences, *iterators])
    if loop.counter is not None and loop.counter not in live:
        loop.set_counter(None)
        stats["counters"] += 1


def _trim_if(node: If, live: set[Value], stats: dict[str, int]) -> None:
    kept = [k for k, v in enumerate(node.outputs) if v in live]
    if len(kept) == len(node.outputs):
        return
    stats["if_outputs"] += len(node.outputs) - len(kept)
    node.set_outputs([node.outputs[k] for k in kept])
    for branch in node.subgraphs():
        branch.set_outputs([branch.outputs[k] for k in kept])

"""The loops as Graphviz source, for users who have Graphviz (``dot -Tsvg``); loopc needs none.

Each loop and conditional is a cluster, nested ones inside their parent's. A loop's cluster holds
a node per iterator, recurrence and output, and its critical path as a chain of red, bold nodes;
a dashed red edge closes the chain on the recurrence it feeds. Every name is a quoted DOT string
(escaped), and node ids are generated, so no name can break the syntax.
"""

from __future__ import annotations

from loopc.fingerprint import ConditionalInfo, LoopInfo, NetworkInfo, Node
from loopc.picture import labels

#: Steps of a critical path drawn as nodes; longer paths keep both ends.
PATH_STEPS = 40
CRITICAL = 'color="#c62828", fontcolor="#b71c1c", penwidth=2'


def quote(text: str) -> str:
    """A DOT quoted string: ``"`` and ``\\`` escaped, line breaks as Graphviz's centred ``\\n``."""
    escaped = labels.clean(text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n"))
    return f'"{escaped}"'


def dot_source(info: NetworkInfo, title: str = "") -> str:
    """A ``digraph``: one cluster per loop and conditional, nested as in ``info``."""
    heading = f"{title}\n{labels.summary(info)}" if title else labels.summary(info)
    lines = [
        "digraph loops {",
        f"  graph [label={quote(heading)}, labelloc=t, rankdir=LR, fontname=Helvetica, compound=true];",
        "  node [shape=box, style=rounded, fontname=Helvetica, fontsize=10];",
        "  edge [fontname=Helvetica, fontsize=9];",
    ]
    ids = _Ids()
    for node in info.loops:
        _cluster(node, ids, lines, "  ")
    if not info.loops:
        lines.append(f"  {ids.node()} [label={quote('no loops')}, shape=plaintext];")
    lines.append("}")
    return "\n".join(lines)


class _Ids:
    """Node and cluster ids, numbered in drawing order (deterministic)."""

    def __init__(self) -> None:
        self.nodes = 0
        self.clusters = 0

    def node(self) -> str:
        self.nodes += 1
        return f"n{self.nodes}"

    def cluster(self) -> str:
        self.clusters += 1
        return f"cluster_{self.clusters}"


def _cluster(node: Node, ids: _Ids, lines: list[str], pad: str) -> None:
    inner = pad + "  "
    lines.append(f"{pad}subgraph {ids.cluster()} {{")
    if isinstance(node, ConditionalInfo):
        lines.append(f"{inner}label={quote(labels.title_of(node))}; style=dashed; color=\"#9a6a2f\";")
        lines.append(f"{inner}{ids.node()} [label={quote(labels.conditional(node))}, shape=plaintext];")
    else:
        heading = f"{labels.title_of(node)}\n{labels.trip_limits(node)}\nper iteration: {labels.work(node)}"
        lines.append(f"{inner}label={quote(heading)}; style=rounded; color=\"#3b5b92\";")
        _loop_nodes(node, ids, lines, inner)
    for child in node.children:
        _cluster(child, ids, lines, inner)
    lines.append(f"{pad}}}")


def _loop_nodes(loop: LoopInfo, ids: _Ids, lines: list[str], pad: str) -> None:
    feeds: dict[str, str] = {}  # a recurrence's next-value layer → the recurrence's node
    items = [("iterator", labels.iterator(it, loop), "cds") for it in loop.iterators]
    for rec in loop.recurrences:
        node = ids.node()
        feeds.setdefault(rec.next, node)
        lines.append(f"{pad}{node} [label={quote(_kind('recurrence', labels.recurrence(rec, loop)))}, "
                     "shape=box, style=\"rounded,filled\", fillcolor=\"#dce6f4\"];")
    items += [("output", labels.output(out, loop), "box") for out in loop.outputs]
    for kind, text, shape in items:
        lines.append(f"{pad}{ids.node()} [label={quote(_kind(kind, text))}, shape={shape}];")
    if not (loop.recurrences or items or loop.critical_path):
        lines.append(f"{pad}{ids.node()} [label={quote('no iterators, recurrences or outputs')}, shape=plaintext];")
    chain = []
    for step in labels.path_steps(loop.critical_path, PATH_STEPS):
        chain.append(ids.node())
        style = "dashed" if isinstance(step, labels.Elided) else "bold"
        lines.append(f"{pad}{chain[-1]} [label={quote(str(step))}, style={style}, {CRITICAL}];")
    lines.extend(f"{pad}{a} -> {b} [{CRITICAL}];" for a, b in zip(chain, chain[1:]))
    fed = feeds.get(loop.critical_path[-1]) if loop.critical_path else None
    if fed is not None:
        lines.append(f"{pad}{chain[-1]} -> {fed} [label=\"next\", style=dashed, constraint=false, {CRITICAL}];")


def _kind(kind: str, text: str) -> str:
    """``iterator x: axis 0``; no prefix when the name already says it (``output0: kLAST_VALUE``)."""
    return text if text.startswith(kind) else f"{kind} {text}"

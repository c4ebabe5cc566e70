"""The loops as an indented tree of plain text: what ``loopc inspect`` prints after the IR.

    loop /Loop__3: kCOUNT + kWHILE
      per iteration: 43 layers, 3 matmuls, 1,728 MACs
      iterators: none
      recurrences:
        recurrence1: h → /Add_4 [16]
      outputs:
        output0: kCONCATENATE axis 0
      critical path (26 steps): /embed/Gather → … 18 more … → /Loop__3/next0
      if If_1: 4 layers in its branches
"""

from __future__ import annotations

from loopc.fingerprint import ConditionalInfo, LoopInfo, NetworkInfo, Node
from loopc.picture import labels

#: Steps of a critical path printed in full; longer paths keep both ends.
PATH_STEPS = 9
INDENT = "  "


def text_summary(info: NetworkInfo, title: str = "") -> str:
    """One block per loop or conditional, nested ones indented under their parent."""
    lines = [f"{labels.clean(title)}: {labels.summary(info)}" if title else labels.summary(info)]
    for node in info.loops:
        _block(node, 0, lines)
    return "\n".join(lines)


def _block(node: Node, depth: int, lines: list[str]) -> None:
    pad, inner = INDENT * depth, INDENT * (depth + 1)
    if isinstance(node, ConditionalInfo):
        lines.append(f"{pad}{labels.title_of(node)}: {labels.conditional(node)}")
    else:
        lines.append(f"{pad}{labels.title_of(node)}: {labels.trip_limits(node)}")
        lines.append(f"{inner}per iteration: {labels.work(node)}")
        _section(lines, inner, "iterators", [labels.iterator(it, node) for it in node.iterators])
        _section(lines, inner, "recurrences",
                 [f"{labels.recurrence(rec, node)} {labels.shape(rec)}" for rec in node.recurrences])
        _section(lines, inner, "outputs", [labels.output(out, node) for out in node.outputs])
        lines.append(f"{inner}critical path{_path(node)}")
    for child in node.children:
        _block(child, depth + 1, lines)


def _section(lines: list[str], pad: str, name: str, items: list[str]) -> None:
    lines.append(f"{pad}{name}:" + ("" if items else " none"))
    lines.extend(f"{pad}{INDENT}{item}" for item in items)


def _path(loop: LoopInfo) -> str:
    if not loop.critical_path:
        return ": none (no chain from a recurrence back to one)"
    steps = labels.path_steps(loop.critical_path, PATH_STEPS)
    return f" ({labels.plural(len(loop.critical_path), 'step')}): " + f" {labels.ARROW} ".join(map(str, steps))

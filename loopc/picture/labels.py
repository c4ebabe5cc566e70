"""The words every picture uses for a loop's parts, so that text, dot, SVG and HTML say the same thing.

Names come from the model and are untrusted: :func:`clean` replaces control characters (which
would drive a terminal, and which XML cannot hold) before any of them is shown.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from loopc.fingerprint import ConditionalInfo, IteratorInfo, LoopInfo, NetworkInfo, Node, OutputInfo, RecurrenceInfo

ELLIPSIS = "…"
ARROW = "→"


def clean(text: str) -> str:
    """``text`` with control characters, lone surrogates and the non-characters XML refuses replaced by U+FFFD."""
    return "".join("\ufffd" if unicodedata.category(c) in ("Cc", "Cs") or c in "\ufffe\uffff" else c for c in text)


def plural(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def local(name: str, loop: LoopInfo) -> str:
    """A loop part's name without its loop's name in front (``/Loop__3/recurrence1`` → ``recurrence1``)."""
    prefix = loop.name + "/"
    return clean(name[len(prefix):] if name.startswith(prefix) and len(name) > len(prefix) else name)


def shorten(text: str, limit: int) -> str:
    """``text`` cut in the middle to at most ``limit`` characters (names differ at both ends)."""
    if len(text) <= limit:
        return text
    head = limit // 2
    return text[:head] + ELLIPSIS + text[len(text) - (limit - 1 - head):]


def title_of(node: Node) -> str:
    """``loop NAME`` or ``if NAME``."""
    return f"{node.kind} {clean(node.name)}"


def trip_limits(loop: LoopInfo) -> str:
    """``kCOUNT = 6``, ``kCOUNT + kWHILE``: the limits, with the count when it is a constant."""
    parts = [f"{kind} = {loop.trip_count:,}" if kind == "kCOUNT" and loop.trip_count is not None else kind
             for kind in loop.trip_limits]
    return " + ".join(parts) or "no trip limit"


def iterator(it: IteratorInfo, loop: LoopInfo) -> str:
    return f"{local(it.name, loop)}: axis {it.axis}" + (" reverse" if it.reverse else "")


def recurrence(rec: RecurrenceInfo, loop: LoopInfo) -> str:
    """``h: h0 → /Add_4``: the recurrence, the layer giving its first value and the one giving each next."""
    return f"{local(rec.name, loop)}: {local(rec.init, loop)} {ARROW} {local(rec.next, loop)}"


def shape(rec: RecurrenceInfo) -> str:
    """``[16, ?]``, or ``(scalar)``."""
    return "[" + ", ".join(str(d) if d >= 0 else "?" for d in rec.shape) + "]" if rec.shape else "(scalar)"


def output(out: OutputInfo, loop: LoopInfo) -> str:
    return f"{local(out.name, loop)}: {out.kind}" + (f" axis {out.axis}" if out.axis is not None else "")


def macs(loop: LoopInfo) -> str:
    """MACs per iteration; ``?`` when a shape is only known at run time."""
    return "?" if loop.macs_per_iteration is None else f"{loop.macs_per_iteration:,}"


def work(loop: LoopInfo) -> str:
    """``43 layers, 3 matmuls, 1,728 MACs``: one iteration's work; ``…, 2 matmuls, 14 convolutions, …`` when
    it convolves (the MACs are every product's)."""
    convolutions = loop.convolutions_per_iteration
    products = [plural(loop.matmuls_per_iteration, "matmul")] + ([plural(convolutions, "convolution")]
                                                                 if convolutions else [])
    return f"{plural(loop.layers_per_iteration, 'layer')}, {', '.join(products)}, {macs(loop)} MACs"


def summary(info: NetworkInfo) -> str:
    """``150 layers, 1 loop, 0 conditionals``: the whole network."""
    nodes = list(walk(info.loops))
    loops = sum(1 for node, _ in nodes if isinstance(node, LoopInfo))
    return f"{plural(info.layers, 'layer')}, {plural(loops, 'loop')}, {plural(len(nodes) - loops, 'conditional')}"


def conditional(cond: ConditionalInfo) -> str:
    return f"{plural(cond.layers, 'layer')} in its branches"


def walk(nodes: Sequence[Node], parent: Node | None = None) -> list[tuple[Node, Node | None]]:
    """Every loop and conditional with the one it sits in (``None``: the network), parents first."""
    found: list[tuple[Node, Node | None]] = []
    for node in nodes:
        found.append((node, parent))
        found += walk(node.children, node)
    return found


@dataclass(frozen=True)
class Elided:
    """Steps of a long critical path left out of a picture."""

    hidden: int

    def __str__(self) -> str:
        return f"{ELLIPSIS} {self.hidden:,} more {ELLIPSIS}"


def path_steps(path: Sequence[str], limit: int) -> list[str | Elided]:
    """The critical path's steps (cleaned), the middle ones elided so that at most ``limit`` items remain."""
    steps = [clean(step) for step in path]
    if len(steps) <= limit:
        return list(steps)
    shown = limit - 1
    head = (shown + 1) // 2
    return [*steps[:head], Elided(len(steps) - shown), *steps[len(steps) - (shown - head):]]

"""The loops as one self-contained SVG element, laid out here by hand: no fonts, libraries or scripts.

Each loop is a ``<g class="loop" data-name=NAME>`` box: a header with its name and trip limits,
rows for its work per iteration, iterators, recurrences (init → next) and outputs, and its
critical path as a chain of small red boxes joined by arrows, wrapping onto more rows when long
and eliding its middle when very long (every element of the chain has class ``critical``).
Conditionals are ``<g class="if" data-name=NAME>`` boxes. Nested loops and conditionals are boxes
inside their parent's box, stacked below its rows, and their ``<g>`` sits inside the parent's.

Sizes come from estimated text widths (a monospace font; East Asian wide characters count
twice), so the picture is the same on every machine. It carries no script, no style sheet, no id
and no external reference: several can be inlined in one HTML page, or one saved as an .svg file.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

from loopc.fingerprint import ConditionalInfo, LoopInfo, NetworkInfo, Node
from loopc.picture import labels

FONT_FAMILY = "DejaVu Sans Mono, Menlo, Consolas, Liberation Mono, monospace"
FONT, SMALL, TITLE = 12, 11, 15  #: text sizes (px)
ADVANCE = 0.62  #: a monospace character's width in em (DejaVu Sans Mono and Menlo: 0.602), with a margin
MARGIN, PAD, GAP = 12, 10, 10  #: around the picture; inside a box; between stacked boxes
HEADER, LINE = 24, 17  #: a box's header band; a row of text
LABEL_CHARS = 15  #: the width of the row labels' column ("critical path", "per iteration")
ROW_CHARS = 84  #: longer rows are cut in the middle
ROWS = 8  #: rows shown per section (iterators, recurrences, outputs) before "… N more"
STEP_CHARS, STEP_HEIGHT, STEP_PAD = 32, 20, 6  #: one step of a critical path
ARROW, TURN, ROW_GAP = 18, 8, 14  #: the gap an arrow spans; a wrapping arrow's turn; between rows of steps
CHAIN_WIDTH = 640  #: a critical path wraps onto a new row at this width
PATH_STEPS = 30  #: steps drawn before the middle of a path is elided

INK, MUTED = "#222", "#666"
LOOP_COLORS = {"stroke": "#3b5b92", "fill": "#f5f8fc", "header": "#dce6f4"}
IF_COLORS = {"stroke": "#9a6a2f", "fill": "#fdf8f0", "header": "#f3e6d0"}
CRITICAL_STROKE, CRITICAL_FILL, CRITICAL_INK = "#c62828", "#fdecea", "#b71c1c"


def svg_picture(info: NetworkInfo, title: str = "", *, heading: bool = True) -> str:
    """One ``<svg>`` element (no XML declaration): the title and a summary line (unless ``heading`` is
    false: a page around it shows them), then a box per outermost loop or conditional."""
    y: float = MARGIN
    width = text_width("no loops")
    parts: list[str] = []
    lines = ([(title, TITLE, True)] if title else []) + [(labels.summary(info), FONT, False)]
    for text, size, bold in lines if heading else []:
        parts.append(_text(MARGIN, y + size, text, size=size, bold=bold))
        width, y = max(width, text_width(text, size)), y + size + 8
    y += 4
    for node in info.loops:
        block = _block(node)
        parts.append(block.at(MARGIN, y))
        width, y = max(width, block.width), y + block.height + GAP
    if not info.loops:
        parts.append(_text(MARGIN, y + FONT, "no loops", fill=MUTED))
        y += FONT + GAP
    w, h = _num(width + 2 * MARGIN), _num(y - GAP + MARGIN)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
            f'font-family="{FONT_FAMILY}" font-size="{FONT}" role="img" aria-label={_attr(title or "loops")}>'
            f"<title>{_esc(title or 'loops')}</title>"
            f'<rect width="{w}" height="{h}" fill="#ffffff"/>' + "".join(parts) + "</svg>")


def text_width(text: str, size: float = FONT) -> float:
    """The estimated width of ``text`` in a monospace font of ``size`` px."""
    cells = sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
                for c in text)
    return cells * size * ADVANCE


@dataclass
class _Block:
    """A laid-out box: its size and its content, drawn with its top left corner at (0, 0)."""

    kind: str  #: "loop" or "if": the ``<g>``'s class
    name: str
    width: float
    height: float
    body: str

    def at(self, x: float, y: float) -> str:
        return (f'<g class="{self.kind}" data-name={_attr(self.name)} transform="translate({_num(x)},{_num(y)})">'
                f"{self.body}</g>")


def _block(node: Node) -> _Block:
    """A loop's or conditional's box: header, rows and critical path (loops), then nested boxes stacked."""
    name = labels.shorten(labels.title_of(node), ROW_CHARS - 24)
    right = labels.conditional(node) if isinstance(node, ConditionalInfo) else labels.trip_limits(node)
    width = text_width(name, FONT) + 2 * GAP + text_width(right, FONT)
    parts: list[str] = []
    y: float = HEADER + 4
    if isinstance(node, LoopInfo):
        for label, text, muted in _rows(node):
            parts.append(_text(PAD, y + FONT, label, fill=MUTED))
            parts.append(_text(PAD + _label_width(), y + FONT, text, fill=MUTED if muted else INK))
            width, y = max(width, _label_width() + text_width(text)), y + LINE
        chain_width, chain_height, chain = _chain(labels.path_steps(node.critical_path, PATH_STEPS))
        if chain:
            parts.append(f'<g transform="translate({PAD},{_num(y + 4)})">{"".join(chain)}</g>')
            width, y = max(width, chain_width), y + chain_height + 8
    for child in node.children:
        block = _block(child)
        parts.append(block.at(PAD, y + 4))
        width, y = max(width, block.width), y + 4 + block.height + 4
    width += 2 * PAD
    height = y + PAD - 4
    header = _text(PAD, 16, name, bold=True) + _text(width - PAD, 16, right, anchor="end", fill=MUTED)
    return _Block(node.kind, node.name, width, height, _frame(node, width, height) + header + "".join(parts))


def _frame(node: Node, width: float, height: float) -> str:
    """A box's tooltip, outline and header band (a conditional's outline dashed)."""
    colors = IF_COLORS if isinstance(node, ConditionalInfo) else LOOP_COLORS
    dashes = ' stroke-dasharray="6 3"' if isinstance(node, ConditionalInfo) else ""
    w = _num(width)
    return (f"<title>{_esc(labels.title_of(node))}</title>"
            f'<rect class="frame" width="{w}" height="{_num(height)}" rx="6" fill="{colors["fill"]}" '
            f'stroke="{colors["stroke"]}" stroke-width="1.5"{dashes}/>'
            f'<path d="M1,{HEADER} V7 Q1,1 7,1 H{_num(width - 7)} Q{_num(width - 1)},1 {_num(width - 1)},7 '
            f'V{HEADER} Z" fill="{colors["header"]}"/>')


def _label_width() -> float:
    return text_width("x" * LABEL_CHARS)


def _rows(loop: LoopInfo) -> list[tuple[str, str, bool]]:
    """(label, text, muted) for each row of a loop's box."""
    rows = [("per iteration", labels.work(loop), False)]
    rows += _section("iterators", [labels.iterator(it, loop) for it in loop.iterators])
    rows += _section("recurrences", [labels.recurrence(rec, loop) for rec in loop.recurrences])
    rows += _section("outputs", [labels.output(out, loop) for out in loop.outputs])
    steps = len(loop.critical_path)
    rows.append(("critical path", labels.plural(steps, "step") if steps else "none", not steps))
    return rows


def _section(label: str, items: Sequence[str]) -> list[tuple[str, str, bool]]:
    if not items:
        return [(label, "none", True)]
    shown = list(items) if len(items) <= ROWS else list(items[:ROWS - 1])
    rows = [(label if k == 0 else "", labels.shorten(text, ROW_CHARS), False) for k, text in enumerate(shown)]
    if len(shown) < len(items):
        rows.append(("", f"{labels.ELLIPSIS} {len(items) - len(shown)} more", True))
    return rows


def _chain(steps: Sequence[str | labels.Elided]) -> tuple[float, float, list[str]]:
    """A critical path as red boxes joined by arrows, wrapping at CHAIN_WIDTH; its width, height and elements."""
    boxes: list[tuple[float, float, float]] = []  # x, y, width
    x = y = 0.0
    for step in steps:
        w = text_width(labels.shorten(str(step), STEP_CHARS), SMALL) + 2 * STEP_PAD
        if boxes and x + w > CHAIN_WIDTH:
            x, y = 0.0, y + STEP_HEIGHT + ROW_GAP
        boxes.append((TURN + x, y, w))
        x += w + ARROW
    parts = []
    for step, (bx, by, w) in zip(steps, boxes):
        text = labels.shorten(str(step), STEP_CHARS)
        elided = isinstance(step, labels.Elided)
        parts.append(
            f'<g class="critical step{" elided" if elided else ""}" data-name={_attr(str(step))}>'
            + (f"<title>{_esc(str(step))}</title>" if text != str(step) else "")
            + f'<rect x="{_num(bx)}" y="{_num(by)}" width="{_num(w)}" height="{STEP_HEIGHT}" rx="3" '
            f'fill="{"#ffffff" if elided else CRITICAL_FILL}" stroke="{CRITICAL_STROKE}" stroke-width="1.5"'
            + (' stroke-dasharray="4 2"' if elided else "") + "/>"
            + _text(bx + STEP_PAD, by + 14, text, size=SMALL, bold=not elided, fill=CRITICAL_INK) + "</g>")
    for (ax, ay, aw), (bx, by, _) in zip(boxes, boxes[1:]):
        mid = STEP_HEIGHT / 2
        if by == ay:  # same row: straight across the gap
            d = f"M{_num(ax + aw)},{_num(ay + mid)} H{_num(bx - 2)}"
        else:  # down to the next row and back to its start
            turn_y = ay + STEP_HEIGHT + ROW_GAP / 2
            d = (f"M{_num(ax + aw)},{_num(ay + mid)} H{_num(ax + aw + TURN)} V{_num(turn_y)} H{_num(bx - TURN)} "
                 f"V{_num(by + mid)} H{_num(bx - 2)}")
        head = f"M{_num(bx - 1)},{_num(by + mid)} l-6,-4 v8 Z"
        parts.append(f'<path class="critical arrow" d="{d}" fill="none" stroke="{CRITICAL_STROKE}" '
                     f'stroke-width="1.5"/><path class="critical arrow" d="{head}" fill="{CRITICAL_STROKE}"/>')
    width = max((bx + w for bx, _, w in boxes), default=0.0) + TURN
    height = (boxes[-1][1] + STEP_HEIGHT) if boxes else 0.0
    return width, height, parts


def _text(x: float, y: float, text: str, size: float = FONT, bold: bool = False, fill: str = INK,
          anchor: str | None = None) -> str:
    attrs = f'x="{_num(x)}" y="{_num(y)}" fill="{fill}"'
    attrs += f' font-size="{size}"' if size != FONT else ""
    attrs += ' font-weight="bold"' if bold else ""
    attrs += f' text-anchor="{anchor}"' if anchor else ""
    return f"<text {attrs}>{_esc(text)}</text>"


def _esc(text: str) -> str:
    return escape(labels.clean(text))


def _attr(text: str) -> str:
    return '"' + escape(labels.clean(text), {'"': "&quot;"}) + '"'


def _num(value: float) -> str:
    """A coordinate with at most one decimal, the same text on every machine."""
    return f"{value:.1f}".rstrip("0").rstrip(".")

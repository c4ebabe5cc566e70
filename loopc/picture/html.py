"""The loops as one self-contained HTML page: the picture inline, then a table per loop and conditional.

Nothing is fetched and nothing runs: the style sheet is inline, the SVG is inline, and the page's
content security policy forbids everything else, so it opens the same offline, from a CI
artifact or an e-mail attachment.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

from loopc.fingerprint import ConditionalInfo, LoopInfo, NetworkInfo, Node
from loopc.picture import labels
from loopc.picture.svg import svg_picture

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5rem; color: #222; }
h1 { font-size: 1.4rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.1rem; margin: 1.5rem 0 0.4rem; font-family: monospace; }
figure { margin: 1rem 0; overflow-x: auto; }
table { border-collapse: collapse; font-size: 0.9rem; }
th, td { border: 1px solid #c8d0dc; padding: 0.25rem 0.6rem; text-align: left; vertical-align: top; }
th { background: #eef2f8; font-weight: 600; white-space: nowrap; }
td { font-family: monospace; }
ul { margin: 0; padding-left: 1.1rem; }
.muted { color: #666; }
.critical { color: #b71c1c; font-weight: bold; }
"""
POLICY = "default-src 'none'; style-src 'unsafe-inline'"


def html_page(info: NetworkInfo, title: str = "") -> str:
    """A complete HTML document showing ``info``, headed ``title``."""
    heading = title or "loops"
    sections = "".join(_section(node, parent) for node, parent in labels.walk(info.loops))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_esc(heading)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        f"<h1>{_esc(heading)}</h1>\n<p>{_esc(labels.summary(info))}</p>\n"
        f"<figure>{svg_picture(info, title, heading=False)}</figure>\n"
        f"{sections}</body>\n</html>\n"
    )


def _section(node: Node, parent: Node | None) -> str:
    rows = [("inside", _esc(labels.title_of(parent)) if parent else '<span class="muted">the network</span>')]
    if isinstance(node, ConditionalInfo):
        rows.append(("layers", _esc(labels.conditional(node))))
    else:
        rows += _loop_rows(node)
    if node.children:
        rows.append(("contains", _list([labels.title_of(child) for child in node.children])))
    body = "".join(f"<tr><th>{label}</th><td>{cell}</td></tr>" for label, cell in rows)
    return f"<section>\n<h2>{_esc(labels.title_of(node))}</h2>\n<table>{body}</table>\n</section>\n"


def _loop_rows(loop: LoopInfo) -> list[tuple[str, str]]:
    path = loop.critical_path
    return [
        ("trip limits", _esc(labels.trip_limits(loop))),
        ("per iteration", _esc(labels.work(loop))),
        ("iterators", _list([labels.iterator(it, loop) for it in loop.iterators])),
        ("recurrences", _list([f"{labels.recurrence(rec, loop)} {labels.shape(rec)}" for rec in loop.recurrences])),
        ("outputs", _list([labels.output(out, loop) for out in loop.outputs])),
        (f"critical path ({labels.plural(len(path), 'step')})",
         f' <span class="muted">{labels.ARROW}</span> '.join(
             f'<span class="critical">{_esc(step)}</span>' for step in path) or '<span class="muted">none</span>'),
    ]


def _list(items: list[str]) -> str:
    if not items:
        return '<span class="muted">none</span>'
    return "<ul>" + "".join(f"<li>{_esc(item)}</li>" for item in items) + "</ul>"


def _esc(text: str) -> str:
    return escape(labels.clean(text))

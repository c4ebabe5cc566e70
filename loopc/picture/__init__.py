"""Pictures of a network's loops: text, JSON, Graphviz dot, SVG and HTML (pure Python).

Each format is one module with one function from a :class:`~loopc.fingerprint.NetworkInfo` and a
title to a string; :func:`render` picks one by name (``loopc inspect --format``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loopc.fingerprint import NetworkInfo

FORMATS = ("text", "json", "dot", "svg", "html")


def render(info: NetworkInfo, fmt: str, title: str = "") -> str:
    """``info`` drawn in ``fmt`` (one of :data:`FORMATS`), headed ``title`` (e.g. the model's file name)."""
    from loopc.picture.dot import dot_source
    from loopc.picture.html import html_page
    from loopc.picture.json import json_document
    from loopc.picture.svg import svg_picture
    from loopc.picture.text import text_summary

    renderers: dict[str, Callable[[NetworkInfo, str], str]] = {
        "text": text_summary, "json": json_document, "dot": dot_source, "svg": svg_picture, "html": html_page,
    }
    if fmt not in renderers:
        raise ValueError(f"unknown picture format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return renderers[fmt](info, title)

"""The SVG and HTML pictures as headless Chromium renders them: every box there, nested, not overlapping.

The layout is computed from estimated text widths; here real fonts measure it. Each box's
rendered extent (everything drawn in it) must lie within its own frame, inside its parent's
frame, clear of its siblings' frames; each critical-path step's text must fit its small box.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from click.testing import CliRunner

from loopc.cli import commands  # noqa: F401  (registers the subcommands)
from loopc.cli.main import cli
from loopc.fingerprint import NetworkInfo
from loopc.picture import render
from tests.browser import browser, open_page  # noqa: F401
from tests.picture.samples import SAMPLES_DIR, awkward_info, sample_info, tree

pytestmark = pytest.mark.browser

#: One picture with nested loops, one with a conditional inside a loop.
PICTURED = ["openvino/loop_in_loop.xml", "openvino/loop_if.xml"]
SLACK = 1.0  # px: rounding of rendered boxes

MEASURE = """() => {
  const rect = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const boxes = [...document.querySelectorAll("g.loop, g.if")].map((g) => {
    const parent = g.parentElement.closest("g.loop, g.if");
    return {kind: g.getAttribute("class"), name: g.dataset.name, parent: parent ? parent.dataset.name : null,
            drawn: rect(g), frame: rect(g.querySelector(":scope > rect.frame"))};
  });
  const steps = [...document.querySelectorAll("g.step")].map((g) => ({
    name: g.dataset.name, box: rect(g.querySelector("rect")), text: rect(g.querySelector("text"))}));
  return {boxes, steps};
}"""


def inside(inner: list[float], outer: list[float]) -> bool:
    return (inner[0] >= outer[0] - SLACK and inner[1] >= outer[1] - SLACK and inner[2] <= outer[2] + SLACK
            and inner[3] <= outer[3] + SLACK)


def overlap(a: list[float], b: list[float]) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > SLACK and min(a[3], b[3]) - max(a[1], b[1]) > SLACK


def check_rendering(opened: Any, info: NetworkInfo) -> None:
    assert opened.errors == []
    page = opened.page
    for kind, name, _ in tree(info.loops):  # found by a CSS query, name escaped by the browser itself
        query = "([k, n]) => document.querySelectorAll(`g.${k}[data-name=\"${CSS.escape(n)}\"]`).length"
        assert page.evaluate(query, [kind, name]) == 1, (kind, name)
    measured = page.evaluate(MEASURE)
    boxes = measured["boxes"]
    assert [(b["kind"], b["name"], b["parent"]) for b in boxes] == list(tree(info.loops))
    frames = {b["name"]: b["frame"] for b in boxes}
    for box in boxes:
        assert box["frame"][2] - box["frame"][0] > 50 and box["frame"][3] - box["frame"][1] > 20
        assert inside(box["drawn"], box["frame"]), f"something drawn in {box['name']} sticks out of its frame"
        if box["parent"] is not None:
            assert inside(box["frame"], frames[box["parent"]]), f"{box['name']} is not inside {box['parent']}"
    for k, a in enumerate(boxes):
        for b in boxes[k + 1:]:
            if a["parent"] == b["parent"]:
                assert not overlap(a["frame"], b["frame"]), f"{a['name']} overlaps {b['name']}"
    assert measured["steps"], "no critical path drawn"
    for step in measured["steps"]:
        assert inside(step["text"], step["box"]), f"step {step['name']} does not fit its box"


def screenshot_taken(path: pathlib.Path) -> None:
    assert path.exists() and path.stat().st_size > 2000


@pytest.mark.parametrize("sample", PICTURED)
@pytest.mark.parametrize("fmt", ["svg", "html"])
def test_picture_renders_in_chromium(browser: Any, sample: str, fmt: str, tmp_path: pathlib.Path) -> None:  # noqa: F811
    picture = tmp_path / f"loops.{fmt}"
    result = CliRunner().invoke(cli, ["inspect", str(SAMPLES_DIR / sample), "--format", fmt, "-o", str(picture)])
    assert result.exit_code == 0, result.output
    shot = tmp_path / f"{fmt}.png"

    opened = open_page(browser, picture, screenshot=shot)

    screenshot_taken(shot)
    info = sample_info(sample)
    check_rendering(opened, info)
    if fmt == "html":  # a table per loop and conditional besides the picture
        headings = opened.page.evaluate("() => [...document.querySelectorAll('section h2')].map((h) => h.textContent)")
        assert headings == [f"{kind} {name}" for kind, name, _ in tree(info.loops)]


def test_awkward_names_and_wide_characters_fit(browser: Any, tmp_path: pathlib.Path) -> None:  # noqa: F811
    """Three levels of nesting, siblings, CJK names, a long wrapped and elided path, XML metacharacters."""
    info = awkward_info(path_length=60)
    picture = tmp_path / "awkward.svg"
    picture.write_text(render(info, "svg", "awkward 名前"), encoding="utf-8")
    shot = tmp_path / "awkward.png"

    opened = open_page(browser, picture, screenshot=shot)

    screenshot_taken(shot)
    check_rendering(opened, info)

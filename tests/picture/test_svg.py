"""The SVG picture as an XML parser reads it: boxes nested as the loops are, the critical path drawn, nothing external."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from loopc.fingerprint import LoopInfo, NetworkInfo
from loopc.picture.svg import svg_picture
from tests.picture.samples import NASTY, SAMPLES, awkward_info, sample_info, tree

SVG = "{http://www.w3.org/2000/svg}"


def boxes(root: ET.Element) -> list[tuple[ET.Element, ET.Element | None]]:
    """Every ``g.loop`` and ``g.if`` with the nearest such box around it."""
    found: list[tuple[ET.Element, ET.Element | None]] = []

    def visit(element: ET.Element, box: ET.Element | None) -> None:
        for child in element:
            if child.tag == f"{SVG}g" and child.get("class") in ("loop", "if"):
                found.append((child, box))
                visit(child, child)
            else:
                visit(child, box)

    visit(root, None)
    return found


def own_steps(box: ET.Element) -> list[ET.Element]:
    """The critical-path steps drawn in ``box`` itself, not in a box nested in it."""
    steps: list[ET.Element] = []
    for child in box:
        if child.tag == f"{SVG}g" and child.get("class") in ("loop", "if"):
            continue
        if child.tag == f"{SVG}g" and "step" in (child.get("class") or "").split():
            steps.append(child)
        else:
            steps += own_steps(child)
    return steps


def text_of(element: ET.Element) -> str:
    return "".join(t.text or "" for t in element.iter(f"{SVG}text"))


@pytest.mark.parametrize("sample", SAMPLES)
def test_boxes_nest_as_the_loops_do(sample: str) -> None:
    info = sample_info(sample)
    svg = svg_picture(info, sample)
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg" ')  # no declaration: it inlines into HTML
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    width, height = float(root.get("width", "0")), float(root.get("height", "0"))
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}" and width > 100 and height > 50

    drawn = [(g.get("class"), g.get("data-name"), parent.get("data-name") if parent is not None else None)
             for g, parent in boxes(root)]

    assert drawn == list(tree(info.loops))


@pytest.mark.parametrize("sample", SAMPLES)
def test_each_loop_draws_its_critical_path_in_order(sample: str) -> None:
    info = sample_info(sample)
    root = ET.fromstring(svg_picture(info, sample))
    by_name = {g.get("data-name"): g for g, _ in boxes(root)}
    for loop in info.walk_loops():
        steps = own_steps(by_name[loop.name])
        assert [s.get("data-name") for s in steps] == loop.critical_path  # all samples' paths fit unelided
        assert all("critical" in (s.get("class") or "").split() for s in steps)
        arrows = [p for p in by_name[loop.name].iter(f"{SVG}path") if "arrow" in (p.get("class") or "")]
        assert len(arrows) >= 2 * (len(steps) - 1)  # a line and a head between each two steps


def test_loop_rows_say_what_the_loop_is() -> None:
    info = sample_info("greedy_gru_decoder.onnx")
    (loop,) = info.loops
    assert isinstance(loop, LoopInfo)
    text = text_of(ET.fromstring(svg_picture(info)))
    assert "kCOUNT + kWHILE" in text
    assert f"{loop.layers_per_iteration} layers, {loop.matmuls_per_iteration} matmuls, " \
           f"{loop.macs_per_iteration:,} MACs" in text
    for rec in loop.recurrences:
        next_layer = rec.next.removeprefix(loop.name + "/")
        init = rec.init.removeprefix(loop.name + "/")
        assert f"{rec.name.removeprefix(loop.name + '/')}: {init} → {next_layer}" in text
    assert "output0: kCONCATENATE axis 0" in text and "output1: kLAST_VALUE" in text


def test_awkward_names_are_escaped_and_long_paths_elided() -> None:
    info = awkward_info(path_length=60)
    svg = svg_picture(info, f"title {NASTY}")
    root = ET.fromstring(svg)  # well-formed despite the metacharacters

    assert [(kind, name) for kind, name, _ in tree(info.loops)] == [
        (g.get("class"), g.get("data-name")) for g, _ in boxes(root)]
    assert root.find(f"{SVG}title").text == f"title {NASTY}"  # type: ignore[union-attr]
    outer = info.loops[0]
    assert isinstance(outer, LoopInfo)
    steps = own_steps(boxes(root)[0][0])
    (cut,) = [k for k, s in enumerate(steps) if "elided" in (s.get("class") or "").split()]
    before, after = [s.get("data-name") for s in steps[:cut]], [s.get("data-name") for s in steps[cut + 1:]]
    path = outer.critical_path
    # the path's two ends are kept, the middle left out and counted
    assert before and after and before == path[:len(before)] and after == path[len(path) - len(after):]
    hidden = len(path) - len(before) - len(after)
    assert re.search(rf"\b{hidden} more\b", text_of(steps[cut])) and hidden > 0
    assert "? MACs" in text_of(root)


def test_nothing_external_and_no_ids() -> None:
    """No script, style sheet, link, image or id: several pictures can sit in one page, offline."""
    for info in [awkward_info(), *(sample_info(s) for s in SAMPLES)]:
        root = ET.fromstring(svg_picture(info, "t"))
        tags = {element.tag.removeprefix(SVG) for element in root.iter()}
        assert tags <= {"svg", "title", "g", "rect", "path", "text"}, tags
        attributes = {name for element in root.iter() for name in element.attrib}
        assert not attributes & {"id", "href", "{http://www.w3.org/1999/xlink}href", "style", "onload"}
        assert not any("url(" in value for element in root.iter() for value in element.attrib.values())


def test_no_loops() -> None:
    root = ET.fromstring(svg_picture(NetworkInfo(3, []), "plain"))
    assert boxes(root) == [] and "no loops" in text_of(root)

"""The reports of ``loopc check`` against the judges that read them: the JUnit schemas, GFM's table rules, Chromium.

Reports are written from hand-made check reports (:mod:`tests.check.reports_data`) whose counts,
testcases and rows are counted by hand; the loops they draw are those of real sample networks.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from loopc.check.junit import junit_xml
from loopc.check.markdown import markdown_summary
from loopc.check.results import ERROR, FAILED, PASSED, SKIPPED, Report
from loopc.fingerprint import NetworkInfo
from tests.browser import browser, open_page  # noqa: F401
from tests.check import reports_data as data

REPORTS: dict[str, Callable[[], Report]] = {
    "mixed": data.mixed_report, "passing": data.passing_report, "empty": data.empty_report}
SCHEMAS = Path(sys.prefix) / "share" / "junit-xsd"
CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


# -- JUnit ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def schemas() -> tuple[Any, Any]:
    """(Jenkins' junit-4 schema, the Apache Ant schema), as ``make test`` fetches them."""
    xmlschema = pytest.importorskip("xmlschema")
    paths = [SCHEMAS / "jenkins-junit.xsd", SCHEMAS / "JUnit.xsd"]
    missing = [path.name for path in paths if not path.is_file()]
    if missing:
        pytest.skip(f"JUnit schemas not installed ({', '.join(missing)} under <venv>/share/junit-xsd; "
                    "make test fetches them)")
    return xmlschema.XMLSchema(str(paths[0])), xmlschema.XMLSchema(str(paths[1]))


def schema_errors(schema: Any, document: str | bytes) -> list[str]:
    text = document.decode() if isinstance(document, bytes) else document
    return [f"{error.path}: {error.reason}" for error in schema.iter_errors(text)]


def without_jenkins_extensions(document: bytes) -> str:
    """The document less the four things the Ant schema has no room for (see :mod:`loopc.check.junit`)."""
    root = ET.fromstring(document)
    root.attrib.clear()
    for suite in root.iter("testsuite"):
        suite.attrib.pop("skipped", None)
    for case in root.iter("testcase"):
        for child in case.findall("skipped") + case.findall("system-out"):
            case.remove(child)
    return ET.tostring(root, encoding="unicode")


@pytest.mark.parametrize("name", REPORTS)
def test_junit_is_valid_for_jenkins(schemas: tuple[Any, Any], name: str) -> None:
    assert schema_errors(schemas[0], junit_xml(REPORTS[name]())) == []


@pytest.mark.parametrize("name", REPORTS)
def test_junit_is_valid_for_ant_apart_from_where_the_schemas_conflict(schemas: tuple[Any, Any], name: str) -> None:
    assert schema_errors(schemas[1], without_jenkins_extensions(junit_xml(REPORTS[name]()))) == []


def test_the_schemas_refuse_what_the_report_avoids(schemas: tuple[Any, Any]) -> None:
    """The validations above can fail: each schema refuses a JUnit habit the report stays clear of."""
    document = junit_xml(data.mixed_report())
    jenkins, ant = schemas
    assert schema_errors(ant, document)  # <skipped> and the totals on <testsuites>
    root = ET.fromstring(document)
    next(root.iter("skipped")).set("message", "not built")  # what many writers do; junit-4 has no attribute
    assert schema_errors(jenkins, ET.tostring(root))
    del next(root.iter("testsuite")).attrib["hostname"]
    assert any("hostname" in error for error in schema_errors(ant, without_jenkins_extensions(ET.tostring(root))))


def outcome(case: ET.Element) -> str:
    found = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
    assert len(found) <= 1, found
    return {"failure": FAILED, "error": ERROR, "skipped": SKIPPED}[found[0]] if found else PASSED


def test_junit_counts_match_the_report() -> None:
    root = ET.fromstring(junit_xml(data.mixed_report()))
    outcomes = [outcome(case) for case in root.iter("testcase")]
    assert {status: outcomes.count(status) for status in data.MIXED_COUNTS} == data.MIXED_COUNTS
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == (
        str(sum(data.MIXED_COUNTS.values())), str(data.MIXED_COUNTS[FAILED]), str(data.MIXED_COUNTS[ERROR]))
    for suite in root.iter("testsuite"):
        inside = [outcome(case) for case in suite.iter("testcase")]
        assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == (
            str(len(inside)), str(inside.count(FAILED)), str(inside.count(ERROR)), str(inside.count(SKIPPED)))


def test_junit_has_one_testcase_per_model_target_and_check_and_one_suite_per_model() -> None:
    root = ET.fromstring(junit_xml(data.mixed_report()))
    cases = [(case.get("classname"), case.get("name")) for case in root.iter("testcase")]
    assert len(cases) == len(data.MIXED_CASES) == 19
    assert set(cases) == data.MIXED_CASES
    models = list(dict.fromkeys(model for model, _ in data.MIXED_ROWS))
    assert [suite.get("name") for suite in root.iter("testsuite")] == models  # unicode and markup round trip
    assert [suite.get("id") for suite in root.iter("testsuite")] == [str(i) for i in range(len(models))]


def test_junit_messages_are_single_printable_lines() -> None:
    root = ET.fromstring(junit_xml(data.mixed_report()))
    problems = [element for tag in ("failure", "error") for element in root.iter(tag)]
    assert len(problems) == data.MIXED_COUNTS[FAILED] + data.MIXED_COUNTS[ERROR]
    for element in problems:
        message = element.get("message", "")
        assert message and "\n" not in message and "\r" not in message and not CONTROL.search(message), message
        assert element.get("type") in ("manifest", "build", "numbers", "fingerprint")
    crash = next(root.iter("error"))
    # ANSI colours and NUL/BEL gone, the two lines joined
    assert crash.get("message") == "internal error in pass 'canonicalize' second line"
    assert "a < b && c ]]> d\nInternalError: boom" in (crash.text or "")  # markup kept as text, \v dropped
    assert [element.text for element in root.iter("skipped")] == ["not built"] * data.MIXED_COUNTS[SKIPPED]


def test_junit_timestamp_is_the_runs_wall_clock_time_without_a_time_zone() -> None:
    root = ET.fromstring(junit_xml(data.mixed_report()))  # started 2025-03-04T05:06:07+02:00
    assert {suite.get("timestamp") for suite in root.iter("testsuite")} == {"2025-03-04T05:06:07"}


def test_junit_shows_each_output_and_difference_beside_its_check() -> None:
    root = ET.fromstring(junit_xml(data.mixed_report()))
    suite = next(s for s in root.iter("testsuite") if s.get("name") == "loop_if")
    outputs = {case.get("name"): case.findtext("system-out") or "" for case in suite.iter("testcase")}
    assert "loop Loop_1_loop__38: layers per iteration: 6 → 8 (regression)" in outputs["fingerprint [sm89]"]
    assert "engine bytes: 30,000 → 31,000 (change within thresholds)" in outputs["fingerprint [sm89]"]
    assert outputs["numbers [sm89]"].startswith("Y: passed")


# -- Markdown -------------------------------------------------------------------------------------

def split_row(line: str) -> list[str]:
    """A GFM table row's cells: split at each pipe no backslash escapes (GFM spec, tables extension)."""
    cells, cell, escaped = [], "", False
    for char in line.strip()[1:-1]:  # the outer pipes
        if char == "|" and not escaped:
            cells.append(cell.strip())
            cell = ""
        else:
            cell += char
        escaped = char == "\\" and not escaped
    return cells + [cell.strip()]


def unescape(cell: str) -> str:
    """A cell's text as GFM shows it: backslash escapes of ASCII punctuation resolved, ``<br>`` a newline."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", cell.replace("<br>", "\n"))


def table(markdown: str) -> list[list[str]]:
    """The rows of the results table (the one whose header starts with Model), header and delimiter excluded."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| Model |"))
    assert set(split_row(lines[start + 1])) == {"---"}
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(split_row(line))
    return rows


def test_markdown_has_one_row_per_model_and_target_with_pipes_escaped() -> None:
    rows = table(markdown_summary(data.mixed_report()))
    assert [len(row) for row in rows] == [6] * len(data.MIXED_ROWS)
    assert [(unescape(row[0]), unescape(row[1])) for row in rows] == data.MIXED_ROWS
    assert [unescape(row[2]) for row in rows] == ["✅ passed"] * 2 + ["❌ failed"] * 3 + ["💥 error", "❌ failed"]


def test_markdown_cells_say_what_each_check_found() -> None:
    report = data.mixed_report()
    rows = {unescape(row[0]) + "@" + row[1]: [unescape(cell) for cell in row] for row in
            table(markdown_summary(report))}
    decoder = rows["greedy_gru_decoder@sm80"]
    assert decoder[3] == "2.10 s (0.98× reference)"
    assert decoder[4] == "max abs 1.2e-06 · max rel 3.5e-06 (2 outputs)"  # the worst of the two outputs
    [loop] = report.results[0].fingerprint["loops"]  # the report's input: the sample's network, as read
    assert decoder[5] == (f"1 loop · {loop['layers_per_iteration']} layers, {loop['macs_per_iteration']:,} MACs "
                          "per iteration · engine 1.2 MiB")  # 1,250,000 bytes
    [outer] = report.results[2].fingerprint["loops"]
    [inner] = outer["children"]
    assert rows[f"{data.PIPE_MODEL}@sm89"][5] == (
        f"2 loops (1 nested) · {outer['layers_per_iteration']}/{inner['layers_per_iteration']} layers, 0/0 MACs per "
        "iteration · engine 40.0 KiB · 1 change from baseline")  # 40,960 bytes; no products in the sample
    assert rows["loop_if@sm89"][5] == "❌ loop Loop_1_loop__38: layers per iteration: 6 -> 8"
    assert rows[f"{data.MARKUP_MODEL}@sm89"][3:] == [
        "❌ missing.onnx: no such file", "⏭️ not built", "⏭️ not built"]
    assert rows["model 6@-"][3:] == ["❌ [[model]] 6: unknown key 'tolerance' (did you mean 'rtol'?)", "—", "—"]
    crash = rows["crashes@sm89"][3]
    assert crash == "💥 internal error in pass 'canonicalize'\nsecond line" and not CONTROL.search(crash)


def test_markdown_headline_counts_and_the_failures_section() -> None:
    markdown = markdown_summary(data.mixed_report())
    assert markdown.startswith("## 💥 loopc check\n")
    for status, count in data.MIXED_COUNTS.items():
        assert f"{count} {status}" in markdown
    section = markdown.split("### Regressions and failures", 1)[1]
    for message in ("output 'y': max abs error 0.5", "missing.onnx: no such file",
                    "[[model]] 6: unknown key 'tolerance'"):
        assert message in unescape(section)
    differences = [[unescape(cell) for cell in split_row(line)] for line in section.splitlines()
                   if line.startswith("| ") and "baseline" not in line.lower() and "---" not in line]
    assert ["❌ regression", "loop Loop_1_loop__38: layers per iteration", "6", "8"] in differences
    assert ["ℹ️ change", "engine bytes", "30,000", "31,000"] in differences
    assert ["ℹ️ change", "build seconds", "0.8", "0.9"] in differences
    assert "<script>" not in markdown and not CONTROL.search(markdown)


def test_markdown_of_a_passing_and_an_empty_run() -> None:
    passing = markdown_summary(data.passing_report())
    assert passing.startswith("## ✅ loopc check") and "Regressions and failures" not in passing
    assert len(table(passing)) == 1
    empty = markdown_summary(data.empty_report())
    assert "No models were checked." in empty and "| Model |" not in empty and "shard 3/3" in empty


# -- HTML -----------------------------------------------------------------------------------------

def html_report(report: Report) -> str:
    from loopc.check.html import html_report as write

    return write(report)


class _References(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.references: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.references += [value or "" for name, value in attrs if name in ("src", "href", "xlink:href", "action")]


@pytest.mark.parametrize("name", REPORTS)
def test_html_needs_nothing_outside_the_page(name: str) -> None:
    parser = _References()
    parser.feed(html_report(REPORTS[name]()))
    assert all(reference.startswith("#") for reference in parser.references), parser.references
    assert not {"script", "link", "img", "iframe", "object"} & set(parser.tags)


def loop_nodes(fingerprint: dict[str, Any]) -> list[tuple[str, str]]:
    """(kind, name) of every loop and conditional of a fingerprint, nested ones included."""
    found: list[tuple[str, str]] = []
    nodes = list(NetworkInfo.from_dict(fingerprint).loops)
    while nodes:
        node = nodes.pop()
        found.append((node.kind, node.name))
        nodes += node.children
    return found


def attribute(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.mark.browser
def test_html_report_in_chromium(browser: Any, tmp_path: Path) -> None:  # noqa: F811
    report = data.mixed_report()
    page_path, screenshot = tmp_path / "report.html", tmp_path / "report.png"
    page_path.write_text(html_report(report), encoding="utf-8")
    opened = open_page(browser, page_path, screenshot)
    page = opened.page
    assert opened.errors == []
    assert screenshot.stat().st_size > 10_000

    rows = page.locator("#results tbody tr")
    assert rows.count() == len(data.MIXED_ROWS)
    cells = [[rows.nth(i).locator("td").nth(j).inner_text() for j in (0, 1)] for i in range(rows.count())]
    assert [tuple(row) for row in cells] == data.MIXED_ROWS  # markup in a model name shown as text
    assert page.locator("script").count() == 0
    colours = {rows.nth(i).locator("td.status").evaluate("e => getComputedStyle(e).backgroundColor")
               for i in range(rows.count())}
    assert len(colours) == 3  # passed, failed, error: three colours

    # one picture per model and distinct network: the decoder's two targets share theirs
    figures = page.locator("figure.picture")
    assert [figures.nth(i).get_attribute("data-targets") for i in range(figures.count())] == [
        "sm80 sm89", "sm89", "sm89"]
    for result in report.results:
        if result.fingerprint is not None:
            for kind, name in loop_nodes(result.fingerprint):
                assert page.locator(f"figure.picture g.{kind}[data-name={attribute(name)}]").count() >= 1, name
    per_figure = [(figures.nth(i).locator("g.loop").count(), figures.nth(i).locator("g.if").count())
                  for i in range(figures.count())]
    assert per_figure == [(1, 0), (2, 0), (1, 1)]  # the samples: one loop; a loop in a loop; an If in a loop

    regression = page.locator("table.differences tr.regression")
    assert regression.count() == 1
    assert [regression.locator("td").nth(i).inner_text() for i in range(3)] == [
        "loop Loop_1_loop__38: layers per iteration", "6", "8"]
    changes = page.locator("table.differences tr.change")
    assert sorted(changes.nth(i).locator("td").first.inner_text() for i in range(changes.count())) == [
        "build seconds", "engine bytes"]
    assert regression.evaluate("e => getComputedStyle(e.cells[0]).backgroundColor") != \
        changes.first.evaluate("e => getComputedStyle(e.cells[0]).backgroundColor")
    crash = page.locator("section.target.error")
    assert "a < b && c ]]> d" in crash.locator("pre").inner_text()


@pytest.mark.browser
@pytest.mark.parametrize("name", ["passing", "empty"])
def test_html_report_of_a_passing_and_an_empty_run(browser: Any, tmp_path: Path, name: str) -> None:  # noqa: F811
    page_path = tmp_path / "report.html"
    page_path.write_text(html_report(REPORTS[name]()), encoding="utf-8")
    opened = open_page(browser, page_path, tmp_path / "report.png")
    assert opened.errors == []
    assert opened.page.locator("#results tbody tr").count() == (1 if name == "passing" else 0)

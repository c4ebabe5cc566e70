"""``loopc check --html``: the report as one self-contained HTML page, for a CI artifact.

Everything is in the page: inline CSS, the loop pictures as inline SVG, no script and nothing
fetched, so it opens the same from a CI artifact store, a mail attachment or a disk with no
network. It shows the counts, the table the Markdown summary has (status coloured), then per
model its loops drawn once per distinct fingerprint, and per model × target its checks (failed
ones with their details), its outputs against the reference and its differences from the baseline,
regressions highlighted. Every piece of text from the report is escaped.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from loopc.check import markdown
from loopc.check.results import ERROR, FAILED, PASSED, SKIPPED, STATUSES, CheckResult, OutputComparison, Report, \
    TargetResult
from loopc.fingerprint import NetworkInfo
from loopc.picture.svg import svg_picture

#: Status marks in the page: symbols common text fonts have (emoji fonts are missing on many CI machines).
SYMBOLS = {PASSED: "✓", FAILED: "✗", ERROR: "⚠", SKIPPED: "↷"}

STYLE = """
:root { --passed: #1a7f37; --failed: #cf222e; --error: #8250df; --skipped: #6e7781; --line: #d0d7de;
        --regression: #ffebe9; --change: #fff8c5; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; padding: 1.5em;
       max-width: 1400px; color: #1f2328; background: #fff; }
h1 { margin: 0 0 .3em; } h2 { margin-top: 2em; border-bottom: 1px solid var(--line); padding-bottom: .2em; }
h2 small, .run { color: var(--skipped); font-weight: normal; }
table { border-collapse: collapse; margin: .6em 0 1em; }
th, td { border: 1px solid var(--line); padding: .3em .6em; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
.counts span { display: inline-block; margin-right: .8em; padding: .15em .6em; border-radius: 1em; color: #fff; }
.passed { --status: var(--passed); } .failed { --status: var(--failed); }
.error { --status: var(--error); } .skipped { --status: var(--skipped); }
.counts span, td.status { background: var(--status); color: #fff; }
td.status { white-space: nowrap; }
td.check.failed, td.check.error, li.failed, li.error { color: var(--status); }
td.check.skipped, li.skipped { color: var(--skipped); }
tr.regression td { background: var(--regression); } tr.change td { background: var(--change); }
section.target { border-left: 4px solid var(--status); padding-left: 1em; margin: 1em 0; }
pre { background: #f6f8fa; padding: .6em; overflow-x: auto; white-space: pre-wrap; }
figure { margin: 1em 0; overflow-x: auto; }
a { color: inherit; } .mark { color: var(--status); }
"""


def html_report(report: Report) -> str:
    """The report as a complete HTML document."""
    counts = report.counts()
    overall = next((status for status in (ERROR, FAILED) if counts[status]), PASSED)
    title = f"loopc check: {overall}"
    parts = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_text(title)}</title>", f"<style>{STYLE}</style>", "</head>", "<body>",
        f'<header><h1><span class="mark {overall}">{SYMBOLS[overall]}</span> loopc check</h1>',
        '<p class="counts">' + "".join(
            f'<span class="{status}">{SYMBOLS[status]} {counts[status]} {status}</span>' for status in STATUSES)
        + "</p>",
        f'<p class="run">{_text(markdown.run_line(report))}'
        + (f" · {report.seconds:.1f} s" if report.seconds else "") + "</p></header>",
        "<main>",
    ]
    if report.results:
        parts.append(_table(report.results))
        for index, (model, results) in enumerate(_by_model(report.results)):
            parts.append(_model_section(index, model, results))
    else:
        parts.append("<p>No models were checked.</p>")
    parts += ["</main>", "</body>", "</html>", ""]
    return "\n".join(parts)


def _table(results: list[TargetResult]) -> str:
    rows = []
    for index, result in enumerate(results):
        model, target, status, *checks = markdown.row_cells(result)
        rows.append(
            f'<tr class="{result.status}" id="row-{index}">'
            f'<td><a href="#result-{index}">{_text(model.text)}</a></td><td>{_text(target.text)}</td>'
            f'<td class="status">{_marked(status)}</td>'
            + "".join(f'<td class="check {cell.status or ""}">{_marked(cell)}</td>' for cell in checks)
            + "</tr>")
    head = "".join(f"<th>{_text(column)}</th>" for column in markdown.COLUMNS)
    return (f'<table id="results"><thead><tr>{head}</tr></thead>\n<tbody>\n' + "\n".join(rows)
            + "\n</tbody></table>")


def _model_section(index: int, model: str, results: list[tuple[int, TargetResult]]) -> str:
    paths = sorted({result.path for _, result in results if result.path})
    parts = [f'<section class="model" id="model-{index}">',
             f"<h2>{_text(model)}" + (f" <small>{_text(', '.join(paths))}</small>" if paths else "") + "</h2>"]
    parts += _pictures(model, [result for _, result in results])
    parts += [_target_section(position, result) for position, result in results]
    parts.append("</section>")
    return "\n".join(parts)


def _pictures(model: str, results: list[TargetResult]) -> list[str]:
    """The model's loops, drawn once per distinct network (targets that built the same loops share one)."""
    drawn: dict[str, tuple[dict[str, Any], list[str]]] = {}
    for result in results:
        if result.fingerprint is not None:
            network = {"layers": result.fingerprint["layers"], "loops": result.fingerprint.get("loops", [])}
            drawn.setdefault(json.dumps(network, sort_keys=True), (network, []))[1].append(result.target)
    figures = []
    for network, targets in drawn.values():
        caption = f"{model}: {', '.join(targets)}"
        figures.append(f'<figure class="picture" data-targets="{_text(" ".join(targets))}">'
                       f"{svg_picture(NetworkInfo.from_dict(network), caption)}</figure>")
    return figures


def _target_section(index: int, result: TargetResult) -> str:
    parts = [f'<section class="target {result.status}" id="result-{index}">',
             f"<h3>{SYMBOLS[result.status]} {_text(result.model)} · {_text(result.target)}</h3>",
             '<ul class="checks">' + "".join(_check_item(check) for check in result.checks) + "</ul>"]
    if result.outputs:
        parts.append(_outputs(result.outputs, "Outputs against the reference", "Max rel error"))
    if result.against_fp32:
        parts.append(_outputs(result.against_fp32, f"Outputs in {result.precision} against the float32 network",
                              "Max abs error over the largest magnitude"))
    if result.differences:
        parts.append(_differences(result))
    parts.append("</section>")
    return "\n".join(parts)


def _check_item(check: CheckResult) -> str:
    text = f'<li class="{check.status}">{SYMBOLS[check.status]} <b>{_text(check.check)}</b>: '
    text += _text(check.message or check.status)
    if check.details:
        opened = " open" if check.status in (FAILED, ERROR) else ""
        text += f"<details{opened}><summary>details</summary><pre>{_text(check.details)}</pre></details>"
    return text + "</li>"


def _outputs(outputs: list[OutputComparison], caption: str, relative: str) -> str:
    """A table of outputs; ``relative`` heads the column of their relative errors (elementwise, or over scale)."""
    rows = []
    for output in outputs:
        status = PASSED if output.passed else FAILED
        shape = "x".join(map(str, output.shape)) if output.shape is not None else ""
        rows.append(f'<tr class="{status}"><td>{_text(output.name)}</td><td>{SYMBOLS[status]} {status}</td>'
                    f"<td>{'equal' if markdown.compared_exactly(output) else _error(output.max_abs)}</td>"
                    f"<td>{_error(_first(output.max_rel, output.of_scale))}</td>"
                    f"<td>{_text(shape)}</td><td>{_text(output.reason)}</td></tr>")
    return (f'<table class="outputs"><caption>{_text(caption)}</caption><thead><tr><th>Output</th>'
            f"<th>Result</th><th>Max abs error</th><th>{_text(relative)}</th><th>Shape</th><th>Reason</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _differences(result: TargetResult) -> str:
    rows = "".join(
        f'<tr class="{"regression" if d.regression else "change"}"><td>{_text(d.what)}</td>'
        f"<td>{_text(markdown.format_value(d.baseline))}</td><td>{_text(markdown.format_value(d.current))}</td>"
        f"<td>{SYMBOLS[FAILED] + ' regression' if d.regression else 'change within thresholds'}</td></tr>"
        for d in result.differences)
    return ('<table class="differences"><caption>Differences from the baseline</caption><thead><tr>'
            "<th>What</th><th>Baseline</th><th>Current</th><th>Verdict</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>")


def _marked(cell: markdown.Cell) -> str:
    return f"{SYMBOLS[cell.status]} {_text(cell.text)}" if cell.status else _text(cell.text)


def _text(text: str) -> str:
    """Report text as HTML text: printable (see :func:`markdown.plain`), then escaped."""
    return escape(markdown.plain(text))


def _first(*values: float | None) -> float | None:
    return next((value for value in values if value is not None), None)


def _error(value: float | None) -> str:
    return "" if value is None else _text(markdown.format_error(value))


def _by_model(results: list[TargetResult]) -> list[tuple[str, list[tuple[int, TargetResult]]]]:
    """Results grouped by model in the order models first appear, each with its row's index."""
    groups: dict[str, list[tuple[int, TargetResult]]] = {}
    for index, result in enumerate(results):
        groups.setdefault(result.model, []).append((index, result))
    return list(groups.items())

"""``loopc check --markdown``: the report as GitHub-flavoured Markdown, for a CI job summary or a PR comment.

A headline with the counts, one table row per model × target (status, build, numbers and a half-precision
build's precision, fingerprint), then each model × target that failed or moved against the baseline: its failed
checks' one-line messages and details, and its differences from the baseline.

The table's cells are plain text first (:func:`row_cells` and the ``*_cell`` functions, each a
:class:`Cell` that says whether it is a check's message), so that the HTML report shows the same
columns and the JUnit report the same summaries; each format marks and escapes them its own way.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

from loopc.check.results import ERROR, FAILED, PASSED, SKIPPED, STATUSES, CheckResult, Difference, \
    OutputComparison, Report, TargetResult
from loopc.fingerprint import LoopInfo, NetworkInfo, Node
from loopc.picture.labels import macs, plural

ICONS = {PASSED: "✅", FAILED: "❌", ERROR: "💥", SKIPPED: "⏭️"}
COLUMNS = ("Model", "Target", "Status", "Build", "Numbers", "Fingerprint")
#: Per-iteration figures listed for at most this many loops in a cell; the HTML page draws them all.
LOOPS_LISTED = 6

# GFM lets a backslash escape any ASCII punctuation; these are the characters that would otherwise
# start emphasis, code, links, HTML or entities, or end a table cell.
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")
_NEWLINE = re.compile(r"\r\n?|\n")
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[@-_])")  # CSI sequences (colours) and two-byte escapes
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


class Cell(NamedTuple):
    """A table cell as plain text; ``status`` is the check's when the text is its message (None: a summary)."""

    text: str
    status: str | None = None


def markdown_summary(report: Report) -> str:
    """The report as Markdown (GitHub-flavoured: tables, ``<details>``)."""
    lines = [f"## {ICONS[_overall(report)]} loopc check", "", escape(counts_line(report)), "",
             escape(run_line(report)), ""]
    if not report.results:
        return "\n".join(lines + ["No models were checked.", ""])
    lines += [_row(COLUMNS), _row(["---"] * len(COLUMNS), escaped=True)]
    lines += [_row([_marked(cell) for cell in row_cells(result)]) for result in report.results]
    problems = [result for result in report.results if _failed(result) or result.differences]
    if problems:
        lines += ["", "### Regressions and failures"]
        for result in problems:
            lines += _problem_section(result)
    return "\n".join(lines) + "\n"


# -- the cells, as plain text ---------------------------------------------------------------------

def row_cells(result: TargetResult) -> list[Cell]:
    """The table's columns (:data:`COLUMNS`) for one model × target."""
    return [Cell(result.model), Cell(result.target), Cell(result.status, result.status),
            build_cell(result), numbers_cell(result), fingerprint_cell(result)]


def build_cell(result: TargetResult) -> Cell:
    """The build's time (and its ratio to the run's reference build), or why it did not build.

    A model whose table in the manifest could not be read has no build: the manifest's message is shown.
    """
    check = find_check(result, "build") or find_check(result, "manifest")
    if check is None or check.status != PASSED:
        return _not_passed(check)
    fingerprint = result.fingerprint or {}
    seconds = float(fingerprint.get("build_seconds", check.seconds))
    text = f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.1f} s"  # small models build in a fraction of one
    if fingerprint.get("build_ratio") is not None:
        text += f" ({float(fingerprint['build_ratio']):.2f}× reference)"
    return Cell(text)


def numbers_cell(result: TargetResult) -> Cell:
    """The worst absolute and relative errors over the outputs, or why the numbers failed; for a half-precision
    build, then the worst error against the float32 network over its scale, or why that failed."""
    check, half = find_check(result, "numbers"), find_check(result, "precision")
    if check is None or check.status != PASSED:
        return _not_passed(check)
    if half is not None and half.status != PASSED:
        return _not_passed(half)
    worst_abs = _worst(output.max_abs for output in result.outputs)
    worst_rel = _worst(output.max_rel for output in result.outputs)
    errors = [f"max {kind} {format_error(worst)}" for kind, worst in (("abs", worst_abs), ("rel", worst_rel))
              if worst is not None]  # integer outputs have none: they passed, so they are equal
    counted = f" ({plural(len(result.outputs), 'output')})"
    text = (" · ".join(errors) or "equal") + counted if result.outputs else PASSED
    if half is not None:
        text += (f" · {result.precision}: {format_error(_worst(o.of_scale for o in result.against_fp32) or 0.0)} "
                 "of scale against float32")
    return Cell(text)


def fingerprint_cell(result: TargetResult) -> Cell:
    """The loops, work per iteration and engine size, or the regression against the baseline."""
    check = find_check(result, "fingerprint")
    if check is not None and check.status in (FAILED, ERROR):
        return _not_passed(check)
    if result.fingerprint is None:
        return _not_passed(check)
    text = fingerprint_summary(result.fingerprint)
    if result.differences:
        text += f" · {plural(len(result.differences), 'change')} from baseline"
    return Cell(text)


def fingerprint_summary(fingerprint: dict[str, Any]) -> str:
    """One line: how many loops (nested, conditionals), layers and MACs per iteration of each, engine size."""
    info = NetworkInfo.from_dict(fingerprint)
    loops = list(info.walk_loops())
    conditionals = sum(1 for node in _walk(info.loops) if node.kind == "if")
    nested = len(loops) - sum(1 for node in info.loops if isinstance(node, LoopInfo))
    if loops:
        shown = loops[:LOOPS_LISTED]
        more = "/…" if len(loops) > len(shown) else ""
        layers = "/".join(str(loop.layers_per_iteration) for loop in shown) + more
        work = "/".join(macs(loop) for loop in shown) + more
        parts = [plural(len(loops), "loop") + (f" ({nested} nested)" if nested else ""),
                 f"{layers} layers, {work} MACs per iteration"]
    else:
        parts = ["no loops"]
    if conditionals:
        parts.insert(1, plural(conditionals, "conditional"))
    if fingerprint.get("engine_bytes") is not None:
        parts.append(f"engine {format_bytes(int(fingerprint['engine_bytes']))}")
    return " · ".join(parts)


def output_line(output: OutputComparison) -> str:
    """One output against the reference: its errors and shape, or why it failed."""
    parts = [f"{output.name}: {'passed' if output.passed else 'failed'}"]
    if compared_exactly(output):
        parts.append("equal")
    if output.max_abs is not None:
        parts.append(f"max abs {format_error(output.max_abs)}")
    if output.max_rel is not None:
        parts.append(f"max rel {format_error(output.max_rel)}")
    if output.of_scale is not None:
        parts.append(f"{format_error(output.of_scale)} of scale")
    if output.shape is not None:
        parts.append("shape " + ("x".join(map(str, output.shape)) or "scalar"))
    if output.reason:
        parts.append(output.reason)
    return " · ".join(parts)


def difference_line(difference: Difference) -> str:
    """``what: baseline → current`` and whether it breaks a threshold."""
    verdict = "regression" if difference.regression else "change within thresholds"
    return (f"{difference.what}: {format_value(difference.baseline)} → {format_value(difference.current)}"
            f" ({verdict})")


def counts_line(report: Report) -> str:
    """How many checks ended in each status, over how many models × targets, and how long the run took."""
    counts = report.counts()
    parts = [f"{ICONS[status]} {counts[status]} {status}" for status in STATUSES]
    return (" · ".join(parts) + f" — {sum(counts.values())} checks over {len(report.results)} models × targets"
            + (f" · {report.seconds:.1f} s" if report.seconds else ""))


def run_line(report: Report) -> str:
    """What ran: loopc and TensorRT versions, the executor, the manifest, the shard."""
    parts = [f"loopc {report.loopc}", f"TensorRT {report.tensorrt}", f"executor {report.executor}",
             f"manifest {report.manifest}"]
    if report.shard:
        parts.append(f"shard {report.shard}")
    if report.started:
        parts.append(f"started {report.started}")
    return " · ".join(parts)


# -- values ---------------------------------------------------------------------------------------

def find_check(result: TargetResult, name: str) -> CheckResult | None:
    return next((check for check in result.checks if check.check == name), None)


def compared_exactly(output: OutputComparison) -> bool:
    """Whether ``output`` passed with no error measured: an integer or boolean output, equal element by element
    (one that differs says how many elements do in its reason)."""
    return output.passed and output.max_abs is None and output.max_rel is None and output.of_scale is None


def format_error(value: float | None) -> str:
    return "?" if value is None else f"{value:.3g}"


def format_bytes(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    value = size / 1024
    for unit in ("KiB", "MiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def format_value(value: Any) -> str:
    """A baseline or current value: counts with thousands separators, lists and tables compactly."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _worst(values: Any) -> float | None:
    known = [value for value in values if value is not None]
    return max(known) if known else None


def _walk(nodes: list[Node]) -> list[Node]:
    return [each for node in nodes for each in (node, *_walk(node.children))]


def _not_passed(check: CheckResult | None) -> Cell:
    """A check's message as a cell; "—" where the check was not run at all (a manifest problem)."""
    return Cell("—") if check is None else Cell(check.message or check.status, check.status)


def _failed(result: TargetResult) -> list[CheckResult]:
    return [check for check in result.checks if check.status in (FAILED, ERROR)]


def _overall(report: Report) -> str:
    counts = report.counts()
    return next((status for status in (ERROR, FAILED) if counts[status]), PASSED)


# -- Markdown -------------------------------------------------------------------------------------

def plain(text: str) -> str:
    """Text from a model or an error message, printable: no ANSI colour sequences, no control characters.

    What is removed is exactly what XML 1.0 forbids (so the JUnit report can carry the rest).
    """
    return _NOT_XML.sub("", _ANSI.sub("", str(text)))


def escape(text: str) -> str:
    """Plain text as GFM inline text: punctuation that means something backslash-escaped, lines kept."""
    return _NEWLINE.sub("<br>", _SPECIAL.sub(r"\\\1", plain(text)))


def _marked(cell: Cell) -> str:
    return f"{ICONS[cell.status]} {cell.text}" if cell.status else cell.text


def _row(cells: Any, escaped: bool = False) -> str:
    return "| " + " | ".join(cell if escaped else escape(cell) for cell in cells) + " |"


def _problem_section(result: TargetResult) -> list[str]:
    lines = ["", f"#### {ICONS[result.status]} {escape(result.model)} · {escape(result.target)}"
             + (f" ({escape(result.path)})" if result.path else ""), ""]
    failed = _failed(result)
    lines += [f"- {ICONS[check.status]} **{check.check}**: {escape(check.message or check.status)}"
              for check in failed]
    for check in failed:
        if check.details:
            lines += ["", f"<details><summary>{check.check}: details</summary>", "", *_fenced(check.details),
                      "", "</details>"]
    if result.differences:
        lines += ["", _row(["", "Difference from baseline", "Baseline", "Current"]),
                  _row(["---"] * 4, escaped=True)]
        lines += [_row(["❌ regression" if d.regression else "ℹ️ change", d.what, format_value(d.baseline),
                        format_value(d.current)]) for d in result.differences]
    return lines


def _fenced(text: str) -> list[str]:
    """``text`` verbatim in a code block whose fence no run of backticks inside it can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + "text", *_NEWLINE.split(plain(text).rstrip("\n")), fence]

"""``loopc check --junit``: the report as JUnit XML, the test-result format GitHub, GitLab and Jenkins read.

One ``<testsuite>`` per model and one ``<testcase>`` per model × target × check, named
``"<check> [<target>]"`` in class ``loopc.check.<model>``, so CI pages group a model's checks
together and a target's results side by side.

The document is valid against Jenkins' JUnit schema (``junit-4.xsd``), which GitHub's and
GitLab's parsers follow. It also carries everything the Apache Ant schema requires (a timestamp
without time zone, ``hostname``, ``id``, ``package``, ``properties``, ``system-out``,
``system-err``), but the two schemas conflict on four points, where it follows Jenkins: the Ant
schema allows no attributes on ``<testsuites>`` (so no totals), no ``skipped`` count on a
``<testsuite>``, and no ``<skipped>`` or ``<system-out>`` in a ``<testcase>``. A skipped
testcase's reason is the text of ``<skipped>`` (Jenkins' schema allows no attributes on it).

Text comes from model files and error messages, so it is made fit for XML 1.0 first: ANSI colour
sequences and the characters XML 1.0 forbids (most control characters) are removed.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from datetime import datetime

from loopc.check import markdown
from loopc.check.markdown import plain
from loopc.check.results import ERROR, FAILED, PASSED, SKIPPED, CheckResult, Report, TargetResult

SUITES_NAME = "loopc check"
PACKAGE = "loopc.check"
#: The Ant schema's value when the host is unknown; a report does not record where it ran.
HOSTNAME = "localhost"

_BLANKS = re.compile(r"\s+")


def junit_xml(report: Report) -> bytes:
    """The report as a UTF-8 JUnit XML document."""
    counts = report.counts()
    root = ET.Element("testsuites", {
        "name": SUITES_NAME,
        "tests": str(sum(counts.values())),
        "failures": str(counts[FAILED]),
        "errors": str(counts[ERROR]),
        "time": _seconds(report.seconds or sum(c.seconds for r in report.results for c in r.checks)),
    })
    timestamp = _timestamp(report.started)
    for index, (model, results) in enumerate(_by_model(report.results).items()):
        root.append(_suite(report, index, model, results, timestamp))
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def _suite(report: Report, index: int, model: str, results: list[TargetResult], timestamp: str) -> ET.Element:
    checks = [check for result in results for check in result.checks]
    states = [check.status for check in checks]
    suite = ET.Element("testsuite", {
        "name": plain(model) or "(unnamed)",
        "tests": str(len(checks)),
        "failures": str(states.count(FAILED)),
        "errors": str(states.count(ERROR)),
        "skipped": str(states.count(SKIPPED)),
        "time": _seconds(sum(check.seconds for check in checks)),
        "timestamp": timestamp,
        "hostname": HOSTNAME,
        "id": str(index),
        "package": PACKAGE,
    })
    properties = ET.SubElement(suite, "properties")
    for name, value in _properties(report, results):
        ET.SubElement(properties, "property", name=name, value=plain(value))
    for result in results:
        for check in result.checks:
            suite.append(_case(model, result, check))
    ET.SubElement(suite, "system-out").text = plain("\n".join(
        f"{result.id}: {result.status}" + (f" ({result.path})" if result.path else "") for result in results))
    ET.SubElement(suite, "system-err")
    return suite


def _properties(report: Report, results: list[TargetResult]) -> Iterable[tuple[str, str]]:
    yield "loopc", report.loopc
    yield "tensorrt", report.tensorrt
    yield "executor", report.executor
    yield "manifest", report.manifest
    if report.shard:
        yield "shard", report.shard
    paths = sorted({result.path for result in results if result.path})
    if paths:
        yield "path", ", ".join(paths)
    yield "targets", ", ".join(result.target for result in results)


def _case(model: str, result: TargetResult, check: CheckResult) -> ET.Element:
    case = ET.Element("testcase", {
        "name": f"{check.check} [{plain(result.target)}]" if result.target else check.check,
        "classname": f"{PACKAGE}.{plain(model)}",
        "time": _seconds(check.seconds),
    })
    message = _one_line(check.message) or f"{check.check} {check.status}"
    if check.status == SKIPPED:
        ET.SubElement(case, "skipped").text = message
    elif check.status in (FAILED, ERROR):
        tag = "failure" if check.status == FAILED else "error"
        ET.SubElement(case, tag, message=message, type=check.check).text = plain(check.details) or message
    output = _case_output(result, check)
    if output:
        ET.SubElement(case, "system-out").text = plain(output)
    return case


def _case_output(result: TargetResult, check: CheckResult) -> str:
    """What CI pages show beside a check: the build time, each output's errors, the fingerprint and its diff.

    A passed check's own details follow when these leave them out ("baseline updated").
    """
    lines: list[str] = []
    if check.check == "build" and result.fingerprint is not None:
        lines.append(markdown.build_cell(result).text)
    elif check.check == "numbers":
        lines += [markdown.output_line(output) for output in result.outputs]
    elif check.check == "precision":
        lines += [markdown.output_line(output) for output in result.against_fp32]
    elif check.check == "fingerprint" and result.fingerprint is not None:
        lines.append(markdown.fingerprint_summary(result.fingerprint))
        lines += [markdown.difference_line(difference) for difference in result.differences]
    covered = {"numbers": bool(result.outputs), "precision": bool(result.against_fp32),
               "fingerprint": bool(result.differences)}.get(check.check, False)
    if check.status == PASSED and check.details and not covered:
        lines.append(check.details)
    return "\n".join(lines)


def _by_model(results: list[TargetResult]) -> dict[str, list[TargetResult]]:
    """Results grouped by model, in the order models first appear (the manifest's)."""
    groups: dict[str, list[TargetResult]] = {}
    for result in results:
        groups.setdefault(result.model, []).append(result)
    return groups


def _one_line(text: str) -> str:
    """A message attribute: XML-safe, on one line (parsers fold newlines in attributes into spaces anyway)."""
    return _BLANKS.sub(" ", plain(text)).strip()


def _seconds(seconds: float) -> str:
    """An ``xs:decimal``: never negative, NaN or infinite."""
    return f"{seconds:.3f}" if math.isfinite(seconds) and seconds > 0 else "0.000"


def _timestamp(started: str) -> str:
    """ISO 8601 to the second without a time zone, as the Ant schema demands (the run's own wall-clock time).

    A report that does not say when it ran (one built by hand) is stamped with the time it is written.
    """
    try:
        moment = datetime.fromisoformat(started)
    except ValueError:
        moment = datetime.now()
    return moment.replace(tzinfo=None, microsecond=0).isoformat()

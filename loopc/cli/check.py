"""``loopc check``: the CI command (see :mod:`loopc.check`)."""

from __future__ import annotations

import json
import pathlib
import re
import sys
from collections.abc import Callable

import click

from loopc.check.results import ERROR, FAILED, PASSED, CheckResult, Report, TargetResult, merge
from loopc.cli.commands import _outputs, limit_option
from loopc.cli.main import cli, short_help, verbose_option
from loopc.errors import LoopcError
from loopc.fileio import OutputFile, check_readable

REPORTS = {  # option → (what, writer module and function)
    "junit": ("--junit", "loopc.check.junit", "junit_xml"),
    "json_path": ("--json", None, None),
    "markdown": ("--markdown", "loopc.check.markdown", "markdown_summary"),
    "html": ("--html", "loopc.check.html", "html_report"),
}


def _shard(ctx: click.Context, param: click.Parameter, text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise click.BadParameter(f"{text!r} is not K/N with 1 <= K <= N (e.g. 2/4)", ctx, param)
    return int(match[1]), int(match[2])


@cli.command(short_help=short_help("check"))
@click.argument("sources", nargs=-1, required=True, metavar="MANIFEST | --merge REPORT.json...")
@click.option("--merge", is_flag=True, help="Combine the JSON reports of shards (the SOURCES) into one.")
@click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False),
              help="Compare each engine's fingerprint with this baseline; fail on a regression.")
@click.option("--update-baseline", is_flag=True, help="Write the fingerprints to --baseline instead of failing.")
@click.option("--junit", type=click.Path(dir_okay=False), help="Write a JUnit XML report (one testcase per check).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False),
              help="Write the JSON report (what --merge reads).")
@click.option("--markdown", type=click.Path(dir_okay=False), help="Write a Markdown summary (a CI job summary).")
@click.option("--html", type=click.Path(dir_okay=False), help="Write a self-contained HTML report with pictures.")
@click.option("--shard", callback=_shard, metavar="K/N", help="Check only shard K of N (every N-th model).")
@click.option("--executor", type=click.Choice(("sim", "trt")), default="sim", show_default=True,
              help="sim: the CPU simulator; trt: the engines on this machine's GPU, through Polygraphy.")
@click.option("--engines", type=click.Path(file_okay=False), help="Keep the engines in this folder.")
@limit_option
@verbose_option
def check(sources: tuple[str, ...], merge: bool, baseline_path: str | None, update_baseline: bool,
          shard: tuple[int, int] | None, executor: str, engines: str | None, **paths: str | None) -> None:
    """Check a MANIFEST of models: build each for each target, compare its numbers, hold its loops to a baseline.

    Exit 0 when every check holds, 1 when one fails. A shard writes --json; `loopc check --merge
    shard*.json` makes the reports of the whole run.
    """
    outputs = {key: OutputFile(path, REPORTS[key][0]) for key, path in paths.items() if path}
    if merge:
        if baseline_path or update_baseline or shard or engines:
            raise click.UsageError("--merge combines reports: --baseline, --update-baseline, --shard and --engines "
                                   "belong to the runs that made them")
        _outputs(*outputs.values(), reads=sources)
        report = _merged(sources)
    else:
        if len(sources) != 1:
            raise click.UsageError(f"give one MANIFEST (got {len(sources)}); to combine reports use --merge")
        if executor == "trt":
            from loopc.trt.engine import require_gpu

            require_gpu("--executor trt")
        if update_baseline and not baseline_path:
            raise click.UsageError("--update-baseline writes the file --baseline names; give --baseline FILE")
        baseline_file = OutputFile(baseline_path, "--baseline") if update_baseline and baseline_path else None
        _outputs(*outputs.values(), *([baseline_file] if baseline_file else []), reads=(sources[0],))
        report = _run(sources[0], baseline_path, baseline_file, shard, executor, engines)
    for key, out in outputs.items():
        _write(out, key, report)
    _summarize(report)
    sys.exit(report.exit_code())


def _run(manifest_path: str, baseline_path: str | None, baseline_file: OutputFile | None,
         shard: tuple[int, int] | None, executor: str, engines: str | None) -> Report:
    from loopc import __version__
    from loopc.check.baseline import load_baseline, write_baseline
    from loopc.check.manifest import load_manifest
    from loopc.check.runner import Options, run_manifest
    from loopc.trt import trt

    shard_text = f"{shard[0]}/{shard[1]}" if shard else None
    try:
        manifest = load_manifest(manifest_path)
    except LoopcError as exc:  # the manifest is the input: its failure is reported like any other check
        report = Report(manifest_path, __version__, trt().__version__, executor, shard_text)
        report.results.append(TargetResult(pathlib.Path(manifest_path).name, "-", manifest_path, 0,
                                           [CheckResult("manifest", FAILED, str(exc))]))
        return report
    baseline = load_baseline(pathlib.Path(baseline_path)) if baseline_path else None
    if engines:
        pathlib.Path(engines).mkdir(parents=True, exist_ok=True)
    entries = manifest.shard(*shard) if shard else manifest.entries
    options = Options(executor, baseline, update_baseline=baseline_file is not None,
                      engines=pathlib.Path(engines) if engines else None, shard=shard_text)
    report = run_manifest(manifest, entries, options, _progress())
    if baseline_file is not None and baseline is not None:
        write_baseline(baseline_file, baseline)
    return report


def _merged(sources: tuple[str, ...]) -> Report:
    reports = []
    for source in sources:
        check_readable(source, "report")
        try:
            data = json.loads(pathlib.Path(source).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise LoopcError(f"report {source}: not readable JSON ({exc})") from None
        reports.append(Report.from_dict(data, f"report {source}"))
    return merge(reports)


def _write(out: OutputFile, key: str, report: Report) -> None:
    import importlib

    _, module, function = REPORTS[key]
    if module is None or function is None:
        text = report.to_json() + "\n"
    else:
        text = getattr(importlib.import_module(module), function)(report)
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    out.write(lambda handle: handle.write(data))


def _progress() -> Callable[[TargetResult, int, int], None]:
    """A bar on a terminal; one line per model and target otherwise (CI logs)."""
    terminal = sys.stderr.isatty()

    def tell(result: TargetResult, done: int, total: int) -> None:
        bad = [c for c in result.checks if c.status in (FAILED, ERROR)]
        if terminal:
            filled = round(24 * done / max(total, 1))
            line = f"\r[{'#' * filled}{'.' * (24 - filled)}] {done}/{total} {result.id}"
            click.echo(f"{line[:100]:<100}", err=True, nl=done == total)
            for c in bad:
                click.echo(f"\r{'':<100}\r  {result.id} {c.check}: {c.status}: {c.message}", err=True)
        else:
            why = f": {bad[0].check} {bad[0].status}: {bad[0].message}" if bad else ""
            click.echo(f"loopc: [{done}/{total}] {result.id}: {result.status}{why}", err=True)

    return tell


def _summarize(report: Report) -> None:
    counts = report.counts()
    pairs = len(report.results)
    click.echo(f"loopc check: {pairs} model/target pair(s), checks: "
               + ", ".join(f"{counts[s]} {s}" for s in counts if counts[s] or s == PASSED)
               + f" ({report.seconds:.1f} s)")
    for result in report.results:
        for c in result.checks:
            if c.status in (FAILED, ERROR):
                click.echo(f"  {c.status.upper()} {result.id} {c.check}: {c.message}")

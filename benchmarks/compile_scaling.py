"""How loopc's compile time grows with the size of a loop body, beside TensorRT's own build.

    python benchmarks/compile_scaling.py [--sizes 1000,4000,8000,16000,64000] [--real K]
        [--skip-trt-above N] [--timeout SECONDS] [--clock wall|cpu] [--repeat R] [--json] [--strict]

The models, for each N in ``--sizes``, two ONNX Loops of 3 trips whose bodies hold N nodes: a *chain* (a
repeating Add of an outer invariant, Mul by a body constant, Tanh, MatMul by an outer weight and Add of the
carried state: nothing for the passes to rewrite) and an *indexed* body (reads of an outer sequence by the trip
counter, which become iterators, shape arithmetic that folds, and identities: see :func:`indexed_model`); then the ``--real`` largest real models by node count
(``samples/``, ``tests/models/``, ``samples/openvino/``; the largest OpenVINO IR is always among them).

Per model, each in a subprocess of its own so that timings and memory do not mix, and after an
untimed compile and build of a 5-node chain (see ``_warm_up``):

* loopc: the stages of ``loopc.compile`` timed one by one: import, passes and network construction,
  whose sum is ``compile`` (what the targets below time), and ``report``, shown apart: what ``loopc.compile``
  does with the finished network, read back once for the assertion that no loop breaks TensorRT's rule
  (:func:`loopc.trt.loop_shapes.assert_legal`) and for the build report's loops and weight bytes; the peak RSS once they are done (and at the start, with Python, loopc and
  TensorRT loaded), then TensorRT's build of loopc's network (``build``), reported apart;
* TensorRT-RTX's own ONNX parser and builder on the same file (none for OpenVINO IR).

Then, for each of the two bodies, the exponent of compile time against N (least squares on log-log) and
loopc's targets: compile time near-linear in N (exponent ≤ 1.15), and compile ≤ 0.1 × TensorRT's build of
the same network at 8k nodes and above. ``--skip-trt-above N`` skips both TensorRT builds for bodies larger than N
(the largest take long; a skipped ratio is shown as such, and each body needs one measured); ``--strict`` exits 1 when a target is missed. Every stage is timed in
wall seconds and in CPU seconds of its process; ``--clock cpu`` reports the latter, which a
machine shared with other work disturbs far less (TensorRT's builder counts all its threads).
``--repeat R`` runs each worker R times, loopc's and TensorRT's in turn, and keeps each time's
minimum over the runs (as ``timeit`` does: noise only ever adds time) and the largest RSS.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import pathlib
import re
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = pathlib.Path(__file__).resolve().parents[1]
REAL_DIRS = [ROOT / "samples", ROOT / "samples" / "openvino", *sorted((ROOT / "tests" / "models").glob("*"))]
WIDTH, TRIPS = 16, 3
MAX_EXPONENT, MAX_RATIO, RATIO_FROM = 1.15, 0.1, 8000
STAGES = ("import", "passes", "network", "report")
#: What ``compile`` sums: turning the model into a TensorRT network (``report`` reads it back to check and describe it).
COMPILE_STAGES = ("import", "passes", "network")


# -- the models ------------------------------------------------------------------------------------

def chain_model(n: int, width: int = WIDTH, trips: int = TRIPS) -> onnx.ModelProto:
    """One Loop carrying h [1, width] through a body that is a chain of ``n`` nodes, TRIPS times.

    Node k reads the previous node's value and, by k mod 5: the outer invariant x (Add), the body
    constant c (Mul), nothing (Tanh), the outer weight W (MatMul), the carried h (Add).
    """
    row = [1, width]
    body_nodes = [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(
        np.full(row, 0.5, np.float32), "c_value"))]
    value = "h"
    for k in range(n):
        kind, other = [("Add", "x"), ("Mul", "c"), ("Tanh", None), ("MatMul", "W"), ("Add", "h")][k % 5]
        out = f"v{k}"
        body_nodes.append(helper.make_node(kind, [value] if other is None else [value, other], [out], name=f"n{k}"))
        value = out
    return _loop_model("chain", n, body_nodes, value, helper.make_tensor_value_info("x", TensorProto.FLOAT, row),
                       width, trips)


def indexed_model(n: int, width: int = WIDTH, trips: int = TRIPS) -> onnx.ModelProto:
    """One Loop whose body of ``n`` nodes reads an outer sequence by the trip counter, works out shapes
    and holds identities: what the passes rewrite, where a chain gives them nothing to do.

    The body carries h [1, width]; node k does, by k mod 8: ``xs[i]`` (a Gather of the outer xs
    [TRIPS, 1, width] by the counter, which ``gather-to-iterator`` makes an iterator), an Add of it, Shape,
    a Reshape to that shape (shape arithmetic the passes fold), an Identity, a Mul by one (an identity),
    Tanh, and a MatMul by the outer weight W.
    """
    row = [1, width]
    body_nodes = [helper.make_node("Constant", [], ["one"], value=numpy_helper.from_array(
        np.ones(row, np.float32), "one_value"))]
    value, read = "h", ""
    for k in range(n):
        out, step = f"v{k}", k % 8
        inputs = {0: ["xs", "i"], 1: [value, read], 2: [value], 3: [value, read], 4: [value], 5: [value, "one"],
                  6: [value], 7: [value, "W"]}[step]
        op = ["Gather", "Add", "Shape", "Reshape", "Identity", "Mul", "Tanh", "MatMul"][step]
        body_nodes.append(helper.make_node(op, inputs, [out], name=f"n{k}"))
        if step in (0, 2):
            read = out  # read by the next node; the carried value goes on
        else:
            value = out
    return _loop_model("indexed", n, body_nodes, value,
                       helper.make_tensor_value_info("xs", TensorProto.FLOAT, [trips, *row]), width, trips)


def _loop_model(kind: str, n: int, body_nodes: list[onnx.NodeProto], result: str, outer: onnx.ValueInfoProto,
                width: int, trips: int) -> onnx.ModelProto:
    """The model around a body: a Loop of ``trips`` trips carrying h [1, width] from h0 to ``result``, whose body
    may read the counter i, the input ``outer`` and the weight W."""
    rng = np.random.default_rng(0)
    row = [1, width]
    body_nodes = [*body_nodes, helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    body = helper.make_graph(
        body_nodes, f"{kind}_body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, row)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info(result, TensorProto.FLOAT, row)],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "keep_going", "h0"], ["h_final"], body=body, name=kind)],
        f"{kind}_{n}",
        [outer, helper.make_tensor_value_info("h0", TensorProto.FLOAT, row)],
        [helper.make_tensor_value_info("h_final", TensorProto.FLOAT, row)],
        [numpy_helper.from_array(np.array(trips, np.int64), "M"),
         numpy_helper.from_array(np.array(True), "keep_going"),  # TensorRT's parser wants the condition given
         numpy_helper.from_array((rng.standard_normal((width, width)) / width).astype(np.float32), "W")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


#: The synthetic loop bodies, each made at every size N.
FAMILIES = {"chain": chain_model, "indexed": indexed_model}


def node_count(path: pathlib.Path) -> int:
    """Nodes at every depth: ONNX nodes with their subgraphs', or OpenVINO IR layers with their bodies'."""
    if path.suffix == ".xml":
        return len(re.findall(r"<layer\b", path.read_text()))

    def count(graph: onnx.GraphProto) -> int:
        return sum(1 + sum(count(a.g) for a in node.attribute if a.HasField("g"))
                   + sum(count(g) for a in node.attribute for g in a.graphs) for node in graph.node)

    return count(onnx.load(str(path), load_external_data=False).graph)


@dataclass
class Case:
    name: str
    path: pathlib.Path
    nodes: int
    chain: int | None = None  #: N, for the synthetic models
    inputs: pathlib.Path | None = None
    max_trips: int | None = None
    family: str = ""  #: which synthetic body (a key of FAMILIES)


def real_cases(k: int) -> list[Case]:
    """The ``k`` largest real models by node count, and the largest OpenVINO IR if none of those is one."""
    paths = [p for d in REAL_DIRS for p in sorted(d.glob("*.onnx")) + sorted(d.glob("*.xml"))]
    cases = sorted((_real_case(p) for p in paths), key=lambda c: (-c.nodes, c.name))
    chosen = cases[:k]
    if k and not any(c.path.suffix == ".xml" for c in chosen):
        chosen += [c for c in cases if c.path.suffix == ".xml"][:1]
    return chosen


def _real_case(path: pathlib.Path) -> Case:
    """A model with its example inputs and ``max-trips``, as its folder's cases.toml gives them."""
    entry: dict[str, Any] = {}
    manifest = path.parent / "cases.toml"
    if manifest.exists():
        tables = [t for ts in tomllib.loads(manifest.read_text()).values() if isinstance(ts, list) for t in ts]
        entry = next((t for t in tables if t.get("path") == path.name or t.get("name") == path.stem), {})
    candidates = [path.parent / entry["inputs"]] if "inputs" in entry else []
    candidates += [path.with_name(f"{path.stem}.inputs.npz"), path.with_name(f"{path.stem}_inputs.npz")]
    inputs = next((c for c in candidates if c.exists()), None)
    return Case(str(path.relative_to(ROOT)), path, node_count(path), None, inputs, entry.get("max-trips"))


# -- the workers (each runs in its own process) ----------------------------------------------------

def _max_rss_mb() -> float:
    """This process's peak resident memory so far.

    Linux's ``VmHWM``: ``getrusage``'s ``ru_maxrss`` survives ``execve``, so a fresh worker would
    start at the peak of the process that spawned it.
    """
    status = pathlib.Path("/proc/self/status")
    if status.exists():
        found = re.search(r"^VmHWM:\s+(\d+) kB", status.read_text(), re.MULTILINE)
        if found:
            return int(found.group(1)) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux, bytes on macOS


def _warm_up(compile_and_build: Any) -> None:
    """Compile and build a 5-node chain before anything is timed, so that no stage counts Python
    importing a module or a library's setup on first use (ONNX's reference evaluator loads its ops,
    TensorRT's builder its resources). Both workers do: both tools are timed warm."""
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "warm_up.onnx"
        onnx.save(chain_model(5), str(path))
        compile_and_build(str(path), None)


def _profile_and_build(session: Any, network: Any, inputs: str | None) -> None:
    """Build ``network`` with an optimization profile pinned to the example inputs (defaults elsewhere)."""
    from loopc.profiles import ShapeProfile
    from loopc.trt.config import build_serialized, builder_config

    feeds = dict(np.load(inputs)) if inputs else {}
    names = {network.get_input(i).name for i in range(network.num_inputs)}
    cfg = builder_config(session)
    ShapeProfile.pinned({k: v for k, v in feeds.items() if k in names}).apply(
        session.builder, network, cfg, warn=lambda message: None)
    build_serialized(session, network, cfg)


def work_loopc(args: argparse.Namespace) -> dict[str, Any]:
    """loopc.compile's stages one by one, then TensorRT's build of the network."""
    start = time.perf_counter()
    import loopc.frontend.onnx  # noqa: F401  (imported here so that no stage's time is Python importing loopc)
    import loopc.frontend.openvino  # noqa: F401
    import loopc.passes  # noqa: F401
    from loopc.backend.trt.network import to_network
    from loopc.compiler import load_ir, optimize
    from loopc.errors import LoopcError
    from loopc.fingerprint import loops_and_weights
    from loopc.trt.loop_shapes import assert_legal
    from loopc.trt.read_back import read_back

    def report(network: Any) -> None:
        read = read_back(network)
        assert_legal(read)
        loops_and_weights(read)

    def compile_and_build(model: str, inputs: str | None) -> None:
        ir = load_ir(model)
        optimize(ir, None, args.max_trips)
        session, network = to_network(ir)
        report(network)
        _profile_and_build(session, network, inputs)

    _warm_up(compile_and_build)  # the RSS at start counts the libraries loaded
    found: dict[str, Any] = {"python_imports": time.perf_counter() - start, "baseline_rss_mb": _max_rss_mb()}
    clock = _Clock(found)
    try:
        with clock("import"):
            ir = load_ir(args.model)
        with clock("passes"):
            optimize(ir, None, args.max_trips)
        with clock("network"):
            session, network = to_network(ir)
        with clock("report"):
            report(network)
        for suffix in ("", "_cpu"):
            found["compile" + suffix] = sum(found[s + suffix] for s in COMPILE_STAGES)
        found["compile_rss_mb"] = _max_rss_mb()
        found["layers"] = network.num_layers
        if args.build:
            with clock("build"):
                _profile_and_build(session, network, args.inputs)
            found["build_rss_mb"] = _max_rss_mb()
    except LoopcError as exc:
        found["error"] = f"{clock.stage}: {exc}"
    return found


def work_trt_onnx(args: argparse.Namespace) -> dict[str, Any]:
    """TensorRT's own ONNX parser, then its builder, on the same file."""
    from loopc.errors import LoopcError
    from loopc.trt.onnx_parser import parse_onnx

    def parse_and_build(model: str, inputs: str | None) -> None:
        parsed = parse_onnx(model)
        _profile_and_build(parsed.session, parsed.network, inputs)

    _warm_up(parse_and_build)
    found: dict[str, Any] = {"baseline_rss_mb": _max_rss_mb()}
    clock = _Clock(found)
    try:
        with clock("parse"):
            parsed = parse_onnx(args.model)
        found["layers"] = parsed.network.num_layers
        with clock("build"):
            _profile_and_build(parsed.session, parsed.network, args.inputs)
        found["build_rss_mb"] = _max_rss_mb()
    except LoopcError as exc:
        found["error"] = f"{clock.stage}: {exc}"
    except Exception as exc:  # TensorRT raises plain exceptions for bad profiles
        found["error"] = f"{clock.stage}: {type(exc).__name__}: {exc}"
    return found


class _Clock:
    """Times a stage into ``found[stage]`` (wall seconds) and ``found[stage + "_cpu"]`` (this process's CPU
    seconds, all threads: steadier than wall time on a shared machine); remembers the stage running."""

    def __init__(self, found: dict[str, Any]) -> None:
        self.found = found
        self.stage = ""

    @contextlib.contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        self.stage = stage
        wall, cpu = time.perf_counter(), time.process_time()
        yield
        self.found[stage] = time.perf_counter() - wall
        self.found[stage + "_cpu"] = time.process_time() - cpu


WORKERS = {"loopc": work_loopc, "trt-onnx": work_trt_onnx}


def run_worker(tool: str, case: Case, build: bool, timeout: float) -> dict[str, Any]:
    """Run one worker in a fresh interpreter; its result, or why there is none."""
    command = [sys.executable, __file__, "--worker", tool, "--model", str(case.path)]
    command += ["--inputs", str(case.inputs)] if case.inputs else []
    command += ["--max-trips", str(case.max_trips)] if case.max_trips else []
    command += [] if build else ["--no-build"]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s", "wall": time.perf_counter() - start}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {done.returncode}: {last}", "wall": time.perf_counter() - start}
    result: dict[str, Any] = json.loads(lines[-1])
    result["wall"] = time.perf_counter() - start
    return result


def best_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One result from repeated runs of a worker: each time's minimum, each RSS's maximum (a failed
    run's result if any failed)."""
    failed = next((r for r in runs if "error" in r), None)
    if failed is not None:
        return failed
    best = dict(runs[0])
    for run in runs[1:]:
        for key, value in run.items():
            if isinstance(value, float):
                best[key] = max(best[key], value) if key.endswith("_mb") else min(best[key], value)
    best["repeats"] = len(runs)
    return best


# -- the run and its report ------------------------------------------------------------------------

@dataclass
class Row:
    name: str
    nodes: int
    chain: int | None
    family: str = ""
    loopc: dict[str, Any] = field(default_factory=dict)
    trt_onnx: dict[str, Any] = field(default_factory=dict)
    clock: str = "wall"  #: which seconds the row reports: "wall" or "cpu"

    def ours(self, stage: str) -> float | None:
        return self.loopc.get(stage if self.clock == "wall" else f"{stage}_cpu")

    def theirs(self, stage: str) -> float | None:
        return self.trt_onnx.get(stage if self.clock == "wall" else f"{stage}_cpu")

    @property
    def ratio(self) -> float | None:
        """loopc's compile over TensorRT's build of loopc's network."""
        compile_s, build_s = self.ours("compile"), self.ours("build")
        return compile_s / build_s if compile_s is not None and build_s else None

    @property
    def parser_ratio(self) -> float | None:
        """loopc's compile + build over TensorRT's parser + build of the same file."""
        ours = [self.ours("compile"), self.ours("build")]
        theirs = [self.theirs("parse"), self.theirs("build")]
        if None in ours or None in theirs:
            return None
        return sum(t for t in ours if t is not None) / sum(t for t in theirs if t is not None)


def fit_exponent(rows: list[Row], stage: str, family: str) -> float | None:
    """The slope of log(seconds) against log(N) by least squares over ``family``'s sizes that measured ``stage``."""
    points = [(float(r.chain), seconds) for r in rows if r.chain and r.family == family and (seconds := r.ours(stage))]
    if len(points) < 2:
        return None
    return float(np.polyfit(np.log([n for n, _ in points]), np.log([t for _, t in points]), 1)[0])


def verdict(rows: list[Row]) -> tuple[bool, list[str]]:
    """loopc's compile-time targets (see the module docstring) on these rows, with one line per criterion."""
    lines, ok = [], True
    for family in FAMILIES:
        exponent = fit_exponent(rows, "compile", family)
        sizes = [r.chain for r in rows if r.chain and r.family == family and r.ours("compile")]
        if exponent is None:
            ok = False
            lines.append(f"FAIL {family} exponent: fewer than two sizes compiled")
            continue
        passed = exponent <= MAX_EXPONENT
        ok &= passed
        lines.append(f"{'PASS' if passed else 'FAIL'} {family} exponent {exponent:.2f} (≤ {MAX_EXPONENT}) "
                     f"over N = {', '.join(f'{n:,}' for n in sizes)}")
    large = [r for r in rows if r.chain and r.chain >= RATIO_FROM]
    for r in large:
        if r.ratio is None and "error" not in r.loopc and "build" not in r.loopc:
            lines.append(f"SKIP {r.name}: TensorRT's build skipped (--skip-trt-above)")
        elif r.ratio is None:
            ok = False
            lines.append(f"FAIL {r.name}: compile / TensorRT build not measured ({r.loopc.get('error', 'no ratio')})")
        else:
            passed = r.ratio <= MAX_RATIO
            ok &= passed
            lines.append(f"{'PASS' if passed else 'FAIL'} {r.name}: compile / TensorRT build {r.ratio:.3f} "
                         f"(≤ {MAX_RATIO})")
    for family in FAMILIES:
        if not any(r.family == family and r.ratio is not None for r in large):
            ok = False
            lines.append(f"FAIL {family} ratio: no body of {RATIO_FROM:,} nodes or more was measured")
    return ok, lines


def _s(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def _rss(found: dict[str, Any]) -> str:
    return f"{found['compile_rss_mb']:.0f} ({found['baseline_rss_mb']:.0f})" if "compile_rss_mb" in found else "–"


def markdown(rows: list[Row]) -> str:
    head = ["model", "nodes", "layers", "import s", "passes s", "network s", "report s", "**compile s**",
            "peak RSS MB (at start)", "TRT build s", "compile / build", "TRT parser s", "parser's build s",
            "loopc / parser", "note"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" if i in (0, len(head) - 1) else "---:"
                                                        for i in range(len(head))) + "|"]
    for r in rows:
        ours, theirs = r.loopc, r.trt_onnx
        notes = [f"loopc: {ours['error']}"] if "error" in ours else []
        notes += [f"TensorRT's parser: {theirs['error']}"] if "error" in theirs else []
        notes += [theirs["skipped"]] if "skipped" in theirs else []
        cells = [r.name, f"{r.nodes:,}", f"{ours['layers']:,}" if "layers" in ours else "–",
                 *(_s(r.ours(s)) for s in STAGES), f"**{_s(r.ours('compile'))}**",
                 _rss(ours),
                 _s(r.ours("build")), f"{r.ratio:.3f}" if r.ratio is not None else "–",
                 _s(r.theirs("parse")), _s(r.theirs("build")),
                 f"{r.parser_ratio:.3f}" if r.parser_ratio is not None else "–",
                 "; ".join(n.replace("|", "\\|")[:160] for n in notes)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary(rows: list[Row]) -> dict[str, Any]:
    ok, lines = verdict(rows)
    return {"clock": rows[0].clock if rows else "wall",
            "exponents": {f"{family} {stage}": fit_exponent(rows, stage, family)
                          for family in FAMILIES for stage in (*STAGES, "compile")},
            "pass": ok, "criteria": lines}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,4000,8000,16000,64000", help="chain lengths N, comma-separated")
    parser.add_argument("--real", type=int, default=3, metavar="K", help="the K largest real models (0: none)")
    parser.add_argument("--skip-trt-above", type=int, metavar="N", help="no TensorRT builds for chains longer than N")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds allowed to each subprocess")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the Markdown table")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a compile-time target is missed")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="report wall seconds, or CPU seconds (steadier on a busy machine; both are in --json)")
    parser.add_argument("--repeat", type=int, default=1, metavar="R",
                        help="run each worker R times, in turn with the other tool's; keep the minimum times")
    parser.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--inputs", help=argparse.SUPPRESS)
    parser.add_argument("--max-trips", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--no-build", dest="build", action="store_false", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(WORKERS[args.worker](args)))
        return 0

    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = []
        for family, make in FAMILIES.items():
            for n in sizes:
                path = pathlib.Path(tmp) / f"{family}_{n}.onnx"
                onnx.save(make(n), str(path))
                cases.append(Case(f"{family} {n:,}", path, node_count(path), n, family=family))
        cases += real_cases(args.real)
        for case in cases:
            build = case.chain is None or args.skip_trt_above is None or case.chain <= args.skip_trt_above
            row = Row(case.name, case.nodes, case.chain, case.family, clock=args.clock)
            ours: list[dict[str, Any]] = []
            theirs: list[dict[str, Any]] = []
            for _ in range(max(1, args.repeat)):
                ours.append(run_worker("loopc", case, build, args.timeout))
                _progress(case, "loopc", ours[-1])
                if build and case.path.suffix != ".xml":
                    theirs.append(run_worker("trt-onnx", case, True, args.timeout))
                    _progress(case, "TensorRT's parser", theirs[-1])
            row.loopc = best_of(ours)
            if case.path.suffix == ".xml":
                row.trt_onnx = {"skipped": "OpenVINO IR: TensorRT has no parser for it"}
            elif not build:
                row.trt_onnx = {"skipped": f"TensorRT builds skipped above {args.skip_trt_above:,} nodes"}
            else:
                row.trt_onnx = best_of(theirs)
            rows.append(row)

    result = summary(rows)
    if args.json:
        print(json.dumps({"rows": [asdict(r) | {"ratio": r.ratio, "parser_ratio": r.parser_ratio} for r in rows],
                          **result}, indent=2))
    else:
        print(markdown(rows))
        print()
        fits = ", ".join(f"{k} {v:.2f}" for k, v in result["exponents"].items() if v is not None)
        print(f"Fitted exponents of {args.clock} seconds against N (least squares, log-log): {fits}")
        print("\n".join(result["criteria"]))
        print("PASS" if result["pass"] else "FAIL")
    return 1 if args.strict and not result["pass"] else 0


def _progress(case: Case, tool: str, found: dict[str, Any]) -> None:
    parts = [f"{k} {found[k]:.2f} s" for k in ("compile", "parse", "build") if k in found]
    parts += [found["error"][:120]] if "error" in found else []
    print(f"{case.name}: {tool} {', '.join(parts)} ({found.get('wall', math.nan):.1f} s wall)",
          file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())

"""What building a real-size model costs with loopc, beside TensorRT's own ONNX parser and builder on the same file.

    python benchmarks/build_cost.py [--models gpt2,deepspeech2] [--repeat R] [--tiny] [--keep DIR]
        [--compare DIR] [--json]

The models are made from their configs with random weights (no framework needed), at real size:

* ``gpt2``: a GPT-2-small greedy decoder (12 pre-norm blocks, width 768, 12 heads, vocab 50257 tied to the head,
  124M parameters, fp32), as ``benchmarks/decoder_weights.py`` writes it: the prompt's pass fills fixed-size
  K/V caches, then a Loop generates one token per trip (32 here) with fixed-shape carried values, so that
  TensorRT's parser builds it too.
* ``deepspeech2``: DeepSpeech2's recurrent stack: five bidirectional LSTMs of width 1024 over 1024 features,
  the directions concatenated between layers, then a linear layer to 29 characters (118M parameters).
* ``gru_stack``: the same stack with GRUs.

Each build runs in a fresh process, measured by ``/usr/bin/time -v``: ``loopc build MODEL -o PLAN`` (the whole
CLI), and TensorRT-RTX's ``OnnxParser.parse_from_file`` then ``build_serialized_network`` (this script as its
own worker, as ``tests/corpus.py`` builds with the parser). The two alternate, loopc first (A B A B with
``--repeat 2``), after one untimed build of the tiny model by each (Python's bytecode is cached, in a temporary
folder, as an installed package's is; the libraries are in the page cache). Per run: wall seconds, CPU seconds
(user + system, all threads: steadier on a shared machine), and peak RSS as ``time`` reports it (the largest
process of the run). Ratios loopc / parser use the best (least) time and the largest peak of each side; the
targets are loopc ≤ 1.2x the parser's wall time and ≤ 1.1x its peak memory, the peak judged as ``time``'s (the
largest process).

loopc builds in a worker process (:mod:`loopc.trt.isolated`) while its compiling process lives, so the whole
build's memory is given beside it, sampled every 50 ms over the run's processes: the peak of their summed RSS,
which counts twice the pages both map (TensorRT's libraries, which both load), and the peak of their summed PSS
(``/proc/PID/smaps_rollup``: a page shared by N processes counts 1/N in each), which does not. The PSS ratio
compares it with the parser's own PSS; the verdict states it too, beside the target's.

``--compare DIR`` times the loopc package of another source folder too (an older checkout's ``loopc/``), in the
same turns, for a before-and-after on the same machine and load.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from decoder_weights import Config as GPT2  # noqa: E402  (one GPT-2 decoder writer for the benchmarks)
from decoder_weights import decoder as gpt2_decoder  # noqa: E402

LOOPC = pathlib.Path(sys.executable).with_name("loopc")
MAX_WALL_RATIO, MAX_RSS_RATIO = 1.2, 1.1
OPSET = 17


# -- the models ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RNNStack:
    """A stack of bidirectional recurrent layers (DeepSpeech2's by default)."""

    cell: str = "LSTM"
    layers: int = 5
    hidden: int = 1024
    features: int = 1024
    frames: int = 100
    classes: int = 29


CONFIGS: dict[str, GPT2 | RNNStack] = {
    "gpt2": GPT2(new_tokens=32, tied=True), "deepspeech2": RNNStack(), "gru_stack": RNNStack(cell="GRU"),
}
#: The same models at a few thousand parameters, to check the script itself quickly.
TINY: dict[str, GPT2 | RNNStack] = {
    "gpt2": GPT2(layers=2, width=16, heads=2, vocab=50, prompt=4, new_tokens=5, tied=True),
    "deepspeech2": RNNStack(layers=2, hidden=8, features=6, frames=7, classes=5),
    "gru_stack": RNNStack(cell="GRU", layers=2, hidden=8, features=6, frames=7, classes=5),
}


class _Graph:
    """Nodes, initializers and fresh names for one graph being written."""

    def __init__(self, prefix: str, rng: np.random.Generator | None = None) -> None:
        self.prefix, self.rng = prefix, rng
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.count = 0

    def op(self, op: str, *inputs: str, outputs: int = 1, **attrs: Any) -> Any:
        self.count += 1
        names = [f"{self.prefix}{op}_{self.count}" + (f"_{k}" if outputs > 1 else "") for k in range(outputs)]
        self.nodes.append(helper.make_node(op, list(inputs), names, name=f"{self.prefix}{op}_{self.count}", **attrs))
        return names[0] if outputs == 1 else names

    def const(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, name: str, shape: tuple[int, ...], scale: float = 0.02) -> str:
        assert self.rng is not None
        return self.const(name, (self.rng.standard_normal(shape, dtype=np.float32) * scale).astype(np.float32))


def rnn_stack_model(cfg: RNNStack, seed: int = 0) -> onnx.ModelProto:
    """Bidirectional ``cfg.cell`` layers over ``features`` [frames, 1, features] → log-probabilities
    [frames, 1, classes]."""
    g = _Graph("", np.random.default_rng(seed))
    gates = {"LSTM": 4, "GRU": 3}[cfg.cell]
    x, width = "features", cfg.features
    scale = 1 / math.sqrt(cfg.hidden)
    reshape = g.const("stacked_shape", np.array([0, 0, -1], np.int64))
    for i in range(cfg.layers):
        w = g.weight(f"rnn{i}.W", (2, gates * cfg.hidden, width), scale)
        r = g.weight(f"rnn{i}.R", (2, gates * cfg.hidden, cfg.hidden), scale)
        bias = g.weight(f"rnn{i}.B", (2, 2 * gates * cfg.hidden), scale)
        extra = {"linear_before_reset": 1} if cfg.cell == "GRU" else {}
        y = g.op(cfg.cell, x, w, r, bias, outputs=3 if cfg.cell == "LSTM" else 2, hidden_size=cfg.hidden,
                 direction="bidirectional", **extra)[0]
        x = g.op("Reshape", g.op("Transpose", y, perm=[0, 2, 1, 3]), reshape)  # [T, 1, 2H]
        width = 2 * cfg.hidden
    logits = g.op("Add", g.op("MatMul", x, g.weight("fc.W", (width, cfg.classes), scale)),
                  g.weight("fc.B", (cfg.classes,), scale))
    g.nodes.append(helper.make_node("LogSoftmax", [logits], ["log_probs"], axis=-1))
    graph = helper.make_graph(
        g.nodes, f"{cfg.cell.lower()}_stack",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, [cfg.frames, 1, cfg.features])],
        [helper.make_tensor_value_info("log_probs", TensorProto.FLOAT, [cfg.frames, 1, cfg.classes])],
        g.initializers)
    return _model(graph)


def _model(graph: onnx.GraphProto) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="build_cost")
    model.ir_version = 8
    return model


def make_model(cfg: GPT2 | RNNStack) -> onnx.ModelProto:
    return gpt2_decoder(cfg) if isinstance(cfg, GPT2) else rnn_stack_model(cfg)


def parameters(model: onnx.ModelProto) -> int:
    return sum(math.prod(t.dims) for t in model.graph.initializer)


# -- one measured build ----------------------------------------------------------------------------------------

def parser_worker(model: str, plan: str) -> None:
    """TensorRT's own ONNX parser and builder on ``model``, as ``tests/corpus.py`` runs them."""
    from loopc.profiles import ShapeProfile
    from loopc.trt.config import build_serialized, builder_config
    from loopc.trt.onnx_parser import parse_onnx

    parsed = parse_onnx(model)
    cfg = builder_config(parsed.session)
    ShapeProfile().apply(parsed.session.builder, parsed.network, cfg, warn=lambda message: None)
    pathlib.Path(plan).write_bytes(build_serialized(parsed.session, parsed.network, cfg))


@dataclass
class Run:
    wall: float = math.nan
    cpu: float = math.nan
    #: ``time``'s maximum resident set size: the largest process of the run.
    peak_mb: float = math.nan
    #: the peak of the summed RSS of the run's processes (loopc's compiler and its builder worker).
    tree_peak_mb: float = math.nan
    #: the peak of their summed PSS: pages they share counted once.
    tree_pss_mb: float = math.nan
    plan_bytes: int = 0
    error: str = ""


#: The parser's tool name; every other tool is a loopc (the installed one, or one from ``--compare DIR``).
PARSER = "parser"


def command(tool: str, model: pathlib.Path, plan: pathlib.Path) -> tuple[list[str], dict[str, str]]:
    """The command line of one build by ``tool`` and what it adds to the environment: ``loopc`` (installed),
    ``loopc@DIR`` (the loopc package in source folder DIR) or :data:`PARSER`."""
    if tool == PARSER:
        return [sys.executable, __file__, "--parser-worker", str(model), str(plan)], {}
    if tool == "loopc":
        return [str(LOOPC), "build", str(model), "-o", str(plan)], {}
    source = tool.split("@", 1)[1]  # first on the path, before the folder a `python -c` puts there
    boot = f"import sys; sys.path.insert(0, {source!r}); from loopc.cli.main import main; sys.argv[0] = 'loopc'; main()"
    return [sys.executable, "-c", boot, "build", str(model), "-o", str(plan)], {}


def measure(tool: str, model: pathlib.Path, plan: pathlib.Path, timeout: float, env: dict[str, str]) -> Run:
    """One build in a fresh process under ``/usr/bin/time -v``, with environment ``env``."""
    line, extra = command(tool, model, plan)
    plan.unlink(missing_ok=True)
    with tempfile.NamedTemporaryFile("w+", suffix=".time") as report:
        start = time.perf_counter()
        process = subprocess.Popen(["/usr/bin/time", "-v", "-o", report.name, *line], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env={**env, **extra})
        sampler = _TreeSampler(process.pid)
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            return Run(error=f"timed out after {timeout:.0f} s")
        finally:
            sampler.stop()
        wall = time.perf_counter() - start
        said = pathlib.Path(report.name).read_text()
    if process.returncode != 0:
        last = ((err or out).strip().splitlines() or ["no output"])[-1]
        return Run(wall, error=f"exit {process.returncode}: {last[:200]}")
    found = {key: float(m[1]) if (m := re.search(rf"{re.escape(key)}: ([\d.]+)", said)) else math.nan
             for key in ("User time (seconds)", "System time (seconds)", "Maximum resident set size (kbytes)")}
    return Run(wall, found["User time (seconds)"] + found["System time (seconds)"],
               found["Maximum resident set size (kbytes)"] / 1024, sampler.peak_kb / 1024, sampler.pss_kb / 1024,
               plan.stat().st_size if plan.exists() else 0)


class _TreeSampler:
    """The peaks of the summed RSS and of the summed PSS of a process and its descendants, read from /proc every
    50 ms."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak_kb, self.pss_kb = pid, 0, 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.done.set()
        self.thread.join()

    def _run(self) -> None:
        while not self.done.wait(0.05):
            tree = _tree(self.pid)
            self.peak_kb = max(self.peak_kb, sum(_kb(f"/proc/{pid}/status", "VmRSS") for pid in tree))
            self.pss_kb = max(self.pss_kb, sum(_kb(f"/proc/{pid}/smaps_rollup", "Pss") for pid in tree))


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (a process that ends meanwhile is left out, with its own)."""
    found, todo = [], [pid]
    while todo:
        here = todo.pop()
        found.append(here)
        try:
            for task in os.listdir(f"/proc/{here}/task"):
                todo += [int(p) for p in pathlib.Path(f"/proc/{here}/task/{task}/children").read_text().split()]
        except OSError:
            pass
    return found


def _kb(path: str, key: str) -> int:
    """The ``key: N kB`` line of a /proc file (0 once the process is gone)."""
    try:
        found = re.search(rf"^{key}:\s+(\d+) kB", pathlib.Path(path).read_text(), re.MULTILINE)
    except OSError:
        return 0
    return int(found[1]) if found else 0


# -- the table -------------------------------------------------------------------------------------------------

@dataclass
class Row:
    model: str
    parameters: int
    onnx_mb: float
    runs: dict[str, list[Run]]  #: by tool, in the order they ran

    def best(self, tool: str, key: str) -> float:
        """The least time, or the largest memory or size, of ``tool``'s runs that succeeded."""
        values = [getattr(r, key) for r in self.runs[tool] if not r.error]
        if not values:
            return math.nan
        return min(values) if key in ("wall", "cpu") else max(values)

    def ratio(self, tool: str, key: str) -> float:
        """``tool``'s best over the parser's."""
        return self.best(tool, key) / self.best(PARSER, key)


def markdown(rows: list[Row]) -> str:
    head = ["model", "parameters", "ONNX MB", "tool", "wall s (runs)", "**wall / parser**", "CPU s", "CPU / parser",
            "peak MB", "**peak / parser**", "all processes RSS MB", "all processes PSS MB", "PSS / parser",
            "engine MB"]
    lines = ["| " + " | ".join(head) + " |", "|---|---:|---:|---|" + "---:|" * (len(head) - 4)]

    def mb(value: float) -> str:
        return "–" if math.isnan(value) else f"{value:,.0f}"

    for r in rows:
        for tool, runs in r.runs.items():
            theirs = tool == PARSER
            lines.append("| " + " | ".join([
                r.model, f"{r.parameters / 1e6:.0f}M", f"{r.onnx_mb:.0f}", tool,
                ", ".join(f"{x.wall:.1f}" if not x.error else "error" for x in runs),
                "" if theirs else f"**{r.ratio(tool, 'wall'):.2f}**", f"{r.best(tool, 'cpu'):.1f}",
                "" if theirs else f"{r.ratio(tool, 'cpu'):.2f}", mb(r.best(tool, "peak_mb")),
                "" if theirs else f"**{r.ratio(tool, 'peak_mb'):.2f}**", mb(r.best(tool, "tree_peak_mb")),
                mb(r.best(tool, "tree_pss_mb")), "" if theirs else f"{r.ratio(tool, 'tree_pss_mb'):.2f}",
                f"{r.best(tool, 'plan_bytes') / 2**20:.0f}",
            ]) + " |")
    errors = [f"{r.model} {tool}: {x.error}" for r in rows for tool, runs in r.runs.items() for x in runs if x.error]
    return "\n".join(lines + [""] + errors)


def verdict(rows: list[Row]) -> list[str]:
    lines = []
    for r in rows:
        for tool in r.runs:
            if tool == PARSER:
                continue
            for what, key, target in (("wall", "wall", MAX_WALL_RATIO), ("peak memory", "peak_mb", MAX_RSS_RATIO)):
                value = r.ratio(tool, key)
                lines.append(f"{'PASS' if value <= target else 'FAIL'} {r.model} {tool} {what}: / parser {value:.2f} "
                             f"(≤ {target})")
            lines.append(f"INFO {r.model} {tool} all processes' PSS: / parser {r.ratio(tool, 'tree_pss_mb'):.2f} "
                         "(the whole build's memory; the target above is the largest process's)")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="gpt2,deepspeech2", help=f"comma-separated, of {', '.join(CONFIGS)}")
    parser.add_argument("--repeat", type=int, default=2, metavar="R", help="builds per tool, alternating (A B A B)")
    parser.add_argument("--tiny", action="store_true", help="the models at a few thousand parameters (a check)")
    parser.add_argument("--keep", metavar="DIR", help="write the models here (reused when present) and keep them")
    parser.add_argument("--compare", metavar="DIR", action="append", default=[],
                        help="also time the loopc package in source folder DIR (another checkout), in the same turns")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds allowed to each build")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the Markdown table")
    parser.add_argument("--parser-worker", nargs=2, metavar=("MODEL", "PLAN"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.parser_worker:
        parser_worker(*args.parser_worker)
        return 0
    configs = TINY if args.tiny else CONFIGS
    tools = ["loopc", *(f"loopc@{os.path.abspath(d)}" for d in args.compare), PARSER]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(pathlib.Path(tmp) / "pycache")
        warm = pathlib.Path(tmp) / "warm_up.onnx"
        onnx.save(make_model(TINY["gpt2"]), str(warm))
        for tool in tools:
            measure(tool, warm, pathlib.Path(tmp) / "warm_up.plan", args.timeout, env)
        for name in [m.strip() for m in args.models.split(",") if m.strip()]:
            path = folder / f"{name}{'_tiny' if args.tiny else ''}.onnx"
            if not path.exists():
                onnx.save(make_model(configs[name]), str(path))
            header = onnx.load(str(path), load_external_data=False)
            row = Row(name, parameters(header), path.stat().st_size / 2**20, {tool: [] for tool in tools})
            del header
            for k in range(max(1, args.repeat)):
                for tool in tools:
                    row.runs[tool].append(measure(tool, path, pathlib.Path(tmp) / f"{name}.plan", args.timeout, env))
                    last = row.runs[tool][-1]
                    print(f"{name} {tool} run {k + 1}: {last.wall:.1f} s ({last.cpu:.1f} s CPU), peak "
                          f"{last.peak_mb:,.0f} MB, all processes {last.tree_peak_mb:,.0f} MB RSS, "
                          f"{last.tree_pss_mb:,.0f} MB PSS {last.error}", file=sys.stderr, flush=True)
            rows.append(row)
    if args.json:
        print(json.dumps({"rows": [dataclasses.asdict(r) for r in rows], "verdict": verdict(rows)}, indent=2))
    else:
        print(markdown(rows))
        print("\n".join(verdict(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

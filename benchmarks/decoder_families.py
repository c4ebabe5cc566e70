"""The decoder variation families at real size: GPT-2 small with growing caches, a Whisper-base decoder and
Tacotron 2 at its published size, with random weights, each built by loopc with no flags and compared with eager.

    python benchmarks/decoder_families.py --torch-python VENV/bin/python [--out DIR]
        [--families gpt2,whisper,tacotron] [--variants NAME,...] [--timeout SECONDS] [--rtol R] [--atol A] [--json]
    python benchmarks/decoder_families.py --out DIR [...]    # measure the exports a former run left in DIR again

The models are the corpus families' own (``tests/models/{gpt2,whisper,tacotron}_family/make_models.py``): the same
code at the real-size preset (``GPT2_SMALL``, ``WHISPER_BASE``, ``PUBLISHED``), seeded random weights. loopc never
depends on torch, so ``--torch-python`` names the interpreter of a venv that has it (the one
``tests/models/torch/requirements.txt`` makes); this script runs itself there, one export per process, and writes
into ``--out`` (default: a new temporary folder) per model ``<name>.onnx``, ``<name>.inputs.npz``,
``<name>.expected.npz`` (the eager module's outputs, by graph output name) and ``<name>.json`` (parameters, steps
run, the smallest argmax margin, onnxruntime's largest error against eager). Inputs run a modest number of trips:
GPT-2 and Whisper a prompt of 8 tokens and ``max_new_tokens`` 12 (the first of a few seeds that runs to the bound),
Whisper over 64 encoder frames; Tacotron 2 a text of 20 symbols (the encoder output, [B, 20, 512]) with
``max_decoder_steps`` 40 and the stop gate's counter slowed so that rows fire after some 20 steps or never. Every
dynamic dim stays inside loopc's default profile (at most 64), so the engine built with no flags takes the inputs.

Then, in this interpreter (loopc's), each model in a process of its own with ``--timeout``: ``loopc build`` with no
flags (wall time, engine size), and loopc's simulator on the inputs compared with the eager outputs within the
corpus tolerances (``np.allclose``: rtol 1e-4, atol 1e-5 unless given). A failed export, build, run or a timeout
is a row with its error. The table: family, variant, parameters, ONNX MB, trips, build s, engine MB, peak RSS of
the loopc process, matches (max abs error) or loopc's error; ``--json`` prints the rows as data instead.

GPT-2 small is 163M parameters with its untied head (650 MB of ONNX); its build peaks at 6.3 GB in the loopc process
(TensorRT's build worker apart). Not run by ``make test``.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import pathlib
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS = ROOT / "tests" / "models"
#: Per family, the variants measured by default: those that build at test size, then the dynamo while_loop one.
FAMILIES: dict[str, list[str]] = {
    "gpt2": ["gpt2_stacked", "gpt2_list", "gpt2_kv_pairs", "gpt2_stacked_batch_first", "gpt2_while_loop"],
    "whisper": ["whisper_stacked", "whisper_list", "whisper_batch_first", "whisper_encoder", "whisper_while_loop"],
    "tacotron": ["tacotron2_cat", "tacotron2_nvidia_layout", "tacotron2_time_first", "tacotron2_while_condition",
                 "tacotron2_while_loop"],
}
PROMPT, NEW_TOKENS, FRAMES, SEEDS = 8, 12, 64, 4
TEXT, LENGTHS, DECODER_STEPS = 20, (20, 17), 40
#: Tacotron 2's gate counter slowed (``make_models.GATE_TUNING``): rows fire after some 20 steps or more, not 4 to 9.
SLOW_GATE = {"rate": 0.03, "spread": 0.05}
#: The line of a child's traceback that names its exception.
EXCEPTION = re.compile(r"^[\w.]*(Error|Exception)\w*: ")


# -- the torch side: one export, in the torch venv ---------------------------------------------------------------

@dataclasses.dataclass
class Made:
    """A real-size module, its example inputs (in graph input order) and how to read its trips from its outputs."""

    module: Any
    inputs: dict[str, Any]
    trips: Callable[[tuple[Any, ...]], int]
    margin: float | None = None


def _family(folder: str) -> Any:
    """A family's ``make_models.py`` as a module (the Whisper one loads the GPT-2 one itself)."""
    spec = importlib.util.spec_from_file_location(f"{folder}_models", MODELS / folder / "make_models.py")
    assert spec is not None and spec.loader is not None
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _first_to_bound(make: Callable[[int], dict[str, Any]], module: Any, head: Any, trips: Callable[..., int],
                    margin: Callable[..., float]) -> tuple[dict[str, Any], float | None]:
    """The first of :data:`SEEDS` seeded inputs whose loop runs to ``NEW_TOKENS`` (else the one running longest),
    with the smallest gap between its two largest logits (a near tie could flip an argmax). The first call runs
    without the hook that reads the logits: eager PyTorch runs a ``while_loop`` through ``torch.compile``, which
    refuses a hook with side effects in what it traces (None when it still does)."""
    import torch

    best: tuple[int, dict[str, Any]] | None = None
    for seed in range(SEEDS):
        inputs = make(seed)
        with torch.no_grad():
            n = trips(_flat(module(*inputs.values())))
        if best is None or n > best[0]:
            best = n, inputs
        if n >= NEW_TOKENS:
            break
    assert best is not None
    try:
        with torch.no_grad():
            return best[1], margin(head, lambda: module(*best[1].values()))
    except Exception:  # noqa: BLE001
        return best[1], None


def _flat(outputs: Any) -> tuple[Any, ...]:
    return tuple(outputs) if isinstance(outputs, (tuple, list)) else (outputs,)


def _gpt2(name: str, out: pathlib.Path) -> Made:
    import torch

    fam = _family("gpt2_family")
    kind, scripted = {n: (k, s) for n, k, _, s in fam.VARIANTS}[name]
    model = fam.make_module(kind, fam.GPT2_SMALL)

    def make(seed: int) -> dict[str, Any]:
        rng = np.random.default_rng(seed)
        return {"prompt": torch.from_numpy(rng.integers(1, fam.GPT2_SMALL.eos, size=(2, PROMPT))),
                "max_new_tokens": torch.tensor(NEW_TOKENS, dtype=torch.int64)}

    trips = (lambda o: o[0].shape[1]) if scripted else (lambda o: int(o[1]))
    inputs, gap = _first_to_bound(make, model, model.lm_head, trips, fam.margin)
    fam.export(fam.Suite(out, ""), name, model, inputs, scripted)
    return Made(model, inputs, trips, gap)


def _whisper(name: str, out: pathlib.Path) -> Made:
    import torch

    fam = _family("whisper_family")
    cfg = fam.WHISPER_BASE
    kind, scripted = {n: (k, s) for n, k, _, s in fam.VARIANTS}[name]
    model = fam.make_module(kind, cfg)
    mel = isinstance(model, fam.WithEncoder)

    def make(seed: int) -> dict[str, Any]:
        rng = np.random.default_rng(seed)
        shape = (2, cfg.n_mels, FRAMES) if mel else (2, FRAMES, cfg.dim)
        audio = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
        return {"mel" if mel else "audio_features": audio,
                "sot": torch.from_numpy(rng.integers(1, cfg.eot, size=(2, PROMPT))),
                "max_new_tokens": torch.tensor(NEW_TOKENS, dtype=torch.int64)}

    trips = (lambda o: o[0].shape[1] - PROMPT) if scripted else (lambda o: int(o[1]))
    inputs, gap = _first_to_bound(make, model, model.head, trips, fam.margin)
    fam.export(fam.family.Suite(out, ""), name, model, inputs, scripted)
    return Made(model, inputs, trips, gap)


def _tacotron(name: str, out: pathlib.Path) -> Made:
    import torch

    fam = _family("tacotron_family")
    spec = dataclasses.replace(next(s for s, _ in fam.EXPORTS if s.name == name),
                               cfg=dataclasses.replace(fam.PUBLISHED, max_decoder_steps=DECODER_STEPS))
    model = fam.make_model(spec.variant, spec.cfg, tuning=SLOW_GATE)
    rng = np.random.default_rng(0)
    memory = (2, TEXT, spec.cfg.encoder_dim) if spec.batched else (TEXT, spec.cfg.encoder_dim)
    given = {"memory": torch.from_numpy(rng.standard_normal(memory).astype(np.float32)),
             "memory_lengths": torch.tensor(LENGTHS, dtype=torch.int64),
             "text_lengths": torch.tensor(LENGTHS, dtype=torch.int64),
             "text": torch.from_numpy(rng.integers(1, spec.cfg.n_symbols, size=(2, TEXT))),
             "max_decoder_steps": torch.tensor(DECODER_STEPS, dtype=torch.int64)}
    inputs = {key: given[key] for key in spec.inputs}
    fam.export(spec, model, inputs, folder=out)
    return Made(model, inputs, lambda o: int(spec.gates(o).shape[1]))


MAKERS: dict[str, Callable[[str, pathlib.Path], Made]] = {"gpt2": _gpt2, "whisper": _whisper, "tacotron": _tacotron}


def export_one(family: str, name: str, out: pathlib.Path) -> None:
    """Export ``name`` at real size into ``out`` with its inputs, eager outputs and facts (``<name>.json``)."""
    import warnings

    import onnxruntime as ort
    import torch

    warnings.filterwarnings("ignore")
    torch.set_num_threads(2)
    start = time.perf_counter()
    made = MAKERS[family](name, out)
    exported = time.perf_counter() - start
    with torch.no_grad():
        eager = _flat(made.module(*made.inputs.values()))
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(str(out / f"{name}.onnx"), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    expected = {k: v.numpy() for k, v in zip(names, eager, strict=True)}
    feeds = {k: v.numpy() for k, v in made.inputs.items()}
    ort_error = _max_error(dict(zip(names, session.run(None, feeds))), expected)
    np.savez(out / f"{name}.inputs.npz", **feeds)
    np.savez(out / f"{name}.expected.npz", **expected)
    facts = {"family": family, "variant": name, "parameters": sum(p.numel() for p in made.module.parameters()),
             "onnx_bytes": (out / f"{name}.onnx").stat().st_size, "trips": made.trips(eager),
             "argmax_margin": made.margin, "export_seconds": round(exported, 1), "ort_max_error": ort_error,
             "inputs": {k: list(v.shape) for k, v in feeds.items()},
             "outputs": {k: list(v.shape) for k, v in expected.items()}}
    (out / f"{name}.json").write_text(json.dumps(facts, indent=1))


def _max_error(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> float | str:
    """The largest absolute difference over all outputs, or what differs in shape."""
    worst = 0.0
    for key, value in want.items():
        if got[key].shape != value.shape:
            return f"{key}: shape {got[key].shape}, eager {value.shape}"
        if value.size:
            worst = max(worst, float(np.abs(got[key].astype(np.float64) - value.astype(np.float64)).max()))
    return worst


# -- loopc's side: one build and run, in loopc's venv ------------------------------------------------------------

def measure_one(facts_file: pathlib.Path, rtol: float, atol: float) -> dict[str, Any]:
    """``loopc build`` with no flags (timed, engine size), then loopc's simulator against the eager outputs."""
    sys.path.insert(0, str(ROOT))  # for the tests package
    from loopc import api
    from loopc.spelling import spelled
    from tests.corpus import Case, _one_line, run

    name = facts_file.stem
    here = facts_file.parent
    row: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="loopc-decoders-") as tmp:
        start = time.perf_counter()
        try:
            with spelled("command line"):  # its refusals read as the command's
                report = api.build(here / f"{name}.onnx", os.path.join(tmp, "model.plan"), warn=lambda m: None)
        except Exception as exc:  # noqa: BLE001  (a refusal or an internal error is a row)
            return {"build_seconds": round(time.perf_counter() - start, 1), "error": _one_line(exc),
                    "error_full": str(exc), "peak_rss_gb": _peak_rss_gb()}
        row.update(build_seconds=round(time.perf_counter() - start, 1), engine_bytes=report.engine_bytes,
                   compile_seconds=round(report.compile_seconds, 1), trt_build_seconds=round(report.build_seconds, 1))
    case = Case(name, here.name, here / f"{name}.onnx", here / f"{name}.inputs.npz", here / f"{name}.expected.npz",
                rtol=rtol, atol=atol)
    attempt = run(case)
    row.update(matches=attempt.ok, max_error=attempt.max_error, run_seconds=round(attempt.seconds, 1),
               peak_rss_gb=_peak_rss_gb())
    if not attempt.ok:
        row["error"] = attempt.detail
    return row


def _peak_rss_gb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)


# -- the driver --------------------------------------------------------------------------------------------------

def _child(command: list[str], timeout: float) -> tuple[bool, str]:
    """Run ``command`` in a process group of its own; on timeout the whole group (a build worker too) is killed."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return False, f"timed out after {timeout:.0f} s"
    if proc.returncode != 0:
        lines = [line.strip() for line in stderr.splitlines() if line.strip()]
        raised = [line for line in lines if EXCEPTION.match(line)]
        return False, (raised or lines or [f"exit {proc.returncode}"])[-1]
    return True, stdout


def _selected(families: str, variants: str) -> list[tuple[str, str]]:
    wanted = [v.strip() for v in variants.split(",") if v.strip()]
    chosen = []
    for family in (f.strip() for f in families.split(",")):
        if family not in FAMILIES:
            raise SystemExit(f"unknown family {family!r}; choose from {', '.join(FAMILIES)}")
        chosen += [(family, v) for v in FAMILIES[family] if not wanted or v in wanted]
    return chosen


def measure(family: str, name: str, out: pathlib.Path, args: argparse.Namespace) -> dict[str, Any]:
    """One row: export (when asked), then build and compare, each in a process of its own."""
    row: dict[str, Any] = {"family": family, "variant": name}
    me = str(pathlib.Path(__file__).resolve())
    if args.torch_python:
        start = time.perf_counter()
        ok, said = _child([args.torch_python, me, "--export-one", family, name, "--out", str(out)], args.timeout)
        if not ok:
            return {**row, "error": f"export: {said}", "export_wall_seconds": round(time.perf_counter() - start, 1)}
    facts = out / f"{name}.json"
    if not facts.exists():
        return {**row, "error": f"no export in {out}"}
    row.update(json.loads(facts.read_text()))
    ok, said = _child([sys.executable, me, "--measure-one", str(facts), "--rtol", str(args.rtol), "--atol",
                       str(args.atol)], args.timeout)
    row.update(json.loads(said) if ok else {"error": f"loopc: {said}"})
    return row


def table(rows: list[dict[str, Any]]) -> str:
    head = ("| family | variant | parameters | ONNX MB | trips | build s | engine MB | peak RSS GB | "
            "matches (max abs error) | onnxruntime's max abs error |")
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("matches"):
            verdict = f"yes ({r['max_error']:.1e})"
        else:
            verdict = "no: " + str(r.get("error", "?")).replace("|", "/")[:160]
        cells = [r["family"], r["variant"], f"{r['parameters'] / 1e6:.1f}M" if "parameters" in r else "",
                 f"{r['onnx_bytes'] / 2**20:.0f}" if "onnx_bytes" in r else "", str(r.get("trips", "")),
                 str(r.get("build_seconds", "")),
                 f"{r['engine_bytes'] / 2**20:.0f}" if "engine_bytes" in r else "", str(r.get("peak_rss_gb", "")),
                 verdict, _number(r.get("ort_max_error"))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _number(value: object) -> str:
    return f"{value:.1e}" if isinstance(value, float) else str(value or "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch-python", help="the python of a venv with torch: export the models first")
    parser.add_argument("--out", help="the folder of the exports (default: a new temporary folder)")
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--variants", default="", help="corpus names, comma-separated (default: every one listed)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds for each export and each build")
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--atol", type=float, default=1e-5)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of the table")
    parser.add_argument("--export-one", nargs=2, metavar=("FAMILY", "VARIANT"), help=argparse.SUPPRESS)
    parser.add_argument("--measure-one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.export_one:
        family, name = args.export_one
        export_one(family, name, pathlib.Path(args.out))
        return 0
    if args.measure_one:
        print(json.dumps(measure_one(pathlib.Path(args.measure_one), args.rtol, args.atol)))
        return 0
    out = pathlib.Path(args.out or tempfile.mkdtemp(prefix="decoder-families-"))
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for family, name in _selected(args.families, args.variants):
        rows.append(measure(family, name, out, args))
        print(f"{name}: {rows[-1].get('error') or 'ok'}", file=sys.stderr, flush=True)
    print(json.dumps(rows, indent=1) if args.json else table(rows))
    print(f"exports in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

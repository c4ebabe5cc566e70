"""How far half precision drifts from float32 as a loop runs longer, and what it saves.

    python benchmarks/half_drift.py [--models NAME[,NAME...]] [--trips 16,64,256,1024] [--no-build] [--json]

The models are the corpus's recurrent stacks (:data:`STACKS`: LSTM, GRU and RNN stacks, cells in loops,
linear-attention and retention recurrences) and its decoders (every case whose description names a decoder,
generator or beam search, as ``benchmarks/decoder_cost.py`` picks them). Each is run for every trip count:
a stack on a random sequence of that length (drawn with the example input's mean and spread, one seed), a
decoder asked for that many tokens (its ``max_*`` input, or the ``steps`` axis of a per-step input).

Each is compiled five times, float32 and in fp16 and bf16 with loop state kept float32 (the default) and in half
(``--fp16-state``), and every network is run by loopc's simulator, which computes each layer in its network's
types as TensorRT does. The figures, per half configuration and trip count:

* a stack: the largest error of its float outputs against the float32 network's, over that output's largest
  magnitude (the measure the README's tolerance and ``loopc check``'s ``precision`` check use);
* a decoder: the share of its tokens equal to float32's (100% is the same generation) and the first step
  where they differ, beside the error of its float outputs (scores, frames) as for a stack.

Then the cost side, per model, float32 against fp16 (state float32): the engine's bytes (both built for this
machine's default target, unless ``--no-build``) and the weight bytes read per trip: the bytes of the constant
tensors the layers of its loops read (each constant once per loop, summed over the loops), from the networks
TensorRT is given. Ratios are fp16 / float32 from the same run.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import onnx

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.decoder_cost import DECODER, benchmark_inputs  # noqa: E402  (after the path)
from benchmarks.loop_work import cell  # noqa: E402
from loopc.check.compare import compare_half  # noqa: E402
from tests.corpus import Case, _one_line, load_corpus  # noqa: E402
from loopc.fileio import load_arrays  # noqa: E402
from loopc.precision import Precision  # noqa: E402

#: The recurrent stacks: case id → (its sequence input, the time axis).
STACKS = {
    "torch/lstm_bidir_2layer": ("x", 1), "torch/gru_bidir_2layer": ("x", 0), "torch/rnn_bidir_2layer": ("x", 0),
    "torch/lstm_cell_loop": ("x", 0), "torch/gru_cell_loop": ("x", 0), "torch/chunk_lstm_loop": ("x", 0),
    "torch/scan_rnn": ("xs", 0), "torch/linear_attention": ("x", 0), "torch/retention_decay": ("x", 0),
    "tf2onnx/keras_lstm": ("x", 1), "tf2onnx/keras_stacked": ("x", 1), "tf2onnx/keras_gru_reset_after": ("x", 1),
    "paddle/paddle_lstm": ("x", 1), "paddle/paddle_gru": ("x", 1),
}
HALVES = [Precision("fp16"), Precision("fp16", half_state=True), Precision("bf16"), Precision("bf16", half_state=True)]
TRIPS = (16, 64, 256, 1024)


@dataclass
class Drift:
    """One half configuration at one trip count."""

    trips: int
    trips_run: int = 0  #: the trips the float32 network's outermost loop ran (a decoder may stop at EOS first)
    error: float | None = None  #: float outputs: the largest error over scale (None: no float output)
    tokens_same: float | None = None  #: integer outputs: the share of elements equal to float32's
    first_difference: int | None = None  #: the first step (along the tokens' last axis) that differs
    failed: str = ""


@dataclass
class Row:
    name: str
    kind: str  #: "stack" or "decoder"
    drift: dict[str, list[Drift]] = field(default_factory=dict)  #: by configuration (Precision as text)
    engine_bytes: dict[str, int] = field(default_factory=dict)  #: "fp32", "fp16"
    weight_bytes_per_trip: dict[str, int] = field(default_factory=dict)
    error: str = ""


# -- inputs ---------------------------------------------------------------------------------------

def stack_inputs(case: Case, trips: int) -> dict[str, np.ndarray]:
    """The example inputs with the sequence input redrawn ``trips`` long: normal, with its mean and spread."""
    name, axis = STACKS[case.id]
    inputs = load_arrays(case.inputs)
    example = inputs[name]
    shape = list(example.shape)
    shape[axis] = trips
    rng = np.random.default_rng(trips)
    inputs[name] = (rng.standard_normal(shape) * example.std() + example.mean()).astype(example.dtype)
    return inputs


def decoder_inputs(case: Case, trips: int) -> dict[str, np.ndarray]:
    return benchmark_inputs(onnx.load(str(case.model), load_external_data=False), load_arrays(case.inputs), None,
                            trips)


# -- measuring -----------------------------------------------------------------------------------

def measure(case: Case, kind: str, trip_counts: Sequence[int], build: bool) -> Row:
    from loopc.compiler import compile

    row = Row(case.id, kind)
    make_inputs = stack_inputs if kind == "stack" else decoder_inputs
    bound = max(trip_counts) if case.max_trips else None
    try:
        networks = {str(p): compile(case.model, max_trips=bound, precision=p) for p in [Precision(), *HALVES]}
    except Exception as exc:  # noqa: BLE001  (a model loopc refuses is a result here)
        row.error = "not compiled: " + _one_line(exc)
        return row
    for label in ("fp32", "fp16"):
        row.weight_bytes_per_trip[label] = weight_bytes_per_trip(networks[label].network)
        if build:
            row.engine_bytes[label] = engine_bytes(networks[label], make_inputs(case, min(trip_counts)))
    for trips in trip_counts:
        inputs = make_inputs(case, trips)
        try:
            fp32, ran = simulate(networks["fp32"], inputs)
        except Exception as exc:  # noqa: BLE001
            for half in HALVES:
                row.drift.setdefault(str(half), []).append(Drift(trips, failed="float32: " + _one_line(exc)))
            continue
        for half in HALVES:
            try:
                drift = compared(Drift(trips, ran), simulate(networks[str(half)], inputs)[0], fp32)
            except Exception as exc:  # noqa: BLE001
                drift = Drift(trips, ran, failed=_one_line(exc))
            row.drift.setdefault(str(half), []).append(drift)
    return row


def simulate(compiled: Any, inputs: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray], int]:
    """The network's outputs, and the trips its outermost loops ran (the most any of their layers ran)."""
    from loopc.feeds import input_specs, prepare_inputs
    from loopc.sim import Simulator

    runs: Counter[int] = Counter()

    def count(layer: Any, args: Any) -> None:
        scope = layer.outputs[0].scope if layer.outputs else None
        if scope is not None and scope.parent is None:
            runs[layer.index] += 1

    outputs = Simulator(compiled.network, observer=count).run(
        prepare_inputs(input_specs(compiled.network, compiled.model), inputs))
    return outputs, max(runs.values(), default=0)


def compared(drift: Drift, half: Mapping[str, np.ndarray], fp32: Mapping[str, np.ndarray]) -> Drift:
    """The drift of one run: float outputs by scale, integer outputs (tokens) by agreement."""
    floats = [o.of_scale for o in compare_half(half, {k: v for k, v in fp32.items() if v.dtype.kind == "f"}, 1.0)]
    if floats:
        drift.error = max((value for value in floats if value is not None), default=None)
    tokens = [(half[name], want) for name, want in fp32.items() if want.dtype.kind in "iub" and want.size]
    if tokens:
        same = sum(int(np.count_nonzero(got == want)) for got, want in tokens if got.shape == want.shape)
        drift.tokens_same = same / sum(want.size for _, want in tokens)
        steps = [int(np.argmax((got != want).reshape(-1, want.shape[-1]).any(axis=0)))
                 for got, want in tokens if got.shape == want.shape and want.ndim and (got != want).any()]
        drift.first_difference = min(steps, default=None)
    return drift


def weight_bytes_per_trip(network: Any) -> int:
    """The bytes of the weights the layers of each loop read, each once per loop, summed over the loops.

    A weight is a tensor computed from constants alone (a constant, or its transpose or cast made before the
    loop), counted as the layer reads it.
    """
    from loopc.sim.network import read_network

    net = read_network(network)
    memo: dict[str, bool] = {}
    total = 0
    for loop in net.loops:
        read = {t.name: t for layer in net.layers if layer.outputs and layer.outputs[0].scope is loop
                for t in layer.inputs if t is not None and _from_constants(t, memo)}
        total += sum(int(np.prod(t.shape, dtype=np.int64)) * t.dtype.itemsize for t in read.values())
    return total


def _from_constants(tensor: Any, memo: dict[str, bool]) -> bool:
    if tensor.name not in memo:
        layer = tensor.producer
        memo[tensor.name] = layer is not None and (
            layer.type == "CONSTANT" or layer.loop is None and tensor.scope is None and bool(layer.inputs)
            and all(t is not None and _from_constants(t, memo) for t in layer.inputs))
    return memo[tensor.name]


def engine_bytes(compiled: Any, inputs: Mapping[str, np.ndarray]) -> int:
    from loopc.compiler import build_plan

    plan, _ = build_plan(compiled, inputs=inputs, warn=lambda message: None)
    return len(plan)


# -- the report ----------------------------------------------------------------------------------

def drift_cell(drift: Drift) -> str:
    if drift.failed:
        return "failed"
    parts = [] if drift.trips_run == drift.trips else [f"ran {drift.trips_run}"]
    if drift.tokens_same is not None:
        parts.append(f"{drift.tokens_same:.0%} tokens" + ("" if drift.first_difference is None else
                                                          f" (from {drift.first_difference})"))
    if drift.error is not None:
        parts.append(f"{drift.error:.1e}")
    return ", ".join(parts) or "–"


def markdown(rows: Sequence[Row], trip_counts: Sequence[int]) -> str:
    header = ["model", "precision (state)"] + [f"T={t}" for t in trip_counts]
    lines = ["| " + " | ".join(header) + " |", "|---|---|" + "---:|" * len(trip_counts)]
    for row in rows:
        if row.error:
            lines.append(f"| {row.name} | {row.error} |" + " |" * len(trip_counts))
            continue
        for label, drifts in row.drift.items():
            lines.append("| " + " | ".join([row.name, label, *map(drift_cell, drifts)]) + " |")
    costs = ["", "| model | engine fp32 | engine fp16 | ratio | weight bytes/trip fp32 | fp16 | ratio |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        if row.error:
            continue
        engine, weights = row.engine_bytes, row.weight_bytes_per_trip
        costs.append("| " + " | ".join([row.name, cell(engine.get("fp32")), cell(engine.get("fp16")),
                                         _ratio(engine), cell(weights["fp32"]), cell(weights["fp16"]),
                                         _ratio(weights)]) + " |")
    return "\n".join(lines + costs)


def _ratio(pair: Mapping[str, int]) -> str:
    return f"{pair['fp16'] / pair['fp32']:.2f}" if pair.get("fp32") and "fp16" in pair else "–"


def cases(names: Sequence[str]) -> list[tuple[Case, str]]:
    by_id = {case.id: case for case in load_corpus(ROOT / "tests" / "models")}
    decoders = [case for case in by_id.values() if DECODER.search(case.about) and case.model.suffix == ".onnx"]
    chosen = [(by_id[name], "stack") for name in STACKS] + [(case, "decoder") for case in decoders]
    return [(case, kind) for case, kind in chosen if not names or case.name in names or case.id in names]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="", help="comma-separated case names; default: every stack and decoder")
    parser.add_argument("--trips", default=",".join(map(str, TRIPS)), help="trip counts (16,64,256,1024)")
    parser.add_argument("--no-build", action="store_true", help="leave out the engine sizes (no builds)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the Markdown tables")
    args = parser.parse_args()
    trip_counts = [int(t) for t in args.trips.split(",") if t]
    rows = []
    for case, kind in cases([name for name in args.models.split(",") if name]):
        rows.append(measure(case, kind, trip_counts, not args.no_build))
        print(f"measured {case.id}", file=sys.stderr)
    if args.json:
        print(json.dumps([asdict(row) for row in rows], indent=2))
    else:
        print("error against float32: the largest error of the float outputs over their largest magnitude; decoders: "
              "the share of tokens equal to float32's, and the first step that differs")
        print()
        print(markdown(rows, trip_counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())

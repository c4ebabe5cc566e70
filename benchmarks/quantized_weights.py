"""What quantizing buys in loopc's engines: the quantized loop corpus beside the float models it was made from.

    python benchmarks/quantized_weights.py [--json FILE]

For each case of ``tests/models/quantized`` (onnxruntime's quantizer and NVIDIA ModelOpt on a GRU stack, a greedy
decoder and a diffusion-style sampler) and for its float model (``tests/models/quantized/float``), loopc builds the
engine (ahead of time, for its default target) and the table gives: the model's weight DequantizeLinear nodes and
the network's Dequantize layers over quantized constants (equal when every weight stays quantized), the network's
constant bytes by type, the bytes each loop's body reads per trip, and the engine's size, each beside the float
model's. The quantizers leave some weights in float (onnxruntime's static quantizer does not enter loop bodies:
its ``*_body`` cases are quantized inside by the same tool, see the corpus' README), so the network-wide ratio is
the model's, not the weights'.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import onnx  # noqa: E402

from loopc.compiler import build  # noqa: E402
from loopc.compiler import compile as compile_model  # noqa: E402
from tests.corpus import load_manifest  # noqa: E402
from tests.test_quantized_corpus import quantized_weight_layers, weight_dequantizes  # noqa: E402

HERE = ROOT / "tests" / "models" / "quantized"


def measure(model: pathlib.Path) -> dict[str, object]:
    """Weight bytes by type, per-trip bytes of each loop, and the engine's size, for loopc's build of ``model``."""
    with tempfile.TemporaryDirectory() as tmp:
        plan = pathlib.Path(tmp) / "model.plan"
        report = build(model, plan, warn=lambda message: None)
        engine = plan.stat().st_size
    network = compile_model(model).network
    return {"weights": dict(report.weight_bytes), "per_trip": sum(sum(loop.weight_bytes_per_iteration.values())
                                                                for loop in report.all_loops()),
            "engine": engine, "weight_dqs": weight_dequantizes(onnx.load(model)),
            "dq_layers": len(quantized_weight_layers(network))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=pathlib.Path, help="also write the figures here")
    args = parser.parse_args()
    floats = {path.stem: measure(path) for path in sorted((HERE / "float").glob("*.onnx"))}
    rows = []
    print("| case | weight DQs / DQ layers over quantized constants | constant bytes by type | "
          "÷ float model's | weight bytes per trip (÷ float) | engine bytes (÷ float) |")
    print("|---|---|---|---:|---|---|")
    for case in load_manifest(HERE / "cases.toml"):
        source = next(name for name in floats if name in case.name)
        mine, theirs = measure(case.model), floats[source]
        total, float_total = sum(mine["weights"].values()), sum(theirs["weights"].values())  # type: ignore[union-attr]
        by_type = ", ".join(f"{kind} {n:,}" for kind, n in mine["weights"].items())  # type: ignore[union-attr]
        per_trip = f"{mine['per_trip']:,} ({mine['per_trip'] / max(theirs['per_trip'], 1):.2f})"  # type: ignore[operator]
        engine = f"{mine['engine']:,} ({mine['engine'] / theirs['engine']:.2f})"  # type: ignore[operator]
        print(f"| {case.name} | {mine['weight_dqs']} / {mine['dq_layers']} | {by_type} | "
              f"{total / float_total:.2f} | {per_trip} | {engine} |")
        rows.append({"case": case.name, "float": source, **mine, "float_figures": theirs})
    for name, figures in floats.items():
        print(f"| float/{name} | – | " + ", ".join(f"{k} {n:,}" for k, n in figures["weights"].items())  # type: ignore[union-attr]
              + f" | 1.00 | {figures['per_trip']:,} | {figures['engine']:,} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

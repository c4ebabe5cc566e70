"""ONNX's loop node tests, loopc side by side with TensorRT's own parser, in one run.

For every node test whose model contains Loop or Scan, or is an LSTM / GRU / RNN test: did
TensorRT's parser (+ builder) build it, did loopc build it, and do loopc's simulated outputs
match the test's expected outputs? The sample models (PyTorch-exported loops) follow, checked
against onnxruntime on their sample inputs. Also counts the layers inside loop bodies (per iteration) of both
networks, and times both (import + TensorRT build) as a ratio, over the cases both built.

    python benchmarks/loop_conformance.py [-k NAME_SUBSTRING] [--max-trips N]

``--max-trips`` is passed to loopc (as on its command line): the bound some loops need, e.g. the
Range expansions, whose trip count is computed from float inputs.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from types import SimpleNamespace
from typing import Any

import numpy as np
import onnx

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # for the tests package

from tests.conformance import MATCH, node_test_cases, run_case  # noqa: E402

LOOP_OPS = {"Loop", "Scan", "LSTM", "GRU", "RNN"}
SAMPLES = pathlib.Path(__file__).resolve().parents[1] / "samples"


def sample_cases() -> list[Any]:
    """The sample models as test cases, with onnxruntime's outputs on the sample inputs as expected."""
    import onnxruntime as ort

    ort.set_default_logger_severity(3)  # its shape warnings on growing loop outputs are expected
    cases = []
    for path in sorted(SAMPLES.glob("*.onnx")):
        feeds = dict(np.load(path.with_name(f"{path.stem}_inputs.npz")))
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        inputs = [feeds[i.name] for i in session.get_inputs()]
        expected = session.run(None, dict(zip([i.name for i in session.get_inputs()], inputs)))
        cases.append(SimpleNamespace(name=f"samples/{path.name}", model=onnx.load(str(path)),
                                     data_sets=[(inputs, expected)], rtol=1e-5, atol=1e-6))
    return cases


def has_loop(case: Any) -> bool:
    def ops(graph: Any) -> set[str]:
        found = set()
        for node in graph.node:
            found.add(node.op_type)
            for attr in node.attribute:
                if attr.g.node:
                    found |= ops(attr.g)
        return found

    return bool(ops(case.model.graph) & LOOP_OPS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", dest="pattern", help="only cases whose name contains this")
    parser.add_argument("--max-trips", type=int, help="loopc's bound on while loops' trips")
    args = parser.parse_args()
    cases = [c for c in node_test_cases(args.pattern) if has_loop(c)]
    cases += [c for c in sample_cases() if args.pattern is None or args.pattern in c.name]
    rows = []
    times = {"trt-onnx": 0.0, "loopc": 0.0}  # import + build, over the cases both built
    print(f"{'case':<52}{'parser built':>13}{'loopc built':>12}{'loopc correct':>14}{'loop layers p/l':>16}  note")
    for case in cases:
        theirs = run_case(case, "trt-onnx")
        ours = run_case(case, "loopc", args.max_trips)
        if theirs.built and ours.built:
            times["trt-onnx"] += theirs.build_seconds
            times["loopc"] += ours.build_seconds
        rows.append((case.name, theirs, ours))
        note = "" if ours.status == MATCH else f"{ours.status}: {ours.detail[:90]}"
        print(
            f"{case.name:<52}{'yes' if theirs.built else 'no':>13}{'yes' if ours.built else 'no':>12}"
            f"{'yes' if ours.status == MATCH else 'no':>14}{f'{theirs.loop_layers}/{ours.loop_layers}':>16}  {note}",
            flush=True,
        )
    parser_built = sum(t.built for _, t, _ in rows)
    loopc_built = sum(o.built for _, _, o in rows)
    correct = sum(o.status == MATCH for _, _, o in rows)
    print(f"\n{len(rows)} cases: TensorRT's parser built {parser_built}; loopc built {loopc_built}, correct {correct}")
    missing = [n for n, t, o in rows if t.built and o.status != MATCH]
    print(f"cases the parser builds that loopc does not build correctly: {len(missing)} {missing}")
    both = [(t, o) for _, t, o in rows if t.built and o.built]
    print(f"layers inside loop bodies where both built ({len(both)} cases): parser {sum(t.loop_layers for t, _ in both)}, "
          f"loopc {sum(o.loop_layers for _, o in both)}")
    if times["trt-onnx"]:
        print(
            f"import + build time where both built: loopc {times['loopc']:.1f} s, "
            f"parser {times['trt-onnx']:.1f} s, ratio {times['loopc'] / times['trt-onnx']:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Silero VAD as the ``silero-vad`` package ships it: every ONNX variant, at 8 and 16 kHz, at three shapes.

For each: ``loopc build`` with the example inputs (``-i``; the model holding both rates' networks with
``--fix-input sr=RATE``), the simulated network against onnxruntime, and TensorRT's own parser on the same
shapes. Prints a Markdown table.

    python benchmarks/silero_vad_table.py
"""

from __future__ import annotations

import pathlib
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loopc import api  # noqa: E402
from tests.corpus import compare  # noqa: E402
from loopc.fileio import OutputFile  # noqa: E402
from tests.shipped import shipped  # noqa: E402
from tests.test_silero_vad import VARIANTS, VERSION, feeds, fixed_rate  # noqa: E402

#: Batches of streams (for the sequence variant: windows of one stream); its input is fixed at [1, 576].
SHAPES = {"silero_vad_openvino_16k": (1,)}
BATCHES = (1, 2, 4)


def parser_builds(path: pathlib.Path, inputs: dict[str, np.ndarray]) -> str:
    from loopc.trt.config import build_serialized, builder_config, pin_profile
    from loopc.trt.onnx_parser import parse_onnx

    try:
        parsed = parse_onnx(path)
        cfg = builder_config(parsed.session)
        pin_profile(parsed.session, parsed.network, cfg, inputs)
        build_serialized(parsed.session, parsed.network, cfg)
    except Exception as exc:  # noqa: BLE001  (a refusal is a result here)
        return "no: " + str(exc).splitlines()[0][:70]
    return "yes"


def main() -> None:
    import onnxruntime as ort

    models = shipped("silero-vad", VERSION) / "silero_vad" / "data"
    print(f"silero-vad {VERSION}\n")
    print("| variant | rate | input | loopc builds | matches onnxruntime (max error) | TensorRT's parser builds |")
    print("| --- | --- | --- | --- | --- | --- |")
    counts = [0, 0, 0, 0]
    for variant, rates in VARIANTS.items():
        path = models / f"{variant}.onnx"
        session = ort.InferenceSession(str(path))
        for rate in rates:
            for batch in SHAPES.get(variant, BATCHES):
                inputs = feeds(path, rate, batch, seed=batch)
                fix = fixed_rate(variant, rate)
                with tempfile.TemporaryDirectory() as scratch:
                    try:
                        api.build(path, OutputFile(pathlib.Path(scratch) / "vad.plan"), inputs=inputs, fix_input=fix)
                        built = "yes"
                    except Exception as exc:  # noqa: BLE001
                        built = "no: " + str(exc)[:70]
                want = dict(zip([o.name for o in session.get_outputs()], session.run(None, inputs)))
                try:
                    attempt = compare(api.run(path, inputs, fix_input=fix), want, 1e-4, 1e-5)
                    matched = f"yes ({attempt.max_error:.1e})" if attempt.ok else "no: " + attempt.detail
                except Exception as exc:  # noqa: BLE001
                    matched = "no: " + str(exc)[:70]
                parser = parser_builds(path, {k: v for k, v in inputs.items() if k != "sr" or fix is None})
                counts = [counts[0] + 1, counts[1] + (built == "yes"), counts[2] + matched.startswith("yes"),
                          counts[3] + (parser == "yes")]
                shape = "x".join(map(str, inputs["input"].shape))
                print(f"| {variant} | {rate // 1000} kHz | {shape} | {built} | {matched} | {parser} |")
    print(f"\n{counts[0]} cases: loopc builds {counts[1]}, matches {counts[2]}; TensorRT's parser builds {counts[3]}")


if __name__ == "__main__":
    main()

"""Every model ``loopc export`` is held to: the samples, the OpenVINO IR samples and the corpus of real exports,
each with the inputs to run it on and its reference outputs from an independent runtime."""

from __future__ import annotations

import pathlib
import tomllib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx

from tests.corpus import load_corpus, openvino_outputs
from loopc.fileio import load_arrays

ROOT = pathlib.Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "samples"
ONNX_SAMPLES = ["running_sum", "greedy_gru_decoder", "index_loop", "growing_cat", "list_stack", "nested_loops",
                "cumulative"]


@dataclass(frozen=True)
class ExportCase:
    id: str
    model: pathlib.Path
    inputs: pathlib.Path
    #: The reference outputs for the inputs: the framework's own (corpus), else a runtime on the original model.
    reference: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
    max_trips: int | None = None
    rtol: float = 1e-4
    atol: float = 1e-5


def onnxruntime_outputs(model: onnx.ModelProto | pathlib.Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """onnxruntime's outputs by name, fed the inputs the model has."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    # optimizations off, as for the quantized corpus' oracle: onnxruntime's own Q/DQ fusions refuse the int4 weights
    # its quantizer puts in loop bodies ("TransposeDQWeightsForMatMulNBits Missing required weight")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    fed = {i.name: feeds[i.name] for i in session.get_inputs()}
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, fed)))


def export_cases() -> list[ExportCase]:
    cases = [ExportCase(f"samples/{name}", SAMPLES / f"{name}.onnx", SAMPLES / f"{name}_inputs.npz",
                        lambda feeds, path=SAMPLES / f"{name}.onnx": onnxruntime_outputs(path, feeds),
                        rtol=1e-5, atol=1e-6) for name in ONNX_SAMPLES]
    folder = SAMPLES / "openvino"
    for table in tomllib.loads((folder / "cases.toml").read_text())["sample"]:
        if "loopc-refuses" in table:
            continue
        xml = folder / f"{table['name']}.xml"
        inputs = folder / table.get("inputs", f"{table['name']}_inputs.npz")
        cases.append(ExportCase(f"openvino/{inputs.name.removesuffix('_inputs.npz')}", xml, inputs,
                                lambda feeds, path=xml: openvino_outputs(path, feeds), table.get("max-trips"),
                                table.get("rtol", 1e-4), table.get("atol", 1e-5)))
    for case in load_corpus(ROOT / "tests" / "models"):
        if case.refusal is None:
            cases.append(ExportCase(case.id, case.model, case.inputs,
                                    lambda feeds, path=case.expected: load_arrays(path), case.max_trips, case.rtol,
                                    case.atol))
    return cases

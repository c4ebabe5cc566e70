"""How fast does the simulator run a diffusion sampling loop? The corpus's UNet in 10 DDIM steps.

    python benchmarks/sim_unet.py [--repeat R]

The model is ``tests/models/torch_whole/unet_ddim.onnx``: a scripted ``for`` over a 10-step DDIM schedule around a
small UNet (Conv, GroupNorm, SiLU, self-attention over 8x8 positions, nearest Resize, timestep embedding) on a
[1, 3, 16, 16] sample, exported by PyTorch's TorchScript exporter. The script builds it with loopc (and the real
TensorRT builder), simulates the network, and prints:

* the compile and builder times;
* the time of each sampling step (from one step's first convolution to the next one's; the last step runs to
  the end of the run) and the total, from a run with an observer;
* the best total of ``--repeat`` plain runs;
* where the time goes, by layer type (each kernel's time is the time to the next kernel's start);
* the largest difference from the sample PyTorch computed eagerly, and whether it is within the corpus's
  tolerance (rtol 1e-3, atol 1e-4).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
from collections import defaultdict
from typing import Any

import numpy as np

from loopc.compiler import compile as compile_model
from loopc.fileio import load_arrays
from loopc.sim import Simulator
from loopc.sim.network import Layer
from loopc.trt.config import build_serialized, builder_config

CASE = pathlib.Path(__file__).resolve().parent.parent / "tests" / "models" / "torch_whole" / "unet_ddim"
STEPS = 10
RTOL, ATOL = 1e-3, 1e-4


class Timeline:
    """An observer recording when each kernel starts, with its layer."""

    def __init__(self) -> None:
        self.events: list[tuple[float, Layer]] = []

    def __call__(self, layer: Layer, args: list[Any]) -> None:
        self.events.append((time.perf_counter(), layer))


def step_times(timeline: Timeline, end: float) -> list[float]:
    """Seconds per sampling step: the UNet's input convolution starts each step."""
    starts = [t for t, layer in timeline.events if layer.type == "CONVOLUTION" and "conv_in" in layer.name]
    return [b - a for a, b in zip(starts, starts[1:] + [end])]


def by_layer_type(timeline: Timeline, end: float) -> dict[str, float]:
    times: dict[str, float] = defaultdict(float)
    stamps = [t for t, _ in timeline.events] + [end]
    for (start, layer), stop in zip(timeline.events, stamps[1:]):
        times[layer.type] += stop - start
    return dict(sorted(times.items(), key=lambda item: -item[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="plain runs; the best total is reported")
    args = parser.parse_args()

    inputs = load_arrays(f"{CASE}.inputs.npz")
    expected = load_arrays(f"{CASE}.expected.npz")["sample"]

    start = time.perf_counter()
    compiled = compile_model(f"{CASE}.onnx")
    compile_seconds = time.perf_counter() - start
    start = time.perf_counter()
    build_serialized(compiled.session, compiled.network, builder_config(compiled.session))
    build_seconds = time.perf_counter() - start
    print(f"unet_ddim: {compiled.network.num_layers} layers; loopc compile {compile_seconds:.2f} s, "
          f"TensorRT builder {build_seconds:.2f} s")

    timeline = Timeline()
    observed = Simulator(compiled.network, observer=timeline)
    start = time.perf_counter()
    got = observed.run(inputs)["sample"]
    end = time.perf_counter()
    steps = step_times(timeline, end)
    if len(steps) != STEPS:
        print(f"expected {STEPS} sampling steps, saw {len(steps)} starts of the UNet's input convolution")
        return 1
    for k, seconds in enumerate(steps):
        print(f"  step {k + 1:2d}: {seconds * 1e3:7.1f} ms")
    print(f"observed run: {(end - start) * 1e3:.1f} ms, {sum(steps) / STEPS * 1e3:.1f} ms per step on average; "
          f"{len(timeline.events)} kernels")

    plain = Simulator(compiled.network)
    best = float("inf")
    for _ in range(args.repeat):
        start = time.perf_counter()
        again = plain.run(inputs)["sample"]
        best = min(best, time.perf_counter() - start)
    print(f"plain run, best of {args.repeat}: {best * 1e3:.1f} ms total, {best / STEPS * 1e3:.1f} ms per step")

    print("time by layer type (observed run):")
    for kind, seconds in list(by_layer_type(timeline, end).items())[:8]:
        print(f"  {kind:<16} {seconds * 1e3:7.1f} ms")

    error = float(np.abs(got.astype(np.float64) - expected).max())
    within = bool(np.allclose(got, expected, rtol=RTOL, atol=ATOL)) and bool(np.array_equal(got, again))
    print(f"against PyTorch's eager sample {list(expected.shape)}: max |error| {error:.2e} "
          f"(|sample| up to {np.abs(expected).max():.2f}); within rtol {RTOL}, atol {ATOL}: {within}")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())

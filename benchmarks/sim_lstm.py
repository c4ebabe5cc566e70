"""How fast does the simulator run a long loop? A 1,000-step LSTM built with the TensorRT API.

    python benchmarks/sim_lstm.py [--steps N] [--repeat R]

The network: batch 1, input size 512, hidden size 256. An IIteratorLayer walks the input
sequence [steps, 1, 512]; per step the gates are x_t W + h R + b (two IMatrixMultiplyLayers
with constant weights [512, 1024] and [256, 1024], and a constant bias), sliced into the
input, forget, cell and output gates (order i, f, g, o); IRecurrenceLayers carry h and c.
The loop's outputs are every step's h (kCONCATENATE) and the final c (kLAST_VALUE).

The script checks that the TensorRT builder serializes the network, times the read-back and
``Simulator.run`` (best of ``--repeat`` runs), and compares the result with a plain NumPy LSTM.
"""

from __future__ import annotations

import os

# Each step multiplies a single row by a matrix: BLAS threads cannot help, and on a busy
# machine OpenBLAS's spinning threads make such products several times slower and the timing
# noisy. Set OPENBLAS_NUM_THREADS yourself to measure another setting.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from loopc.sim import Simulator  # noqa: E402
from loopc.sim.network import read_network  # noqa: E402
from loopc.trt import trt  # noqa: E402
from loopc.trt.config import Session, build_serialized, builder_config  # noqa: E402

INPUT, HIDDEN, BATCH = 512, 256, 1
TARGET_SECONDS = 2.0


def build_lstm(session: Session, steps: int, w: np.ndarray, r: np.ndarray, b: np.ndarray) -> tuple[Any, list[Any]]:
    """The LSTM network; also returns the weight arrays, which must outlive the build."""
    t = trt()
    net = session.create_network()
    keep: list[np.ndarray] = []

    def const(array: np.ndarray, shape: tuple[int, ...] | None = None) -> Any:
        array = np.ascontiguousarray(array)
        keep.append(array)
        dims = t.Dims(list(array.shape if shape is None else shape))
        return net.add_constant(dims, array).get_output(0)

    def ew(a: Any, b: Any, op: Any) -> Any:
        return net.add_elementwise(a, b, op).get_output(0)

    def act(x: Any, kind: Any) -> Any:
        return net.add_activation(x, kind).get_output(0)

    x = net.add_input("x", t.float32, (steps, BATCH, INPUT))
    h0 = net.add_input("h0", t.float32, (BATCH, HIDDEN))
    c0 = net.add_input("c0", t.float32, (BATCH, HIDDEN))

    loop = net.add_loop()
    loop.add_trip_limit(const(np.array([steps], np.int32), ()), t.TripLimit.COUNT)
    x_t = loop.add_iterator(x).get_output(0)  # [BATCH, INPUT]
    h_rec = loop.add_recurrence(h0)
    c_rec = loop.add_recurrence(c0)
    h, c = h_rec.get_output(0), c_rec.get_output(0)

    none = t.MatrixOperation.NONE
    gates = ew(
        ew(
            net.add_matrix_multiply(x_t, none, const(w), none).get_output(0),
            net.add_matrix_multiply(h, none, const(r), none).get_output(0),
            t.ElementWiseOperation.SUM,
        ),
        const(b.reshape(1, 4 * HIDDEN)),
        t.ElementWiseOperation.SUM,
    )  # [BATCH, 4 * HIDDEN]

    def gate(k: int) -> Any:
        return net.add_slice(gates, (0, k * HIDDEN), (BATCH, HIDDEN), (1, 1)).get_output(0)

    sigmoid, tanh = t.ActivationType.SIGMOID, t.ActivationType.TANH
    i_g, f_g, g_g, o_g = act(gate(0), sigmoid), act(gate(1), sigmoid), act(gate(2), tanh), act(gate(3), sigmoid)
    prod, add = t.ElementWiseOperation.PROD, t.ElementWiseOperation.SUM
    c_next = ew(ew(f_g, c, prod), ew(i_g, g_g, prod), add)
    h_next = ew(o_g, act(c_next, tanh), prod)
    h_rec.set_input(1, h_next)
    c_rec.set_input(1, c_next)

    hs = loop.add_loop_output(h_next, t.LoopOutput.CONCATENATE, 0)
    hs.set_input(1, const(np.array([steps], np.int32), ()))
    hs.get_output(0).name = "h_all"
    c_last = loop.add_loop_output(c_rec.get_output(0), t.LoopOutput.LAST_VALUE)
    c_last.get_output(0).name = "c_last"
    net.mark_output(hs.get_output(0))
    net.mark_output(c_last.get_output(0))
    return net, keep


def numpy_lstm(
    x: np.ndarray, h: np.ndarray, c: np.ndarray, w: np.ndarray, r: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The reference: the same cell, step by step, in float32."""

    def sigmoid(v: np.ndarray) -> np.ndarray:
        return 1 / (1 + np.exp(-v))

    hs = []
    for x_t in x:
        gates = x_t @ w + h @ r + b
        i, f, g, o = (gates[:, k * HIDDEN : (k + 1) * HIDDEN] for k in range(4))
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        hs.append(h)
    return np.stack(hs), c


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    w = (rng.standard_normal((INPUT, 4 * HIDDEN)) * 0.05).astype(np.float32)
    r = (rng.standard_normal((HIDDEN, 4 * HIDDEN)) * 0.05).astype(np.float32)
    b = (rng.standard_normal(4 * HIDDEN) * 0.1).astype(np.float32)
    inputs = {
        "x": rng.standard_normal((args.steps, BATCH, INPUT)).astype(np.float32),
        "h0": (rng.standard_normal((BATCH, HIDDEN)) * 0.1).astype(np.float32),
        "c0": (rng.standard_normal((BATCH, HIDDEN)) * 0.1).astype(np.float32),
    }

    session = Session()
    network, _weights = build_lstm(session, args.steps, w, r, b)
    start = time.perf_counter()
    blob = build_serialized(session, network, builder_config(session))
    print(f"TensorRT builder: serialized {len(blob)} bytes in {time.perf_counter() - start:.2f} s")

    start = time.perf_counter()
    read_back = read_network(network)
    print(f"read back {len(read_back.layers)} layers: {time.perf_counter() - start:.3f} s")

    simulator = Simulator(read_back)
    times, result = [], {}
    for _ in range(args.repeat):
        start = time.perf_counter()
        result = simulator.run(inputs)
        times.append(time.perf_counter() - start)
    best = min(times)
    runs = ", ".join(f"{s:.3f}" for s in times)
    threads = os.environ["OPENBLAS_NUM_THREADS"]
    print(f"runs: {runs} s (the first also prepares the kernels; OPENBLAS_NUM_THREADS={threads})")

    want_h, want_c = numpy_lstm(inputs["x"], inputs["h0"], inputs["c0"], w, r, b)
    error = max(float(np.max(np.abs(result["h_all"] - want_h))), float(np.max(np.abs(result["c_last"] - want_c))))
    print(f"max abs error vs NumPy LSTM: {error:.2e}")
    print(f"simulate {args.steps}-step LSTM: {best:.2f} s (target < {TARGET_SECONDS:.0f} s)")
    return 0 if error < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())

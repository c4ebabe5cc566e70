"""How many copies of a weight a TensorRT-RTX engine stores, when a loop and the code before it both read it.

    python benchmarks/weight_storage.py [--size 1024] [--prompt 16] [--trips 4] [-k TEXT] [--json FILE]

A decoder reads each weight twice: the prompt's pass before the loop ([P, K] @ W) and the decode step inside it
([1, K] @ W). Small networks are built here directly with TensorRT's network API, ahead of time for loopc's
default target, and each serialized engine is measured two ways: its size, and the copies of W found in it
byte for byte, as the network's constant holds it (``W``) and transposed (``Wᵀ``). W is [K, K], float32
(4 MiB at 1024) or quantized. An engine also holds bytes that are not W (kernels, graph): tens of KiB for one
MatMul, about 2 MiB for the token-by-token loop whatever K is, more for more trips; the copies found are the
count to trust.

Layout ``[in, out]``: the constant is W and ``y = x @ W``. Layout ``[out, in]``: the constant is Wᵀ (the
layout of a ``torch.nn.Linear`` weight, ONNX ``Gemm(transB=1)``) and both MatMuls read it with
``MatrixOperation.TRANSPOSE``, so ``y`` is the same.

* Part A (float32): W before the loop only, inside it only, both (one constant, two equal constants), the floor
  (the loop reads the prompt token by token: one read of W), rows with ``P=1`` (both reads [1, K]), then
  constructions that might make TensorRT keep one copy (W carried by a recurrence, passed out of a loop, scaled
  by a runtime 1, through an identity) and the builder flags that concern weights.
* Part B (quantized): W an INT8, FP8 or INT4 constant behind a Dequantize layer (per tensor, per output channel,
  per block of 32 along the input axis), the activation behind Quantize -> Dequantize (INT8 or FP8, per tensor)
  or float (weight only), before the loop, inside it and both.

``×W f32`` is the engine's bytes over W's float32 bytes: one float copy is about 1, one INT8 or FP8 copy about
1/4, one INT4 copy about 1/8. Each build runs in a forked process: a builder crash is a row, not the end.
"""

from __future__ import annotations

import argparse
import json
import logging
import pathlib
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import ml_dtypes
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from loopc.backend.trt.context import packed_nibbles  # noqa: E402
from loopc.errors import LoopcError  # noqa: E402  (after the path: run as a script)
from loopc.trt import trt  # noqa: E402
from loopc.trt.config import Session, build_serialized, builder_config  # noqa: E402
from _forked import in_fork  # noqa: E402


@dataclass(frozen=True)
class Shape:
    size: int  #: W is [size, size]
    prompt: int  #: rows of the prompt's pass before the loop
    trips: int  #: decode trips
    linear: bool = False  #: the constant holds Wᵀ ([out, in]) and the MatMuls transpose it


class Net:
    """One network under construction, the arrays it needs until it is built (TensorRT does not copy them),
    and W's stored bytes as given and transposed, to find them in the engine."""

    def __init__(self, session: Session, shape: Shape) -> None:
        self.net, self.shape, self.keep = session.create_network(), shape, session.keep_alive
        self.rng = np.random.default_rng(0)
        self.needles: tuple[bytes, bytes] | None = None

    def typed(self, tensor: Any) -> Any:
        """``tensor``, its type inferred now: a tensor whose type is first asked for after it closes a
        recurrence's cycle has none (the build fails with "invalid inferred type DataType{-1}")."""
        assert tensor.dtype is not None
        return tensor

    def out(self, layer: Any) -> Any:
        return self.typed(layer.get_output(0))

    def const(self, array: np.ndarray, name: str = "") -> Any:
        self.keep.append(array)
        layer = self.net.add_constant(array.shape, array)
        if name:
            layer.name = name
        return self.out(layer)

    def packed(self, raw: np.ndarray, dtype: Any, count: int, shape: Sequence[int]) -> Any:
        """A constant of FP8 or INT4 (which numpy cannot hold): raw bytes as ``trt.Weights`` of ``count`` elements."""
        raw = np.ascontiguousarray(raw)
        self.keep.append(raw)
        return self.out(self.net.add_constant(tuple(shape), trt().Weights(dtype, raw.ctypes.data, count)))

    def remember(self, held: np.ndarray, to_bytes: Callable[[np.ndarray], bytes] = np.ndarray.tobytes) -> None:
        """W as the constant holds it (``held``, 2-D); the first weight of a network is the one searched for."""
        if self.needles is None:
            self.needles = (to_bytes(np.ascontiguousarray(held)), to_bytes(np.ascontiguousarray(held.T)))

    def float_weight(self) -> np.ndarray:
        """W's values as the constant holds them ([in, out], or [out, in] in the linear layout)."""
        k = self.shape.size
        w = (self.rng.standard_normal((k, k)) / np.sqrt(k)).astype(np.float32)
        return np.ascontiguousarray(w.T) if self.shape.linear else w

    def weight(self, values: np.ndarray | None = None, name: str = "W") -> Any:
        values = self.float_weight() if values is None else values
        self.remember(values)
        return self.const(values, name)

    def input(self, rows: int, name: str = "x") -> Any:
        return self.typed(self.net.add_input(name, trt().float32, (rows, self.shape.size)))

    def matmul(self, a: Any, w: Any, transpose: bool = False) -> Any:
        op = trt().MatrixOperation
        return self.out(self.net.add_matrix_multiply(a, op.NONE, w, op.TRANSPOSE if transpose else op.NONE))

    def read(self, x: Any, w: Any) -> Any:
        """``x @ W`` in the network's layout."""
        return self.matmul(x, w, transpose=self.shape.linear)

    def tanh(self, x: Any) -> Any:
        return self.out(self.net.add_activation(x, trt().ActivationType.TANH))

    def last_row(self, x: Any) -> Any:
        """The prompt pass's last row: the decode loop's first state."""
        rows, k = x.shape
        return self.out(self.net.add_slice(x, (rows - 1, 0), (1, k), (1, 1)))

    def loop(self, trips: int) -> Any:
        loop = self.net.add_loop()
        loop.add_trip_limit(self.const(np.array(trips, np.int32)), trt().TripLimit.COUNT)
        return loop

    def decode(self, init: Any, step: Callable[[Any], Any]) -> Any:
        """A loop of ``trips`` trips carrying h from ``init``: h <- tanh(step(h)); its last h."""
        loop = self.loop(self.shape.trips)
        h = loop.add_recurrence(init)
        h.set_input(1, self.tanh(step(self.typed(h.get_output(0)))))
        return self.out(loop.add_loop_output(h.get_output(0), trt().LoopOutput.LAST_VALUE))

    def prompt_then_decode(self, w_prompt: Any, w_step: Any) -> None:
        """The decoder: the prompt's pass reads ``w_prompt``, the loop's step ``w_step``."""
        prompt = self.last_row(self.read(self.input(self.shape.prompt), w_prompt))
        self.done(self.decode(prompt, lambda h: self.read(h, w_step)))

    def carried(self, loop: Any, value: Any) -> Any:
        """``value`` carried unchanged by a recurrence of ``loop``; the recurrence's output."""
        r = loop.add_recurrence(value)
        r.set_input(1, r.get_output(0))
        return self.typed(r.get_output(0))

    def done(self, y: Any) -> None:
        self.net.mark_output(y)


# -- Part A: a float32 weight read before and inside a loop ---------------------------------------------------

def outside(n: Net) -> None:
    n.done(n.read(n.input(n.shape.prompt), n.weight()))


def inside(n: Net) -> None:
    w = n.weight()
    n.done(n.decode(n.input(1), lambda h: n.read(h, w)))


def shared(n: Net) -> None:
    w = n.weight()
    n.prompt_then_decode(w, w)


def two_constants(n: Net) -> None:
    values = n.float_weight()
    n.prompt_then_decode(n.weight(values, "W_prompt"), n.weight(values.copy(), "W_step"))


def token_by_token(n: Net) -> None:
    """The floor: one loop of P + trips trips; trip i < P reads prompt row i instead of h (one read of W)."""
    T, p, k = trt(), n.shape.prompt, n.shape.size
    w = n.weight()
    rows = n.out(n.net.add_concatenation([n.input(p), n.const(np.zeros((n.shape.trips, k), np.float32))]))
    shuffle = n.net.add_shuffle(rows)
    shuffle.reshape_dims = (p + n.shape.trips, 1, k)
    loop = n.loop(p + n.shape.trips)
    token = n.out(loop.add_iterator(n.out(shuffle), 0))
    i = loop.add_recurrence(n.const(np.zeros((1, 1), np.int32)))  # [1, 1]: the select's condition broadcasts
    i.set_input(1, n.out(n.net.add_elementwise(n.typed(i.get_output(0)), n.const(np.ones((1, 1), np.int32)),
                                               T.ElementWiseOperation.SUM)))
    in_prompt = n.out(n.net.add_elementwise(i.get_output(0), n.const(np.array([[p]], np.int32)),
                                            T.ElementWiseOperation.LESS))
    h = loop.add_recurrence(n.const(np.zeros((1, k), np.float32)))
    fed = n.out(n.net.add_select(in_prompt, token, n.typed(h.get_output(0))))
    h.set_input(1, n.tanh(n.read(fed, w)))
    n.done(n.out(loop.add_loop_output(h.get_output(0), T.LoopOutput.LAST_VALUE)))


def transposed_prompt(n: Net) -> None:
    """The prompt's read takes W transposed (``x @ Wᵀ``, as a Gemm(transB=1) beside a MatMul)."""
    w = n.weight()
    n.done(n.decode(n.last_row(n.matmul(n.input(n.shape.prompt), w, transpose=True)), lambda h: n.read(h, w)))


def recurrence_carried(n: Net) -> None:
    """The loop body reads W through a recurrence that carries it unchanged."""
    w = n.weight()
    prompt = n.last_row(n.read(n.input(n.shape.prompt), w))
    loop = n.loop(n.shape.trips)
    w_in = n.carried(loop, w)
    h = loop.add_recurrence(prompt)
    h.set_input(1, n.tanh(n.read(n.typed(h.get_output(0)), w_in)))
    n.done(n.out(loop.add_loop_output(h.get_output(0), trt().LoopOutput.LAST_VALUE)))


def through_loop(n: Net) -> None:
    """W carried through a loop of one trip and taken out of it; both MatMuls read that (through an identity:
    a loop's output read directly inside a later loop's body fails with "No nesting relationship")."""
    loop = n.loop(1)
    w = n.out(loop.add_loop_output(n.carried(loop, n.weight()), trt().LoopOutput.LAST_VALUE))
    w = n.out(n.net.add_identity(w))
    n.prompt_then_decode(w, w)


def runtime_scaled(n: Net) -> None:
    """W times a network input (1 at run time): a tensor the builder cannot fold, computed once per run."""
    one = n.typed(n.net.add_input("one", trt().float32, (1, 1)))
    w = n.out(n.net.add_elementwise(n.weight(), one, trt().ElementWiseOperation.PROD))
    n.prompt_then_decode(w, w)


def identity(n: Net) -> None:
    w = n.out(n.net.add_identity(n.weight()))
    n.prompt_then_decode(w, w)


def input_weight(n: Net) -> None:
    """No weight at all (W a network input): what the engine holds besides W."""
    k = n.shape.size
    w = n.typed(n.net.add_input("W", trt().float32, (k, k)))
    n.prompt_then_decode(w, w)


def refittable(n: Net) -> None:
    """(c) with W named and marked refittable (what REFIT_INDIVIDUAL and STRIP_PLAN act on)."""
    values = n.float_weight()
    n.remember(values)
    n.keep.append(values)
    weights = trt().Weights(values)
    w = n.out(n.net.add_constant(values.shape, weights))
    n.net.set_weights_name(weights, "W")
    n.net.mark_weights_refittable("W")
    n.prompt_then_decode(w, w)


# -- Part B: quantized weights ---------------------------------------------------------------------------------

BLOCK = 32


@dataclass(frozen=True)
class Quant:
    weight: str  #: "int8", "fp8", "int4" (or "int4>int8": an INT4 constant widened to INT8 by Q/DQ of scale 1)
    scale: str  #: "tensor", "channel" (W's output axis) or "block" (BLOCK elements along the input axis)
    activation: str  #: "int8" or "fp8": the activation behind Quantize -> Dequantize; "float": weight only

    def label(self) -> str:
        act = "weight only" if self.activation == "float" else f"act {self.activation} Q/DQ"
        scale = f"per block of {BLOCK}" if self.scale == "block" else f"per {self.scale}"
        return f"{self.weight} W {scale}, {act}"


def quantized_weight(n: Net, q: Quant) -> Any:
    """W's quantized constant behind its Dequantize layer (float32 out), in the network's layout."""
    T, k, linear = trt(), n.shape.size, n.shape.linear
    if q.weight == "int8":
        values = n.rng.integers(-127, 128, (k, k), dtype=np.int8)
        n.remember(values)
        w = n.const(values)
    elif q.weight == "fp8":
        raw = (n.rng.standard_normal((k, k)) * 64).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
        n.remember(raw)
        w = n.packed(raw, T.DataType.FP8, raw.size, raw.shape)
    else:
        values = n.rng.integers(-8, 8, (k, k)).astype(np.int8)
        n.remember(values, lambda a: packed_nibbles(a).tobytes())
        w = n.packed(packed_nibbles(values), T.DataType.INT4, values.size, values.shape)
        if q.weight == "int4>int8":
            unit = n.const(np.array(1.0, np.float32))
            w = n.out(n.net.add_quantize(n.out(n.net.add_dequantize(w, unit, T.float32)), unit, T.int8))
    out_axis = 0 if linear else 1
    if q.scale == "tensor":
        scale = n.const(np.array(0.002, np.float32))
    elif q.scale == "channel":
        scale = n.const((n.rng.random(k) * 0.002 + 0.001).astype(np.float32))
    else:
        blocks = (k, k // BLOCK) if linear else (k // BLOCK, k)
        scale = n.const((n.rng.random(blocks) * 0.002 + 0.001).astype(np.float32))
    dq = n.net.add_dequantize(w, scale, T.float32)
    if q.scale == "channel":
        dq.axis = out_axis
    elif q.scale == "block":
        dq.axis = 1 - out_axis
        dq.block_shape = (1, BLOCK) if linear else (BLOCK, 1)
    return n.out(dq)


def quantized_read(n: Net, q: Quant, x: Any, w: Any) -> Any:
    if q.activation != "float":
        T = trt()
        scale = n.const(np.array(0.02, np.float32))
        quantized = n.out(n.net.add_quantize(x, scale, getattr(T.DataType, q.activation.upper())))
        x = n.out(n.net.add_dequantize(quantized, scale, T.float32))
    return n.read(x, w)


def quantized(q: Quant, where: str) -> Callable[[Net], None]:
    def make(n: Net) -> None:
        w = quantized_weight(n, q)
        if where == "before":
            n.done(quantized_read(n, q, n.input(n.shape.prompt), w))
            return
        init = n.input(1) if where == "inside" else n.last_row(quantized_read(n, q, n.input(n.shape.prompt), w))
        n.done(n.decode(init, lambda h: quantized_read(n, q, h, w)))
    return make


QUANTS = [
    Quant("int8", "channel", "int8"), Quant("int8", "tensor", "int8"), Quant("int8", "channel", "float"),
    Quant("int8", "block", "float"),
    Quant("fp8", "channel", "fp8"), Quant("fp8", "tensor", "fp8"), Quant("fp8", "block", "float"),
    Quant("int4", "channel", "float"), Quant("int4", "tensor", "float"),
    Quant("int4", "block", "float"), Quant("int4", "block", "int8"), Quant("int4>int8", "block", "float"),
]
PLACES = {"before": "before the loop", "inside": "inside the loop", "both": "both"}


# -- the cases and their builds -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    part: str
    name: str
    make: Callable[[Net], None]
    flags: tuple[str, ...] = ()
    prompt: int | None = None  #: overrides the prompt length
    linear: bool = False


def cases() -> list[Case]:
    decoder = [("(a) W before the loop only", outside), ("(b) W inside the loop only", inside),
               ("(c) one constant, before and inside", shared), ("(d) two constants of equal values", two_constants),
               ("(e) floor: the loop reads the prompt token by token", token_by_token)]
    a = [Case("A", f"[in, out] {name}", make) for name, make in decoder]
    a += [Case("A", "[in, out] (c) P=1: both reads [1, K]", shared, prompt=1),
          Case("A", "[in, out] (d) P=1: both reads [1, K]", two_constants, prompt=1),
          Case("A", "[in, out] (c), the prompt reads W transposed", transposed_prompt)]
    a += [Case("A", f"[out, in] {name}", make, linear=True) for name, make in decoder]
    a += [Case("A", f"[in, out] (c), {name}", make) for name, make in (
        ("W carried by a recurrence", recurrence_carried), ("W passed out of a loop of one trip", through_loop),
        ("W times a runtime 1", runtime_scaled), ("W through an identity layer", identity),
        ("no weight: W a network input", input_weight))]
    flags = [("REFIT_INDIVIDUAL",), ("REFIT",), ("REFIT_IDENTICAL",), ("STRIP_PLAN",),
             ("REFIT_IDENTICAL", "STRIP_PLAN"), ("WEIGHT_STREAMING",)]
    a += [Case("A", f"[in, out] (c) + {'+'.join(f)}", shared, f) for f in flags]
    a += [Case("A", "[in, out] (c), W marked refittable, + REFIT_INDIVIDUAL", refittable, ("REFIT_INDIVIDUAL",))]
    b = [Case("B", f"[{layout}] {q.label()}: {place}", quantized(q, where), linear=layout == "out, in")
         for q in QUANTS for layout in ("in, out", "out, in") for where, place in PLACES.items()]
    return a + b


@dataclass
class Row:
    part: str
    network: str
    engine_bytes: int | None
    ratio: float | None  #: engine bytes over W's float32 bytes
    copies: tuple[int, int] | None  #: whole copies of W's stored bytes in the engine: as given, transposed
    seconds: float
    error: str = ""


class _Lines(logging.Handler):
    """TensorRT's output lines: Myelin explains an error on the lines after its first ("Error is:", reason)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def build(case: Case, shape: Shape) -> Row:
    shape = replace(shape, linear=case.linear, prompt=case.prompt or shape.prompt)
    lines = _Lines()
    logger = logging.getLogger("loopc.tensorrt")
    logger.addHandler(lines)
    logger.setLevel(logging.DEBUG)
    session = Session()
    network = Net(session, shape)
    case.make(network)
    cfg = builder_config(session)
    for flag in case.flags:
        cfg.set_flag(getattr(trt().BuilderFlag, flag))
    start = time.perf_counter()
    try:
        blob = build_serialized(session, network.net, cfg)
    except LoopcError as exc:
        return Row(case.part, case.name, None, None, None, time.perf_counter() - start, _reason(str(exc), lines.lines))
    seconds = time.perf_counter() - start
    found = (blob.count(network.needles[0]), blob.count(network.needles[1])) if network.needles else None
    return Row(case.part, case.name, len(blob), len(blob) / (4 * shape.size**2), found, seconds)


def isolated(case: Case, shape: Shape) -> Row:
    """:func:`build` in a forked process: TensorRT-RTX's builder can crash (SIGSEGV) on networks it accepted."""
    return in_fork(lambda: build(case, shape),
                   lambda how: Row(case.part, case.name, None, None, None, 0.0, f"the builder's process died ({how})"))


def _reason(message: str, lines: Sequence[str]) -> str:
    """TensorRT's reason in one line: Myelin's explanation when it gave one, else the error's own text."""
    for i, line in enumerate(lines[:-1]):
        if line.strip() == "Error is:":
            return lines[i + 1].split(" In ")[0].strip()
    text = message.removeprefix("TensorRT could not build the network: ")
    return text.split("Error Code ")[-1][:160]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1024, help="W is [size, size] (a multiple of 32)")
    parser.add_argument("--prompt", type=int, default=16, help="rows of the prompt's pass before the loop")
    parser.add_argument("--trips", type=int, default=4, help="trips of the decode loop")
    parser.add_argument("-k", default="", help="only networks whose name contains this")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    shape = Shape(args.size, args.prompt, args.trips)
    T = trt()
    print(f"{T.__name__} {T.__version__}; W [{shape.size}, {shape.size}], float32 {4 * shape.size**2:,} bytes; "
          f"prompt P={shape.prompt} rows, {shape.trips} decode trips.\n"
          f"BuilderFlag: {', '.join(n for n in dir(T.BuilderFlag) if n.isupper())}")
    rows: list[Row] = []
    part = ""
    for case in cases():
        if args.k not in case.name:
            continue
        if case.part != part:
            part = case.part
            print(f"\n**{part}: {'float32' if part == 'A' else 'quantized'} W**\n")
            print("| network | engine bytes | ×W f32 | copies found: W, Wᵀ | build s | TensorRT's refusal |")
            print("|---|---:|---:|---:|---:|---|")
        row = isolated(case, shape)
        rows.append(row)
        size = f"{row.engine_bytes:,}" if row.engine_bytes is not None else "—"
        ratio = f"{row.ratio:.3f}" if row.ratio is not None else "—"
        copies = f"{row.copies[0]}, {row.copies[1]}" if row.copies is not None else "—"
        print(f"| {row.network} | {size} | {ratio} | {copies} | {row.seconds:.2f} | {row.error} |", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How many copies of a weight a TensorRT-RTX engine stores, when a loop and the code before it both read it.

    python benchmarks/weight_storage.py [--size 1024] [--prompt 16] [--trips 4] [--width 512] [--vocab 4097]
        [--part ABCD] [-k TEXT] [--json FILE]

A decoder reads each weight twice: the prompt's pass before the loop ([P, K] @ W) and the decode step inside it
([1, K] @ W). Small networks are built here directly with TensorRT's network API, ahead of time for loopc's
default target, and each serialized engine is measured: its size, the copies of W found in it byte for byte,
as the network's constant holds it (``W``) and transposed (``Wᵀ``), and the copies of W's values found in any
order (``in any order``: a sample of W's runs of 16 bytes, along its rows and along its columns, searched
for; a copy with rows or columns permuted, split in blocks or padded counts 1). An engine also holds bytes that
are not W (kernels, graph): tens of KiB for one MatMul, about 2 MiB for the token-by-token loop whatever K is,
more for more trips; the copies found are the count to trust.

An engine carries the text of the programs TensorRT-RTX's Myelin compiled the network into (no GPU is needed
to read it, unlike TensorRT's engine inspector): the table gives their launches (and how many are products:
a trip Myelin peels off a loop counts twice) and the shapes, as stored, of the constants they hold, each once.

Layout ``[in, out]``: the constant is W and ``y = x @ W``. Layout ``[out, in]``: the constant is Wᵀ (the
layout of a ``torch.nn.Linear`` weight, ONNX ``Gemm(transB=1)``) and both MatMuls read it with
``MatrixOperation.TRANSPOSE``, so ``y`` is the same.

* Part A (float32, W [size, size]): W before the loop only, inside it only, both (one constant, two equal
  constants), the floor (the loop reads the prompt token by token: one read of W), rows with ``P=1`` (both reads
  [1, K]), then constructions that might make TensorRT keep one copy (W carried by a recurrence, passed out of a
  loop, scaled by a runtime 1, through an identity) and the builder flags that concern weights.
* Part B (quantized): W an INT8, FP8 or INT4 constant behind a Dequantize layer (per tensor, per output channel,
  per block of 32 along the input axis), the activation behind Quantize -> Dequantize (INT8 or FP8, per tensor)
  or float (weight only), before the loop, inside it and both.
* Part C (W the QKV weight [3D, D] of attention, D = ``--width``, heads of 64): a decoder's attention as loopc
  builds GPT-2's (``benchmarks/decoder_weights.py``; the prompt's causal attention fills a K/V cache, each trip
  projects its token, writes the cache, attends over it), in loopc's form (one product, its bias, three
  Slices, each a Reshape to [1, S, H, 64] and a Transpose) before the loop, inside it and both, then other
  forms that compute the same Q, K and V, at both places.
* Part D (W a tied embedding table [V, D], V = ``--vocab``): a greedy decoder whose Gathers and head read the
  one table, V odd (GPT-2's 50257 is) or even, held as one constant, two equal ones, transposed, or padded.

What it shows (TensorRT-RTX 1.7): when the products' output is split by Slices into [1, H, S, 64] heads
(attention after or not), Myelin folds the Slices and transposes into each product, which then reads a copy of W
of its own with its column blocks reordered, [in, out] for the prompt's and [out, in] for the step's, and stores
no other: two copies. W is stored once when
the heads are split after one Reshape to [1, S, 3H, 64] and one Transpose ("one product, heads [1, 3H, S, 64]
split after", fewer launches than loopc's form), when W is a batch [3, D, D] read by one batched product, when
the product's sum is multiplied by a runtime 1, without the batch axis, and when W is INT8; not with three
weights or three Slices of W (Myelin merges them back), an identity or a Cast before or after the product, nor
an IAttention for the prompt. The head's product pads an odd V to V + 1 output rows, so a tied table of odd V
is stored twice (the Gathers' table and the head's padded copy), once when V is even or the network holds it
padded to V + 1 rows with the logits sliced back ("V odd, held padded to V + 1 rows").

``×W f32`` is the engine's bytes over W's float32 bytes: one float copy is about 1, one INT8 or FP8 copy about
1/4, one INT4 copy about 1/8. Each build runs in a forked process: a builder crash is a row, not the end.
"""

from __future__ import annotations

import argparse
import json
import logging
import pathlib
import re
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
    width: int = 512  #: Parts C and D: the model's width (heads of HEAD)
    vocab: int = 4097  #: Part D: the embedding table's rows


class Net:
    """One network under construction, the arrays it needs until it is built (TensorRT does not copy them),
    and W's stored bytes as given and transposed, to find them in the engine."""

    def __init__(self, session: Session, shape: Shape) -> None:
        self.net, self.shape, self.keep = session.create_network(), shape, session.keep_alive
        self.rng = np.random.default_rng(0)
        self.needles: tuple[bytes, bytes] | None = None
        self.held: np.ndarray | None = None  #: W as held (2-D), for the search in any order; None for INT4
        self.elements = shape.size**2  #: W's elements (the ratio's float32 bytes are 4 per element)

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
            self.held = held if to_bytes is np.ndarray.tobytes else None
            self.elements = held.size

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


# -- Part C: the QKV weight, its product's output split into attention heads ---------------------------------

HEAD = 64  #: the head width of Part C's attention


class Block:
    """Part C's network pieces: a decoder's attention (width D, D / HEAD heads) on ``lead + (rows, D)`` activations
    (``lead`` is ``(1,)``, the batch axis an ONNX GPT-2 block has, or ``()``); heads are ``lead + (H, rows, HEAD)``."""

    def __init__(self, n: Net, lead: tuple[int, ...] = (1,)) -> None:
        self.n, self.lead, self.d = n, lead, n.shape.width
        self.h = self.d // HEAD

    def shuffle(self, x: Any, dims: Sequence[int] | None = None, first: Sequence[int] | None = None) -> Any:
        """x transposed by ``first``, then reshaped to ``dims``."""
        layer = self.n.net.add_shuffle(x)
        if first is not None:
            layer.first_transpose = tuple(first)
        if dims is not None:
            layer.reshape_dims = tuple(dims)
        return self.n.out(layer)

    def slice(self, x: Any, axis: int, start: int, length: int) -> Any:
        shape = list(x.shape)
        begin = [0] * len(shape)
        begin[axis], shape[axis] = start, length
        return self.n.out(self.n.net.add_slice(x, tuple(begin), tuple(shape), (1,) * len(shape)))

    def ew(self, a: Any, b: Any, op: str) -> Any:
        return self.n.out(self.n.net.add_elementwise(a, b, getattr(trt().ElementWiseOperation, op)))

    def const(self, array: np.ndarray, heads: bool = False) -> Any:
        """A constant broadcast against the activations, or the heads (leading 1s up to their rank)."""
        rank = len(self.lead) + (3 if heads else 2)
        return self.n.const(array.reshape((1,) * (rank - array.ndim) + array.shape))

    def input(self, rows: int, name: str) -> Any:
        return self.n.typed(self.n.net.add_input(name, trt().float32, self.lead + (rows, self.d)))

    def qkv_values(self) -> np.ndarray:
        """W's values, [out, in]: three blocks of D output channels (Q, K, V)."""
        d = self.d
        return (self.n.rng.standard_normal((3 * d, d)) / np.sqrt(d)).astype(np.float32)

    def product(self, x: Any, w: Any, transpose: bool = True) -> Any:
        """``x @ Wᵀ`` (or ``x @ W``) as loopc emits a MatMul of a 2-D weight: the weight reshaped to x's rank."""
        if len(w.shape) < len(x.shape):
            w = self.shuffle(w, (1,) * (len(x.shape) - len(w.shape)) + tuple(w.shape))
        return self.n.matmul(x, w, transpose)

    def heads(self, part: Any) -> Any:
        """``lead + (rows, D)`` as ``lead + (H, rows, HEAD)``: an ONNX Reshape then Transpose."""
        rows = part.shape[-2]
        split = self.shuffle(part, self.lead + (rows, self.h, HEAD))
        perm = (0, 2, 1, 3) if self.lead else (1, 0, 2)
        return self.shuffle(split, first=perm)

    def merged(self, ctx: Any) -> Any:
        rows = ctx.shape[-2]
        return self.shuffle(ctx, self.lead + (rows, self.d), first=(0, 2, 1, 3) if self.lead else (1, 0, 2))

    def attend(self, q: Any, k: Any, v: Any, mask: Any) -> Any:
        """softmax(q kᵀ / sqrt(HEAD) + mask) v, as loopc converts an ONNX MatMul-Mul-Add-Softmax-MatMul."""
        n, op = self.n, trt().MatrixOperation
        scores = n.out(n.net.add_matrix_multiply(q, op.NONE, k, op.TRANSPOSE))
        scores = self.ew(scores, self.const(np.full((1, 1), 1 / np.sqrt(HEAD), np.float32), heads=True), "PROD")
        scores = self.ew(scores, mask, "SUM")
        softmax = n.net.add_softmax(scores)
        softmax.axes = 1 << (len(scores.shape) - 1)
        return n.out(n.net.add_matrix_multiply(n.out(softmax), op.NONE, v, op.NONE))


#: A way of computing Q, K and V: given the block, its weights made once, a function of x to (q, k, v) in heads.
Project = Callable[[Block], Callable[[Any], tuple[Any, Any, Any]]]


def one_product(b: Block, linear: bool = True, weight: Callable[[Block], Any] | None = None,
                between: Callable[[Block], Callable[[Any], Any]] | None = None
                ) -> Callable[[Any], tuple[Any, Any, Any]]:
    """loopc's form of GPT-2's c_attn: one [3D, D] weight ([out, in] read transposed, or ``linear=False``:
    [in, out]), one product, its bias, three Slices, the heads. ``weight(b)`` makes what the products read
    instead of a float constant, ``between(b)`` what the product's sum goes through before the Slices."""
    if weight is not None:
        w = weight(b)
    else:
        values = b.qkv_values()
        w = b.n.weight(values if linear else np.ascontiguousarray(values.T))
    after = between(b) if between is not None else None
    bias = b.const((b.n.rng.standard_normal(3 * b.d) * 0.02).astype(np.float32))

    def project(x: Any) -> tuple[Any, Any, Any]:
        qkv = b.ew(b.product(x, w, linear), bias, "SUM")
        qkv = after(qkv) if after is not None else qkv
        q, k, v = (b.heads(b.slice(qkv, -1, j * b.d, b.d)) for j in range(3))
        return q, k, v
    return project


def three_products(b: Block, sliced: bool = False) -> Callable[[Any], tuple[Any, Any, Any]]:
    """Q, K and V each from a [D, D] weight of their own (three constants, or three Slices of the one [3D, D])."""
    values = b.qkv_values()
    b.n.remember(values)
    if sliced:
        whole = b.n.const(values)
        ws = [b.slice(whole, 0, j * b.d, b.d) for j in range(3)]
    else:
        ws = [b.n.const(values[j * b.d:(j + 1) * b.d].copy()) for j in range(3)]
    biases = [b.const((b.n.rng.standard_normal(b.d) * 0.02).astype(np.float32)) for _ in range(3)]

    def project(x: Any) -> tuple[Any, Any, Any]:
        q, k, v = (b.heads(b.ew(b.product(x, w), bias, "SUM")) for w, bias in zip(ws, biases))
        return q, k, v
    return project


def heads_then_split(b: Block) -> Callable[[Any], tuple[Any, Any, Any]]:
    """One product; its [.., rows, 3D] output reshaped to 3H heads and transposed once, then split along heads."""
    values = b.qkv_values()
    w = b.n.weight(values)
    bias = b.const((b.n.rng.standard_normal(3 * b.d) * 0.02).astype(np.float32))

    def project(x: Any) -> tuple[Any, Any, Any]:
        qkv = b.ew(b.product(x, w), bias, "SUM")
        rows = qkv.shape[-2]
        split = b.shuffle(qkv, b.lead + (rows, 3 * b.h, HEAD))
        heads = b.shuffle(split, first=(0, 2, 1, 3) if b.lead else (1, 0, 2))
        q, k, v = (b.slice(heads, -3, j * b.h, b.h) for j in range(3))
        return q, k, v
    return project


def batched_product(b: Block) -> Callable[[Any], tuple[Any, Any, Any]]:
    """W held as a batch [3, D, D] ([out, in] each, the bytes of the [3D, D] weight), one batched product
    ([1, rows, D] against [3, D, D]: [3, rows, D]), then the batch's three matrices to heads."""
    values = b.qkv_values()
    b.n.remember(values)
    w = b.n.const(values.reshape(3, b.d, b.d))
    bias = b.n.const((b.n.rng.standard_normal((3, 1, b.d)) * 0.02).astype(np.float32))

    def project(x: Any) -> tuple[Any, Any, Any]:
        qkv = b.ew(b.n.matmul(x, w, transpose=True), bias, "SUM")
        q, k, v = (b.heads(b.slice(qkv, 0, j, 1)) for j in range(3))
        return q, k, v
    return project


def int8_weight(b: Block) -> Any:
    """W an INT8 constant [3D, D] behind a Dequantize, per output channel (weight only)."""
    T = trt()
    values = b.n.rng.integers(-127, 128, (3 * b.d, b.d), dtype=np.int8)
    b.n.remember(values)
    w = b.n.const(values)
    dq = b.n.net.add_dequantize(w, b.n.const((b.n.rng.random(3 * b.d) * 0.002 + 0.001).astype(np.float32)),
                                T.float32)
    dq.axis = 0
    return b.n.out(dq)


def times_runtime_one(b: Block) -> Callable[[Any], Any]:
    """x times a network input (1 at run time): a layer the builder cannot fold away."""
    one = b.n.typed(b.n.net.add_input("one", trt().float32, (1,) * (len(b.lead) + 2)))
    return lambda x: b.ew(x, one, "PROD")


def through_identity(b: Block) -> Callable[[Any], Any]:
    return lambda x: b.n.out(b.n.net.add_identity(x))


def through_cast(b: Block) -> Callable[[Any], Any]:
    """A Cast to float32 of a float32 tensor."""
    return lambda x: b.n.out(b.n.net.add_cast(x, trt().float32))


def attention_decoder(project: Project, where: str, lead: tuple[int, ...] = (1,), attention: str = "matmul"
                      ) -> Callable[[Net], None]:
    """A decoder's attention as loopc builds GPT-2's (``benchmarks/decoder_weights.py``): the prompt's causal
    attention before the loop fills a K/V cache of P + trips positions; each trip projects h, writes its K/V at
    its position (a one-hot blend), attends over the cache and carries tanh(context). ``attention``: ``matmul``
    (MatMul-Softmax-MatMul), ``iattention`` (the prompt's through TensorRT's IAttention layer), ``none`` (q + k + v:
    no attention follows the heads)."""
    def make(n: Net) -> None:
        b = Block(n, lead)
        qkv = project(b)
        p, trips, h = n.shape.prompt, n.shape.trips, b.h
        cache = p + trips

        def attend(q: Any, k: Any, v: Any, keys: Any, values: Any, mask: Any) -> Any:
            """The context over ``keys`` and ``values`` (the prompt's own k and v, or the cache); q + k + v
            when no attention follows."""
            if attention == "none":
                return b.merged(b.ew(b.ew(q, k, "SUM"), v, "SUM"))
            return b.merged(b.attend(q, keys, values, mask))

        if where == "inside":
            init = b.input(1, "h")
            k0 = v0 = b.const(np.zeros((h, cache, HEAD), np.float32), heads=True)
        else:
            q, k, v = qkv(b.input(p, "x"))
            if attention == "iattention":  # TensorRT's attention is unscaled: q is scaled first
                q = b.ew(q, b.const(np.full((1, 1), 1 / np.sqrt(HEAD), np.float32), heads=True), "PROD")
                layer = n.net.add_attention_v2(q, k, v, trt().AttentionNormalizationOp.SOFTMAX,
                                              trt().CausalMaskKind.UPPER_LEFT)
                layer.decomposable = True
                y = b.merged(n.out(layer))
            else:
                y = attend(q, k, v, k, v, b.const(np.triu(np.full((p, p), -1e4, np.float32), 1), heads=True))
            if where == "before":
                n.done(y)
                return
            init = b.slice(y, -2, p - 1, 1)
            pad = b.const(np.zeros((h, trips, HEAD), np.float32), heads=True)
            k0, v0 = (n.out(_along(n.net.add_concatenation([t, pad]), len(lead) + 1)) for t in (k, v))
        loop = n.loop(trips)
        state, cached_k, cached_v = (loop.add_recurrence(t) for t in (init, k0, v0))
        at = loop.add_recurrence(n.const(np.full((1,) * (len(lead) + 3), p, np.int32)))
        now = n.typed(at.get_output(0))
        at.set_input(1, b.ew(now, n.const(np.ones((1,) * (len(lead) + 3), np.int32)), "SUM"))
        slots = n.const(np.arange(cache, dtype=np.int32).reshape((1,) * (len(lead) + 1) + (cache, 1)))
        onehot = n.out(n.net.add_cast(b.ew(slots, now, "EQUAL"), trt().float32))
        keep = b.ew(n.const(np.ones((1,) * (len(lead) + 3), np.float32)), onehot, "SUB")
        mask = b.ew(n.out(n.net.add_cast(b.ew(slots, now, "GREATER"), trt().float32)),
                    n.const(np.full((1,) * (len(lead) + 3), -1e4, np.float32)), "PROD")
        mask = b.shuffle(mask, (1,) * (len(lead) + 2) + (cache,))
        q, k, v = qkv(n.typed(state.get_output(0)))
        written = [b.ew(b.ew(n.typed(r.get_output(0)), keep, "PROD"), b.ew(t, onehot, "PROD"), "SUM")
                   for r, t in ((cached_k, k), (cached_v, v))]
        cached_k.set_input(1, written[0])
        cached_v.set_input(1, written[1])
        state.set_input(1, n.tanh(attend(q, k, v, written[0], written[1], mask)))
        n.done(n.out(loop.add_loop_output(state.get_output(0), trt().LoopOutput.LAST_VALUE)))
    return make


def _along(layer: Any, axis: int) -> Any:
    layer.axis = axis
    return layer


# -- Part D: a tied embedding, read by the Gathers and by the head's products -----------------------------------

def tied_decoder(table: str = "one", pad: bool = False) -> Callable[[Net], None]:
    """A greedy decoder of an embedding table [V, D] tied to its head: the prompt's tokens are gathered before the
    loop, each trip gathers the last token; the head's product (h against the table transposed) and an argmax pick
    the next token, before the loop and in it. ``table``: ``one`` constant for the Gathers and the head, ``two``
    constants of equal values, ``transposed`` (held [D, V]: the Gathers read columns, the head reads it as
    [in, out]). ``pad``: the network holds V + 1 rows (the last 0) and slices the logits back to V."""
    def make(n: Net) -> None:
        T, v, d, p = trt(), n.shape.vocab, n.shape.width, n.shape.prompt
        values = (n.rng.standard_normal((v, d)) * 0.02).astype(np.float32)
        n.remember(values.T if table == "transposed" else values)
        held = np.concatenate([values, np.zeros((1, d), np.float32)]) if pad else values
        if table == "transposed":
            embed = head = n.const(np.ascontiguousarray(held.T))
        else:
            embed = n.const(held)
            head = n.const(held.copy()) if table == "two" else embed

        def gather(tokens: Any) -> Any:
            if table == "transposed":
                return _rows(n, n.out(n.net.add_gather(embed, tokens, 1)))
            return n.out(n.net.add_gather(embed, tokens, 0))

        def next_token(h: Any) -> Any:
            logits = n.matmul(h, head, transpose=table != "transposed")
            if pad:
                logits = n.out(n.net.add_slice(logits, (0, 0), (1, v), (1, 1)))
            top = n.net.add_topk(logits, T.TopKOperation.MAX, 1, 1 << 1)
            token = n.net.add_shuffle(n.typed(top.get_output(1)))
            token.reshape_dims = (1,)
            return n.out(token)

        prompt = n.tanh(gather(n.typed(n.net.add_input("tokens", T.int32, (p,)))))
        first = next_token(n.last_row(prompt))
        loop = n.loop(n.shape.trips)
        token = loop.add_recurrence(first)
        token.set_input(1, next_token(n.tanh(gather(n.typed(token.get_output(0))))))
        n.done(n.out(loop.add_loop_output(token.get_output(0), T.LoopOutput.LAST_VALUE)))
    return make


def _rows(n: Net, x: Any) -> Any:
    """A [D, k] tensor as [k, D]."""
    layer = n.net.add_shuffle(x)
    layer.first_transpose = (1, 0)
    return n.out(layer)


# -- the cases and their builds -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    part: str
    name: str
    make: Callable[[Net], None]
    flags: tuple[str, ...] = ()
    prompt: int | None = None  #: overrides the prompt length
    linear: bool = False
    vocab: int = 0  #: added to the vocabulary (Part D)


def qkv_cases() -> list[Case]:
    """Part C: loopc's form at each place, then each other form at both places (the decoder)."""
    loopc = [Case("C", f"[out, in] loopc's form (one product, 3 Slices, heads [1, H, S, 64]): {place}",
                  attention_decoder(one_product, where)) for where, place in PLACES.items()]
    loopc.append(Case("C", "[in, out] loopc's form: both", attention_decoder(
        lambda b: one_product(b, linear=False), "both")))
    forms: list[tuple[str, Project, dict[str, Any]]] = [
        ("no attention after the heads (q + k + v)", one_product, {"attention": "none"}),
        ("heads [H, S, 64]: no batch axis (x [S, D], W 2-D)", one_product, {"lead": ()}),
        ("the prompt's attention an IAttention layer", one_product, {"attention": "iattention"}),
        ("three weights [D, D], three products", three_products, {}),
        ("three Slices of the weight, three products", lambda b: three_products(b, sliced=True), {}),
        ("one product, heads [1, 3H, S, 64] split after", heads_then_split, {}),
        ("W a batch [3, D, D], one batched product", batched_product, {}),
        ("the product's sum through an identity layer", lambda b: one_product(b, between=through_identity), {}),
        ("the product's sum through a Cast to float32", lambda b: one_product(b, between=through_cast), {}),
        ("the product's sum times a runtime 1", lambda b: one_product(b, between=times_runtime_one), {}),
        ("W through an identity layer", lambda b: one_product(
            b, weight=lambda b: through_identity(b)(b.n.weight(b.qkv_values()))), {}),
        ("W through a Cast to float32", lambda b: one_product(
            b, weight=lambda b: through_cast(b)(b.n.weight(b.qkv_values()))), {}),
        ("W an INT8 constant behind a Dequantize (per channel)", lambda b: one_product(b, weight=int8_weight), {}),
    ]
    return loopc + [Case("C", f"{name}: both", attention_decoder(project, "both", **kw)) for name, project, kw in forms]


def tied_cases() -> list[Case]:
    """Part D: a tied table of V rows, V odd (GPT-2's 50257 is), even, and padded to even by the network."""
    return [Case("D", "V odd: one constant for the Gathers and the head", tied_decoder()),
            Case("D", "V even (V + 1): one constant", tied_decoder(), vocab=1),
            Case("D", "V odd: two constants of equal values", tied_decoder("two")),
            Case("D", "V odd: held [D, V] (Gathers along axis 1, the head reads [in, out])",
                 tied_decoder("transposed")),
            Case("D", "V odd, held padded to V + 1 rows (a 0 row), the logits sliced to V", tied_decoder(pad=True)),
            Case("D", "V odd, held [D, V + 1] padded, the logits sliced to V", tied_decoder("transposed", pad=True))]


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
    return a + b + qkv_cases() + tied_cases()


@dataclass
class Row:
    part: str
    network: str
    engine_bytes: int | None
    ratio: float | None  #: engine bytes over W's float32 bytes
    copies: tuple[int, int] | None  #: whole copies of W's stored bytes in the engine: as given, transposed
    seconds: float
    error: str = ""
    #: copies of W's values in the engine in any order that keeps runs of RUN bytes along W's rows (the layout
    #: held, rows permuted or not), along its columns (the transposed layout); None for INT4
    anywhere: tuple[float, float] | None = None
    kernels: tuple[int, int] | None = None  #: the launches of Myelin's programs, and how many are products
    payloads: str = ""  #: the shapes, as stored, of the constants of 64 KiB and more the engine holds


#: The bytes of W's rows or columns searched for in any order (a run of 4 float32 elements, 16 INT8 or FP8).
RUN = 16
_SAMPLE = 1 << 12
_MIX = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93], np.uint64)


def _keys(words: np.ndarray) -> np.ndarray:
    """A 64-bit key of each run of RUN // 4 consecutive 32-bit words (along the last axis, each start)."""
    width = RUN // 4
    count = words.shape[-1] - width + 1
    key = np.zeros(words.shape[:-1] + (count,), np.uint64)
    for j in range(width):
        key += words[..., j:j + count].astype(np.uint64) * _MIX[j]
    return key


def found_anywhere(blob: bytes, held: np.ndarray) -> tuple[float, float]:
    """How many times ``held``'s (2-D) values are in ``blob`` whatever their order, provided runs of RUN bytes of
    its rows stay together (first) or runs of its columns do (second): the hits of a sample of such runs, over
    the sample. A layout that permutes rows or columns, splits W in blocks, pads or interleaves it still counts."""
    rng = np.random.default_rng(0)
    samples = []
    for matrix in (held, held.T):
        rows = np.ascontiguousarray(matrix).view(np.uint8)
        whole = rows.shape[1] - rows.shape[1] % RUN
        runs = np.ascontiguousarray(rows[:, :whole]).reshape(-1, RUN).view(np.uint32)
        picked = runs[rng.choice(len(runs), min(len(runs), _SAMPLE), replace=False)]
        samples.append(np.sort(_keys(picked).reshape(-1)))
    hits = [0, 0]
    for align in range(4):
        table = _keys(np.frombuffer(blob, np.uint32, (len(blob) - align) // 4, align))
        for i, keys in enumerate(samples):
            at = np.minimum(np.searchsorted(keys, table), len(keys) - 1)
            hits[i] += int(np.count_nonzero(keys[at] == table))
    return hits[0] / len(samples[0]), hits[1] / len(samples[1])


def launches(blob: bytes) -> tuple[int, int]:
    """The launches of the top-level programs of TensorRT-RTX's Myelin, read from the program text an engine
    carries (jumps not counted), and how many of them are products (``fully_connected``, and the
    ``runtime_fusion`` of a product with its epilogue)."""
    count = products = 0
    for program in blob.split(b"header {")[1:]:
        header = program[:program.find(b"\n}")]
        main = re.search(rb"\nmain \{\n(.*?)\n\}", program, re.S)
        if main is None or b"name=runtime-fusion-consts" in header and b"-consts_literal" not in header:
            continue  # the body of a runtime fusion, launched by its program
        for kind, name in re.findall(rb"^\s*([a-z_]+)=\{ name=\"?([^\" ]*)", main.group(1), re.M):
            count += kind not in (b"cjmp", b"jmp")
            products += kind == b"fully_connected" or kind == b"runtime_fusion" and name.startswith(b"__myl_Fc")
    return count, products


def payloads(blob: bytes) -> list[tuple[int, str]]:
    """The constants Myelin's programs store, each once however many tensors read it: bytes, and shape as stored
    (slowest axis first, axes of 1 left out, the type when not float32); largest first."""
    found: dict[tuple[bytes, bytes], tuple[int, str]] = {}
    for size, dims, offset, region, order, kind in re.findall(
            rb"tensor=\{[^\n]*?const_payload_size=(\d+) dims=\{([ 0-9]*)\}[^\n]*? offset=(\d+)[^\n]*? region=(\S+)"
            rb"[^\n]*? stride_order=\{([ 0-9]*)\}[^\n]*? type=(\w+)", blob):
        stored = sorted(zip(map(int, order.split()), map(int, dims.split())), reverse=True)
        shape = "×".join(str(d) for _, d in stored if d != 1) + ("" if kind == b"float" else f" {kind.decode()}")
        found[(region, offset)] = (int(size), shape)
    return sorted(found.values(), reverse=True)


class _Lines(logging.Handler):
    """TensorRT's output lines: Myelin explains an error on the lines after its first ("Error is:", reason)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def build(case: Case, shape: Shape) -> Row:
    shape = replace(shape, linear=case.linear, prompt=case.prompt or shape.prompt, vocab=shape.vocab + case.vocab)
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
    anywhere = found_anywhere(blob, network.held) if network.held is not None else None
    large = ", ".join(shape for size, shape in payloads(blob) if size >= 1 << 16)
    return Row(case.part, case.name, len(blob), len(blob) / (4 * network.elements), found, seconds, "", anywhere,
               launches(blob), large)


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


PARTS = {"A": "float32 W", "B": "quantized W", "C": "W the QKV weight [3D, D] of a decoder's attention",
         "D": "W a tied embedding table [V, D]"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1024, help="W is [size, size] (a multiple of 32)")
    parser.add_argument("--prompt", type=int, default=16, help="rows of the prompt's pass before the loop")
    parser.add_argument("--trips", type=int, default=4, help="trips of the decode loop")
    parser.add_argument("--width", type=int, default=512, help=f"Parts C and D: D (a multiple of {HEAD})")
    parser.add_argument("--vocab", type=int, default=4097, help="Part D: V, odd (rows of the table)")
    parser.add_argument("--part", default="ABCD", help="only these parts")
    parser.add_argument("-k", default="", help="only networks whose name contains this")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    if args.width % HEAD or args.vocab % 2 == 0:
        parser.error(f"--width must be a multiple of {HEAD}, --vocab odd")
    shape = Shape(args.size, args.prompt, args.trips, width=args.width, vocab=args.vocab)
    T = trt()
    print(f"{T.__name__} {T.__version__}; A, B: W [{shape.size}, {shape.size}]; C: D={shape.width} "
          f"({shape.width // HEAD} heads of {HEAD}); D: V={shape.vocab}, D={shape.width}; "
          f"prompt P={shape.prompt} rows, {shape.trips} decode trips.\n"
          f"BuilderFlag: {', '.join(n for n in dir(T.BuilderFlag) if n.isupper())}")
    rows: list[Row] = []
    part = ""
    for case in cases():
        if args.k not in case.name or case.part not in args.part:
            continue
        if case.part != part:
            part = case.part
            print(f"\n**{part}: {PARTS[part]}**\n")
            print("| network | engine bytes | ×W f32 | copies found: W, Wᵀ | in any order: rows, columns "
                  "| Myelin launches (products) | payloads ≥ 64 KiB, as stored | build s | TensorRT's refusal |")
            print("|---|---:|---:|---:|---:|---:|---|---:|---|")
        row = isolated(case, shape)
        rows.append(row)
        size = f"{row.engine_bytes:,}" if row.engine_bytes is not None else "—"
        ratio = f"{row.ratio:.3f}" if row.ratio is not None else "—"
        copies = f"{row.copies[0]}, {row.copies[1]}" if row.copies is not None else "—"
        anywhere = f"{row.anywhere[0]:.2f}, {row.anywhere[1]:.2f}" if row.anywhere is not None else "—"
        kernels = f"{row.kernels[0]} ({row.kernels[1]})" if row.kernels is not None else "—"
        print(f"| {row.network} | {size} | {ratio} | {copies} | {anywhere} | {kernels} | {row.payloads} "
              f"| {row.seconds:.2f} | {row.error} |", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

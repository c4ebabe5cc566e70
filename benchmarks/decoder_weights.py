"""How many times a greedy decoder's engine holds its weights: loopc and TensorRT's own parser, side by side.

    python benchmarks/decoder_weights.py [--layers 12] [--width 768] [--heads 12] [--vocab 50257] [--prompt 8]
        [--new-tokens 8] [--tied] [--heads-first] [--pad-vocab] [--fp16] [--no-parser] [--check]
        [--keep FILE.onnx] [--json FILE]

The model is a GPT-2-style greedy decoder written here with ``onnx.helper`` (no torch), GPT-2 small by default
(12 pre-norm blocks of width 768 and 12 heads, vocab 50257, 1024 positions, a head of its own unless ``--tied``;
random weights of GPT-2's initial scale): the prompt's forward pass before the Loop fills a fixed-size K/V cache
(``prompt + new_tokens`` positions) and picks the first token; each trip embeds the last token, writes its K/V at
its position (a one-hot blend, so the cache keeps its shape), attends over the written positions and picks the
next. The prompt's pass and the loop's step read the same initializers, so every weight is read twice: TensorRT
stores a MatMul weight held [in, out] once per reading product, once when held [out, in] and read transposed
(``benchmarks/weight_storage.py``), which is what loopc's ``weight-layout`` pass does.

Each build runs in a process of its own (loopc's ``build``, and the parser's network built by the same builder,
ahead of time for loopc's default target). The table: weight bytes (the initializers), engine bytes, their
ratio, the bytes of the constants the engine's Myelin programs store over the weight bytes (1.000: each weight
once), the copies of one MLP weight (layer 0's first, [width, 4 width]) found in the engine as held in the model
and transposed (in fp16 with ``--fp16``, which loopc builds in half; the parser's network stays float32), the
launches of the Myelin programs (and how many are products) and the build's wall time. ``--check`` also runs
loopc's simulator on the prompt and compares the tokens with onnxruntime's (a small config: ``--layers 2
--width 64 --heads 2 --vocab 512``), and, with a form below, onnxruntime's on the model without it. GPT-2 small
is 163M parameters untied (652 MB), 124M tied; its builds take under a minute each and some 3 GB.

What an engine holds beyond one copy of each weight (TensorRT-RTX 1.7; ``weight_storage.py`` Parts C and D
show why, case by case): each layer's QKV weight twice, some 7 MB a layer at GPT-2 small (its product's
output is split into Q, K and V, then each reshaped into heads and transposed: Myelin folds the Slices and
transposes into the product, which then reads a copy of the weight of its own with its column blocks reordered,
[in, out] for the prompt's and [out, in] for the step's, and keeps no other: "loopc's form ...: both"); a tied
embedding of odd rows twice (the head's product pads the vocabulary to even rows, so its copy is not the
Gathers' table: "V odd: one constant for the Gathers and the head"); in fp16, the embedding tables in float32
(loopc's half precision leaves a Gather's table so). Two forms of the same model, which a pass could write,
remove the duplicates:

* ``--heads-first``: Q, K and V split after one Reshape of the QKV product to [1, S, 3 heads, head width] and
  one Transpose ("one product, heads [1, 3H, S, 64] split after"): the QKV weight is stored once, and each trip
  launches fewer kernels. GPT-2 small untied: engine / weights 1.149 -> 1.018, constants 1.130 -> 1.000,
  launches 301 -> 253 (122 products either way); in fp16 0.697 -> 0.631.
* ``--pad-vocab`` (with ``--tied``): the table held with a row of zeros more (even rows) and the logits sliced
  back to the vocabulary ("V odd, held padded to V + 1 rows (a 0 row), the logits sliced to V"): the table is
  stored once. GPT-2 small tied: 1.505 -> 1.195; with ``--heads-first`` too, 1.023 (constants 1.000).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _forked import in_fork  # noqa: E402  (after the path: run as a script)

#: GPT-2's learned positions.
POSITIONS = 1024
#: What a masked attention score gets (GPT-2's own mask value in float32 is -1e4 after scaling).
MASKED = -1e4


@dataclass(frozen=True)
class Config:
    layers: int = 12
    width: int = 768
    heads: int = 12
    vocab: int = 50257
    prompt: int = 8
    new_tokens: int = 8
    tied: bool = False
    #: Q, K and V split after the QKV product's Reshape to 3 x heads and its Transpose (the same values), the
    #: form in which TensorRT-RTX keeps c_attn's weight once (``weight_storage.py`` Part C)
    heads_first: bool = False
    #: a tied table of odd rows held with a row of zeros more and the logits sliced back (the same tokens), so
    #: that the Gathers and the head read one even table (``weight_storage.py`` Part D)
    pad_vocab: bool = False

    @property
    def context(self) -> int:
        """Positions the K/V cache holds."""
        return self.prompt + self.new_tokens


class Writer:
    """The nodes of one graph under construction (``label`` keeps its names apart from another graph's), and the
    model's initializers (all in the main graph: a loop body reads them from the outer scope)."""

    def __init__(self, label: str, inits: list[onnx.TensorProto]) -> None:
        self.label = label
        self.nodes: list[onnx.NodeProto] = []
        self.inits = inits
        self.count = 0

    def op(self, op: str, inputs: list[str], outputs: int = 1, **attrs: object) -> Any:
        """One node; its result's name (a list of them when ``outputs`` > 1)."""
        self.count += 1
        names = [f"{self.label}.{op.lower()}{self.count}.{k}" for k in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, names, **attrs))
        return names[0] if outputs == 1 else names

    def const(self, array: np.ndarray, name: str) -> str:
        """An initializer named ``name`` within this graph's label."""
        name = f"{self.label}.{name}"
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name


def weights(config: Config, seed: int = 0) -> dict[str, np.ndarray]:
    """GPT-2's parameters, random at its initial scale (normal, std 0.02; LayerNorms 1 and 0)."""
    rng = np.random.default_rng(seed)
    d = config.width

    def normal(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float32)

    found = {"wte": normal(config.vocab, d), "wpe": normal(POSITIONS, d), "lnf_g": np.ones(d, np.float32),
             "lnf_b": np.zeros(d, np.float32)}
    if config.tied and config.pad_vocab and config.vocab % 2:
        found["wte"] = np.concatenate([found["wte"], np.zeros((1, d), np.float32)])
    if not config.tied:
        found["head"] = normal(d, config.vocab)
    for layer in range(config.layers):
        p = f"h{layer}."
        found.update({p + "ln1_g": np.ones(d, np.float32), p + "ln1_b": np.zeros(d, np.float32),
                      p + "attn_w": normal(d, 3 * d), p + "attn_b": normal(3 * d),
                      p + "proj_w": normal(d, d), p + "proj_b": normal(d),
                      p + "ln2_g": np.ones(d, np.float32), p + "ln2_b": np.zeros(d, np.float32),
                      p + "fc_w": normal(d, 4 * d), p + "fc_b": normal(4 * d),
                      p + "fc2_w": normal(4 * d, d), p + "fc2_b": normal(d)})
    return found


def block(g: Writer, c: Config, layer: int, x: str, rows: int, attend: Callable[[str, str, str], tuple[str, str, str]]
          ) -> tuple[str, str, str]:
    """One pre-norm block on x [1, rows, width]; ``attend(q, k, v)`` (each [1, heads, rows, head width]) gives the
    attention's context [1, heads, rows, head width] and the K and V to carry. Returns (x, K, V)."""
    p, d, h = f"h{layer}.", c.width, c.heads
    heads_shape = g.const(np.array([1, rows, h, d // h], np.int64), f"{p}heads")
    flat_shape = g.const(np.array([1, rows, d], np.int64), f"{p}flat")
    normed = g.op("LayerNormalization", [x, p + "ln1_g", p + "ln1_b"], axis=-1, epsilon=1e-5)
    qkv = g.op("Add", [g.op("MatMul", [normed, p + "attn_w"]), p + "attn_b"])
    if c.heads_first:
        all_heads = g.const(np.array([1, rows, 3 * h, d // h], np.int64), f"{p}all_heads")
        split = g.const(np.array([h, h, h], np.int64), f"{p}heads_split")
        heads = g.op("Transpose", [g.op("Reshape", [qkv, all_heads])], perm=[0, 2, 1, 3])
        q, k, v = g.op("Split", [heads, split], 3, axis=1)
    else:
        split = g.const(np.array([d, d, d], np.int64), f"{p}qkv_split")
        q, k, v = (g.op("Transpose", [g.op("Reshape", [part, heads_shape])], perm=[0, 2, 1, 3])
                   for part in g.op("Split", [qkv, split], 3, axis=-1))
    context, k_out, v_out = attend(q, k, v)
    merged = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), flat_shape])
    x = g.op("Add", [x, g.op("Add", [g.op("MatMul", [merged, p + "proj_w"]), p + "proj_b"])])
    normed = g.op("LayerNormalization", [x, p + "ln2_g", p + "ln2_b"], axis=-1, epsilon=1e-5)
    up = g.op("Add", [g.op("MatMul", [normed, p + "fc_w"]), p + "fc_b"])
    cube = g.op("Mul", [g.op("Mul", [up, up]), up])
    inner = g.op("Mul", [g.op("Add", [up, g.op("Mul", [cube, "gelu_c"])]), "gelu_s"])
    gelu = g.op("Mul", [g.op("Mul", [up, "half"]), g.op("Add", [g.op("Tanh", [inner]), "one"])])
    x = g.op("Add", [x, g.op("Add", [g.op("MatMul", [gelu, p + "fc2_w"]), p + "fc2_b"])])
    return x, k_out, v_out


def attention(g: Writer, q: str, k: str, v: str, mask: str) -> str:
    """softmax(q kᵀ / sqrt(head width) + mask) v."""
    scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])]), "scale"]),
                          mask])
    return g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])


def next_token(g: Writer, c: Config, x: str) -> str:
    """The argmax of the head's logits for x [1, 1, width]: a token [1, 1]."""
    normed = g.op("LayerNormalization", [x, "lnf_g", "lnf_b"], axis=-1, epsilon=1e-5)
    head = "head" if not c.tied else g.op("Transpose", ["wte"], perm=[1, 0])
    logits = g.op("MatMul", [normed, head])
    if c.tied and c.pad_vocab and c.vocab % 2:
        bounds = [g.const(np.array([value]), name) for value, name in ((0, "vocab_start"), (c.vocab, "vocab_end"),
                                                                        (-1, "vocab_axis"))]
        logits = g.op("Slice", [logits, *bounds])
    return g.op("ArgMax", [logits], axis=-1, keepdims=0)


def decoder(c: Config, seed: int = 0) -> onnx.ModelProto:
    """The model (see the module docstring): input ``tokens`` int64 [1, prompt]; outputs ``first`` [1, 1] and
    ``generated`` [new_tokens, 1, 1], the tokens picked after the prompt and on each trip."""
    inits = [numpy_helper.from_array(array, name) for name, array in weights(c, seed).items()]
    top = Writer("prompt", inits)
    dh, t, p = c.width // c.heads, c.context, c.prompt
    shared = {"scale": np.array(1 / np.sqrt(dh), np.float32), "gelu_c": np.array(0.044715, np.float32),
              "gelu_s": np.array(np.sqrt(2 / np.pi), np.float32), "half": np.array(0.5, np.float32),
              "one": np.array(1.0, np.float32)}
    for name, array in shared.items():
        inits.append(numpy_helper.from_array(array, name))
    # the prompt's forward pass: causal attention over the prompt, K/V padded to the cache's length
    causal = top.const(np.triu(np.full((p, p), MASKED, np.float32), 1), "causal")
    padding = top.const(np.zeros((1, c.heads, t - p, dh), np.float32), "cache_padding")
    positions = top.const(np.arange(p), "prompt_positions")
    x = top.op("Add", [top.op("Gather", ["wte", "tokens"]), top.op("Gather", ["wpe", positions])])
    caches: list[str] = []
    for layer in range(c.layers):
        def prompt_attend(q: str, k: str, v: str) -> tuple[str, str, str]:
            padded = [top.op("Concat", [part, padding], axis=2) for part in (k, v)]
            return attention(top, q, k, v, causal), padded[0], padded[1]
        x, k_cache, v_cache = block(top, c, layer, x, p, prompt_attend)
        caches += [k_cache, v_cache]
    last = top.op("Slice", [x, top.const(np.array([p - 1]), "last_start"), top.const(np.array([p]), "last_end"),
                            top.const(np.array([1]), "last_axis")])
    first = next_token(top, c, last)
    # the loop: one token per trip, its K/V blended into the cache at its position
    step = Writer("step", inits)
    states = ["token", *(f"cache{k}" for k in range(len(caches)))]
    position = step.op("Add", ["i", top.const(np.array(p, np.int64), "prompt_length")])
    at = step.op("Unsqueeze", [position, top.const(np.array([0]), "axis0")])
    x = step.op("Add", [step.op("Gather", ["wte", "token"]), step.op("Gather", ["wpe", at])])
    slots = top.const(np.arange(t, dtype=np.int64), "cache_positions")
    onehot = step.op("Reshape", [step.op("Cast", [step.op("Equal", [slots, position])], to=TensorProto.FLOAT),
                                 top.const(np.array([1, 1, t, 1], np.int64), "onehot_shape")])
    keep = step.op("Sub", ["one", onehot])
    later = step.op("Cast", [step.op("Greater", [slots, position])], to=TensorProto.FLOAT)
    mask = step.op("Mul", [later, top.const(np.array(MASKED, np.float32), "masked")])
    updated: list[str] = []
    for layer in range(c.layers):
        def step_attend(q: str, k: str, v: str, layer: int = layer) -> tuple[str, str, str]:
            k_new, v_new = (step.op("Add", [step.op("Mul", [f"cache{2 * layer + j}", keep]),
                                            step.op("Mul", [part, onehot])]) for j, part in enumerate((k, v)))
            return attention(step, q, k_new, v_new, mask), k_new, v_new
        x, k_new, v_new = block(step, c, layer, x, 1, step_attend)
        updated += [k_new, v_new]
    token = next_token(step, c, x)
    cache_type = [1, c.heads, t, dh]
    body = helper.make_graph(
        [*step.nodes, helper.make_node("Identity", ["go"], ["go_out"]),
         helper.make_node("Identity", [token], ["token_out"])], "step",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("go", TensorProto.BOOL, []),
         helper.make_tensor_value_info("token", TensorProto.INT64, [1, 1]),
         *(helper.make_tensor_value_info(s, TensorProto.FLOAT, cache_type) for s in states[1:])],
        [helper.make_tensor_value_info("go_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info(token, TensorProto.INT64, [1, 1]),
         *(helper.make_tensor_value_info(u, TensorProto.FLOAT, cache_type) for u in updated),
         helper.make_tensor_value_info("token_out", TensorProto.INT64, [1, 1])])
    trips = top.const(np.array(c.new_tokens, np.int64), "new_tokens")
    go = top.const(np.array(True), "go")  # TensorRT's parser registers no body condition for an omitted one
    loop = helper.make_node("Loop", [trips, go, first, *caches],
                            [f"final_{s}" for s in states] + ["generated"], body=body)
    graph = helper.make_graph(
        [*top.nodes, loop, helper.make_node("Identity", [first], ["first"])], "greedy_decoder",
        [helper.make_tensor_value_info("tokens", TensorProto.INT64, [1, p])],
        [helper.make_tensor_value_info("first", TensorProto.INT64, [1, 1]),
         helper.make_tensor_value_info("generated", TensorProto.INT64, [c.new_tokens, 1, 1])], top.inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def weight_bytes(model: onnx.ModelProto) -> int:
    return sum(numpy_helper.to_array(t).nbytes for t in model.graph.initializer)


@dataclass
class Row:
    build: str
    weight_bytes: int
    engine_bytes: int | None = None
    seconds: float = 0.0
    copies: tuple[int, int] | None = None  #: one MLP weight found in the engine: as held in the model, transposed
    error: str = ""
    constants: int | None = None  #: the bytes of the constants the engine's Myelin programs store
    launches: tuple[int, int] | None = None  #: the launches of its Myelin programs, and how many are products

    @property
    def stored(self) -> float | None:
        return self.constants / self.weight_bytes if self.constants else None

    @property
    def ratio(self) -> float | None:
        return self.engine_bytes / self.weight_bytes if self.engine_bytes else None


def build_loopc(path: str, fp16: bool) -> bytes:
    from loopc.compiler import build

    with tempfile.TemporaryDirectory() as out:
        plan = pathlib.Path(out) / "decoder.plan"
        build(path, plan, fp16=fp16, warn=lambda message: None)
        return plan.read_bytes()


def build_parser(path: str, fp16: bool) -> bytes:
    del fp16  # TensorRT-RTX's parser builds the model's own types
    from loopc.trt.config import build_serialized, builder_config
    from loopc.trt.onnx_parser import parse_onnx

    parsed = parse_onnx(path)
    return build_serialized(parsed.session, parsed.network, builder_config(parsed.session))


def measured(name: str, make: Callable[[str, bool], bytes], path: str, fp16: bool, weights_total: int,
             needle: np.ndarray) -> Row:
    """One build in a forked process (a builder crash is a row): its engine's size, the copies of ``needle`` it
    holds (in half when ``fp16``) as given and transposed, and the build's wall time."""
    held = needle.astype(np.float16) if fp16 else needle

    def work() -> Row:
        start = time.perf_counter()
        try:
            plan = make(path, fp16)
        except Exception as exc:  # noqa: BLE001  (a refusal is a row)
            return Row(name, weights_total, seconds=time.perf_counter() - start, error=str(exc)[:200])
        from weight_storage import launches, payloads

        copies = (plan.count(held.tobytes()), plan.count(np.ascontiguousarray(held.T).tobytes()))
        constants = sum(size for size, _ in payloads(plan))
        return Row(name, weights_total, len(plan), time.perf_counter() - start, copies, "", constants, launches(plan))

    return in_fork(work, lambda how: Row(name, weights_total, error=f"the build's process died ({how})"))


def check(model: onnx.ModelProto, path: str, config: Config) -> str:
    """loopc's simulator against onnxruntime on a random prompt: the tokens both pick; with a form of
    ``--heads-first`` or ``--pad-vocab``, also whether onnxruntime picks the same on the model without it."""
    import onnxruntime as ort

    from loopc import api

    prompt = np.random.default_rng(1).integers(0, config.vocab, (1, config.prompt)).astype(np.int64)

    def reference(checked: onnx.ModelProto) -> dict[str, np.ndarray]:
        session = ort.InferenceSession(checked.SerializeToString(), providers=["CPUExecutionProvider"])
        return dict(zip(["first", "generated"], session.run(["first", "generated"], {"tokens": prompt})))

    got = api.run(path, {"tokens": prompt})
    want = reference(model)
    same = all(np.array_equal(got[name], want[name]) for name in want)
    tokens = np.concatenate([want["first"].reshape(-1), want["generated"].reshape(-1)]).tolist()
    said = f"simulator {'matches' if same else 'DIFFERS FROM'} onnxruntime: tokens {tokens}"
    plain = replace(config, heads_first=False, pad_vocab=False)
    if plain != config:
        kept = all(np.array_equal(want[name], found) for name, found in reference(decoder(plain)).items())
        said += f"; {'the same as' if kept else 'NOT the same as'} the model without the form's"
    return said


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    defaults = Config()
    for name in ("layers", "width", "heads", "vocab", "prompt", "new_tokens"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=getattr(defaults, name))
    parser.add_argument("--tied", action="store_true", help="the head reads the token embedding transposed")
    parser.add_argument("--heads-first", action="store_true",
                        help="split Q, K and V after the QKV product's Reshape to 3 x heads and Transpose")
    parser.add_argument("--pad-vocab", action="store_true",
                        help="with --tied: hold an odd table with a row of zeros more, slice the logits back")
    parser.add_argument("--fp16", action="store_true", help="loopc builds in half precision")
    parser.add_argument("--no-parser", action="store_true", help="skip TensorRT's parser")
    parser.add_argument("--check", action="store_true", help="compare loopc's simulator with onnxruntime (small)")
    parser.add_argument("--keep", help="also write the ONNX model to this file")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    if args.width % args.heads:
        parser.error(f"--width {args.width} is not a multiple of --heads {args.heads}")
    config = Config(args.layers, args.width, args.heads, args.vocab, args.prompt, args.new_tokens, args.tied,
                    args.heads_first, args.pad_vocab)
    start = time.perf_counter()
    model = decoder(config)
    total = weight_bytes(model)
    needle = numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == "h0.fc_w"))
    from loopc.trt import trt

    print(f"{trt().__name__} {trt().__version__}; {config}; {total / 4:,.0f} parameters, "
          f"{total:,} weight bytes; model written in {time.perf_counter() - start:.1f} s", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        path = args.keep or str(pathlib.Path(folder) / "decoder.onnx")
        onnx.save(model, path)
        if args.check:
            print(check(model, path, config), flush=True)
        del model
        builds: list[tuple[str, Callable[[str, bool], bytes]]] = [("loopc", build_loopc)]
        if not args.no_parser:
            builds.append(("TensorRT parser", build_parser))
        print("\n| build | weight bytes | engine bytes | engine / weights | constants / weights "
              "| h0.fc_w copies: W, Wᵀ | Myelin launches (products) | build s | error |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
        rows = []
        for name, make in builds:
            row = measured(name + (" (fp16)" if args.fp16 and name == "loopc" else ""), make, path,
                           args.fp16 and name == "loopc", total, needle)
            rows.append(row)
            engine = f"{row.engine_bytes:,}" if row.engine_bytes else "—"
            ratio = f"{row.ratio:.3f}" if row.ratio else "—"
            stored = f"{row.stored:.3f}" if row.stored else "—"
            copies = f"{row.copies[0]}, {row.copies[1]}" if row.copies else "—"
            launched = f"{row.launches[0]} ({row.launches[1]})" if row.launches else "—"
            print(f"| {row.build} | {row.weight_bytes:,} | {engine} | {ratio} | {stored} | {copies} | {launched} "
                  f"| {row.seconds:.1f} | {row.error} |", flush=True)
    if args.json:
        found = [{**asdict(r), "ratio": r.ratio, "stored": r.stored} for r in rows]
        pathlib.Path(args.json).write_text(json.dumps(found, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

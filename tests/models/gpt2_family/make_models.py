"""Make the GPT-2 family: one greedy generator with growing K/V caches, exported the ways real code differs.

Run outside the test suite, in the venv of ``tests/models/torch`` (loopc never depends on torch):

    python3 -m venv venv-torch
    venv-torch/bin/pip install -r tests/models/torch/requirements.txt
    venv-torch/bin/python tests/models/gpt2_family/make_models.py

Every variant runs the same weights (fixed seeds) through the same pre-norm GPT-2 blocks; they differ only in how
the code holds its caches, stops, finds its positions and pads its finished rows (README.md has the table). Every
size is a field of :class:`Config`, so that a benchmark can make a real-size model (``GPT2_SMALL``) with the same
code. For each case the script writes ``<case>.onnx``, ``<case>.inputs.npz`` (keyed by graph input name),
``<case>.expected.npz`` (the eager module's outputs, keyed by graph output name) and finally ``cases.toml``. Each
export is checked against onnxruntime on its example and once more at batch 3 and another prompt length, so that
an export baked to the example's sizes fails here. The helpers (:class:`Suite`) serve ``whisper_family`` too.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import sys
import warnings
from typing import Callable

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import Tensor, nn
from torch.nn import functional as F
from torch._higher_order_ops.while_loop import while_loop

HERE = pathlib.Path(__file__).resolve().parent
OPSET = 17  # the TorchScript exporter's opset; the dynamo exporter keeps its own default
VERSION = torch.__version__.split("+")[0]
TS = f"torch.jit.script, TorchScript exporter (torch {VERSION}, dynamo=False), opset {OPSET}"
DYNAMO = f"dynamo exporter (torch {VERSION}, dynamo=True, dynamic_shapes), its default opset 20"


@dataclasses.dataclass(frozen=True)
class Config:
    """Every size of the generator; the corpus uses the defaults, a benchmark ``GPT2_SMALL``."""

    vocab: int = 20
    dim: int = 24
    heads: int = 2
    layers: int = 2
    positions: int = 32
    eos: int = 0
    max_new: int = 10  # the bound of the examples and of the preallocated (while_loop) variant's buffers

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads


GPT2_SMALL = Config(vocab=50257, dim=768, heads=12, layers=12, positions=1024, eos=50256, max_new=32)


# ---------------------------------------------------------------------------------------------------------------
# Shared helpers: export, check against onnxruntime, save, write cases.toml (used by whisper_family as well)
# ---------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Case:
    name: str
    path: str
    about: str
    rtol: float | None = None
    atol: float | None = None
    refusal: str | None = None


#: The exports loopc does not build yet, with the words of its refusal (a case states them as ``loopc-refuses``;
#: the corpus test then checks that loopc still refuses them that way and that TensorRT's parser fails too).
LOOPC_REFUSES: dict[str, str] = {}


def _flatten(outputs: object) -> list[Tensor]:
    if isinstance(outputs, Tensor):
        return [outputs]
    return [t for item in outputs for t in _flatten(item)]  # type: ignore[attr-defined]


class Suite:
    """One corpus folder: its exports, their checked example inputs and eager outputs, its ``cases.toml``."""

    def __init__(self, here: pathlib.Path, script: str) -> None:
        self.here, self.script, self.cases = here, script, []  # type: list[Case]

    def export_ts(self, name: str, module: nn.Module, inputs: dict[str, Tensor], outputs: list[str],
                  dynamic_axes: dict[str, dict[int, str]]) -> None:
        """Script ``module`` (its Python loop stays a loop) and export it with the TorchScript exporter."""
        torch.onnx.export(torch.jit.script(module), tuple(inputs.values()), str(self.here / f"{name}.onnx"),
                          input_names=list(inputs), output_names=outputs, dynamic_axes=dynamic_axes,
                          opset_version=OPSET, dynamo=False)

    def export_dynamo(self, name: str, module: nn.Module, inputs: dict[str, Tensor], outputs: list[str],
                      dynamic_shapes: object) -> None:
        """``torch.export`` underneath; the nodes' metadata (0.9 MB of stack traces for a while_loop) dropped."""
        path = self.here / f"{name}.onnx"
        torch.onnx.export(module, tuple(inputs.values()), str(path), input_names=list(inputs), output_names=outputs,
                          dynamic_shapes=dynamic_shapes, dynamo=True, external_data=False, verbose=False)
        model = onnx.load(str(path))
        _strip_metadata(model.graph)
        onnx.save(model, str(path))

    def check_ort(self, model_file: str, module: nn.Module, inputs: dict[str, Tensor]) -> dict[str, np.ndarray]:
        """The eager outputs keyed by graph output name; raises unless onnxruntime agrees."""
        graph = onnx.load(str(self.here / model_file)).graph
        in_names, out_names = [i.name for i in graph.input], [o.name for o in graph.output]
        if in_names != list(inputs):
            raise RuntimeError(f"{model_file}: graph inputs {in_names} differ from the example's {list(inputs)}")
        with torch.no_grad():
            eager = _flatten(module(*inputs.values()))
        expected = {k: v.numpy() for k, v in zip(out_names, eager, strict=True)}
        options = ort.SessionOptions()
        options.log_severity_level = 3  # the exporters' stale value_info shapes make onnxruntime warn every trip
        session = ort.InferenceSession(str(self.here / model_file), options, providers=["CPUExecutionProvider"])
        got = session.run(None, {k: v.numpy() for k, v in inputs.items()})
        for out, value in zip(out_names, got):
            want = expected[out]
            if value.shape != want.shape or value.dtype != want.dtype:
                raise RuntimeError(f"{model_file}: onnxruntime gives {out} {value.dtype}{value.shape}, "
                                   f"eager {want.dtype}{want.shape}")
            np.testing.assert_allclose(value, want, rtol=1e-4, atol=1e-5, err_msg=f"{model_file}: {out}")
        return expected

    def save(self, name: str, model_file: str, module: nn.Module, inputs: dict[str, Tensor], about: str,
             other_sizes: dict[str, Tensor] | None = None) -> None:
        """Save the example and its eager outputs, checked against onnxruntime (at ``other_sizes`` too)."""
        expected = self.check_ort(model_file, module, inputs)
        if other_sizes is not None:
            self.check_ort(model_file, module, other_sizes)
        np.savez(self.here / f"{name}.inputs.npz", **{k: v.numpy() for k, v in inputs.items()})
        np.savez(self.here / f"{name}.expected.npz", **expected)
        self.cases.append(Case(name, model_file, about, refusal=LOOPC_REFUSES.get(model_file.removesuffix(".onnx"))))
        shapes = ", ".join(f"{k}{list(v.shape)}" for k, v in expected.items())
        print(f"{name}: {model_file} ok against onnxruntime; outputs {shapes}")

    def write_toml(self) -> None:
        lines = [f"# Made by {self.script}; one table per case (see README.md).", ""]
        for case in self.cases:
            lines += ["[[model]]", f'name = "{case.name}"', f'path = "{case.path}"',
                      f'inputs = "{case.name}.inputs.npz"', f'expected = "{case.name}.expected.npz"',
                      "about = " + '"' + case.about.replace("\\", "\\\\").replace('"', '\\"') + '"']
            lines += [f"rtol = {case.rtol}"] if case.rtol is not None else []
            lines += [f"atol = {case.atol}"] if case.atol is not None else []
            lines += [f'loopc-refuses = "{case.refusal}"'] if case.refusal is not None else []
            lines.append("")
        (self.here / "cases.toml").write_text("\n".join(lines))
        for onnx_file in sorted(self.here.glob("*.onnx")):
            if onnx_file.stat().st_size > 600_000:
                raise RuntimeError(f"{onnx_file.name} is {onnx_file.stat().st_size} bytes; keep corpus models small")


def _strip_metadata(graph: onnx.GraphProto) -> None:
    for node in graph.node:
        del node.metadata_props[:]
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                _strip_metadata(attr.g)


def search(make: Callable[[int], dict[str, Tensor]], keep: Callable[[dict[str, Tensor]], bool],
           what: str) -> dict[str, Tensor]:
    """The first seeded example that ``keep`` accepts (fixed seeds: reproducible)."""
    for seed in range(3000):
        inputs = make(seed)
        with torch.no_grad():
            if keep(inputs):
                return inputs
    raise RuntimeError(f"no example input found for {what}")


def margin(head: nn.Module, run: Callable[[], object]) -> float:
    """The smallest gap between the two largest logits ``head`` gave in ``run``: a near tie could flip an argmax."""
    gaps: list[float] = []

    def record(module: nn.Module, args: object, out: Tensor) -> None:
        top = torch.topk(out.reshape(-1, out.size(-1)), 2, dim=-1).values
        gaps.append(float((top[:, 0] - top[:, 1]).min()))

    hook = head.register_forward_hook(record)
    try:
        run()
    finally:
        hook.remove()
    return min(gaps)


def ends(tokens: Tensor, eos: int) -> list[int]:
    """Per row, the step of its first EOS (``tokens.shape[1]`` when it has none)."""
    hit = (tokens == eos).int()
    first = torch.where(hit.any(1), hit.argmax(1), torch.full_like(hit[:, 0], tokens.shape[1]))
    return [int(s) for s in first]


def stops_as_wanted(tokens: Tensor, eos: int, bound: int, by_eos: bool | None) -> bool:
    """An example worth keeping: rows end at different steps, none at its first token; the loop ends by EOS
    (every row ended before ``bound``) or by the bound (a row ended early and another never did); ``None``: a check
    at other sizes, which only needs a few trips."""
    steps = ends(tokens, eos)
    if by_eos is None:
        return tokens.shape[1] >= 3
    if len(set(steps)) < 2 or min(steps) == 0:
        return False
    if by_eos:
        return tokens.shape[1] < bound and max(steps) >= 3
    return tokens.shape[1] == bound and max(steps) == bound and min(steps) < bound - 1


# ---------------------------------------------------------------------------------------------------------------
# The weights: pre-norm GPT-2 blocks (LayerNorm, causal self-attention, tanh-GELU MLP), learned positions
# ---------------------------------------------------------------------------------------------------------------


class Block(nn.Module):
    """A pre-norm GPT-2 block, split where the caches come in: ``qkv`` makes this step's heads, ``finish`` adds
    the attention's projection and the MLP to the residual."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.dim)
        self.c_attn = nn.Linear(cfg.dim, 3 * cfg.dim)
        self.c_proj = nn.Linear(cfg.dim, cfg.dim)
        self.ln_2 = nn.LayerNorm(cfg.dim)
        self.c_fc = nn.Linear(cfg.dim, 4 * cfg.dim)
        self.mlp_proj = nn.Linear(4 * cfg.dim, cfg.dim)
        self.dim, self.heads, self.head_dim = cfg.dim, cfg.heads, cfg.head_dim

    def qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """q, k, v of ``x`` [B, T, D], each [B, T, H, Dh] (heads split, not yet moved)."""
        b, t = x.size(0), x.size(1)
        # GPT-2 splits by its constant width (split(x.size(2)) exports as SplitToSequence + SequenceAt).
        q, k, v = self.c_attn(self.ln_1(x)).split(self.dim, dim=2)
        shape = [b, t, self.heads, self.head_dim]
        return q.view(shape), k.view(shape), v.view(shape)

    def finish(self, x: Tensor, ctx: Tensor) -> Tensor:
        """``x + proj(ctx)`` for ``ctx`` [B, H, T, Dh], then ``x + mlp(ln_2(x))``."""
        x = x + self.c_proj(ctx.permute(0, 2, 1, 3).reshape(x.size(0), x.size(1), self.dim))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


def attend(q: Tensor, k: Tensor, v: Tensor, past: int) -> Tensor:
    """Causal attention of ``q`` [B, H, T, Dh] at positions ``past ..`` over ``k``, ``v`` [B, H, S, Dh]."""
    # permute, not transpose: a value read from a list has no known rank in the TorchScript exporter.
    scores = torch.matmul(q, k.permute(0, 1, 3, 2)) / math.sqrt(q.size(3))
    later = torch.arange(k.size(2)).unsqueeze(0) > torch.arange(past, past + q.size(2)).unsqueeze(1)
    return torch.matmul(torch.softmax(scores.masked_fill(later, float("-inf")), dim=-1), v)


def attend_kt(q: Tensor, kt: Tensor, v: Tensor, past: int) -> Tensor:
    """:func:`attend` with the keys stored transposed, ``kt`` [B, H, Dh, S] (no transpose per step)."""
    scores = torch.matmul(q, kt) / math.sqrt(q.size(3))
    later = torch.arange(kt.size(3)).unsqueeze(0) > torch.arange(past, past + q.size(2)).unsqueeze(1)
    return torch.matmul(torch.softmax(scores.masked_fill(later, float("-inf")), dim=-1), v)


class GPT2(nn.Module):
    """The weights every variant shares; a variant is a subclass with its own ``forward`` (and ``step``)."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab, cfg.dim)
        self.wpe = nn.Embedding(cfg.positions, cfg.dim)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.layers)])
        self.ln_f = nn.LayerNorm(cfg.dim)
        self.lm_head = nn.Linear(cfg.dim, cfg.vocab, bias=False)
        self.layers, self.heads, self.head_dim, self.eos = cfg.layers, cfg.heads, cfg.head_dim, cfg.eos
        self.max_new, self.positions = cfg.max_new, cfg.positions

    def logits(self, x: Tensor) -> Tensor:
        return self.lm_head(self.ln_f(x[:, -1]))

    def embed_range(self, ids: Tensor, past: int) -> Tensor:
        """Token plus position embedding, the positions a Range: ``wpe(arange(past, past + T))``."""
        return self.wte(ids) + self.wpe(torch.arange(past, past + ids.size(1)))

    def embed_slice(self, ids: Tensor, past: int) -> Tensor:
        """Token plus position embedding, the positions a slice of the table: ``wpe.weight[past:past + T]``."""
        return self.wte(ids) + self.wpe.weight[past:past + ids.size(1)]


def heads_first(t: Tensor) -> Tensor:
    """[B, T, H, Dh] -> [B, H, T, Dh]."""
    return t.permute(0, 2, 1, 3)


class Stacked(GPT2):
    """Caches as ONE stacked tensor ``past_k``/``past_v`` [L, B, H, S, Dh] growing along S: read per layer by index
    (``past_k[i]``), re-stacked every trip (``torch.stack``); positions a Range; finished rows padded with EOS by
    ``torch.where``; ``break`` once every row has emitted EOS."""

    def step(self, ids: Tensor, past_k: Tensor, past_v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        past = past_k.size(3)
        x = self.embed_range(ids, past)
        ks: list[Tensor] = []
        vs: list[Tensor] = []
        for i, block in enumerate(self.blocks):
            q, k, v = block.qkv(x)
            k = torch.cat([past_k[i], heads_first(k)], 2)
            v = torch.cat([past_v[i], heads_first(v)], 2)
            x = block.finish(x, attend(heads_first(q), k, v, past))
            ks.append(k)
            vs.append(v)
        return self.logits(x), torch.stack(ks), torch.stack(vs)

    def forward(self, prompt: Tensor, max_new_tokens: Tensor) -> Tensor:
        empty = torch.zeros(self.layers, prompt.size(0), self.heads, 0, self.head_dim)
        logits, past_k, past_v = self.step(prompt, empty, empty)
        finished = torch.zeros(prompt.size(0), dtype=torch.bool)
        tokens: list[Tensor] = []
        for _ in range(int(max_new_tokens)):
            token = torch.where(finished, torch.full_like(finished, self.eos, dtype=torch.long),
                                torch.argmax(logits, dim=1))
            tokens.append(token)
            finished = finished | (token == self.eos)
            if bool(finished.all()):
                break
            logits, past_k, past_v = self.step(token.unsqueeze(1), past_k, past_v)
        return torch.stack(tokens, 1)


class ListCaches(GPT2):
    """Caches as lists of per-layer tensors (``ks[i] = torch.cat([ks[i], k], 2)``); positions a slice of the
    table (``wpe.weight[t:t + 1]``); a while condition (``while step < max_new and not finished.all()``), the step
    run at the end of each trip; finished rows ``masked_fill``ed with EOS; tokens grown by ``torch.cat``."""

    def step(self, ids: Tensor, ks: list[Tensor], vs: list[Tensor]) -> Tensor:
        past = ks[0].size(2)
        x = self.embed_slice(ids, past)
        for i, block in enumerate(self.blocks):
            q, k, v = block.qkv(x)
            ks[i] = torch.cat([ks[i], heads_first(k)], 2)
            vs[i] = torch.cat([vs[i], heads_first(v)], 2)
            x = block.finish(x, attend(heads_first(q), ks[i], vs[i], past))
        return self.logits(x)

    def forward(self, prompt: Tensor, max_new_tokens: Tensor) -> Tensor:
        empty = torch.zeros(prompt.size(0), self.heads, 0, self.head_dim)
        ks = [empty for _ in range(self.layers)]
        vs = [empty for _ in range(self.layers)]
        logits = self.step(prompt, ks, vs)
        finished = torch.zeros(prompt.size(0), dtype=torch.bool)
        tokens = torch.zeros(prompt.size(0), 0, dtype=torch.long)
        step = 0
        while step < int(max_new_tokens) and not bool(finished.all()):
            token = torch.argmax(logits, dim=1).masked_fill(finished, self.eos)
            tokens = torch.cat([tokens, token.unsqueeze(1)], 1)
            finished = finished | (token == self.eos)
            logits = self.step(token.unsqueeze(1), ks, vs)
            step += 1
        return tokens


class LayerPairs(GPT2):
    """Old transformers' GPT-2 cache: one tensor per layer stacking its key and value, ``present = torch.stack((k,
    v))`` [2, B, H, S, Dh], in a list (a list of (key, value) tuples does not export: "Couldn't lower all tuples");
    finished rows masked the way ``generate`` does it (``next * unfinished + eos * (1 - unfinished)`` with an int
    mask, ``unfinished.max() == 0`` to stop); positions a Range; ``break``."""

    def step(self, ids: Tensor, past: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
        start = past[0].size(3)
        x = self.embed_range(ids, start)
        present: list[Tensor] = []
        for i, block in enumerate(self.blocks):
            q, k, v = block.qkv(x)
            k = torch.cat([past[i][0], heads_first(k)], 2)
            v = torch.cat([past[i][1], heads_first(v)], 2)
            x = block.finish(x, attend(heads_first(q), k, v, start))
            present.append(torch.stack((k, v)))
        return self.logits(x), present

    def forward(self, prompt: Tensor, max_new_tokens: Tensor) -> Tensor:
        empty = torch.zeros(2, prompt.size(0), self.heads, 0, self.head_dim)
        logits, past = self.step(prompt, [empty for _ in range(self.layers)])
        unfinished = torch.ones(prompt.size(0), dtype=torch.long)
        tokens: list[Tensor] = []
        for _ in range(int(max_new_tokens)):
            token = torch.argmax(logits, dim=1) * unfinished + self.eos * (1 - unfinished)
            tokens.append(token)
            unfinished = unfinished * (token != self.eos).long()
            if bool(unfinished.max() == 0):
                break
            logits, past = self.step(token.unsqueeze(1), past)
        return torch.stack(tokens, 1)


class TwoLayersWrittenOut(GPT2):
    """The layers written out (two of them): each layer's K and V a loop-carried tensor of its own, returned as a
    tuple from the step; positions a slice of the table; finished rows padded by ``torch.where``; ``break``."""

    def step(self, ids: Tensor, k0: Tensor, v0: Tensor, k1: Tensor, v1: Tensor
             ) -> tuple[Tensor, tuple[Tensor, Tensor, Tensor, Tensor]]:
        past = k0.size(2)
        x = self.embed_slice(ids, past)
        q, k, v = self.blocks[0].qkv(x)
        k0, v0 = torch.cat([k0, heads_first(k)], 2), torch.cat([v0, heads_first(v)], 2)
        x = self.blocks[0].finish(x, attend(heads_first(q), k0, v0, past))
        q, k, v = self.blocks[1].qkv(x)
        k1, v1 = torch.cat([k1, heads_first(k)], 2), torch.cat([v1, heads_first(v)], 2)
        x = self.blocks[1].finish(x, attend(heads_first(q), k1, v1, past))
        return self.logits(x), (k0, v0, k1, v1)

    def forward(self, prompt: Tensor, max_new_tokens: Tensor) -> Tensor:
        empty = torch.zeros(prompt.size(0), self.heads, 0, self.head_dim)
        logits, past = self.step(prompt, empty, empty, empty, empty)
        finished = torch.zeros(prompt.size(0), dtype=torch.bool)
        tokens: list[Tensor] = []
        for _ in range(int(max_new_tokens)):
            token = torch.where(finished, torch.full_like(finished, self.eos, dtype=torch.long),
                                torch.argmax(logits, dim=1))
            tokens.append(token)
            finished = finished | (token == self.eos)
            if bool(finished.all()):
                break
            logits, past = self.step(token.unsqueeze(1), past[0], past[1], past[2], past[3])
        return torch.stack(tokens, 1)


class StackedBatchFirst(GPT2):
    """One stacked cache per K and V, batch-first and heads last, [L, B, S, H, Dh], growing on axis 2 (no move of
    the heads before caching); a while condition; positions a Range; finished rows ``masked_fill``ed."""

    def step(self, ids: Tensor, past_k: Tensor, past_v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        past = past_k.size(2)
        x = self.embed_range(ids, past)
        ks: list[Tensor] = []
        vs: list[Tensor] = []
        for i, block in enumerate(self.blocks):
            q, k, v = block.qkv(x)
            k = torch.cat([past_k[i], k], 1)
            v = torch.cat([past_v[i], v], 1)
            x = block.finish(x, attend(heads_first(q), heads_first(k), heads_first(v), past))
            ks.append(k)
            vs.append(v)
        return self.logits(x), torch.stack(ks), torch.stack(vs)

    def forward(self, prompt: Tensor, max_new_tokens: Tensor) -> Tensor:
        empty = torch.zeros(self.layers, prompt.size(0), 0, self.heads, self.head_dim)
        logits, past_k, past_v = self.step(prompt, empty, empty)
        finished = torch.zeros(prompt.size(0), dtype=torch.bool)
        tokens: list[Tensor] = []
        step = 0
        while step < int(max_new_tokens) and not bool(finished.all()):
            token = torch.argmax(logits, dim=1).masked_fill(finished, self.eos)
            tokens.append(token)
            finished = finished | (token == self.eos)
            logits, past_k, past_v = self.step(token.unsqueeze(1), past_k, past_v)
            step += 1
        return torch.stack(tokens, 1)


class StackedKeysTransposed(GPT2):
    """One stacked cache per K and V with the keys stored transposed: ``past_kt`` [L, B, H, Dh, S] grows on its
    last axis, ``past_v`` [L, B, H, S, Dh] on axis 3 (the scores need no transpose per step); the new position the
    cache's length, read as ``past_kt.size(-1)``; positions a slice of the table; EOS padding by ``torch.where``;
    ``break``."""

    def step(self, ids: Tensor, past_kt: Tensor, past_v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        past = past_kt.size(-1)
        x = self.embed_slice(ids, past)
        ks: list[Tensor] = []
        vs: list[Tensor] = []
        for i, block in enumerate(self.blocks):
            q, k, v = block.qkv(x)
            kt = torch.cat([past_kt[i], k.permute(0, 2, 3, 1)], -1)
            v = torch.cat([past_v[i], heads_first(v)], 2)
            x = block.finish(x, attend_kt(heads_first(q), kt, v, past))
            ks.append(kt)
            vs.append(v)
        return self.logits(x), torch.stack(ks), torch.stack(vs)

    def forward(self, prompt: Tensor, max_new_tokens: Tensor) -> Tensor:
        b = prompt.size(0)
        logits, past_kt, past_v = self.step(prompt, torch.zeros(self.layers, b, self.heads, self.head_dim, 0),
                                            torch.zeros(self.layers, b, self.heads, 0, self.head_dim))
        finished = torch.zeros(b, dtype=torch.bool)
        tokens: list[Tensor] = []
        for _ in range(int(max_new_tokens)):
            token = torch.where(finished, torch.full_like(finished, self.eos, dtype=torch.long),
                                torch.argmax(logits, dim=1))
            tokens.append(token)
            finished = finished | (token == self.eos)
            if bool(finished.all()):
                break
            logits, past_kt, past_v = self.step(token.unsqueeze(1), past_kt, past_v)
        return torch.stack(tokens, 1)


class PreallocatedWhileLoop(GPT2):
    """``torch.export`` users' form: a ``while_loop`` cannot grow its carries, so the stacked caches [L, B, H, P,
    Dh] are preallocated to every position, written at the new position with ``index_copy`` and read under a mask
    of the later positions; tokens written into a [B, max_new] buffer (EOS after a row's end) with
    ``index_copy``; runs while ``i < max_new_tokens`` and some row is unfinished; outputs the buffer and the steps."""

    def step(self, ids: Tensor, pos: Tensor, past_k: Tensor, past_v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        x = self.wte(ids) + self.wpe(pos)
        later = torch.arange(self.positions).unsqueeze(0) > pos.unsqueeze(1)
        ks: list[Tensor] = []
        vs: list[Tensor] = []
        for i, block in enumerate(self.blocks):
            q, k, v = block.qkv(x)
            k_all = past_k[i].index_copy(2, pos, heads_first(k))
            v_all = past_v[i].index_copy(2, pos, heads_first(v))
            scores = torch.matmul(heads_first(q), k_all.transpose(2, 3)) / math.sqrt(self.head_dim)
            ctx = torch.matmul(torch.softmax(scores.masked_fill(later, float("-inf")), dim=-1), v_all)
            x = block.finish(x, ctx)
            ks.append(k_all)
            vs.append(v_all)
        return self.logits(x), torch.stack(ks), torch.stack(vs)

    def forward(self, prompt: Tensor, max_new_tokens: Tensor) -> tuple[Tensor, Tensor]:
        b = prompt.size(0)
        empty = torch.zeros(self.layers, b, self.heads, self.positions, self.head_dim)
        logits, past_k, past_v = self.step(prompt, torch.arange(prompt.size(1)), empty, empty)
        tokens = torch.full((b, self.max_new), self.eos, dtype=torch.int64)
        finished = torch.zeros(b, dtype=torch.bool)
        start = torch.full((), prompt.size(1), dtype=torch.int64)

        def cond(i: Tensor, pos: Tensor, logits: Tensor, finished: Tensor, tokens: Tensor, past_k: Tensor,
                 past_v: Tensor) -> Tensor:
            return (i < max_new_tokens) & (i < self.max_new) & torch.logical_not(finished.all())

        def body(i: Tensor, pos: Tensor, logits: Tensor, finished: Tensor, tokens: Tensor, past_k: Tensor,
                 past_v: Tensor) -> tuple[Tensor, ...]:
            token = torch.argmax(logits, dim=1).masked_fill(finished, self.eos)
            tokens = tokens.index_copy(1, i.reshape(1), token.unsqueeze(1))
            finished = torch.logical_or(finished, token == self.eos)
            logits, past_k, past_v = self.step(token.unsqueeze(1), pos.reshape(1), past_k, past_v)
            return i + 1, pos + 1, logits, finished, tokens, past_k, past_v

        steps, _, _, _, tokens, _, _ = while_loop(
            cond, body, (torch.zeros((), dtype=torch.int64), start, logits, finished, tokens, past_k, past_v))
        return tokens, steps


# ---------------------------------------------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------------------------------------------

SUITE = Suite(HERE, "make_models.py")
BASE = ("GPT-2-style greedy generator (width {dim}, {layers} pre-norm blocks: LayerNorm, {heads}-head causal"
        " self-attention, tanh-GELU MLP; learned token and position embeddings; vocab {vocab}): the prompt fills"
        " the caches, then one token per trip until every row has emitted EOS or max_new_tokens are out; ")

#: name, variant, what differs, scripted (else dynamo while_loop)
VARIANTS: list[tuple[str, type[GPT2], str, bool]] = [
    ("gpt2_stacked", Stacked, "caches ONE stacked tensor per K and V [L, B, H, S, Dh] growing on S, read per layer"
     " by index (past_k[i]) and re-stacked each trip (torch.stack); positions a Range (wpe(arange(past, past + 1)));"
     " finished rows padded with torch.where(finished, eos, next); `if finished.all(): break`; list.append +"
     " torch.stack", True),
    ("gpt2_list", ListCaches, "caches lists of per-layer tensors (ks[i] = torch.cat([ks[i], k], 2)); positions a"
     " slice of the table (wpe.weight[t:t + 1], t the cache's length); `while step < max_new and not"
     " finished.all()`, the step run at the end of each trip; finished rows masked_fill(finished, eos); tokens"
     " grown by torch.cat", True),
    ("gpt2_kv_pairs", LayerPairs, "caches old transformers' GPT-2 form, one tensor per layer stacking its key and"
     " value (present = torch.stack((k, v)), [2, B, H, S, Dh] growing on axis 3) in a list rebuilt each trip;"
     " positions a Range; finished rows masked as generate() does (next * unfinished + eos *"
     " (1 - unfinished), an int64 mask), `if unfinished.max() == 0: break`; list.append + torch.stack", True),
    ("gpt2_unrolled", TwoLayersWrittenOut, "the two layers written out, each layer's K and V its own loop-carried"
     " tensor, passed through the step as a 4-tuple; positions a slice of the table; torch.where padding;"
     " `break`", True),
    ("gpt2_stacked_batch_first", StackedBatchFirst, "caches one stacked tensor per K and V, batch-first with the"
     " heads last [L, B, S, H, Dh], growing on axis 2, read by index and re-stacked; `while step < max_new and not"
     " finished.all()`; positions a Range; masked_fill padding", True),
    ("gpt2_stacked_keys_transposed", StackedKeysTransposed, "the keys stored transposed in one stacked tensor"
     " [L, B, H, Dh, S] growing on its last axis, the values [L, B, H, S, Dh] on axis 3, the new position"
     " past_kt.size(-1); positions a slice of the table; torch.where padding; `break`", True),
    ("gpt2_while_loop", PreallocatedWhileLoop, "torch._higher_order_ops.while_loop (it cannot grow its carries):"
     " stacked caches [L, B, H, 32, Dh] preallocated, written at the new position with index_copy, read under a"
     " mask of the later positions; tokens written into a [B, max_new] buffer with index_copy; outputs the buffer"
     " and the steps run", False),
]


def weights(cfg: Config) -> dict[str, Tensor]:
    """The shared weights: fixed seed, livelier logits, and a final LayerNorm bias along EOS's embedding so that
    rows end within a handful of steps."""
    torch.manual_seed(40)
    model = GPT2(cfg).eval()
    with torch.no_grad():
        model.lm_head.weight.mul_(3.0)
        eos_row = model.lm_head.weight[cfg.eos]
        model.ln_f.bias.copy_(0.6 * eos_row / eos_row.norm())
    return model.state_dict()


def examples(model: GPT2, cfg: Config, name: str, scripted: bool) -> tuple[dict[str, Tensor], ...]:
    """An example ending by EOS, one ending at the bound, and one of other sizes (batch 3, prompt 6)."""

    def make(seed: int, batch: int = 2, prompt_len: int = 4) -> dict[str, Tensor]:
        rng = np.random.default_rng(seed)
        return {"prompt": torch.from_numpy(rng.integers(1, cfg.vocab, size=(batch, prompt_len))),
                "max_new_tokens": torch.tensor(cfg.max_new, dtype=torch.int64)}

    def keep(by_eos: bool | None) -> Callable[[dict[str, Tensor]], bool]:
        def ok(inp: dict[str, Tensor]) -> bool:
            out = model(*inp.values())
            tokens = out if scripted else out[0][:, :int(out[1])]
            return (stops_as_wanted(tokens, cfg.eos, cfg.max_new, by_eos)
                    and margin(model.lm_head, lambda: model(*inp.values())) > 1e-3)
        return ok

    return (search(make, keep(True), name), search(make, keep(False), f"{name} (bound)"),
            search(lambda seed: make(seed, 3, 6), keep(None), f"{name} (other sizes)"))


def make_module(kind: type[GPT2], cfg: Config) -> GPT2:
    """A variant at ``cfg`` with the shared weights, in eval mode."""
    model = kind(cfg).eval()
    model.load_state_dict(weights(cfg))
    return model


def export(suite: Suite, name: str, model: GPT2, example: dict[str, Tensor], scripted: bool) -> str:
    """Export ``model`` as ``<name>.onnx`` into ``suite``'s folder; returns how, for the case's description."""
    if scripted:
        suite.export_ts(name, model, example, ["tokens"],
                        {"prompt": {0: "batch", 1: "prompt_len"}, "tokens": {0: "batch", 1: "steps"}})
        return f"{TS}, dynamic batch and prompt_len"
    dims = torch.export.Dim("batch", min=1, max=16), torch.export.Dim("prompt_len", min=1, max=20)
    suite.export_dynamo(name, model, example, ["tokens", "steps"], ({0: dims[0], 1: dims[1]}, None))
    return f"{DYNAMO}, dynamic batch and prompt_len"


def make_variant(name: str, kind: type[GPT2], differs: str, scripted: bool, cfg: Config) -> None:
    model = make_module(kind, cfg)
    by_eos, by_bound, other = examples(model, cfg, name, scripted)
    how = export(SUITE, name, model, by_eos, scripted)
    about = BASE.format(**dataclasses.asdict(cfg)) + differs + "; " + how
    SUITE.save(name, f"{name}.onnx", model, by_eos, about + "; every row ends by EOS, at different steps", other)
    SUITE.save(f"{name}_max_len", f"{name}.onnx", model, by_bound,
               about + f"; runs to max_new_tokens = {cfg.max_new}, one row ended earlier by EOS")


def main(names: list[str]) -> None:
    warnings.filterwarnings("ignore")
    cfg = Config()
    for name, kind, differs, scripted in VARIANTS:
        if not names or name in names:
            make_variant(name, kind, differs, scripted, cfg)
    SUITE.write_toml()


if __name__ == "__main__":
    main(sys.argv[1:])

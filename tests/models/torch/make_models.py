"""Make the PyTorch corpus: loop models exported the way PyTorch users export them.

Run outside the test suite, in a venv of its own (loopc never depends on torch):

    python3 -m venv venv-torch
    venv-torch/bin/pip install -r tests/models/torch/requirements.txt
    venv-torch/bin/python tests/models/torch/make_models.py [GROUP ...]   # e.g. gpt2 encoder_decoder tacotron

Three exporter idioms are covered:

* traced ``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN`` stacks, TorchScript exporter (``dynamo=False``) with
  ``dynamic_axes``: the exporter writes ONNX LSTM/GRU/RNN nodes;
* ``torch.jit.script`` decoders with ``break``, ``list.append`` + ``torch.stack``, ``torch.cat`` caches and
  ``out[k] = c`` writes, and time loops around a recurrent cell or a linear-attention state, TorchScript
  exporter: the exporter writes ONNX Loop (and If, Sequence*) nodes;
* ``torch.export`` higher-order ops (``while_loop``, ``scan``) with ``dynamo=True`` and ``dynamic_shapes``.

Every model is built from fixed seeds. For each case the script writes ``<case>.onnx``,
``<case>.inputs.npz`` (keyed by graph input name), ``<case>.expected.npz`` (the eager PyTorch module's
outputs, keyed by graph output name), and finally ``cases.toml``. Each export is checked once against
onnxruntime so that a broken export fails here, not in the tests; the time loops are checked once more at another
time length and batch, so that an export baked to the example's sizes fails here too.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import sys
import tomllib
import warnings
from typing import Callable

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import Tensor, nn
from torch.nn import functional as F
from torch._higher_order_ops.scan import scan
from torch._higher_order_ops.while_loop import while_loop

HERE = pathlib.Path(__file__).resolve().parent
OPSET = 17  # the TorchScript exporter's opset; the dynamo exporter keeps its own default
TS = f"TorchScript exporter (torch {torch.__version__.split('+')[0]}, dynamo=False), opset {OPSET}"
DYNAMO = f"dynamo exporter (torch {torch.__version__.split('+')[0]}, dynamo=True, dynamic_shapes), its default opset 20"


# ---------------------------------------------------------------------------------------------------------------
# Hand-written recurrent cells. nn.GRUCell cannot be scripted and exported (README.md's habits list has the
# errors); nn.LSTMCell can, and lstm_cell_loop uses the real one.
# ---------------------------------------------------------------------------------------------------------------


class GRUCell(nn.Module):
    """A GRU cell written out, as users do when they script a decoder."""

    def __init__(self, inp: int, hidden: int) -> None:
        super().__init__()
        self.w_ih = nn.Linear(inp, 3 * hidden)
        self.w_hh = nn.Linear(hidden, 3 * hidden)

    def forward(self, x: Tensor, h: Tensor) -> Tensor:
        i_r, i_z, i_n = self.w_ih(x).chunk(3, -1)
        h_r, h_z, h_n = self.w_hh(h).chunk(3, -1)
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        return (1 - z) * n + z * h


class LSTMCell(nn.Module):
    """An LSTM cell written out; returns (h, c)."""

    def __init__(self, inp: int, hidden: int) -> None:
        super().__init__()
        self.w_ih = nn.Linear(inp, 4 * hidden)
        self.w_hh = nn.Linear(hidden, 4 * hidden)

    def forward(self, x: Tensor, h: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
        i, f, g, o = (self.w_ih(x) + self.w_hh(h)).chunk(4, -1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        return h, c


# ---------------------------------------------------------------------------------------------------------------
# Scripted decoders
# ---------------------------------------------------------------------------------------------------------------


class GreedyDecoder(nn.Module):
    """Seq2seq greedy decoding, batch 1: LSTM cell + dot attention over the encoder memory, argmax, break at EOS."""

    def __init__(self, vocab: int = 12, hidden: int = 16, eos: int = 0) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.cell = LSTMCell(hidden, hidden)
        self.out = nn.Linear(2 * hidden, vocab)
        self.eos = eos

    def forward(self, memory: Tensor, start: Tensor, max_len: Tensor) -> Tensor:
        h = torch.tanh(memory.mean(0))
        c = torch.zeros_like(h)
        token = start
        tokens: list[Tensor] = []
        for _ in range(int(max_len)):
            h, c = self.cell(self.embed(token), h, c)
            attn = torch.softmax(torch.matmul(memory, h), dim=0)
            ctx = torch.matmul(attn, memory)
            token = torch.argmax(self.out(torch.cat([h, ctx])))
            tokens.append(token)
            if int(token) == self.eos:
                break
        return torch.stack(tokens)


class GreedyStep(GreedyDecoder):
    """The same decoder and weights, its step a method, so that its variants differ only in how they stop."""

    def begin(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        h = torch.tanh(memory.mean(0))
        return h, torch.zeros_like(h)

    def step(self, memory: Tensor, token: Tensor, h: Tensor, c: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        h, c = self.cell(self.embed(token), h, c)
        attn = torch.softmax(torch.matmul(memory, h), dim=0)
        ctx = torch.matmul(attn, memory)
        return torch.argmax(self.out(torch.cat([h, ctx]))), h, c


class GreedyCountCondition(GreedyStep):
    """``while step < max_len and token != eos``, a counter of its own."""

    def forward(self, memory: Tensor, start: Tensor, max_len: Tensor) -> Tensor:
        h, c = self.begin(memory)
        token, step = start, 0
        tokens: list[Tensor] = []
        while step < int(max_len) and int(token) != self.eos:
            token, h, c = self.step(memory, token, h, c)
            tokens.append(token)
            step += 1
        return torch.stack(tokens)


class GreedyLenCondition(GreedyStep):
    """``while len(tokens) < max_len and token != eos``: the list's length is the count."""

    def forward(self, memory: Tensor, start: Tensor, max_len: Tensor) -> Tensor:
        h, c = self.begin(memory)
        token = start
        tokens: list[Tensor] = []
        while len(tokens) < int(max_len) and int(token) != self.eos:
            token, h, c = self.step(memory, token, h, c)
            tokens.append(token)
        return torch.stack(tokens)


class GreedyBreakFirst(GreedyStep):
    """``if token == eos: break`` before ``tokens.append(token)``: the EOS is not kept."""

    def forward(self, memory: Tensor, start: Tensor, max_len: Tensor) -> Tensor:
        h, c = self.begin(memory)
        token = start
        tokens: list[Tensor] = []
        for _ in range(int(max_len)):
            token, h, c = self.step(memory, token, h, c)
            if int(token) == self.eos:
                break
            tokens.append(token)
        return torch.stack(tokens)


class GreedyWhileTrue(GreedyStep):
    """``while True`` with both stops as one ``break``: ``token == eos or len(tokens) >= max_len``."""

    def forward(self, memory: Tensor, start: Tensor, max_len: Tensor) -> Tensor:
        h, c = self.begin(memory)
        token = start
        tokens: list[Tensor] = []
        while True:
            token, h, c = self.step(memory, token, h, c)
            tokens.append(token)
            if int(token) == self.eos or len(tokens) >= int(max_len):
                break
        return torch.stack(tokens)


class ItemConverge(nn.Module):
    """Newton's square root until the step is small, tested as users write it: ``bool(delta.item() > tol)`` of a
    [1] tensor, which TorchScript exports as a bool[1] loop condition."""

    def forward(self, x: Tensor) -> Tensor:
        delta = torch.ones(1)
        while bool(delta.item() > 1e-4):
            y = 0.5 * (x + 2.0 / x)
            delta = (y - x).abs().max().reshape(1)
            x = y
        return x


class CountedBreak(nn.Module):
    """``while step < n`` with ``if ...: break`` before ``step += 1``: the count moves in the branch that goes on."""

    def forward(self, x: Tensor, n: Tensor) -> Tensor:
        step = 0
        outs: list[Tensor] = []
        h = x
        while step < int(n):
            h = torch.tanh(h * 1.5 + 0.1)
            outs.append(h)
            if bool(h.sum() > 1.5):
                break
            step += 1
        return torch.stack(outs)


class TopKSamplingDecoder(nn.Module):
    """Batched top-k sampling with a GRU cell; the uniform draws are an input, so the run is deterministic.

    One step per row of ``noise``; a row's token is picked by inverse CDF over the softmax of its top-k logits.
    Finished rows keep emitting EOS, and the loop breaks once every row has finished.
    """

    def __init__(self, vocab: int = 12, hidden: int = 16, k: int = 4, eos: int = 0) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.cell = GRUCell(hidden, hidden)
        self.out = nn.Linear(hidden, vocab)
        self.k = k
        self.eos = eos

    def forward(self, h: Tensor, start: Tensor, noise: Tensor) -> tuple[Tensor, Tensor]:
        token = start
        finished = torch.zeros_like(start).to(torch.bool)
        tokens: list[Tensor] = []
        for t in range(noise.size(0)):
            h = self.cell(self.embed(token), h)
            top_vals, top_idx = torch.topk(self.out(h), self.k, dim=1)
            cdf = torch.cumsum(torch.softmax(top_vals, dim=1), dim=1)
            pick = (cdf < noise[t].unsqueeze(1)).to(torch.int64).sum(dim=1, keepdim=True).clamp(max=self.k - 1)
            nxt = torch.gather(top_idx, 1, pick).squeeze(1)
            nxt = nxt.masked_fill(finished, self.eos)
            tokens.append(nxt)
            finished = torch.logical_or(finished, nxt == self.eos)
            token = nxt
            if bool(finished.all()):
                break
        return torch.stack(tokens, 1), h


class BeamSearch(nn.Module):
    """Beam search (beam 3, batch 1) with a GRU cell and attention over the encoder memory.

    The start state is tiled over the beams (``repeat``: Tile), the memory broadcast (``expand``: Expand); each step
    takes ``topk`` over beam x vocab, reorders the states and the history with ``index_select``, and breaks when all
    beams have emitted EOS. Finished beams can only extend with EOS at no cost.
    """

    def __init__(self, vocab: int = 12, hidden: int = 12, beam: int = 3, bos: int = 1, eos: int = 0) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.cell = GRUCell(hidden, hidden)
        self.out = nn.Linear(2 * hidden, vocab)
        self.vocab, self.beam, self.bos, self.eos = vocab, beam, bos, eos
        eos_row = torch.full((1, vocab), -1e4)
        eos_row[0, eos] = 0.0
        self.register_buffer("eos_row", eos_row)
        init_scores = torch.full((beam,), -1e4)
        init_scores[0] = 0.0
        self.register_buffer("init_scores", init_scores)

    def forward(self, memory: Tensor, max_len: Tensor) -> tuple[Tensor, Tensor]:
        h = torch.tanh(memory.mean(0, keepdim=True)).repeat(self.beam, 1)
        mem = memory.unsqueeze(0).expand(self.beam, memory.size(0), memory.size(1))
        tokens = torch.full((self.beam,), self.bos, dtype=torch.long)
        scores = self.init_scores
        finished = torch.zeros(self.beam, dtype=torch.bool)
        history = torch.zeros((self.beam, 0), dtype=torch.long)
        for _ in range(int(max_len)):
            h = self.cell(self.embed(tokens), h)
            attn = torch.softmax(torch.bmm(mem, h.unsqueeze(2)).squeeze(2), dim=1)
            ctx = torch.bmm(attn.unsqueeze(1), mem).squeeze(1)
            logp = torch.log_softmax(self.out(torch.cat([h, ctx], 1)), dim=1)
            logp = torch.where(finished.unsqueeze(1), self.eos_row, logp)
            top_scores, top_idx = torch.topk((scores.unsqueeze(1) + logp).reshape(-1), self.beam)
            origin = torch.div(top_idx, self.vocab, rounding_mode="floor")
            tokens = torch.remainder(top_idx, self.vocab)
            h = h.index_select(0, origin)
            history = torch.cat([history.index_select(0, origin), tokens.unsqueeze(1)], 1)
            finished = torch.logical_or(finished.index_select(0, origin), tokens == self.eos)
            scores = top_scores
            if bool(finished.all()):
                break
        return history, scores


class CTCGreedy(nn.Module):
    """CTC greedy decoding, batch 1: a linear acoustic head, then per frame argmax, collapse repeats and blanks.

    Labels are written with ``out[k] = c`` into a preallocated tensor; ``length`` says how many are valid.
    """

    def __init__(self, feat: int = 8, classes: int = 6, blank: int = 0) -> None:
        super().__init__()
        self.head = nn.Linear(feat, classes)
        self.blank = blank

    def forward(self, features: Tensor) -> tuple[Tensor, Tensor]:
        log_probs = torch.log_softmax(self.head(features), dim=1)
        frames = log_probs.size(0)
        out = torch.full((frames,), self.blank, dtype=torch.long)
        k = 0
        prev = self.blank
        for t in range(frames):
            c = int(torch.argmax(log_probs[t]))
            if c != self.blank and c != prev:
                out[k] = c
                k += 1
            prev = c
        return out, torch.tensor(k)


class KVCacheDecoder(nn.Module):
    """Batched single-head attention decoding with a KV cache that grows by ``torch.cat`` every step.

    The prompt fills the cache first; each step attends over every cached position, appends the new key and value,
    and picks the argmax token. Breaks when every row has emitted EOS.
    """

    def __init__(self, vocab: int = 12, dim: int = 8, eos: int = 0) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.out = nn.Linear(dim, vocab)
        self.scale = 1.0 / math.sqrt(dim)
        self.eos = eos

    def forward(self, prompt: Tensor, max_len: Tensor) -> tuple[Tensor, Tensor]:
        x = self.embed(prompt)
        k_cache = self.wk(x)
        v_cache = self.wv(x)
        token = prompt[:, -1]
        finished = torch.zeros_like(token).to(torch.bool)
        tokens: list[Tensor] = []
        for _ in range(int(max_len)):
            e = self.embed(token)
            k_cache = torch.cat([k_cache, self.wk(e).unsqueeze(1)], 1)
            v_cache = torch.cat([v_cache, self.wv(e).unsqueeze(1)], 1)
            q = self.wq(e).unsqueeze(2)
            attn = torch.softmax(torch.bmm(k_cache, q).squeeze(2) * self.scale, dim=1)
            ctx = torch.bmm(attn.unsqueeze(1), v_cache).squeeze(1)
            nxt = torch.argmax(self.out(ctx + e), dim=1)
            nxt = nxt.masked_fill(finished, self.eos)
            tokens.append(nxt)
            finished = torch.logical_or(finished, nxt == self.eos)
            token = nxt
            if bool(finished.all()):
                break
        return torch.stack(tokens, 1), k_cache


class BeamSearchKV(nn.Module):
    """Beam search (beam 3, batch 1) over a single-head attention decoder with K/V caches, as Hugging Face runs it.

    The prompt fills the caches, tiled over the beams (``repeat``: Tile); each step appends the new key and value
    with ``torch.cat``, attends over every cached position, takes ``topk`` over beam x vocab and then reorders both
    caches, the history (also grown by ``torch.cat``) and the finished flags with ``index_select`` (the model's
    ``_reorder_cache``); breaks when all beams have emitted EOS. Finished beams can only extend with EOS at no cost.
    """

    def __init__(self, vocab: int = 12, dim: int = 8, beam: int = 3, eos: int = 0) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.out = nn.Linear(dim, vocab)
        self.scale = 1.0 / math.sqrt(dim)
        self.vocab, self.beam, self.eos = vocab, beam, eos
        eos_row = torch.full((1, vocab), -1e4)
        eos_row[0, eos] = 0.0
        self.register_buffer("eos_row", eos_row)
        init_scores = torch.full((beam,), -1e4)
        init_scores[0] = 0.0
        self.register_buffer("init_scores", init_scores)

    def forward(self, prompt: Tensor, max_len: Tensor) -> tuple[Tensor, Tensor]:
        x = self.embed(prompt).repeat(self.beam, 1, 1)
        k_cache = self.wk(x)
        v_cache = self.wv(x)
        token = prompt[:, -1].repeat(self.beam)
        scores = self.init_scores
        finished = torch.zeros(self.beam, dtype=torch.bool)
        history = torch.zeros((self.beam, 0), dtype=torch.long)
        for _ in range(int(max_len)):
            e = self.embed(token)
            k_cache = torch.cat([k_cache, self.wk(e).unsqueeze(1)], 1)
            v_cache = torch.cat([v_cache, self.wv(e).unsqueeze(1)], 1)
            q = self.wq(e).unsqueeze(2)
            attn = torch.softmax(torch.bmm(k_cache, q).squeeze(2) * self.scale, dim=1)
            ctx = torch.bmm(attn.unsqueeze(1), v_cache).squeeze(1)
            logp = torch.log_softmax(self.out(ctx + e), dim=1)
            logp = torch.where(finished.unsqueeze(1), self.eos_row, logp)
            top_scores, top_idx = torch.topk((scores.unsqueeze(1) + logp).reshape(-1), self.beam)
            origin = torch.div(top_idx, self.vocab, rounding_mode="floor")
            token = torch.remainder(top_idx, self.vocab)
            k_cache = k_cache.index_select(0, origin)
            v_cache = v_cache.index_select(0, origin)
            history = torch.cat([history.index_select(0, origin), token.unsqueeze(1)], 1)
            finished = torch.logical_or(finished.index_select(0, origin), token == self.eos)
            scores = top_scores
            if bool(finished.all()):
                break
        return history, scores


# ---------------------------------------------------------------------------------------------------------------
# Transformer and TTS decoders whose loops carry values grown by torch.cat and read in the same step
# ---------------------------------------------------------------------------------------------------------------


class CachedSelfAttention(nn.Module):
    """Multi-head causal self-attention appending this call's keys and values to its cache (GPT-2's ``past``).

    The cache is ``[batch, heads, past, head_dim]``; the new queries sit at positions ``past .. past + T - 1`` and see
    every key up to their own position.
    """

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.dim, self.heads, self.head_dim = dim, heads, dim // heads

    def forward(self, x: Tensor, k_cache: Tensor, v_cache: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        b, t, d = x.size(0), x.size(1), x.size(2)
        # GPT-2 splits by its constant width; split(x.size(2)) would export as SplitToSequence + SequenceAt.
        q, k, v = self.qkv(x).split(self.dim, dim=2)
        q = q.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k_cache = torch.cat([k_cache, k.view(b, t, self.heads, self.head_dim).transpose(1, 2)], 2)
        v_cache = torch.cat([v_cache, v.view(b, t, self.heads, self.head_dim).transpose(1, 2)], 2)
        past = k_cache.size(2) - t
        # permute, not transpose: a cache read from a list (SequenceAt) has no known rank in the exporter, nor
        # has what it is multiplied into, and the exporter refuses transpose of an unknown rank.
        scores = torch.matmul(q, k_cache.permute(0, 1, 3, 2)) / math.sqrt(self.head_dim)
        later = torch.arange(k_cache.size(2)).unsqueeze(0) > torch.arange(past, past + t).unsqueeze(1)
        scores = scores.masked_fill(later, float("-inf"))
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v_cache)
        return self.proj(ctx.permute(0, 2, 1, 3).reshape(b, t, d)), k_cache, v_cache


class CrossAttention(nn.Module):
    """Multi-head attention of the decoder's queries over the encoder output, its keys and values made once."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.proj = nn.Linear(dim, dim)
        self.dim, self.heads, self.head_dim = dim, heads, dim // heads

    def keys_values(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        b, s, d = memory.size(0), memory.size(1), memory.size(2)
        k, v = self.kv(memory).split(self.dim, dim=2)
        return (k.view(b, s, self.heads, self.head_dim).transpose(1, 2),
                v.view(b, s, self.heads, self.head_dim).transpose(1, 2))

    def forward(self, x: Tensor, k: Tensor, v: Tensor) -> Tensor:
        b, t, d = x.size(0), x.size(1), x.size(2)
        q = self.q(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        attn = torch.softmax(torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim), dim=-1)
        return self.proj(torch.matmul(attn, v).transpose(1, 2).reshape(b, t, d))


class EncoderSelfAttention(nn.Module):
    """Multi-head self-attention over the whole source (no mask, no cache)."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.heads, self.head_dim = heads, dim // heads

    def forward(self, x: Tensor) -> Tensor:
        b, t, d = x.size(0), x.size(1), x.size(2)
        q, k, v = self.qkv(x).view(b, t, 3 * self.heads, self.head_dim).transpose(1, 2).chunk(3, dim=1)
        attn = torch.softmax(torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim), dim=-1)
        return self.proj(torch.matmul(attn, v).transpose(1, 2).reshape(b, t, d))


class MLP(nn.Module):
    """GPT-2's feed-forward: Linear, GELU (tanh approximation), Linear."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, 4 * dim)
        self.proj = nn.Linear(4 * dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class GPT2Block(nn.Module):
    """Pre-norm GPT-2 block: ``x + attn(ln_1(x))``, then ``x + mlp(ln_2(x))``."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = CachedSelfAttention(dim, heads)
        self.ln_2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim)

    def forward(self, x: Tensor, k_cache: Tensor, v_cache: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        a, k_cache, v_cache = self.attn(self.ln_1(x), k_cache, v_cache)
        x = x + a
        return x + self.mlp(self.ln_2(x)), k_cache, v_cache


class GPT2Greedy(nn.Module):
    """GPT-2-style greedy generation: the prompt fills each layer's K/V cache, then one token per trip.

    Each layer's cache is an entry of a list (``ks[i]``, ``vs[i]``) grown by ``torch.cat`` on every trip; the new
    token's position is the cache's length. Finished rows keep emitting EOS; the loop breaks once every row has.
    """

    def __init__(self, vocab: int = 16, dim: int = 16, heads: int = 2, layers: int = 2, positions: int = 32,
                 eos: int = 0) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(positions, dim)
        self.blocks = nn.ModuleList([GPT2Block(dim, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.heads, self.head_dim, self.eos = heads, dim // heads, eos

    def logits(self, tokens: Tensor, ks: list[Tensor], vs: list[Tensor]) -> Tensor:
        past = ks[0].size(2)
        x = self.wte(tokens) + self.wpe(torch.arange(past, past + tokens.size(1)))
        i = 0
        for block in self.blocks:
            x, k, v = block(x, ks[i], vs[i])
            ks[i] = k
            vs[i] = v
            i += 1
        return self.lm_head(self.ln_f(x[:, -1]))

    def forward(self, prompt: Tensor, max_new_tokens: Tensor) -> Tensor:
        empty = torch.zeros(prompt.size(0), self.heads, 0, self.head_dim)
        ks: list[Tensor] = [empty for _ in self.blocks]
        vs: list[Tensor] = [empty for _ in self.blocks]
        logits = self.logits(prompt, ks, vs)
        finished = torch.zeros(prompt.size(0), dtype=torch.bool)
        tokens: list[Tensor] = []
        for _ in range(int(max_new_tokens)):
            token = torch.argmax(logits, dim=1).masked_fill(finished, self.eos)
            tokens.append(token)
            finished = torch.logical_or(finished, token == self.eos)
            if bool(finished.all()):
                break
            logits = self.logits(token.unsqueeze(1), ks, vs)
        return torch.stack(tokens, 1)


class GPT2GreedyUnrolledLayers(GPT2Greedy):
    """The same generator with the two layers written out: each layer's K and V caches are loop-carried tensors of
    their own (no list), each grown by ``torch.cat`` on every trip."""

    def step(self, tokens: Tensor, k0: Tensor, v0: Tensor, k1: Tensor, v1: Tensor
             ) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        past = k0.size(2)
        x = self.wte(tokens) + self.wpe(torch.arange(past, past + tokens.size(1)))
        x, k0, v0 = self.blocks[0](x, k0, v0)
        x, k1, v1 = self.blocks[1](x, k1, v1)
        return self.lm_head(self.ln_f(x[:, -1])), k0, v0, k1, v1

    def forward(self, prompt: Tensor, max_new_tokens: Tensor) -> Tensor:
        empty = torch.zeros(prompt.size(0), self.heads, 0, self.head_dim)
        logits, k0, v0, k1, v1 = self.step(prompt, empty, empty, empty, empty)
        finished = torch.zeros(prompt.size(0), dtype=torch.bool)
        tokens: list[Tensor] = []
        for _ in range(int(max_new_tokens)):
            token = torch.argmax(logits, dim=1).masked_fill(finished, self.eos)
            tokens.append(token)
            finished = torch.logical_or(finished, token == self.eos)
            if bool(finished.all()):
                break
            logits, k0, v0, k1, v1 = self.step(token.unsqueeze(1), k0, v0, k1, v1)
        return torch.stack(tokens, 1)


class GPT2StaticCache(nn.Module):
    """A GPT-2-style generator's weights run with a static cache, as ``torch.export`` users write it: each layer's K/V
    cache is preallocated to every position, written at the new position with ``index_copy`` and read under a mask of
    the later positions, in a ``while_loop`` until every row has emitted EOS or ``max_new_tokens`` tokens are out.
    The tokens go into a preallocated ``[batch, max_new]`` buffer (``index_copy`` at the trip), EOS after a row's end.
    """

    def __init__(self, base: GPT2Greedy, max_new: int = 12) -> None:
        super().__init__()
        self.base = base
        self.max_new = max_new
        self.positions = base.wpe.num_embeddings

    def attend(self, attn: CachedSelfAttention, x: Tensor, k_cache: Tensor, v_cache: Tensor, pos: Tensor
               ) -> tuple[Tensor, Tensor, Tensor]:
        b, t, d = x.size(0), x.size(1), x.size(2)
        q, k, v = attn.qkv(x).split(attn.dim, dim=2)
        q = q.view(b, t, attn.heads, attn.head_dim).transpose(1, 2)
        k_cache = k_cache.index_copy(2, pos, k.view(b, t, attn.heads, attn.head_dim).transpose(1, 2))
        v_cache = v_cache.index_copy(2, pos, v.view(b, t, attn.heads, attn.head_dim).transpose(1, 2))
        scores = torch.matmul(q, k_cache.transpose(2, 3)) / math.sqrt(attn.head_dim)
        later = torch.arange(self.positions).unsqueeze(0) > pos.unsqueeze(1)
        ctx = torch.matmul(torch.softmax(scores.masked_fill(later, float("-inf")), dim=-1), v_cache)
        return attn.proj(ctx.transpose(1, 2).reshape(b, t, d)), k_cache, v_cache

    def logits(self, tokens: Tensor, pos: Tensor, caches: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
        base = self.base
        x = base.wte(tokens) + base.wpe(pos)
        written: list[Tensor] = []
        for i, block in enumerate(base.blocks):
            a, k, v = self.attend(block.attn, block.ln_1(x), caches[2 * i], caches[2 * i + 1], pos)
            x = x + a
            x = x + block.mlp(block.ln_2(x))
            written += [k, v]
        return base.lm_head(base.ln_f(x[:, -1])), written

    def forward(self, prompt: Tensor, max_new_tokens: Tensor) -> tuple[Tensor, Tensor]:
        base, batch = self.base, prompt.size(0)
        empty = torch.zeros(batch, base.heads, self.positions, base.head_dim)
        logits, caches = self.logits(prompt, torch.arange(prompt.size(1)), [empty] * (2 * len(base.blocks)))
        tokens = torch.full((batch, self.max_new), base.eos, dtype=torch.int64)
        finished = torch.zeros(batch, dtype=torch.bool)
        start = torch.full((), prompt.size(1), dtype=torch.int64)

        def cond(i: Tensor, pos: Tensor, logits: Tensor, finished: Tensor, tokens: Tensor, *caches: Tensor) -> Tensor:
            return (i < max_new_tokens) & (i < self.max_new) & torch.logical_not(finished.all())

        def body(i: Tensor, pos: Tensor, logits: Tensor, finished: Tensor, tokens: Tensor, *caches: Tensor
                 ) -> tuple[Tensor, ...]:
            token = torch.argmax(logits, dim=1).masked_fill(finished, base.eos)
            tokens = tokens.index_copy(1, i.reshape(1), token.unsqueeze(1))
            finished = torch.logical_or(finished, token == base.eos)
            logits, written = self.logits(token.unsqueeze(1), pos.reshape(1), list(caches))
            return (i + 1, pos + 1, logits, finished, tokens, *written)

        steps, _, _, _, tokens, *_ = while_loop(
            cond, body, (torch.zeros((), dtype=torch.int64), start, logits, finished, tokens, *caches))
        return tokens, steps


class StaticCacheAttention(nn.Module):
    """A GPT-2 attention's weights over a static cache written in place at ``pos`` (``index_copy_``), the later
    positions masked."""

    def __init__(self, attn: CachedSelfAttention, positions: int) -> None:
        super().__init__()
        self.attn = attn
        self.positions = positions

    def forward(self, x: Tensor, k_cache: Tensor, v_cache: Tensor, pos: Tensor) -> Tensor:
        attn = self.attn
        b, t, d = x.size(0), x.size(1), x.size(2)
        q, k, v = attn.qkv(x).split(attn.dim, dim=2)
        q = q.view(b, t, attn.heads, attn.head_dim).transpose(1, 2)
        k_cache.index_copy_(2, pos, k.view(b, t, attn.heads, attn.head_dim).transpose(1, 2))
        v_cache.index_copy_(2, pos, v.view(b, t, attn.heads, attn.head_dim).transpose(1, 2))
        scores = torch.matmul(q, k_cache.transpose(2, 3)) / math.sqrt(attn.head_dim)
        later = torch.arange(self.positions).unsqueeze(0) > pos.unsqueeze(1)
        ctx = torch.matmul(torch.softmax(scores.masked_fill(later, float("-inf")), dim=-1), v_cache)
        return attn.proj(ctx.transpose(1, 2).reshape(b, t, d))


class StaticCacheBlock(nn.Module):
    """A GPT-2 block's weights over a static cache (see :class:`StaticCacheAttention`)."""

    def __init__(self, block: GPT2Block, positions: int) -> None:
        super().__init__()
        self.ln_1, self.ln_2, self.mlp = block.ln_1, block.ln_2, block.mlp
        self.attn = StaticCacheAttention(block.attn, positions)

    def forward(self, x: Tensor, k_cache: Tensor, v_cache: Tensor, pos: Tensor) -> Tensor:
        x = x + self.attn(self.ln_1(x), k_cache, v_cache, pos)
        return x + self.mlp(self.ln_2(x))


class GPT2StaticCacheScripted(nn.Module):
    """The GPT-2-style generator's weights with a static cache in a scripted loop: each layer's K and V caches are
    preallocated to every position and written in place with ``index_copy_`` (the two layers written out), the
    tokens written in place into a ``[batch, max_new_tokens]`` buffer (``out[:, i] = token``); breaks once every row
    has emitted EOS and returns the buffer cut to the steps run."""

    def __init__(self, base: GPT2Greedy) -> None:
        super().__init__()
        self.wte, self.wpe, self.ln_f, self.lm_head = base.wte, base.wpe, base.ln_f, base.lm_head
        positions = base.wpe.num_embeddings
        self.block0 = StaticCacheBlock(base.blocks[0], positions)
        self.block1 = StaticCacheBlock(base.blocks[1], positions)
        self.heads, self.head_dim, self.positions, self.eos = base.heads, base.head_dim, positions, base.eos

    def step(self, tokens: Tensor, pos: Tensor, k0: Tensor, v0: Tensor, k1: Tensor, v1: Tensor) -> Tensor:
        x = self.wte(tokens) + self.wpe(pos)
        x = self.block0(x, k0, v0, pos)
        x = self.block1(x, k1, v1, pos)
        return self.lm_head(self.ln_f(x[:, -1]))

    def forward(self, prompt: Tensor, max_new_tokens: Tensor) -> Tensor:
        batch, start = prompt.size(0), prompt.size(1)
        k0 = torch.zeros(batch, self.heads, self.positions, self.head_dim)
        v0, k1, v1 = torch.zeros_like(k0), torch.zeros_like(k0), torch.zeros_like(k0)
        logits = self.step(prompt, torch.arange(start), k0, v0, k1, v1)
        out = torch.full((batch, int(max_new_tokens)), self.eos, dtype=torch.long)
        finished = torch.zeros(batch, dtype=torch.bool)
        steps = 0
        for i in range(int(max_new_tokens)):
            token = torch.argmax(logits, dim=1).masked_fill(finished, self.eos)
            out[:, i] = token
            steps = i + 1
            finished = torch.logical_or(finished, token == self.eos)
            if bool(finished.all()):
                break
            logits = self.step(token.unsqueeze(1), torch.full((1,), start + i, dtype=torch.long), k0, v0, k1, v1)
        return out[:, :steps]


class EncoderDecoderGreedy(nn.Module):
    """Encoder-decoder greedy decoding (T5/Whisper-shaped): an encoder block over the source, then a decoder block
    with causal self-attention over its own growing K/V cache and cross-attention over the encoder output.

    The cross-attention keys and values are made once before the loop; the self-attention cache grows by
    ``torch.cat`` each trip. Starts from BOS, breaks once every row has emitted EOS.
    """

    def __init__(self, vocab: int = 14, dim: int = 16, heads: int = 2, positions: int = 32, bos: int = 1,
                 eos: int = 0) -> None:
        super().__init__()
        self.src_embed = nn.Embedding(vocab, dim)
        self.tgt_embed = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(positions, dim)
        self.enc_ln = nn.LayerNorm(dim)
        self.enc_attn = EncoderSelfAttention(dim, heads)
        self.enc_ln_mlp = nn.LayerNorm(dim)
        self.enc_mlp = MLP(dim)
        self.enc_ln_f = nn.LayerNorm(dim)
        self.dec_ln_self = nn.LayerNorm(dim)
        self.dec_self = CachedSelfAttention(dim, heads)
        self.dec_ln_cross = nn.LayerNorm(dim)
        self.dec_cross = CrossAttention(dim, heads)
        self.dec_ln_mlp = nn.LayerNorm(dim)
        self.dec_mlp = MLP(dim)
        self.dec_ln_f = nn.LayerNorm(dim)
        self.out = nn.Linear(dim, vocab)
        self.heads, self.head_dim, self.bos, self.eos = heads, dim // heads, bos, eos

    def encode(self, src: Tensor) -> Tensor:
        x = self.src_embed(src) + self.pos(torch.arange(src.size(1)))
        x = x + self.enc_attn(self.enc_ln(x))
        x = x + self.enc_mlp(self.enc_ln_mlp(x))
        return self.enc_ln_f(x)

    def forward(self, src: Tensor, max_len: Tensor) -> Tensor:
        cross_k, cross_v = self.dec_cross.keys_values(self.encode(src))
        k_cache = torch.zeros(src.size(0), self.heads, 0, self.head_dim)
        v_cache = torch.zeros(src.size(0), self.heads, 0, self.head_dim)
        token = torch.full((src.size(0),), self.bos, dtype=torch.long)
        finished = torch.zeros(src.size(0), dtype=torch.bool)
        tokens: list[Tensor] = []
        for step in range(int(max_len)):
            x = (self.tgt_embed(token) + self.pos.weight[step]).unsqueeze(1)
            a, k_cache, v_cache = self.dec_self(self.dec_ln_self(x), k_cache, v_cache)
            x = x + a
            x = x + self.dec_cross(self.dec_ln_cross(x), cross_k, cross_v)
            x = x + self.dec_mlp(self.dec_ln_mlp(x))
            token = torch.argmax(self.out(self.dec_ln_f(x[:, 0])), dim=1).masked_fill(finished, self.eos)
            tokens.append(token)
            finished = torch.logical_or(finished, token == self.eos)
            if bool(finished.all()):
                break
        return torch.stack(tokens, 1)


class TacotronCatDecoder(nn.Module):
    """Tacotron-style autoregressive mel decoder: the last frame of the growing mel output is the next input.

    Per trip: a ReLU prenet on ``mel[:, -1]`` (the go frame first), a GRU cell over the prenet output and the pooled
    text encoding, a mel frame and a stop gate; the frame is appended with ``torch.cat``. The loop breaks once every
    row's gate has fired. After the loop a two-layer Conv1d postnet adds its residual.
    """

    def __init__(self, vocab: int = 12, dim: int = 16, n_mel: int = 8, prenet: int = 16) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.prenet1 = nn.Linear(n_mel, prenet)
        self.prenet2 = nn.Linear(prenet, prenet)
        self.cell = GRUCell(prenet + dim, dim)
        self.frame = nn.Linear(dim, n_mel)
        self.gate = nn.Linear(dim, 1)
        self.post1 = nn.Conv1d(n_mel, 16, 5, padding=2)
        self.post2 = nn.Conv1d(16, n_mel, 5, padding=2)
        self.n_mel = n_mel

    def forward(self, text: Tensor, max_frames: Tensor) -> tuple[Tensor, Tensor]:
        enc = torch.tanh(self.embed(text)).mean(1)
        h = torch.tanh(enc)
        mel = torch.zeros(text.size(0), 1, self.n_mel)
        gates = torch.zeros(text.size(0), 0)
        for _ in range(int(max_frames)):
            p = torch.relu(self.prenet2(torch.relu(self.prenet1(mel[:, -1]))))
            h = self.cell(torch.cat([p, enc], 1), h)
            mel = torch.cat([mel, self.frame(h).unsqueeze(1)], 1)
            gate = self.gate(h)
            gates = torch.cat([gates, gate], 1)
            if bool((torch.sigmoid(gate) > 0.5).all()):
                break
        frames = mel[:, 1:].transpose(1, 2)
        post = frames + self.post2(torch.tanh(self.post1(frames)))
        return post.transpose(1, 2), gates


# ---------------------------------------------------------------------------------------------------------------
# Scripted time loops around a recurrent cell or a linear-attention state (one trip per time step)
# ---------------------------------------------------------------------------------------------------------------


class LSTMCellLoop(nn.Module):
    """The real ``nn.LSTMCell`` stepped over time by hand, with a linear head on every step's ``h``."""

    def __init__(self, inp: int = 64, hidden: int = 128, out: int = 64) -> None:
        super().__init__()
        self.cell = nn.LSTMCell(inp, hidden)
        self.head = nn.Linear(hidden, out)

    def forward(self, x: Tensor, h0: Tensor, c0: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        h, c = h0, c0
        outs: list[Tensor] = []
        for t in range(x.size(0)):
            h, c = self.cell(x[t], (h, c))
            outs.append(self.head(h))
        return torch.stack(outs), h, c


class GRUCellLoop(nn.Module):
    """A GRU cell (written out: ``nn.GRUCell`` does not export) over time; the head writes ``out[t]`` in place."""

    def __init__(self, inp: int = 64, hidden: int = 128, out: int = 64) -> None:
        super().__init__()
        self.cell = GRUCell(inp, hidden)
        self.head = nn.Linear(hidden, out)
        self.out = out

    def forward(self, x: Tensor, h0: Tensor) -> tuple[Tensor, Tensor]:
        h = h0
        out = torch.zeros(x.size(0), x.size(1), self.out)
        for t in range(x.size(0)):
            h = self.cell(x[t], h)
            out[t] = self.head(h)
        return out, h


class ChunkLSTMLoop(nn.Module):
    """An LSTM step written in the loop body itself: raw weights, ``gates.chunk(4, 1)``; stacks every ``h``."""

    def __init__(self, inp: int = 64, hidden: int = 128) -> None:
        super().__init__()
        bound = 1.0 / math.sqrt(hidden)
        self.w_ih = nn.Parameter(torch.empty(4 * hidden, inp).uniform_(-bound, bound))
        self.w_hh = nn.Parameter(torch.empty(4 * hidden, hidden).uniform_(-bound, bound))
        self.b = nn.Parameter(torch.empty(4 * hidden).uniform_(-bound, bound))

    def forward(self, x: Tensor, h0: Tensor, c0: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        h, c = h0, c0
        outs: list[Tensor] = []
        for t in range(x.size(0)):
            gates = x[t] @ self.w_ih.t() + h @ self.w_hh.t() + self.b
            i, f, g, o = gates.chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs.append(h)
        return torch.stack(outs), h, c


class LinearAttention(nn.Module):
    """Causal linear attention (Katharopoulos et al. 2020) in its recurrent form, one head.

    phi(u) = elu(u) + 1; per step S += phi(k)^T v (a batched outer product), z += phi(k),
    y = phi(q) S / (phi(q) . z + eps), written with ``einsum`` as the paper's reference code does.
    """

    def __init__(self, dim: int = 64, head: int = 32) -> None:
        super().__init__()
        self.wq = nn.Linear(dim, head, bias=False)
        self.wk = nn.Linear(dim, head, bias=False)
        self.wv = nn.Linear(dim, head, bias=False)
        self.head = head

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        s = torch.zeros(x.size(1), self.head, self.head)
        z = torch.zeros(x.size(1), self.head)
        outs: list[Tensor] = []
        for t in range(x.size(0)):
            q = torch.nn.functional.elu(self.wq(x[t])) + 1
            k = torch.nn.functional.elu(self.wk(x[t])) + 1
            v = self.wv(x[t])
            s = s + torch.einsum("bi,bj->bij", k, v)
            z = z + k
            num = torch.einsum("bi,bij->bj", q, s)
            den = torch.einsum("bi,bi->b", q, z) + 1e-6
            outs.append(num / den.unsqueeze(1))
        return torch.stack(outs), s, z


class RetentionDecay(nn.Module):
    """RetNet-style recurrent retention, 2 heads of 16: S = gamma * S + k^T v per head, y = q S, out projection.

    Written the way the recurrent form is usually written: heads by ``view``, the outer product and ``q S`` by
    broadcasting and ``sum``, a constant decay per head as a buffer.
    """

    def __init__(self, dim: int = 64, heads: int = 2, head_dim: int = 16) -> None:
        super().__init__()
        self.wq = nn.Linear(dim, heads * head_dim, bias=False)
        self.wk = nn.Linear(dim, heads * head_dim, bias=False)
        self.wv = nn.Linear(dim, heads * head_dim, bias=False)
        self.proj = nn.Linear(heads * head_dim, dim)
        self.register_buffer("gamma", torch.tensor([0.9, 0.97]).view(1, heads, 1, 1))
        self.heads, self.head_dim = heads, head_dim

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        bsz = x.size(1)
        s = torch.zeros(bsz, self.heads, self.head_dim, self.head_dim)
        outs: list[Tensor] = []
        for t in range(x.size(0)):
            q = self.wq(x[t]).view(bsz, self.heads, self.head_dim)
            k = self.wk(x[t]).view(bsz, self.heads, self.head_dim)
            v = self.wv(x[t]).view(bsz, self.heads, self.head_dim)
            s = self.gamma * s + k.unsqueeze(3) * v.unsqueeze(2)
            y = (q.unsqueeze(3) * s).sum(2)
            outs.append(self.proj(y.reshape(bsz, self.heads * self.head_dim)))
        return torch.stack(outs), s


# ---------------------------------------------------------------------------------------------------------------
# torch.export higher-order ops (dynamo exporter)
# ---------------------------------------------------------------------------------------------------------------


class WhileConverge(nn.Module):
    """``while_loop`` with a data-dependent condition: contract ``x`` until it is small or ``limit`` trips ran."""

    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x: Tensor, limit: Tensor) -> tuple[Tensor, Tensor]:
        def cond(i: Tensor, x: Tensor) -> Tensor:
            return (i < limit) & (x.abs().max() > 0.05)

        def body(i: Tensor, x: Tensor) -> tuple[Tensor, Tensor]:
            return i + 1, 0.8 * torch.tanh(self.proj(x))

        trips, y = while_loop(cond, body, (torch.zeros((), dtype=torch.int64), x))
        return trips, y


class ScanRNN(nn.Module):
    """An Elman RNN over time written with ``scan``: returns the last state and every step's output."""

    def __init__(self, inp: int = 4, hidden: int = 8) -> None:
        super().__init__()
        self.w_x = nn.Linear(inp, hidden)
        self.w_h = nn.Linear(hidden, hidden, bias=False)
        self.w_y = nn.Linear(hidden, 3)

    def forward(self, xs: Tensor, h0: Tensor) -> tuple[Tensor, Tensor]:
        def step(h: Tensor, x: Tensor) -> tuple[Tensor, Tensor]:
            h = torch.tanh(self.w_x(x) + self.w_h(h))
            return h, self.w_y(h)

        return scan(step, h0, xs)


class ScanDiscountedReturns(nn.Module):
    """Discounted returns G_t = r_t + gamma * G_{t+1}, a reversed ``scan`` over time (RL idiom)."""

    def forward(self, rewards: Tensor, gamma: Tensor) -> Tensor:
        def step(g: Tensor, r: Tensor) -> tuple[Tensor, Tensor]:
            g = r + gamma * g
            return g, g.clone()

        _, returns = scan(step, torch.zeros_like(rewards[0]), rewards, reverse=True)
        return returns


# ---------------------------------------------------------------------------------------------------------------
# Export and bookkeeping
# ---------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Case:
    name: str
    path: str
    about: str
    rtol: float | None = None
    atol: float | None = None
    #: loopc's refusal, for a case at a known limit of loopc (the corpus test checks it is stated)
    refusal: str | None = None
    #: the bound a while loop that stops on data alone needs (``--max-trips``)
    max_trips: int | None = None


CASES: list[Case] = []



def _flatten(outputs: object) -> list[Tensor]:
    if isinstance(outputs, Tensor):
        return [outputs]
    flat: list[Tensor] = []
    for item in outputs:  # type: ignore[union-attr]
        flat.extend(_flatten(item))
    return flat


def _graph_io(path: pathlib.Path) -> tuple[list[str], list[str]]:
    model = onnx.load(str(path))
    return [i.name for i in model.graph.input], [o.name for o in model.graph.output]


def check_ort(
    name: str, model_file: str, module: nn.Module, inputs: dict[str, Tensor], rtol: float | None, atol: float | None
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[Tensor]]:
    """Run ``module`` eagerly and the export in onnxruntime on ``inputs``; raise unless they agree.

    Returns the feeds and the eager outputs keyed by the model's graph names, and the eager outputs.
    """
    in_names, out_names = _graph_io(HERE / model_file)
    if in_names != list(inputs):
        raise RuntimeError(f"{model_file}: graph inputs {in_names} differ from the example inputs {list(inputs)}")
    with torch.no_grad():
        eager = _flatten(module(*inputs.values()))
    if len(eager) != len(out_names):
        raise RuntimeError(f"{model_file}: {len(out_names)} graph outputs, {len(eager)} eager outputs")
    feeds = {k: v.numpy() for k, v in inputs.items()}
    expected = {k: v.numpy() for k, v in zip(out_names, eager)}
    options = ort.SessionOptions()
    options.log_severity_level = 3  # the exporters' stale value_info shapes make onnxruntime warn at every trip
    got = ort.InferenceSession(str(HERE / model_file), options, providers=["CPUExecutionProvider"]).run(None, feeds)
    for out, value in zip(out_names, got):
        want = expected[out]
        if value.shape != want.shape or value.dtype != want.dtype:
            raise RuntimeError(f"{name}: onnxruntime gives {out} {value.dtype}{value.shape}, eager {want.dtype}{want.shape}")
        np.testing.assert_allclose(value, want, rtol=rtol or 1e-4, atol=atol or 1e-5, err_msg=f"{name}: {out}")
    return feeds, expected, eager


def save_case(
    name: str,
    model_file: str,
    module: nn.Module,
    inputs: dict[str, Tensor],
    about: str,
    rtol: float | None = None,
    atol: float | None = None,
    refusal: str | None = None,
    other_sizes: dict[str, Tensor] | None = None,
    max_trips: int | None = None,
) -> list[Tensor]:
    """Save inputs and eager outputs of ``module`` under the model's graph names; check onnxruntime agrees.

    ``other_sizes``: inputs of other dynamic sizes (time, batch), checked against onnxruntime as well but not
    saved, so that an export baked to the example's sizes fails here.
    """
    feeds, expected, eager = check_ort(name, model_file, module, inputs, rtol, atol)
    if other_sizes is not None:
        check_ort(name, model_file, module, other_sizes, rtol, atol)
    np.savez(HERE / f"{name}.inputs.npz", **feeds)
    np.savez(HERE / f"{name}.expected.npz", **expected)
    CASES.append(Case(name, model_file, about, rtol, atol, refusal, max_trips))
    shapes = ", ".join(f"{k}{list(v.shape)}" for k, v in expected.items())
    also = "" if other_sizes is None else "; also at " + ", ".join(f"{k}{list(v.shape)}" for k, v in other_sizes.items())
    print(f"{name}: {model_file} ok against onnxruntime; outputs {shapes}{also}")
    return eager


def export_ts(
    name: str,
    module: nn.Module,
    inputs: dict[str, Tensor],
    outputs: list[str],
    dynamic_axes: dict[str, dict[int, str]],
    script: bool,
) -> None:
    """TorchScript exporter: trace ``module`` or script it first (so that Python loops stay loops)."""
    model: nn.Module = torch.jit.script(module) if script else module
    torch.onnx.export(
        model,
        tuple(inputs.values()),
        str(HERE / f"{name}.onnx"),
        input_names=list(inputs),
        output_names=outputs,
        dynamic_axes=dynamic_axes,
        opset_version=OPSET,
        dynamo=False,
    )


def export_dynamo(name: str, module: nn.Module, inputs: dict[str, Tensor], outputs: list[str], dynamic_shapes: object) -> None:
    """Dynamo exporter (``torch.export`` underneath) with named outputs and ``dynamic_shapes``."""
    torch.onnx.export(
        module,
        tuple(inputs.values()),
        str(HERE / f"{name}.onnx"),
        input_names=list(inputs),
        output_names=outputs,
        dynamic_shapes=dynamic_shapes,
        dynamo=True,
        external_data=False,
        verbose=False,
    )


def search(make: Callable[[int], dict[str, Tensor]], run: Callable[[dict[str, Tensor]], bool], what: str) -> dict[str, Tensor]:
    """The first seeded example input for which ``run`` says the loop behaves as wanted (fixed seeds: reproducible)."""
    for seed in range(2000):
        inputs = make(seed)
        with torch.no_grad():
            if run(inputs):
                return inputs
    raise RuntimeError(f"no example input found for {what}")


def rnd(rng: np.random.Generator, *shape: int) -> Tensor:
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32))


def scalar(v: int) -> Tensor:
    return torch.tensor(v, dtype=torch.int64)


# ---------------------------------------------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------------------------------------------


def rnn_stacks() -> None:
    rng = np.random.default_rng(1)
    torch.manual_seed(1)
    lstm = nn.LSTM(6, 8, num_layers=2, bidirectional=True, batch_first=True).eval()
    inputs = {"x": rnd(rng, 3, 7, 6)}
    export_ts("lstm_bidir_2layer", lstm, inputs, ["output", "h_n", "c_n"],
              {"x": {0: "batch", 1: "seq"}, "output": {0: "batch", 1: "seq"}, "h_n": {1: "batch"}, "c_n": {1: "batch"}},
              script=False)
    save_case("lstm_bidir_2layer", "lstm_bidir_2layer.onnx", lstm, inputs,
              f"nn.LSTM(6, 8, num_layers=2, bidirectional=True, batch_first=True), traced, {TS}, dynamic batch and seq")

    torch.manual_seed(2)
    gru = nn.GRU(6, 8, num_layers=2, bidirectional=True).eval()
    inputs = {"x": rnd(rng, 9, 2, 6), "h0": rnd(rng, 4, 2, 8)}
    export_ts("gru_bidir_2layer", gru, inputs, ["output", "h_n"],
              {"x": {0: "seq", 1: "batch"}, "h0": {1: "batch"}, "output": {0: "seq", 1: "batch"}, "h_n": {1: "batch"}},
              script=False)
    save_case("gru_bidir_2layer", "gru_bidir_2layer.onnx", gru, inputs,
              f"nn.GRU(6, 8, num_layers=2, bidirectional=True) with an initial state, traced, {TS}, dynamic seq and batch")

    torch.manual_seed(3)
    rnn = nn.RNN(6, 8, num_layers=2, bidirectional=True, nonlinearity="tanh").eval()
    inputs = {"x": rnd(rng, 5, 4, 6)}
    export_ts("rnn_bidir_2layer", rnn, inputs, ["output", "h_n"],
              {"x": {0: "seq", 1: "batch"}, "output": {0: "seq", 1: "batch"}, "h_n": {1: "batch"}}, script=False)
    save_case("rnn_bidir_2layer", "rnn_bidir_2layer.onnx", rnn, inputs,
              f"nn.RNN(6, 8, num_layers=2, bidirectional=True, nonlinearity='tanh'), traced, {TS}, dynamic seq and batch")

    torch.manual_seed(4)
    lstm = nn.LSTM(6, 8, num_layers=1, batch_first=True).eval()
    inputs = {"x": rnd(rng, 2, 6, 6)}
    batch, seq = torch.export.Dim("batch", min=1, max=64), torch.export.Dim("seq", min=1, max=64)
    export_dynamo("lstm_dynamo", lstm, inputs, ["output", "h_n", "c_n"], ({0: batch, 1: seq},))
    save_case("lstm_dynamo", "lstm_dynamo.onnx", lstm, inputs,
              f"nn.LSTM(6, 8, batch_first=True), {DYNAMO}, dynamic batch and seq")


def greedy() -> None:
    torch.manual_seed(10)
    model = GreedyDecoder().eval()

    def make(seed: int) -> dict[str, Tensor]:
        rng = np.random.default_rng(seed)
        return {"memory": rnd(rng, 5, 16), "start": scalar(int(rng.integers(1, 12))), "max_len": scalar(12)}

    def stops_at_eos(inp: dict[str, Tensor]) -> bool:
        out = model(*inp.values())
        return 4 <= out.numel() <= 8 and int(out[-1]) == model.eos

    def runs_out(inp: dict[str, Tensor]) -> bool:
        out = model(*inp.values())
        return out.numel() == 12 and int(out[-1]) != model.eos

    export_ts("greedy_decoder", model, make(0), ["tokens"], {"memory": {0: "src_len"}, "tokens": {0: "steps"}}, script=True)
    about = (f"greedy seq2seq decoder (hand-written LSTM cell, attention over memory, argmax, `if token == eos: break`,"
             f" list.append + torch.stack, max_len input), torch.jit.script, {TS}, dynamic src_len")
    save_case("greedy_decoder", "greedy_decoder.onnx", model, search(make, stops_at_eos, "greedy_decoder"),
              about + "; stops at EOS")
    inputs = search(make, runs_out, "greedy_decoder (max_len)")
    inputs["max_len"] = scalar(7)
    save_case("greedy_decoder_max_len", "greedy_decoder.onnx", model, inputs, about + "; runs to max_len, no EOS")


def greedy_stops() -> None:
    """``greedy``'s decoder and weights, stopping the ways users write it: a counter or the list's length in the
    while condition, a ``break`` before the append, and ``while True`` with one ``break``."""
    variants = {
        "greedy_count_condition": (GreedyCountCondition, "`while step < max_len and token != eos`", None),
        "greedy_len_condition": (GreedyLenCondition, "`while len(tokens) < max_len and token != eos`", None),
        "greedy_break_first": (GreedyBreakFirst, "`if token == eos: break` before `tokens.append(token)`", None),
        "greedy_while_true": (GreedyWhileTrue, "`while True:` ... `if token == eos or len(tokens) >= max_len: break`",
                              None),
    }
    for name, (kind, stop, max_trips) in variants.items():
        torch.manual_seed(10)
        model = kind().eval()

        def make(seed: int) -> dict[str, Tensor]:
            rng = np.random.default_rng(seed)
            return {"memory": rnd(rng, 5, 16), "start": scalar(int(rng.integers(1, 12))), "max_len": scalar(12)}

        def stops_early(inp: dict[str, Tensor]) -> bool:
            return 3 <= model(*inp.values()).numel() <= 8

        def runs_out(inp: dict[str, Tensor]) -> bool:
            return model(*inp.values()).numel() == 12

        export_ts(name, model, make(0), ["tokens"], {"memory": {0: "src_len"}, "tokens": {0: "steps"}}, script=True)
        about = (f"`greedy_decoder`'s model stopping with {stop}, list.append + torch.stack, torch.jit.script, {TS}, "
                 "dynamic src_len")
        save_case(name, f"{name}.onnx", model, search(make, stops_early, name), about + "; stops at EOS",
                  max_trips=max_trips)
        inputs = search(make, runs_out, f"{name} (max_len)")
        inputs["max_len"] = scalar(7)
        save_case(f"{name}_max_len", f"{name}.onnx", model, inputs, about + "; runs to max_len, no EOS",
                  max_trips=max_trips)


def item_condition() -> None:
    model = ItemConverge().eval()
    inputs = {"x": torch.tensor([3.0, 5.0, 0.5])}
    export_ts("item_condition_converge", model, inputs, ["root"], {"x": {0: "n"}}, script=True)
    save_case("item_condition_converge", "item_condition_converge.onnx", model, inputs,
              f"Newton iteration `while bool(delta.item() > 1e-4)` with delta of shape [1] (a bool[1] Loop condition), "
              f"torch.jit.script, {TS}, dynamic n", other_sizes={"x": torch.tensor([9.0, 2.0])})


def counted_break() -> None:
    model = CountedBreak().eval()
    about = f"`while step < n:` ... `if h.sum() > 1.5: break` before `step += 1`, torch.jit.script, {TS}, dynamic d"
    export_ts("counted_break", model, {"x": torch.tensor([0.3, 0.2]), "n": scalar(9)}, ["hs"], {"x": {0: "d"}},
              script=True)
    save_case("counted_break", "counted_break.onnx", model, {"x": torch.tensor([0.3, 0.2]), "n": scalar(9)},
              about + "; breaks")
    save_case("counted_break_runs_out", "counted_break.onnx", model, {"x": torch.tensor([-0.3, -0.2]), "n": scalar(5)},
              about + "; runs to n")


def topk_sampling() -> None:
    torch.manual_seed(11)
    model = TopKSamplingDecoder().eval()
    with torch.no_grad():
        model.out.bias[model.eos] += 0.5

    def make(seed: int) -> dict[str, Tensor]:
        rng = np.random.default_rng(seed)
        return {
            "h": rnd(rng, 3, 16),
            "start": torch.from_numpy(rng.integers(1, 12, size=3)),
            "noise": torch.from_numpy(rng.uniform(size=(12, 3)).astype(np.float32)),
        }

    def stops_early(inp: dict[str, Tensor]) -> bool:
        tokens, _ = model(*inp.values())
        return 4 <= tokens.shape[1] <= 9 and bool((tokens[:, -1] == model.eos).all()) and _robust(model, inp)

    export_ts("topk_sampling_decoder", model, make(0), ["tokens", "h_last"],
              {"h": {0: "batch"}, "start": {0: "batch"}, "noise": {0: "steps", 1: "batch"},
               "tokens": {0: "batch", 1: "out_steps"}, "h_last": {0: "batch"}}, script=True)
    save_case("topk_sampling_decoder", "topk_sampling_decoder.onnx", model, search(make, stops_early, "topk_sampling"),
              "top-k (k=4) sampling decoder, batched (hand-written GRU cell, torch.topk, inverse CDF on a noise input,"
              f" torch.gather, break when all rows hit EOS, list.append + torch.stack), torch.jit.script, {TS},"
              " dynamic batch and steps (trip count = noise rows)")


def _robust(model: TopKSamplingDecoder, inp: dict[str, Tensor]) -> bool:
    """True when no uniform draw lies within 1e-3 of a CDF edge, so rounding cannot flip a sampled token."""
    h, token, noise = inp["h"], inp["start"], inp["noise"]
    finished = torch.zeros_like(token).to(torch.bool)
    for t in range(noise.size(0)):
        h = model.cell(model.embed(token), h)
        top_vals, top_idx = torch.topk(model.out(h), model.k, dim=1)
        cdf = torch.cumsum(torch.softmax(top_vals, dim=1), dim=1)
        if bool(((cdf - noise[t].unsqueeze(1)).abs() < 1e-3).any()):
            return False
        pick = (cdf < noise[t].unsqueeze(1)).to(torch.int64).sum(dim=1, keepdim=True).clamp(max=model.k - 1)
        token = torch.gather(top_idx, 1, pick).squeeze(1).masked_fill(finished, model.eos)
        finished = finished | (token == model.eos)
        if bool(finished.all()):
            break
    return True


def beam() -> None:
    torch.manual_seed(12)
    model = BeamSearch().eval()
    with torch.no_grad():
        model.out.bias[model.eos] += 0.3

    def make(seed: int) -> dict[str, Tensor]:
        rng = np.random.default_rng(seed)
        return {"memory": rnd(rng, 6, 12), "max_len": scalar(12)}

    def stops_early(inp: dict[str, Tensor]) -> bool:
        return _beams_end_apart(model, inp)

    export_ts("beam_search", model, make(0), ["sequences", "scores"],
              {"memory": {0: "src_len"}, "sequences": {1: "steps"}}, script=True)
    save_case("beam_search", "beam_search.onnx", model, search(make, stops_early, "beam_search"),
              "beam search (beam 3, batch 1; hand-written GRU cell, attention; repeat -> Tile, expand -> Expand, topk over"
              " beam x vocab, index_select reorders state and a torch.cat-grown history, break when all beams end),"
              f" torch.jit.script, {TS}, dynamic src_len")


def ctc() -> None:
    torch.manual_seed(13)
    model = CTCGreedy().eval()

    def make(seed: int) -> dict[str, Tensor]:
        rng = np.random.default_rng(seed)
        return {"features": rnd(rng, 9, 8)}

    def collapses(inp: dict[str, Tensor]) -> bool:
        labels = torch.argmax(model.head(inp["features"]), dim=1)
        out, k = model(*inp.values())
        repeats = bool((labels[1:] == labels[:-1]).any())
        blanks = bool((labels == model.blank).any())
        return repeats and blanks and 3 <= int(k) <= 6

    export_ts("ctc_greedy", model, make(0), ["tokens", "length"],
              {"features": {0: "frames"}, "tokens": {0: "frames"}}, script=True)
    save_case("ctc_greedy", "ctc_greedy.onnx", model, search(make, collapses, "ctc_greedy"),
              "CTC greedy decoding (linear head, per-frame argmax, collapse repeats and blanks, `out[k] = c` into a"
              f" preallocated tensor inside the loop, If in the body), torch.jit.script, {TS}, dynamic frames")


def kv_cache() -> None:
    torch.manual_seed(14)
    model = KVCacheDecoder().eval()
    with torch.no_grad():
        model.out.bias[model.eos] += 0.5

    def make(seed: int) -> dict[str, Tensor]:
        rng = np.random.default_rng(seed)
        return {"prompt": torch.from_numpy(rng.integers(1, 12, size=(2, 3))), "max_len": scalar(12)}

    def stops_early(inp: dict[str, Tensor]) -> bool:
        tokens, _ = model(*inp.values())
        return 4 <= tokens.shape[1] <= 9

    export_ts("kv_cache_decoder", model, make(0), ["tokens", "k_cache"],
              {"prompt": {0: "batch", 1: "prompt_len"}, "tokens": {0: "batch", 1: "steps"},
               "k_cache": {0: "batch", 1: "cache_len"}}, script=True)
    save_case("kv_cache_decoder", "kv_cache_decoder.onnx", model, search(make, stops_early, "kv_cache_decoder"),
              "single-head attention decoder, batched, K/V caches grown by torch.cat each step and attended over in the"
              f" body, argmax, break when all rows hit EOS, the grown K cache returned, torch.jit.script, {TS},"
              " dynamic batch and prompt_len")


def beam_kv() -> None:
    torch.manual_seed(15)
    model = BeamSearchKV().eval()
    with torch.no_grad():
        model.out.bias[model.eos] += 0.3

    def make(seed: int, prompt_len: int = 3) -> dict[str, Tensor]:
        rng = np.random.default_rng(seed)
        return {"prompt": torch.from_numpy(rng.integers(1, 12, size=(1, prompt_len))), "max_len": scalar(12)}

    def stops_early(inp: dict[str, Tensor]) -> bool:
        return _beams_end_apart(model, inp)

    export_ts("beam_search_kv", model, make(0), ["sequences", "scores"],
              {"prompt": {1: "prompt_len"}, "sequences": {1: "steps"}}, script=True)
    save_case("beam_search_kv", "beam_search_kv.onnx", model, search(make, stops_early, "beam_search_kv"),
              "beam search over a transformer-style decoder (beam 3, batch 1; single-head attention, width 8, vocab 12):"
              " the prompt's K/V caches tiled over the beams (repeat -> Tile), per step the new key and value appended"
              " with torch.cat and attended over, topk over beam x vocab, then index_select reorders both caches, the"
              " torch.cat-grown history and the finished flags (Hugging Face's _reorder_cache), break when all beams"
              f" end, torch.jit.script, {TS}, dynamic prompt_len",
              other_sizes=make(1, 5))


def _beams_end_apart(model: nn.Module, inp: dict[str, Tensor]) -> bool:
    """A beam search's example worth keeping: it ends after 4 to 9 steps, its beams' scores are not near ties,
    and no beam ends in its first two tokens."""
    history, scores = model(*inp.values())
    gaps = (scores[:-1] - scores[1:]).abs().min()
    return 4 <= history.shape[1] <= 9 and bool(gaps > 1e-3) and bool((history[:, :2] != model.eos).all())


def _margin(head: nn.Module, run: Callable[[], object]) -> float:
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


def gpt2() -> None:
    """The GPT-2-style generator twice, with the same weights: per-layer caches in a list, and written out."""

    def make(seed: int, batch: int = 2, prompt_len: int = 4) -> dict[str, Tensor]:
        rng = np.random.default_rng(seed)
        return {"prompt": torch.from_numpy(rng.integers(1, 16, size=(batch, prompt_len))), "max_new_tokens": scalar(12)}

    about = ("GPT-2-style greedy generator: 2 pre-norm blocks (LayerNorm, 2-head causal self-attention, MLP with tanh"
             " GELU), learned positions, width 16, vocab 16; the prompt fills each layer's K/V cache, then one token per"
             " trip, {caches}, the new position the cache's length, `if finished.all(): break` (EOS), list.append +"
             f" torch.stack, torch.jit.script, {TS}, dynamic batch and prompt_len")
    for name, kind, caches in [
        ("gpt2_greedy", GPT2Greedy, "the per-layer caches a list (`ks[i] = torch.cat([ks[i], k], 2)`)"),
        ("gpt2_greedy_unrolled", GPT2GreedyUnrolledLayers,
         "the two layers written out, each layer's K and V caches loop-carried tensors grown by torch.cat"),
    ]:
        torch.manual_seed(40)
        model = kind().eval()
        with torch.no_grad():
            # Livelier logits, and a final LayerNorm bias along EOS's embedding so that some rows end early.
            model.lm_head.weight.mul_(3.0)
            eos_row = model.lm_head.weight[model.eos]
            model.ln_f.bias.copy_(0.5 * eos_row / eos_row.norm())

        def stops_early(inp: dict[str, Tensor], model: GPT2Greedy = model) -> bool:
            tokens = model(*inp.values())
            return (4 <= tokens.shape[1] <= 9 and bool((tokens[:, 0] != model.eos).all())
                    and _margin(model.lm_head, lambda: model(*inp.values())) > 1e-3)

        export_ts(name, model, make(0), ["tokens"],
                  {"prompt": {0: "batch", 1: "prompt_len"}, "tokens": {0: "batch", 1: "steps"}}, script=True)
        save_case(name, f"{name}.onnx", model, search(make, stops_early, name), about.format(caches=caches),
                  other_sizes=search(lambda seed: make(seed, 3, 6), stops_early, f"{name} (other sizes)"))


def _strip_node_metadata(path: pathlib.Path) -> None:
    """Drop the dynamo exporter's per-node metadata (stack traces, FX node text: 0.9 MB of 1 MB for a while_loop,
    whose FX node text holds its whole body); the graph is unchanged."""
    model = onnx.load(str(path))

    def strip(graph: onnx.GraphProto) -> None:
        for node in graph.node:
            del node.metadata_props[:]
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    strip(attr.g)

    strip(model.graph)
    onnx.save(model, str(path))


def gpt2_static() -> None:
    """The GPT-2-style generator's weights (as in ``gpt2()``) with a static cache in a ``while_loop``, dynamo."""
    torch.manual_seed(40)
    base = GPT2Greedy().eval()
    with torch.no_grad():
        base.lm_head.weight.mul_(3.0)
        eos_row = base.lm_head.weight[base.eos]
        base.ln_f.bias.copy_(0.5 * eos_row / eos_row.norm())
    model = GPT2StaticCache(base).eval()

    def make(seed: int, batch: int = 2, prompt_len: int = 4) -> dict[str, Tensor]:
        rng = np.random.default_rng(seed)
        return {"prompt": torch.from_numpy(rng.integers(1, 16, size=(batch, prompt_len))), "max_new_tokens": scalar(12)}

    def stops_early(inp: dict[str, Tensor]) -> bool:
        _, steps = model(*inp.values())
        return 4 <= int(steps) <= 9 and _margin(base.lm_head, lambda: model(*inp.values())) > 1e-3

    scripted = GPT2StaticCacheScripted(base).eval()

    def stops_early_scripted(inp: dict[str, Tensor]) -> bool:
        tokens = scripted(*inp.values())
        return 4 <= tokens.shape[1] <= 9 and _margin(base.lm_head, lambda: scripted(*inp.values())) > 1e-3

    export_ts("gpt2_static_cache_scripted", scripted, make(0), ["tokens"],
              {"prompt": {0: "batch", 1: "prompt_len"}, "tokens": {0: "batch", 1: "steps"}}, script=True)
    save_case("gpt2_static_cache_scripted", "gpt2_static_cache_scripted.onnx", scripted,
              search(make, stops_early_scripted, "gpt2_static_cache_scripted"),
              "GPT-2-style greedy generator (the weights of gpt2_greedy) with a static cache in a scripted loop: the two"
              " layers written out, each layer's K/V cache preallocated to 32 positions and written in place at the new"
              " position with index_copy_, read under a mask of the later positions; tokens written in place"
              " (`out[:, i] = token`) into a [batch, max_new_tokens] buffer, `if finished.all(): break` (EOS), the buffer"
              f" cut to the steps run; torch.jit.script, {TS}, dynamic batch and prompt_len",
              other_sizes=search(lambda seed: make(seed, 3, 6), stops_early_scripted,
                                 "gpt2_static_cache_scripted (other sizes)"))

    batch, prompt_len = torch.export.Dim("batch", min=1, max=16), torch.export.Dim("prompt_len", min=1, max=20)
    export_dynamo("gpt2_static_cache", model, make(0), ["tokens", "steps"], ({0: batch, 1: prompt_len}, None))
    _strip_node_metadata(HERE / "gpt2_static_cache.onnx")
    save_case("gpt2_static_cache", "gpt2_static_cache.onnx", model, search(make, stops_early, "gpt2_static_cache"),
              "GPT-2-style greedy generator (the weights of gpt2_greedy) with a static cache: each layer's K/V cache"
              " preallocated to 32 positions, written at the new position with index_copy and read under a mask of"
              " the later positions; torch._higher_order_ops.while_loop until every row has emitted EOS or"
              " max_new_tokens (at most 12) tokens are out, the tokens written into a preallocated [batch, 12] buffer"
              f" with index_copy; outputs the buffer and the steps run; {DYNAMO}, dynamic batch and prompt_len",
              other_sizes=search(lambda seed: make(seed, 3, 6), stops_early, "gpt2_static_cache (other sizes)"))


def encoder_decoder() -> None:
    torch.manual_seed(52)
    model = EncoderDecoderGreedy().eval()
    with torch.no_grad():
        # Livelier logits, a cross-attention that moves the tokens, and EOS a little likelier.
        model.out.weight.mul_(3.0)
        model.dec_cross.proj.weight.mul_(3.0)
        model.out.bias[model.eos] += 0.4

    def make(seed: int, batch: int = 2, src_len: int = 5) -> dict[str, Tensor]:
        rng = np.random.default_rng(seed)
        return {"src": torch.from_numpy(rng.integers(2, 14, size=(batch, src_len))), "max_len": scalar(12)}

    def stops_early(inp: dict[str, Tensor]) -> bool:
        tokens = model(*inp.values())
        return (4 <= tokens.shape[1] <= 9 and bool((tokens[:, 0] != model.eos).all())
                and _margin(model.out, lambda: model(*inp.values())) > 1e-3)

    export_ts("encoder_decoder_greedy", model, make(0), ["tokens"],
              {"src": {0: "batch", 1: "src_len"}, "tokens": {0: "batch", 1: "steps"}}, script=True)
    save_case("encoder_decoder_greedy", "encoder_decoder_greedy.onnx", model,
              search(make, stops_early, "encoder_decoder_greedy"),
              "encoder-decoder greedy decoder (T5/Whisper-shaped, width 16, 2 heads, vocab 14): a pre-norm encoder block"
              " over the source tokens; a decoder block with causal self-attention over its own K/V cache grown by"
              " torch.cat each trip, cross-attention over the encoder output (its keys and values made once before the"
              " loop) and a GELU MLP; argmax from BOS, `if finished.all(): break` (EOS), list.append + torch.stack,"
              f" torch.jit.script, {TS}, dynamic batch and src_len",
              other_sizes=search(lambda seed: make(seed, 3, 7), stops_early, "encoder_decoder_greedy (other sizes)"))


def tacotron() -> None:
    torch.manual_seed(49)
    model = TacotronCatDecoder().eval()
    with torch.no_grad():
        # Livelier frames and a gate that crosses 0.5 after a few frames for some texts.
        model.frame.weight.mul_(2.0)
        model.gate.weight.mul_(3.0)
        model.gate.bias.zero_()

    def make(seed: int, batch: int = 2, chars: int = 6) -> dict[str, Tensor]:
        rng = np.random.default_rng(seed)
        return {"text": torch.from_numpy(rng.integers(1, 12, size=(batch, chars))), "max_frames": scalar(12)}

    def stops_early(inp: dict[str, Tensor]) -> bool:
        _, gates = model(*inp.values())
        # Every gate stays clear of 0.5 so that rounding cannot move the stop.
        return 4 <= gates.shape[1] <= 9 and bool((gates.abs() > 1e-2).all())

    export_ts("tacotron_cat_decoder", model, make(0), ["mel", "gates"],
              {"text": {0: "batch", 1: "chars"}, "mel": {0: "batch", 1: "frames"}, "gates": {0: "batch", 1: "frames"}},
              script=True)
    save_case("tacotron_cat_decoder", "tacotron_cat_decoder.onnx", model, search(make, stops_early, "tacotron"),
              "Tacotron-style mel decoder (8 mels): from a go frame, per trip a ReLU prenet on the last frame of the"
              " growing output (`mel[:, -1]`), a GRU cell (hand-written) over the prenet output and the pooled text"
              " encoding (no attention), a mel frame appended with `torch.cat([mel, frame], 1)` and a stop gate (also"
              " grown by torch.cat); `if (sigmoid(gate) > 0.5).all(): break`; after the loop a Conv1d(8, 16, 5) + tanh +"
              f" Conv1d(16, 8, 5) residual postnet; torch.jit.script, {TS}, dynamic batch and chars",
              other_sizes=search(lambda seed: make(seed, 3, 9), stops_early, "tacotron (other sizes)"))


def higher_order() -> None:
    rng = np.random.default_rng(20)
    batch, time = torch.export.Dim("batch", min=1, max=64), torch.export.Dim("time", min=1, max=64)

    torch.manual_seed(20)
    model = WhileConverge().eval()
    inputs = {"x": rnd(rng, 3, 8), "limit": scalar(20)}
    export_dynamo("while_loop_converge", model, inputs, ["trips", "y"], ({0: batch}, None))
    trips, _ = save_case("while_loop_converge", "while_loop_converge.onnx", model, inputs,
                         f"torch._higher_order_ops.while_loop with a data-dependent condition (trips < limit and"
                         f" max|x| > 0.05), {DYNAMO}, dynamic batch")
    if not 3 <= int(trips) <= 10:
        raise RuntimeError(f"while_loop_converge ran {int(trips)} trips")

    torch.manual_seed(21)
    model = ScanRNN().eval()
    inputs = {"xs": rnd(rng, 7, 2, 4), "h0": rnd(rng, 2, 8)}
    export_dynamo("scan_rnn", model, inputs, ["h_last", "ys"], ({0: time, 1: batch}, {0: batch}))
    save_case("scan_rnn", "scan_rnn.onnx", model, inputs,
              f"Elman RNN written with torch._higher_order_ops.scan (final carry + stacked outputs), {DYNAMO},"
              " dynamic time and batch")

    model = ScanDiscountedReturns().eval()
    inputs = {"rewards": rnd(rng, 8, 3), "gamma": torch.tensor(0.9)}
    export_dynamo("scan_discounted_returns", model, inputs, ["returns"], ({0: time, 1: batch}, None))
    save_case("scan_discounted_returns", "scan_discounted_returns.onnx", model, inputs,
              f"discounted returns with a reversed torch._higher_order_ops.scan (reverse=True), {DYNAMO},"
              " dynamic time and batch")


def cell_loops() -> None:
    """Time loops written in PyTorch around a cell or a linear-attention state: input 64, hidden 128, head 64.

    Each is exported at time 6, batch 3 and checked once more at time 9, batch 2.
    """
    time_batch = {0: "time", 1: "batch"}
    batch = {0: "batch"}

    def example(seed: int, time: int, batch: int, states: int) -> dict[str, Tensor]:
        rng = np.random.default_rng(seed)
        inputs = {"x": rnd(rng, time, batch, 64)}
        for name in ["h0", "c0"][:states]:
            inputs[name] = rnd(rng, batch, 128)
        return inputs

    torch.manual_seed(30)
    model: nn.Module = LSTMCellLoop().eval()
    inputs = example(30, 6, 3, 2)
    export_ts("lstm_cell_loop", model, inputs, ["y", "h", "c"],
              {"x": time_batch, "h0": batch, "c0": batch, "y": time_batch, "h": batch, "c": batch}, script=True)
    save_case("lstm_cell_loop", "lstm_cell_loop.onnx", model, inputs,
              "time loop around the real nn.LSTMCell(64, 128) (`for t in range(x.size(0))`, `h, c = cell(x[t], (h, c))`)"
              f" with an nn.Linear(128, 64) head per step, list.append + torch.stack, torch.jit.script, {TS},"
              " dynamic time and batch", other_sizes=example(31, 9, 2, 2))

    torch.manual_seed(32)
    model = GRUCellLoop().eval()
    inputs = example(32, 6, 3, 1)
    export_ts("gru_cell_loop", model, inputs, ["y", "h"], {"x": time_batch, "h0": batch, "y": time_batch, "h": batch},
              script=True)
    save_case("gru_cell_loop", "gru_cell_loop.onnx", model, inputs,
              "time loop around a GRU cell (hand-written: Linear + chunk(3, -1); nn.GRUCell does not export) with an"
              " nn.Linear(128, 64) head writing `out[t] = head(h)` into a preallocated torch.zeros(T, B, 64),"
              f" torch.jit.script, {TS}, dynamic time and batch", other_sizes=example(33, 9, 2, 1))

    torch.manual_seed(34)
    model = ChunkLSTMLoop().eval()
    inputs = example(34, 6, 3, 2)
    export_ts("chunk_lstm_loop", model, inputs, ["y", "h", "c"],
              {"x": time_batch, "h0": batch, "c0": batch, "y": time_batch, "h": batch, "c": batch}, script=True)
    save_case("chunk_lstm_loop", "chunk_lstm_loop.onnx", model, inputs,
              "LSTM step written in the loop body (`gates = x[t] @ w_ih.t() + h @ w_hh.t() + b`, `gates.chunk(4, 1)`),"
              f" input 64, hidden 128, every h stacked (list.append + torch.stack), torch.jit.script, {TS},"
              " dynamic time and batch", other_sizes=example(35, 9, 2, 2))

    torch.manual_seed(36)
    model = LinearAttention().eval()
    inputs = example(36, 6, 3, 0)
    export_ts("linear_attention", model, inputs, ["y", "s", "z"],
              {"x": time_batch, "y": time_batch, "s": batch, "z": batch}, script=True)
    save_case("linear_attention", "linear_attention.onnx", model, inputs,
              "causal linear attention (Katharopoulos et al.) as a recurrence over time, one head of 32, model dim 64:"
              " Linear q/k/v in the loop, phi = elu + 1, S += phi(k)^T v and z += phi(k) by einsum,"
              " y = phi(q) S / (phi(q).z + 1e-6), list.append + torch.stack, final S and z returned,"
              f" torch.jit.script, {TS}, dynamic time and batch", other_sizes=example(37, 9, 2, 0))

    torch.manual_seed(38)
    model = RetentionDecay().eval()
    inputs = example(38, 6, 3, 0)
    export_ts("retention_decay", model, inputs, ["y", "s"], {"x": time_batch, "y": time_batch, "s": batch},
              script=True)
    save_case("retention_decay", "retention_decay.onnx", model, inputs,
              "RetNet-style recurrent retention, 2 heads of 16 (view), S = gamma * S + k^T v with gamma 0.9 / 0.97 per"
              " head (broadcast outer product), y = q S (broadcast and sum), output Linear(32, 64) in the loop,"
              f" list.append + torch.stack, final S returned, torch.jit.script, {TS}, dynamic time and batch",
              other_sizes=example(39, 9, 2, 0))


def _kept_cases() -> list[Case]:
    """The cases ``cases.toml`` lists now, for a run that remakes only some groups."""
    tables = tomllib.loads((HERE / "cases.toml").read_text()).get("model", [])
    return [Case(t["name"], t["path"], t["about"], t.get("rtol"), t.get("atol"), t.get("loopc-refuses"),
                 t.get("max-trips")) for t in tables]


def write_toml(kept: list[Case]) -> None:
    """``cases.toml``: the cases ``kept`` from before (remade ones replaced in place), then the new ones."""
    made = {case.name: case for case in CASES}
    cases = [made.pop(case.name, case) for case in kept] + list(made.values())
    lines = ["# Made by make_models.py; one table per case (see README.md).", ""]
    for case in cases:
        lines += [
            "[[model]]",
            f'name = "{case.name}"',
            f'path = "{case.path}"',
            f'inputs = "{case.name}.inputs.npz"',
            f'expected = "{case.name}.expected.npz"',
            "about = " + '"' + case.about.replace("\\", "\\\\").replace('"', '\\"') + '"',
        ]
        if case.rtol is not None:
            lines.append(f"rtol = {case.rtol}")
        if case.atol is not None:
            lines.append(f"atol = {case.atol}")
        if case.refusal is not None:
            lines.append(f'loopc-refuses = "{case.refusal}"')
        if case.max_trips is not None:
            lines.append(f"max-trips = {case.max_trips}")
        lines.append("")
    (HERE / "cases.toml").write_text("\n".join(lines))


GROUPS: dict[str, Callable[[], None]] = {
    "rnn_stacks": rnn_stacks,
    "greedy": greedy,
    "greedy_stops": greedy_stops,
    "item_condition": item_condition,
    "counted_break": counted_break,
    "topk_sampling": topk_sampling,
    "beam": beam,
    "ctc": ctc,
    "kv_cache": kv_cache,
    "beam_kv": beam_kv,
    "higher_order": higher_order,
    "cell_loops": cell_loops,
    "gpt2": gpt2,
    "gpt2_static": gpt2_static,
    "encoder_decoder": encoder_decoder,
    "tacotron": tacotron,
}


def main(groups: list[str]) -> None:
    """Remake the named groups of cases (all when none is named); the other cases' files are left as they are,
    since a re-export is not byte-identical (the dynamo exporter's names, the last bits of some outputs)."""
    warnings.filterwarnings("ignore")
    unknown = set(groups) - set(GROUPS)
    if unknown:
        raise SystemExit(f"unknown groups {sorted(unknown)}; the groups are {', '.join(GROUPS)}")
    kept = _kept_cases() if groups else []
    for name in groups or GROUPS:
        GROUPS[name]()
    write_toml(kept)
    for onnx_file in sorted(HERE.glob("*.onnx")):
        if onnx_file.stat().st_size > 600_000:
            raise RuntimeError(f"{onnx_file.name} is {onnx_file.stat().st_size} bytes; keep corpus models < 600 KB")


if __name__ == "__main__":
    main(sys.argv[1:])

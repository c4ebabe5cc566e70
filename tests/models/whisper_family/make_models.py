"""Make the Whisper family: one Whisper-style greedy decoder with a growing self-attention cache, exported the ways
real code differs.

Run outside the test suite, in the venv of ``tests/models/torch`` (loopc never depends on torch):

    python3 -m venv venv-torch
    venv-torch/bin/pip install -r tests/models/torch/requirements.txt
    venv-torch/bin/python tests/models/whisper_family/make_models.py

The encoder output [B, T_enc, D] is a graph input (one variant runs a small conv + transformer encoder over a mel
spectrogram before the loop). Every variant runs the same decoder weights (fixed seeds): token embedding plus a
learned positional table read at the cache's length, pre-norm blocks with self-attention over a cache that grows
every trip and cross-attention over keys and values made from the encoder output before the loop, logits tied to
the token embedding; from the start tokens until every row has emitted EOT or ``max_new_tokens`` are out. They
differ in how the code holds its caches, stops, finds its positions and pads its finished rows (README.md). Every
size is a field of :class:`Config` (``WHISPER_BASE`` is the real decoder's). The helpers, the file layout and the
checks (onnxruntime on the example, and at batch 3 with other encoder and prompt lengths) are ``gpt2_family``'s.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import pathlib
import sys
import warnings
from typing import Callable

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn import functional as F
from torch._higher_order_ops.while_loop import while_loop

HERE = pathlib.Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("gpt2_family_models", HERE.parent / "gpt2_family" / "make_models.py")
assert _spec is not None and _spec.loader is not None
family = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)  # dataclasses look their module up
_spec.loader.exec_module(family)
attend, heads_first, margin, search, stops_as_wanted = (
    family.attend, family.heads_first, family.margin, family.search, family.stops_as_wanted)


@dataclasses.dataclass(frozen=True)
class Config:
    """Every size of the decoder (and of the small encoder one variant runs); the corpus uses the defaults."""

    vocab: int = 24
    dim: int = 24
    heads: int = 2
    layers: int = 2
    positions: int = 32  # the text context: the learned positional table's rows
    eot: int = 0
    max_new: int = 8
    n_mels: int = 8
    audio_positions: int = 64  # the encoder's sinusoidal table's rows

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads


WHISPER_BASE = Config(vocab=51865, dim=512, heads=8, layers=6, positions=448, eot=50257, max_new=224, n_mels=80,
                      audio_positions=1500)


# ---------------------------------------------------------------------------------------------------------------
# The weights: Whisper's residual attention blocks (self-attention, cross-attention, exact-GELU MLP, each pre-norm)
# ---------------------------------------------------------------------------------------------------------------


class Heads(nn.Module):
    """Whisper's multi-head attention projections: the query, key (no bias) and value Linears, and the output."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.query = nn.Linear(cfg.dim, cfg.dim)
        self.key = nn.Linear(cfg.dim, cfg.dim, bias=False)
        self.value = nn.Linear(cfg.dim, cfg.dim)
        self.out = nn.Linear(cfg.dim, cfg.dim)
        self.dim, self.heads, self.head_dim = cfg.dim, cfg.heads, cfg.head_dim

    def split(self, t: Tensor) -> Tensor:
        """[B, T, D] -> [B, H, T, Dh]."""
        return t.view(t.size(0), t.size(1), self.heads, self.head_dim).permute(0, 2, 1, 3)

    def merge(self, ctx: Tensor) -> Tensor:
        """[B, H, T, Dh] -> the output projection of [B, T, D]."""
        return self.out(ctx.permute(0, 2, 1, 3).reshape(ctx.size(0), ctx.size(2), self.dim))


class DecoderBlock(nn.Module):
    """A Whisper decoder block, split where the caches come in."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.attn_ln = nn.LayerNorm(cfg.dim)
        self.attn = Heads(cfg)
        self.cross_attn_ln = nn.LayerNorm(cfg.dim)
        self.cross_attn = Heads(cfg)
        self.mlp_ln = nn.LayerNorm(cfg.dim)
        self.fc1 = nn.Linear(cfg.dim, 4 * cfg.dim)
        self.fc2 = nn.Linear(4 * cfg.dim, cfg.dim)

    def self_qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """This step's query, key and value, [B, T, D] each (heads not split: openai-whisper caches these)."""
        h = self.attn_ln(x)
        return self.attn.query(h), self.attn.key(h), self.attn.value(h)

    def cross_kv(self, audio: Tensor) -> tuple[Tensor, Tensor]:
        """The cross-attention's keys and values of the encoder output, [B, H, T_enc, Dh] each (made once)."""
        return self.cross_attn.split(self.cross_attn.key(audio)), self.cross_attn.split(self.cross_attn.value(audio))

    def finish(self, x: Tensor, ctx: Tensor, cross_k: Tensor, cross_v: Tensor) -> Tensor:
        """Add the self-attention's ``ctx`` [B, H, T, Dh], then cross-attention and MLP, each to the residual."""
        x = x + self.attn.merge(ctx)
        q = self.cross_attn.split(self.cross_attn.query(self.cross_attn_ln(x)))
        scores = torch.matmul(q, cross_k.permute(0, 1, 3, 2)) / math.sqrt(q.size(3))
        x = x + self.cross_attn.merge(torch.matmul(torch.softmax(scores, dim=-1), cross_v))
        return x + self.fc2(F.gelu(self.fc1(self.mlp_ln(x))))


class TiedHead(nn.Module):
    """Whisper's logits: the final LayerNorm's output times the token embedding's transpose."""

    def __init__(self, embedding: nn.Embedding) -> None:
        super().__init__()
        self.weight = embedding.weight

    def forward(self, x: Tensor) -> Tensor:
        return torch.matmul(x, self.weight.t())


class Decoder(nn.Module):
    """The weights every variant shares; a variant is a subclass with its own ``forward`` (and ``step``)."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.token_embedding = nn.Embedding(cfg.vocab, cfg.dim)
        self.positional_embedding = nn.Parameter(torch.randn(cfg.positions, cfg.dim) * 0.3)
        self.blocks = nn.ModuleList([DecoderBlock(cfg) for _ in range(cfg.layers)])
        self.ln = nn.LayerNorm(cfg.dim)
        self.head = TiedHead(self.token_embedding)
        self.layers, self.heads, self.head_dim, self.eot = cfg.layers, cfg.heads, cfg.head_dim, cfg.eot
        self.max_new, self.positions = cfg.max_new, cfg.positions

    def embed_slice(self, ids: Tensor, offset: int) -> Tensor:
        """Whisper's own: ``positional_embedding[offset : offset + T]``, offset the cache's length."""
        return self.token_embedding(ids) + self.positional_embedding[offset:offset + ids.size(1)]

    def embed_range(self, ids: Tensor, offset: int) -> Tensor:
        """The positions a Range: ``positional_embedding[arange(offset, offset + T)]``."""
        return self.token_embedding(ids) + self.positional_embedding[torch.arange(offset, offset + ids.size(1))]

    def logits(self, x: Tensor) -> Tensor:
        return self.head(self.ln(x[:, -1]))

    def cross_stacked(self, audio: Tensor) -> tuple[Tensor, Tensor]:
        """Every layer's cross-attention keys and values, stacked: [L, B, H, T_enc, Dh] each."""
        ks: list[Tensor] = []
        vs: list[Tensor] = []
        for block in self.blocks:
            k, v = block.cross_kv(audio)
            ks.append(k)
            vs.append(v)
        return torch.stack(ks), torch.stack(vs)

    def pad(self, finished: Tensor, logits: Tensor) -> Tensor:
        """The next tokens, EOT in the finished rows: ``torch.where(finished, eot, argmax)``."""
        return torch.where(finished, torch.full_like(finished, self.eot, dtype=torch.long), torch.argmax(logits, 1))


class Stacked(Decoder):
    """The self-attention cache ONE stacked tensor per K and V [L, B, H, S, Dh] growing on S, read per layer by
    index and re-stacked every trip; cross K/V stacked the same way before the loop; positions a slice of the table
    at the cache's length; EOT padding ``torch.where(finished, eot, next)``; ``break`` once every row has finished;
    tokens (the start tokens first) grown by ``torch.cat``; outputs the tokens and the last logits."""

    def step(self, ids: Tensor, past_k: Tensor, past_v: Tensor, cross_k: Tensor, cross_v: Tensor
             ) -> tuple[Tensor, Tensor, Tensor]:
        offset = past_k.size(3)
        x = self.embed_slice(ids, offset)
        ks: list[Tensor] = []
        vs: list[Tensor] = []
        for i, block in enumerate(self.blocks):
            q, k, v = block.self_qkv(x)
            k = torch.cat([past_k[i], block.attn.split(k)], 2)
            v = torch.cat([past_v[i], block.attn.split(v)], 2)
            x = block.finish(x, attend(block.attn.split(q), k, v, offset), cross_k[i], cross_v[i])
            ks.append(k)
            vs.append(v)
        return self.logits(x), torch.stack(ks), torch.stack(vs)

    def decode(self, audio: Tensor, tokens: Tensor, max_new_tokens: Tensor) -> tuple[Tensor, Tensor]:
        cross_k, cross_v = self.cross_stacked(audio)
        empty = torch.zeros(self.layers, tokens.size(0), self.heads, 0, self.head_dim)
        logits, past_k, past_v = self.step(tokens, empty, empty, cross_k, cross_v)
        finished = torch.zeros(tokens.size(0), dtype=torch.bool)
        for _ in range(int(max_new_tokens)):
            token = self.pad(finished, logits)
            tokens = torch.cat([tokens, token.unsqueeze(1)], 1)
            finished = finished | (token == self.eot)
            if bool(finished.all()):
                break
            logits, past_k, past_v = self.step(token.unsqueeze(1), past_k, past_v, cross_k, cross_v)
        return tokens, logits

    def forward(self, audio_features: Tensor, sot: Tensor, max_new_tokens: Tensor) -> tuple[Tensor, Tensor]:
        return self.decode(audio_features, sot, max_new_tokens)


class ListCaches(Decoder):
    """Self-attention caches and cross K/V as lists of per-layer tensors (``ks[i] = torch.cat([ks[i], k], 2)``);
    ``while step < max_new and not finished.all()``, the step run at the end of each trip; positions a Range;
    finished rows ``masked_fill``ed with EOT; outputs the tokens."""

    def step(self, ids: Tensor, ks: list[Tensor], vs: list[Tensor], cross_k: list[Tensor], cross_v: list[Tensor]
             ) -> Tensor:
        offset = ks[0].size(2)
        x = self.embed_range(ids, offset)
        for i, block in enumerate(self.blocks):
            q, k, v = block.self_qkv(x)
            ks[i] = torch.cat([ks[i], block.attn.split(k)], 2)
            vs[i] = torch.cat([vs[i], block.attn.split(v)], 2)
            x = block.finish(x, attend(block.attn.split(q), ks[i], vs[i], offset), cross_k[i], cross_v[i])
        return self.logits(x)

    def forward(self, audio_features: Tensor, sot: Tensor, max_new_tokens: Tensor) -> Tensor:
        cross_k: list[Tensor] = []
        cross_v: list[Tensor] = []
        for block in self.blocks:
            k, v = block.cross_kv(audio_features)
            cross_k.append(k)
            cross_v.append(v)
        empty = torch.zeros(sot.size(0), self.heads, 0, self.head_dim)
        ks = [empty for _ in range(self.layers)]
        vs = [empty for _ in range(self.layers)]
        logits = self.step(sot, ks, vs, cross_k, cross_v)
        finished = torch.zeros(sot.size(0), dtype=torch.bool)
        tokens = sot
        step = 0
        while step < int(max_new_tokens) and not bool(finished.all()):
            token = torch.argmax(logits, 1).masked_fill(finished, self.eot)
            tokens = torch.cat([tokens, token.unsqueeze(1)], 1)
            finished = finished | (token == self.eot)
            logits = self.step(token.unsqueeze(1), ks, vs, cross_k, cross_v)
            step += 1
        return tokens


class OpenAICaches(Decoder):
    """openai-whisper's own form: per layer, the key and value Linears' outputs [B, S, D] (heads not yet split)
    cached in lists and grown on axis 1; a row is finished when its last token is EOT (``tokens[:, -1] == eot``,
    no flag of its own), ``next[tokens[:, -1] == eot] = eot`` as a where; ``break`` when all are; positions a slice
    of the table; outputs the tokens and the last logits."""

    def step(self, ids: Tensor, ks: list[Tensor], vs: list[Tensor], cross_k: Tensor, cross_v: Tensor) -> Tensor:
        offset = ks[0].size(1)
        x = self.embed_slice(ids, offset)
        for i, block in enumerate(self.blocks):
            q, k, v = block.self_qkv(x)
            ks[i] = torch.cat([ks[i], k], 1)
            vs[i] = torch.cat([vs[i], v], 1)
            ctx = attend(block.attn.split(q), block.attn.split(ks[i]), block.attn.split(vs[i]), offset)
            x = block.finish(x, ctx, cross_k[i], cross_v[i])
        return self.logits(x)

    def forward(self, audio_features: Tensor, sot: Tensor, max_new_tokens: Tensor) -> tuple[Tensor, Tensor]:
        cross_k, cross_v = self.cross_stacked(audio_features)
        empty = torch.zeros(sot.size(0), 0, self.heads * self.head_dim)
        ks = [empty for _ in range(self.layers)]
        vs = [empty for _ in range(self.layers)]
        logits = self.step(sot, ks, vs, cross_k, cross_v)
        tokens = sot
        for _ in range(int(max_new_tokens)):
            token = self.pad(tokens[:, -1] == self.eot, logits)
            tokens = torch.cat([tokens, token.unsqueeze(1)], 1)
            if bool((tokens[:, -1] == self.eot).all()):
                break
            logits = self.step(token.unsqueeze(1), ks, vs, cross_k, cross_v)
        return tokens, logits


class TwoLayersWrittenOut(Decoder):
    """The layers written out (two of them): each layer's self-attention K and V loop-carried tensors of their own,
    returned from the step as a tuple; finished rows masked as Hugging Face's ``generate`` does (``next * unfinished
    + eot * (1 - unfinished)``, an int mask, ``unfinished.max() == 0`` to stop); positions a Range; ``break``."""

    def step(self, ids: Tensor, k0: Tensor, v0: Tensor, k1: Tensor, v1: Tensor, cross_k: Tensor, cross_v: Tensor
             ) -> tuple[Tensor, tuple[Tensor, Tensor, Tensor, Tensor]]:
        offset = k0.size(2)
        x = self.embed_range(ids, offset)
        q, k, v = self.blocks[0].self_qkv(x)
        split = self.blocks[0].attn.split  # every layer's heads split alike
        k0, v0 = torch.cat([k0, split(k)], 2), torch.cat([v0, split(v)], 2)
        x = self.blocks[0].finish(x, attend(split(q), k0, v0, offset), cross_k[0], cross_v[0])
        q, k, v = self.blocks[1].self_qkv(x)
        k1, v1 = torch.cat([k1, split(k)], 2), torch.cat([v1, split(v)], 2)
        x = self.blocks[1].finish(x, attend(split(q), k1, v1, offset), cross_k[1], cross_v[1])
        return self.logits(x), (k0, v0, k1, v1)

    def forward(self, audio_features: Tensor, sot: Tensor, max_new_tokens: Tensor) -> Tensor:
        cross_k, cross_v = self.cross_stacked(audio_features)
        empty = torch.zeros(sot.size(0), self.heads, 0, self.head_dim)
        logits, past = self.step(sot, empty, empty, empty, empty, cross_k, cross_v)
        unfinished = torch.ones(sot.size(0), dtype=torch.long)
        tokens = sot
        for _ in range(int(max_new_tokens)):
            token = torch.argmax(logits, 1) * unfinished + self.eot * (1 - unfinished)
            tokens = torch.cat([tokens, token.unsqueeze(1)], 1)
            unfinished = unfinished * (token != self.eot).long()
            if bool(unfinished.max() == 0):
                break
            logits, past = self.step(token.unsqueeze(1), past[0], past[1], past[2], past[3], cross_k, cross_v)
        return tokens


class StackedBatchFirst(Decoder):
    """The stacked caches batch-first, [B, L, H, S, Dh] (``torch.stack(ks, 1)``, read as ``past_k[:, i]``), growing
    on axis 3; ``while step < max_new and not finished.all()``; positions a slice of the table; ``torch.where``
    padding; outputs the tokens and the last logits."""

    def step(self, ids: Tensor, past_k: Tensor, past_v: Tensor, cross_k: Tensor, cross_v: Tensor
             ) -> tuple[Tensor, Tensor, Tensor]:
        offset = past_k.size(3)
        x = self.embed_slice(ids, offset)
        ks: list[Tensor] = []
        vs: list[Tensor] = []
        for i, block in enumerate(self.blocks):
            q, k, v = block.self_qkv(x)
            k = torch.cat([past_k[:, i], block.attn.split(k)], 2)
            v = torch.cat([past_v[:, i], block.attn.split(v)], 2)
            x = block.finish(x, attend(block.attn.split(q), k, v, offset), cross_k[:, i], cross_v[:, i])
            ks.append(k)
            vs.append(v)
        return self.logits(x), torch.stack(ks, 1), torch.stack(vs, 1)

    def forward(self, audio_features: Tensor, sot: Tensor, max_new_tokens: Tensor) -> tuple[Tensor, Tensor]:
        cross_k, cross_v = self.cross_stacked(audio_features)
        cross_k, cross_v = cross_k.transpose(0, 1), cross_v.transpose(0, 1)
        empty = torch.zeros(sot.size(0), self.layers, self.heads, 0, self.head_dim)
        logits, past_k, past_v = self.step(sot, empty, empty, cross_k, cross_v)
        finished = torch.zeros(sot.size(0), dtype=torch.bool)
        tokens = sot
        step = 0
        while step < int(max_new_tokens) and not bool(finished.all()):
            token = self.pad(finished, logits)
            tokens = torch.cat([tokens, token.unsqueeze(1)], 1)
            finished = finished | (token == self.eot)
            logits, past_k, past_v = self.step(token.unsqueeze(1), past_k, past_v, cross_k, cross_v)
            step += 1
        return tokens, logits


class AudioEncoder(nn.Module):
    """Whisper's encoder, small: Conv1d + GELU, Conv1d stride 2 + GELU, sinusoidal positions, one pre-norm block
    (self-attention, GELU MLP), a final LayerNorm."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(cfg.n_mels, cfg.dim, 3, padding=1)
        self.conv2 = nn.Conv1d(cfg.dim, cfg.dim, 3, stride=2, padding=1)
        position = torch.arange(cfg.audio_positions).unsqueeze(1)
        scales = torch.exp(-math.log(10000) / (cfg.dim // 2 - 1) * torch.arange(cfg.dim // 2))
        self.register_buffer("positional_embedding", torch.cat([torch.sin(position * scales),
                                                                 torch.cos(position * scales)], 1))
        self.attn_ln = nn.LayerNorm(cfg.dim)
        self.attn = Heads(cfg)
        self.mlp_ln = nn.LayerNorm(cfg.dim)
        self.fc1 = nn.Linear(cfg.dim, 4 * cfg.dim)
        self.fc2 = nn.Linear(4 * cfg.dim, cfg.dim)
        self.ln_post = nn.LayerNorm(cfg.dim)

    def forward(self, mel: Tensor) -> Tensor:
        x = F.gelu(self.conv2(F.gelu(self.conv1(mel)))).permute(0, 2, 1)
        x = x + self.positional_embedding[:x.size(1)]
        h = self.attn_ln(x)
        q, k, v = self.attn.split(self.attn.query(h)), self.attn.split(self.attn.key(h)), self.attn.split(self.attn.value(h))
        scores = torch.matmul(q, k.permute(0, 1, 3, 2)) / math.sqrt(q.size(3))
        x = x + self.attn.merge(torch.matmul(torch.softmax(scores, dim=-1), v))
        x = x + self.fc2(F.gelu(self.fc1(self.mlp_ln(x))))
        return self.ln_post(x)


class WithEncoder(Stacked):
    """:class:`Stacked`'s decoder after a small conv + transformer encoder over the mel spectrogram."""

    def __init__(self, cfg: Config) -> None:
        super().__init__(cfg)
        self.encoder = AudioEncoder(cfg)

    def forward(self, mel: Tensor, sot: Tensor, max_new_tokens: Tensor) -> tuple[Tensor, Tensor]:
        return self.decode(self.encoder(mel), sot, max_new_tokens)


class PreallocatedWhileLoop(Decoder):
    """``torch.export`` users' form: ``while_loop`` (it cannot grow its carries) over a stacked self-attention cache
    [L, B, H, P, Dh] preallocated to the text context, written at the new position with ``index_copy`` and read
    under a mask of the later positions; positions the table at a carried index; tokens written into a [B, max_new]
    buffer with ``index_copy`` (EOT after a row's end); outputs the buffer and the steps run."""

    def step(self, ids: Tensor, pos: Tensor, past_k: Tensor, past_v: Tensor, cross_k: Tensor, cross_v: Tensor
             ) -> tuple[Tensor, Tensor, Tensor]:
        x = self.token_embedding(ids) + self.positional_embedding[pos]
        later = torch.arange(self.positions).unsqueeze(0) > pos.unsqueeze(1)
        ks: list[Tensor] = []
        vs: list[Tensor] = []
        for i, block in enumerate(self.blocks):
            q, k, v = block.self_qkv(x)
            k_all = past_k[i].index_copy(2, pos, block.attn.split(k))
            v_all = past_v[i].index_copy(2, pos, block.attn.split(v))
            scores = torch.matmul(block.attn.split(q), k_all.transpose(2, 3)) / math.sqrt(self.head_dim)
            ctx = torch.matmul(torch.softmax(scores.masked_fill(later, float("-inf")), dim=-1), v_all)
            x = block.finish(x, ctx, cross_k[i], cross_v[i])
            ks.append(k_all)
            vs.append(v_all)
        return self.logits(x), torch.stack(ks), torch.stack(vs)

    def forward(self, audio_features: Tensor, sot: Tensor, max_new_tokens: Tensor) -> tuple[Tensor, Tensor]:
        b = sot.size(0)
        cross_k, cross_v = self.cross_stacked(audio_features)
        empty = torch.zeros(self.layers, b, self.heads, self.positions, self.head_dim)
        logits, past_k, past_v = self.step(sot, torch.arange(sot.size(1)), empty, empty, cross_k, cross_v)
        tokens = torch.full((b, self.max_new), self.eot, dtype=torch.int64)
        finished = torch.zeros(b, dtype=torch.bool)
        start = torch.full((), sot.size(1), dtype=torch.int64)

        def cond(i: Tensor, pos: Tensor, logits: Tensor, finished: Tensor, tokens: Tensor, past_k: Tensor,
                 past_v: Tensor) -> Tensor:
            return (i < max_new_tokens) & (i < self.max_new) & torch.logical_not(finished.all())

        def body(i: Tensor, pos: Tensor, logits: Tensor, finished: Tensor, tokens: Tensor, past_k: Tensor,
                 past_v: Tensor) -> tuple[Tensor, ...]:
            token = self.pad(finished, logits)
            tokens = tokens.index_copy(1, i.reshape(1), token.unsqueeze(1))
            finished = torch.logical_or(finished, token == self.eot)
            logits, past_k, past_v = self.step(token.unsqueeze(1), pos.reshape(1), past_k, past_v, cross_k, cross_v)
            return i + 1, pos + 1, logits, finished, tokens, past_k, past_v

        steps, _, _, _, tokens, _, _ = while_loop(
            cond, body, (torch.zeros((), dtype=torch.int64), start, logits, finished, tokens, past_k, past_v))
        return tokens, steps


# ---------------------------------------------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------------------------------------------

SUITE = family.Suite(HERE, "make_models.py")
BASE = ("Whisper-style greedy decoder (width {dim}, {layers} pre-norm decoder blocks: LayerNorm, {heads}-head causal"
        " self-attention over a cache growing each trip, cross-attention over K/V made from the encoder output before"
        " the loop, exact-GELU MLP; learned positional table; logits tied to the token embedding; vocab {vocab}):"
        " the start tokens fill the cache, then one token per trip until every row has emitted EOT or"
        " max_new_tokens are out; ")
AUDIO = "the encoder output audio_features [B, T_enc, D] a graph input; "

#: name, variant, what differs, scripted (else dynamo while_loop)
VARIANTS: list[tuple[str, type[Decoder], str, bool]] = [
    ("whisper_stacked", Stacked, AUDIO + "the self-attention cache ONE stacked tensor per K and V [L, B, H, S, Dh]"
     " growing on S, read per layer by index (past_k[i]) and re-stacked (torch.stack) each trip, cross K/V stacked"
     " [L, B, H, T_enc, Dh]; positions a slice of the table (positional_embedding[t:t + 1], t = past_k.size(3));"
     " tokens = where(finished, eot, next); `if finished.all(): break`; tokens grown by torch.cat; outputs the tokens"
     " and the last logits", True),
    ("whisper_list", ListCaches, AUDIO + "self-attention caches and cross K/V lists of per-layer tensors"
     " (ks[i] = torch.cat([ks[i], k], 2)); `while step < max_new and not finished.all()`, the step run at the end of"
     " each trip; positions a Range (positional_embedding[arange(t, t + 1)]); masked_fill(finished, eot); tokens"
     " grown by torch.cat", True),
    ("whisper_openai", OpenAICaches, AUDIO + "openai-whisper's cache: per layer the key and value Linears' outputs"
     " [B, S, D] (heads not split) in lists, grown on axis 1; a row finished when its last token is EOT"
     " (tokens[:, -1] == eot, no flag), `if (tokens[:, -1] == eot).all(): break`; positions a slice of the table;"
     " outputs the tokens and the last logits", True),
    ("whisper_unrolled", TwoLayersWrittenOut, AUDIO + "the two layers written out, each layer's self-attention K"
     " and V loop-carried tensors of their own passed through the step as a 4-tuple; finished rows masked as"
     " generate() does (next * unfinished + eot * (1 - unfinished), an int64 mask), `if unfinished.max() == 0:"
     " break`; positions a Range", True),
    ("whisper_batch_first", StackedBatchFirst, AUDIO + "the stacked caches batch-first [B, L, H, S, Dh]"
     " (torch.stack(ks, 1), read as past_k[:, i]) growing on axis 3; `while step < max_new and not"
     " finished.all()`; positions a slice of the table; torch.where padding; outputs the tokens and the last logits",
     True),
    ("whisper_encoder", WithEncoder, "a small Whisper encoder before the loop over mel [B, n_mels, frames] (Conv1d +"
     " GELU, Conv1d stride 2 + GELU, sinusoidal positions sliced to the frames, one pre-norm block, LayerNorm);"
     " then whisper_stacked's decoder: one stacked self-attention cache per K and V [L, B, H, S, Dh], positions a"
     " slice of the table, torch.where padding, `break`; outputs the tokens and the last logits", True),
    ("whisper_while_loop", PreallocatedWhileLoop, AUDIO + "torch._higher_order_ops.while_loop (it cannot grow its"
     " carries): the stacked self-attention cache [L, B, H, 32, Dh] preallocated, written at the new position with"
     " index_copy, read under a mask of the later positions; positions the table at a carried index; tokens"
     " written into a [B, max_new] buffer with index_copy; outputs the buffer and the steps run", False),
]


def weights(cfg: Config) -> dict[str, Tensor]:
    """The shared decoder weights: fixed seed; a livelier cross-attention and final LayerNorm; positions that
    matter, with a component along EOT's embedding growing with the position, so that (with the logits tied to the
    embedding) EOT gets likelier as the text grows and rows end after a few tokens, at steps that depend on the
    audio."""
    torch.manual_seed(52)
    model = Decoder(cfg).eval()
    with torch.no_grad():
        model.token_embedding.weight.mul_(0.5)
        for block in model.blocks:
            block.cross_attn.out.weight.mul_(3.0)
        model.ln.weight.mul_(3.0)
        eot_row = model.token_embedding.weight[cfg.eot]
        growth = 3.0 * torch.arange(cfg.positions).unsqueeze(1) / cfg.max_new
        model.positional_embedding.mul_(8.0).add_(growth * eot_row / eot_row.norm())
    return model.state_dict()


def examples(model: Decoder, cfg: Config, name: str, scripted: bool, mel: bool
             ) -> tuple[dict[str, Tensor], ...]:
    """An example ending by EOT, one ending at the bound, and one of other sizes (batch 3, other encoder length,
    two start tokens instead of three)."""

    def make(seed: int, batch: int = 2, frames: int = 6, prompt: int = 3) -> dict[str, Tensor]:
        rng = np.random.default_rng(seed)
        first = ({"mel": torch.from_numpy(rng.standard_normal((batch, cfg.n_mels, 2 * frames)).astype(np.float32))}
                 if mel else
                 {"audio_features": torch.from_numpy(rng.standard_normal((batch, frames, cfg.dim)).astype(np.float32))})
        sot = torch.tensor([[1, 2, 3][:prompt]] * batch, dtype=torch.int64)
        return {**first, "sot": sot, "max_new_tokens": torch.tensor(cfg.max_new, dtype=torch.int64)}

    def keep(by_eos: bool | None) -> Callable[[dict[str, Tensor]], bool]:
        def ok(inp: dict[str, Tensor]) -> bool:
            out = model(*inp.values())
            if scripted:
                tokens = (out[0] if isinstance(out, tuple) else out)[:, inp["sot"].size(1):]
            else:
                tokens = out[0][:, :int(out[1])]
            return (stops_as_wanted(tokens, cfg.eot, cfg.max_new, by_eos)
                    and margin(model.head, lambda: model(*inp.values())) > 1e-3)
        return ok

    return (search(make, keep(True), name), search(make, keep(False), f"{name} (bound)"),
            search(lambda seed: make(seed, 3, 9, 2), keep(None), f"{name} (other sizes)"))


def make_module(kind: type[Decoder], cfg: Config) -> Decoder:
    """A variant at ``cfg`` with the shared decoder weights (and seeded encoder weights), in eval mode."""
    torch.manual_seed(58)  # the encoder's weights (one variant); the decoder's are weights(cfg)'s
    model = kind(cfg).eval()
    model.load_state_dict(weights(cfg), strict=False)
    if isinstance(model, WithEncoder):
        with torch.no_grad():  # an encoder output that depends on the mel enough for rows to end apart
            model.encoder.conv1.weight.mul_(4.0)
            model.encoder.attn.out.weight.mul_(2.0)
    return model


def export(suite: family.Suite, name: str, model: Decoder, example: dict[str, Tensor], scripted: bool) -> str:
    """Export ``model`` as ``<name>.onnx`` into ``suite``'s folder; returns how, for the case's description."""
    first = next(iter(example))
    if not scripted:
        dim = torch.export.Dim
        shapes = ({0: dim("batch", min=1, max=16), 1: dim("frames", min=1, max=64)},
                  {0: dim("batch", min=1, max=16), 1: dim("prompt_len", min=1, max=8)}, None)
        suite.export_dynamo(name, model, example, ["tokens", "steps"], shapes)
        return f"{family.DYNAMO}, dynamic batch, T_enc and prompt_len"
    with torch.no_grad():
        outputs = ["tokens"] + (["logits"] if len(family._flatten(model(*example.values()))) > 1 else [])
    axes = {first: {0: "batch", 1 + (first == "mel"): "frames"}, "sot": {0: "batch", 1: "prompt_len"},
            "tokens": {0: "batch", 1: "length"}}
    suite.export_ts(name, model, example, outputs, axes)
    return f"{family.TS}, dynamic batch, {'frames' if first == 'mel' else 'T_enc'} and prompt_len"


def make_variant(name: str, kind: type[Decoder], differs: str, scripted: bool, cfg: Config) -> None:
    model = make_module(kind, cfg)
    by_eos, by_bound, other = examples(model, cfg, name, scripted, isinstance(model, WithEncoder))
    how = export(SUITE, name, model, by_eos, scripted)
    about = BASE.format(**dataclasses.asdict(cfg)) + differs + "; " + how
    SUITE.save(name, f"{name}.onnx", model, by_eos, about + "; every row ends by EOT, at different steps", other)
    SUITE.save(f"{name}_max_len", f"{name}.onnx", model, by_bound,
               about + f"; runs to max_new_tokens = {cfg.max_new}, one row ended earlier by EOT")


def main(names: list[str]) -> None:
    warnings.filterwarnings("ignore")
    cfg = Config()
    for name, kind, differs, scripted in VARIANTS:
        if not names or name in names:
            make_variant(name, kind, differs, scripted, cfg)
    SUITE.write_toml()


if __name__ == "__main__":
    main(sys.argv[1:])

"""Make the Tacotron 2 family: one decoder with growing state, exported the ways real PyTorch code differs.

Run outside the test suite, in the PyTorch corpus's venv (loopc never depends on torch):

    python3 -m venv venv-torch
    venv-torch/bin/pip install -r tests/models/torch/requirements.txt
    venv-torch/bin/python tests/models/tacotron_family/make_models.py

The model is Tacotron 2's decoder as NVIDIA's and ESPnet's implementations write it: a ReLU prenet on the previous
mel frame, an attention LSTMCell, location-sensitive attention over the stacked [previous, cumulative] attention
weights, a decoder LSTMCell, a mel projection and a stop gate; the loop ends when every row's gate has fired or at
``max_decoder_steps``. The mel, gate and alignment outputs grow every trip, and the last mel frame is read back as
the next prenet input. Every size is a field of :class:`Tacotron2Config`; ``PUBLISHED`` is the paper's, and
:func:`make_model` builds any variant at any size (a benchmark script can import it).

Every model is built from fixed seeds. For each case the script writes ``<case>.onnx``, ``<case>.inputs.npz``
(keyed by graph input name), ``<case>.expected.npz`` (the eager PyTorch module's outputs, keyed by graph output
name), and finally ``cases.toml``. Each export is checked once against onnxruntime, and once more at batch 3 and
another text length, so that an export baked to the example's sizes fails here.
"""

from __future__ import annotations

import dataclasses
import pathlib
import warnings
from typing import Callable, Optional

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import Tensor, nn
from torch._higher_order_ops.while_loop import while_loop

HERE = pathlib.Path(__file__).resolve().parent
OPSET = 17  # the TorchScript exporter's opset; the dynamo exporter keeps its own default
VERSION = torch.__version__.split("+")[0]
TS = f"torch.jit.script, TorchScript exporter (torch {VERSION}, dynamo=False), opset {OPSET}"
DYNAMO = f"dynamo exporter (torch {VERSION}, dynamo=True, dynamic_shapes), its default opset"

States = tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]


@dataclasses.dataclass(frozen=True)
class Tacotron2Config:
    """Every size of the model; the defaults are the small test sizes."""

    n_symbols: int = 16
    symbols_embedding: int = 16
    encoder_convs: int = 3
    encoder_kernel: int = 5
    encoder_dim: int = 16
    attention_rnn: int = 32
    decoder_rnn: int = 32
    prenet: int = 16
    attention_dim: int = 16
    location_filters: int = 4
    location_kernel: int = 5
    n_mel: int = 8
    postnet_dim: int = 16
    postnet_kernel: int = 5
    postnet_convs: int = 3
    max_decoder_steps: int = 12
    gate_threshold: float = 0.5
    frames_per_step: int = 1  # NVIDIA's n_frames_per_step, ESPnet's reduction_factor


#: Tacotron 2 at its published size (Shen et al. 2018; NVIDIA's hparams.py).
PUBLISHED = Tacotron2Config(
    n_symbols=148, symbols_embedding=512, encoder_dim=512, attention_rnn=1024, decoder_rnn=1024, prenet=256,
    attention_dim=128, location_filters=32, location_kernel=31, n_mel=80, postnet_dim=512, postnet_convs=5,
    max_decoder_steps=1000,
)


# ---------------------------------------------------------------------------------------------------------------
# The parts, as NVIDIA's tacotron2/model.py writes them (dropout left out: the models are in eval mode)
# ---------------------------------------------------------------------------------------------------------------


def get_mask_from_lengths(lengths: Tensor, max_len: int) -> Tensor:
    """True at the padding positions of each row (NVIDIA's ``~get_mask_from_lengths``)."""
    ids = torch.arange(0, max_len, device=lengths.device)
    return ids.unsqueeze(0) >= lengths.unsqueeze(1)


class Prenet(nn.Module):
    def __init__(self, cfg: Tacotron2Config) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(cfg.n_mel, cfg.prenet, bias=False),
                                     nn.Linear(cfg.prenet, cfg.prenet, bias=False)])

    def forward(self, x: Tensor) -> Tensor:
        for linear in self.layers:
            x = torch.relu(linear(x))
        return x


class LocationLayer(nn.Module):
    def __init__(self, cfg: Tacotron2Config) -> None:
        super().__init__()
        k = cfg.location_kernel
        self.location_conv = nn.Conv1d(2, cfg.location_filters, k, padding=(k - 1) // 2, bias=False)
        self.location_dense = nn.Linear(cfg.location_filters, cfg.attention_dim, bias=False)

    def forward(self, attention_weights_cat: Tensor) -> Tensor:
        return self.location_dense(self.location_conv(attention_weights_cat).transpose(1, 2))


class Attention(nn.Module):
    """Location-sensitive attention: tanh energies over the processed memory, query and location features."""

    def __init__(self, cfg: Tacotron2Config) -> None:
        super().__init__()
        self.query_layer = nn.Linear(cfg.attention_rnn, cfg.attention_dim, bias=False)
        self.memory_layer = nn.Linear(cfg.encoder_dim, cfg.attention_dim, bias=False)
        self.v = nn.Linear(cfg.attention_dim, 1, bias=False)
        self.location_layer = LocationLayer(cfg)

    def forward(self, query: Tensor, memory: Tensor, processed_memory: Tensor, attention_weights_cat: Tensor,
                mask: Optional[Tensor]) -> tuple[Tensor, Tensor]:
        processed_query = self.query_layer(query.unsqueeze(1))
        processed_attention = self.location_layer(attention_weights_cat)
        energies = self.v(torch.tanh(processed_query + processed_attention + processed_memory)).squeeze(-1)
        if mask is not None:
            energies = energies.masked_fill(mask, -float("inf"))
        attention_weights = torch.softmax(energies, dim=1)
        attention_context = torch.bmm(attention_weights.unsqueeze(1), memory).squeeze(1)
        return attention_context, attention_weights


class Encoder(nn.Module):
    """Embedding, a Conv1d + BatchNorm + ReLU stack, a BiLSTM (nn.LSTM)."""

    def __init__(self, cfg: Tacotron2Config) -> None:
        super().__init__()
        self.embedding = nn.Embedding(cfg.n_symbols, cfg.symbols_embedding)
        k, dims = cfg.encoder_kernel, [cfg.symbols_embedding] + [cfg.encoder_dim] * cfg.encoder_convs
        self.convolutions = nn.ModuleList([
            nn.Sequential(nn.Conv1d(a, b, k, padding=(k - 1) // 2), nn.BatchNorm1d(b)) for a, b in zip(dims, dims[1:])
        ])
        self.lstm = nn.LSTM(cfg.encoder_dim, cfg.encoder_dim // 2, 1, batch_first=True, bidirectional=True)

    def forward(self, text: Tensor) -> Tensor:
        x = self.embedding(text).transpose(1, 2)
        for conv in self.convolutions:
            x = torch.relu(conv(x))
        outputs, _ = self.lstm(x.transpose(1, 2))
        return outputs


class Postnet(nn.Module):
    """Conv1d + BatchNorm layers with tanh between them, over [B, n_mel, T]; the caller adds the residual."""

    def __init__(self, cfg: Tacotron2Config) -> None:
        super().__init__()
        k = cfg.postnet_kernel
        dims = [cfg.n_mel] + [cfg.postnet_dim] * (cfg.postnet_convs - 1) + [cfg.n_mel]
        self.convolutions = nn.ModuleList([
            nn.Sequential(nn.Conv1d(a, b, k, padding=(k - 1) // 2), nn.BatchNorm1d(b)) for a, b in zip(dims, dims[1:])
        ])
        self.last = len(self.convolutions) - 1

    def forward(self, x: Tensor) -> Tensor:
        for i, conv in enumerate(self.convolutions):
            x = conv(x)
            if i < self.last:
                x = torch.tanh(x)
        return x


class Decoder(nn.Module):
    """Tacotron 2's decoder step (NVIDIA's ``Decoder.decode``) with its states passed explicitly; the variants below
    differ only in ``forward``: how they loop, stop and grow their outputs."""

    def __init__(self, cfg: Tacotron2Config, text_encoder: bool = False) -> None:
        super().__init__()
        self.n_mel, self.max_decoder_steps, self.gate_threshold = cfg.n_mel, cfg.max_decoder_steps, cfg.gate_threshold
        self.attention_rnn_dim, self.decoder_rnn_dim = cfg.attention_rnn, cfg.decoder_rnn
        self.encoder = Encoder(cfg) if text_encoder else nn.Identity()
        self.prenet = Prenet(cfg)
        self.attention_rnn = nn.LSTMCell(cfg.prenet + cfg.encoder_dim, cfg.attention_rnn)
        self.attention_layer = Attention(cfg)
        self.decoder_rnn = nn.LSTMCell(cfg.attention_rnn + cfg.encoder_dim, cfg.decoder_rnn)
        self.frames_per_step = cfg.frames_per_step
        self.linear_projection = nn.Linear(cfg.decoder_rnn + cfg.encoder_dim, cfg.n_mel * cfg.frames_per_step)
        self.gate_layer = nn.Linear(cfg.decoder_rnn + cfg.encoder_dim, 1)
        self.postnet = Postnet(cfg)

    def initial_states(self, memory: Tensor) -> States:
        """Attention hidden and cell, decoder hidden and cell, attention weights and their sum, context."""
        b, t = memory.size(0), memory.size(1)
        ah = memory.new_zeros(b, self.attention_rnn_dim)
        dh = memory.new_zeros(b, self.decoder_rnn_dim)
        w = memory.new_zeros(b, t)
        return ah, torch.zeros_like(ah), dh, torch.zeros_like(dh), w, torch.zeros_like(w), torch.zeros_like(memory[:, 0])

    def decode(self, decoder_input: Tensor, memory: Tensor, processed_memory: Tensor, mask: Optional[Tensor],
               states: States) -> tuple[Tensor, Tensor, States]:
        """One step: (mel frame [B, n_mel], gate logit [B, 1], new states); the attention weights are states[4]."""
        ah, ac, dh, dc, w, w_cum, ctx = states
        ah, ac = self.attention_rnn(torch.cat((decoder_input, ctx), -1), (ah, ac))
        weights_cat = torch.cat((w.unsqueeze(1), w_cum.unsqueeze(1)), dim=1)
        ctx, w = self.attention_layer(ah, memory, processed_memory, weights_cat, mask)
        w_cum = w_cum + w
        dh, dc = self.decoder_rnn(torch.cat((ah, ctx), -1), (dh, dc))
        hidden_context = torch.cat((dh, ctx), dim=1)
        return self.linear_projection(hidden_context), self.gate_layer(hidden_context), (ah, ac, dh, dc, w, w_cum, ctx)

    def fired(self, gate: Tensor) -> Tensor:
        return torch.sigmoid(gate.squeeze(1)) > self.gate_threshold


# ---------------------------------------------------------------------------------------------------------------
# The variants
# ---------------------------------------------------------------------------------------------------------------


class CatBatchFirst(Decoder):
    """mel [B, T, n_mel] grown by ``torch.cat`` on axis 1 from a go frame, ``mel[:, -1]`` read back; gate [B, T],
    alignments [B, T, T_in]; padding mask from lengths; ``break`` when every row's gate fires on the same step."""

    def forward(self, memory: Tensor, memory_lengths: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        mask = get_mask_from_lengths(memory_lengths, memory.size(1))
        processed_memory = self.attention_layer.memory_layer(memory)
        states = self.initial_states(memory)
        mel = memory.new_zeros(memory.size(0), 1, self.n_mel)
        gates = memory.new_zeros(memory.size(0), 0)
        alignments = memory.new_zeros(memory.size(0), 0, memory.size(1))
        for _ in range(self.max_decoder_steps):
            frame, gate, states = self.decode(self.prenet(mel[:, -1]), memory, processed_memory, mask, states)
            mel = torch.cat([mel, frame.unsqueeze(1)], 1)
            gates = torch.cat([gates, gate], 1)
            alignments = torch.cat([alignments, states[4].unsqueeze(1)], 1)
            if bool(self.fired(gate).all()):
                break
        mel = mel[:, 1:]
        mel_postnet = mel + self.postnet(mel.transpose(1, 2)).transpose(1, 2)
        return mel, mel_postnet, gates, alignments


class NvidiaLayout(Decoder):
    """NVIDIA's layout: mel [B, n_mel, T] grown on the last axis, ``mel[:, :, -1]`` read back, alignments
    [B, T_in, T] and gate [B, T] also grown on the last axis; no padding mask; a row's frames after its gate fired
    are zeroed, ``mel_lengths`` counts its frames up to the firing one; postnet on [B, n_mel, T] as it is."""

    def forward(self, memory: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        b = memory.size(0)
        processed_memory = self.attention_layer.memory_layer(memory)
        states = self.initial_states(memory)
        mel = memory.new_zeros(b, self.n_mel, 1)
        gates = memory.new_zeros(b, 0)
        alignments = memory.new_zeros(b, memory.size(1), 0)
        finished = torch.zeros(b, dtype=torch.bool)
        mel_lengths = torch.zeros(b, dtype=torch.int64)
        for _ in range(self.max_decoder_steps):
            frame, gate, states = self.decode(self.prenet(mel[:, :, -1]), memory, processed_memory, None, states)
            frame = frame.masked_fill(finished.unsqueeze(1), 0.0)
            mel = torch.cat([mel, frame.unsqueeze(2)], 2)
            gates = torch.cat([gates, gate], 1)
            alignments = torch.cat([alignments, states[4].unsqueeze(2)], 2)
            mel_lengths = mel_lengths + (~finished).long()
            finished = torch.logical_or(finished, self.fired(gate))
            if bool(finished.all()):
                break
        mel = mel[:, :, 1:]
        return mel, mel + self.postnet(mel), gates, alignments, mel_lengths


class TimeFirst(Decoder):
    """NVIDIA DeepLearningExamples' ``Decoder.infer``: ``while True``, the outputs grown by ``torch.cat`` on axis 0
    ([T, B, n_mel]) from empty, ``mel_outputs[-1]`` read back, int32
    ``not_finished`` and ``mel_lengths``, one ``break`` when ``torch.sum(not_finished) == 0`` or
    ``len(mel_outputs) == max_decoder_steps``; padding mask from lengths; outputs transposed to [B, n_mel, T]
    (``parse_decoder_outputs``), postnet."""

    def forward(self, memory: Tensor, memory_lengths: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        mask = get_mask_from_lengths(memory_lengths, memory.size(1))
        processed_memory = self.attention_layer.memory_layer(memory)
        states = self.initial_states(memory)
        decoder_input = memory.new_zeros(memory.size(0), self.n_mel)
        mel_lengths = torch.zeros([memory.size(0)], dtype=torch.int32)
        not_finished = torch.ones([memory.size(0)], dtype=torch.int32)
        # DeepLearningExamples starts from torch.zeros(1) and assigns on the first trip (`if first_iter:`); the
        # TorchScript exporter refuses that carry's change of rank ("All tensors must have the same rank"), so the
        # outputs start empty at their rank.
        mel_outputs = memory.new_zeros(0, memory.size(0), self.n_mel)
        gate_outputs = memory.new_zeros(0, memory.size(0))
        alignments = memory.new_zeros(0, memory.size(0), memory.size(1))
        while True:
            mel_output, gate_output, states = self.decode(self.prenet(decoder_input), memory, processed_memory, mask,
                                                          states)
            mel_outputs = torch.cat((mel_outputs, mel_output.unsqueeze(0)), dim=0)
            gate_outputs = torch.cat((gate_outputs, gate_output.transpose(0, 1)), dim=0)
            alignments = torch.cat((alignments, states[4].unsqueeze(0)), dim=0)
            dec = torch.le(torch.sigmoid(gate_output), self.gate_threshold).to(torch.int32).squeeze(1)
            not_finished = not_finished * dec
            mel_lengths += not_finished
            # DeepLearningExamples writes two `if ...: break` in a row; the TorchScript exporter then fills the second
            # If's unreached outputs with float placeholders where int32 ones are declared, and onnxruntime refuses
            # the model ("Mismatched tensor element type"): one break.
            if bool(torch.sum(not_finished) == 0) or len(mel_outputs) == self.max_decoder_steps:
                break
            decoder_input = mel_outputs[-1]
        mel = mel_outputs.permute(1, 2, 0)
        return mel, mel + self.postnet(mel), gate_outputs.transpose(0, 1), alignments.transpose(0, 1), mel_lengths


class TextStack(Decoder):
    """NVIDIA's original ``Decoder.inference`` with the text encoder before the loop: lists grown by ``+= [x]``,
    ``mel_outputs[-1]`` read back, ``torch.stack`` after the loop (``parse_decoder_outputs``); padding mask from the
    text lengths; ``break`` once every row's gate has fired; postnet."""

    def forward(self, text: Tensor, text_lengths: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        memory = self.encoder(text)
        mask = get_mask_from_lengths(text_lengths, memory.size(1))
        processed_memory = self.attention_layer.memory_layer(memory)
        states = self.initial_states(memory)
        decoder_input = memory.new_zeros(memory.size(0), self.n_mel)
        finished = torch.zeros(memory.size(0), dtype=torch.bool)
        mel_outputs: list[Tensor] = []
        gate_outputs: list[Tensor] = []
        alignments: list[Tensor] = []
        for _ in range(self.max_decoder_steps):
            mel_output, gate_output, states = self.decode(self.prenet(decoder_input), memory, processed_memory, mask,
                                                          states)
            mel_outputs += [mel_output]
            gate_outputs += [gate_output.squeeze(1)]
            alignments += [states[4]]
            finished = torch.logical_or(finished, self.fired(gate_output))
            if bool(finished.all()):
                break
            decoder_input = mel_outputs[-1]
        # NVIDIA's parse_decoder_outputs transposes torch.stack(list); the TorchScript exporter knows no rank for a
        # stacked list ("ONNX export of transpose for tensor of unknown rank"), so the stacks are on the final axes.
        mel = torch.stack(mel_outputs, 2)
        return mel, mel + self.postnet(mel), torch.stack(gate_outputs, 1), torch.stack(alignments, 1)


class WhileCondition(Decoder):
    """``while step < max_decoder_steps and not finished.all()`` (the bound a graph input), mel [B, T, n_mel]
    grown by ``torch.cat`` on axis 1 and ``mel[:, -1]`` read back; padding mask from lengths; no postnet."""

    def forward(self, memory: Tensor, memory_lengths: Tensor, max_decoder_steps: Tensor
                ) -> tuple[Tensor, Tensor, Tensor]:
        mask = get_mask_from_lengths(memory_lengths, memory.size(1))
        processed_memory = self.attention_layer.memory_layer(memory)
        states = self.initial_states(memory)
        mel = memory.new_zeros(memory.size(0), 1, self.n_mel)
        gates = memory.new_zeros(memory.size(0), 0)
        alignments = memory.new_zeros(memory.size(0), 0, memory.size(1))
        finished = torch.zeros(memory.size(0), dtype=torch.bool)
        step = 0
        while step < int(max_decoder_steps) and not bool(finished.all()):
            frame, gate, states = self.decode(self.prenet(mel[:, -1]), memory, processed_memory, mask, states)
            mel = torch.cat([mel, frame.unsqueeze(1)], 1)
            gates = torch.cat([gates, gate], 1)
            alignments = torch.cat([alignments, states[4].unsqueeze(1)], 1)
            finished = torch.logical_or(finished, self.fired(gate))
            step += 1
        return mel[:, 1:], gates, alignments


class Preallocated(Decoder):
    """Scripted with preallocated outputs written by slice assignment (``mel[:, i + 1] = frame``, a go frame at 0,
    ``mel[:, i]`` read back), frames of finished rows zeroed, ``break`` once every row has fired, the buffers cut to
    the steps run; the text encoder before the loop, no padding mask; postnet."""

    def forward(self, text: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        memory = self.encoder(text)
        b, steps_max = memory.size(0), self.max_decoder_steps
        processed_memory = self.attention_layer.memory_layer(memory)
        states = self.initial_states(memory)
        mel = memory.new_zeros(b, steps_max + 1, self.n_mel)
        gates = memory.new_zeros(b, steps_max)
        alignments = memory.new_zeros(b, steps_max, memory.size(1))
        finished = torch.zeros(b, dtype=torch.bool)
        steps = 0
        for i in range(steps_max):
            frame, gate, states = self.decode(self.prenet(mel[:, i]), memory, processed_memory, None, states)
            mel[:, i + 1] = frame.masked_fill(finished.unsqueeze(1), 0.0)
            gates[:, i] = gate.squeeze(1)
            alignments[:, i] = states[4]
            steps = i + 1
            finished = torch.logical_or(finished, self.fired(gate))
            if bool(finished.all()):
                break
        mel = mel[:, 1:steps + 1]
        mel_postnet = mel + self.postnet(mel.transpose(1, 2)).transpose(1, 2)
        return mel, mel_postnet, gates[:, :steps], alignments[:, :steps]


class WhileLoopBuffers(Decoder):
    """``torch.export``'s way: ``while_loop`` cannot grow its carries, so mel [B, max+1, n_mel] (go frame at 0),
    gate [B, max] and alignments [B, max, T_in] are preallocated and written with ``index_copy`` at the trip, the
    previous frame read with ``index_select``; frames of finished rows zeroed; the loop runs while a row is unfinished
    and the trip is below ``max_decoder_steps``; outputs the whole buffers and the steps run; padding mask."""

    def forward(self, memory: Tensor, memory_lengths: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        b, limit = memory.size(0), self.max_decoder_steps
        mask = get_mask_from_lengths(memory_lengths, memory.size(1))
        processed_memory = self.attention_layer.memory_layer(memory)
        mel = memory.new_zeros(b, limit + 1, self.n_mel)
        gates = memory.new_zeros(b, limit)
        alignments = memory.new_zeros(b, limit, memory.size(1))
        finished = torch.zeros(b, dtype=torch.bool)
        mel_lengths = torch.zeros(b, dtype=torch.int64)

        def cond(i: Tensor, finished: Tensor, *rest: Tensor) -> Tensor:
            return (i < limit) & torch.logical_not(finished.all())

        def body(i: Tensor, finished: Tensor, mel_lengths: Tensor, mel: Tensor, gates: Tensor, alignments: Tensor,
                 *states: Tensor) -> tuple[Tensor, ...]:
            at = i.reshape(1)
            previous = mel.index_select(1, at).squeeze(1)
            frame, gate, new = self.decode(self.prenet(previous), memory, processed_memory, mask, tuple(states))
            frame = frame.masked_fill(finished.unsqueeze(1), 0.0)
            mel = mel.index_copy(1, at + 1, frame.unsqueeze(1))
            gates = gates.index_copy(1, at, gate)
            alignments = alignments.index_copy(1, at, new[4].unsqueeze(1))
            mel_lengths = mel_lengths + torch.logical_not(finished).long()
            return (i + 1, torch.logical_or(finished, self.fired(gate)), mel_lengths, mel, gates, alignments, *new)

        steps, _, mel_lengths, mel, gates, alignments, *_ = while_loop(
            cond, body, (torch.zeros((), dtype=torch.int64), finished, mel_lengths, mel, gates, alignments,
                         *self.initial_states(memory)))
        return mel[:, 1:], gates, alignments, mel_lengths, steps


class EspnetUtterance(Decoder):
    """ESPnet's ``Decoder.inference`` on one utterance: the encoder output [T_in, D] unbatched, two frames per step
    (``reduction_factor``), ``outs += [out.view(1, n_mel, r)]`` with ``prev_out = outs[-1][:, :, -1]`` read back, the
    gate as probabilities, ``while True`` with ``if int((probs[-1] >= threshold).sum()) > 0 or idx >= maxlen:
    break``, ``torch.cat`` of the lists after the loop, postnet, outputs [L, n_mel] and [L, T_in]."""

    def forward(self, memory: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        memory = memory.unsqueeze(0)
        processed_memory = self.attention_layer.memory_layer(memory)
        states = self.initial_states(memory)
        maxlen = self.max_decoder_steps * self.frames_per_step
        idx = 0
        outs: list[Tensor] = []
        probs: list[Tensor] = []
        att_ws: list[Tensor] = []
        prev_out = memory.new_zeros(1, self.n_mel)
        while True:
            idx += self.frames_per_step
            out, gate, states = self.decode(self.prenet(prev_out), memory, processed_memory, None, states)
            outs += [out.view(1, self.n_mel, self.frames_per_step)]
            probs += [torch.sigmoid(gate)[0]]
            att_ws += [states[4]]
            prev_out = outs[-1][:, :, -1]
            if int((probs[-1] >= self.gate_threshold).sum()) > 0 or idx >= maxlen:
                break
        mel = torch.cat(outs, dim=2)
        mel = mel + self.postnet(mel)
        return mel.transpose(2, 1).squeeze(0), torch.cat(probs, dim=0), torch.cat(att_ws, dim=0)


VARIANTS: dict[str, type[Decoder]] = {
    "cat": CatBatchFirst, "nvidia_layout": NvidiaLayout, "time_first": TimeFirst, "text_stack": TextStack,
    "while_condition": WhileCondition, "preallocated": Preallocated, "while_loop": WhileLoopBuffers,
    "espnet": EspnetUtterance,
}
TEXT_ENCODER = {"text_stack", "preallocated"}


def make_model(variant: str, cfg: Tacotron2Config = Tacotron2Config(), seed: int = 70,
               tuning: dict[str, float] | None = None) -> Decoder:
    """A variant with seeded random weights in eval mode, the stop gate made to fire after a few steps (after more
    with a smaller ``rate`` in ``tuning``, which overrides :data:`GATE_TUNING` by key)."""
    torch.manual_seed(seed)
    model = VARIANTS[variant](cfg, text_encoder=variant in TEXT_ENCODER).eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm1d):  # running statistics of a trained model, not the identity
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.8, 1.2)
        if isinstance(model.encoder, Encoder):  # default inits give an encoder output that hardly depends on the text
            for conv in model.encoder.convolutions:
                conv[0].weight.mul_(3.0)
            model.encoder.lstm.weight_ih_l0.mul_(3.0)
            model.encoder.lstm.weight_ih_l0_reverse.mul_(3.0)
        model.linear_projection.weight.mul_(2.0)
        _count_steps(model.decoder_rnn, model.gate_layer, cfg.gate_threshold, {**GATE_TUNING, **(tuning or {})})
    return model


def _count_steps(cell: nn.LSTMCell, gate: nn.Linear, threshold: float, tuning: dict[str, float]) -> None:
    """Make decoder unit 0 a leaky counter and the gate read it, so the gate fires after a few steps, at a step that
    depends on the text: random weights alone give a gate that settles in a step or two and never crosses.

    Unit 0's input and output gates are held open and its forget gate nearly shut off (c grows by ~g each step,
    g = tanh(0.15 + a small random projection of [attention hidden, context])); the gate logit is 8 (h_0 - 0.6) plus
    a small random read of the rest, so sigmoid(gate) > threshold once tanh(c_0) passes ~0.6.
    """
    h = cell.hidden_size
    cell.bias_ih[0], cell.bias_ih[h], cell.bias_ih[3 * h] = 4.0, 6.0, 4.0
    cell.bias_hh[[0, h, 2 * h, 3 * h]] = 0.0
    cell.weight_ih[[0, h, 3 * h]] = 0.0
    cell.weight_hh[[0, h, 2 * h, 3 * h]] = 0.0
    cell.bias_ih[2 * h] = tuning["rate"]
    cell.weight_ih[2 * h].mul_(tuning["spread"])
    gate.weight.mul_(tuning["noise"])
    gate.weight[0, 0] = tuning["gain"]
    gate.bias.fill_(-tuning["gain"] * tuning["level"] + float(np.log(threshold / (1 - threshold))))


GATE_TUNING = {"rate": 0.15, "spread": 0.2, "noise": 0.2, "gain": 8.0, "level": 0.6}


# ---------------------------------------------------------------------------------------------------------------
# Export, check against onnxruntime, save
# ---------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Export:
    """One exported model: its variant, how it is exported, its graph inputs and outputs with their dynamic axes."""

    name: str
    variant: str
    about: str
    inputs: dict[str, dict[int, str]]
    outputs: dict[str, dict[int, str]]
    #: the eager outputs' gate logits [B, T] of the steps run
    gates: Callable[[tuple[Tensor, ...]], Tensor]
    dynamo: bool = False
    cfg: Tacotron2Config = Tacotron2Config()
    batched: bool = True


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    export: Export
    stop: str  # "gate": every row's gate fired after 4 to 9 steps; "max": a row's gate never fired


CASES: list[tuple[Case, str]] = []  # (case, about)
BATCH_TEXT = {0: "batch", 1: "text_len"}
BATCH = {0: "batch"}


def _graph_io(path: pathlib.Path) -> tuple[list[str], list[str]]:
    model = onnx.load(str(path))
    return [i.name for i in model.graph.input], [o.name for o in model.graph.output]


def eager(module: nn.Module, inputs: dict[str, Tensor]) -> tuple[Tensor, ...]:
    with torch.no_grad():
        return tuple(module(*inputs.values()))


def check_ort(path: pathlib.Path, module: nn.Module, inputs: dict[str, Tensor]) -> dict[str, np.ndarray]:
    """The eager outputs keyed by graph output name, after checking that onnxruntime gives the same."""
    in_names, out_names = _graph_io(path)
    if in_names != list(inputs):
        raise RuntimeError(f"{path.name}: graph inputs {in_names} differ from the example inputs {list(inputs)}")
    want = dict(zip(out_names, (t.numpy() for t in eager(module, inputs))))
    options = ort.SessionOptions()
    options.log_severity_level = 3  # the exporters' stale value_info shapes make onnxruntime warn at every trip
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    for name, got in zip(out_names, session.run(None, {k: v.numpy() for k, v in inputs.items()})):
        if got.shape != want[name].shape or got.dtype != want[name].dtype:
            raise RuntimeError(f"{path.name}: onnxruntime gives {name} {got.dtype}{got.shape}, "
                               f"eager {want[name].dtype}{want[name].shape}")
        np.testing.assert_allclose(got, want[name], rtol=1e-4, atol=1e-5, err_msg=f"{path.name}: {name}")
    return want


def export(spec: Export, module: nn.Module, inputs: dict[str, Tensor], folder: pathlib.Path = HERE) -> pathlib.Path:
    path = folder / f"{spec.name}.onnx"
    if spec.dynamo:
        dims = {name: torch.export.Dim(name, min=1, max=64) for name in ("batch", "text_len")}
        shapes = tuple({axis: dims[dim] for axis, dim in spec.inputs[name].items()} or None for name in inputs)
        torch.onnx.export(module, tuple(inputs.values()), str(path), input_names=list(inputs),
                          output_names=list(spec.outputs), dynamic_shapes=shapes, dynamo=True, external_data=False,
                          verbose=False)
        _strip_node_metadata(path)
    else:
        torch.onnx.export(torch.jit.script(module), tuple(inputs.values()), str(path), input_names=list(inputs),
                          output_names=list(spec.outputs), dynamic_axes={**spec.inputs, **spec.outputs},
                          opset_version=OPSET, dynamo=False)
    return path


def _strip_node_metadata(path: pathlib.Path) -> None:
    """Drop the dynamo exporter's per-node metadata (stack traces, FX node text, which for a while_loop holds its
    whole body); the graph is unchanged."""
    model = onnx.load(str(path))

    def strip(graph: onnx.GraphProto) -> None:
        for node in graph.node:
            del node.metadata_props[:]
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    strip(attr.g)

    strip(model.graph)
    onnx.save(model, str(path))


def example(spec: Export, seed: int, batch: int = 2, text_len: int = 7) -> dict[str, Tensor]:
    """Seeded inputs: text ids or an encoder output, lengths with the longest row at ``text_len``."""
    rng = np.random.default_rng(seed)
    inputs: dict[str, Tensor] = {}
    for name in spec.inputs:
        if name == "text":
            inputs[name] = torch.from_numpy(rng.integers(1, Tacotron2Config.n_symbols, size=(batch, text_len)))
        elif name == "memory":
            shape = (batch, text_len, 16) if spec.batched else (text_len, 16)
            inputs[name] = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
        elif name.endswith("lengths"):
            lengths = rng.integers(max(1, text_len - 3), text_len + 1, size=batch)
            lengths[rng.integers(batch)] = text_len
            inputs[name] = torch.from_numpy(lengths)
        elif name == "max_decoder_steps":
            inputs[name] = torch.tensor(Tacotron2Config.max_decoder_steps, dtype=torch.int64)
    return inputs


def stops(spec: Export, module: nn.Module, inputs: dict[str, Tensor], how: str) -> bool:
    """Whether the loop stops as ``how`` wants, every gate clear of the threshold so rounding cannot move it."""
    gates = spec.gates(eager(module, inputs))
    fired = torch.sigmoid(gates) > Tacotron2Config.gate_threshold
    ever = fired.any(1)
    first = torch.where(ever, fired.int().argmax(1), gates.shape[1])
    clear = bool((gates.abs() > 1e-2).all())
    apart = gates.shape[0] == 1 or len(set(first.tolist())) > 1  # rows fire at different steps
    if how == "gate":
        return clear and apart and 4 <= gates.shape[1] <= 9 and bool(ever.all())
    return (clear and gates.shape[1] == Tacotron2Config.max_decoder_steps and not bool(ever.all())
            and (gates.shape[0] == 1 or bool(ever.any())))


def search(spec: Export, module: nn.Module, how: str, batch: int = 2, text_len: int = 7) -> dict[str, Tensor]:
    """The first seeded input whose loop stops as ``how`` wants (fixed seeds: reproducible)."""
    batch = batch if spec.batched else 1
    for seed in range(2000):
        inputs = example(spec, seed, batch, text_len)
        if stops(spec, module, inputs, how):
            return inputs
    raise RuntimeError(f"no example input for {spec.name} stopping by {how}")


def make(spec: Export, cases: list[Case]) -> None:
    """Export ``spec`` once, check it at batch 2 and at batch 3 with another text length, save its cases."""
    module = make_model(spec.variant, spec.cfg)
    path = export(spec, module, example(spec, 0))
    check_ort(path, module, search(spec, module, "gate", batch=3 if spec.batched else 1, text_len=9))
    for case in cases:
        inputs = search(spec, module, case.stop)
        want = check_ort(path, module, inputs)
        np.savez(HERE / f"{case.name}.inputs.npz", **{k: v.numpy() for k, v in inputs.items()})
        np.savez(HERE / f"{case.name}.expected.npz", **want)
        ending = ("ends by the gate (rows fire at different steps)" if case.stop == "gate"
                  else "ends at max_decoder_steps (a row's gate never fires)")
        CASES.append((case, f"{spec.about}; {ending}"))
        shapes = ", ".join(f"{k}{list(v.shape)}" for k, v in want.items())
        print(f"{case.name}: {path.name} ok against onnxruntime; outputs {shapes}")


def write_toml() -> None:
    lines = ["# Made by make_models.py; one table per case (see README.md).", ""]
    for case, about in CASES:
        lines += [
            "[[model]]",
            f'name = "{case.name}"',
            f'path = "{case.export.name}.onnx"',
            f'inputs = "{case.name}.inputs.npz"',
            f'expected = "{case.name}.expected.npz"',
            "about = " + '"' + about.replace("\\", "\\\\").replace('"', '\\"') + '"',
            "",
        ]
    (HERE / "cases.toml").write_text("\n".join(lines))


# ---------------------------------------------------------------------------------------------------------------
# The exports
# ---------------------------------------------------------------------------------------------------------------

PARTS = ("Tacotron 2 decoder (prenet, attention LSTMCell, location-sensitive attention over [previous, cumulative]"
         " weights, decoder LSTMCell, mel projection, stop gate; n_mel 8, attention dim 16, rnn 32, max 12 steps)")
MEL_BTM = {0: "batch", 1: "frames"}
MEL_BMT = {0: "batch", 2: "frames"}
FRAMES = {0: "batch", 1: "frames"}
ALIGN_BTI = {0: "batch", 1: "frames", 2: "text_len"}


def second(outputs: tuple[Tensor, ...]) -> Tensor:
    return outputs[1]


def third(outputs: tuple[Tensor, ...]) -> Tensor:
    return outputs[2]


def buffered(outputs: tuple[Tensor, ...]) -> Tensor:
    return outputs[1][:, : int(outputs[4])]


def probabilities(outputs: tuple[Tensor, ...]) -> Tensor:
    return torch.logit(outputs[1].double()).float().unsqueeze(0)


EXPORTS = [
    (Export("tacotron2_cat", "cat",
            f"{PARTS}: mel [B, T, n_mel] grown by torch.cat on axis 1 from a go frame and `mel[:, -1]` read back, gate"
            " [B, T] and alignments [B, T, T_in] grown by torch.cat; padding mask from memory_lengths; `if"
            " (sigmoid(gate) > 0.5).all(): break`; Conv1d + BatchNorm + tanh postnet (residual) after the loop;"
            f" {TS}, dynamic batch and text_len",
            {"memory": BATCH_TEXT, "memory_lengths": BATCH},
            {"mel": MEL_BTM, "mel_postnet": MEL_BTM, "gate": FRAMES, "alignments": ALIGN_BTI}, third),
     ["gate", "max"]),
    (Export("tacotron2_nvidia_layout", "nvidia_layout",
            f"{PARTS}: NVIDIA's layout, mel [B, n_mel, T] grown by torch.cat on the last axis and `mel[:, :, -1]`"
            " read back, alignments [B, T_in, T] also on the last axis, gate [B, T]; no padding mask; frames of"
            " finished rows zeroed (masked_fill), mel_lengths counted; break once every row has fired; postnet on"
            f" [B, n_mel, T]; {TS}, dynamic batch and text_len",
            {"memory": BATCH_TEXT},
            {"mel": MEL_BMT, "mel_postnet": MEL_BMT, "gate": FRAMES, "alignments": {0: "batch", 1: "text_len",
                                                                                   2: "frames"},
             "mel_lengths": BATCH}, third),
     ["gate", "max"]),
    (Export("tacotron2_time_first", "time_first",
            f"{PARTS}: NVIDIA DeepLearningExamples' Decoder.infer, `while True:` with the outputs grown from empty"
            " by torch.cat on axis 0 ([T, B, n_mel], [T, B], [T, B, T_in]),"
            " `mel_outputs[-1]` read back, int32 not_finished and mel_lengths, `if torch.sum(not_finished) == 0"
            " or len(mel_outputs) == max_decoder_steps: break`; padding mask from memory_lengths;"
            f" outputs transposed to [B, n_mel, T] after the loop, postnet; {TS}, dynamic batch and text_len",
            {"memory": BATCH_TEXT, "memory_lengths": BATCH},
            {"mel": MEL_BMT, "mel_postnet": MEL_BMT, "gate": FRAMES, "alignments": ALIGN_BTI, "mel_lengths": BATCH},
            third),
     ["gate", "max"]),
    (Export("tacotron2_text_stack", "text_stack",
            f"{PARTS} with the text encoder before the loop (embedding, 3 x Conv1d + BatchNorm + ReLU, BiLSTM by"
            " nn.LSTM): NVIDIA's original Decoder.inference, lists grown by `mel_outputs += [mel_output]` and"
            " `mel_outputs[-1]` read back, torch.stack after the loop (mel [B, n_mel, T]); padding mask from"
            f" text_lengths; break once every row has fired; postnet; {TS}, dynamic batch and text_len",
            {"text": BATCH_TEXT, "text_lengths": BATCH},
            {"mel": MEL_BMT, "mel_postnet": MEL_BMT, "gate": FRAMES, "alignments": ALIGN_BTI}, third),
     ["gate"]),
    (Export("tacotron2_while_condition", "while_condition",
            f"{PARTS}: `while step < max_decoder_steps and not finished.all():` (the bound a graph input), mel"
            " [B, T, n_mel] grown by torch.cat on axis 1 from a go frame and `mel[:, -1]` read back, gate and"
            f" alignments grown by torch.cat; padding mask from memory_lengths; no postnet; {TS}, dynamic batch and"
            " text_len",
            {"memory": BATCH_TEXT, "memory_lengths": BATCH, "max_decoder_steps": {}},
            {"mel": MEL_BTM, "gate": FRAMES, "alignments": ALIGN_BTI}, second),
     ["gate", "max"]),
    (Export("tacotron2_preallocated", "preallocated",
            f"{PARTS} with the text encoder before the loop: outputs preallocated to max_decoder_steps and written by"
            " slice assignment (`mel[:, i + 1] = frame`, go frame at 0, `mel[:, i]` read back), frames of finished"
            " rows zeroed, break once every row has fired, the buffers cut to the steps run (`mel[:, 1:steps + 1]`);"
            f" no padding mask; postnet; {TS}, dynamic batch and text_len",
            {"text": BATCH_TEXT},
            {"mel": MEL_BTM, "mel_postnet": MEL_BTM, "gate": FRAMES, "alignments": ALIGN_BTI}, third),
     ["gate"]),
    (Export("tacotron2_while_loop", "while_loop",
            f"{PARTS}: torch._higher_order_ops.while_loop (it cannot grow its carries): mel [B, 13, n_mel] (go frame"
            " at 0), gate [B, 12], alignments [B, 12, T_in] preallocated and written at the trip with index_copy,"
            " the previous frame read with index_select; frames of finished rows zeroed; runs while a row is"
            " unfinished and the trip < 12; outputs the whole buffers, mel_lengths and the steps run; padding mask"
            f" from memory_lengths; no postnet; {DYNAMO}, dynamic batch and text_len; node metadata stripped",
            {"memory": BATCH_TEXT, "memory_lengths": BATCH},
            {"mel": {}, "gate": {}, "alignments": {}, "mel_lengths": {}, "steps": {}}, buffered, dynamo=True),
     ["gate", "max"]),
    (Export("tacotron2_espnet", "espnet",
            f"{PARTS.replace('12 steps', '12 steps of 2 frames')}: ESPnet's Decoder.inference on one utterance, the"
            " encoder output [T_in, D] unbatched, two frames per step (reduction_factor 2, `out.view(1, n_mel, 2)`),"
            " lists grown by `outs += [...]` and `prev_out = outs[-1][:, :, -1]` read back, the gate as"
            " probabilities, `while True:` with `if int((probs[-1] >= threshold).sum()) > 0 or idx >= maxlen: break`,"
            f" torch.cat of the lists after the loop, postnet; outputs [L, n_mel], [L], [L, T_in]; {TS}, dynamic"
            " text_len",
            {"memory": {0: "text_len"}},
            {"mel": {0: "frames"}, "probs": {0: "steps"}, "alignments": {0: "steps", 1: "text_len"}}, probabilities,
            cfg=Tacotron2Config(frames_per_step=2), batched=False),
     ["gate", "max"]),
]


def main() -> None:
    """Make every export and its cases (a run takes seconds), then ``cases.toml``."""
    warnings.filterwarnings("ignore")
    for spec, stops_by in EXPORTS:
        make(spec, [Case(spec.name if how == "gate" else f"{spec.name}_max_steps", spec, how) for how in stops_by])
    write_toml()
    for onnx_file in sorted(HERE.glob("*.onnx")):
        if onnx_file.stat().st_size > 600_000:
            raise RuntimeError(f"{onnx_file.name} is {onnx_file.stat().st_size} bytes; keep corpus models < 600 KB")


if __name__ == "__main__":
    main()

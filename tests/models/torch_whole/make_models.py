"""Make the whole-model corpus: small real models around their loops, exported the way PyTorch users export them.

Users bring whole models, not loops: a convolutional front end, a recurrent or attention core, and the loop that
decodes, samples or post-processes. Each model here is small (random weights from fixed seeds; no model hub is
reachable) but built from the same parts as the real one, and exported with the exporter and idiom its users use.

Run outside the test suite, in a venv of its own (loopc never depends on torch):

    python3 -m venv venv-torch
    venv-torch/bin/pip install -r tests/models/torch_whole/requirements.txt

torchvision's wheel for torch 2.13 is a CUDA build: its ``_C.so`` links ``libc10_cuda.so`` and ``libtorch_cuda.so``,
which the CPU torch lacks. The CPU kernels (``nms``, ``roi_align``) load once those two exist with the CUDA
symbols the library names (never called on the CPU); stub them and put torch's lib folder on the loader's path:

    LIB=venv-torch/lib/python3.11/site-packages/torch/lib
    nm -D --undefined-only venv-torch/lib/python3.11/site-packages/torchvision/_C.so | awk '{print $2}' \\
        | grep -E 'cuda' | grep -v '@' | sed 's/.*/void &(void) { __builtin_trap(); }/' > stub.c
    sed -i 's/^void \\(_ZN3c104cuda20CUDACachingAllocator9allocatorE\\)(void).*/void *\\1[64];/' stub.c
    gcc -shared -fPIC -o $LIB/libc10_cuda.so stub.c && cp $LIB/libc10_cuda.so $LIB/libtorch_cuda.so
    LD_LIBRARY_PATH=$LIB venv-torch/bin/python tests/models/torch_whole/make_models.py

For each case the script writes ``<case>.onnx``, ``<case>.inputs.npz`` (keyed by graph input name),
``<case>.expected.npz`` (the eager PyTorch module's outputs, keyed by graph output name), and finally
``cases.toml``. Each export is checked once against onnxruntime so that a broken export fails here, not in the
tests. Cases in :data:`PENDING` are made but not listed in ``cases.toml``: loopc cannot build them yet, and the
corpus test requires every listed case to build and match. Naming cases (``make_models.py faster_rcnn fcos``)
remakes only those; the others stay listed as they were.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import sys
import tomllib
import warnings
from collections import OrderedDict
from functools import partial
from typing import Callable

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn.functional as F
import torchvision
from torch import Tensor, nn
from torchvision.models.detection import FCOS, FasterRCNN, KeypointRCNN, MaskRCNN, RetinaNet
from torchvision.models.detection.anchor_utils import AnchorGenerator, DefaultBoxGenerator
from torchvision.models.detection.backbone_utils import BackboneWithFPN
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.models.detection.keypoint_rcnn import KeypointRCNNHeads, KeypointRCNNPredictor
from torchvision.models.detection.mask_rcnn import MaskRCNNHeads, MaskRCNNPredictor
from torchvision.models.detection.ssd import SSD
from torchvision.models.detection.ssdlite import SSDLiteHead
from torchvision.ops import MultiScaleRoIAlign
from torchvision.ops.feature_pyramid_network import LastLevelMaxPool

HERE = pathlib.Path(__file__).resolve().parent
OPSET = 17  # the TorchScript exporter's opset for the scripted models; torchvision documents opset 11 for its own
VERSION = torch.__version__.split("+")[0]
TS = f"TorchScript exporter (torch {VERSION}, dynamo=False), opset {OPSET}"
TV = f"torchvision {torchvision.__version__.split('+')[0]}, traced, TorchScript exporter (torch {VERSION}), opset 11"

#: Cases made but not listed in cases.toml, with what stops loopc today (`loopc build` with no flags).
PENDING: dict[str, str] = {}


# ---------------------------------------------------------------------------------------------------------------
# 1. OCR: CRNN (conv encoder, BiLSTM, CTC greedy decoding loop)
# ---------------------------------------------------------------------------------------------------------------


@torch.jit.script
def ctc_greedy_decode(log_probs: Tensor, blank: int) -> tuple[Tensor, Tensor]:
    """Per frame argmax of ``log_probs`` [T, classes]; repeats and blanks collapsed, written into a [T] buffer."""
    frames = log_probs.size(0)
    best = torch.argmax(log_probs, dim=1)
    out = torch.full((frames,), blank, dtype=torch.long)
    k = 0
    prev = blank
    for t in range(frames):
        c = int(best[t])
        if c != blank and c != prev:
            out[k] = c
            k += 1
        prev = c
    return out, torch.tensor(k)


class CRNN(nn.Module):
    """Shi et al.'s CRNN, small: conv/pool stack to a height of 1, BiLSTM over the columns, CTC greedy decoding."""

    def __init__(self, classes: int = 8, hidden: int = 16) -> None:
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(1, 8, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2, 2),
            nn.Conv2d(8, 16, 3, 1, 1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d((2, 1), (2, 1)),
            nn.Conv2d(16, 16, (4, 1)), nn.ReLU(),
        )
        self.rnn = nn.LSTM(16, hidden, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, image: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        features = self.cnn(image).squeeze(2).permute(2, 0, 1)  # [width/2, 1, 16]
        seq, _ = self.rnn(features)
        log_probs = torch.log_softmax(self.fc(seq), dim=2).squeeze(1)
        tokens, length = ctc_greedy_decode(log_probs, 0)
        return log_probs, tokens, length


# ---------------------------------------------------------------------------------------------------------------
# 2. Speech: conv front end, packed BiLSTM
# ---------------------------------------------------------------------------------------------------------------


class SpeechBiLSTM(nn.Module):
    """A DeepSpeech-like acoustic model: Conv1d front end over time, a BiLSTM over the packed batch
    (``pack_padded_sequence``, unsorted lengths), per-frame log-probabilities."""

    def __init__(self, feat: int = 20, channels: int = 16, hidden: int = 16, classes: int = 10) -> None:
        super().__init__()
        self.front = nn.Sequential(nn.Conv1d(feat, channels, 3, padding=1), nn.BatchNorm1d(channels), nn.ReLU())
        self.rnn = nn.LSTM(channels, hidden, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, features: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
        x = self.front(features.transpose(1, 2)).transpose(1, 2)  # [batch, time, channels]
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        seq, (h_n, _) = self.rnn(packed)
        seq, _ = nn.utils.rnn.pad_packed_sequence(seq, batch_first=True, total_length=features.size(1))
        return torch.log_softmax(self.fc(seq), dim=2), h_n


# ---------------------------------------------------------------------------------------------------------------
# 3. Whisper-style: conv audio front end, transformer decoder, greedy loop
# ---------------------------------------------------------------------------------------------------------------


class Attention(nn.Module):
    """Multi-head attention written out as Whisper's is (q, k, v, out Linear layers), optional additive mask."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))
        self.heads = heads

    def forward(self, x: Tensor, source: Tensor, mask: Tensor) -> Tensor:
        b, n, d = x.shape
        m = source.size(1)
        dh = d // self.heads
        q = self.q(x).view(b, n, self.heads, dh).transpose(1, 2)
        k = self.k(source).view(b, m, self.heads, dh).transpose(1, 2)
        v = self.v(source).view(b, m, self.heads, dh).transpose(1, 2)
        weights = torch.softmax(torch.matmul(q, k.transpose(2, 3)) / math.sqrt(dh) + mask, dim=-1)
        return self.o(torch.matmul(weights, v).transpose(1, 2).reshape(b, n, d))


class Block(nn.Module):
    """A pre-norm transformer block: self-attention, optional cross-attention, GELU MLP."""

    def __init__(self, dim: int, heads: int, cross: bool) -> None:
        super().__init__()
        self.ln1, self.ln2, self.ln3 = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.cross = Attention(dim, heads)
        self.has_cross = cross
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x: Tensor, audio: Tensor, mask: Tensor, no_mask: Tensor) -> Tensor:
        h = self.ln1(x)
        x = x + self.attn(h, h, mask)
        if self.has_cross:
            x = x + self.cross(self.ln2(x), audio, no_mask)
        return x + self.mlp(self.ln3(x))


class WhisperTiny(nn.Module):
    """Whisper's shape at toy size: two Conv1d + GELU over the log-mel frames (the second of stride 2), sinusoidal
    positions, an encoder block; a decoder block with causal self-attention and cross-attention, an output
    projection (untied: with random weights a tied one only repeats its input token). Greedy decoding from SOT until EOT or ``max_len`` tokens, with a while condition (no ``break``),
    the decoder re-run over the whole fixed-size token buffer each step (no cache) and ``tokens[0, n] = next``."""

    def __init__(self, mels: int = 16, frames: int = 20, dim: int = 32, heads: int = 2, vocab: int = 16,
                 max_len: int = 8, sot: int = 1, eot: int = 0) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(mels, dim, 3, padding=1)
        self.conv2 = nn.Conv1d(dim, dim, 3, stride=2, padding=1)
        positions = torch.arange(frames // 2, dtype=torch.float32).unsqueeze(1)
        scales = torch.exp(-math.log(10000.0) * torch.arange(dim // 2, dtype=torch.float32) / (dim // 2 - 1))
        self.register_buffer("audio_pos", torch.cat([torch.sin(positions * scales), torch.cos(positions * scales)], 1))
        self.encoder = Block(dim, heads, cross=False)
        self.ln_audio = nn.LayerNorm(dim)
        self.embed = nn.Embedding(vocab, dim)
        self.text_pos = nn.Parameter(0.1 * torch.randn(max_len, dim))
        self.decoder = Block(dim, heads, cross=True)
        self.ln_text = nn.LayerNorm(dim)
        self.out = nn.Linear(dim, vocab, bias=False)
        self.register_buffer("causal", torch.full((max_len, max_len), -1e9).triu(1))
        self.register_buffer("no_mask", torch.zeros(1))
        self.max_len, self.sot, self.eot = max_len, sot, eot

    def forward(self, mel: Tensor) -> tuple[Tensor, Tensor]:
        x = F.gelu(self.conv2(F.gelu(self.conv1(mel)))).transpose(1, 2) + self.audio_pos
        audio = self.ln_audio(self.encoder(x, x, self.no_mask, self.no_mask))
        tokens = torch.full((1, self.max_len), self.eot, dtype=torch.long)
        tokens[0, 0] = self.sot
        n = 1
        done = False
        while n < self.max_len and not done:
            h = self.decoder(self.embed(tokens) + self.text_pos, audio, self.causal, self.no_mask)
            logits = self.out(self.ln_text(h[0, n - 1]))
            nxt = torch.argmax(logits)
            tokens[0, n] = nxt
            n += 1
            done = bool(nxt == self.eot)
        return tokens, torch.tensor(n)


# ---------------------------------------------------------------------------------------------------------------
# 4. Diffusion: a small UNet in a scripted DDIM sampling loop
# ---------------------------------------------------------------------------------------------------------------


class ResBlock(nn.Module):
    """DDPM's residual block: GroupNorm, SiLU, conv; the timestep embedding added per channel; twice."""

    def __init__(self, cin: int, cout: int, temb: int) -> None:
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(4, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.temb = nn.Linear(temb, cout)
        self.norm2, self.conv2 = nn.GroupNorm(4, cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x: Tensor, emb: Tensor) -> Tensor:
        h = self.conv1(F.silu(self.norm1(x))) + self.temb(emb)[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return self.skip(x) + h


class SelfAttention2d(nn.Module):
    """DDPM's attention block: GroupNorm, 1x1 q/k/v, softmax over all positions, 1x1 projection, residual."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.norm = nn.GroupNorm(4, channels)
        self.qkv = nn.Conv2d(channels, 3 * channels, 1)
        self.proj = nn.Conv2d(channels, channels, 1)

    def forward(self, x: Tensor) -> Tensor:
        b, c, hh, ww = x.shape
        q, k, v = self.qkv(self.norm(x)).reshape(b, 3, c, hh * ww).unbind(1)
        weights = torch.softmax(torch.matmul(q.transpose(1, 2), k) / math.sqrt(c), dim=2)  # [b, hw, hw]
        out = torch.matmul(v, weights.transpose(1, 2)).reshape(b, c, hh, ww)
        return x + self.proj(out)


class UNet(nn.Module):
    """A two-level UNet: conv in, res block, strided-conv down, res block + attention, nearest Resize up + conv,
    skip concat, res block, GroupNorm/SiLU/conv out; sinusoidal timestep embedding through an MLP."""

    def __init__(self, channels: int = 3, base: int = 16, temb: int = 32) -> None:
        super().__init__()
        self.base = base
        self.time_mlp = nn.Sequential(nn.Linear(base, temb), nn.SiLU(), nn.Linear(temb, temb))
        self.conv_in = nn.Conv2d(channels, base, 3, padding=1)
        self.down_block = ResBlock(base, base, temb)
        self.down = nn.Conv2d(base, base, 3, stride=2, padding=1)
        self.mid_block = ResBlock(base, 2 * base, temb)
        self.mid_attn = SelfAttention2d(2 * base)
        self.up_conv = nn.Conv2d(2 * base, base, 3, padding=1)
        self.up_block = ResBlock(2 * base, base, temb)
        self.norm_out = nn.GroupNorm(4, base)
        self.conv_out = nn.Conv2d(base, channels, 3, padding=1)

    def forward(self, x: Tensor, t: Tensor) -> Tensor:
        half = self.base // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
        angles = t.reshape(-1, 1) * freqs.unsqueeze(0)
        emb = self.time_mlp(torch.cat([torch.sin(angles), torch.cos(angles)], 1))
        h0 = self.down_block(self.conv_in(x), emb)
        h = self.mid_attn(self.mid_block(self.down(h0), emb))
        h = self.up_conv(F.interpolate(h, scale_factor=2.0, mode="nearest"))
        h = self.up_block(torch.cat([h0, h], 1), emb)
        return self.conv_out(F.silu(self.norm_out(h)))


class DDIMSampler(nn.Module):
    """Deterministic DDIM (eta = 0), ``steps`` steps over a linear beta schedule of 1000 training steps:
    ``x0 = (x - sqrt(1 - a_t) eps) / sqrt(a_t)``, ``x = sqrt(a_prev) x0 + sqrt(1 - a_prev) eps``, a scripted
    ``for`` over the schedule's length indexing its buffers."""

    def __init__(self, unet: UNet, steps: int = 10) -> None:
        super().__init__()
        self.unet = unet
        alphas = torch.cumprod(1.0 - torch.linspace(1e-4, 0.02, 1000, dtype=torch.float64), 0)
        timesteps = torch.arange(999, -1, -1000 // steps)[:steps]
        prev = torch.cat([alphas[timesteps[1:]], torch.ones(1, dtype=torch.float64)])
        self.register_buffer("timesteps", timesteps.to(torch.float32))
        self.register_buffer("alpha", alphas[timesteps].to(torch.float32))
        self.register_buffer("alpha_prev", prev.to(torch.float32))
        self.steps = steps

    def forward(self, noise: Tensor) -> Tensor:
        x = noise
        for i in range(self.timesteps.size(0)):  # a constant range(self.steps) is unrolled by TorchScript
            a, a_prev = self.alpha[i], self.alpha_prev[i]
            eps = self.unet(x, self.timesteps[i])
            x0 = (x - torch.sqrt(1 - a) * eps) / torch.sqrt(a)
            x = torch.sqrt(a_prev) * x0 + torch.sqrt(1 - a_prev) * eps
        return x


# ---------------------------------------------------------------------------------------------------------------
# 5. torchvision detection: Faster R-CNN, Mask R-CNN and Keypoint R-CNN (small backbone with an FPN)
# ---------------------------------------------------------------------------------------------------------------


def small_fpn_backbone(channels: int = 8) -> BackboneWithFPN:
    """torchvision's ``BackboneWithFPN`` over a four-conv body (strides 4 to 16) instead of a ResNet-50, so that
    the model is kilobytes: three pyramid levels plus the max-pool level, as ``*_resnet50_fpn`` has five;
    ``channels`` out of the FPN."""
    def conv(cin: int, cout: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, 2, 1), nn.ReLU())

    body = nn.Sequential(OrderedDict(stem=conv(3, 8), layer1=conv(8, 8), layer2=conv(8, 16), layer3=conv(16, 16)))
    return BackboneWithFPN(body, {"layer1": "0", "layer2": "1", "layer3": "2"}, [8, 16, 16], channels,
                           extra_blocks=LastLevelMaxPool())


def detection_kwargs() -> dict[str, object]:
    levels = ["0", "1", "2"]
    return dict(
        min_size=64, max_size=64,
        rpn_anchor_generator=AnchorGenerator(((8,), (16,), (32,), (64,)), ((0.5, 1.0, 2.0),) * 4),
        rpn_pre_nms_top_n_test=50, rpn_post_nms_top_n_test=20, box_detections_per_img=6,
        box_roi_pool=MultiScaleRoIAlign(levels, 7, 2), box_head=TwoMLPHead(8 * 7 * 7, 32),
        box_predictor=FastRCNNPredictor(32, 3),
    )


def faster_rcnn() -> FasterRCNN:
    """Faster R-CNN with a livelier box classifier than random init gives (its scores are all near 1/3 otherwise)
    and a box NMS threshold of 0.3, so that the score threshold and the box NMS both drop some of the 20
    proposals and the output is neither empty nor one box per proposal."""
    model = FasterRCNN(small_fpn_backbone(), None, **{**detection_kwargs(), "box_score_thresh": 0.4,
                                                       "box_nms_thresh": 0.3, "box_detections_per_img": 20})
    with torch.no_grad():
        model.roi_heads.box_predictor.cls_score.weight *= 4.0
        model.roi_heads.box_predictor.cls_score.bias[0] -= 2.0  # less background
        model.roi_heads.box_predictor.bbox_pred.weight *= 4.0
    return model


def retinanet() -> RetinaNet:
    """RetinaNet over the same backbone. Its head's init (std 0.01 convs, a prior of 0.01 in the class bias) gives
    near-zero features and scores below any threshold: livelier head convs and a class bias of -1 give varied
    scores, of which the threshold keeps some candidates per level and NMS drops some of those."""
    model = RetinaNet(small_fpn_backbone(), 3, min_size=64, max_size=64,
                      anchor_generator=AnchorGenerator(((8,), (16,), (32,), (64,)), ((0.5, 1.0, 2.0),) * 4),
                      score_thresh=0.3, nms_thresh=0.3, detections_per_img=20, topk_candidates=20)
    with torch.no_grad():
        for head in (model.head.classification_head, model.head.regression_head):
            for conv in head.conv.modules():
                if isinstance(conv, nn.Conv2d):
                    conv.weight *= 30.0
        model.head.classification_head.cls_logits.bias.fill_(-1.0)
        model.head.regression_head.bbox_reg.weight *= 4.0
    return model


def fcos() -> FCOS:
    """FCOS over the same backbone with 32 FPN channels (its head's GroupNorm has 32 groups), one anchor per
    location; a class bias of -1 and box distances of about twice the anchor (a bias of 2), so that the score
    threshold keeps candidates and NMS drops most of them (72 to 9)."""
    model = FCOS(small_fpn_backbone(32), 3, min_size=64, max_size=64,
                 anchor_generator=AnchorGenerator(((8,), (16,), (32,), (64,)), ((1.0,),) * 4),
                 score_thresh=0.2, nms_thresh=0.3, detections_per_img=20, topk_candidates=20)
    with torch.no_grad():
        model.head.classification_head.cls_logits.bias.fill_(-1.0)
        model.head.regression_head.bbox_reg.bias.fill_(2.0)
    return model


class MobileBody(nn.Module):
    """A MobileNet-like body at toy size for SSDlite: a strided conv stem, then depthwise-separable blocks
    (depthwise 3x3 stride 2, BatchNorm, ReLU6, pointwise 1x1, BatchNorm, ReLU6); three feature maps out."""

    def __init__(self) -> None:
        super().__init__()

        def block(cin: int, cout: int) -> nn.Sequential:
            return nn.Sequential(nn.Conv2d(cin, cin, 3, 2, 1, groups=cin), nn.BatchNorm2d(cin), nn.ReLU6(),
                                 nn.Conv2d(cin, cout, 1), nn.BatchNorm2d(cout), nn.ReLU6())

        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.BatchNorm2d(8), nn.ReLU6())
        self.b1, self.b2, self.b3 = block(8, 16), block(16, 16), block(16, 16)
        self.out_channels = [16, 16, 16]

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        a = self.b1(self.stem(x))
        b = self.b2(a)
        return OrderedDict([("0", a), ("1", b), ("2", self.b3(b))])


def ssdlite() -> SSD:
    """torchvision's SSD with its SSDlite head (depthwise-separable predictors) over :class:`MobileBody`,
    default boxes of aspect ratios 2 (and 3), 64x64; BatchNorm statistics randomized and the class predictors
    scaled so that per-class scores spread over the threshold; NMS drops 40 candidates to 12 boxes."""
    anchors = DefaultBoxGenerator([[2], [2, 3], [2, 3]])
    head = SSDLiteHead([16, 16, 16], anchors.num_anchors_per_location(), 3,
                       partial(nn.BatchNorm2d, eps=0.001, momentum=0.03))
    model = SSD(MobileBody(), anchors, (64, 64), 3, head=head, score_thresh=0.4, nms_thresh=0.3,
                detections_per_img=20, topk_candidates=20)
    randomize_batchnorm(model, 44)
    with torch.no_grad():
        for layer in model.head.classification_head.module_list:
            layer[-1].weight *= 20.0
    return model


def mask_rcnn() -> MaskRCNN:
    return MaskRCNN(small_fpn_backbone(), None, mask_roi_pool=MultiScaleRoIAlign(["0", "1", "2"], 14, 2),
                    mask_head=MaskRCNNHeads(8, (8, 8), 1), mask_predictor=MaskRCNNPredictor(8, 8, 3),
                    **detection_kwargs())


def keypoint_rcnn() -> KeypointRCNN:
    return KeypointRCNN(small_fpn_backbone(), None, keypoint_roi_pool=MultiScaleRoIAlign(["0", "1", "2"], 14, 2),
                        keypoint_head=KeypointRCNNHeads(8, (8, 8)), keypoint_predictor=KeypointRCNNPredictor(8, 5),
                        **detection_kwargs())


class EagerDetection(nn.Module):
    """The eager call of a torchvision detector on one image: its result dict's values, in order."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, image: Tensor) -> tuple[Tensor, ...]:
        return tuple(self.model([image])[0].values())


# ---------------------------------------------------------------------------------------------------------------
# 6. YOLO-style detector with a scripted NMS loop
# ---------------------------------------------------------------------------------------------------------------


class TinyYOLO(nn.Module):
    """A YOLO-style single-scale detector: strided conv + BatchNorm + SiLU backbone, 1x1 head per anchor, YOLOv5's
    decode (``(2 sigmoid - 0.5 + grid) * stride``, ``(2 sigmoid)^2 * anchor``), then greedy NMS in a scripted
    ``while`` (take the best score, write it with ``out[k] = ...``, suppress IoU above the threshold)."""

    def __init__(self, classes: int = 3, size: int = 32, max_det: int = 6, conf: float = 0.25, iou: float = 0.45) -> None:
        super().__init__()

        def conv(cin: int, cout: int) -> nn.Sequential:
            return nn.Sequential(nn.Conv2d(cin, cout, 3, 2, 1, bias=False), nn.BatchNorm2d(cout), nn.SiLU())

        self.backbone = nn.Sequential(conv(3, 8), conv(8, 16), conv(16, 16))
        self.anchors_per_cell = 2
        self.head = nn.Conv2d(16, self.anchors_per_cell * (5 + classes), 1)
        cells = size // 8
        ys, xs = torch.meshgrid(torch.arange(cells), torch.arange(cells), indexing="ij")
        self.register_buffer("grid", torch.stack([xs, ys], -1).reshape(1, cells, cells, 2).float())
        self.register_buffer("anchor_wh", torch.tensor([[6.0, 8.0], [14.0, 12.0]]).reshape(2, 1, 1, 2))
        self.classes, self.cells, self.stride = classes, cells, 8.0
        self.max_det, self.conf, self.iou = max_det, conf, iou

    def forward(self, image: Tensor) -> tuple[Tensor, Tensor]:
        p = self.head(self.backbone(image))  # [1, A*(5+C), S, S]
        p = p.reshape(self.anchors_per_cell, 5 + self.classes, self.cells, self.cells).permute(0, 2, 3, 1).sigmoid()
        xy = (p[..., 0:2] * 2 - 0.5 + self.grid) * self.stride
        wh = (p[..., 2:4] * 2) ** 2 * self.anchor_wh
        boxes = torch.cat([xy - wh / 2, xy + wh / 2], -1).reshape(-1, 4)
        class_scores = (p[..., 5:] * p[..., 4:5]).reshape(-1, self.classes)
        scores, labels = class_scores.max(1)
        return nms_loop(boxes, scores, labels, self.max_det, self.conf, self.iou)


@torch.jit.script
def nms_loop(boxes: Tensor, scores: Tensor, labels: Tensor, max_det: int, conf: float,
             iou: float) -> tuple[Tensor, Tensor]:
    """Greedy class-aware NMS: rows ``[x1, y1, x2, y2, score, label]`` of the kept boxes, best first, and how many."""
    out = torch.zeros((max_det, 6))
    live = torch.where(scores > conf, scores, torch.full_like(scores, -1.0))
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    k = 0
    while k < max_det and bool(live.max() > 0):
        i = int(torch.argmax(live))
        out[k] = torch.cat([boxes[i], scores[i:i + 1], labels[i:i + 1].to(torch.float32)])
        lt = torch.maximum(boxes[:, :2], boxes[i, :2])
        rb = torch.minimum(boxes[:, 2:], boxes[i, 2:])
        inter = (rb - lt).clamp(min=0).prod(1)
        overlap = inter / (area + area[i] - inter)
        same = labels == labels[i]
        live = torch.where((overlap > iou) & same, torch.full_like(live, -1.0), live)
        live[i] = -1.0
        k += 1
    return out, torch.tensor(k)


# ---------------------------------------------------------------------------------------------------------------
# 7. Tacotron-style decoder: attention + LSTM decoder loop with a stop token, conv postnet
# ---------------------------------------------------------------------------------------------------------------


class Tacotron(nn.Module):
    """Tacotron 2's decoder at toy size: character embedding and a conv encoder, then per step a ReLU prenet on the
    last frame, an attention LSTMCell, additive (Bahdanau) attention over the encoder memory, a decoder LSTMCell,
    a mel frame and a stop-token projection; frames collected with ``list.append`` until the stop token fires or
    ``max_steps`` (a while condition); a five-layer Conv1d + BatchNorm + tanh postnet on the stacked frames."""

    def __init__(self, vocab: int = 12, dim: int = 16, mels: int = 8, rnn: int = 24, attn: int = 16) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.encoder = nn.Sequential(nn.Conv1d(dim, dim, 5, padding=2), nn.BatchNorm1d(dim), nn.ReLU())
        self.prenet = nn.Sequential(nn.Linear(mels, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU())
        self.attention_rnn = nn.LSTMCell(16 + dim, rnn)
        self.query = nn.Linear(rnn, attn, bias=False)
        self.memory = nn.Linear(dim, attn, bias=False)
        self.score = nn.Linear(attn, 1, bias=False)
        self.decoder_rnn = nn.LSTMCell(rnn + dim, rnn)
        self.frame = nn.Linear(rnn + dim, mels)
        self.stop = nn.Linear(rnn + dim, 1)
        layers: list[nn.Module] = []
        for k, (cin, cout) in enumerate([(mels, 16), (16, 16), (16, 16), (16, 16), (16, mels)]):
            layers += [nn.Conv1d(cin, cout, 5, padding=2), nn.BatchNorm1d(cout)]
            if k < 4:
                layers.append(nn.Tanh())
        self.postnet = nn.Sequential(*layers)
        self.mels, self.rnn, self.dim = mels, rnn, dim

    def forward(self, text: Tensor, max_steps: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        memory = self.encoder(self.embed(text).transpose(1, 2)).transpose(1, 2)  # [1, N, dim]
        keys = self.memory(memory)
        frame = torch.zeros(1, self.mels)
        h1, c1 = torch.zeros(1, self.rnn), torch.zeros(1, self.rnn)
        h2, c2 = torch.zeros(1, self.rnn), torch.zeros(1, self.rnn)
        context = torch.zeros(1, self.dim)
        frames: list[Tensor] = []
        stops: list[Tensor] = []
        step = 0
        done = False
        while step < int(max_steps) and not done:
            h1, c1 = self.attention_rnn(torch.cat([self.prenet(frame), context], 1), (h1, c1))
            energies = self.score(torch.tanh(self.query(h1).unsqueeze(1) + keys)).squeeze(2)  # [1, N]
            context = torch.bmm(torch.softmax(energies, dim=1).unsqueeze(1), memory).squeeze(1)
            h2, c2 = self.decoder_rnn(torch.cat([h1, context], 1), (h2, c2))
            out = torch.cat([h2, context], 1)
            frame = self.frame(out)
            stop = torch.sigmoid(self.stop(out))
            frames.append(frame)
            stops.append(stop)
            step += 1
            done = bool(stop[0, 0] > 0.5)
        mel = torch.stack(frames, 2)  # [1, mels, steps]
        return mel, mel + self.postnet(mel), torch.cat(stops, 1), torch.tensor(step)


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


def check_ort(name: str, model_file: str, module: nn.Module, inputs: dict[str, Tensor], rtol: float | None,
              atol: float | None) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Run ``module`` eagerly and the export in onnxruntime on ``inputs``; raise unless they agree."""
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
    options.log_severity_level = 3
    got = ort.InferenceSession(str(HERE / model_file), options, providers=["CPUExecutionProvider"]).run(None, feeds)
    for out, value in zip(out_names, got):
        want = expected[out]
        if value.shape != want.shape or value.dtype != want.dtype:
            raise RuntimeError(f"{name}: onnxruntime gives {out} {value.dtype}{value.shape}, eager {want.dtype}{want.shape}")
        np.testing.assert_allclose(value, want, rtol=rtol or 1e-4, atol=atol or 1e-5, err_msg=f"{name}: {out}")
    return feeds, expected


def save_case(name: str, module: nn.Module, inputs: dict[str, Tensor], about: str, rtol: float | None = None,
              atol: float | None = None, other_sizes: dict[str, Tensor] | None = None) -> dict[str, np.ndarray]:
    """Save inputs and eager outputs of ``module`` under the model's graph names; check onnxruntime agrees.

    ``other_sizes``: inputs of other dynamic sizes, checked against onnxruntime as well but not saved, so that
    an export baked to the example's sizes fails here."""
    feeds, expected = check_ort(name, f"{name}.onnx", module, inputs, rtol, atol)
    if other_sizes is not None:
        check_ort(name, f"{name}.onnx", module, other_sizes, rtol, atol)
    np.savez(HERE / f"{name}.inputs.npz", **feeds)
    np.savez(HERE / f"{name}.expected.npz", **expected)
    CASES.append(Case(name, f"{name}.onnx", about, rtol, atol))
    shapes = ", ".join(f"{k}{list(v.shape)}" for k, v in expected.items())
    print(f"{name}: ok against onnxruntime; outputs {shapes}")
    return expected


def export_ts(name: str, module: nn.Module, inputs: dict[str, Tensor], outputs: list[str],
              dynamic_axes: dict[str, dict[int, str]], script: bool, opset: int = OPSET) -> None:
    """TorchScript exporter: trace ``module`` (its ``@torch.jit.script`` functions stay loops) or script it."""
    model: nn.Module = torch.jit.script(module) if script else module
    torch.onnx.export(model, tuple(inputs.values()), str(HERE / f"{name}.onnx"), input_names=list(inputs),
                      output_names=outputs, dynamic_axes=dynamic_axes, opset_version=opset, dynamo=False)


def search(make: Callable[[int], dict[str, Tensor]], run: Callable[[dict[str, Tensor]], bool], what: str) -> dict[str, Tensor]:
    """The first seeded example input for which ``run`` says the model behaves as wanted (fixed seeds)."""
    for seed in range(2000):
        inputs = make(seed)
        with torch.no_grad():
            if run(inputs):
                return inputs
    raise RuntimeError(f"no example input found for {what}")


def rnd(rng: np.random.Generator, *shape: int) -> Tensor:
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32))


def randomize_batchnorm(model: nn.Module, seed: int) -> None:
    """Give BatchNorm layers non-trivial running statistics and affine terms (fresh ones are the identity)."""
    gen = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            n = m.num_features
            m.running_mean.copy_(0.2 * torch.randn(n, generator=gen))
            m.running_var.copy_(0.5 + torch.rand(n, generator=gen))
            m.weight.data.copy_(1 + 0.2 * torch.randn(n, generator=gen))
            m.bias.data.copy_(0.1 * torch.randn(n, generator=gen))


# ---------------------------------------------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------------------------------------------


def crnn() -> None:
    torch.manual_seed(40)
    model = CRNN().eval()
    randomize_batchnorm(model, 40)
    with torch.no_grad():  # livelier than PyTorch's default init, so that the columns' classes vary and repeat
        for conv in model.cnn:
            if isinstance(conv, nn.Conv2d):
                conv.weight *= 2.0
        model.rnn.weight_ih_l0 *= 4.0
        model.rnn.weight_ih_l0_reverse *= 4.0
        model.fc.weight *= 3.0
        model.fc.bias[0] += 1.5  # more blanks

    def make(seed: int) -> dict[str, Tensor]:
        return {"image": rnd(np.random.default_rng(seed), 1, 1, 16, 40)}

    def collapses(inp: dict[str, Tensor]) -> bool:
        log_probs, _, length = model(*inp.values())
        best = log_probs.argmax(1)
        return bool((best[1:] == best[:-1]).any()) and bool((best == 0).any()) and 3 <= int(length) <= 12

    export_ts("ocr_crnn", model, make(0), ["log_probs", "tokens", "length"],
              {"image": {3: "width"}, "log_probs": {0: "frames"}, "tokens": {0: "frames"}}, script=False)
    inputs = search(make, collapses, "ocr_crnn")
    save_case("ocr_crnn", model, inputs,
              "OCR CRNN (Conv2d/BatchNorm/ReLU/MaxPool encoder to height 1, nn.LSTM(16, 16, bidirectional=True) over"
              " the columns, Linear + log_softmax, CTC greedy decoding loop in a @torch.jit.script function: argmax,"
              f" collapse repeats and blanks, `out[k] = c`), traced, {TS}, dynamic width",
              other_sizes={"image": rnd(np.random.default_rng(1), 1, 1, 16, 28)})


def speech() -> None:
    torch.manual_seed(41)
    model = SpeechBiLSTM().eval()
    randomize_batchnorm(model, 41)
    rng = np.random.default_rng(41)
    inputs = {"features": rnd(rng, 3, 12, 20), "lengths": torch.tensor([9, 12, 5])}
    export_ts("speech_packed_bilstm", model, inputs, ["log_probs", "h_n"],
              {"features": {0: "batch", 1: "time"}, "lengths": {0: "batch"}, "log_probs": {0: "batch", 1: "time"},
               "h_n": {1: "batch"}}, script=False)
    save_case("speech_packed_bilstm", model, inputs,
              "speech acoustic model (Conv1d + BatchNorm1d + ReLU front end, pack_padded_sequence with unsorted"
              " lengths, nn.LSTM(16, 16, bidirectional=True, batch_first=True), pad_packed_sequence(total_length=T),"
              f" Linear + log_softmax; outputs log_probs and h_n), traced, {TS}, dynamic batch and time",
              other_sizes={"features": rnd(rng, 2, 7, 20), "lengths": torch.tensor([4, 7])})


def whisper() -> None:
    torch.manual_seed(42)
    model = WhisperTiny().eval()
    with torch.no_grad():  # let the audio steer the tokens, and EOT come within the buffer
        model.decoder.cross.o.weight *= 4.0
        model.decoder.cross.v.weight *= 2.0
        model.out.weight[model.eot] *= 2.0

    def make(seed: int) -> dict[str, Tensor]:
        return {"mel": rnd(np.random.default_rng(seed), 1, 16, 20)}

    def stops_early(inp: dict[str, Tensor]) -> bool:
        tokens, n = model(*inp.values())
        return 4 <= int(n) < model.max_len and bool(tokens[0, int(n) - 1] == model.eot)

    export_ts("whisper_greedy", model, make(0), ["tokens", "length"], {}, script=True)
    inputs = search(make, stops_early, "whisper_greedy")
    save_case("whisper_greedy", model, inputs,
              "Whisper-style model (Conv1d + GELU, Conv1d stride 2 + GELU audio front end, sinusoidal positions,"
              " pre-norm encoder block; decoder block with causal self-attention and cross-attention, output"
              " projection), greedy decoding from SOT until EOT in a `while n < max_len and not done` loop re-running"
              f" the decoder over a fixed [1, 8] token buffer written with `tokens[0, n] = next`, torch.jit.script, {TS}")


def unet_ddim() -> None:
    torch.manual_seed(43)
    model = DDIMSampler(UNet()).eval()
    inputs = {"noise": rnd(np.random.default_rng(43), 1, 3, 16, 16)}
    export_ts("unet_ddim", model, inputs, ["sample"], {}, script=True)
    save_case("unet_ddim", model, inputs,
              "DDIM sampling, 10 steps (eta 0, linear betas over 1000 steps) in a scripted `for i in range(timesteps.size(0))`"
              " around a small UNet (Conv2d, GroupNorm, SiLU, timestep embedding from sin/cos of t through an MLP,"
              " strided-conv down, self-attention over the 8x8 positions, nearest F.interpolate up + conv, skip"
              f" concat), torch.jit.script, {TS}", rtol=1e-3, atol=1e-4)


def detector(name: str, make_model: Callable[[], nn.Module], outputs: list[str], what: str) -> None:
    """Export a torchvision detector as torchvision documents it (traced, a list of one image, opset 11)."""
    torch.manual_seed(44)
    model = make_model().eval()
    image = torch.from_numpy(np.random.default_rng(44).uniform(size=(3, 64, 64)).astype(np.float32))
    torch.onnx.export(model, ([image],), str(HERE / f"{name}.onnx"), input_names=["image"], output_names=outputs,
                      opset_version=11, dynamo=False)
    save_case(name, EagerDetection(model), {"image": image},
              f"torchvision.models.detection.{what} (random weights) with a small four-conv body under torchvision's"
              " BackboneWithFPN (3 levels + max-pool level), MultiScaleRoIAlign, 64x64 image; its scripted pieces"
              f" ({SCRIPTED[name]}), {TV}")


#: What each detector's export holds of torchvision's scripted code.
SCRIPTED = {
    "faster_rcnn": "batched_nms's If, for the RPN and the box head",
    "retinanet": "batched_nms's If",
    "fcos": "batched_nms's If",
    "ssdlite": "batched_nms's If",
    "mask_rcnn": "the Loop of paste_masks on the ONNX path, batched_nms's If",
    "keypoint_rcnn": "the Loop of heatmaps_to_keypoints on the ONNX path, batched_nms's If",
}


def yolo() -> None:
    torch.manual_seed(45)
    model = TinyYOLO(max_det=8, conf=0.28).eval()
    randomize_batchnorm(model, 45)
    with torch.no_grad():
        model.head.weight *= 4.0  # scores spread over the threshold

    def make(seed: int) -> dict[str, Tensor]:
        return {"image": torch.from_numpy(np.random.default_rng(seed).uniform(size=(1, 3, 32, 32)).astype(np.float32))}

    def some_suppressed(inp: dict[str, Tensor]) -> bool:
        _, k = model(*inp.values())
        return 2 <= int(k) < model.max_det

    export_ts("yolo_nms", model, make(0), ["detections", "count"], {}, script=False)
    inputs = search(make, some_suppressed, "yolo_nms")
    save_case("yolo_nms", model, inputs,
              "YOLO-style detector (strided Conv2d + BatchNorm + SiLU backbone, 1x1 head, 2 anchors per cell, YOLOv5"
              " decode) with greedy class-aware NMS in a @torch.jit.script `while k < max_det and live.max() > 0`:"
              f" argmax, `out[k] = row`, IoU suppression by torch.where), traced, {TS}")


def tacotron() -> None:
    torch.manual_seed(46)
    model = Tacotron().eval()
    randomize_batchnorm(model, 46)
    with torch.no_grad():  # a stop token that fires after a few frames for some texts
        model.stop.weight *= 12.0
        model.stop.bias -= 0.3

    def make(seed: int) -> dict[str, Tensor]:
        rng = np.random.default_rng(seed)
        return {"text": torch.from_numpy(rng.integers(1, 12, size=(1, 7))), "max_steps": torch.tensor(20)}

    def stops(inp: dict[str, Tensor]) -> bool:
        stop = model(*inp.values())[2]
        return 4 <= stop.shape[1] <= 14 and bool(((stop - 0.5).abs() > 1e-3).all())

    export_ts("tacotron_decoder", model, make(0), ["mel", "mel_postnet", "stop", "steps"],
              {"text": {1: "chars"}, "mel": {2: "frames"}, "mel_postnet": {2: "frames"}, "stop": {1: "frames"}},
              script=True)
    inputs = search(make, stops, "tacotron_decoder")
    save_case("tacotron_decoder", model, inputs,
              "Tacotron 2-style decoder (embedding + Conv1d/BatchNorm encoder; per step ReLU prenet, attention"
              " nn.LSTMCell, additive attention, decoder nn.LSTMCell, mel frame and stop-token projections, list.append;"
              " `while step < max_steps and not done`, done when sigmoid(stop) > 0.5) and a 5-layer Conv1d + BatchNorm"
              f" + tanh postnet, torch.jit.script, {TS}, dynamic chars",
              other_sizes={"text": torch.from_numpy(np.random.default_rng(1).integers(1, 12, size=(1, 11))),
                           "max_steps": torch.tensor(20)})


MAKERS: dict[str, Callable[[], None]] = {
    "ocr_crnn": crnn, "speech_packed_bilstm": speech, "whisper_greedy": whisper, "unet_ddim": unet_ddim,
    "faster_rcnn": lambda: detector("faster_rcnn", faster_rcnn, ["boxes", "labels", "scores"], "FasterRCNN"),
    "retinanet": lambda: detector("retinanet", retinanet, ["boxes", "scores", "labels"], "RetinaNet"),
    "fcos": lambda: detector("fcos", fcos, ["boxes", "scores", "labels"], "FCOS"),
    "ssdlite": lambda: detector("ssdlite", ssdlite, ["boxes", "scores", "labels"], "SSD with SSDLiteHead"),
    "mask_rcnn": lambda: detector("mask_rcnn", mask_rcnn, ["boxes", "labels", "scores", "masks"], "MaskRCNN"),
    "keypoint_rcnn": lambda: detector("keypoint_rcnn", keypoint_rcnn,
                                      ["boxes", "labels", "scores", "keypoints", "keypoints_scores"], "KeypointRCNN"),
    "yolo_nms": yolo, "tacotron_decoder": tacotron,
}


def _earlier_cases() -> dict[str, Case]:
    """The cases the last full run listed, so that remaking some of them keeps the others listed."""
    manifest = HERE / "cases.toml"
    if not manifest.exists():
        return {}
    tables = tomllib.loads(manifest.read_text()).get("model", [])
    return {t["name"]: Case(t["name"], t["path"], t["about"], t.get("rtol"), t.get("atol")) for t in tables}


def write_toml() -> None:
    made = {**_earlier_cases(), **{case.name: case for case in CASES}}
    lines = ["# Made by make_models.py; one table per case (see README.md).", ""]
    for name, why in PENDING.items():
        lines.append(f"# not listed: {name} (loopc: {why})")
    lines.append("")
    for case in sorted(made.values(), key=lambda c: list(MAKERS).index(c.name)):
        if case.name in PENDING:
            continue
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
        lines.append("")
    (HERE / "cases.toml").write_text("\n".join(lines))


def main(only: list[str]) -> None:
    """Make every case (or those named), then list them in cases.toml (those not remade as they were)."""
    warnings.filterwarnings("ignore")
    unknown = set(only) - set(MAKERS)
    if unknown:
        raise SystemExit(f"no such case: {', '.join(sorted(unknown))} (cases: {', '.join(MAKERS)})")
    for name, make in MAKERS.items():
        if not only or name in only:
            make()
    write_toml()
    for onnx_file in sorted(HERE.glob("*.onnx")):
        if onnx_file.stat().st_size > 2_000_000:
            raise RuntimeError(f"{onnx_file.name} is {onnx_file.stat().st_size} bytes; keep corpus models < 2 MB")


if __name__ == "__main__":
    main(sys.argv[1:])

"""Make models with onnxruntime's contrib ops the way users get them: onnxruntime's own tools run on small
PyTorch models with random weights.

    python3 -m venv venv-microsoft
    venv-microsoft/bin/pip install -r tests/models/microsoft/requirements.txt
    venv-microsoft/bin/python tests/models/microsoft/make_models.py

* ``onnxruntime.transformers.optimizer.optimize_model`` on a one-layer BERT and GPT-2 (transformers' own
  classes, eager attention, exported by ``torch.onnx.export`` at opset 14): EmbedLayerNormalization, Attention
  or MultiHeadAttention, SkipLayerNormalization, BiasGelu / FastGelu, and onnxruntime's default-domain
  LayerNormalization (ONNX has none before opset 17);
* ``onnxruntime.quantization.quantize_dynamic`` on an LSTM followed by a Linear: DynamicQuantizeLSTM (per tensor,
  and per channel for the bidirectional one), DynamicQuantizeLinear and MatMulInteger. ``reduce_range`` (7-bit
  weights), as onnxruntime's docs advise on x86: its uint8 × int8 kernels saturate 16-bit sums of pairs otherwise,
  and its outputs would not be the model's;
* ``MatMulNBitsQuantizer`` (4 bits, blocks of 16, asymmetric) on a two-layer MLP: MatMulNBits.

Each model is written with example inputs (``<name>.inputs.npz``); the tests run onnxruntime on them.
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
import torch

HERE = Path(__file__).resolve().parent
warnings.filterwarnings("ignore")


def randomized(module: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Every parameter random (a fresh model's layer norms are all ones and zeros, which would hide mistakes)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.3)
    return module.eval()


def export(module: torch.nn.Module, args: tuple, path: Path, inputs: list[str], outputs: list[str],
           dynamic: dict[str, dict[int, str]]) -> None:
    torch.onnx.export(module, args, str(path), input_names=inputs, output_names=outputs, dynamic_axes=dynamic,
                      opset_version=14, dynamo=False)


def transformers_models(tmp: Path, rng: np.random.Generator) -> None:
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model
    from transformers import BertConfig, BertModel, GPT2Config, GPT2Model

    class Bert(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            config = BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=64, max_position_embeddings=16, type_vocab_size=2,
                                attn_implementation="eager")
            self.model = randomized(BertModel(config), 1)

        def forward(self, ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor) -> tuple[torch.Tensor, ...]:
            out = self.model(input_ids=ids, attention_mask=mask, token_type_ids=types)
            return out.last_hidden_state, out.pooler_output

    class Gpt2(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            config = GPT2Config(vocab_size=50, n_embd=32, n_layer=1, n_head=2, n_positions=16,
                                attn_implementation="eager")
            self.model = randomized(GPT2Model(config), 2)

        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            return self.model(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state

    ids = rng.integers(0, 50, (2, 8))
    mask = np.ones((2, 8), np.int64)
    mask[1, 6:] = 0
    types = rng.integers(0, 2, (2, 8))
    dims = {"b": 0, "s": 1}
    export(Bert(), tuple(torch.tensor(a) for a in (ids, mask, types)), tmp / "bert.onnx",
           ["input_ids", "attention_mask", "token_type_ids"], ["last_hidden_state", "pooler"],
           {n: {v: k for k, v in dims.items()} for n in ("input_ids", "attention_mask", "token_type_ids")})
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    optimize_model(str(tmp / "bert.onnx"), model_type="bert", num_heads=2, hidden_size=32).save_model_to_file(
        str(HERE / "bert_attention.onnx"))
    save_inputs("bert_attention", feeds)
    options = FusionOptions("bert")
    options.use_multi_head_attention = True
    optimize_model(str(tmp / "bert.onnx"), model_type="bert", num_heads=2, hidden_size=32,
                   optimization_options=options).save_model_to_file(str(HERE / "bert_multi_head_attention.onnx"))
    save_inputs("bert_multi_head_attention", feeds)
    export(Gpt2(), (torch.tensor(ids), torch.tensor(mask)), tmp / "gpt2.onnx", ["input_ids", "attention_mask"],
           ["hidden"], {n: {0: "b", 1: "s"} for n in ("input_ids", "attention_mask")})
    optimize_model(str(tmp / "gpt2.onnx"), model_type="gpt2", num_heads=2, hidden_size=32).save_model_to_file(
        str(HERE / "gpt2_fast_gelu.onnx"))
    save_inputs("gpt2_fast_gelu", {"input_ids": ids, "attention_mask": mask})


def quantized_models(tmp: Path, rng: np.random.Generator) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    class Tagger(torch.nn.Module):
        def __init__(self, bidirectional: bool) -> None:
            super().__init__()
            self.lstm = torch.nn.LSTM(8, 16, batch_first=True, bidirectional=bidirectional)
            self.out = torch.nn.Linear(32 if bidirectional else 16, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.out(self.lstm(x)[0])

    x = rng.standard_normal((2, 5, 8)).astype(np.float32)
    for name, bidirectional, per_channel in (("lstm_quantized", False, False),
                                             ("bilstm_quantized_per_channel", True, True)):
        export(randomized(Tagger(bidirectional), 3), (torch.tensor(x),), tmp / f"{name}.onnx", ["x"], ["y"],
               {"x": {0: "b", 1: "t"}})
        quantize_dynamic(str(tmp / f"{name}.onnx"), str(HERE / f"{name}.onnx"), weight_type=QuantType.QInt8,
                         per_channel=per_channel, reduce_range=True)
        save_inputs(name, {"x": x})

    class Mlp(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = torch.nn.Linear(64, 32), torch.nn.Linear(32, 48, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.b(torch.relu(self.a(x)))

    a = rng.standard_normal((2, 3, 64)).astype(np.float32)
    export(randomized(Mlp(), 4), (torch.tensor(a),), tmp / "mlp.onnx", ["x"], ["y"], {"x": {0: "b", 1: "t"}})
    quantizer = MatMulNBitsQuantizer(onnx.load(tmp / "mlp.onnx"), block_size=16, is_symmetric=False)
    quantizer.process()
    quantizer.model.save_model_to_file(str(HERE / "mlp_matmul_nbits.onnx"))
    save_inputs("mlp_matmul_nbits", {"x": a})


def save_inputs(name: str, feeds: dict[str, np.ndarray]) -> None:
    np.savez(HERE / f"{name}.inputs.npz", **feeds)


def main() -> None:
    rng = np.random.default_rng(36)
    with tempfile.TemporaryDirectory() as tmp:
        transformers_models(Path(tmp), rng)
        quantized_models(Path(tmp), rng)


if __name__ == "__main__":
    main()

"""Export the PyTorch loop samples: loops as PyTorch users write them.

    pip install torch==2.13.0   # only to regenerate; loopc does not depend on torch
    python samples/make_torch_samples.py

Each module is scripted (``torch.jit.script``) so its Python loop survives as an ONNX Loop, and
exported with the TorchScript exporter. Example inputs are saved beside each model as
``<name>_inputs.npz`` (keyed by input name).
"""

from __future__ import annotations

import pathlib

import numpy as np
import torch
from torch import Tensor, nn

HERE = pathlib.Path(__file__).resolve().parent
OPSET = 17


class GreedyGRUDecoder(nn.Module):
    """Greedy decoding with a hand-written GRU cell; stops at the end token or after max_len steps."""

    def __init__(self, vocab: int = 12, hidden: int = 16, end_token: int = 0) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.w_ih = nn.Linear(hidden, 3 * hidden)
        self.w_hh = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, vocab)
        self.end_token = end_token

    def forward(self, h: Tensor, start: Tensor, max_len: Tensor) -> Tensor:
        token = start
        tokens = torch.zeros(0, dtype=torch.long)
        step = 0
        while step < int(max_len) and int(token) != self.end_token:
            x = self.embed(token)
            gi = self.w_ih(x)
            gh = self.w_hh(h)
            r = torch.sigmoid(gi[:16] + gh[:16])
            z = torch.sigmoid(gi[16:32] + gh[16:32])
            n = torch.tanh(gi[32:] + r * gh[32:])
            h = (1 - z) * n + z * h
            token = torch.argmax(self.out(h))
            tokens = torch.cat([tokens, token.unsqueeze(0)])
            step += 1
        return tokens


class IndexLoop(nn.Module):
    """y = sum_i x[i] * w, reading row i by indexing."""

    def forward(self, x: Tensor, w: Tensor) -> Tensor:
        acc = torch.zeros_like(w)
        for i in range(x.shape[0]):
            acc = acc + x[i] * w
        return acc


class GrowingCat(nn.Module):
    """A carried tensor that grows by torch.cat each trip."""

    def forward(self, x: Tensor) -> Tensor:
        out = x[:1] * 0
        for i in range(x.shape[0]):
            out = torch.cat([out, torch.tanh(x[i : i + 1] + out[-1:])], dim=0)
        return out


class ListStack(nn.Module):
    """Append to a Python list inside the loop, torch.stack afterwards (SequenceInsert in ONNX)."""

    def forward(self, x: Tensor) -> Tensor:
        rows: list[Tensor] = []
        h = torch.zeros_like(x[0])
        for i in range(x.shape[0]):
            h = torch.relu(h + x[i])
            rows.append(h)
        return torch.stack(rows)


class NestedLoops(nn.Module):
    """An outer loop over rows, an inner loop over columns, accumulating products."""

    def forward(self, x: Tensor) -> Tensor:
        total = torch.zeros(1)
        for i in range(x.shape[0]):
            row_total = torch.zeros(1)
            for j in range(x.shape[1]):
                row_total = row_total + x[i, j] * (j + 1)
            total = total + row_total * (i + 1)
        return total


class Cumulative(nn.Module):
    """A running (cumulative) sum written as a loop."""

    def forward(self, x: Tensor) -> Tensor:
        out = torch.zeros_like(x)
        running = torch.zeros_like(x[0])
        for i in range(x.shape[0]):
            running = running + x[i]
            out[i] = running
        return out


def export(name: str, module: nn.Module, inputs: dict[str, Tensor]) -> None:
    torch.manual_seed(0)
    scripted = torch.jit.script(module.eval())
    path = HERE / f"{name}.onnx"
    torch.onnx.export(
        scripted, tuple(inputs.values()), str(path), input_names=list(inputs), opset_version=OPSET, dynamo=False
    )
    np.savez(HERE / f"{name}_inputs.npz", **{k: v.numpy() for k, v in inputs.items()})
    print(f"wrote {path.name}")


def main() -> None:
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((5, 4)).astype(np.float32))
    export("greedy_gru_decoder", GreedyGRUDecoder(), {
        "h": torch.from_numpy(rng.standard_normal(16).astype(np.float32)),
        "start": torch.tensor(3), "max_len": torch.tensor(8)})
    export("index_loop", IndexLoop(), {"x": x, "w": torch.from_numpy(rng.standard_normal(4).astype(np.float32))})
    export("growing_cat", GrowingCat(), {"x": x})
    export("list_stack", ListStack(), {"x": x})
    export("nested_loops", NestedLoops(), {"x": x})
    export("cumulative", Cumulative(), {"x": x})


if __name__ == "__main__":
    main()

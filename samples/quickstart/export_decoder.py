"""Quickstart: export a small PyTorch greedy decoder, loop included, to ONNX for loopc.

    pip install torch onnx numpy    # in any environment; loopc itself does not need torch
    python export_decoder.py        # writes decoder.onnx and decoder_inputs.npz (or --out DIR)
    loopc build decoder.onnx -o decoder.plan -i decoder_inputs.npz
    loopc run decoder.onnx -i decoder_inputs.npz

The decoder embeds the last token, steps a GRU cell, attends over the encoder's ``memory``, and picks the
next token by argmax, until it emits END or has made ``max_len`` tokens. ``torch.jit.script`` keeps the
Python ``while`` loop a loop (ONNX ``Loop``): ``torch.jit.trace`` would unroll it for the example's tokens, and
the default exporter (``dynamo=True``) refuses a loop whose condition depends on the data.
"""

import argparse
import pathlib

import numpy as np
import torch
from torch import Tensor, nn

VOCAB, HIDDEN, START, END = 20, 32, 1, 0


class GreedyDecoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        # A GRU cell written out: nn.GRUCell cannot be exported from a scripted loop.
        self.w_ih = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.w_hh = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.out = nn.Linear(2 * HIDDEN, VOCAB)
        self.start, self.end = START, END  # attributes: a scripted forward cannot read module globals

    def forward(self, memory: Tensor, max_len: Tensor) -> Tensor:
        h = memory.mean(0)  # memory: [src_len, HIDDEN], the encoder's output
        token = torch.tensor(self.start)
        tokens: list[Tensor] = []
        step = 0
        while step < int(max_len) and int(token) != self.end:
            i_r, i_z, i_n = self.w_ih(self.embed(token)).chunk(3)
            h_r, h_z, h_n = self.w_hh(h).chunk(3)
            r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
            h = (1 - z) * torch.tanh(i_n + r * h_n) + z * h
            attention = torch.softmax(memory @ h, dim=0)  # dot-product attention over the source
            context = attention @ memory
            token = torch.argmax(self.out(torch.cat([h, context])))
            tokens.append(token)
            step += 1
        return torch.stack(tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("."), help="output folder")
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)

    torch.manual_seed(29)
    model = GreedyDecoder().eval()
    inputs = {"memory": torch.randn(7, HIDDEN), "max_len": torch.tensor(16)}

    torch.onnx.export(
        torch.jit.script(model),  # script, do not trace: the loop stays a loop
        tuple(inputs.values()),
        str(out / "decoder.onnx"),
        input_names=list(inputs),
        output_names=["tokens"],
        dynamic_axes={"memory": {0: "src_len"}, "tokens": {0: "steps"}},
        opset_version=17,
        dynamo=False,  # the TorchScript exporter writes scripted loops as ONNX Loop (it warns that it is legacy)
    )
    np.savez(out / "decoder_inputs.npz", **{name: t.numpy() for name, t in inputs.items()})
    with torch.no_grad():
        tokens = model(*inputs.values()).tolist()
    print(f"wrote {out / 'decoder.onnx'} and {out / 'decoder_inputs.npz'}; PyTorch's tokens: {tokens}")


if __name__ == "__main__":
    main()

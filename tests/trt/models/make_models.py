"""Make the models on which TensorRT-RTX 1.7's builder crashed the process (SIGSEGV), for the tests in
``tests/trt``: ``python tests/trt/models/make_models.py`` (needs torch, as in the ``test`` extra).

- ``reversed_rnn.onnx``: a scripted Elman RNN that runs over time backwards (``t = T - 1 - i``) and writes
  ``out[t] = h``, exported by the TorchScript exporter with time and batch dynamic. Under loopc's default
  profile (batch 1 to 64) the builder crashed: the exporter's ``Expand`` of ``h`` to the row shape of ``out``
  was a select on ``dims == 1`` inside the loop. loopc now emits that broadcast without a comparison.
- ``shape_where_in_loop.onnx``: a loop whose body computes a ``Reshape`` target with ``Where(Equal(Shape(row),
  1), ...)``. The builder crashes on it under batch 1 to 64 (and on the network of TensorRT's own ONNX
  parser): the model itself asks for a shape chosen by a comparison of dims inside a loop. It stays a crash:
  the test shows that the crash is one line and exit 1.
- ``heads_of_grown_cache.onnx``: a loop that grows a cache ``[B, S, 24]`` by one row each trip (``Concat`` on
  axis 1) and splits it into two heads, ``Reshape`` to ``[Shape(k)[0], Shape(k)[1], 2, 12]`` (openai-whisper's
  ``k.view(*k.shape[:2], n_head, -1)``), for attention of the new row over it. loopc pads the cache to its final
  length; the builder crashed while the padded cache's target read the buffer's dims with a ``Shape`` in the
  loop. loopc now writes those entries as 0 (copy the input's dim), a constant target.
"""

from __future__ import annotations

import pathlib

import onnx
import onnx.parser
import torch
from torch import nn

HERE = pathlib.Path(__file__).parent


class ReversedRNN(nn.Module):
    def __init__(self, d: int = 8, h: int = 16) -> None:
        super().__init__()
        self.wi = nn.Linear(d, h)
        self.wh = nn.Linear(h, h, bias=False)
        self.h = h

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        steps = x.size(0)
        h = torch.zeros(x.size(1), self.h)
        out = torch.zeros(steps, x.size(1), self.h)
        for i in range(steps):
            t = steps - 1 - i
            h = torch.tanh(self.wi(x[t]) + self.wh(h))
            out[t] = h
        return out, h


SHAPE_WHERE_IN_LOOP = """<ir_version: 8, opset_import: ["" : 17]>
shape_where_in_loop (float[time,batch,16] x) => (float[time,batch,16] y) {
    s = Shape (x)
    zero = Constant <value = int64 {0}> ()
    steps = Gather <axis = 0> (s, zero)
    go = Constant <value = bool {1}> ()
    y = Loop (steps, go) <body = body (int64 i, bool c) => (bool c_out, float[batch,16] e) {
        row = Gather <axis = 0> (x, i)
        dims = Shape (row)
        ones = Constant <value = int64[2] {1,1}> ()
        unit = Equal (dims, ones)
        at_least_one = Max (dims, ones)
        target = Where (unit, dims, at_least_one)
        e = Reshape (row, target)
        c_out = Identity (c)
    }>
}"""


HEADS_OF_GROWN_CACHE = """<ir_version: 8, opset_import: ["" : 17]>
heads_of_grown_cache (float[batch,len,24] k0, float[batch,1,24] h0, int64 trips) => (float[batch,1,24] h) {
    go = Constant <value = bool {1}> ()
    h, k = Loop (trips, go, h0, k0) <body = body (int64 i, bool c, float[batch,1,24] h_in, float[batch,?,24] k_in)
                                                 => (bool c_out, float[batch,1,24] h_out, float[batch,?,24] k_out) {
        c_out = Identity (c)
        k_out = Concat <axis = 1> (k_in, h_in)
        dims = Shape (k_out)
        zero = Constant <value = int64 {0}> ()
        one = Constant <value = int64 {1}> ()
        b = Gather <axis = 0> (dims, zero)
        s = Gather <axis = 0> (dims, one)
        axes = Constant <value = int64[1] {0}> ()
        b1 = Unsqueeze (b, axes)
        s1 = Unsqueeze (s, axes)
        heads = Constant <value = int64[2] {2, 12}> ()
        target = Concat <axis = 0> (b1, s1, heads)
        kh = Reshape (k_out, target)
        kt = Transpose <perm = [0, 2, 3, 1]> (kh)
        qdims = Constant <value = int64[4] {0, 1, 2, 12}> ()
        qh = Reshape (h_in, qdims)
        q = Transpose <perm = [0, 2, 1, 3]> (qh)
        scores = MatMul (q, kt)
        weights = Softmax <axis = -1> (scores)
        v = Transpose <perm = [0, 2, 1, 3]> (kh)
        o = MatMul (weights, v)
        ot = Transpose <perm = [0, 2, 1, 3]> (o)
        odims = Constant <value = int64[3] {0, 1, 24}> ()
        flat = Reshape (ot, odims)
        mixed = Add (flat, h_in)
        h_out = Tanh (mixed)
    }>
}"""


def save_text_model(text: str, name: str) -> None:
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, HERE / name)


def main() -> None:
    torch.manual_seed(0)
    torch.onnx.export(torch.jit.script(ReversedRNN()), (torch.randn(6, 3, 8),), HERE / "reversed_rnn.onnx",
                      dynamo=False, input_names=["x"], output_names=["y", "h"],
                      dynamic_axes={"x": {0: "time", 1: "batch"}}, opset_version=17)
    save_text_model(SHAPE_WHERE_IN_LOOP, "shape_where_in_loop.onnx")
    save_text_model(HEADS_OF_GROWN_CACHE, "heads_of_grown_cache.onnx")


if __name__ == "__main__":
    main()

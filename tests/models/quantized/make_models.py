"""Make the quantized corpus: small loop models exported from PyTorch, then quantized by the tools users run.

Run outside the test suite, in a venv of its own (loopc never depends on these tools):

    python3 -m venv venv-quant
    venv-quant/bin/pip install -r tests/models/quantized/requirements.txt   # torch: its CPU build
    venv-quant/bin/pip install --no-deps nvidia-modelopt==0.47.0           # why: requirements.txt
    venv-quant/bin/python tests/models/quantized/make_models.py

Three float models with an ONNX Loop (``torch.jit.script`` + the TorchScript exporter, opset 20), random weights
from fixed seeds:

* ``gru``: a two-layer GRU stack written out with matmuls, the first layer's input projection over all time
  before the loop, per-step outputs written into a preallocated tensor (``ys[t] = ...``);
* ``greedy``: a greedy decoder (embedding, a tanh recurrent step, dot attention over the encoder memory, an
  ``nn.Linear`` output and argmax), its tokens carried and collected with ``list.append``, ``max_len`` steps;
* ``sampler``: a diffusion-style sampler, a small MLP denoiser applied ``n_steps`` times to a carried latent.

``nn.Linear`` on a 2-D input exports as Gemm (onnxruntime quantizes its bias to int32), a matmul as MatMul
(the only op MatMulNBits quantizes).

Quantizers, as their users call them:

* onnxruntime ``quantize_static``: QDQ, int8, per-channel weights, symmetric activations and weights;
* onnxruntime ``MatMulNBitsQuantizer``: int4 weight-only, QDQ form, blocks of 32, symmetric;
* NVIDIA ModelOpt ``modelopt.onnx.quantization.quantize``: ``int8``, ``fp8`` and ``int4`` on the CPU
  (``high_precision_dtype="fp32"``: its default ``fp16`` crashes on a model with a Loop).

onnxruntime's ``quantize_static`` and ModelOpt leave Loop bodies in float; MatMulNBits quantizes inside them.
For the ``*_body`` cases this script runs the same tool on the Loop body itself, as a standalone model (its
inputs are the body's inputs and the outer-scope activations it reads; the outer weights it reads become its
initializers), calibrated on the values the body sees at every trip of the calibration runs, and puts the
tool's output back as the body: the Q/DQ in the body are the tool's own.

For every case the script writes ``<case>.onnx``, ``<case>.inputs.npz`` and ``<case>.expected.npz`` (onnxruntime
on the CPU with graph optimizations off), then ``cases.toml``. ``atol`` is one quantization step, rounded up to
three digits: the largest activation scale in the model (int8); the largest E4M3 step of any activation at the
largest magnitude it takes (fp8, whose steps grow with the value); or 1e-4 for weight-only int4 (the weights
dequantize exactly, so only float reassociation remains, far below what one wrong int4 step moves an output).
Argmax tokens must match exactly: a decoder case's inputs are the first draw from its seed whose top two logits
are more than 20 tolerances apart at every step, so that a one-step difference cannot flip a token.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import importlib.metadata
import logging
import pathlib
import shutil
import tempfile
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
from torch import Tensor, nn
from torch.nn import functional as F

HERE = pathlib.Path(__file__).resolve().parent
#: The float models the quantized ones were made from.
FLOAT = HERE / "float"
OPSET = 20  # the TorchScript exporter's newest; MatMulNBits stamps 21, and opset 18 changed ReduceMean
VERSIONS = {name: importlib.metadata.version(name) for name in ["torch", "onnxruntime", "nvidia-modelopt"]}
TORCH = VERSIONS["torch"].split("+")[0]
EXPORTER = f"torch.jit.script + TorchScript exporter (torch {TORCH}, dynamo=False), opset {OPSET}"
ORT = f"onnxruntime {VERSIONS['onnxruntime']}"
MODELOPT = f"NVIDIA ModelOpt {VERSIONS['nvidia-modelopt']}"
ORACLE = f"expected: {ORT} CPU, graph optimizations off"
MARGIN = 20  # the top two logits of every decoding step are further apart than this many tolerances


# ---------------------------------------------------------------------------------------------------------------
# Float source models
# ---------------------------------------------------------------------------------------------------------------


def weight(*shape: int) -> nn.Parameter:
    return nn.Parameter(torch.randn(*shape) / shape[0] ** 0.5)


def bias(n: int) -> nn.Parameter:
    return nn.Parameter(torch.randn(n) * 0.1)


class GRUStack(nn.Module):
    """Two GRU layers written out with matmuls (input 32, hidden 64) and a linear head per step (32).

    The first layer's input projection runs over all time before the loop, as users hoist it.
    """

    def __init__(self, inp: int = 32, hidden: int = 64, out: int = 32) -> None:
        super().__init__()
        self.w_ih1, self.b_ih1 = weight(inp, 3 * hidden), bias(3 * hidden)
        self.w_hh1, self.b_hh1 = weight(hidden, 3 * hidden), bias(3 * hidden)
        self.w_ih2, self.b_ih2 = weight(hidden, 3 * hidden), bias(3 * hidden)
        self.w_hh2, self.b_hh2 = weight(hidden, 3 * hidden), bias(3 * hidden)
        self.w_out, self.b_out = weight(hidden, out), bias(out)

    def gru(self, gi: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor) -> Tensor:
        i_r, i_z, i_n = gi.chunk(3, -1)
        h_r, h_z, h_n = (torch.matmul(h, w_hh) + b_hh).chunk(3, -1)
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        return (1 - z) * n + z * h

    def forward(self, x: Tensor, h1: Tensor, h2: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        gi1 = torch.matmul(x, self.w_ih1) + self.b_ih1
        ys = torch.zeros(x.size(0), x.size(1), self.w_out.size(1))
        for t in range(x.size(0)):
            h1 = self.gru(gi1[t], h1, self.w_hh1, self.b_hh1)
            h2 = self.gru(torch.matmul(h1, self.w_ih2) + self.b_ih2, h2, self.w_hh2, self.b_hh2)
            ys[t] = torch.matmul(h2, self.w_out) + self.b_out
        return ys, h1, h2


class GreedyDecoder(nn.Module):
    """Greedy decoding, batched: embedding, a tanh recurrent step, dot attention over the memory, argmax.

    Vocabulary 40, hidden 64; the start state is an ``nn.Linear`` of the mean memory (before the loop) and the output
    an ``nn.Linear`` (in the loop): both export as Gemm, the recurrent step as MatMul. Returns every step's token and
    logits (``list.append`` + ``torch.stack``).
    """

    def __init__(self, vocab: int = 40, hidden: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.init = nn.Linear(hidden, hidden)
        self.w_e, self.w_h, self.b = weight(hidden, hidden), weight(hidden, hidden), bias(hidden)
        self.out = nn.Linear(2 * hidden, vocab)
        with torch.no_grad():
            self.out.weight.mul_(6.0)  # peaked logits, so that no step's top two are a near tie

    def forward(self, memory: Tensor, start: Tensor, max_len: Tensor) -> tuple[Tensor, Tensor]:
        h = torch.tanh(self.init(memory.mean(1)))
        token = start
        tokens: list[Tensor] = []
        logits_per_step: list[Tensor] = []
        for _ in range(int(max_len)):
            h = torch.tanh(torch.matmul(self.embed(token), self.w_e) + torch.matmul(h, self.w_h) + self.b)
            attn = torch.softmax(torch.matmul(memory, h.unsqueeze(2)).squeeze(2), dim=1)
            ctx = torch.matmul(attn.unsqueeze(1), memory).squeeze(1)
            logits = self.out(torch.cat([h, ctx], 1))
            token = torch.argmax(logits, dim=1)
            tokens.append(token)
            logits_per_step.append(logits)
        return torch.stack(tokens, 1), torch.stack(logits_per_step, 1)


class Sampler(nn.Module):
    """A diffusion-style sampler: an MLP denoiser (latent 32, hidden 64, SiLU; two matmuls and an ``nn.Linear``
    head, a Gemm) with a learned timestep embedding and a condition projected once before the loop (``nn.Linear``),
    ``x = a[i] * x - b[i] * eps(x, i)`` (a DDIM-like update that shrinks the latent) for ``n_steps`` (at most 8)."""

    def __init__(self, latent: int = 32, hidden: int = 64, cond: int = 16, steps: int = 8) -> None:
        super().__init__()
        self.cond = nn.Linear(cond, hidden)
        self.t_emb = nn.Parameter(torch.randn(steps, hidden) * 0.5)
        self.w1, self.b1 = weight(latent, hidden), bias(hidden)
        self.w2, self.b2 = weight(hidden, hidden), bias(hidden)
        self.eps = nn.Linear(hidden, latent)
        self.register_buffer("keep", torch.linspace(0.95, 0.7, steps))
        self.register_buffer("step_size", torch.linspace(0.1, 0.3, steps))

    def forward(self, x: Tensor, cond: Tensor, n_steps: Tensor) -> Tensor:
        c = self.cond(cond)
        for i in range(int(n_steps)):
            hidden = F.silu(torch.matmul(x, self.w1) + self.b1 + c + self.t_emb[i])
            hidden = F.silu(torch.matmul(hidden, self.w2) + self.b2)
            x = self.keep[i] * x - self.step_size[i] * self.eps(hidden)
        return x


@dataclasses.dataclass
class Source:
    """A float model exported to ONNX, with how to draw its inputs."""

    name: str
    about: str
    path: pathlib.Path
    draw: object  # (rng) -> dict of inputs
    decoder: bool = False


def rnd(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def export(module: nn.Module, example: dict[str, np.ndarray], outputs: list[str], path: pathlib.Path,
           dynamic: dict[str, dict[int, str]]) -> None:
    args = tuple(torch.from_numpy(np.asarray(v)) for v in example.values())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(torch.jit.script(module.eval()), args, str(path), input_names=list(example),
                          output_names=outputs, opset_version=OPSET, dynamo=False, dynamic_axes=dynamic)


def sources(tmp: pathlib.Path) -> dict[str, Source]:
    torch.manual_seed(0)
    gru = Source("gru", "two-layer GRU stack written with matmuls (input 32, hidden 64, head 32), input projection"
                 " before the loop, `for t in range(x.size(0))` with `ys[t] = head(h2)` into a preallocated tensor",
                 tmp / "gru.onnx",
                 lambda rng: {"x": rnd(rng, 6, 2, 32), "h1_0": rnd(rng, 2, 64, scale=0.5),
                              "h2_0": rnd(rng, 2, 64, scale=0.5)})
    export(GRUStack(), gru.draw(np.random.default_rng(0)), ["y", "h1", "h2"], gru.path,
           {"x": {0: "time", 1: "batch"}, "h1_0": {0: "batch"}, "h2_0": {0: "batch"}, "y": {0: "time", 1: "batch"}})

    torch.manual_seed(1)
    greedy = Source("greedy", "greedy decoder (nn.Linear start state from the mean memory before the loop; in the"
                    " loop embedding 40 x 64, tanh recurrent step by matmuls, dot attention over the memory, nn.Linear"
                    " output, argmax; tokens carried, list.append + torch.stack, `for _ in range(int(max_len))`)",
                    tmp / "greedy.onnx",
                    lambda rng: {"memory": rnd(rng, 2, 7, 64), "start": rng.integers(0, 40, 2),
                                 "max_len": np.array(6)}, decoder=True)
    export(GreedyDecoder(), greedy.draw(np.random.default_rng(0)), ["tokens", "logits"], greedy.path,
           {"memory": {0: "batch", 1: "src_len"}, "start": {0: "batch"}})

    torch.manual_seed(2)
    sampler = Source("sampler", "diffusion-style sampler (nn.Linear condition projection before the loop; in the"
                     " loop an MLP denoiser, latent 32, hidden 64, SiLU, two matmuls and an nn.Linear head, timestep"
                     " embedding table, x = a[i] * x - b[i] * eps; `for i in range(int(n_steps))`)",
                     tmp / "sampler.onnx",
                     lambda rng: {"x": rnd(rng, 2, 32), "cond": rnd(rng, 2, 16), "n_steps": np.array(8)})
    export(Sampler(), sampler.draw(np.random.default_rng(0)), ["latent"], sampler.path,
           {"x": {0: "batch"}, "cond": {0: "batch"}})
    return {s.name: s for s in [gru, greedy, sampler]}


# ---------------------------------------------------------------------------------------------------------------
# Quantizers, called as their users call them
# ---------------------------------------------------------------------------------------------------------------


class Reader(CalibrationDataReader):
    """A calibration reader over a list of feeds (ModelOpt also calls rewind and get_first)."""

    def __init__(self, feeds: list[dict[str, np.ndarray]]) -> None:
        self.feeds = feeds
        self.rewind()

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self.it, None)

    def rewind(self) -> None:
        self.it = iter(self.feeds)

    def get_first(self) -> dict[str, np.ndarray]:
        return self.feeds[0]


def ort_int8(src: pathlib.Path, dst: pathlib.Path, feeds: list[dict[str, np.ndarray]]) -> None:
    quantize_static(str(src), str(dst), Reader(feeds), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    extra_options={"ActivationSymmetric": True, "WeightSymmetric": True})


def ort_int4(src: pathlib.Path, dst: pathlib.Path, feeds: list[dict[str, np.ndarray]]) -> None:
    quantizer = MatMulNBitsQuantizer(onnx.load(src), bits=4, block_size=32, is_symmetric=True,
                                     quant_format=QuantFormat.QDQ)
    quantizer.process()
    quantizer.model.save_model_to_file(str(dst))


def modelopt(mode: str):
    def run(src: pathlib.Path, dst: pathlib.Path, feeds: list[dict[str, np.ndarray]]) -> None:
        from modelopt.onnx.quantization import quantize

        quantize(str(src), quantize_mode=mode, calibration_data_reader=Reader(feeds), calibration_eps=["cpu"],
                 output_path=str(dst), high_precision_dtype="fp32", log_level="ERROR")
    return run


# ---------------------------------------------------------------------------------------------------------------
# The tool on a Loop body
# ---------------------------------------------------------------------------------------------------------------


def the_loop(graph: onnx.GraphProto) -> onnx.NodeProto:
    (loop,) = [node for node in graph.node if node.op_type == "Loop"]
    return loop


def outer_names(body: onnx.GraphProto) -> list[str]:
    """The names a body reads from the enclosing graph, in the order it first reads them."""
    defined = {i.name for i in body.input} | {i.name for i in body.initializer}
    defined |= {out for node in body.node for out in node.output}
    seen: dict[str, None] = {}
    for node in body.node:
        for name in node.input:
            if name and name not in defined:
                seen[name] = None
    return list(seen)


def observe(path: pathlib.Path, feeds: list[dict[str, np.ndarray]], main: list[str],
            body: dict[str, int]) -> list[dict[str, np.ndarray]]:
    """Values of each run that are not outputs: ``main`` values of the main graph (as extra graph outputs) and
    ``body`` values of the Loop body (name: element type), one per trip, stacked (as extra scan outputs)."""
    model = onnx.load(path)
    graph = model.graph
    loop = the_loop(graph)
    for name, elem in body.items():
        loop.attribute[0].g.node.append(helper.make_node("Identity", [name], [f"{name}__trip"]))
        loop.attribute[0].g.output.append(helper.make_tensor_value_info(f"{name}__trip", elem, None))
        loop.output.append(f"{name}__trips")
        graph.output.append(helper.make_tensor_value_info(f"{name}__trips", elem, None))
    graph.output.extend(helper.make_empty_tensor_value_info(name) for name in main)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = main + [f"{name}__trips" for name in body]
    return [dict(zip(main + list(body), session.run(names, feed))) for feed in feeds]


def trip_feeds(path: pathlib.Path, feeds: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
    """The values the Loop body sees at each trip of each run: its inputs and the outer activations it reads."""
    graph = onnx.load(path).graph
    body = the_loop(graph).attribute[0].g
    inits = {i.name for i in graph.initializer}
    outer = [name for name in outer_names(body) if name not in inits]
    inputs = {i.name: i.type.tensor_type.elem_type for i in body.input}
    trips = []
    for values in observe(path, feeds, outer, inputs):
        for k in range(len(values[next(iter(inputs))])):
            trip = {name: np.asarray(values[name][k]) for name in inputs}
            trip.update({name: values[name] for name in outer})
            trips.append(trip)
    return trips


def body_as_model(model: onnx.ModelProto, trips: list[dict[str, np.ndarray]]) -> onnx.ModelProto:
    """The Loop body as a model of its own: outer weights become its initializers, outer activations its inputs."""
    graph = model.graph
    body = copy.deepcopy(the_loop(graph).attribute[0].g)
    inits = {i.name: i for i in graph.initializer}
    for name in outer_names(body):
        if name in inits:
            body.initializer.append(inits[name])
        else:
            value = trips[0][name]
            body.input.append(helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(value.dtype), [f"{name}_dim_{k}" for k in range(value.ndim)]))
    del body.value_info[:]
    return helper.make_model(body, opset_imports=list(model.opset_import), ir_version=model.ir_version)


def quantize_body(src: pathlib.Path, dst: pathlib.Path, tool, feeds: list[dict[str, np.ndarray]],
                  tmp: pathlib.Path) -> None:
    """Run ``tool`` on the Loop body of ``src`` as a standalone model and put its output back as the body."""
    model = onnx.load(src)
    trips = trip_feeds(src, feeds)
    body_in, body_out = tmp / f"{dst.stem}.body.onnx", tmp / f"{dst.stem}.body.q.onnx"
    onnx.save(body_as_model(model, trips), body_in)
    tool(body_in, body_out, trips)
    quantized = onnx.load(body_out).graph
    loop = the_loop(model.graph)
    original = loop.attribute[0].g
    keep = {i.name for i in original.input}
    new_body = helper.make_graph(list(quantized.node), original.name,
                                 [i for i in quantized.input if i.name in keep], list(quantized.output),
                                 list(quantized.initializer))
    if [i.name for i in new_body.input] != [i.name for i in original.input]:
        raise RuntimeError(f"{dst.name}: the tool changed the body's inputs")
    if [o.name for o in new_body.output] != [o.name for o in original.output]:
        raise RuntimeError(f"{dst.name}: the tool changed the body's outputs")
    rename_clashes(new_body, model.graph)
    loop.attribute[0].g.CopyFrom(new_body)
    opsets = {o.domain: o.version for o in model.opset_import}
    for o in onnx.load(body_out).opset_import:
        opsets[o.domain] = max(opsets.get(o.domain, 0), o.version)
    del model.opset_import[:]
    model.opset_import.extend(helper.make_opsetid(d, v) for d, v in opsets.items())
    used = {name for node in model.graph.node for name in node.input} | set(outer_names(new_body))
    used |= {o.name for o in model.graph.output}
    kept = [i for i in model.graph.initializer if i.name in used]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    onnx.save(model, dst)


def same_values(a: onnx.TensorProto, b: onnx.TensorProto) -> bool:
    return a.data_type == b.data_type and list(a.dims) == list(b.dims) and np.array_equal(
        numpy_helper.to_array(a), numpy_helper.to_array(b))


def rename_clashes(body: onnx.GraphProto, main: onnx.GraphProto) -> None:
    """The tool names its Q/DQ outputs after the tensor they quantize, so a body quantized on its own can reuse a
    name the tool already gave in the main graph (an outer value both quantize); ONNX forbids a body to redefine
    an outer value's name, so such body names get a ``/body`` suffix. (A body initializer may share a main-graph
    initializer's name and values, as ModelOpt writes them; the main graph's copy is dropped when nothing outside
    reads it.)"""
    values = {i.name for i in main.input} | {out for node in main.node for out in node.output}
    inits = {i.name: i for i in main.initializer}
    clash = {out for node in body.node for out in node.output if out in values or out in inits}
    clash |= {i.name for i in body.initializer if i.name in values}
    clash |= {i.name for i in body.initializer if i.name in inits and not same_values(i, inits[i.name])}
    if not clash:
        return
    rename = {name: f"{name}/body" for name in clash}
    for node in body.node:
        node.input[:] = [rename.get(x, x) for x in node.input]
        node.output[:] = [rename.get(x, x) for x in node.output]
    for init in body.initializer:
        init.name = rename.get(init.name, init.name)


# ---------------------------------------------------------------------------------------------------------------
# What is in a quantized model
# ---------------------------------------------------------------------------------------------------------------


def graphs(graph: onnx.GraphProto, depth: int = 0):
    yield graph, depth
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from graphs(attr.g, depth + 1)


def qdq_type(node: onnx.NodeProto, consts: dict[str, onnx.TensorProto], producers) -> str:
    """The quantized type of a Q or DQ: its zero point's type, else its quantized input's, else uint8 (the
    default), or the Q's output_dtype."""
    if len(node.input) > 2 and node.input[2] in consts:
        return TensorProto.DataType.Name(consts[node.input[2]].data_type).lower()
    if node.op_type == "DequantizeLinear":
        if node.input[0] in consts:
            return TensorProto.DataType.Name(consts[node.input[0]].data_type).lower()
        q = producers.get(node.input[0])
        if q is not None and q.op_type == "QuantizeLinear":
            return qdq_type(q, consts, producers)
    for attr in node.attribute:
        if attr.name == "output_dtype" and attr.i:
            return TensorProto.DataType.Name(attr.i).lower()
    return "uint8"


def inventory(path: pathlib.Path) -> dict:
    """Counts of Q and DQ by type and place (main graph / Loop body), weight DQs, and the quantization scales."""
    model = onnx.load(path)
    counts: collections.Counter = collections.Counter()
    weight_dqs = collections.Counter()
    activations: list[tuple[str, str, float, str]] = []  # (where, quantized value, largest scale, type)
    weight_scales: list[float] = []
    consts: dict[str, onnx.TensorProto] = {}
    for graph, _ in graphs(model.graph):
        consts.update({i.name: i for i in graph.initializer})
        for node in graph.node:
            if node.op_type == "Constant":
                consts[node.output[0]] = node.attribute[0].t
    for graph, depth in graphs(model.graph):
        where = "body" if depth else "main"
        producers = {out: node for node in graph.node for out in node.output}
        for node in graph.node:
            if node.op_type not in ("QuantizeLinear", "DequantizeLinear"):
                continue
            kind = qdq_type(node, consts, producers)
            counts[f"{'Q' if node.op_type == 'QuantizeLinear' else 'DQ'} {kind} {where}"] += 1
            scale = numpy_helper.to_array(consts[node.input[1]]).astype(np.float64)
            source = node.input[0]
            q = producers.get(source)
            of_weight = source in consts or (q is not None and q.op_type == "QuantizeLinear" and q.input[0] in consts)
            if node.op_type == "DequantizeLinear" and of_weight:
                weight_dqs[where] += 1
                if kind != "int32":
                    weight_scales.append(float(np.abs(scale).min()))
            if node.op_type == "QuantizeLinear" and source not in consts:
                activations.append((where, source, float(scale.max()), kind))
    return {"counts": dict(sorted(counts.items())), "weight_dqs": dict(weight_dqs), "activations": activations,
            "min_weight_scale": min(weight_scales, default=0.0)}


def up3(value: float) -> float:
    """``value`` rounded up to three significant digits, so that a written tolerance is never below the step."""
    unit = 10.0 ** (int(np.floor(np.log10(value))) - 2)
    return float(f"{np.ceil(value / unit) * unit:.3g}")


def e4m3_step(value: float) -> float:
    """The spacing of float8 E4M3FN numbers at ``value`` (3 mantissa bits; subnormal below 2**-6; max 448)."""
    exponent = max(int(np.floor(np.log2(max(value, 2.0**-9)))), -6)
    return 2.0 ** (min(exponent, 8) - 3)


def tolerance(case: "Case", info: dict, path: pathlib.Path, feeds: list[dict[str, np.ndarray]]) -> tuple[float, str]:
    """One quantization step on the way to the outputs (rounded up to three digits), and how it was chosen."""
    if "int4" in case.tool:
        return 1e-4, ("atol 1e-4: weight-only int4, the weights dequantize exactly, so only float reassociation"
                      " differs (~1e-6), while one int4 step of the smallest weight scale"
                      f" ({info['min_weight_scale']:.3g}) moves an output by about that times an activation")
    if not any("float8" in kind for *_, kind in info["activations"]):
        atol = up3(max(scale for _, _, scale, _ in info["activations"]))
        return atol, f"atol {atol:.3g}: the largest activation quantization scale (int8 steps are uniform)"
    main = sorted({name for where, name, *_ in info["activations"] if where == "main"})
    body = {name: TensorProto.FLOAT for where, name, *_ in info["activations"] if where == "body"}
    seen = observe(path, feeds, main, body)
    atol = 0.0
    for _, name, scale, _ in info["activations"]:
        largest = max(float(np.abs(values[name]).max()) for values in seen)
        atol = max(atol, scale * e4m3_step(min(largest / scale, 448.0)))
    atol = up3(atol)
    return atol, (f"atol {atol:.3g}: the largest fp8 E4M3 step of any activation at the largest magnitude it takes"
                  " on the calibration runs and the case's inputs (fp8 steps grow with the value)")


# ---------------------------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Case:
    name: str
    source: str
    tool: str  # ort_int8, ort_int4, modelopt_int8, modelopt_fp8, modelopt_int4
    body: bool  # the tool is also run on the Loop body as a model of its own
    seed: int  # the inputs' seed (calibration uses others)
    whole: bool = True  # the tool is run on the whole model
    note: str = ""


CASES = [
    Case("ort_int8_greedy", "greedy", "ort_int8", False, 100),
    Case("ort_int8_gru_body", "gru", "ort_int8", True, 101),
    Case("ort_int8_sampler_body", "sampler", "ort_int8", True, 102),
    Case("ort_int4_gru", "gru", "ort_int4", False, 103),
    Case("ort_int4_greedy", "greedy", "ort_int4", False, 104),
    Case("ort_int4_sampler", "sampler", "ort_int4", False, 105),
    Case("modelopt_int8_greedy", "greedy", "modelopt_int8", False, 106),
    Case("modelopt_int8_sampler_body", "sampler", "modelopt_int8", True, 107, whole=False,
         note="the main graph stays float: ModelOpt on the whole model fails (KeyError on a body node that reads the"
         " condition projection from the outer scope)"),
    Case("modelopt_fp8_gru", "gru", "modelopt_fp8", False, 108),
    Case("modelopt_fp8_gru_body", "gru", "modelopt_fp8", True, 109),
    Case("modelopt_int4_gru", "gru", "modelopt_int4", False, 110),
]

TOOLS = {
    "ort_int8": (ort_int8, f"{ORT} quantize_static (QuantFormat.QDQ, int8 activations and weights, per_channel,"
                 " ActivationSymmetric and WeightSymmetric, MinMax calibration on 4 runs)"),
    "ort_int4": (ort_int4, f"{ORT} MatMulNBitsQuantizer (bits 4, block_size 32, is_symmetric,"
                 " quant_format=QuantFormat.QDQ)"),
    "modelopt_int8": (modelopt("int8"), f"{MODELOPT} modelopt.onnx.quantization.quantize (quantize_mode int8,"
                      " default entropy calibration on 4 runs, calibration_eps cpu, high_precision_dtype fp32)"),
    "modelopt_fp8": (modelopt("fp8"), f"{MODELOPT} modelopt.onnx.quantization.quantize (quantize_mode fp8,"
                     " default entropy calibration on 4 runs, calibration_eps cpu, high_precision_dtype fp32)"),
    "modelopt_int4": (modelopt("int4"), f"{MODELOPT} modelopt.onnx.quantization.quantize (quantize_mode int4,"
                      " default awq_clip calibration on 4 runs and block_size 128, calibration_eps cpu)"),
}


def oracle(path: pathlib.Path, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feed)))


def check(model: onnx.ModelProto) -> bool:
    """onnx's full check; onnxruntime's quantize_static may write a Loop before the node that makes a value its
    body reads (it sorts without looking into bodies), which onnx rejects and onnxruntime runs: then the model is
    checked with its nodes sorted, and kept as the tool wrote it. Says whether it was out of order."""
    try:
        onnx.checker.check_model(model, full_check=True)
        return False
    except onnx.checker.ValidationError as exc:
        if "topologically sorted" not in str(exc):
            raise
    graph = model.graph
    made = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    pending, order = list(graph.node), []
    while pending:
        ready = [n for n in pending if all(not x or x in made for x in needs(n))]
        if not ready:
            raise RuntimeError("the main graph has a cycle")
        for node in ready:
            order.append(node)
            made.update(node.output)
        pending = [n for n in pending if n not in ready]
    sorted_model = copy.deepcopy(model)
    del sorted_model.graph.node[:]
    sorted_model.graph.node.extend(order)
    onnx.checker.check_model(sorted_model, full_check=True)
    return True


def needs(node: onnx.NodeProto) -> list[str]:
    """A node's inputs and the outer-scope names its subgraphs read."""
    names = list(node.input)
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            names += outer_names(attr.g)
    return names


def robust_inputs(case: Case, src: Source, path: pathlib.Path, atol: float, rtol: float):
    """The case's inputs and expected outputs; for a decoder, the first draw (from the case's seed on) whose top
    two logits are more than MARGIN tolerances apart at every step, so that no token is a near tie."""
    rng = np.random.default_rng(case.seed)
    for _ in range(200):
        feed = src.draw(rng)
        expected = oracle(path, feed)
        if not src.decoder:
            return feed, expected, None
        top2 = np.sort(expected["logits"], axis=-1)[..., -2:]
        margin = float((top2[..., 1] - top2[..., 0]).min())
        if margin > MARGIN * (atol + rtol * float(np.abs(expected["logits"]).max())):
            return feed, expected, margin
    raise RuntimeError(f"{case.name}: no draw of 200 has its top two logits {MARGIN} tolerances apart")


def where_qdq(info: dict, case: Case) -> str:
    places = {key.split()[-1] for key in info["counts"]}
    if places == {"main"}:
        return "Q/DQ outside the loop only (the tool leaves the Loop body float)"
    if case.body:
        return ("Q/DQ inside the Loop body, written by the same tool run on the body as a standalone model"
                " (outer weights as its initializers, calibrated on every trip's values) and put back by the script"
                + ("" if "main" not in places else "; outside the loop by the tool on the whole model"))
    return "Q/DQ inside the Loop body" + (" and outside it" if "main" in places else "") + ", as the tool writes them"


def make(case: Case, src: Source, tmp: pathlib.Path) -> tuple[dict, str]:
    tool, tool_about = TOOLS[case.tool]
    rng = np.random.default_rng(1000 + case.seed)
    calibration = [src.draw(rng) for _ in range(4)]
    out = HERE / f"{case.name}.onnx"
    if case.body:
        whole = tmp / f"{case.name}.whole.onnx" if case.whole else src.path
        if case.whole:
            tool(src.path, whole, calibration)
        quantize_body(whole, out, tool, calibration, tmp)
    else:
        tool(src.path, out, calibration)
    unsorted = check(onnx.load(out))
    info = inventory(out)
    rtol = 1e-3
    atol, how = tolerance(case, info, out, calibration)
    feed, expected, margin = robust_inputs(case, src, out, atol, rtol)
    atol, how = tolerance(case, info, out, calibration + [feed])
    if src.decoder:
        how += f"; the top two logits of every step are at least {margin:.3g} apart, so tokens must match exactly"
    float_out = oracle(src.path, feed)
    drift = max(float(np.abs(expected[k].astype(np.float64) - float_out[k]).max()) for k in expected
                if expected[k].dtype.kind == "f")
    np.savez(HERE / f"{case.name}.inputs.npz", **feed)
    np.savez(HERE / f"{case.name}.expected.npz", **expected)
    if out.stat().st_size > 300_000:
        raise RuntimeError(f"{out.name} is {out.stat().st_size} bytes; keep corpus models < 300 KB")
    about = "; ".join(filter(None, [
        f"{src.about}, {EXPORTER}",
        f"quantized by {tool_about}",
        where_qdq(info, case),
        case.note,
        unsorted and "the tool writes the Loop before the node that makes a value its body reads (onnx's checker"
                     " rejects the order, onnxruntime runs it)",
        "Q/DQ: " + ", ".join(f"{n} {k}" for k, n in info["counts"].items()),
        f"{how}; rtol {rtol}",
        f"the float model's outputs differ from these by up to {drift:.3g}",
        ORACLE,
    ]))
    info.update(atol=atol, rtol=rtol, drift=drift, size=out.stat().st_size)
    return info, about


def write_toml(rows: list[tuple[Case, dict, str]]) -> None:
    lines = ["# Made by make_models.py; one table per case (see README.md). Quantized loop models; expected outputs",
             f"# are {ORT} on the CPU with graph optimizations off, atol one quantization step (see each about).", ""]
    for case, info, about in rows:
        lines += [
            "[[model]]",
            f'name = "{case.name}"',
            f'path = "{case.name}.onnx"',
            f'inputs = "{case.name}.inputs.npz"',
            f'expected = "{case.name}.expected.npz"',
            "about = " + '"' + about.replace("\\", "\\\\").replace('"', '\\"') + '"',
            f"rtol = {info['rtol']}",
            f"atol = {info['atol']}",
            "",
        ]
    (HERE / "cases.toml").write_text("\n".join(lines))


def main() -> None:
    logging.disable(logging.WARNING)
    for old in [*HERE.glob("*.onnx"), *HERE.glob("*.npz"), *FLOAT.glob("*.onnx")]:  # all remade: none left from before
        old.unlink()
    with tempfile.TemporaryDirectory() as name:
        tmp = pathlib.Path(name)
        srcs = sources(tmp)
        FLOAT.mkdir(exist_ok=True)
        for src in srcs.values():  # the float models, whose weight bytes the quantized ones are measured against
            shutil.copy(src.path, FLOAT / src.path.name)
        rows = []
        for case in CASES:
            info, about = make(case, srcs[case.source], tmp)
            rows.append((case, info, about))
            print(f"{case.name}: {info['size']} bytes, weight DQs {info['weight_dqs']}, {info['counts']},"
                  f" atol {info['atol']:.3g}, |quantized - float| {info['drift']:.3g}")
    write_toml(rows)


if __name__ == "__main__":
    main()

"""What a decoder's generation costs per token as one engine, against the model's own step run from the host.

    python benchmarks/decoder_cost.py [--models NAME[,NAME...]] [--prompt-len P] [--tokens N] [--json]

The decoders are the corpus cases (``tests/models/*/cases.toml``) whose description names a decoder, a
generator or a beam search, one row per model file. Each is given inputs of prompt length ``P`` (the axes the
exporters name ``prompt_len``, ``src_len`` or ``chars``, filled by repeating the case's example along them)
and asked for ``N`` tokens (its ``max_*`` length input, or the ``steps`` axis of a per-step input, is ``N``).
Those inputs are then pinned into the model (static dims, the length input a constant), so that loopc's
network has static shapes to count, and TensorRT's builder builds it; a model that loopc refuses or the
builder fails on gets its one-line error instead of counts.

Per generated token, counted statically (no timing):

* **loopc** (the one engine): the layers of one trip of its TensorRT loop and the multiply-accumulates (MACs)
  of the products in them (matrix multiplies, einsums, attentions, convolutions and deconvolutions, as
  :data:`loopc.fingerprint.PRODUCTS` counts them). A growing cache is carried as a buffer of the bound's
  length with a valid length beside it, so every trip attends over the whole buffer, as the last step does:
  the cost is the same at every step. (Products loopc hoists out of the loop are not in it.)
* **the model's own step**: the original ONNX loop body run as a host loop runs it, one trip per call
  (onnxruntime), its carried values fed back, the MACs of each trip taken from the shapes that trip really
  had (attention over the valid length ``t``), in the branches it took. EOS is ignored, as a benchmark asks
  for ``N`` tokens: the carried booleans (the finished flags) are given their initial values on every trip, and
  where an If took a branch with no products while the other has some (the stop of ``if finished.all():
  break`` taken when every row emits EOS in the same trip), the other branch is counted.
  Its ONNX nodes per trip (Constants left out) stand beside loopc's layers.

The ratio padded / valid is given at the first token, the middle one and the last, and over the generation.

Then the deployment: one engine for the generation runs 1 launch where the host loop runs ``N``, and it never
copies the loop's carried state (caches, hidden state, the last token) between host and device; the host loop
copies it in and out on every call: the bytes of the body's carried tensors on each trip, in and out, summed
over the ``N`` trips (carried sequences, which only collect outputs, values carried through unchanged, such as
the weights tf2onnx carries, and the condition are left out). Beside it, the same for a host loop of loopc's own
step: every recurrence of its TensorRT loop (the padded buffers and their lengths), in and out, times ``N``.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from loopc.fileio import load_arrays

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.loop_work import cell  # noqa: E402  (after the path: run as a script)
from tests.corpus import Case, _one_line, load_corpus  # noqa: E402

#: What a decoder's case description says it is.
DECODER = re.compile(r"\bdecoder\b|\bgenerator\b|\bbeam search\b", re.IGNORECASE)
#: The names exporters give the prompt's (source's, text's) length axis, and the axis of per-step inputs.
PROMPT_AXES = {"prompt_len", "src_len", "chars"}
STEP_AXES = {"steps"}
#: A scalar integer input bounding the generation (``max_len``, ``max_new_tokens``, ``max_frames``, ...).
LENGTH_INPUT = re.compile(r"^max_")
Value = Any  #: an array, or a list of arrays for an ONNX sequence


# -- the models and their inputs -----------------------------------------------------------------

def decoder_cases(names: Sequence[str] = ()) -> list[Case]:
    """The corpus decoders, one case per model file (the first listed), those named in ``names`` if any."""
    chosen: dict[pathlib.Path, Case] = {}
    for case in load_corpus(ROOT / "tests" / "models"):
        if DECODER.search(case.about) and case.model.suffix == ".onnx" and case.model not in chosen:
            if not names or case.name in names or case.id in names:
                chosen[case.model] = case
    return list(chosen.values())


def benchmark_inputs(model: onnx.ModelProto, example: Mapping[str, np.ndarray], prompt_len: int | None,
                     tokens: int | None) -> dict[str, np.ndarray]:
    """The example inputs with their prompt axes ``prompt_len`` long and their length inputs ``tokens``."""
    inputs = {name: np.asarray(value) for name, value in example.items()}
    for declared in model.graph.input:
        if declared.name not in inputs:
            continue
        value = inputs[declared.name]
        if value.ndim == 0 and value.dtype.kind in "iu" and LENGTH_INPUT.match(declared.name):
            if tokens is not None:
                inputs[declared.name] = np.asarray(tokens, value.dtype)
            continue
        for axis, dim in enumerate(declared.type.tensor_type.shape.dim):
            size = prompt_len if dim.dim_param in PROMPT_AXES else tokens if dim.dim_param in STEP_AXES else None
            if size is not None:
                value = np.take(value, np.arange(size) % value.shape[axis], axis=axis)
        inputs[declared.name] = value
    return inputs


def pinned(model: onnx.ModelProto, inputs: Mapping[str, np.ndarray]) -> onnx.ModelProto:
    """``model`` for these inputs only: each input's dims fixed to its value's, each scalar integer input a
    constant, every other named dim (the exporter's declarations inside loop bodies) unknown."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    kept = []
    for declared in model.graph.input:
        value = inputs.get(declared.name)
        if value is not None and value.ndim == 0 and value.dtype.kind in "iu":
            model.graph.initializer.append(numpy_helper.from_array(value, declared.name))
            continue
        if value is not None:
            for dim, size in zip(declared.type.tensor_type.shape.dim, value.shape):
                dim.dim_value = size
        kept.append(declared)
    del model.graph.input[:]
    model.graph.input.extend(kept)
    for graph in _graphs(model.graph):
        declared_values = [*graph.output, *graph.value_info, *(graph.input if graph is not model.graph else [])]
        for value_info in declared_values:
            for dim in value_info.type.tensor_type.shape.dim:
                if dim.HasField("dim_param"):
                    dim.ClearField("dim_param")
    return model


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """``graph`` and every subgraph in it, at any depth."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("g"):
                yield from _graphs(attr.g)
            for sub in attr.graphs:
                yield from _graphs(sub)


# -- loopc's loop --------------------------------------------------------------------------------

@dataclass
class EngineLoop:
    """The TensorRT loop of a generation: its trips' bound, and one trip's layers and MACs."""

    loops: int  #: outermost loops in the network
    bound: int | None  #: its constant trip count
    layers: int
    macs: int | None
    state_bytes: int | None = None  #: of its recurrences, the carried state a step engine would take and give


def engine_loop(network: Any) -> EngineLoop:
    """The network's generation loop: its outermost loop with the most layers per trip, nested loops in it.

    Its MACs are the fingerprint's per-trip counts of it and of the loops nested in it, summed, so every
    product is counted as :data:`loopc.fingerprint.PRODUCTS` says, as ``loopc check`` counts it.
    """
    from loopc.fingerprint import LoopInfo, NetworkInfo, describe_network
    from loopc.sim.network import read_network

    net = read_network(network)
    outermost = [node for node in describe_network(net).loops if isinstance(node, LoopInfo)]
    if not outermost:
        return EngineLoop(0, None, 0, 0)
    inner = {lp.name: list(NetworkInfo(0, [lp]).walk_loops()) for lp in outermost}
    chosen = max(outermost, key=lambda lp: sum(inside.layers_per_iteration for inside in inner[lp.name]))
    counts = [inside.macs_per_iteration for inside in inner[chosen.name]]
    carried = [rec.outputs[0] for lp in net.loops if lp.name == chosen.name for rec in lp.recurrences]
    state = None if any(-1 in t.shape for t in carried) else sum(math.prod(t.shape) * t.dtype.itemsize for t in carried)
    return EngineLoop(len(outermost), chosen.trip_count, sum(lp.layers_per_iteration for lp in inner[chosen.name]),
                      None if None in counts else sum(c for c in counts if c is not None), state)


# -- the model's own step ------------------------------------------------------------------------

def onnx_macs(node: onnx.NodeProto, inputs: Sequence[tuple[int, ...] | None],
              outputs: Sequence[tuple[int, ...] | None]) -> int:
    """One execution's MACs of an ONNX matrix product, convolution or recurrent op, from its operands'
    shapes as they were (0: not a product)."""
    from loopc.fingerprint import _einsum_macs, _matmul_macs

    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    op = node.op_type
    if op == "MatMul":
        a, b = inputs[0] or (), inputs[1] or ()
        a, b = (1, *a) if len(a) == 1 else a, (*b, 1) if len(b) == 1 else b  # numpy's rule for a vector
        rank = max(len(a), len(b))  # and batch dims broadcast from the right
        return _matmul_macs((1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b, "NONE", "NONE")
    if op == "Gemm":
        a, b = inputs[0] or (), inputs[1] or ()
        m, k = (a[1], a[0]) if attrs.get("transA", 0) else (a[0], a[1])
        n = b[0] if attrs.get("transB", 0) else b[1]
        return m * n * k
    if op == "Einsum":
        return _einsum_macs(attrs["equation"].decode(), [s or () for s in inputs])
    if op == "Conv":
        weight = inputs[1] or ()
        return math.prod(outputs[0] or ()) * math.prod(weight[1:])
    if op == "ConvTranspose":
        weight = inputs[1] or ()
        return math.prod(inputs[0] or ()) * math.prod(weight[1:])
    if op in ("LSTM", "GRU", "RNN"):  # every step: x·Wᵀ and h·Rᵀ for each direction
        x, w, r = inputs[0] or (), inputs[1] or (), inputs[2] or ()
        steps_batch = x[0] * x[1]
        return steps_batch * w[0] * w[1] * (w[2] + r[2])
    return 0


@dataclass
class Trip:
    """One trip of the model's own loop: its MACs and nodes, and the carried state's bytes in and out."""

    macs: int
    nodes: int
    state_in: int
    state_out: int


class Scope:
    """One ONNX graph run on its own by onnxruntime: its formal inputs and the values it reads from enclosing
    scopes are inputs, every value it makes an output; the If branches it takes are run the same way, so
    the shapes of every node that ran are known."""

    def __init__(self, graph: onnx.GraphProto, opsets: Sequence[onnx.OperatorSetIdProto]) -> None:
        self.graph = graph
        self.opsets = list(opsets)
        self.outer = sorted(free_names(graph))
        constants = {i.name for i in graph.initializer}
        self.inputs = [i.name for i in graph.input if i.name not in constants]
        self.names = [name for node in graph.node for name in node.output if name]
        self.branches: dict[tuple[int, str], Scope] = {}
        self.session: Any = None

    def run(self, feeds: Mapping[str, Value]) -> dict[str, Value]:
        """Every value of the graph, its formal inputs and the enclosing scopes' values taken from ``feeds``."""
        if self.session is None:
            self.session = self._session(feeds)
        made = self.session.run(self.names, {name: feeds[name] for name in self.inputs + self.outer})
        constants = {i.name: numpy_helper.to_array(i) for i in self.graph.initializer}
        return {**feeds, **constants, **dict(zip(self.names, made))}

    def count(self, feeds: Mapping[str, Value]) -> tuple[dict[str, Value], int, int]:
        """:meth:`run`, with the MACs and the (non-Constant) nodes of everything that ran."""
        values = self.run(feeds)
        macs = nodes = 0
        for index, node in enumerate(self.graph.node):
            if node.op_type == "Constant":
                continue
            if node.op_type in ("Loop", "Scan"):
                raise NotImplementedError(f"a {node.op_type} nested in the step ({node.name}) is not counted")
            nodes += 1
            macs += onnx_macs(node, [_shape(values.get(name)) for name in node.input],
                              [_shape(values.get(name)) for name in node.output])
            if node.op_type == "If":
                branches = ("then_branch", "else_branch")
                taken, other = branches if bool(np.asarray(values[node.input[0]])) else branches[::-1]
                branch = self._branch(index, node, taken, values)
                if not branch[0]:  # a stop skipping the step's work (EOS ignored): count the step it skipped
                    branch = max(branch, self._branch(index, node, other, values))
                macs, nodes = macs + branch[0], nodes + branch[1]
        return values, macs, nodes

    def _branch(self, index: int, node: onnx.NodeProto, branch: str, values: Mapping[str, Value]) -> tuple[int, int]:
        """The MACs and nodes of one branch of the If ``node`` (the graph's ``index``-th), run on ``values``."""
        key = (index, branch)
        if key not in self.branches:
            self.branches[key] = Scope(next(a.g for a in node.attribute if a.name == branch), self.opsets)
        _, macs, nodes = self.branches[key].count(values)
        return macs, nodes

    def _session(self, feeds: Mapping[str, Value]) -> Any:
        import onnxruntime

        graph = onnx.GraphProto.FromString(self.graph.SerializeToString())
        for formal in graph.input:  # the exporter's shapes are its example's; the types are all we keep
            if formal.type.HasField("tensor_type"):
                formal.type.tensor_type.ClearField("shape")
        graph.input.extend(_value_info(name, feeds[name]) for name in self.outer)
        del graph.output[:], graph.value_info[:]
        graph.output.extend(helper.make_empty_tensor_value_info(name) for name in self.names)
        model = helper.make_model(graph, opset_imports=self.opsets, ir_version=onnx.IR_VERSION)
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def free_names(graph: onnx.GraphProto) -> set[str]:
    """The names ``graph`` (or a subgraph in it) reads from enclosing scopes."""
    made = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    made |= {name for node in graph.node for name in node.output}
    read = {name for node in graph.node for name in node.input if name}
    read |= {o.name for o in graph.output}
    for node in graph.node:
        for attr in node.attribute:
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                read |= free_names(sub)
    return read - made


def _value_info(name: str, value: Value) -> onnx.ValueInfoProto:
    if isinstance(value, list):
        dtype = value[0].dtype if value else np.dtype(np.float32)
        return helper.make_tensor_sequence_value_info(name, helper.np_dtype_to_tensor_dtype(dtype), None)
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.asarray(value).dtype), None)


def _shape(value: Value | None) -> tuple[int, ...] | None:
    return None if value is None or isinstance(value, list) else tuple(np.shape(value))


def _bytes(value: Value) -> int:
    return 0 if isinstance(value, list) else int(np.asarray(value).nbytes)


class HostLoop:
    """The model's generation loop (its top-level Loop with the largest body) run one trip per call."""

    def __init__(self, model: onnx.ModelProto, inputs: Mapping[str, np.ndarray]) -> None:
        loops = [node for node in model.graph.node if node.op_type == "Loop"]
        if not loops:
            raise ValueError("the model has no top-level Loop")
        self.loop = max(loops, key=lambda node: len(_body(node).node))
        self.body = _body(self.loop)
        values = Scope(model.graph, model.opset_import).run(dict(inputs))
        self.outer = {name: values[name] for name in free_names(self.body)}
        self.init = [values[name] for name in self.loop.input[2:]]
        self.step = Scope(self.body, model.opset_import)
        made = {out: node for node in self.body.node for out in node.output}
        formal = [i.name for i in self.body.input[2:]]
        #: which carried values are state: a value passed through unchanged (weights tf2onnx carries) is not
        self.stateful = [not _passed_through(out.name, name, made) for out, name in zip(self.body.output[1:], formal)]

    def trips(self, count: int) -> Iterator[Trip]:
        """``count`` trips from the loop's initial values, the finished flags kept at theirs (EOS ignored)."""
        state = list(self.init)
        formal = [i.name for i in self.body.input]
        for trip in range(count):
            feeds = {**self.outer, formal[0]: np.asarray(trip, np.int64), formal[1]: np.asarray(True),
                     **dict(zip(formal[2:], state))}
            values, macs, nodes = self.step.count(feeds)
            carried = [values[o.name] for o in self.body.output[1:1 + len(state)]]
            yield Trip(macs, nodes, sum(_bytes(v) for v, kept in zip(state, self.stateful) if kept),
                       sum(_bytes(v) for v, kept in zip(carried, self.stateful) if kept))
            state = [first if _is_flag(first) else after for first, after in zip(self.init, carried)]


def _body(loop: onnx.NodeProto) -> onnx.GraphProto:
    return next(a.g for a in loop.attribute if a.name == "body")


def _passed_through(name: str, formal: str, made: Mapping[str, onnx.NodeProto]) -> bool:
    """Whether the body's ``name`` is its input ``formal`` itself, through Identity nodes or none."""
    while name != formal and name in made and made[name].op_type == "Identity":
        name = made[name].input[0]
    return name == formal


def _is_flag(value: Value) -> bool:
    return not isinstance(value, list) and np.asarray(value).dtype == np.bool_


# -- measuring -----------------------------------------------------------------------------------

@dataclass
class Row:
    name: str
    prompt_len: int | None = None
    tokens: int | None = None  #: N, the loop's bound
    loops: int = 0
    layers: int = 0  #: in one trip of loopc's loop
    padded_macs: int | None = None  #: per trip of loopc's loop, every trip
    padded_state: int | None = None  #: bytes of loopc's loop's carried values
    trips: list[Trip] = field(default_factory=list)  #: the model's own, t = 0 .. N-1
    error: str = ""

    def at(self) -> list[int]:
        """The steps reported: the first token, the middle one, the last."""
        n = len(self.trips)
        return sorted({0, (n - 1) // 2, n - 1}) if n else []

    def ratio(self, t: int) -> float | None:
        valid = self.trips[t].macs
        return None if self.padded_macs is None or not valid else self.padded_macs / valid

    def generation_ratio(self) -> float | None:
        valid = sum(trip.macs for trip in self.trips)
        return None if self.padded_macs is None or not valid else self.padded_macs * len(self.trips) / valid

    def copies_avoided(self) -> int:
        return sum(trip.state_in + trip.state_out for trip in self.trips)


def measure(case: Case, prompt_len: int | None, tokens: int | None, build: bool = True) -> Row:
    """Count one decoder (see the module docstring); loopc's and the builder's errors go in the row."""
    import loopc
    from loopc.trt.config import build_serialized, builder_config

    model = onnx.load(str(case.model))
    inputs = benchmark_inputs(model, load_arrays(case.inputs), prompt_len, tokens)
    axes = [dim.dim_param for i in model.graph.input for dim in i.type.tensor_type.shape.dim]
    row = Row(case.id, prompt_len if PROMPT_AXES & set(axes) else None)
    try:
        compiled = loopc.compile(pinned(model, inputs))
        if build:
            build_serialized(compiled.session, compiled.network, builder_config(compiled.session))
    except Exception as exc:  # noqa: BLE001  (a model loopc or the builder cannot take is a result here)
        row.error = "not built: " + _one_line(exc)
        return row
    loop = engine_loop(compiled.network)
    row.loops, row.layers, row.padded_macs, row.padded_state = loop.loops, loop.layers, loop.macs, loop.state_bytes
    row.tokens = loop.bound if loop.bound is not None else tokens
    if row.tokens is None:
        row.error = "the loop has no constant bound; give --tokens"
        return row
    try:
        row.trips = list(HostLoop(model, inputs).trips(row.tokens))
    except Exception as exc:  # noqa: BLE001  (onnxruntime's or the counting's: said in the row)
        row.error = "the model's step not counted: " + _one_line(exc)
    return row


def count_network(model: onnx.ModelProto) -> EngineLoop:
    """loopc's generation loop for ``model`` (static shapes), not built."""
    import loopc

    return engine_loop(loopc.compile(model).network)


# -- the report ----------------------------------------------------------------------------------

def _bytes_cell(count: int) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} B"


HEADER = ["model", "prompt", "N (bound)", "loops", "layers/trip loopc", "ONNX nodes/step", "MACs/token loopc",
          "MACs/token model at t", "padded/valid at t", "padded/valid per generation", "launches",
          "state bytes/token (first → last)", "host↔device bytes avoided", "same, loopc's padded state", "note"]


def markdown(rows: Sequence[Row]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|---|" + "---:|" * (len(HEADER) - 2) + "---|"]
    for row in rows:
        if row.error:
            lines.append(f"| {row.name} |" + " |" * (len(HEADER) - 2) + f" {row.error} |")
            continue
        at = row.at()
        steps = ", ".join(f"{cell(row.trips[t].macs)} ({t})" for t in at)
        ratios = ", ".join(f"{cell(row.ratio(t))} ({t})" for t in at)
        first, last = row.trips[0], row.trips[-1]
        nodes = sorted({trip.nodes for trip in row.trips})
        cells = [row.name, cell(row.prompt_len), cell(row.tokens), cell(row.loops), cell(row.layers),
                 "–".join(map(str, nodes[:: max(1, len(nodes) - 1)])), cell(row.padded_macs), steps, ratios,
                 cell(row.generation_ratio()), f"1 vs {row.tokens}",
                 f"{_bytes_cell(first.state_in + first.state_out)} → {_bytes_cell(last.state_in + last.state_out)}",
                 _bytes_cell(row.copies_avoided()),
                 "–" if row.padded_state is None else _bytes_cell(2 * row.padded_state * len(row.trips)), ""]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="", help="comma-separated case names (e.g. kv_cache_decoder); "
                        "default: every decoder in the corpus")
    parser.add_argument("--prompt-len", type=int, default=8, help="length of the prompt, source or text (8)")
    parser.add_argument("--tokens", type=int, default=12, help="tokens to generate, where an input sets it (12)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the Markdown table")
    args = parser.parse_args()
    names = [name for name in args.models.split(",") if name]
    rows = [measure(case, args.prompt_len, args.tokens) for case in decoder_cases(names)]
    if args.json:
        print(json.dumps([asdict(row) for row in rows], indent=2))
    else:
        print(f"prompt length {args.prompt_len}, {args.tokens} tokens asked; MACs per token at step t (t from 0); "
              "state bytes in + out per host-loop call")
        print()
        print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

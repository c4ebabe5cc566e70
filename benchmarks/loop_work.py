"""The work a loop does per trip, in loopc's network, in TensorRT's parser's network, and at the limit.

    python benchmarks/loop_work.py [--only SUBSTRING] [--build] [--json] [--disable OPTIMIZATION ...]

A loop on a GPU is as fast as its serial chain: trips × the dependent work of one trip. Both
networks are read back (:mod:`loopc.fingerprint`) and, per model, summed over its loops:

* layers, matrix products and multiply-accumulates (MACs) of one trip (each loop's own body);
* MACs hoisted: those of the products outside every loop (static shapes; every layer type in
  :data:`loopc.fingerprint.PRODUCTS`, convolutions too), and MACs per run: hoisted + trips × per trip;
* the critical path of one trip (recurrence → next value), in layers and in kernels, taking a run of
  pointwise and data-movement layers (elementwise, activation, slice, concatenation, ...) as one
  fused kernel and shuffles as free;
* the serial chain of a run: trips × critical path, summed over the loops, which run one after
  another (trips: each loop's constant count, else the model's sequence length).

The limit, for the recurrent ops (analytic): a trip's only necessary product is ``h·Rᵀ``
(batch × gates·H × H per layer and direction; ``X·W`` runs for all trips before the loop), and its
critical path is one GEMM for all gates and one fused pointwise chain: 2 kernels (GRU with
``linear_before_reset=0`` needs ``r ⊙ h`` before its second product: 4). Stacked layers run one
after another, both directions of a layer in one loop.

A forward stack has a second limit, of the wavefront schedule (:mod:`loopc.passes.wavefront`): its
L layers run as one loop, each one trip behind the layer below, T + L − 1 steps of one layer's
critical path (the layers' steps run side by side). There a layer's input ``x`` is the state the
layer below had the trip before, so its ``x·Wᵀ`` is recurrent work of that loop, as ``h·Rᵀ`` is:
the limit per trip is every layer's ``h·Rᵀ`` plus the upper layers' ``x·Wᵀ``. loopc's in-loop MACs
are compared with the limit of the schedule it ran (the wavefront's when its network has one loop
where the stack has L layers), and, for the record, with the layer-after-layer limit. The serial
chain counts loops only: the trips the wavefront runs outside its loop (one at each edge of a
2-layer stack, where a layer idles; 2 kernels each) are not in loopc's column, while the
wavefront limit counts all T + L − 1 steps.

A network whose declared output shapes contradict the model's (TensorRT's parser on RNNs with
``layout=1``) computes something else: it is reported as an error, not compared.

Models: the ONNX node tests of LSTM, GRU and RNN; realistic sizes (2 stacked layers, sequence 64,
batch 4, input 128, hidden 256; forward and bidirectional; LSTM, GRU with linear_before_reset 0 and
1, RNN); PyTorch time loops around a cell and linear-attention recurrences from the torch corpus
(their time and batch axes pinned to 64 and 4); the sample decoders. ``--build`` also times
TensorRT's build of both networks, side by side. The summary also gives MACs per run against the
parser's and the shape-arithmetic layers left in loopc's loops.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
#: Layers a fused pointwise kernel takes in (TensorRT fuses such runs); shuffles move no data.
POINTWISE = {"ELEMENTWISE", "ACTIVATION", "UNARY", "SCALE", "SELECT", "CAST", "SLICE", "CONCATENATION",
             "IDENTITY", "GATHER", "FILL"}
FREE = {"SHUFFLE", "CONSTANT"}


@dataclass
class Case:
    name: str
    model: onnx.ModelProto
    trips: int | None  #: the sequence length, for loops whose count is not a constant
    limit: Limit | None = None
    wavefront: Limit | None = None  #: a forward stack's limit when its layers run as one loop


@dataclass
class Limit:
    macs_per_iteration: int
    kernels_per_trip: int  #: summed over the loops that run one after another
    serial_kernels: int
    loops: int = 1  #: how many loops the schedule runs


@dataclass
class Work:
    """One network's loops, summed."""

    loops: int = 0
    layers_per_iteration: int = 0
    matmuls_per_iteration: int = 0
    macs_per_iteration: int | None = 0
    macs_hoisted: int | None = 0
    macs_per_run: int | None = 0  #: hoisted + trips × per trip, over the loops
    path_layers: int = 0
    path_kernels: int = 0
    shape_layers_per_iteration: int = 0  #: layers in loops computing shapes (SHAPE and integer math on its results)
    serial_layers: int | None = 0
    serial_kernels: int | None = 0
    build_seconds: float | None = None
    error: str = ""


@dataclass
class Row:
    name: str
    loopc: Work = field(default_factory=Work)
    parser: Work = field(default_factory=Work)
    limit: Limit | None = None
    wavefront: Limit | None = None

    def schedule_limit(self) -> Limit | None:
        """The limit of the schedule loopc ran: the wavefront's when it runs the stack as one loop."""
        if self.wavefront is not None and self.loopc.loops == self.wavefront.loops:
            return self.wavefront
        return self.limit


# -- the models ----------------------------------------------------------------------------------

def recurrent_model(op: str, layers: int, direction: str, seq: int, batch: int, inputs: int, hidden: int,
                    lbr: int = 1, seed: int = 0) -> onnx.ModelProto:
    """``layers`` stacked ``op`` nodes over X [seq, batch, inputs]; each layer's Y feeds the next."""
    rng = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    g = GATES[op]
    nodes, inits = [], []
    x, width = "X", inputs
    for k in range(layers):
        for name, shape in ((f"W{k}", [dirs, g * hidden, width]), (f"R{k}", [dirs, g * hidden, hidden]),
                            (f"B{k}", [dirs, 2 * g * hidden])):
            inits.append(numpy_helper.from_array(rng.normal(scale=0.1, size=shape).astype(np.float32), name))
        attrs: dict[str, Any] = {"hidden_size": hidden, "direction": direction}
        if op == "GRU":
            attrs["linear_before_reset"] = lbr
        nodes.append(helper.make_node(op, [x, f"W{k}", f"R{k}", f"B{k}"], [f"Y{k}"], name=f"{op.lower()}{k}", **attrs))
        # Y [seq, dirs, batch, hidden] -> [seq, batch, dirs * hidden]
        inits.append(numpy_helper.from_array(np.array([0, 0, -1], np.int64), f"shape{k}"))
        nodes.append(helper.make_node("Transpose", [f"Y{k}"], [f"Yt{k}"], perm=[0, 2, 1, 3]))
        nodes.append(helper.make_node("Reshape", [f"Yt{k}", f"shape{k}"], [f"H{k}"]))
        x, width = f"H{k}", dirs * hidden
    graph = helper.make_graph(
        nodes, f"{op.lower()}_stack",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [seq, batch, inputs])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [seq, batch, width])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@dataclass
class Stack:
    """A model's LSTM/GRU/RNN nodes, with the static shapes of their operands and X's sequence and batch."""

    ops: list[onnx.NodeProto]
    shapes: dict[str, list[int]]
    seq: int
    batch: int


def recurrent_stack(model: onnx.ModelProto) -> Stack | None:
    ops = [n for n in model.graph.node if n.op_type in GATES]
    if not ops:
        return None
    shapes = {t.name: list(t.dims) for t in model.graph.initializer}
    shapes.update({vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in model.graph.input})
    layout = next((a.i for a in ops[0].attribute if a.name == "layout"), 0)
    seq, batch = shapes[ops[0].input[0]][:2][::-1] if layout else shapes[ops[0].input[0]][:2]
    return Stack(ops, shapes, seq, batch)


def recurrent_limit(model: onnx.ModelProto) -> tuple[Limit, int] | None:
    """The limit of a model whose loops are its LSTM/GRU/RNN nodes, and their sequence length."""
    stack = recurrent_stack(model)
    if stack is None:
        return None
    macs = _recurrent_macs(stack)
    kernels = sum(_step_kernels(n) for n in stack.ops)
    return Limit(macs, kernels, stack.seq * kernels, len(stack.ops)), stack.seq


def wavefront_limit(model: onnx.ModelProto) -> Limit | None:
    """The limit of a forward stack run as one loop, each layer one trip behind the one below: per trip
    every layer's ``h·Rᵀ`` and, above the first, its ``x·Wᵀ`` (x is the layer below's state of the
    trip before, so it is recurrent work of that loop); the layers' steps run side by side, and the
    stack takes T + L − 1 of them."""
    stack = recurrent_stack(model)
    if stack is None or len(stack.ops) < 2 or any(
            a.name == "direction" and a.s != b"forward" for n in stack.ops for a in n.attribute):
        return None
    _, gh, width = zip(*(stack.shapes[n.input[1]] for n in stack.ops[1:]))
    inputs = stack.batch * sum(g * w for g, w in zip(gh, width))
    kernels = max(_step_kernels(n) for n in stack.ops)
    return Limit(_recurrent_macs(stack) + inputs, kernels, (stack.seq + len(stack.ops) - 1) * kernels, 1)


def _recurrent_macs(stack: Stack) -> int:
    """``h·Rᵀ`` of one trip: batch × gates·H × H per layer and direction."""
    return sum(dirs * stack.batch * gh * hidden for dirs, gh, hidden in (stack.shapes[n.input[2]] for n in stack.ops))


def _step_kernels(node: onnx.NodeProto) -> int:
    """One GEMM and one fused pointwise chain; GRU without linear_before_reset needs r ⊙ h first: 4."""
    lbr = next((a.i for a in node.attribute if a.name == "linear_before_reset"), 0)
    return 4 if node.op_type == "GRU" and not lbr else 2


#: PyTorch loops around a cell, from the corpus (tests/models/torch, made by its make_models.py): the
#: limit per trip, with B the batch, H the hidden size, D the head size: the recurrent product ``h·Rᵀ``
#: (LSTM 4H, GRU 3H columns), or a linear-attention state's update and read-out (2·B·heads·D², plus
#: the normalizer's B·D).
TORCH_CELLS = {
    "lstm_cell_loop": lambda b: b * 4 * 128 * 128,
    "gru_cell_loop": lambda b: b * 3 * 128 * 128,
    "chunk_lstm_loop": lambda b: b * 4 * 128 * 128,
    "linear_attention": lambda b: 2 * b * 32 * 32 + b * 32,
    "retention_decay": lambda b: 2 * b * 2 * 16 * 16,
}
#: the corpus models' dynamic axes, pinned to the realistic sizes of the stacked models
PINNED = {"time": 64, "batch": 4}


def torch_case(name: str) -> Case:
    """A corpus model with its dynamic input axes pinned (so both networks have static shapes to count).
    Every other named dim is made unknown, to be inferred from the inputs: the exporter's declarations
    inside loop bodies are from its example run and would contradict the pinned sizes."""
    model = onnx.load(str(ROOT / "tests" / "models" / "torch" / f"{name}.onnx"))
    for value in model.graph.input:
        for dim in value.type.tensor_type.shape.dim:
            if dim.dim_param in PINNED:
                dim.dim_value = PINNED[dim.dim_param]
    graphs = [model.graph]
    while graphs:
        graph = graphs.pop()
        for value in [*graph.output, *graph.value_info, *(graph.input if graph is not model.graph else [])]:
            for dim in value.type.tensor_type.shape.dim:
                if dim.HasField("dim_param"):
                    dim.ClearField("dim_param")
        graphs.extend(a.g for node in graph.node for a in node.attribute if a.HasField("g"))
    trips, batch = PINNED["time"], PINNED["batch"]
    macs = TORCH_CELLS[name](batch)
    return Case(f"torch/{name} t{trips} b{batch}", model, trips, Limit(macs, 2, trips * 2))


def cases(only: str | None) -> Iterator[Case]:
    from tests.conformance import node_test_cases

    for test in node_test_cases():
        ops = {n.op_type for n in test.model.graph.node}
        if ops & set(GATES) and not test.name.endswith("_expanded"):
            yield _case(test.name, test.model)
    for op, lbr in (("LSTM", 1), ("GRU", 0), ("GRU", 1), ("RNN", 1)):
        for direction in ("forward", "bidirectional"):
            label = f"{op}{' lbr=' + str(lbr) if op == 'GRU' else ''} 2x{direction} s64 b4 i128 h256"
            yield _case(label, recurrent_model(op, 2, direction, 64, 4, 128, 256, lbr))
    for name in TORCH_CELLS:
        yield torch_case(name)
    for sample in ("greedy_gru_decoder", "growing_cat", "nested_loops", "running_sum", "cumulative"):
        yield Case(f"samples/{sample}", onnx.load(str(ROOT / "samples" / f"{sample}.onnx")), None)


def _case(name: str, model: onnx.ModelProto) -> Case:
    found = recurrent_limit(model)
    return Case(name, model, found[1] if found else None, found[0] if found else None, wavefront_limit(model))


# -- measuring -----------------------------------------------------------------------------------

def fused_kernels(types: list[str]) -> int:
    """Kernels along a path of layer types: a run of pointwise layers is one kernel, a shuffle none."""
    kernels, in_run = 0, False
    for kind in types:
        if kind in FREE:
            continue
        if kind in POINTWISE:
            kernels += 0 if in_run else 1
            in_run = True
        else:
            kernels += 1
            in_run = False
    return kernels


def work_of(network: Any, trips: int | None) -> Work:
    """The per-trip work of ``network``'s loops, summed (see the module docstring)."""
    from loopc.fingerprint import PRODUCTS, NetworkInfo, _scope, describe_network, macs
    from loopc.sim.network import read_network

    net = read_network(network)
    info = describe_network(net)
    types = {lay.name: lay.type for lay in net.layers}
    shape_memo: dict[str, bool] = {}
    work = Work()
    hoisted = [macs(lay, [None if t is None else t.shape for t in lay.inputs]) for lay in net.layers
               if lay.type in PRODUCTS and _scope(lay) is None]
    work.macs_hoisted = None if None in hoisted else sum(m for m in hoisted if m is not None)
    for loop in info.loops:  # the outermost loops, which run one after another
        if loop.kind != "loop":
            continue
        work.loops += 1
        inner = list(NetworkInfo(0, [loop]).walk_loops())  # the loop and the loops nested in it
        inner_names = {lp.name for lp in inner}
        work.layers_per_iteration += sum(lp.layers_per_iteration for lp in inner)
        work.shape_layers_per_iteration += sum(1 for lay in net.layers if _computes_shape(lay, shape_memo)
                                                and getattr(_scope(lay), "name", None) in inner_names)
        work.matmuls_per_iteration += sum(lp.matmuls_per_iteration for lp in inner)
        counted = [lp.macs_per_iteration for lp in inner]
        loop_macs = None if None in counted else sum(c for c in counted if c is not None)
        path = [types.get(step, "LOOP") for step in loop.critical_path]
        kernels = fused_kernels(path)
        work.path_layers += len(path)
        work.path_kernels += kernels
        loop_trips = loop.trip_count if loop.trip_count is not None else trips
        work.macs_per_iteration = _add(work.macs_per_iteration, loop_macs)
        work.macs_per_run = _add(work.macs_per_run, None if loop_macs is None or loop_trips is None
                                 else loop_trips * loop_macs)
        work.serial_layers = _add(work.serial_layers, None if loop_trips is None else loop_trips * len(path))
        work.serial_kernels = _add(work.serial_kernels, None if loop_trips is None else loop_trips * kernels)
    work.macs_per_run = _add(work.macs_per_run, work.macs_hoisted)
    return work


def _computes_shape(layer: Any, memo: dict[str, bool]) -> bool:
    """A SHAPE layer, or integer math on what one produced."""
    if layer.type == "SHAPE":
        return True
    if not layer.outputs or any(t.dtype.kind not in "iub" for t in layer.outputs):
        return False
    return any(_from_shape(t, memo) for t in layer.inputs if t is not None)


def _from_shape(tensor: Any, memo: dict[str, bool]) -> bool:
    if tensor.name not in memo:
        memo[tensor.name] = False  # a recurrence's cycle is not evidence
        memo[tensor.name] = tensor.producer is not None and _computes_shape(tensor.producer, memo)
    return memo[tensor.name]


def _add(total: int | None, more: int | None) -> int | None:
    """A sum that is unknown once any part is."""
    return None if total is None or more is None else total + more


def measure(case: Case, build: bool, disabled: tuple[str, ...] = ()) -> Row:
    import loopc
    from tests.conformance import declared_shape_mismatch
    from loopc.errors import LoopcError
    from loopc.trt.config import build_serialized, builder_config
    from loopc.trt.onnx_parser import parse_onnx

    row = Row(case.name, limit=case.limit, wavefront=case.wavefront)
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "model.onnx"
        onnx.save(case.model, str(path))
        for tool in ("loopc", "parser"):
            try:
                if tool == "loopc":
                    compiled = loopc.compile(str(path), max_trips=64, disable=disabled)
                    session, network = compiled.session, compiled.network
                else:
                    parsed = parse_onnx(str(path))
                    session, network = parsed.session, parsed.network
                wrong = declared_shape_mismatch(network, declared_outputs(case.model))
                work = Work(error=f"wrong network: {wrong}") if wrong else work_of(network, case.trips)
                if build and not wrong:
                    start = time.process_time()
                    build_serialized(session, network, builder_config(session))
                    work.build_seconds = time.process_time() - start
            except LoopcError as exc:
                work = Work(error=str(exc).splitlines()[0][:100])
            setattr(row, tool, work)
    return row


def declared_outputs(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    """The model's output shapes as it declares them (-1: not a fixed length)."""
    return {o.name: tuple(d.dim_value if d.HasField("dim_value") else -1 for d in o.type.tensor_type.shape.dim)
            for o in model.graph.output if o.type.tensor_type.HasField("shape")}


# -- the report ----------------------------------------------------------------------------------

COLUMNS = [("loops", "loops"), ("layers/iter", "layers_per_iteration"), ("matmuls/iter", "matmuls_per_iteration"),
           ("MACs/iter", "macs_per_iteration"), ("MACs hoisted", "macs_hoisted"), ("MACs/run", "macs_per_run"),
           ("shape layers/iter", "shape_layers_per_iteration"), ("path layers", "path_layers"),
           ("path kernels", "path_kernels"), ("serial layers", "serial_layers"),
           ("serial kernels", "serial_kernels"), ("build s", "build_seconds")]


def cell(value: Any) -> str:
    """One table cell: a dash for nothing, two decimals, thousands separated."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.2f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def markdown(rows: list[Row]) -> str:
    lines = ["| model | network | " + " | ".join(c for c, _ in COLUMNS) + " | note |",
             "|---|---|" + "---:|" * len(COLUMNS) + "---|"]
    for row in rows:
        for tool in ("loopc", "parser"):
            work: Work = getattr(row, tool)
            cells = [cell(getattr(work, key)) if not work.error else "" for _, key in COLUMNS]
            lines.append(f"| {row.name} | {tool} | " + " | ".join(cells) + f" | {work.error} |")
        for label, limit in (("limit", row.limit), ("limit, wavefront", row.wavefront)):
            if limit is not None:
                cells = ["", "", "", cell(limit.macs_per_iteration), "", "", "0", "", cell(limit.kernels_per_trip),
                         "", cell(limit.serial_kernels), ""]
                lines.append(f"| {row.name} | {label} | " + " | ".join(cells) + " |  |")
    return "\n".join(lines)


def ratios(rows: list[Row]) -> list[str]:
    """loopc against the limit and the parser where both are known, over the recurrent models (a model
    whose loops loopc removed altogether, a one-trip loop inlined, counts with a serial chain of 0)."""
    macs, layer_after_layer, serial_parser, per_run = [], [], [], []
    total_ours = total_theirs = shape_layers = 0
    for row in rows:
        ours, theirs = row.loopc, row.parser
        if ours.error:
            continue
        shape_layers += ours.shape_layers_per_iteration
        limit = row.schedule_limit()
        if limit is not None and row.limit is not None and ours.macs_per_iteration is not None:
            macs.append((ours.macs_per_iteration / limit.macs_per_iteration, row.name))
            layer_after_layer.append((ours.macs_per_iteration / row.limit.macs_per_iteration, row.name))
        if theirs.error:
            continue
        if ours.serial_kernels is not None and theirs.serial_kernels:
            serial_parser.append((ours.serial_kernels / theirs.serial_kernels, row.name))
            total_ours += ours.serial_kernels
            total_theirs += theirs.serial_kernels
        if ours.macs_per_run is not None and theirs.macs_per_run:
            per_run.append((ours.macs_per_run / theirs.macs_per_run, row.name))
    out = []
    if macs:
        worst = max(macs)
        out.append(f"in-loop MACs per trip / limit of the schedule run: worst {worst[0]:.2f} ({worst[1]}), "
                   f"over {len(macs)} models")
        worst = max(layer_after_layer)
        out.append(f"in-loop MACs per trip / layer-after-layer limit: worst {worst[0]:.2f} ({worst[1]})")
    if serial_parser:
        worst = max(serial_parser)
        out.append(f"serial chain (kernels) / parser's: total {total_ours / total_theirs:.2f}, "
                   f"worst {worst[0]:.2f} ({worst[1]}), over {len(serial_parser)} models")
    if per_run:
        worst = max(per_run)
        out.append(f"MACs per run / parser's: worst {worst[0]:.2f} ({worst[1]}), over {len(per_run)} models")
    out.append(f"shape-arithmetic layers per trip in loopc's loops: {shape_layers} in all")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="only models whose name contains this")
    parser.add_argument("--build", action="store_true", help="also time TensorRT's build of both networks")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the Markdown table")
    parser.add_argument("--disable", action="append", default=[], metavar="OPTIMIZATION",
                        help="leave this loopc optimization out (repeatable), as `loopc build --disable` does")
    args = parser.parse_args()
    rows = [measure(case, args.build, tuple(args.disable)) for case in cases(args.only)
            if not args.only or args.only in case.name]
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
    else:
        print(markdown(rows))
        print()
        print("\n".join(ratios(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

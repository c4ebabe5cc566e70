"""The loops of a TensorRT network as data: what ``loopc check`` compares and ``loopc inspect`` draws.

Everything is read back from the network itself (:mod:`loopc.trt.read_back`), so a fingerprint
describes what TensorRT was given, not what loopc meant to give it. Per loop: its trip limits,
iterators, recurrences and outputs; the layers, matrix products, convolutions and multiply-accumulates
(MACs) of one iteration of its own body (a nested loop is counted on its own); and its *critical path*,
the longest chain of layers from a recurrence's value to a recurrence's next value (or the
kWHILE condition), which is the work no hardware can overlap from one trip to the next. Nested
loops and if-conditionals are children of the loop or conditional they sit in.

MACs come from static shapes; where a shape is only known when the network runs, give the
measured average (:class:`MacCounter`, fed by the simulator) or the count is unknown (``None``).
Every layer that multiplies and accumulates is in :data:`PRODUCTS`, the one table both read.

Weights are the network's constants (``IConstantLayer``), in bytes by TensorRT data type as the layer holds
them (INT4 and FP4 two elements to a byte): for the whole network, and per loop, those its body reads on each
trip, directly or through layers outside the loop that compute only from constants (a transposed or
dequantized weight) — each constant once, whatever reads it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Iterator as Iter
from dataclasses import asdict, dataclass, field
from typing import Any, Union

import numpy as np

from loopc.gc_pause import gc_paused
from loopc.semantics.conv import NoWindows, Window, conv_output_sizes
from loopc.trt import enum_name
from loopc.trt.dtypes import held_bytes
from loopc.trt.read_back import Conditional, Layer, NetworkLoop, Network, Tensor, read_back

BOUNDARY = ("TRIP_LIMIT", "ITERATOR", "RECURRENCE", "LOOP_OUTPUT")


@dataclass
class IteratorInfo:
    name: str
    axis: int
    reverse: bool


@dataclass
class RecurrenceInfo:
    """``init → next``: the layers (or network input) that give the first and each next value."""

    name: str
    init: str
    next: str
    shape: list[int]


@dataclass
class OutputInfo:
    name: str
    kind: str  #: kLAST_VALUE, kCONCATENATE or kREVERSE
    axis: int | None = None  #: the stacking axis of kCONCATENATE / kREVERSE


@dataclass
class ConditionalInfo:
    name: str
    layers: int  #: the layers of both branches
    children: list[Node] = field(default_factory=list)
    kind: str = "if"


@dataclass
class LoopInfo:
    name: str
    trip_limits: list[str]  #: kCOUNT and/or kWHILE
    trip_count: int | None = None  #: a constant kCOUNT limit
    iterators: list[IteratorInfo] = field(default_factory=list)
    recurrences: list[RecurrenceInfo] = field(default_factory=list)
    outputs: list[OutputInfo] = field(default_factory=list)
    layers_per_iteration: int = 0
    matmuls_per_iteration: int = 0  #: matrix multiplies, einsums and attentions
    macs_per_iteration: int | None = 0  #: of every product; None: a product's shape is only known at run time
    critical_path: list[str] = field(default_factory=list)  #: layer names, recurrence → next value
    children: list[Node] = field(default_factory=list)
    kind: str = "loop"
    #: convolutions and deconvolutions; a fingerprint without it is from before they were counted (no MACs)
    convolutions_per_iteration: int = 0
    #: bytes of the constants one iteration of its own body reads, by TensorRT data type (see the module)
    weight_bytes_per_iteration: dict[str, int] = field(default_factory=dict)


Node = Union[LoopInfo, ConditionalInfo]


@dataclass
class NetworkInfo:
    layers: int
    loops: list[Node] = field(default_factory=list)  #: the outermost loops and conditionals

    def walk_loops(self) -> Iter[LoopInfo]:
        """Every loop, outer before inner."""
        return (node for node in _walk(self.loops) if isinstance(node, LoopInfo))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NetworkInfo:
        return cls(int(data["layers"]), [_node_from_dict(d) for d in data.get("loops", [])])


def _walk(nodes: Sequence[Node]) -> Iter[Node]:
    for node in nodes:
        yield node
        yield from _walk(node.children)


def _node_from_dict(data: dict[str, Any]) -> Node:
    children = [_node_from_dict(d) for d in data.get("children", [])]
    if data.get("kind") == "if":
        return ConditionalInfo(data["name"], int(data["layers"]), children)
    return LoopInfo(
        data["name"], list(data["trip_limits"]), data.get("trip_count"),
        [IteratorInfo(**d) for d in data.get("iterators", [])],
        [RecurrenceInfo(**d) for d in data.get("recurrences", [])],
        [OutputInfo(**d) for d in data.get("outputs", [])],
        int(data.get("layers_per_iteration", 0)), int(data.get("matmuls_per_iteration", 0)),
        data.get("macs_per_iteration"), list(data.get("critical_path", [])), children,
        convolutions_per_iteration=int(data.get("convolutions_per_iteration", 0)),
        weight_bytes_per_iteration={str(k): int(v) for k, v in data.get("weight_bytes_per_iteration", {}).items()},
    )


# -- multiply-accumulates ------------------------------------------------------------------------

def macs(layer: Layer, shapes: Sequence[Sequence[int] | None]) -> int | None:
    """The multiply-accumulates of one execution of ``layer`` given its inputs' shapes (0: not a product).

    ``None`` when a shape it needs is unknown (missing, ``None`` or holding -1) or a convolution's
    geometry leaves no output.
    """
    product = PRODUCTS.get(layer.type)
    if product is None:
        return 0
    wanted = len(shapes) if product.operands is None else product.operands
    known = [s for s in shapes[:wanted] if s is not None and -1 not in s]
    return product.count(layer.api, known) if len(known) == wanted else None


def _matmul_macs(a: Sequence[int], b: Sequence[int], op0: str, op1: str) -> int:
    """Batch × M × N × K for TensorRT's matrix multiply (a VECTOR operand is a stack of vectors)."""
    if op0 == "VECTOR":
        m, k, batch_a = 1, a[-1], a[:-1]
    else:
        (m, k), batch_a = (a[-1], a[-2]) if op0 == "TRANSPOSE" else (a[-2], a[-1]), a[:-2]
    if op1 == "VECTOR":
        n, batch_b = 1, b[:-1]
    else:
        n, batch_b = b[-2] if op1 == "TRANSPOSE" else b[-1], b[:-2]
    batch = math.prod(max(p, q) for p, q in zip(batch_a, batch_b))
    return int(batch * m * n * k)


def _einsum_macs(equation: str, shapes: Sequence[Sequence[int]]) -> int:
    """The naive cost of an einsum: the product of the sizes of all its distinct labels."""
    sizes: dict[str, int] = {}
    for labels, shape in zip("".join(equation.split()).split("->")[0].split(","), shapes):
        for label, size in zip(labels, shape):
            sizes[label] = max(sizes.get(label, 1), size)  # a size-1 dim broadcasts against the other
    return math.prod(sizes.values())


def _attention_macs(q: Sequence[int], k: Sequence[int], v: Sequence[int]) -> int:
    """Q Kᵀ then the scores times V: batch × query heads × queries × keys × (head size + value head size).

    Q is [b, d_q, s_q, h], K [b, d_kv, s_kv, h], V [b, d_kv, s_kv, h_v]; grouped key/value heads are shared,
    not multiplied fewer times.
    """
    return q[0] * q[1] * q[2] * k[2] * (q[3] + v[3])


def _convolution_macs(api: Any, data: Sequence[int]) -> int | None:
    """N × M × output positions × (C / groups) × kernel volume: each output element sums that many products."""
    sizes = _conv_output_sizes(api, data[2:])
    if sizes is None:
        return None
    groups = int(api.num_groups)
    return data[0] * int(api.num_output_maps) * math.prod(sizes) * (data[1] // groups) \
        * math.prod(_dims(api.kernel_size_nd))


def _deconvolution_macs(api: Any, data: Sequence[int]) -> int:
    """N × C × input positions × (M / groups) × kernel volume: each input element is scattered that many times
    (whatever the cropping keeps of the full output)."""
    maps_per_group = int(api.num_output_maps) // int(api.num_groups)
    return data[0] * data[1] * math.prod(data[2:]) * maps_per_group * math.prod(_dims(api.kernel_size_nd))


def _conv_output_sizes(api: Any, sizes: Sequence[int]) -> list[int] | None:
    """A convolution's output positions per spatial axis (None: it has none)."""
    window = Window(_dims(api.kernel_size_nd), _dims(api.stride_nd), _dims(api.dilation_nd), _dims(api.pre_padding),
                    _dims(api.post_padding), api.padding_mode.name)
    try:
        return conv_output_sizes(window, sizes)
    except NoWindows:
        return None


def _dims(value: Any) -> tuple[int, ...]:
    """A ``trt.Dims`` as a tuple."""
    return tuple(int(d) for d in value)


@dataclass(frozen=True)
class Product:
    """A TensorRT layer type that multiplies and accumulates."""

    kind: str  #: ``matmul`` or ``convolution``: the per-iteration count it adds to
    operands: int | None  #: how many leading inputs' shapes its count needs (None: all of them)
    count: Callable[[Any, Sequence[Sequence[int]]], int | None]  #: MACs from the layer and those shapes


#: Every layer type with MACs: the static count, :class:`MacCounter` and the per-kind counts read this alone.
PRODUCTS: dict[str, Product] = {
    "MATRIX_MULTIPLY": Product("matmul", 2, lambda api, s: _matmul_macs(s[0], s[1], api.op0.name, api.op1.name)),
    "EINSUM": Product("matmul", None, lambda api, s: _einsum_macs(str(api.equation), s)),
    "ATTENTION_INPUT": Product("matmul", 3, lambda api, s: _attention_macs(s[0], s[1], s[2])),  # IAttention
    "CONVOLUTION": Product("convolution", 1, lambda api, s: _convolution_macs(api, s[0])),
    "DECONVOLUTION": Product("convolution", 1, lambda api, s: _deconvolution_macs(api, s[0])),
}


class MacCounter:
    """A simulator observer (``Simulator(..., observer=counter)``) measuring each product's MACs as run.

    ``average[layer index]`` is the mean over the layer's executions, so shapes that only exist at
    run time (a dynamic batch, a growing cache) are counted as the inputs given made them.
    """

    def __init__(self) -> None:
        self._total: dict[int, int] = {}
        self._runs: dict[int, int] = {}

    def __call__(self, layer: Layer, args: Sequence[np.ndarray | None]) -> None:
        if layer.type in PRODUCTS:
            count = macs(layer, [None if a is None else np.shape(a) for a in args]) or 0
            self._total[layer.index] = self._total.get(layer.index, 0) + count
            self._runs[layer.index] = self._runs.get(layer.index, 0) + 1

    @property
    def average(self) -> dict[int, int]:
        return {i: round(total / self._runs[i]) for i, total in self._total.items()}


# -- reading a network ---------------------------------------------------------------------------

@gc_paused()
def describe_network(network: Any, measured_macs: dict[int, int] | None = None) -> NetworkInfo:
    """The loops of ``network`` (an ``INetworkDefinition`` or a read-back :class:`Network`).

    ``measured_macs`` (from :class:`MacCounter`) replaces static counts layer by layer.
    """
    net = network if isinstance(network, Network) else read_back(network)
    return _Reader(net, measured_macs or {}).read()


class _Reader:
    def __init__(self, net: Network, measured: dict[int, int]):
        self.net = net
        self.measured = measured
        # Keyed by the read-back objects, which hash by identity (dataclasses with eq=False); read_back makes
        # one per TensorRT layer, loop and conditional. TensorRT's binding objects are no keys: one that nobody
        # holds is made anew, under a new id, the next time it is fetched.
        self.in_loop: dict[NetworkLoop, list[Layer]] = {lp: [] for lp in net.loops}  # non-boundary layers by scope
        for lay in net.layers:
            scope = _scope(lay)
            if lay.type not in BOUNDARY and scope is not None:
                self.in_loop[scope].append(lay)
        self.children: dict[NetworkLoop, list[NetworkLoop]] = {lp: [] for lp in net.loops}  # loops directly inside each
        for lp in net.loops:
            if lp.parent is not None:
                self.children[lp.parent].append(lp)
        self.position = {lay: i for i, lay in enumerate(net.layers)}  # a topological order
        self.branch_of = self._conditional_members()
        self.constants = _constant_sources(net.layers)

    def read(self) -> NetworkInfo:
        loops = {lp: self._loop(lp) for lp in self.net.loops}
        conditionals = {key: ConditionalInfo(name, len(members)) for key, (name, members, _) in self._conds.items()}
        top: list[Node] = []
        for lp in self.net.loops:  # the network's loop order is TensorRT's layer order: deterministic
            parent = self._container(lp.outputs[0] if lp.outputs else None, lp.parent)
            self._attach(loops[lp], parent, loops, conditionals, top)
        for key, (_, _, output) in self._conds.items():
            parent = self._container(output, _scope(output) if output is not None else None, skip=key)
            self._attach(conditionals[key], parent, loops, conditionals, top)
        return NetworkInfo(len(self.net.layers), top)

    def _container(self, layer: Layer | None, loop: NetworkLoop | None,
                   skip: Conditional | None = None) -> tuple[str, Any]:
        """Where a loop or conditional whose output is ``layer`` sits: in the innermost conditional whose
        branches hold ``layer``, or in ``layer``'s loop, whichever of the two is inside the other."""
        owner = self.branch_of.get(layer) if layer is not None else None
        if owner == skip:
            owner = None
        if owner is not None and (loop is None or self._cond_scope(owner) is loop):
            return "if", owner  # the conditional sits in the loop (or there is no loop)
        return ("loop", loop) if loop is not None else ("top", None)

    def _cond_scope(self, key: Conditional) -> NetworkLoop | None:
        output = self._conds[key][2]
        return _scope(output) if output is not None else None

    @staticmethod
    def _attach(node: Node, parent: tuple[str, Any], loops: dict[NetworkLoop, LoopInfo],
                conditionals: dict[Conditional, ConditionalInfo], top: list[Node]) -> None:
        kind, key = parent
        (loops[key].children if kind == "loop" else conditionals[key].children if kind == "if" else top).append(node)

    def _conditional_members(self) -> dict[Layer, Conditional]:
        """For each layer in an if-conditional's branch, the innermost conditional it belongs to."""
        self._conds: dict[Conditional, tuple[str, list[Layer], Layer | None]] = {}
        by_cond: dict[Conditional, list[Layer]] = {}
        for lay in self.net.layers:
            if lay.conditional is not None:
                by_cond.setdefault(lay.conditional, []).append(lay)
        branches = {cond: self._branch(boundary) for cond, boundary in by_cond.items()}
        owner: dict[Layer, Conditional] = {}
        # walk the outermost first so that nested conditionals overwrite their parents' claim
        for cond, boundary in sorted(by_cond.items(), key=lambda kv: -len(branches[kv[0]])):
            members = branches[cond]  # a nested conditional's members are a subset of its parent's
            outputs = [lay for lay in boundary if lay.type == "CONDITIONAL_OUTPUT"]
            condition = next((lay for lay in boundary if lay.type == "CONDITION"), None)
            name = getattr(cond.api, "name", "") or (condition or boundary[0]).name
            self._conds[cond] = (name, members, outputs[0] if outputs else None)
            for lay in members:
                owner[lay] = cond
        return owner

    @staticmethod
    def _branch(boundary: list[Layer]) -> list[Layer]:
        """The layers between a conditional's inputs and its outputs (walking back from the outputs).

        Loops and conditionals nested in a branch are in it whole: their trip limits, back edges,
        conditions and the layers computing their inputs.
        """
        own = boundary[0].conditional
        seen: dict[Layer, None] = {}  # an ordered set
        expanded: set[NetworkLoop] = set()  # loops whose whole boundary is already on the stack: once per loop, not per layer
        stack = [lay for lay in boundary if lay.type == "CONDITIONAL_OUTPUT"]
        while stack:
            lay = stack.pop()
            if lay in seen:
                continue
            if lay.conditional is own and lay.type != "CONDITIONAL_OUTPUT":
                continue  # its own inputs and condition bound the branches
            if lay.conditional is not own:
                seen[lay] = None
            if lay.loop is not None:
                if lay.loop in expanded:
                    continue
                expanded.add(lay.loop)
            stack.extend(_feeders(lay))
        return list(seen)

    def _loop(self, lp: NetworkLoop) -> LoopInfo:
        body = self.in_loop[lp]
        products = [lay for lay in body if lay.type in PRODUCTS]
        counts = [self._macs(lay) for lay in products]
        kinds = [PRODUCTS[lay.type].kind for lay in products]
        return LoopInfo(
            lp.name,
            [kind for kind, lay in (("kCOUNT", lp.count), ("kWHILE", lp.while_)) if lay is not None],
            _constant_int(lp.count.inputs[0]) if lp.count is not None and lp.count.inputs[0] is not None else None,
            [IteratorInfo(it.name, int(it.api.axis), bool(it.api.reverse)) for it in lp.iterators],
            [RecurrenceInfo(rec.name, _source(rec.inputs[0]), _source(rec.inputs[1] if len(rec.inputs) > 1 else None),
                            list(rec.outputs[0].shape)) for rec in lp.recurrences],
            [OutputInfo(out.name, "k" + out.api.kind.name,
                        None if out.api.kind.name == "LAST_VALUE" else int(out.api.axis)) for out in lp.outputs],
            len(body),
            kinds.count("matmul"),
            None if None in counts else sum(c for c in counts if c is not None),
            self._critical_path(lp, body),
            convolutions_per_iteration=kinds.count("convolution"),
            weight_bytes_per_iteration=weight_bytes({source for lay in body for t in lay.inputs if t is not None
                                                     for source in self.constants.get(t, ())}),
        )

    def _macs(self, lay: Layer) -> int | None:
        if lay.index in self.measured:
            return self.measured[lay.index]
        return macs(lay, [None if t is None else t.shape for t in lay.inputs])

    def _critical_path(self, lp: NetworkLoop, body: list[Layer]) -> list[str]:
        """The longest chain of layers from a recurrence's value to a next value or the kWHILE input.

        A nested loop is one step (``loop NAME``), taken at its outputs, from everything it reads.
        One walk in topological order: each tensor keeps the length of its longest chain and a link
        to the chain it extends, so no chain is copied (copying made a long body quadratic).
        """
        best: dict[str, _Chain] = {rec.outputs[0].name: _Chain(0) for rec in lp.recurrences}
        reads = self._nested_reads(lp)
        nested_outputs = [out for c in self.children[lp] for out in c.outputs]
        for lay in sorted(body + nested_outputs, key=lambda lay: self.position[lay]):
            if lay.type == "LOOP_OUTPUT" and lay.loop is not None:
                inputs, step = reads[lay.loop], f"loop {lay.loop.name}"
            else:
                inputs, step = [t.name for t in lay.inputs if t is not None], lay.name
            longest = _longest(best.get(name) for name in inputs)
            if longest is not None:
                chain = _Chain(longest.length + 1, step, longest)
                for out in lay.outputs:
                    best[out.name] = chain
        ends = [rec.inputs[1].name for rec in lp.recurrences if len(rec.inputs) > 1 and rec.inputs[1] is not None]
        if lp.while_ is not None and lp.while_.inputs[0] is not None:
            ends.append(lp.while_.inputs[0].name)
        found = _longest(best.get(name) for name in ends)
        return found.steps() if found is not None else []

    def _nested_reads(self, lp: NetworkLoop) -> dict[NetworkLoop, list[str]]:
        """For each loop nested directly in ``lp``, the tensors of ``lp``'s scope it reads (at any depth)."""
        reads: dict[NetworkLoop, list[str]] = {}
        for child in self.children[lp]:
            reads[child] = sorted({t.name for lay in self._layers_within(child) for t in lay.inputs
                                       if t is not None and t.scope is lp})
        return reads

    def _layers_within(self, lp: NetworkLoop) -> Iter[Layer]:
        yield from self.in_loop[lp]
        yield from (lay for lay in lp.boundary() if lay.type != "LOOP_OUTPUT")
        for child in self.children[lp]:
            yield from self._layers_within(child)
            yield from child.outputs


@dataclass(frozen=True, eq=False, repr=False)  # a deep chain would recurse
class _Chain:
    """A chain of layer names as a linked list from its last step back (shared, never copied)."""

    length: int
    step: str | None = None
    before: _Chain | None = None

    def steps(self) -> list[str]:
        names: list[str] = []
        link: _Chain | None = self
        while link is not None and link.step is not None:
            names.append(link.step)
            link = link.before
        return names[::-1]


def _longest(chains: Iterable[_Chain | None]) -> _Chain | None:
    """The first of the longest ``chains`` (``None`` entries skipped), as ``max(..., key=len)`` picks."""
    found: _Chain | None = None
    for chain in chains:
        if chain is not None and (found is None or chain.length > found.length):
            found = chain
    return found


#: Bits per element of each TensorRT data type a constant may hold.
def loops_and_weights(network: Any) -> tuple[NetworkInfo, dict[str, int]]:
    """:func:`describe_network` and :func:`network_weight_bytes` of ``network``, read back once for both."""
    net = network if isinstance(network, Network) else read_back(network)
    return describe_network(net), network_weight_bytes(net)


def network_weight_bytes(network: Any) -> dict[str, int]:
    """Bytes of the constants of ``network`` (an ``INetworkDefinition`` or a read-back :class:`Network`) by
    TensorRT data type (``FLOAT``, ``HALF``, ``INT8``, ``FP8``, ``INT4``, ...), largest first."""
    net = network if isinstance(network, Network) else read_back(network)
    return weight_bytes(lay for lay in net.layers if lay.type == "CONSTANT")


def weight_bytes(constants: Iterable[Layer]) -> dict[str, int]:
    """Bytes of ``constants`` (``CONSTANT`` layers) by TensorRT data type, each as TensorRT holds it (packed types
    rounded up to whole bytes), largest first."""
    found: dict[str, int] = {}
    for lay in constants:
        kind = enum_name(lay.api.get_output(0).dtype)
        found[kind] = found.get(kind, 0) + held_bytes(kind, math.prod(lay.outputs[0].shape))
    return dict(sorted(found.items(), key=lambda item: (-item[1], item[0])))


def _constant_sources(layers: Sequence[Layer]) -> dict[Tensor, frozenset[Layer]]:
    """For each tensor computed from constants alone, outside every loop and conditional (a weight, or one
    transposed, reshaped or dequantized), the ``CONSTANT`` layers it comes from; ``layers`` in topological order."""
    found: dict[Tensor, frozenset[Layer]] = {}
    for lay in layers:
        if lay.type == "CONSTANT":
            sources = frozenset([lay])
        elif lay.type in BOUNDARY or lay.conditional is not None or any(out.scope is not None for out in lay.outputs):
            continue
        elif all(t is None or t in found for t in lay.inputs):
            sources = frozenset().union(*(found[t] for t in lay.inputs if t is not None))
        else:
            continue
        for out in lay.outputs:
            found[out] = sources
    return found


def _scope(layer: Layer) -> NetworkLoop | None:
    """The loop a layer's work happens in: its outputs' scope; a loop boundary layer's own loop; for a
    layer without outputs (a conditional's condition, an assertion), the innermost scope it reads."""
    if layer.outputs:
        return layer.outputs[0].scope
    if layer.loop is not None:
        return layer.loop
    scopes = [t.scope for t in layer.inputs if t is not None and t.scope is not None]
    return max(scopes, key=lambda lp: lp.depth, default=None)


def _feeders(layer: Layer) -> list[Layer]:
    """The layers ``layer`` needs to run; for a loop's boundary layer, everything the whole loop needs."""
    cond = layer.conditional
    if layer.loop is not None:
        needs = readers = layer.loop.boundary()
    else:
        needs = [cond.condition] if layer.type == "CONDITIONAL_OUTPUT" and cond and cond.condition else []
        readers = [layer]
    return needs + [t.producer for lay in readers for t in lay.inputs if t is not None and t.producer is not None]


def _source(tensor: Tensor | None) -> str:
    """Who gives a value: its layer's name, or the network input's."""
    if tensor is None:
        return "?"
    return tensor.producer.name if tensor.producer is not None else tensor.name


def _constant_int(tensor: Tensor) -> int | None:
    layer = tensor.producer
    if layer is None or layer.type != "CONSTANT":
        return None
    values = np.asarray(layer.api.weights).reshape(-1)
    return int(values[0]) if values.size == 1 else None

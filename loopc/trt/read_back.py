"""Read a TensorRT ``INetworkDefinition`` back through the TensorRT API: layers in data order, loops with scopes.

The compiler reads its network back once to assert TensorRT's loop rules and report on it; the simulator
(:mod:`loopc.sim.network`) runs what this reads.

Nothing here records what someone meant to build: every layer, attribute, weight and loop
comes from the network object itself. The one piece of analysis is *scope*: TensorRT infers
which loop each layer belongs to from the data flow, and so do we. A tensor belongs to the
innermost loop whose per-iteration values it depends on; anything else is loop-invariant and
is computed once, outside.
"""

from __future__ import annotations

import functools
import heapq
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from loopc.errors import NetworkReadError
from loopc.trt import enum_name, trt
from loopc.trt.dtypes import BY_NAME

_CLASS_NAMES = {
    "ELEMENTWISE": "IElementWiseLayer",
    "MATRIX_MULTIPLY": "IMatrixMultiplyLayer",
    "SOFTMAX": "ISoftMaxLayer",
    "TOPK": "ITopKLayer",
    "PARAMETRIC_RELU": "IParametricReLULayer",
    "CONDITION": "IConditionLayer",
    "CONDITIONAL_INPUT": "IIfConditionalInputLayer",
    "CONDITIONAL_OUTPUT": "IIfConditionalOutputLayer",
    "PLUGIN_V2": "IPluginV2Layer",
    "PLUGIN_V3": "IPluginV3Layer",
    "LRN": "ILRNLayer",
    "KV_CACHE_UPDATE": "IKVCacheUpdateLayer",
}


def downcast(layer: Any, name: str) -> Any:
    """Give ``layer`` the Python class of its type ``name`` so its attributes can be read.

    Read ``layer.type.name`` before calling: after the downcast, ``IActivationLayer.type`` is
    the activation kind, not the layer type.
    """
    cls = _layer_class(name)
    if cls is not None:
        layer.__class__ = cls
    return layer


@functools.cache
def _layer_class(name: str) -> type | None:
    """The Python class of layer type ``name`` (None for one the module has no class for)."""
    cls_name = _CLASS_NAMES.get(name) or "I" + "".join(p.capitalize() for p in name.split("_")) + "Layer"
    return getattr(trt(), cls_name, None)


@dataclass(eq=False)
class Tensor:
    name: str
    dtype: np.dtype[Any]
    shape: tuple[int, ...]
    producer: Layer | None = None
    scope: NetworkLoop | None = None


@dataclass(eq=False)
class Layer:
    index: int
    name: str
    type: str
    api: Any = field(repr=False)
    inputs: list[Tensor | None]
    outputs: list[Tensor]
    loop: NetworkLoop | None = None
    conditional: Conditional | None = None
    #: Set by the simulator (:mod:`loopc.sim.network`): what the layer's kernel reads when that is not its inputs
    #: (the operands of a fusion TensorRT's builder makes); None for its inputs.
    reads: list[Tensor | None] | None = None
    #: Set by the simulator: the layer's kernel when it is fixed as the network is read (a fusion's, a constant's
    #: recorded values).
    kernel: Any = field(default=None, repr=False)

    def describe(self) -> str:
        """The layer, and the user's node it comes from when the network recorded it (loopc's do, as metadata)."""
        origin = getattr(self.api, "metadata", "") or ""
        return f"layer {self.name!r} ({self.type})" + (f" of {origin}" if origin else "")


@dataclass(eq=False)
class NetworkLoop:
    """A TensorRT loop of the network (an ``ILoop``) with its boundary layers; not the IR's ``Loop``."""

    name: str
    api: Any = field(repr=False)
    count: Layer | None = None
    while_: Layer | None = None
    iterators: list[Layer] = field(default_factory=list)
    recurrences: list[Layer] = field(default_factory=list)
    outputs: list[Layer] = field(default_factory=list)
    parent: NetworkLoop | None = None
    depth: int = 0

    def boundary(self) -> list[Layer]:
        limits = [lay for lay in (self.count, self.while_) if lay is not None]
        return limits + self.iterators + self.recurrences + self.outputs


@dataclass(eq=False)
class Conditional:
    api: Any = field(repr=False)
    condition: Layer | None = None


@dataclass
class Network:
    """A read-back network: layers in a valid evaluation order, tensors by name, loops with scopes."""

    layers: list[Layer]
    tensors: dict[str, Tensor]
    inputs: list[Tensor]
    outputs: list[Tensor]
    loops: list[NetworkLoop]


def read_back(network: Any) -> Network:
    """Read ``network`` (an ``INetworkDefinition`` of either TensorRT module)."""
    tensors: dict[str, Tensor] = {}

    def tensor(api_tensor: Any) -> Tensor:
        name = api_tensor.name
        found = tensors.get(name)
        if found is None:
            try:
                shape = tuple(api_tensor.shape)
            except RuntimeError as exc:  # TensorRT could not infer it: the network is invalid
                raise NetworkReadError(f"TensorRT cannot compute the shape of tensor {name!r}: {exc}") from exc
            found = tensors[name] = Tensor(name, _numpy_type(api_tensor.dtype), shape)
        return found

    inputs = [tensor(network.get_input(i)) for i in range(network.num_inputs)]
    loops: list[NetworkLoop] = []
    conditionals: list[Conditional] = []
    layers: list[Layer] = []
    for index in range(network.num_layers):
        raw = network.get_layer(index)
        type_name = enum_name(raw.type)
        api = downcast(raw, type_name)
        read = [api.get_input(i) for i in range(api.num_inputs)]
        layer = Layer(
            index,
            api.name,
            type_name,
            api,
            [tensor(t) if t is not None else None for t in read],
            [tensor(api.get_output(i)) for i in range(api.num_outputs)],
        )
        for out in layer.outputs:
            if out.producer is not None:
                raise NetworkReadError(f"two layers produce a tensor named {out.name!r}; tensor names must be unique")
            out.producer = layer
        _attach_structure(layer, loops, conditionals)
        layers.append(layer)
    outputs = [tensors[network.get_output(i).name] for i in range(network.num_outputs)]
    for cond in conditionals:
        if cond.condition is None:
            raise NetworkReadError("an if-conditional has no condition layer")
    ordered = _topological_order(layers)
    _assign_scopes(ordered, loops)
    return Network(ordered, tensors, inputs, outputs, loops)


def _numpy_type(dtype: Any) -> np.dtype[Any]:
    name = enum_name(dtype)
    if name not in BY_NAME:
        raise NetworkReadError(f"TensorRT data type {name} has no NumPy equivalent")
    return BY_NAME[name].dtype


def _attach_structure(layer: Layer, loops: list[NetworkLoop], conditionals: list[Conditional]) -> None:
    """Group loop boundary layers by their ``ILoop`` and conditional layers by their ``IIfConditional``."""
    if layer.type in ("TRIP_LIMIT", "ITERATOR", "RECURRENCE", "LOOP_OUTPUT"):
        api_loop = layer.api.loop
        loop = next((lp for lp in loops if lp.api is api_loop), None)
        if loop is None:
            loop = NetworkLoop(api_loop.name, api_loop)
            loops.append(loop)
        layer.loop = loop
        if layer.type == "TRIP_LIMIT":
            slot = "count" if layer.api.kind.name == "COUNT" else "while_"
            if getattr(loop, slot) is not None:
                raise NetworkReadError(f"loop {loop.name!r} has two {layer.api.kind.name} trip limits")
            setattr(loop, slot, layer)
        else:
            {"ITERATOR": loop.iterators, "RECURRENCE": loop.recurrences, "LOOP_OUTPUT": loop.outputs}[
                layer.type
            ].append(layer)
    elif layer.type in ("CONDITION", "CONDITIONAL_INPUT", "CONDITIONAL_OUTPUT"):
        api_cond = layer.api.conditional
        cond = next((c for c in conditionals if c.api is api_cond), None)
        if cond is None:
            cond = Conditional(api_cond)
            conditionals.append(cond)
        layer.conditional = cond
        if layer.type == "CONDITION":
            cond.condition = layer


def _dependencies(layer: Layer) -> list[Tensor]:
    """Inputs that must exist before ``layer`` runs; a recurrence's next value is a back edge."""
    inputs = layer.inputs[:1] if layer.type == "RECURRENCE" else layer.inputs
    return [t for t in inputs if t is not None]


def _topological_order(layers: list[Layer]) -> list[Layer]:
    """Kahn's algorithm, preferring TensorRT's own layer order among the ready layers."""
    waiting = [0] * len(layers)
    consumers: list[list[int]] = [[] for _ in layers]
    position = {lay: i for i, lay in enumerate(layers)}
    for i, lay in enumerate(layers):
        for t in _dependencies(lay):
            if t.producer is not None:
                waiting[i] += 1
                consumers[position[t.producer]].append(i)
    ready = [i for i, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    order: list[Layer] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(layers[i])
        for user in consumers[i]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, user)
    if len(order) != len(layers):
        stuck = next(lay for i, lay in enumerate(layers) if waiting[i] > 0)
        raise NetworkReadError(f"the network has a cycle through {stuck.describe()} that is not a recurrence")
    return order


def _assign_scopes(layers: list[Layer], loops: list[NetworkLoop]) -> None:
    """Find each loop's parent and each tensor's innermost loop (see the module docstring).

    ``deps[t]`` is the set of loops whose iterations ``t`` varies with. It is a fixed point
    because a recurrence carries whatever its next value depends on, and a loop's outputs
    depend on everything its boundary reads (trip limits included), less the loop itself.
    An iterator or recurrence varies with its loop and with every loop that one depends on.
    """
    deps: dict[str, frozenset[NetworkLoop]] = {}
    loop_deps: dict[NetworkLoop, frozenset[NetworkLoop]] = {lp: frozenset() for lp in loops}
    changed = True
    while changed:
        changed = False
        for lp in loops:
            reads = frozenset().union(
                *(deps.get(t.name, frozenset()) for b in lp.boundary() for t in b.inputs if t is not None)
            )
            new = reads - {lp}
            if new != loop_deps[lp]:
                loop_deps[lp] = new
                changed = True
        for lay in layers:
            ins = frozenset().union(*(deps.get(t.name, frozenset()) for t in lay.inputs if t is not None))
            if lay.type in ("ITERATOR", "RECURRENCE") and lay.loop is not None:
                # a loop's iterations happen within each iteration of the loops it is nested in
                new = ins | {lay.loop} | loop_deps[lay.loop]
            elif lay.type == "LOOP_OUTPUT" and lay.loop is not None:
                new = loop_deps[lay.loop]
            elif lay.type == "TRIP_LIMIT":
                continue
            elif lay.type == "CONDITIONAL_OUTPUT" and lay.conditional is not None:
                cond = lay.conditional.condition
                new = ins | deps.get(cond.inputs[0].name, frozenset()) if cond and cond.inputs[0] else ins
            else:
                new = ins
            for out in lay.outputs:
                if deps.get(out.name) != new:
                    deps[out.name] = new
                    changed = True

    for lp in loops:
        lp.depth = len(loop_deps[lp])
    for lp in loops:
        lp.parent = _innermost(loop_deps[lp], loop_deps, f"loop {lp.name!r}")
    for lay in layers:
        for out in lay.outputs:
            out.scope = _innermost(deps.get(out.name, frozenset()), loop_deps, lay.describe())


def _innermost(
    loops: frozenset[NetworkLoop], loop_deps: dict[NetworkLoop, frozenset[NetworkLoop]], what: str
) -> NetworkLoop | None:
    if not loops:
        return None
    inner = max(loops, key=lambda lp: lp.depth)
    if loops != loop_deps[inner] | {inner}:
        names = sorted(lp.name for lp in loops)
        raise NetworkReadError(f"{what} uses values from loops {names} that are not cleanly nested")
    return inner

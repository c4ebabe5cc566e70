"""What converting one model needs, in one object: the network and the value → tensor map.

Nothing is global (the Torch-TensorRT habit): every converter receives a :class:`ConversionContext`
and builds layers through it, so the helpers below are the one place that knows TensorRT's
quirks — equal-rank broadcasting, weights that must outlive the build, no float64. Converters of
loops and conditionals convert their bodies with :meth:`ConversionContext.convert_graph`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import weakref
from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from loopc.backend.trt.registry import converter_for, node_error
from loopc.errors import BackendError, InternalError, LoopcError
from loopc.ir import Graph, Node, Value, constant_value
from loopc.trt import enum_name, trt
from loopc.trt.config import Session
from loopc.trt.dtypes import BY_DTYPE, BY_NAME, FOUR_BIT, HELD_QUANTIZED, QUANTIZE_ONLY
from loopc.trt.messages import captured

log = logging.getLogger(__name__)


#: Quantized types whose constants a DequantizeLinear makes itself (shifted, narrowed or packed as TensorRT holds
#: them, see :mod:`loopc.backend.trt.ops.quantize`): an array of one is made a tensor only where a layer reads it.
_DEFERRED = HELD_QUANTIZED | QUANTIZE_ONLY
#: The values of the FP8, INT4 and FP4 constants loopc made, by network and layer name: TensorRT's Python API takes
#: such a constant as raw bytes and gives them back to no one (a layer's ``weights`` is then opaque), so a reader
#: of the network (the simulator) finds them here, for as long as the network object lives.
_RECORDED: weakref.WeakKeyDictionary[Any, dict[str, np.ndarray]] = weakref.WeakKeyDictionary()
#: How TensorRT names a layer (and its outputs) that nobody named: never a name of ours.
_TRT_DEFAULT_NAME = "(Unnamed Layer* "
#: The longest name TensorRT takes (it refuses 4096 characters or more).
LONGEST_NAME = 4095
#: TensorRT derives longer names from a layer's name: the names loopc makes start with at most this much
#: of a node's or value's name (plus a suffix).
NAME_KEPT = 1024
#: Types TensorRT lacks, computed in the nearest type it has.
_NARROWED = {"float64": "float32", "int16": "int32", "uint16": "int32", "uint32": "int64"}


#: What a node converted without its own log capture is converted in.
_NOT_CAPTURED = contextlib.nullcontext()


class UnheardRefusal(Exception):
    """TensorRT refused a node while its log was not captured node by node: convert again, capturing it."""


def packed_nibbles(a: np.ndarray) -> np.ndarray:
    """A 4-bit array's elements (int4, uint4, fp4: one byte each in NumPy) as TensorRT takes them: two to a byte,
    the first in the low nibble (an odd count leaves the last high nibble 0)."""
    raw = a.reshape(-1).view(np.uint8)
    nibbles = np.concatenate([raw & 0xF, np.zeros(raw.size % 2, np.uint8)])
    return nibbles[0::2] | (nibbles[1::2] << 4)


def held_array(a: np.ndarray) -> np.ndarray:
    """``a`` as TensorRT's binding takes a constant's or a layer's weights, copied only where it must be: C-ordered, in
    a type TensorRT holds (float64 as float32), under NumPy's own dtype object. The binding refuses an equal dtype of
    another identity ("Could not implicitly convert NumPy data type: f32": an unpickled array's, or one read from a
    file with its pickled dtype), which a view gives NumPy's. A view of a part of a larger array is not copied either:
    the constant keeps that array alive, which the model holds anyway (its weights, read from the file)."""
    held = np.dtype(_NARROWED.get(a.dtype.name, a.dtype.name))
    if a.dtype != held or not a.flags.c_contiguous:
        return a.astype(held, order="C")  # 0-D stays 0-D
    return a if a.dtype is held else a.view(held)


def trt_dtype(dtype: np.dtype[Any] | Any) -> Any:
    """The TensorRT DataType for a NumPy dtype (float64 becomes float32: TensorRT has no doubles)."""
    return _trt_dtype(np.dtype(dtype))


@functools.cache
def _trt_dtype(dtype: np.dtype[Any]) -> Any:
    """:func:`trt_dtype`, once per dtype (a NumPy dtype's name is computed each time it is asked)."""
    held = BY_DTYPE.get(np.dtype(_NARROWED.get(dtype.name, dtype)))
    if held is None:
        raise BackendError(f"TensorRT has no data type for {dtype.name}")
    return getattr(trt().DataType, held.name)


def recorded_constants(network: Any) -> Mapping[str, np.ndarray]:
    """The values of ``network``'s FP8, INT4 and FP4 constants that loopc made, by layer name (none for a network
    made elsewhere)."""
    return _RECORDED.get(network, {})


def np_dtype(dtype: Any) -> np.dtype[Any]:
    """The NumPy dtype of a TensorRT DataType."""
    found = BY_NAME.get(enum_name(dtype))
    if found is None:
        raise BackendError(f"no NumPy dtype for TensorRT type {dtype}")
    return np.dtype(np.float32) if found.name == "BF16" else found.dtype


@dataclass
class ConversionContext:
    """The network being built and where each IR value's tensor is.

    ``tensors`` maps ``Value`` to its ITensor. Conditional branches push an *overlay* that
    redirects the outer values they read to the conditional's input tensors.
    """

    session: Session
    network: Any
    #: Capture TensorRT's log around each node, so that an error it logs names its node (see
    #: :func:`loopc.backend.trt.network.to_network`, which first builds without).
    per_node_messages: bool = True
    tensors: dict[Value, Any] = field(default_factory=dict)
    #: Output names fixed by the model: values with these names get exactly them.
    reserved: dict[Value, str] = field(default_factory=dict)
    #: Arrays known at conversion time whose values hold no data (shape ``[0]``, as ``Shape`` of a
    #: scalar): most readers fold them (a Concat leaves them out), so each is made a TensorRT tensor
    #: (an empty slice: constants cannot be empty) only where a layer reads it.
    empties: dict[Value, np.ndarray] = field(default_factory=dict)
    #: Arrays of the quantized types (see ``_DEFERRED``), made TensorRT tensors only where a layer reads them:
    #: a DequantizeLinear of one reads the values and makes the constant it needs.
    deferred: dict[Value, np.ndarray] = field(default_factory=dict)
    _overlays: list[dict[Value, Any]] = field(default_factory=list)
    #: Every tensor name the network has or will have: given by :meth:`set`, claimed (inputs),
    #: derived by TensorRT from a layer's name (``<layer>_output``), or reserved for an output.
    _names: set[str] = field(default_factory=set)
    #: Tensor names :meth:`set` gave (or :meth:`claim` took): such a tensor keeps its name.
    _assigned: set[str] = field(default_factory=set)
    #: Layer names (TensorRT refuses a second layer of the same name, keeping ``(Unnamed Layer* N)``).
    _layer_names: set[str] = field(default_factory=set)
    #: Each node's name in the network (``name.N`` for a name an earlier node had), by node id.
    _bases: dict[Node, str] = field(default_factory=dict)
    _base_names: set[str] = field(default_factory=set)
    #: Next suffix to try for a name, so that N equal names cost N steps, not N**2.
    _suffixes: dict[tuple[int, str], int] = field(default_factory=dict)
    _keep: list[np.ndarray] = field(default_factory=list)

    # -- nodes -------------------------------------------------------------------------------

    def convert_graph(self, graph: Graph) -> None:
        """Convert ``graph``'s nodes in order (their inputs are already bound): the network's own
        graph, a loop's body or a conditional's branch."""
        for node in graph.nodes:
            self.convert_node(node)

    def convert_node(self, node: Node) -> None:
        """Convert one node with its registered converter; TensorRT refusing it (an exception, or an
        error it only logged) names the node.

        TensorRT reports many refusals only in its log (a Reshape to another element count, a matrix
        product of scalars), and only when a shape is first asked for: later calls then fail with
        "Could not get tensor shape" far from the cause. So the shapes of the node's outputs are asked
        for right away, and any error logged while its layers were added is the node's error. (A loop's
        or conditional's own layers are checked by the nodes of its bodies, and outputs, as they come.)
        """
        convert = converter_for(node)
        errors: list[str] = []
        try:
            with captured(errors) if self.per_node_messages else _NOT_CAPTURED:
                convert(self, node)
                if not node.subgraphs():
                    for value in node.outputs:  # TensorRT infers shapes lazily: ask now, while the node is known
                        tensor = self._lookup(value)
                        if tensor is not None:
                            len(tensor.shape)
        except LoopcError:
            raise
        except (TypeError, ValueError, RuntimeError) as exc:  # TensorRT's API refused a call
            if not self.per_node_messages:
                raise UnheardRefusal from exc  # its reason is in the log, which this node did not capture
            reason = errors[0] if errors else str(exc)
            raise node_error(node, f"TensorRT rejected the {node.op} layer: {reason}") from exc
        if errors:
            raise node_error(node, f"TensorRT rejected the {node.op} layer: {errors[0]}")
        if log.isEnabledFor(logging.DEBUG):
            log.debug("converted %s", node.describe())

    # -- values ------------------------------------------------------------------------------

    def get(self, value: Value | None, node: Node | None = None) -> Any:
        """The tensor of ``value``; an IR value with no tensor yet is a bug in the walk."""
        if value is None:  # an optional input left out where the op needs it (the frontend checks arity)
            if node is None:
                raise BackendError("a required input is missing")
            raise node_error(node, "an input this op needs is missing", hint="give the node all its inputs")
        tensor = self._lookup(value)
        if tensor is None:
            if value in self.empties:  # made a tensor only where one is read (most readers fold it)
                tensor = self.constant(self.empties[value], node or value.name, "empty")
                self.set(value, tensor)
                return tensor
            if value in self.deferred:
                tensor = self.constant(self.deferred[value], value.producer or value.name, "")
                self.set(value, tensor)
                return tensor
            where = f"{node.describe()}: " if node else ""
            raise InternalError(f"{where}value {value.name!r} has no tensor (not converted yet)")
        return tensor

    def has(self, value: Value) -> bool:
        return self._lookup(value) is not None

    def _lookup(self, value: Value) -> Any:
        """The tensor bound to ``value`` (the innermost conditional branch's binding first), or None."""
        for overlay in reversed(self._overlays):
            if value in overlay:
                return overlay[value]
        return self.tensors.get(value)

    def set(self, value: Value, tensor: Any) -> None:
        """Bind ``value`` to ``tensor`` and give the tensor the value's name (unique in the network)."""
        target = self._overlays[-1] if self._overlays else self.tensors
        target[value] = tensor
        if tensor.name not in self._assigned:
            name = tensor.name = self.reserved.get(value) or self.unique(value.name)
            self._names.add(name)
            self._assigned.add(name)

    def reserve(self, outputs: dict[Value, str]) -> None:
        """Keep the model's output names (by value id) for those values: no other tensor gets them."""
        self.reserved = dict(outputs)
        self._names.update(outputs.values())

    def unique(self, base: str) -> str:
        """A tensor name no other tensor has: ``base``, else ``base.N`` for the first free N."""
        return self._fresh(base, self._names)

    def claim(self, name: str) -> None:
        """Take ``name`` for a tensor named outside :meth:`set` (a network input)."""
        self._names.add(name)
        self._assigned.add(name)

    def _fresh(self, base: str, taken: AbstractSet[str]) -> str:
        """``base``, else ``base.N`` for the first N not in ``taken`` (counting on from the last N given);
        a ``base`` longer than :data:`NAME_KEPT` keeps its start."""
        base = base[:NAME_KEPT]
        name = base
        if name in taken or name.startswith(_TRT_DEFAULT_NAME):
            key = (id(taken), base)  # a set of names: keyed by which set it is
            k = self._suffixes.get(key, 0)
            while True:
                k += 1
                name = f"{base}.{k}"
                if name not in taken:
                    break
            self._suffixes[key] = k
        return name

    @contextlib.contextmanager
    def overlay(self, bindings: dict[Value, Any]) -> Iterator[None]:
        """Within the block, ``get`` sees ``bindings`` first (conditional branches)."""
        self._overlays.append(dict(bindings))
        try:
            yield
        finally:
            self._overlays.pop()

    def constant_of(self, value: Value | None) -> np.ndarray | None:
        """The array of ``value`` when it is known now (attributes-as-inputs need it): a Constant
        node's, or an empty one bound by :meth:`set_array`."""
        if value is not None and value in self.empties:
            return self.empties[value]
        if value is not None and value in self.deferred:
            return self.deferred[value]
        found = constant_value(value)
        return None if found is None else np.asarray(found)

    def set_array(self, value: Value, array: np.ndarray, node: Node) -> None:
        """Bind ``value`` to a constant; an empty one is held as an array until read (see ``empties``)."""
        if array.size == 0:
            self.empties[value] = array
        elif array.dtype in _DEFERRED:
            self.deferred[value] = array
        else:
            self.set(value, self.constant(array, node, ""))

    # -- layers ------------------------------------------------------------------------------

    def named(self, layer: Any, node: Node | str, suffix: str = "") -> Any:
        """Name ``layer`` after its node (helper layers get ``node/suffix``), record the user's node it comes from as
        its metadata, and return it.

        Names are unique: a name already taken (equal node names, or a node named like another
        node's helper) gets ``.N``, the first free N, so the names are deterministic and each still
        starts with its node's name. The output names TensorRT derives from the layer's name are
        recorded, so no tensor named later collides with them; one that would take a model output's
        name is renamed.
        """
        base = node if isinstance(node, str) else self._base(node)
        name = self._fresh(f"{base}/{suffix}" if suffix else base, self._layer_names)
        layer.name = name
        if not isinstance(node, str) and node.origin:
            layer.metadata = node.origin  # the user's node, for errors (and TensorRT's profiler) to name
        self._layer_names.add(name)
        for i in range(layer.num_outputs):
            tensor = layer.get_output(i)
            tensor_name = tensor.name
            if tensor_name in self._assigned:
                continue
            if tensor_name in self._names:  # a name reserved for a model output, or taken meanwhile
                tensor_name = tensor.name = self.unique(f"{name}_output")
            self._names.add(tensor_name)
        return layer

    def name_loop(self, loop: Any, node: Node) -> None:
        """Name an ILoop or IIfConditional after its node, as its boundary layers are."""
        loop.name = self._base(node)

    def _base(self, node: Node) -> str:
        """The name ``node``'s layers start with: its own, or ``name.N`` if another node had it first."""
        found = self._bases.get(node)
        if found is None:
            found = self._bases[node] = self._fresh(node.name, self._base_names)
            self._base_names.add(found)
        return found

    def out(self, layer: Any, node: Node | str, suffix: str = "") -> Any:
        """Name ``layer`` and return its first output."""
        return self.named(layer, node, suffix).get_output(0)

    def constant(self, array: Any, node: Node | str, suffix: str = "const", dtype: Any = None) -> Any:
        """A constant tensor; the array is kept alive until the build (TensorRT does not copy it)."""
        a = held_array(np.asarray(array, dtype=dtype))
        if a.size == 0:  # TensorRT constants hold data, but a slice may be empty: zero rows of one
            one = self.constant(np.zeros([max(d, 1) for d in a.shape], a.dtype), node, f"{suffix}_one")
            layer = self.network.add_slice(one, [0] * a.ndim, a.shape, [1] * a.ndim)
            return self.out(layer, node, suffix)
        if a.dtype.name == "bfloat16":
            # TensorRT's Python API takes no bfloat16 array (and gives none back to read a network with):
            # the values, exact in float32, are a float32 constant cast to BF16
            wide = self.constant(a.astype(np.float32), node, suffix)
            return self.cast(wide, trt().bfloat16, node, f"{suffix}_bf16" if suffix else "bf16")
        if a.dtype.name in ("uint8", "uint4"):  # TensorRT holds no such weights, and uint8 only at the network's edges
            a = a.astype(np.int32)
        if a.dtype in QUANTIZE_ONLY:
            return self._raw_constant(a, node, suffix) if a.ndim else self._quantized_scalar(a, node, suffix)
        self._keep.append(a)
        return self.out(self.network.add_constant(a.shape, a), node, suffix)

    def _raw_constant(self, a: np.ndarray, node: Node | str, suffix: str) -> Any:
        """An FP8, INT4 or FP4 constant (which TensorRT lets only a Dequantize layer read): TensorRT's Python API
        takes no such array, only its bytes as ``Weights(type, pointer, count)`` (FP8 one byte each, 4-bit types two
        to a byte, the first in the low nibble); nor gives them back (a layer's ``weights`` is then opaque), so the
        values are recorded (:func:`recorded_constants`)."""
        raw = np.ascontiguousarray(packed_nibbles(a) if a.dtype in FOUR_BIT else a.reshape(-1).view(np.uint8))
        self._keep.append(raw)
        kind = trt_dtype(a.dtype)
        layer = self.named(self.network.add_constant(a.shape, trt().Weights(kind, raw.ctypes.data, a.size)), node,
                           suffix)
        _RECORDED.setdefault(self.network, {})[layer.name] = a
        return layer.get_output(0)

    def _quantized_scalar(self, a: np.ndarray, node: Node | str, suffix: str) -> Any:
        """A 0-D FP8, INT4 or FP4 constant: a quantized constant may feed only a Dequantize layer, which takes no
        0-D input, so the value (exact in float32) is a float32 [1] constant quantized with scale 1 (exact too),
        reshaped to 0-D."""
        wide = self.constant(a.astype(np.float32).reshape(1), node, suffix)
        one = self.constant(np.array(1.0, np.float32), node, f"{suffix}_unit" if suffix else "unit")
        to = trt_dtype(a.dtype)
        narrow = self.out(self.network.add_quantize(wide, one, to), node, f"{suffix}_q" if suffix else "q")
        return self.reshape(narrow, [], node, f"{suffix}_0d" if suffix else "0d")

    def weights(self, array: np.ndarray) -> Any:
        """``array`` as a layer's weights (kernel, bias); kept alive until the build, which reads it then."""
        a = held_array(np.asarray(array))
        self._keep.append(a)
        return trt().Weights(a)

    def scalar(self, value: Any, like: Any, node: Node | str, suffix: str = "scalar", rank: int | None = None) -> Any:
        """A constant with ``like``'s dtype, shaped [1]*rank for broadcasting against ``like``."""
        r = len(like.shape) if rank is None else rank
        return self.constant(np.full((1,) * r, value, dtype=BY_NAME[enum_name(like.dtype)].dtype), node, suffix)

    def cast(self, tensor: Any, dtype: Any, node: Node | str, suffix: str = "cast") -> Any:
        """``tensor`` as TensorRT type ``dtype`` (no layer when it already is)."""
        if tensor.dtype == dtype:
            return tensor
        return self.out(self.network.add_cast(tensor, dtype), node, suffix)

    def reshape(self, tensor: Any, dims: Sequence[int] | Any, node: Node | str, suffix: str = "reshape",
                zero_copies: bool = False) -> Any:
        """Shuffle to ``dims`` (a list of ints, or a 1-D shape tensor)."""
        layer = self.network.add_shuffle(tensor)
        if isinstance(dims, (list, tuple)):
            layer.reshape_dims = tuple(int(d) for d in dims)
        else:
            layer.set_input(1, dims)
        layer.zero_is_placeholder = zero_copies
        return self.out(layer, node, suffix)

    def unsqueeze(self, tensor: Any, axes: Sequence[int], node: Node | str, suffix: str = "unsqueeze") -> Any:
        """Insert unit axes (positions in the result); static shapes take a plain reshape."""
        shape = list(tensor.shape)
        rank = len(shape) + len(axes)
        axes = sorted(a % rank for a in axes)
        if -1 not in shape:
            for a in axes:
                shape.insert(a, 1)
            return self.reshape(tensor, shape, node, suffix)
        axes_t = self.constant(np.array(axes, np.int64), node, f"{suffix}_axes")
        return self.out(self.network.add_unsqueeze(tensor, axes_t), node, suffix)

    def squeeze(self, tensor: Any, axes: Sequence[int], node: Node | str, suffix: str = "squeeze") -> Any:
        rank = len(tensor.shape)
        axes = sorted(a % rank for a in axes)
        shape = list(tensor.shape)
        if -1 not in shape:
            return self.reshape(tensor, [d for i, d in enumerate(shape) if i not in axes], node, suffix)
        axes_t = self.constant(np.array(axes, np.int64), node, f"{suffix}_axes")
        return self.out(self.network.add_squeeze(tensor, axes_t), node, suffix)

    def to_rank(self, tensor: Any, rank: int, node: Node | str, suffix: str = "bcast") -> Any:
        """Prepend unit axes up to ``rank``: TensorRT broadcasts only between equal ranks."""
        missing = rank - len(tensor.shape)
        if missing <= 0:
            return tensor
        return self.unsqueeze(tensor, list(range(missing)), node, suffix)

    def broadcast(self, tensors: Sequence[Any], node: Node | str) -> list[Any]:
        """``tensors`` brought to one rank, NumPy style (leading unit axes)."""
        ranks = [len(t.shape) for t in tensors]  # each shape asked for once: TensorRT computes it anew
        rank = max(ranks)
        return [t if r == rank else self.unsqueeze(t, list(range(rank - r)), node, f"bcast{i}")
                for i, (t, r) in enumerate(zip(tensors, ranks))]

    def elementwise(self, a: Any, b: Any, op: str, node: Node | str, suffix: str = "") -> Any:
        """``a op b`` with equal-rank broadcasting; ``op`` is an ElementWiseOperation name."""
        a, b = self.broadcast([a, b], node)
        return self.out(self.network.add_elementwise(a, b, getattr(trt().ElementWiseOperation, op)), node, suffix)

    def unary(self, x: Any, op: str, node: Node | str, suffix: str = "") -> Any:
        return self.out(self.network.add_unary(x, getattr(trt().UnaryOperation, op)), node, suffix)

    # -- shapes ------------------------------------------------------------------------------

    def shape_of(self, tensor: Any, node: Node | str, suffix: str = "shape") -> Any:
        """``tensor``'s shape as a 1-D INT64 tensor: a constant when static, else an IShapeLayer."""
        shape = tuple(tensor.shape)
        if -1 not in shape:
            return self.constant(np.array(shape, np.int64), node, suffix)
        return self.out(self.network.add_shape(tensor), node, suffix)

    def gather1(self, vector: Any, indices: Sequence[int], node: Node | str, suffix: str = "pick") -> Any:
        """Entries ``indices`` of a 1-D tensor, as a 1-D tensor."""
        idx = self.constant(np.array(indices, np.int64), node, f"{suffix}_idx")
        return self.out(self.network.add_gather(vector, idx, 0), node, suffix)

    def concat(self, tensors: Sequence[Any], node: Node | str, suffix: str = "concat", axis: int = 0) -> Any:
        if len(tensors) == 1:
            return tensors[0]
        layer = self.network.add_concatenation(list(tensors))
        layer.axis = axis
        return self.out(layer, node, suffix)

    def scalar0d(self, tensor: Any, node: Node | str, suffix: str = "scalar") -> Any:
        """A one-element tensor as 0-D (trip limits, conditions and lengths must be 0-D)."""
        if len(tensor.shape) == 0:
            return tensor
        return self.reshape(tensor, [], node, suffix)

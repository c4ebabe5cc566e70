"""The model as the frontend analyses it: large tensors declared by name, type and dims, their data left behind.

ONNX's shape inference, checker and inliner take a whole ModelProto and serialize it (inference parses its answer
back too), and the frontend runs inference several times a model: with the weights inside, each run copied them
two or three times over. None of them reads a weight's values: inference reads the values only of the tensors that
hold shapes, axes, pads, scales and counts (a few elements each), and data propagation only of 0-D and 1-D int32 /
int64 tensors. So the frontend works on a *stripped* model, in which every other initializer and Constant value,
at every depth, is a stand-in: the same name, type and dims, no data, and a key to the tensor it stands for in
:class:`Weights` (onnx's checker, which wants the data a tensor's dims call for, is given stand-ins of no elements
instead: :func:`for_checker`). Where values are read (the tensor checks, the contrib expansions, translation into
the IR) the original is looked up, so each weight's data is read once, into its array, and the model as given is
never changed. A model read from a file has its stand-ins from the start, their bytes left in the file
(:mod:`.weight_file`).
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto

from loopc.frontend.onnx.tensors import check_span, check_tensor, read_span, to_array

#: Tensors of at most this many elements stay whole: every value ONNX's inference reads is in one of them.
KEEP_ELEMENTS = 64
#: What data propagation reads whatever their size (0-D and 1-D tensors of these types, as shapes).
_SHAPE_TYPES = frozenset({TensorProto.INT32, TensorProto.INT64})
#: The external_data key a stand-in names its original by (see :meth:`Weights.key`).
KEY = "loopc.weight"


@dataclass(frozen=True)
class Span:
    """A weight's bytes where they lie: ``length`` bytes at ``offset`` in file ``path`` (see :mod:`.weight_file`)."""

    path: str
    offset: int
    length: int


@dataclass
class Weights:
    """What a stripped model's stand-ins stand for: a tensor of the model as given, or bytes in its file."""

    sources: list[TensorProto | Span] = field(default_factory=list)
    #: Begins every key this object writes, so that a file cannot name another tensor's data with a key of its own.
    token: str = field(default_factory=lambda: secrets.token_hex(8))

    def key(self, index: int) -> str:
        """The key of ``sources[index]``, as a stand-in's :data:`KEY` entry holds it."""
        return f"{self.token}:{index}"

    def stand_in(self, tensor: TensorProto) -> TensorProto:
        """A tensor declaring what ``tensor`` declares, with no data and a key to ``tensor``."""
        made = TensorProto(name=tensor.name, data_type=tensor.data_type)
        made.dims.extend(tensor.dims)
        self.mark(made, tensor)
        return made

    def mark(self, header: TensorProto, source: TensorProto | Span) -> None:
        """Make ``header`` (a tensor holding no data) the stand-in of ``source``."""
        header.external_data.add(key=KEY, value=self.key(len(self.sources)))
        self.sources.append(source)

    def leave_in_file(self, tensor: TensorProto, path: str, offset: int, length: int) -> bool:
        """Make ``tensor`` (external data, checked) the stand-in of its bytes in ``path`` when it is large; whether
        it did (a small one is read into the model, where inference may read its values)."""
        if not large(tensor):
            return False
        tensor.data_location = TensorProto.DEFAULT
        del tensor.external_data[:]
        self.mark(tensor, Span(path, offset, length))
        return True

    def check(self, tensor: TensorProto, what: str) -> None:
        """:func:`~loopc.frontend.onnx.tensors.check_tensor` of what ``tensor`` holds or stands for."""
        source = self._source(tensor)
        if isinstance(source, Span):
            check_span(tensor, source.length, what)
        else:
            check_tensor(source, what)

    def array(self, tensor: TensorProto, what: str) -> np.ndarray:
        """The values ``tensor`` holds or stands for (read from the file for a :class:`Span`)."""
        source = self._source(tensor)
        if isinstance(source, Span):
            return read_span(tensor, source.path, source.offset, source.length, what)
        return to_array(source, what)

    def holds(self, tensor: TensorProto) -> bool:
        """Whether ``tensor`` is a stand-in of this object's (a key the file wrote itself names nothing)."""
        return self._source(tensor) is not tensor

    def _source(self, tensor: TensorProto) -> TensorProto | Span:
        mine = self.token + ":"
        key = next((e.value for e in tensor.external_data if e.key == KEY and e.value.startswith(mine)), None)
        return tensor if key is None else self.sources[int(key[len(mine):])]


def strip(proto: onnx.ModelProto, weights: Weights) -> onnx.ModelProto:
    """``proto`` with each of its large tensors (initializers and Constant values, at every depth) replaced by a
    stand-in recorded in ``weights``; ``proto`` itself when it holds none (stand-ins already made stay)."""
    if not any(large(t) and not weights.holds(t) for t in _tensors(proto.graph)):
        return proto
    stripped = onnx.ModelProto()
    _copy_fields(proto, stripped, skip={"graph"})
    _strip_graph(proto.graph, stripped.graph, weights)
    return stripped


def for_checker(proto: onnx.ModelProto, weights: Weights) -> onnx.ModelProto:
    """``proto`` with the stand-ins of ``weights`` declaring no elements (a copy; ``proto`` itself when it holds
    none): onnx's checker then finds no data missing, and reads no dims (it infers no shapes)."""
    if not any(weights.holds(t) for t in _tensors(proto.graph)):
        return proto
    empty = onnx.ModelProto()
    empty.CopyFrom(proto)
    for tensor in _tensors(empty.graph):
        if weights.holds(tensor):
            del tensor.dims[:]
            tensor.dims.append(0)
    return empty


def large(tensor: TensorProto) -> bool:
    """Whether ``tensor`` is a weight to leave out: more than a few elements, and not a shape data propagation
    may read (nor a string or a tensor with a negative dim, which the validator refuses from its original)."""
    dims = list(tensor.dims)
    if any(d < 0 for d in dims) or tensor.data_type in (TensorProto.STRING, TensorProto.UNDEFINED):
        return False
    if tensor.data_type in _SHAPE_TYPES and len(dims) <= 1:
        return False
    return math.prod(dims) > KEEP_ELEMENTS


def _tensors(graph: onnx.GraphProto) -> Any:
    """The tensors :func:`strip` may replace: initializers and Constant values, at every depth."""
    yield from graph.initializer
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == AttributeProto.TENSOR and node.op_type == "Constant" and attr.name == "value":
                yield attr.t
            elif attr.type == AttributeProto.GRAPH:
                yield from _tensors(attr.g)
            elif attr.type == AttributeProto.GRAPHS:
                for body in attr.graphs:
                    yield from _tensors(body)


def _strip_graph(source: onnx.GraphProto, target: onnx.GraphProto, weights: Weights) -> None:
    _copy_fields(source, target, skip={"node", "initializer"})
    target.initializer.extend(_stripped(t, weights) for t in source.initializer)
    for node in source.node:
        made = target.node.add()
        if not any(_holds(node, attr) for attr in node.attribute):
            made.CopyFrom(node)
            continue
        _copy_fields(node, made, skip={"attribute"})
        for attr in node.attribute:
            copy = made.attribute.add()
            if not _holds(node, attr):
                copy.CopyFrom(attr)
                continue
            _copy_fields(attr, copy, skip={"t", "g", "graphs"})
            if attr.type == AttributeProto.TENSOR:
                copy.t.CopyFrom(_stripped(attr.t, weights))
            for body, into in ([(attr.g, copy.g)] if attr.type == AttributeProto.GRAPH else
                               [(g, copy.graphs.add()) for g in attr.graphs]):
                _strip_graph(body, into, weights)


def _stripped(tensor: TensorProto, weights: Weights) -> TensorProto:
    return weights.stand_in(tensor) if large(tensor) and not weights.holds(tensor) else tensor


def _holds(node: onnx.NodeProto, attr: AttributeProto) -> bool:
    """Whether ``attr`` is a graph or a Constant's value (what :func:`_strip_graph` rewrites)."""
    return attr.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) or (
        attr.type == AttributeProto.TENSOR and node.op_type == "Constant" and attr.name == "value")


def _copy_fields(source: Any, target: Any, skip: set[str]) -> None:
    """Every field of message ``source`` but those in ``skip``, copied into ``target``."""
    for desc, value in source.ListFields():
        if desc.name in skip:
            continue
        if desc.is_repeated:
            getattr(target, desc.name).extend(value)
        elif desc.type == desc.TYPE_MESSAGE:
            getattr(target, desc.name).CopyFrom(value)
        else:
            setattr(target, desc.name, value)

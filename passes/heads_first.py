"""A QKV product's output split into heads after one Reshape and one Transpose, not before: its weight stored once.

Multi-head attention is usually exported as ``X [.., S, n·D]`` cut along its last axis into ``n`` equal parts
(a Split, or Slices that tile the axis), each part reshaped to ``[.., S, H, dh]`` and transposed to
``[.., H, S, dh]``. TensorRT-RTX folds those cuts and transposes into the product that makes ``X``, which
then reads its own copy of the weight with the column blocks reordered: once for the prompt's product and
once for the loop step's, so a decoder's QKV weight is stored twice (``benchmarks/weight_storage.py``
Part C, ``benchmarks/decoder_weights.py --heads-first``). The same values computed as
``Reshape(X, [.., S, n·H, dh])``, one Transpose and a Split of the heads axis into ``n`` parts of ``H``
leave the weight stored once. A part whose Transpose is another permutation (K read as ``[.., H, dh, S]``)
gets a second Transpose of its own for the rest of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loopc.ir import Graph, Node, Value, constant_value
from loopc.ir.builder import Builder
from loopc.passes._why import declined
from loopc.passes.manager import PassResult
from loopc.semantics.attributes import attr

#: The ops that cut X into its parts.
CUTS = ("Split", "Slice")


@dataclass(frozen=True)
class Heads:
    """X cut into parts and each part's Reshape and Transpose, in the parts' order along X's last axis."""

    x: Value
    cuts: list[Node]
    reshapes: list[Node]
    transposes: list[Node]
    shape: list[int]  # a part's Reshape target [.., S, H, dh]
    swap: list[int]  # the permutation swapping S and H


class HeadsFirst:
    name = "heads-first"

    def __call__(self, graph: Graph) -> PassResult:
        looked: set[Value] = set()
        rewritten = 0
        for _, node in list(graph.find(*CUTS)):
            x = node.inputs[0] if node.inputs else None
            if node.graph is None or x is None or x in looked:
                continue
            looked.add(x)
            if not _looks_like(x):
                continue
            heads = _heads(x, node)
            if heads is not None:
                _rewrite(heads)
                rewritten += 1
        return PassResult(graph, rewritten > 0, {"values": rewritten} if rewritten else {})


def _only_reader(value: Value, op: str) -> Node | None:
    """The one node reading ``value``, as its operand 0, when it is an ``op``."""
    uses = value.uses()
    if len(uses) != 1:
        return None
    user, slot = uses[0]
    return user if isinstance(user, Node) and user.op == op and slot == 0 else None


def _looks_like(x: Value) -> bool:
    """The quick check: X is cut, and some part of it is reshaped and then transposed."""
    for user, slot in x.uses():
        if not (isinstance(user, Node) and user.op in CUTS and slot == 0):
            continue
        for part in user.outputs:
            for reader, at in part.uses():
                if isinstance(reader, Node) and reader.op == "Reshape" and at == 0 and any(
                        isinstance(t, Node) and t.op == "Transpose" for t, _ in reader.outputs[0].uses()):
                    return True
    return False


def _heads(x: Value, first: Node) -> Heads | None:
    """X's cut into heads when it has the form this pass rewrites; else None, recording why at ``first``."""
    shape = x.shape
    if shape is None or len(shape) < 3 or not isinstance(shape[-1], int):
        return declined(f"{x.name!r} is of rank under 3 or its last dim is not static ({shape})", at=first)
    width = shape[-1]
    cut = _split_parts(x, width) if first.op == "Split" else _slice_parts(x, width)
    if isinstance(cut, str):
        return declined(f"{x.name!r} is not cut into equal parts along its last axis: {cut}", at=first)
    cuts, parts = cut
    graph = cuts[0].graph
    if any(c.graph is not graph for c in cuts):
        return declined(f"{x.name!r} is cut in more than one graph", at=first)
    reshapes, transposes = [], []
    for k, part in enumerate(parts):
        reshape = _only_reader(part, "Reshape")
        transpose = _only_reader(reshape.outputs[0], "Transpose") if reshape is not None else None
        if reshape is None or transpose is None:
            readers = ", ".join(_who(u) for u, _ in (reshape.outputs[0] if reshape is not None else part).uses())
            what = "its Reshape's result" if reshape is not None else "it"
            return declined(f"part {k} of {x.name!r} is not read only by a Reshape then a Transpose: {what} is read "
                            f"by {readers or 'nothing'}", at=first)
        if reshape.graph is not graph or transpose.graph is not graph:
            return declined(f"part {k} of {x.name!r} is reshaped or transposed in another graph", at=first)
        reshapes.append(reshape)
        transposes.append(transpose)
    target = _target(x, width // len(parts), reshapes)
    if isinstance(target, str):
        return declined(f"the parts of {x.name!r} are not reshaped to [.., S, H, dh]: {target}", at=reshapes[0])
    rank = len(shape) + 1
    swap = list(range(rank))
    swap[rank - 3], swap[rank - 2] = swap[rank - 2], swap[rank - 3]
    if all(_perm(t, rank) != swap for t in transposes):
        return declined(f"no part of {x.name!r} is transposed to [.., H, S, dh] (perm {swap})", at=transposes[0])
    return Heads(x, cuts, reshapes, transposes, target, swap)


def _who(user: Node | Graph) -> str:
    return user.describe() if isinstance(user, Node) else f"graph {user.name!r} (as an output)"


def _ints(value: Value | None) -> list[int] | None:
    array = constant_value(value)
    return None if array is None else [int(v) for v in np.asarray(array).reshape(-1)]


def _split_parts(x: Value, width: int) -> tuple[list[Node], list[Value]] | str:
    """The Split that is X's only reader (X ``width`` wide), and its parts; else why not."""
    assert x.shape is not None
    uses = x.uses()
    split = uses[0][0]
    if len(uses) != 1 or not isinstance(split, Node) or split.op != "Split":
        return f"read by {', '.join(_who(u) for u, _ in uses)}, not by one Split only"
    rank, count = len(x.shape), len(split.outputs)
    if int(attr(split, "axis")) % rank != rank - 1:
        return f"{split.describe()} splits axis {attr(split, 'axis')}"
    sizes = _ints(split.input(1)) if "split" not in split.attrs else [int(s) for s in split.attrs["split"]]
    if sizes is None and split.input(1) is not None:
        return f"{split.describe()}'s sizes are not a constant"
    if sizes is None:
        sizes = [width // count] * count if width % count == 0 else [-1]
    if count < 2 or len(set(sizes)) != 1 or sum(sizes) != width or len(sizes) != count:
        return f"{split.describe()} cuts it into {sizes}"
    return [split], list(split.outputs)


def _slice_parts(x: Value, width: int) -> tuple[list[Node], list[Value]] | str:
    """The Slices that are X's only readers and tile its last axis (``width`` long) in equal parts, in order;
    else why not."""
    assert x.shape is not None
    rank = len(x.shape)
    spans: list[tuple[int, int, Node]] = []
    for user, slot in x.uses():
        if not (isinstance(user, Node) and user.op == "Slice" and slot == 0):
            return f"{_who(user)} reads it too"
        bounds = [_ints(user.input(k)) for k in range(1, 5)]
        starts, ends, axes, steps = bounds
        if starts is None or ends is None or (user.input(3) is not None and axes is None) or (
                user.input(4) is not None and steps is None):
            return f"{user.describe()}'s bounds are not constants"
        if axes is None or [a % rank for a in axes] != [rank - 1] or steps not in (None, [1]):
            return f"{user.describe()} slices more than its last axis, or with a step"
        start, end = (min(max(v + width if v < 0 else v, 0), width) for v in (starts[0], ends[0]))
        spans.append((start, end, user))
    spans.sort(key=lambda s: s[:2])
    widths = {end - start for start, end, _ in spans}
    tiled = all(a[1] == b[0] for a, b in zip(spans, spans[1:])) and spans[0][0] == 0 and spans[-1][1] == width
    if len(spans) < 2 or len(widths) != 1 or not tiled:
        return f"its Slices take {[s[:2] for s in spans]} of {width}"
    return [s[2] for s in spans], [s[2].outputs[0] for s in spans]


def _target(x: Value, width: int, reshapes: list[Node]) -> list[int] | str:
    """The shape every part (``width`` wide) is reshaped to, ``[.., S, H, dh]`` with the leading dims kept; else
    why not."""
    assert x.shape is not None
    rank = len(x.shape)
    shapes = [_ints(r.input(1)) for r in reshapes]
    shape = shapes[0]
    if shape is None or any(s != shape for s in shapes):
        return "their shapes are not one constant"
    if len(shape) != rank + 1 or shape[-1] <= 0 or shape[-2] <= 0 or shape[-1] * shape[-2] != width:
        return f"{shape} does not split the last axis ({width}) in two"
    zero_copies = not int(attr(reshapes[0], "allowzero"))
    kept = [v == -1 or (v == 0 and zero_copies) or v == x.shape[k] for k, v in enumerate(shape[:-2])]
    if not all(kept) or shape[:-2].count(-1) > 1:
        return f"{shape} does not keep the dims before the last ({x.shape[:-1]})"
    return shape


def _perm(transpose: Node, rank: int) -> list[int]:
    given = transpose.attrs.get("perm")
    return [int(p) for p in given] if given is not None else list(reversed(range(rank)))


def _rewrite(heads: Heads) -> None:
    """Reshape X to all heads, transpose once, split the heads axis; each part's Transpose result replaced."""
    graph = heads.cuts[0].graph
    assert graph is not None
    cuts = set(heads.cuts)
    anchor = next(node for node in graph.nodes if node in cuts)  # the first: every reader of a part is after it
    x, count = heads.x, len(heads.transposes)
    made: list[Node] = []
    b = Builder(graph, made, origin=anchor.origin)
    shape = [*heads.shape[:-2], count * heads.shape[-2], heads.shape[-1]]
    whole = b.op("Reshape", [x, b.const(np.array(shape, np.int64), name=f"{x.name}_heads_shape")],
                 {"allowzero": int(attr(heads.reshapes[0], "allowzero"))}, name=f"{x.name}_heads", dtype=x.dtype)
    moved = b.op("Transpose", [whole], {"perm": heads.swap}, name=f"{x.name}_heads_t", dtype=x.dtype)
    sizes = b.const(np.full(count, heads.shape[-2], np.int64), name=f"{x.name}_heads_sizes")
    olds = [t.outputs[0] for t in heads.transposes]
    rest = [_perm(t, len(heads.swap)) for t in heads.transposes]
    parts = [Value(f"{old.name}_hf" if perm == heads.swap else f"{old.name}_hf_heads", x.dtype,
                   old.shape if perm == heads.swap else None) for old, perm in zip(olds, rest)]
    b.node("Split", [moved, sizes], parts, {"axis": len(heads.shape) - 3})
    news = []
    for part, old, perm, transpose in zip(parts, olds, rest, heads.transposes):
        if perm == heads.swap:
            news.append(part)
            continue
        then = [heads.swap[p] for p in perm]  # the swap is its own inverse
        news.append(b.standing_for(transpose).op("Transpose", [part], {"perm": then}, name=f"{old.name}_hf",
                                                 dtype=old.dtype, shape=old.shape))
    graph.insert_before(anchor, made)
    for old, new in zip(olds, news):
        old.replace_all_uses_with(new)
    spent = [c for node in [*heads.transposes, *heads.reshapes, *heads.cuts] for c in node.inputs[1:] if c is not None]
    for node in [*heads.transposes, *heads.reshapes, *heads.cuts]:
        graph.remove(node)
    for value in spent:
        producer = value.producer
        if producer is not None and producer.op == "Constant" and producer.graph is not None and not value.is_used():
            producer.graph.remove(producer)

"""One padder: a value whose length along some axes changes between trips, held as a buffer of a fixed length
beside its valid lengths, and one table saying how each op reads such a value (XLA's dynamic padder).

TensorRT's builder cannot build a loop layer whose shape changes between trips. A value that grows on every trip
(``passes.grown_buffers``) or is resized to a size each trip computes (``passes.bounded_resize``) is held instead
as a :class:`Padded` value: a buffer as long as the value can become, and per padded axis its valid length
(positions at and past it are padding). Every node that reads a padded value is rewritten by its op's rule in
:data:`RULES`; a rule that does not apply declines with a reason (:func:`~loopc.passes._why.declined`), and the
reader is then refused as a whole. The rules:

* elementwise ops (by :func:`~loopc.ir.ops.traits`) carry the padding of operands padded alike;
* movement: Unsqueeze, Squeeze, Transpose, a Gather or Slice of other axes, a Concat along another axis of
  values padded alike (per-layer caches stacked again) carry it;
* a reduction, Softmax, ArgMax or ArgMin over a padded axis reads the op's identity there (``pad_identity``
  in :mod:`loopc.ir.ops`: 0 for a sum, -inf for a max or a softmax; ReduceMean divides by the valid length);
* a MatMul with padded rows or columns gives padded rows or columns; one contracting over the padded axis of
  both operands zeroes their padding and gives an unpadded product;
* ``Shape`` gives the valid lengths; a Gather of positions along a padded axis reads them (a negative one
  counting from the valid end); a Slice of one padded axis reads rows whose count is the same in every run;
  a Reshape keeping the padded axis and those before it (splitting heads) reshapes the buffer; one flattening
  padded trailing axes for one ArgMax/ArgMin maps the flat index back;
* ``Range(0, length)`` of a valid length (a causal mask's keys) is the buffer's positions, and a Slice whose
  bounds are a valid length plus constants (a positional table read at the cache length) is a Gather;
* a Concat growing a carried cache writes its piece at the valid length, and per-layer caches stacked again
  become one write into the stacked buffer (the user of the padder owns caches: :meth:`Padder.append`,
  :meth:`Padder.restack`);
* an If whose branches yield one buffer's views yields the buffer and the valid length from both.

A :class:`Padder` holds one rewrite on the side: nothing is in a graph until :meth:`Padder.finish`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from loopc.ir import Graph, If, Node, Value, constant_int, constant_value
from loopc.ir.builder import I64, Builder
from loopc.ir.core import Shape
from loopc.ir.ops import traits
from loopc.passes._resample import tensor_type
from loopc.passes._util import TO_THE_END, listed_axes, same_dim, shape_entry_source
from loopc.passes._why import declined
from loopc.passes.shape_refinement import refine_node
from loopc.semantics.attributes import attr

BOOL = np.dtype(np.bool_)
Done = Literal[True]
DONE: Done = True


@dataclass(frozen=True)
class Pad:
    """One padded axis: the buffer's ``positions`` (0, 1, ...) along ``axis``, valid below ``length`` (an int64
    scalar); ``least``: a length the valid one is known to reach in every run."""

    axis: int
    length: Value
    positions: Value
    least: int = 0


@dataclass(frozen=True)
class Padded:
    """A value's stand-in: ``value`` agrees with it below each pad's length; ``zero``: the padding holds exact
    zeros."""

    value: Value
    pads: tuple[Pad, ...]
    zero: bool = False

    @staticmethod
    def along(value: Value, axis: int, length: Value, positions: Value, zero: bool = False,
              least: int = 0) -> Padded:
        return Padded(value, (Pad(axis, length, positions, least),), zero)

    @property
    def pad(self) -> Pad:
        return self.pads[0]

    @property
    def axis(self) -> int:
        return self.pads[0].axis

    @property
    def length(self) -> Value:
        return self.pads[0].length

    @property
    def positions(self) -> Value:
        return self.pads[0].positions

    @property
    def least(self) -> int:
        return self.pads[0].least

    def like(self, value: Value, axis: int, zero: bool = False) -> Padded:
        """Another value padded as this one (of one pad) is, along ``axis``."""
        return Padded(value, (replace(self.pad, axis=axis),), zero)

    def moved(self, value: Value, to: Callable[[int], int], zero: bool = False) -> Padded:
        """Another value padded as this one is, each padded axis ``a`` now at ``to(a)``."""
        return Padded(value, tuple(replace(p, axis=to(p.axis)) for p in self.pads), zero)

    def padded_at(self, axis: int) -> Pad | None:
        return next((p for p in self.pads if p.axis == axis), None)


class Refused(Exception):
    """A read of a padded value with no rule (the message names the reader and why)."""


#: A rule rewrites a node reading padded values into the builder, or declines (None) through
#: :meth:`Padder.cannot`.
Rule = Callable[["Padder", Builder, Node], "Done | None"]


@dataclass
class Padder:
    """One rewrite of the readers of padded values, made on the side. ``subject`` says what the padded values
    are, for messages. Subclasses own carried caches (:meth:`cache_of`, :meth:`append`)."""

    subject: str
    views: dict[Value, Padded] = field(default_factory=dict)
    #: new nodes, each list to go before its anchor node
    batches: list[tuple[Node, list[Node]]] = field(default_factory=list)
    replaced: dict[Value, Value] = field(default_factory=dict)
    #: unpadded values whose dims the rewrite made known
    learned: set[Value] = field(default_factory=set)
    #: the small integer values known so far (dims read by ``Shape``), for refining the readers below a rewrite
    known: dict[Value, np.ndarray] = field(default_factory=dict)
    dead: list[Node] = field(default_factory=list)
    masks: dict[tuple[Value, int, int], Value] = field(default_factory=dict)
    #: shape vectors (unpadded) whose entry ``view.axis`` is a view's valid length, and scalars that are one
    shapes: dict[Value, Padded] = field(default_factory=dict)
    lengths: dict[Value, Padded] = field(default_factory=dict)
    #: values that are a valid length plus a constant
    offsets: dict[Value, tuple[Value, int]] = field(default_factory=dict)
    sums: dict[tuple[Value, int, Graph], Value] = field(default_factory=dict)
    #: (If, result slot, the views its branches yield there, the buffer and length results it gets)
    conditionals: list[tuple[If, int, list[Padded], Value, Value]] = field(default_factory=list)
    why: str = ""

    # ------------------------------------------------------------------ declining

    def cannot(self, node: Node, why: str = "") -> None:
        """Decline the rewrite of ``node``: records the reason; returns None."""
        what = f"loopc has no rule for a {node.op} of {self.subject}"
        self.why = (f"{node.describe()} reads {self.subject} ({what}{': ' + why if why else ''}); "
                    "a TensorRT loop carries values of one shape")
        return declined(self.why, at=node)

    def refuse(self, node: Node, why: str = "") -> Refused:
        self.cannot(node, why)
        return Refused(self.why)

    # ------------------------------------------------------------------ walking

    def rewrite_graph(self, graph: Graph, nodes: list[Node] | None = None) -> None:
        """Rewrite every node of ``graph`` (or ``nodes`` of it) that reads a padded value, in order."""
        for node in list(graph.nodes) if nodes is None else nodes:
            if isinstance(node, If):
                self.conditional(node)
                continue
            if not any(v in self.views for v in node.inputs if v is not None):
                if not node.subgraphs() and refine_node(node, self.known):
                    self.learned.update(node.outputs)
                self.follow_length(node)
                continue
            if node.subgraphs():
                raise Refused(f"{node.describe()} reads {self.subject} inside a nested graph")
            if rule_for(node)(self, self.builder(node), node) is None:
                raise Refused(self.why)
            if node not in self.dead:
                self.dead.append(node)

    def builder(self, node: Node) -> Builder:
        """A builder of nodes to go just before ``node``, in its graph."""
        assert node.graph is not None
        b = Builder(node.graph, []).standing_for(node)
        assert b.nodes is not None
        self.batches.append((node, b.nodes))
        return b

    def conditional(self, node: If) -> None:
        """An If: its branches are rewritten, and a result they yield padded views of one buffer for becomes a
        padded view itself, the If yielding the buffer and the valid length (a ``break`` that skips the step
        yields the cache as it was; the other branch, grown)."""
        for branch in node.subgraphs():
            self.rewrite_graph(branch)
        for slot, out in enumerate(node.outputs):
            yielded = [self.views.get(branch.outputs[slot]) for branch in node.subgraphs()]
            if all(view is None for view in yielded):
                continue
            views = [view for view in yielded if view is not None]
            first = views[0]
            if len(views) != len(yielded) or any(len(v.pads) != 1 or v.positions is not first.positions
                                                 or v.axis != first.axis for v in views):
                raise self.refuse(node, f"its branches yield {out.name!r} padded in one and not the other")
            assert node.graph is not None
            body = Builder(node.graph)
            buffer = body.value(f"{out.name}_buffer", out.dtype, dim_unknown(out.shape, first.axis))
            length = body.value(f"{out.name}_length", I64, ())
            self.conditionals.append((node, slot, views, buffer, length))
            self.views[out] = Padded.along(buffer, first.axis, length, first.positions, all(v.zero for v in views),
                                           min(v.least for v in views))

    def follow_length(self, node: Node) -> None:
        """Track a valid length read from a padded value's shape (``Shape(x)[axis]``, cast or not) to a
        ``Range(0, length)`` numbering the valid positions (a causal mask's keys), which becomes the padded
        value's positions so the mask lines up with it; and the length plus constants to a Slice whose bounds
        they are (a positional table read at the cache length)."""
        first = node.inputs[0] if node.inputs else None
        self.follow_offset(node)
        if node.op == "Gather" and first in self.shapes:
            view = self.shapes[first]
            at, index = constant_int(node.inputs[1]), node.inputs[1]
            rank = first.shape[0] if first.shape else None
            if at is not None and index is not None and index.shape == () and isinstance(rank, int) \
                    and at % rank == view.axis:
                self.lengths[node.outputs[0]] = view
                self.offsets[node.outputs[0]] = (view.length, 0)
        elif node.op == "Slice" and first in self.shapes and first.shape \
                and _single_entry(node, first.shape[0]) == self.shapes[first].axis:  # Shape(x)[-1:] of a length
            view = self.shapes[first]
            self.lengths[node.outputs[0]] = view
            self.offsets[node.outputs[0]] = (view.length, 0)
        elif node.op in ("Cast", "Squeeze") and first in self.lengths:
            self.lengths[node.outputs[0]] = self.lengths[first]
        elif node.op == "Add" and any(v in self.lengths for v in node.inputs):
            view = next(self.lengths[v] for v in node.inputs if v in self.lengths)
            more = [constant_int(v) for v in node.inputs if v not in self.lengths]
            if len(more) == 1 and more[0] is not None:  # the length a write of ``more`` rows will give
                grown = replace(view.pad, length=self.plus(self.builder(node), view.length, more[0]))
                self.lengths[node.outputs[0]] = Padded(view.value, (grown,), view.zero)
        elif node.op == "Range" and node.inputs[1] in self.lengths:
            view, out = self.lengths[node.inputs[1]], node.outputs[0]
            if _number(node.inputs[0]) != 0 or _number(node.inputs[2]) != 1:
                raise self.refuse(node, "it does not number the valid positions from 0 in steps of 1")
            b = self.builder(node)
            assert out.dtype is not None
            positions = view.positions
            if out.dtype != positions.dtype:
                positions = b.op("Cast", [positions], {"to": tensor_type(out.dtype)}, name=f"{out.name}_positions",
                                 dtype=out.dtype, shape=positions.shape)
            self.views[out] = view.like(positions, 0)
            self.dead.append(node)
        elif node.op == "Slice" and any(v in self.offsets for v in node.inputs[1:3] if v is not None):
            if _slice_at_length(self, self.builder(node), node) is None:
                raise Refused(self.why)
            self.dead.append(node)

    def follow_offset(self, node: Node) -> None:
        """A valid length plus a constant, through casts, one-element reshapes, Add and Sub of constants."""
        first = node.inputs[0] if node.inputs else None
        out = node.outputs[0] if node.outputs else None
        if out is None or first is None:
            return
        if node.op in ("Cast", "Unsqueeze", "Reshape", "Squeeze", "Identity") and first in self.offsets \
                and out.shape in ((), (1,)) and (out.dtype is None or out.dtype.kind in "iu"):
            self.offsets[out] = self.offsets[first]
        elif node.op in ("Add", "Sub") and len(node.inputs) == 2:
            other = node.inputs[1] if first in self.offsets else first
            base = first if first in self.offsets else node.inputs[1]
            more = constant_int(other)
            if base in self.offsets and more is not None and (node.op == "Add" or base is first):
                length, by = self.offsets[base]
                self.offsets[out] = (length, by + (more if node.op == "Add" else -more))

    # ------------------------------------------------------------------ helpers for rules

    def plus(self, b: Builder, length: Value, rows: int) -> Value:
        """``length + rows``, one value per graph: a write's new length and a mask made from the old length plus
        the rows to come are then the same value, which is how padded values are matched."""
        key = (length, rows, b.graph)
        if key not in self.sums:
            self.sums[key] = b.op("Add", [length, b.const(np.array(rows, np.int64), name=f"{length.name}_plus_{rows}")],
                                  name=f"{length.name}_plus_{rows}_rows")
        return self.sums[key]

    def replace(self, old: Value, new: Value) -> None:
        """``old`` (unpadded) is ``new`` from now on; what ``new``'s type says beyond ``old``'s is true of
        ``old`` too, and flows on to the readers that :meth:`rewrite_graph` refines."""
        self.replaced[old] = new
        if new.shape is not None and old.shape is not None and len(new.shape) == len(old.shape):
            known = tuple(d if isinstance(d, int) else n for d, n in zip(old.shape, new.shape))
            if known != old.shape:
                old.shape = known
                self.learned.add(old)

    def mask(self, b: Builder, view: Padded, rank: int, pad: Pad | None = None) -> Value:
        """True at the valid positions of ``pad`` (every pad of ``view`` when None), shaped to broadcast against
        a value of ``rank``."""
        made: Value | None = None
        for p in (view.pads if pad is None else (pad,)):
            key = (p.length, p.axis, rank)
            if key not in self.masks:
                name = view.value.name if len(view.pads) == 1 else f"{view.value.name}_{p.axis}"
                valid = b.op("Less", [p.positions, p.length], name=f"{name}_valid")
                self.masks[key] = along(b, valid, p.axis, rank, f"{name}_valid_mask")
            made = self.masks[key] if made is None else b.op("And", [made, self.masks[key]],
                                                             name=f"{view.value.name}_valid_{p.axis}", dtype=BOOL)
        assert made is not None
        return made

    def zeroed(self, b: Builder, view: Padded, rank: int) -> Value:
        if view.zero:
            return view.value
        zero = b.const(np.zeros((), view.value.dtype), name=f"{view.value.name}_zero")
        return b.op("Where", [self.mask(b, view, rank), view.value, zero], name=f"{view.value.name}_zeroed",
                    dtype=view.value.dtype)

    def cache_of(self, view: Padded) -> object | None:
        """The carried cache ``view`` is the state of (or a reordering of), None when there is none."""
        return None

    def append(self, b: Builder, node: Node, cache: object, view: Padded, piece: Value) -> Padded | None:
        """``piece`` written into ``view`` (of ``cache``) at its valid length; None (declined) when it cannot."""
        return self.cannot(node, "it grows a value that is not a carried cache")

    def restack(self, b: Builder, node: Node) -> Padded | None:
        """``node``, a Concat of a carried cache's layers each grown by a write, as one write into the cache;
        None when it is not one."""
        return None

    # ------------------------------------------------------------------ finishing

    def finish(self) -> None:
        """Put the new nodes in place, the replacements in use and the conditionals' new results in."""
        for anchor, nodes in self.batches:
            assert anchor.graph is not None
            anchor.graph.insert_before(anchor, nodes)
        for conditional, slot, yielded, padded, valid in self.conditionals:
            for branch, view in zip(conditional.subgraphs(), yielded):
                branch.set_outputs([*branch.outputs[:slot], view.value, *branch.outputs[slot + 1:], view.length])
            conditional.set_outputs([*conditional.outputs[:slot], padded, *conditional.outputs[slot + 1:], valid])

    def replace_and_drop(self) -> None:
        """Every replaced value's readers read its replacement."""
        for old, new in self.replaced.items():
            old.replace_all_uses_with(new)

    def drop_dead(self) -> None:
        """The rewritten nodes go, the later first (they read the earlier ones)."""
        for node in reversed(self.dead):
            assert node.graph is not None
            node.graph.remove(node)


# ---------------------------------------------------------------------------------------------- the rules


def _carry(padder: Padder, b: Builder, node: Node, operands: list[Value | None], like: Padded,
           to: Callable[[int], int], zero: bool = False) -> Done:
    """``node`` run on the buffers: its result is padded as ``like``, each padded axis ``a`` now at ``to(a)``."""
    out = node.outputs[0]
    axes = {to(p.axis) for p in like.pads}
    shape = None if out.shape is None else tuple(None if k in axes else d for k, d in enumerate(out.shape))
    made = b.op(node.op, operands, dict(node.attrs), name=f"{out.name}_padded", dtype=out.dtype, shape=shape)
    padder.views[out] = like.moved(made, to, zero)
    return DONE


def _operands(padder: Padder, node: Node) -> list[Value | None]:
    return [padder.views[v].value if v is not None and v in padder.views else v for v in node.inputs]


def _first(padder: Padder, node: Node) -> Padded | None:
    """The view of operand 0, when it is the only padded operand."""
    first = node.inputs[0] if node.inputs else None
    if first is None or first not in padder.views or any(v in padder.views for v in node.inputs[1:] if v is not None):
        return None
    return padder.views[first]


def _elementwise(padder: Padder, b: Builder, node: Node) -> Done | None:
    views = padder.views
    rank = result_rank(padder, node)
    padded = [(k, views[v]) for k, v in enumerate(node.inputs) if v is not None and v in views]
    aligned = {tuple(sorted((p.axis + rank - rank_of(padder, node.inputs[k]), p.length) for p in view.pads))
               for k, view in padded}
    if len(aligned) != 1:
        return padder.cannot(node, "it combines values padded along different axes or to different lengths")
    axes = [axis for axis, _ in aligned.pop()]
    for v in node.inputs:
        if v is not None and v not in views and not all(broadcasts_at(v, axis, rank) for axis in axes):
            return padder.cannot(node, f"its operand {v.name!r} is not broadcast along the grown axis")
    k, view = padded[0]
    shift = rank - rank_of(padder, node.inputs[k])
    return _carry(padder, b, node, _operands(padder, node), view, lambda a: a + shift,
                  zero=node.op == "Mul" and all(v.zero for _, v in padded))


def _unsqueeze_squeeze(padder: Padder, b: Builder, node: Node) -> Done | None:
    view = _first(padder, node)
    if view is None:
        return padder.cannot(node, "its axes are padded")
    listed = listed_axes(node)
    if listed is None:
        return padder.cannot(node, "its axes are not constants")
    rank = result_rank(padder, node)
    if node.op == "Unsqueeze":
        kept = [a for a in range(rank) if a not in {x % rank for x in listed}]
        return _carry(padder, b, node, _operands(padder, node), view, lambda a: kept[a], view.zero)
    dropped = {x % rank_of(padder, node.inputs[0]) for x in listed}
    if any(p.axis in dropped for p in view.pads):
        return padder.cannot(node, "it removes the grown axis")
    return _carry(padder, b, node, _operands(padder, node), view,
                  lambda a: a - sum(1 for d in dropped if d < a), view.zero)


def _transpose(padder: Padder, b: Builder, node: Node) -> Done | None:
    view = padder.views[node.inputs[0]] if node.inputs[0] is not None else None
    assert view is not None
    perm = node.attrs.get("perm")
    order = list(perm) if perm is not None else list(reversed(range(result_rank(padder, node))))
    return _carry(padder, b, node, _operands(padder, node), view, order.index, view.zero)


def _softmax(padder: Padder, b: Builder, node: Node) -> Done | None:
    """Along a padded axis, the padding holds the op's identity (-inf: exact zeros come out there)."""
    view = _first(padder, node)
    assert view is not None
    rank = result_rank(padder, node)
    axis = int(attr(node, "axis")) % rank
    operands = _operands(padder, node)
    pad = view.padded_at(axis)
    if pad is None:
        return _carry(padder, b, node, operands, view, lambda a: a)
    out = node.outputs[0]
    identity = traits(node.op).pad_identity
    assert identity is not None
    low = b.const(np.array(identity, view.value.dtype), name=f"{out.name}_low")
    operands[0] = b.op("Where", [padder.mask(b, view, rank, pad), view.value, low], name=f"{out.name}_masked",
                       dtype=view.value.dtype)
    return _carry(padder, b, node, operands, view, lambda a: a, zero=node.op == "Softmax" and len(view.pads) == 1)


def _matmul(padder: Padder, b: Builder, node: Node) -> Done | None:
    """Rows or columns padded carry their padding; a product over the padded axis zeroes it and is unpadded."""
    views, out = padder.views, node.outputs[0]
    left, right = node.inputs[0], node.inputs[1]
    lv = views.get(left) if left is not None else None
    rv = views.get(right) if right is not None else None
    if any(v is not None and len(v.pads) != 1 for v in (lv, rv)):
        return padder.cannot(node, "an operand is padded along more than one axis")
    rank = result_rank(padder, node)
    lr, rr = rank_of(padder, left), rank_of(padder, right)
    if lr < 2 or rr < 2:
        return padder.cannot(node, "an operand is a vector")
    rows = lv is not None and lv.axis == lr - 2
    cols = rv is not None and rv.axis == rr - 1
    inner_l = lv is not None and lv.axis == lr - 1
    inner_r = rv is not None and rv.axis == rr - 2
    if inner_l and inner_r and lv is not None and rv is not None:
        product = b.op("MatMul", [padder.zeroed(b, lv, lr), padder.zeroed(b, rv, rr)], name=f"{out.name}_over_valid",
                       dtype=out.dtype, shape=out.shape)
        padder.replace(out, product)
        return DONE
    if inner_l or inner_r or (lv is not None and not rows) or (rv is not None and not cols) or (rows and cols):
        return padder.cannot(node, "it multiplies a grown axis by one that does not grow with it")
    view = lv if rows else rv
    assert view is not None
    axis = rank - 2 if rows else rank - 1
    return _carry(padder, b, node, _operands(padder, node), view, lambda a: axis, view.zero)


def _reduce(padder: Padder, b: Builder, node: Node) -> Done | None:
    """A reduction over other axes carries the padding (shifted past the dropped axes); one over padded axes
    sees the op's identity in their padding (ReduceMean: the sum over the valid length). ArgMax and ArgMin
    see the value no valid element loses to; ties resolve as in the model, the padding being past the end."""
    view = _first(padder, node)
    if view is None:
        return padder.cannot(node, "its axes are padded")
    rank = rank_of(padder, node.inputs[0])
    keep = int(attr(node, "keepdims"))
    if node.op in ("ArgMax", "ArgMin"):
        axes = [int(attr(node, "axis")) % rank]
    else:
        operand = node.input(1)
        listed = constant_value(operand) if operand is not None else None
        if operand is not None and listed is None:
            return padder.cannot(node, "its axes are not constants")
        listed = listed if listed is not None else node.attrs.get("axes")
        if listed is None and int(attr(node, "noop_with_empty_axes")):
            return _carry(padder, b, node, _operands(padder, node), view, lambda a: a, view.zero)
        axes = list(range(rank)) if listed is None else [int(a) % rank for a in np.asarray(listed).reshape(-1)]
    over = [p for p in view.pads if p.axis in axes]
    if not over:
        return _carry(padder, b, node, _operands(padder, node), view,
                      lambda a: a if keep else a - sum(1 for x in axes if x < a))
    if len(over) != len(view.pads):
        return padder.cannot(node, "it reduces some padded axes and not others")
    out = node.outputs[0]
    mean = node.op == "ReduceMean"
    identity = 0.0 if mean else traits(node.op).pad_identity
    if identity is None:
        return padder.cannot(node, "the op has no identity to pad with")
    if mean and axes != [view.axis]:
        return padder.cannot(node, "it averages over the grown axis and others")
    fill = b.const(np.array(identity, view.value.dtype), name=f"{out.name}_fill")
    filled = b.op("Where", [padder.mask(b, view, rank), view.value, fill], name=f"{out.name}_filled",
                  dtype=view.value.dtype)
    operands = [filled, *node.inputs[1:]]
    if not mean:
        padder.replace(out, b.op(node.op, operands, dict(node.attrs), name=f"{out.name}_over_valid", dtype=out.dtype))
        return DONE
    total = b.op("ReduceSum", operands, dict(node.attrs), name=f"{out.name}_sum", dtype=out.dtype)
    count = b.op("Cast", [view.length], {"to": tensor_type(np.dtype(out.dtype))}, name=f"{out.name}_count",
                 dtype=out.dtype, shape=())
    padder.replace(out, b.op("Div", [total, count], name=f"{out.name}_over_valid", dtype=out.dtype))
    return DONE


def _slice(padder: Padder, b: Builder, node: Node) -> Done | None:
    """A Slice of other axes carries the padding; one of a padded axis alone (step 1) reads the valid rows it
    names, counted from the valid end when negative (``x[-1:]`` is the last row written), when their number is
    the same in every run: a TensorRT loop's shapes may not depend on the data."""
    view = _first(padder, node)
    if view is None:
        return padder.cannot(node, "its bounds are padded")
    given = [constant_value(node.input(k)) for k in range(1, 5)]
    starts, ends = given[0], given[1]
    if starts is None or ends is None or any(node.input(k) is not None and given[k - 1] is None for k in (3, 4)):
        return padder.cannot(node, "its bounds are not constants")
    rank = rank_of(padder, node.inputs[0])
    axes = [int(a) % rank for a in np.asarray(given[2] if given[2] is not None else range(np.size(starts))).reshape(-1)]
    steps = [int(v) for v in np.asarray(given[3] if given[3] is not None else np.ones(len(axes))).reshape(-1)]
    cut = [p for p in view.pads if p.axis in axes]
    if not cut:
        return _carry(padder, b, node, _operands(padder, node), view, lambda a: a, view.zero)
    if len(view.pads) != 1 or axes != [view.axis] or steps != [1]:
        return padder.cannot(node, "it slices the grown axis with other axes or a step other than 1")
    start, end = int(np.asarray(starts).reshape(-1)[0]), int(np.asarray(ends).reshape(-1)[0])
    end = min(end, TO_THE_END)
    least = view.least
    if start < 0 and (end >= TO_THE_END or end < 0) and least >= -start:
        first, rows = start, (0 if end >= TO_THE_END else end) - start  # from the valid end
    elif 0 <= start <= end <= least:
        first, rows = start, end - start
    else:
        return padder.cannot(node, "the number of rows it reads depends on how many are valid")
    out, name = node.outputs[0], node.outputs[0].name
    at = b.const(np.arange(first, first + rows, dtype=np.int64), name=f"{name}_rows")
    if first < 0:
        at = b.op("Add", [view.length, at], name=f"{name}_rows_from_end")
    padder.replace(out, b.op("Gather", [view.value, at], {"axis": view.axis}, name=f"{name}_valid", dtype=out.dtype))
    return DONE


def _slice_at_length(padder: Padder, b: Builder, node: Node) -> Done | None:
    """An unpadded value sliced along one axis from a valid length plus a constant to the same length plus a
    larger one (``pos[t:t+1]`` with ``t`` a cache's length): the rows at ``length + (lo, ..., hi-1)``, a Gather
    whose result has one shape in every trip."""
    bounds = [padder.offsets.get(v) if v is not None else None for v in node.inputs[1:3]]
    axes, steps = constant_value(node.input(3)), constant_value(node.input(4))
    data = node.inputs[0]
    if data is None or bounds[0] is None or bounds[1] is None or bounds[0][0] is not bounds[1][0]:
        return padder.cannot(node, "its bounds are not one valid length plus constants")
    if (node.input(3) is not None and (axes is None or np.size(axes) != 1)) or (
            node.input(4) is not None and (steps is None or np.asarray(steps).reshape(-1).tolist() != [1])):
        return padder.cannot(node, "it slices more than one axis, or with a step other than 1")
    (length, low), (_, high) = bounds[0], bounds[1]
    if high < low:
        return padder.cannot(node, "it reads fewer than no rows")
    axis = int(np.asarray(axes).reshape(-1)[0]) % rank_of(padder, data) if axes is not None else 0
    out, name = node.outputs[0], node.outputs[0].name
    rows = b.const(np.arange(low, high, dtype=np.int64), name=f"{name}_rows")
    at = b.op("Add", [length, rows], name=f"{name}_at", dtype=I64, shape=(high - low,))
    padder.replace(out, b.op("Gather", [data, at], {"axis": axis}, name=f"{name}_rows_read", dtype=out.dtype))
    return DONE


def _shape(padder: Padder, b: Builder, node: Node) -> Done | None:
    view = _first(padder, node)
    assert view is not None
    out = node.outputs[0]
    if node.attrs:
        return padder.cannot(node, "it reads part of the shape")
    shape = b.op("Shape", [view.value], name=f"{out.name}_buffer", dtype=I64, shape=out.shape)
    for k, p in enumerate(view.pads):
        last = k == len(view.pads) - 1
        shape = with_entry(b, shape, p.axis, p.length, f"{out.name}_valid" if last else f"{out.name}_valid{k}")
    padder.replace(out, shape)
    if len(view.pads) == 1:
        padder.shapes[out] = view
    return DONE


def _gather(padder: Padder, b: Builder, node: Node) -> Done | None:
    """Along another axis the padding is carried (past the index's dims); along a padded one the positions
    are read, a negative one counting from the valid end."""
    view = _first(padder, node)
    if view is None:
        return padder.cannot(node, "its indices grow too")
    index = node.inputs[1]
    assert index is not None
    out = node.outputs[0]
    axis = int(attr(node, "axis")) % rank_of(padder, node.inputs[0])
    shift = rank_of(padder, index) - 1
    pad = view.padded_at(axis)
    if pad is None:
        return _carry(padder, b, node, _operands(padder, node), view, lambda a: a + shift if a > axis else a,
                      view.zero)
    at = constant_int(index)
    if at is not None and index.shape == ():
        where = b.const(np.array(at, np.int64), name=f"{out.name}_at")
        if at < 0:
            where = b.op("Add", [pad.length, where], name=f"{out.name}_from_end")
    elif index.dtype is not None and index.shape is not None:
        end = pad.length
        if end.dtype != index.dtype:
            end = b.op("Cast", [end], {"to": tensor_type(index.dtype)}, name=f"{out.name}_end", dtype=index.dtype,
                       shape=())
        negative = b.op("Less", [index, b.const(np.array(0, index.dtype), name=f"{out.name}_zero")],
                        name=f"{out.name}_negative", dtype=BOOL)
        moved = b.op("Add", [index, end], name=f"{out.name}_from_end", dtype=index.dtype)
        where = b.op("Where", [negative, moved, index], name=f"{out.name}_at", dtype=index.dtype)
    else:
        return padder.cannot(node, "the type of its indices is not known")
    rest = [p for p in view.pads if p is not pad]
    picked = b.op("Gather", [view.value, where], dict(node.attrs), name=f"{out.name}_read", dtype=out.dtype,
                  shape=out.shape if not rest else None)
    if rest:
        padder.views[out] = Padded(picked, tuple(replace(p, axis=p.axis + shift if p.axis > axis else p.axis)
                                                 for p in rest), view.zero)
    else:
        padder.replace(out, picked)
    return DONE


def _flattened_pick(padder: Padder, b: Builder, node: Node) -> Done | None:
    """A Reshape flattening trailing axes (the padded ones among them, the leading ones kept) read only by one
    ArgMax/ArgMin of the flattened axis: the pick over the buffer with the padding at the op's identity,
    flattened alike, its flat index on the buffer turned into the flat index on the valid lengths (ties go to
    the first, in the same row-major order)."""
    view = _first(padder, node)
    target, flat, data = node.inputs[1], node.outputs[0], node.inputs[0]
    readers = [u.user for u in flat.uses()]
    if (view is None or target is None or target.shape is None or not isinstance(target.shape[0], int)
            or len(readers) != 1 or isinstance(readers[0], Graph) or readers[0].op not in ("ArgMax", "ArgMin")
            or data is None):
        return padder.cannot(node, "it does not flatten trailing axes for one ArgMax or ArgMin")
    pick, kept, rank = readers[0], int(target.shape[0]) - 1, rank_of(padder, data)
    if (kept < 0 or min(p.axis for p in view.pads) < kept or attr(pick, "select_last_index")
            or int(attr(pick, "axis")) % (kept + 1) != kept
            or not all(same_dim(shape_entry_source(target, a), data, a) for a in range(kept))):
        return padder.cannot(node, "it does not flatten the padded trailing axes for one ArgMax or ArgMin")
    identity = traits(pick.op).pad_identity
    assert identity is not None and view.value.dtype is not None
    name = pick.outputs[0].name
    canvas = b.op("Where", [padder.mask(b, view, rank), view.value,
                            b.const(np.array(identity, view.value.dtype), name=f"{name}_fill")],
                  name=f"{name}_filled", dtype=view.value.dtype)
    dims = Builder(b.graph, b.nodes, label=name, origin=node.origin)  # names the dims it reads after the pick
    leading = [dims.dim(view.value, a, keep_1d=True) for a in range(kept)]
    flat_dims = b.op("Concat", [*leading, b.const(np.array([-1], np.int64), name=f"{name}_rest")], {"axis": 0},
                     name=f"{name}_flat_dims", dtype=I64, shape=(kept + 1,))
    flattened = b.op("Reshape", [canvas, flat_dims], name=f"{name}_flat", dtype=canvas.dtype)
    rest = b.op(pick.op, [flattened], dict(pick.attrs), name=f"{name}_on_buffer", dtype=I64)
    position: Value | None = None
    stride: Value | None = None
    for a in reversed(range(kept, rank)):  # unravel on the buffer, ravel on the valid lengths
        size = dims.dim(view.value, a)
        coordinate = b.op("Mod", [rest, size], name=f"{name}_at{a}", dtype=I64)
        rest = b.op("Div", [rest, size], name=f"{name}_above{a}", dtype=I64)
        term = coordinate if stride is None else b.op("Mul", [coordinate, stride], name=f"{name}_term{a}", dtype=I64)
        position = term if position is None else b.op("Add", [position, term], name=f"{name}_sum{a}", dtype=I64)
        pad = view.padded_at(a)
        true = pad.length if pad is not None else size
        stride = true if stride is None else b.op("Mul", [stride, true], name=f"{name}_stride{a}", dtype=I64,
                                                   shape=())
    assert position is not None
    padder.replace(pick.outputs[0], position)
    padder.dead += [node, pick]  # the pick reads the flattened value: it goes first
    return DONE


def _single_entry(node: Node, rank: object) -> int | None:
    """The one entry a Slice of a shape vector of ``rank`` entries keeps (``shape[a:a+1]``, ``shape[-1:]``), or
    None when it keeps another number or its bounds are not constants."""
    operands = [*node.inputs[1:5], *[None] * (5 - len(node.inputs))]
    bounds = [constant_value(v) if v is not None else None for v in operands]
    if not isinstance(rank, int) or bounds[0] is None or bounds[1] is None or any(
            v is not None and b is None for v, b in zip(operands[2:], bounds[2:])):
        return None
    start, end = (np.asarray(b).reshape(-1) for b in bounds[:2])
    steps = np.asarray(bounds[3]).reshape(-1) if bounds[3] is not None else np.ones(1)
    if start.size != 1 or end.size != 1 or int(steps[0]) != 1 or (bounds[2] is not None and int(
            np.asarray(bounds[2]).reshape(-1)[0]) not in (0, -1)):
        return None
    kept = range(rank)[int(start[0]):int(end[0])]
    return kept[0] if len(kept) == 1 else None


def _reshape(padder: Padder, b: Builder, node: Node) -> Done | None:
    """A Reshape that keeps the padded axis and every axis before it (``k.view(B, S, H, -1)`` of a cache
    ``[B, S, D]``) reshapes the buffer, its target's kept entries copying the buffer's dims (0 entries; read
    from the buffer's shape under allowzero, or when other entries are computed); one that flattens padded
    trailing axes for one ArgMax or ArgMin is :func:`_flattened_pick`."""
    view = _first(padder, node)
    target, data = node.inputs[1], node.inputs[0]
    readers = [u.user for u in node.outputs[0].uses()]
    if view is None or target is None or data is None:
        return padder.cannot(node, "its target shape is padded")
    if len(readers) == 1 and isinstance(readers[0], Node) and readers[0].op in ("ArgMax", "ArgMin"):
        return _flattened_pick(padder, b, node)
    count = target.shape[0] if target.shape is not None and len(target.shape) == 1 else None
    last = max(p.axis for p in view.pads)
    copies_zero = not int(attr(node, "allowzero"))
    if not isinstance(count, int) or count <= last or not all(
            same_dim(source, data, a) or (copies_zero and source == 0)
            for a in range(last + 1) for source in [shape_entry_source(target, a)]):
        return padder.cannot(node, "it does not keep the padded axis and every axis before it")
    out = node.outputs[0]
    written = [shape_entry_source(target, a) for a in range(last + 1, count)]
    if copies_zero and all(isinstance(entry, int) for entry in written):
        # The kept entries copy the buffer's dims (0 in a target without allowzero): the target is a constant.
        # TensorRT-RTX's builder crashes (SIGSEGV) on the same Reshape with the buffer's dims read by a Shape in
        # the loop and then transposed into a MatMul: a cache [B, S, D] split into heads (openai-whisper's).
        dims = b.const(np.array([0] * (last + 1) + written, np.int64), name=f"{out.name}_dims")
        return _carry(padder, b, node, [view.value, dims], view, lambda a: a, view.zero)
    kept = b.op("Shape", [view.value], {"start": 0, "end": last + 1}, name=f"{out.name}_kept", dtype=I64,
                shape=(last + 1,))
    if all(isinstance(entry, int) for entry in written):  # constants: not computed from the padded shape
        rest = b.const(np.array(written, np.int64), name=f"{out.name}_rest")
    else:
        rest = b.op("Slice", [target, b.const(np.array([last + 1], np.int64), name=f"{out.name}_rest_start"),
                              b.const(np.array([count], np.int64), name=f"{out.name}_rest_end")],
                    name=f"{out.name}_rest", dtype=I64, shape=(count - last - 1,))
    dims = b.op("Concat", [kept, rest], {"axis": 0}, name=f"{out.name}_dims", dtype=I64, shape=(count,))
    operands: list[Value | None] = [view.value, dims]
    return _carry(padder, b, node, operands, view, lambda a: a, view.zero)


def _concat(padder: Padder, b: Builder, node: Node) -> Done | None:
    """A Concat whose first operand is a carried cache's view, along its padded axis, grows the cache (the
    padder's owner writes the piece); one along another axis of values all padded alike (per-layer caches
    stacked again) carries the padding."""
    views = padder.views
    first = node.inputs[0]
    rank = result_rank(padder, node)
    axis = int(attr(node, "axis")) % rank
    view = views.get(first) if first is not None else None
    if view is not None and padder.cache_of(view) is not None and view.padded_at(axis) is not None:
        pieces = [v for v in node.inputs[1:] if v is not None]
        if len(view.pads) != 1 or len(pieces) != 1:
            return padder.cannot(node, "it does not append one piece to the carried value along its grown axis")
        made = padder.append(b, node, padder.cache_of(view), view, padder.replaced.get(pieces[0], pieces[0]))
        if made is None:
            return None
        views[node.outputs[0]] = made
        return DONE
    operands = [views.get(v) if v is not None else None for v in node.inputs]
    if view is None or any(v is None or v.pads != view.pads for v in operands):
        return padder.cannot(node, "it does not append one piece to the carried value along its grown axis")
    if view.padded_at(axis) is not None:
        return padder.cannot(node, "it joins values along their padded axis")
    restacked = padder.restack(b, node)
    if restacked is not None:
        views[node.outputs[0]] = restacked
        return DONE
    return _carry(padder, b, node, _operands(padder, node), view, lambda a: a,
                  all(v is not None and v.zero for v in operands))


def _attention(padder: Padder, b: Builder, node: Node) -> Done | None:
    """ONNX's Attention over cached keys and values (``past_key``/``past_value``, grown into ``present_*``): the
    new keys and values are written into the buffers, and the attention reads the buffers with the positions
    past the valid length masked out."""
    views, out = padder.views, node.outputs[0]
    past = [views.get(v) if v is not None else None for v in (node.input(4), node.input(5))]
    if any(v is not None and v in views for v in node.inputs[:3]) or any(view is None for view in past):
        return padder.cannot(node, "it reads the grown value other than as its past keys and values")
    if int(attr(node, "is_causal")) or node.input(6) is not None or rank_of(padder, node.inputs[0]) != 4:
        return padder.cannot(node, "it is causal, has padding lengths or takes 3-D inputs")
    if any(o is not None and o.uses() for o in node.outputs[3:]):
        return padder.cannot(node, "its scores are read")
    presents = []
    for view, new, slot in zip(past, node.inputs[1:3], (1, 2)):
        assert view is not None and new is not None
        cache = padder.cache_of(view)
        if cache is None or view.axis != 2:
            return padder.cannot(node, "its past keys or values are not a cache grown along the sequence axis")
        made = padder.append(b, node, cache, view, new)
        if made is None:
            return None
        presents.append(made)
        if len(node.outputs) > slot:
            views[node.outputs[slot]] = presents[-1]
    keys, values = presents  # of one length: ONNX gives past keys and values one length, new ones another
    valid = b.op("Less", [keys.positions, keys.length], name=f"{out.name}_valid")
    allowed = b.op("Unsqueeze", [valid, b.const(np.array([0], np.int64), name=f"{out.name}_row")],
                   name=f"{out.name}_allowed")
    mask = node.input(3)
    if mask is not None:
        given = views.get(mask)
        if given is None or given.axis != rank_of(padder, mask) - 1 or given.length is not keys.length:
            return padder.cannot(node, "its mask is not padded as the keys are")
        if given.value.dtype == BOOL:
            allowed = b.op("And", [allowed, given.value], name=f"{out.name}_mask_valid")
        else:
            low = b.const(np.array(-np.inf, given.value.dtype), name=f"{out.name}_low")
            allowed = b.op("Where", [allowed, given.value, low], name=f"{out.name}_mask_valid",
                           dtype=given.value.dtype)
    attended = b.op("Attention", [node.inputs[0], keys.value, values.value, allowed], dict(node.attrs),
                    name=f"{out.name}_over_valid", dtype=out.dtype, shape=out.shape)
    padder.replace(out, attended)
    return DONE


def _first_only(rule: Rule) -> Rule:
    """``rule`` for an op that may read a padded value only as operand 0."""
    def checked(padder: Padder, b: Builder, node: Node) -> Done | None:
        if _first(padder, node) is None:
            return padder.cannot(node)
        return rule(padder, b, node)
    return checked


def _none(padder: Padder, b: Builder, node: Node) -> Done | None:
    return padder.cannot(node)


#: How each op reads padded values. Elementwise ops and reductions are found by their traits.
RULES: dict[str, Rule] = {
    "Unsqueeze": _unsqueeze_squeeze, "Squeeze": _unsqueeze_squeeze, "Transpose": _transpose,
    "Softmax": _first_only(_softmax), "LogSoftmax": _first_only(_softmax), "MatMul": _matmul,
    "ArgMax": _reduce, "ArgMin": _reduce, "Slice": _slice, "Shape": _first_only(_shape), "Gather": _gather,
    "Reshape": _reshape, "Concat": _concat, "Attention": _attention,
}


def rule_for(node: Node) -> Rule:
    """The rule for ``node``'s op (declining with "no rule" for an op without one)."""
    if node.op in RULES:
        return RULES[node.op]
    facts = traits(node.op)
    if len(node.outputs) != 1:
        return _none
    if facts.elementwise:
        return _elementwise
    if facts.reduction:
        return _reduce
    return _none


# ---------------------------------------------------------------------------------------------- helpers


def result_rank(padder: Padder, node: Node) -> int:
    """The rank of ``node``'s result: declared, else from its operands' (shape refinement may not have run yet)."""
    out = node.outputs[0]
    if out.shape is not None:
        return len(out.shape)
    first = rank_of(padder, node.inputs[0])
    if node.op == "Shape":
        return 1
    if node.op in ("Unsqueeze", "Squeeze"):
        listed = listed_axes(node)
        if listed is None:
            raise padder.refuse(node, "its axes are not constants")
        return first + len(listed) if node.op == "Unsqueeze" else first - len(listed)
    if node.op == "Gather":
        return first + rank_of(padder, node.inputs[1]) - 1
    return max(rank_of(padder, v) for v in node.inputs if v is not None)


def rank_of(padder: Padder, value: Value | None) -> int:
    """``value``'s rank, or its padded stand-in's (whose type the builder inferred)."""
    if value is None:
        raise Refused("an operand is missing")
    views = padder.views
    shape = value.shape if value.shape is not None or value not in views else views[value].value.shape
    if shape is None:
        raise Refused(f"the rank of {value.name!r} is not known")
    return len(shape)


def broadcasts_at(value: Value, axis: int, rank: int) -> bool:
    """Whether ``value`` (an operand of a broadcast to ``rank``) is of length 1 or absent at ``axis``."""
    if value.shape is None:
        return False
    at = axis - (rank - len(value.shape))
    return at < 0 or value.shape[at] == 1


def dim_unknown(shape: Shape | None, axis: int) -> Shape | None:
    return None if shape is None else tuple(None if k == axis else d for k, d in enumerate(shape))


def along(b: Builder, vector: Value, axis: int, rank: int, name: str) -> Value:
    """A 1-D ``vector`` reshaped to lie along ``axis`` of a value of ``rank`` (length 1 elsewhere)."""
    dims = [1] * rank
    dims[axis] = -1
    return b.op("Reshape", [vector, b.const(np.array(dims, np.int64), name=f"{name}_dims")], name=name)


def with_entry(b: Builder, shape: Value, axis: int, entry: Value, name: str) -> Value:
    """The shape vector ``shape`` with entry ``axis`` replaced by the int64 scalar ``entry``."""
    index = b.const(np.array([axis], np.int64), name=f"{name}_index")
    update = b.op("Unsqueeze", [entry, b.const(np.array([0], np.int64), name=f"{name}_dim0")], name=f"{name}_entry")
    return b.op("ScatterElements", [shape, index, update], {"axis": 0}, name=name, dtype=I64, shape=shape.shape)


def _number(value: Value | None) -> float | None:
    """The number a one-element constant holds, of any numeric type."""
    array = constant_value(value)
    return None if array is None or np.size(array) != 1 else float(np.asarray(array).reshape(-1)[0])

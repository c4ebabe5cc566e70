"""Values, nodes and graphs: the SSA core of loopc's IR.

Ordinary nodes keep ONNX's op names and (opset-normalized) attributes, so the frontend stays a
thin translation and the backend has one converter per op family. Structure — loops and
conditionals — is first class (see :mod:`loopc.ir.loop`), shaped like TensorRT's loop language.
A nested graph may read any value of an enclosing graph directly (that is what a loop invariant is).

Every value knows its producer and its uses, kept by construction: a node records its reads in its
inputs' use lists while it sits in a graph, and a graph records its outputs. So a pass asks a value
who reads it (:meth:`Value.uses`) instead of rescanning the graph, and rewires every reader with
:meth:`Value.replace_all_uses_with`. Graphs keep their nodes in a linked list, so inserting before
or after a node and removing one cost O(1) however large the graph.

Every edit is a named call (:meth:`Node.set_input`, :meth:`Graph.set_outputs`, :meth:`Graph.insert_before`,
...): operand lists read as tuples, so a plain assignment or list method is never a silent graph edit.

Nodes made without a name are named after their first result when they join a graph (deterministic
per model, whatever else the process compiled), and nodes a pass inserts next to another inherit
its ``origin``: a layer name or an error always leads back to the user's node.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple, overload

import numpy as np

from loopc.errors import InternalError

#: One dimension: a size, a symbolic name, or None when nothing is known.
Dim = int | str | None
Shape = tuple[Dim, ...]



def filled(shape: Shape | None, other: Shape | None) -> Shape | None:
    """``shape`` (None: rank unknown) with its unknown dims taken from ``other``; None when ``other`` has no
    shape or another rank, which teaches nothing."""
    if other is None or (shape is not None and len(shape) != len(other)):
        return None
    mine = shape if shape is not None else (None,) * len(other)
    return tuple(have if have is not None else dim for have, dim in zip(mine, other))


class Use(NamedTuple):
    """A read of a value: operand ``slot`` of a node, or output ``slot`` of a graph."""

    user: Node | Graph
    slot: int


class Value:
    """An SSA value: produced once (by a node, or as a graph or loop-body input), read anywhere below."""

    __slots__ = ("name", "dtype", "shape", "producer", "_uses")

    def __init__(self, name: str, dtype: np.dtype[Any] | None = None, shape: Shape | None = None,
                 producer: Node | None = None) -> None:
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.producer = producer
        self._uses: dict[Use, None] = {}  # an ordered set

    def __repr__(self) -> str:
        return f"Value({self.name!r}, {type_text(self)})"

    def uses(self) -> list[Use]:
        """Every read of this value, in the order the reads were made."""
        return list(self._uses)

    def is_used(self) -> bool:
        return bool(self._uses)

    def learn_shape(self, shape: Shape | None) -> None:
        """Take the dims ``shape`` knows that this value does not (a value standing in for another of the same
        shape keeps what was known of either); shapes of another rank teach nothing."""
        merged = filled(self.shape, shape)
        if merged is not None:
            self.shape = merged

    def retype(self, dtype: np.dtype[Any] | None) -> None:
        """Give the value element type ``dtype`` (a cast's result retyped to half precision, a state typed from
        its initial value): the one way a pass changes a value's type, counted as an edit of its graph."""
        if dtype == self.dtype:
            return
        self.dtype = dtype
        if self.producer is not None and self.producer.graph is not None:
            self.producer.graph.changed()

    def replace_all_uses_with(self, new: Value) -> int:
        """Make every read of this value read ``new``; returns how many reads moved."""
        return self.replace_all_uses_except(new)

    def replace_all_uses_except(self, new: Value, *kept: Node) -> int:
        """Make every read of this value read ``new``, except the reads by the nodes ``kept`` (typically the node
        that computes ``new`` from this value); returns how many reads moved."""
        if new is self:
            return 0
        uses = [(user, slot) for user, slot in self._uses if not any(user is k for k in kept)]
        for user, slot in uses:
            if isinstance(user, Graph):
                user.set_output(slot, new)
            else:
                user.set_input(slot, new)
        return len(uses)


class Node:
    """An operation. ``op`` is an ONNX op type for ordinary nodes; ``origin`` names the source node.

    ``inputs`` and ``outputs`` read as tuples; :meth:`set_input`, :meth:`set_inputs`, :meth:`replace_input`
    and :meth:`set_outputs` change them and keep the use lists right. Each tuple is made once per edit
    (:meth:`_edited`), not per read: the IR's walks read them far more often than passes edit them.
    """

    def __init__(self, op: str, inputs: Iterable[Value | None], outputs: Iterable[Value],
                 attrs: dict[str, Any] | None = None, name: str = "", origin: str = "") -> None:
        self.op = op
        self.attrs: dict[str, Any] = attrs if attrs is not None else {}
        self.name = name
        self.origin = origin
        #: The graph this node is in, None while it is in none.
        self.graph: Graph | None = None
        self._prev: Node | None = None
        self._next: Node | None = None
        self._inputs: list[Value | None] = list(inputs)
        self._outputs: list[Value] = []
        self._read: tuple[tuple[Value | None, ...], tuple[Value, ...]] | None = None
        self._assign_outputs(outputs)

    def __repr__(self) -> str:
        return f"<{self.op} {self.name!r}>"

    @property
    def inputs(self) -> tuple[Value | None, ...]:
        return (self._read or self._reread())[0]

    def _reread(self) -> tuple[tuple[Value | None, ...], tuple[Value, ...]]:
        self._read = (tuple(self._inputs), tuple(self._outputs))
        return self._read

    def _edited(self) -> None:
        """The operand or result lists changed: the tuples read from them are made again at the next read."""
        self._read = None

    def input(self, slot: int) -> Value | None:
        """Operand ``slot`` (None past the end: ONNX's omitted trailing inputs)."""
        return self._inputs[slot] if slot < len(self._inputs) else None

    def set_attr(self, name: str, value: Any) -> None:
        """Set attribute ``name``: the one way a pass edits an attribute, counted as an edit of the graph."""
        self.attrs[name] = value
        if self.graph is not None:
            self.graph.changed()

    def drop_attr(self, name: str) -> None:
        """Remove attribute ``name`` (its default then applies), counted as an edit of the graph."""
        if self.attrs.pop(name, None) is not None and self.graph is not None:
            self.graph.changed()

    def set_input(self, slot: int, value: Value | None) -> None:
        """Make operand ``slot`` read ``value``; O(1)."""
        self._splice_inputs(slot, slot + 1, [value])

    def set_inputs(self, values: Iterable[Value | None]) -> None:
        """Replace every operand."""
        self._splice_inputs(0, len(self._inputs), list(values))

    def replace_input(self, old: Value, new: Value | None) -> int:
        """Make every operand that reads ``old`` read ``new``; returns how many did."""
        slots = [slot for slot, value in enumerate(self._inputs) if value is old]
        for slot in slots:
            self.set_input(slot, new)
        return len(slots)

    def _splice_inputs(self, start: int, stop: int, values: list[Value | None]) -> None:
        """Put ``values`` in place of operands ``start:stop``. Only the reads from ``start`` on are recorded
        again, and none past the edit when it keeps the count: appending at the end costs O(1)."""
        tail = len(self._inputs) if len(values) != stop - start else stop
        live = self.graph is not None and self.graph._live
        if live:
            _forget(self, self._inputs, start, tail)
        self._inputs[start:stop] = values
        self._read = None
        if live:
            _record(self, self._inputs, start, tail - stop + start + len(values))
        if self.graph is not None:
            self.graph.changed()

    @property
    def outputs(self) -> tuple[Value, ...]:
        return (self._read or self._reread())[1]

    def set_outputs(self, values: Iterable[Value]) -> None:
        """Replace the results (their producer becomes this node); results no longer listed are dropped."""
        self._assign_outputs(values)
        if self.graph is not None:
            self.graph.changed()

    def _assign_outputs(self, values: Iterable[Value]) -> None:
        self._outputs = list(values)
        self._read = None
        for out in self._outputs:
            out.producer = self

    def _record_uses(self) -> None:
        _record(self, self._inputs, 0, len(self._inputs))

    def _drop_uses(self) -> None:
        _forget(self, self._inputs, 0, len(self._inputs))

    def _attach(self, graph: Graph) -> None:
        """Join ``graph``: record this node's reads (and those of the graphs nested in it)."""
        self.graph = graph
        if not self.name:  # named after what it computes: deterministic, and readable in a layer name
            self.name = self._outputs[0].name if self._outputs else self.op.lower()
        if graph._live:
            self._record_uses()
        for sub in self.subgraphs():
            sub._set_live(graph._live)

    def _detach(self) -> None:
        """Leave the graph: the reads of this node and everything nested in it are forgotten."""
        self._drop_uses()
        for sub in self.subgraphs():
            sub._set_live(False)
        self.graph = None

    def describe(self) -> str:
        """How errors name this node: the source node when there is one."""
        return self.origin or f"node {self.name!r} ({self.op})"

    def subgraphs(self) -> list[Graph]:
        """Graphs nested in this node (loop bodies, conditional branches)."""
        return []

    def _derives(self, graph: Graph) -> bool:
        """Whether ``graph``'s inputs and outputs follow this node (a loop's roles), to be set through it."""
        return False

    def _set_body_output(self, slot: int, value: Value) -> None:
        raise InternalError(f"{self.describe()} does not set the outputs of its graphs")

    def _own(self, graph: Graph) -> Graph:
        """Make ``graph`` one nested in this node."""
        graph.owner = self
        return graph


class _ModelState:
    """What the graphs of one model share: the count of edits (the pass manager compares counts)."""

    def __init__(self) -> None:
        self.changes = 0


class NodeList:
    """A graph's nodes in order: a doubly linked list, so edits near a node never shift the others.

    Iteration may remove the node it is at. Indexing counts from an end (O(index)); prefer the graph's
    ``insert_before``/``insert_after``/``remove`` to positions.
    """

    def __init__(self, graph: Graph) -> None:
        self._graph = graph
        self.first: Node | None = None
        self.last: Node | None = None
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def __iter__(self) -> Iterator[Node]:
        node = self.first
        while node is not None:
            following = node._next
            yield node
            node = following if node.graph is not self._graph else node._next

    def __reversed__(self) -> Iterator[Node]:
        node = self.last
        while node is not None:
            preceding = node._prev
            yield node
            node = preceding if node.graph is not self._graph else node._prev

    def __contains__(self, node: object) -> bool:
        return isinstance(node, Node) and node.graph is self._graph

    @overload
    def __getitem__(self, index: int) -> Node: ...
    @overload
    def __getitem__(self, index: slice) -> list[Node]: ...

    def __getitem__(self, index: int | slice) -> Node | list[Node]:
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(f"graph {self._graph.name!r} has {self._len} nodes, no node {index}")
        if index < self._len // 2:
            found = next(n for k, n in enumerate(self) if k == index)
        else:
            found = next(n for k, n in enumerate(reversed(self)) if k == self._len - 1 - index)
        return found

    def index(self, node: Node) -> int:
        for k, candidate in enumerate(self):
            if candidate is node:
                return k
        raise ValueError(f"{node!r} is not in graph {self._graph.name!r}")

    def __repr__(self) -> str:
        return f"NodeList({list(self)!r})"

    def _link(self, node: Node, before: Node | None) -> None:
        if node.graph is not None:
            raise InternalError(f"{node.describe()} is already in graph {node.graph.name!r}")
        after = self.last if before is None else before._prev
        node._prev, node._next = after, before
        if after is None:
            self.first = node
        else:
            after._next = node
        if before is None:
            self.last = node
        else:
            before._prev = node
        self._len += 1

    def _unlink(self, node: Node) -> None:
        if node._prev is None:
            self.first = node._next
        else:
            node._prev._next = node._next
        if node._next is None:
            self.last = node._prev
        else:
            node._next._prev = node._prev
        node._prev = node._next = None
        self._len -= 1


class Graph:
    """Nodes in topological order between inputs and outputs.

    ``owner`` is the node a nested graph belongs to (a loop, a conditional); None for a model's graph.
    ``inputs`` and ``outputs`` read as tuples; :meth:`set_inputs`, :meth:`add_input`, :meth:`set_output`,
    :meth:`set_outputs` and :meth:`add_output` change them (a loop body's, through its loop's roles).
    """

    def __init__(self, name: str, inputs: Iterable[Value] | None = None, outputs: Iterable[Value] | None = None,
                 nodes: Iterable[Node] | None = None) -> None:
        self.name = name
        self.owner: Node | None = None
        self._inputs: list[Value] = list(inputs or [])
        self._nodes = NodeList(self)
        self._outputs: list[Value] = []
        self._live = True
        self._state: _ModelState | None = None
        #: The nodes of this graph that hold graphs (loops, conditionals), in the order they joined it.
        self._structured: dict[Node, None] = {}
        #: How many nodes of each op type this graph holds (its own, not its nested graphs'): what :meth:`find`
        #: asks before walking a graph. A node's ``op`` is fixed once it is made.
        self._op_counts: dict[str, int] = {}
        self._splice_outputs(0, 0, list(outputs or []))
        for node in nodes or []:
            self.add(node)

    def __repr__(self) -> str:
        return f"<Graph {self.name!r}: {len(self._nodes)} nodes>"

    # --- nodes -------------------------------------------------------------------------------------

    @property
    def nodes(self) -> NodeList:
        return self._nodes

    def set_nodes(self, nodes: Iterable[Node]) -> None:
        """Replace every node: those not kept are removed (unread or not), the rest re-linked in order."""
        new = list(nodes)
        for node in list(self._nodes):
            self._nodes._unlink(node)
            node._detach()
        self._structured.clear()
        self._op_counts.clear()
        for node in new:
            if node.graph is not None:
                node.graph._take(node)
            self._insert(node, None)
        self.changed()

    def add(self, node: Node) -> Node:
        """Append ``node``; it inherits the origin of the node this graph is nested in, if it has none."""
        if not node.origin and self.owner is not None:
            node.origin = self.owner.origin
        self._insert(node, None)
        self.changed()
        return node

    append = add

    def insert_before(self, anchor: Node, nodes: Iterable[Node]) -> None:
        """Put ``nodes`` (in order) just before ``anchor``; they inherit its origin if they have none.
        A node already in a graph moves."""
        self._insert_all(anchor, nodes, anchor)

    def insert_after(self, anchor: Node, nodes: Iterable[Node]) -> None:
        """Put ``nodes`` (in order) just after ``anchor``; they inherit its origin if they have none."""
        self._insert_all(anchor._next, nodes, anchor)

    def replace(self, node: Node, nodes: Iterable[Node]) -> None:
        """Put ``nodes`` where ``node`` is and remove ``node`` (whose results must be unread by then)."""
        self.insert_before(node, nodes)
        self.remove(node)

    def remove(self, node: Node) -> None:
        """Erase ``node``; refused (a bug in the caller) while any of its results is still read."""
        for value in node.outputs:
            readers = [u for u in value._uses if not _inside(u.user, node)]
            if readers:
                raise InternalError(f"cannot remove {node.describe()}: {value.name!r} is still read by "
                                    f"{_describe_user(readers[0].user)}")
        self._take(node)

    def _take(self, node: Node) -> None:
        """Unlink ``node`` without checking its readers (it is moving, or dying with its readers)."""
        if node.graph is not self:
            raise InternalError(f"{node.describe()} is not in graph {self.name!r}")
        self._nodes._unlink(node)
        node._detach()
        self._structured.pop(node, None)
        self._op_counts[node.op] -= 1
        self.changed()

    def _insert_all(self, before: Node | None, nodes: Iterable[Node], anchor: Node) -> None:
        if anchor.graph is not self:
            raise InternalError(f"{anchor.describe()} is not in graph {self.name!r}")
        new = list(nodes)
        if not new:
            return
        for node in new:
            if node is before:
                continue
            if node.graph is not None:
                node.graph._take(node)
            if not node.origin:
                node.origin = anchor.origin
            self._insert(node, before)
        self.changed()

    def _insert(self, node: Node, before: Node | None) -> None:
        self._nodes._link(node, before)
        node._attach(self)
        self._op_counts[node.op] = self._op_counts.get(node.op, 0) + 1
        if node.subgraphs():
            self._structured[node] = None

    # --- inputs and outputs ------------------------------------------------------------------------

    @property
    def inputs(self) -> tuple[Value, ...]:
        """The parameters: a model's inputs, or a nested graph's (a loop body's follow its loop's roles)."""
        return tuple(self._inputs)

    def set_inputs(self, values: Iterable[Value]) -> None:
        self._refuse_derived("inputs")
        self._inputs = list(values)
        self.changed()

    def add_input(self, value: Value) -> None:
        self._refuse_derived("inputs")
        self._inputs.append(value)
        self.changed()

    @property
    def outputs(self) -> tuple[Value, ...]:
        return tuple(self._outputs)

    def output(self, slot: int) -> Value:
        return self._outputs[slot]

    def set_output(self, slot: int, value: Value) -> None:
        """Make result ``slot`` ``value`` (a loop body's through the role it comes from); O(1)."""
        if self.owner is not None and self.owner._derives(self):
            self.owner._set_body_output(slot, value)
            return
        self._splice_outputs(slot, slot + 1, [value])

    def set_outputs(self, values: Iterable[Value]) -> None:
        self._refuse_derived("outputs")
        self._splice_outputs(0, len(self._outputs), list(values))

    def add_output(self, value: Value) -> None:
        self._refuse_derived("outputs")
        self._splice_outputs(len(self._outputs), len(self._outputs), [value])

    def _refuse_derived(self, what: str) -> None:
        if self.owner is not None and self.owner._derives(self):
            raise InternalError(f"the {what} of graph {self.name!r} follow {self.owner.describe()}'s roles: "
                                "edit them through it")

    def _splice_outputs(self, start: int, stop: int, values: list[Value]) -> None:
        """Put ``values`` in place of results ``start:stop``, recording again only the reads that moved (see
        :meth:`Node._splice_inputs`)."""
        tail = len(self._outputs) if len(values) != stop - start else stop
        if self._live:
            _forget(self, self._outputs, start, tail)
        self._outputs[start:stop] = values
        if self._live:
            _record(self, self._outputs, start, tail - stop + start + len(values))
        self.changed()

    def _record_output_uses(self) -> None:
        _record(self, self._outputs, 0, len(self._outputs))

    def _drop_output_uses(self) -> None:
        _forget(self, self._outputs, 0, len(self._outputs))

    def _set_live(self, live: bool) -> None:
        """A nested graph reads only while its owner sits in a graph: record or forget every read in it."""
        if live == self._live:
            return
        self._live = live
        if live:
            self._record_output_uses()
        else:
            self._drop_output_uses()
        for node in self._nodes:
            if live:
                node._record_uses()
            else:
                node._drop_uses()
            for sub in node.subgraphs():
                sub._set_live(live)

    # --- the model around it -----------------------------------------------------------------------

    def parent(self) -> Graph | None:
        """The graph the owner of this graph is in."""
        return self.owner.graph if self.owner is not None else None

    def model_state(self) -> _ModelState:
        """The state shared by every graph of the model this graph is part of."""
        graph = self
        while (up := graph.parent()) is not None:
            graph = up
        if graph._state is None:
            graph._state = _ModelState()
        return graph._state

    def changed(self) -> None:
        """Count an edit: the pass manager compares counts to know what a pass changed."""
        self.model_state().changes += 1

    def structured(self) -> list[tuple[Graph, Node]]:
        """Every loop and conditional at any depth with the graph it is in, outer before inner: what
        structural passes visit, found without walking the other nodes."""
        found: list[tuple[Graph, Node]] = []
        stack: list[Graph] = [self]
        while stack:
            graph = stack.pop()
            for node in graph._structured:
                found.append((graph, node))
                stack.extend(reversed(node.subgraphs()))
        return found

    def find(self, *ops: str) -> Iterator[tuple[Graph, Node]]:
        """The nodes of these op types in this graph and the graphs nested in it, in :meth:`walk`'s order,
        without walking the graphs that hold none (a pass that rewrites one op type costs nothing where
        that op is absent)."""
        if any(self._op_counts.get(op) for op in ops):
            structured = self._structured
            for node in self._nodes:
                if node.op in ops:
                    yield self, node
                if node in structured:
                    for sub in node.subgraphs():
                        yield from sub.find(*ops)
            return
        nested = self._structured if len(self._structured) < 2 else [n for n in self._nodes if n in self._structured]
        for node in nested:  # in graph order: the structured nodes joined it in another
            for sub in node.subgraphs():
                yield from sub.find(*ops)

    def walk(self) -> Iterator[tuple[Graph, Node]]:
        """Every node of this graph and of the graphs nested in it, outer before inner."""
        structured = self._structured
        for node in self._nodes:
            yield self, node
            if node in structured:  # nested graphs right after their node; then the rest of this one
                for sub in node.subgraphs():
                    yield from sub.walk()


def _record(user: Node | Graph, values: list[Value] | list[Value | None], start: int, stop: int) -> None:
    """Record the reads of ``values[start:stop]`` by ``user``."""
    for slot in range(start, stop):
        value = values[slot]
        if value is not None:
            value._uses[Use(user, slot)] = None


def _forget(user: Node | Graph, values: list[Value] | list[Value | None], start: int, stop: int) -> None:
    """Forget the reads of ``values[start:stop]`` by ``user``."""
    for slot in range(start, stop):
        value = values[slot]
        if value is not None:
            value._uses.pop(Use(user, slot), None)


def _inside(user: Node | Graph, node: Node) -> bool:
    """Whether ``user`` is ``node`` itself or nested in it (reads that die with it)."""
    graph = user if isinstance(user, Graph) else user.graph
    if user is node:
        return True
    while graph is not None:
        if graph.owner is node:
            return True
        graph = graph.parent()
    return False


def _describe_user(user: Node | Graph) -> str:
    return user.describe() if isinstance(user, Node) else f"the outputs of graph {user.name!r}"


class Model:
    """A graph with what it came from (for messages and reports)."""

    def __init__(self, graph: Graph, source: str = "", opset: int = 0, output_names: list[str] | None = None) -> None:
        self.graph = graph
        self.source = source
        self.opset = opset
        #: The names the model's outputs must keep, whatever values passes put in ``graph.outputs``.
        self.output_names: list[str] = list(output_names or [])
        #: The other names of an input, each to the name its network input has (an OpenVINO Parameter's
        #: tensor may have several, and the runtime takes data by any of them).
        self.input_aliases: dict[str, str] = {}

    def outputs(self) -> list[tuple[str, Value]]:
        names = self.output_names or [v.name for v in self.graph.outputs]
        return list(zip(names, self.graph.outputs))


def text_attr(node: Node, name: str, default: str = "") -> str:
    """A string attribute as str (an ONNX attribute may reach a node as bytes)."""
    value = node.attrs.get(name, default)
    return value.decode() if isinstance(value, bytes) else str(value)


def constant_value(value: Value | None) -> Any:
    """The array held by the Constant node that produces ``value``, else None."""
    if value is None or value.producer is None or value.producer.op != "Constant":
        return None
    return value.producer.attrs.get("value")


def constant_int(value: Value | None) -> int | None:
    """The integer a Constant node of one integer element holds (a scalar or a one-element array), else None."""
    array = constant_value(value)
    if array is None:
        return None
    array = np.asarray(array)
    return int(array.reshape(-1)[0]) if array.size == 1 and array.dtype.kind in "iu" else None


def type_text(value: Value) -> str:
    """``f32[5,3]``, ``i64[?,n]``, ``?`` — the type as the text form shows it."""
    dt = "?" if value.dtype is None else _short_dtype(value.dtype)
    if value.shape is None:
        return f"{dt}[...]"
    dims = ",".join("?" if d is None else str(d) for d in value.shape)
    return f"{dt}[{dims}]"


#: The short element type names of the text form; every other dtype is written by its NumPy name.
SHORT_DTYPES = {"float32": "f32", "float16": "f16", "float64": "f64", "int64": "i64", "int32": "i32", "int16": "i16",
                "int8": "i8", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "bool",
                "bfloat16": "bf16"}


def _short_dtype(dtype: np.dtype[Any]) -> str:
    return SHORT_DTYPES.get(dtype.name, dtype.name)

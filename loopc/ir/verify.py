"""The IR verifier: run after the frontend and after every pass, so a broken invariant is caught
where it was broken, not later inside TensorRT.

One walk over the model, outer graphs before inner ones, recording the graph each value is defined in as
its definition is reached: a read sees its value when that graph is one being checked (the read's own or
an enclosing one), so a check costs time linear in the model's size however deeply loops nest. Each rule
has a name (``VerificationError.rule``), which the message carries too:

=================  ===================================================================================
rule               what holds
=================  ===================================================================================
single-definition  each value is defined once (a graph input or one node's output)
scope              a read sees its value: defined earlier in the same graph, or in an enclosing graph
                   before the nested node (never a sibling body's value, never a later one)
graph-outputs      a graph's outputs are values it sees at its end
producer           ``value.producer`` is the node listing it as an output; graph inputs have none
loop-bound         a loop has a trip count, a condition, or both
loop-limits        trip count and max_trips are integer scalars
role-scope         trip count, max_trips, iterator sources and recurrence inits are defined before
                   the loop, outside its body; recurrence next values and stacked outputs are seen
                   at the body's end (body values, or outer invariants: the body may read those)
condition          the condition is a bool scalar defined in the body (a parameter or a body result),
                   read with each trip's bindings; an outer value cannot stop a loop
recurrence-types   init, state and next have one dtype and compatible shapes
iterator-axis      an iterator's axis is within its source's rank
iterator-type      an iterator's param has the source's dtype and shape without that axis
last-output        a ``last`` output reads a recurrence state
output-axis        a concat/reverse output's axis is within its result's rank (one more than the value's)
output-dtype       an output's result has its value's dtype
padded-length      a padded loop with stacked outputs and no trip count has ``max_trips``
loop-signature     ``loop.inputs``/``outputs`` and the body's inputs/outputs are the values the roles
                   name (a role list edited without the loop learning of it breaks this)
if-condition       a conditional reads one bool scalar
if-branches        each branch takes no inputs and yields the node's outputs' count and dtypes
uses               when values record their uses: each recorded use is a real read by a node or graph
                   of the model, and each read is recorded (no dangling use)
loop-target        once loops are legalized (``legal=True``): no loop breaks TensorRT's in-loop rule
                   (:mod:`loopc.ir.target`: a shape taken from per-trip values, a carried value that
                   changes shape)
=================  ===================================================================================

Shapes are compatible when their ranks agree and no dimension is a different known size in each;
an unknown dtype or shape is compatible with anything.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from loopc.errors import InternalError
from loopc.ir.core import Graph, Node, Shape, Value, type_text
from loopc.ir.loop import If, Loop
from loopc.ir.target import violations


class VerificationError(InternalError):
    """The IR breaks an invariant: a bug in whatever produced it.

    ``rule`` names the invariant (see the module's table), ``node`` the node it was found at (its
    :meth:`~loopc.ir.core.Node.describe`, or a graph's name), ``after`` what ran last.
    """

    def __init__(self, message: str, *, rule: str, node: str = "", after: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.rule = rule
        self.node = node
        self.after = after


def verify(graph: Graph, after: str = "", legal: bool = False) -> None:
    """Raise :class:`VerificationError` naming what ran last (``after``), the rule and the node; with ``legal``,
    check TensorRT's loop rule too (what legalization promises)."""
    try:
        _Verifier().run(graph)
        if legal:
            _check_target(graph)
    except VerificationError as exc:
        raise _after(exc, after) from None


def verify_target(graph: Graph, after: str = "") -> None:
    """Only the ``loop-target`` rule, for a model whose other rules were verified since it last changed."""
    try:
        _check_target(graph)
    except VerificationError as exc:
        raise _after(exc, after) from None


def _check_target(graph: Graph) -> None:
    for loop, at, why in violations(graph):
        raise _fail("loop-target", at if isinstance(at, Node) else loop, f"in {loop.describe()}: {why}")


def _after(exc: VerificationError, after: str) -> VerificationError:
    where = f" after {after}" if after else ""
    return VerificationError(f"IR check failed{where} (rule {exc.rule}): {exc.message}", rule=exc.rule,
                             node=exc.node, after=after)


def _fail(rule: str, where: Node | Graph, detail: str) -> VerificationError:
    name = where.describe() if isinstance(where, Node) else f"graph {where.name!r}"
    return VerificationError(f"{name}: {detail}", rule=rule, node=name)


class _Verifier:
    def __init__(self) -> None:
        #: The graph each value defined so far is defined in (by id): to find a second definition, and
        #: how the condition rule tells body values from outer ones.
        self.home: dict[Value, Graph] = {}
        #: The graphs being checked: the current one and those enclosing it, whose values it sees.
        self.open: set[Graph] = set()
        #: For the uses rule: the reads made, the uses the values defined record, and the first read
        #: its value does not record (reported once every other rule has held).
        self.reads = 0
        self.recorded = 0
        self.unrecorded: tuple[Node | Graph, int, Value] | None = None

    def run(self, graph: Graph) -> None:
        self.graph(graph)
        self.uses(graph)

    def sees(self, value: Value) -> bool:
        """Whether ``value`` is visible here: defined so far in a graph still being checked."""
        return self.home.get(value) in self.open

    # ------------------------------------------------------------------------------------ SSA

    def define(self, value: Value, graph: Graph, where: Node | Graph) -> None:
        if value in self.home:
            raise _fail("single-definition", where, f"value {value.name!r} is defined twice")
        self.home[value] = graph
        self.recorded += len(value._uses)

    def graph(self, graph: Graph, at_end: Callable[[], None] | None = None) -> None:
        """Check ``graph``, whose values are visible while it is checked; ``at_end`` runs while they still are.
        The rules every node is checked by are written out in the loop over nodes (the verifier runs
        after every pass that changed the model: this loop is most of its time)."""
        home, visible = self.home, self.open
        visible.add(graph)
        try:
            for value in graph.inputs:
                if value.producer is not None:
                    raise _fail("producer", graph, f"input {value.name!r} names a producer, "
                                                   f"{value.producer.describe()}")
                self.define(value, graph, graph)
            for node in graph.nodes:
                inputs = node.inputs
                if isinstance(node, Loop):
                    self.loop(node)  # checks the roles, which the loop's inputs must equal
                else:
                    for read in inputs:
                        if read is not None and home.get(read) not in visible:
                            raise _fail("scope", node, _unseen(read))
                self.count_reads(node, inputs)
                if isinstance(node, If):
                    self.conditional(node)
                outputs = node.outputs
                for value in outputs:
                    if value.producer is not node:
                        other = "none" if value.producer is None else value.producer.describe()
                        raise _fail("producer", node, f"output {value.name!r} names another producer ({other})")
                    if value in home:
                        raise _fail("single-definition", node, f"value {value.name!r} is defined twice")
                    home[value] = graph
                    self.recorded += len(value._uses)
            if at_end is not None:
                at_end()
            for value in graph.outputs:
                if not self.sees(value):
                    raise _fail("graph-outputs", graph, f"outputs {value.name!r}, which it does not define or see")
            self.count_reads(graph, graph.outputs)
        finally:
            visible.discard(graph)

    # ---------------------------------------------------------------------------------- loops

    def loop(self, loop: Loop) -> None:
        self.signature(loop)
        if loop.trip_count is None and loop.condition is None:
            raise _fail("loop-bound", loop, "has neither a trip count nor a condition")
        for role, value in (("trip count", loop.trip_count), ("max_trips", loop.max_trips)):
            if value is not None:
                self.outside(loop, role, value)
                problem = _not_scalar(value, "iu", "an integer")
                if problem:
                    raise _fail("loop-limits", loop, f"{role} {value.name!r} {problem}")
        for it in loop.iterators:
            self.outside(loop, f"iterator {it.param.name!r}: source", it.source)
            _check_iterator(loop, it.param, it.source, it.axis)
        for rec in loop.recurrences:
            self.outside(loop, f"recurrence {rec.state.name!r}: init", rec.init)
            _check_carried(loop, rec.state, rec.init, "init")
        states = {r.state for r in loop.recurrences}
        for out in loop.loop_outputs:
            _check_output(loop, out.kind, out.value, out.result, out.axis, states)
        if loop.padded and loop.trip_count is None and loop.max_trips is None:
            stacked = [o.result.name for o in loop.loop_outputs if o.kind != "last"]
            if stacked:
                raise _fail("padded-length", loop, f"is padded with stacked output(s) {stacked} and no trip count: "
                                                   "it needs max_trips")

        def at_end() -> None:
            self.loop_body_end(loop)

        self.graph(loop.body, at_end)

    def outside(self, loop: Loop, role: str, value: Value) -> None:
        if self.sees(value):
            return
        inside = value.producer is not None and any(n is value.producer for n in loop.body.nodes)
        inside = inside or any(v is value for v in loop.body.inputs)
        where = "is defined in the loop's body" if inside else "is not defined before the loop"
        raise _fail("role-scope", loop, f"{role} {value.name!r} {where}; it must be an outer value")

    def loop_body_end(self, loop: Loop) -> None:
        """The roles read at the body's end: condition, next values, stacked outputs' values."""
        cond = loop.condition
        if cond is not None:
            outer = self.sees(cond) and self.home.get(cond) is not loop.body
            if self.home.get(cond) is not loop.body:
                where = "an outer value" if outer else "not a value the body defines"
                raise _fail("condition", loop, f"condition {cond.name!r} is {where}; it must be computed in the "
                                               "body (a parameter or a body node's result)")
            problem = _not_scalar(cond, "b", "a bool")
            if problem:
                raise _fail("condition", loop, f"condition {cond.name!r} {problem}")
        for rec in loop.recurrences:
            if not self.sees(rec.next):
                raise _fail("role-scope", loop, f"recurrence {rec.state.name!r}: next {rec.next.name!r} {_NOT_SEEN}")
            _check_carried(loop, rec.state, rec.next, "next")
        for out in loop.loop_outputs:
            if not self.sees(out.value):
                raise _fail("role-scope", loop, f"{out.kind} output {out.result.name!r}: value {out.value.name!r} "
                                                f"{_NOT_SEEN}")

    def signature(self, loop: Loop) -> None:
        """The loop's and body's operand lists hold exactly the values the roles name (order aside)."""
        outer = [loop.trip_count, loop.max_trips, *(it.source for it in loop.iterators),
                 *(r.init for r in loop.recurrences)]
        params = [loop.counter, *(it.param for it in loop.iterators), *(r.state for r in loop.recurrences)]
        results = [loop.condition, *(r.next for r in loop.recurrences), *(o.value for o in loop.loop_outputs)]
        for what, held, named in (
            ("inputs", loop.inputs, outer),
            ("outputs", loop.outputs, [o.result for o in loop.loop_outputs]),
            ("body inputs", loop.body.inputs, params),
            ("body outputs", loop.body.outputs, results),
        ):
            problem = _differ(held, named)
            if problem:
                raise _fail("loop-signature", loop, f"{what} are not what its roles name: {problem}")

    # --------------------------------------------------------------------------- conditionals

    def conditional(self, node: If) -> None:
        cond = node.inputs[0] if node.inputs else None
        if cond is None:
            raise _fail("if-condition", node, "has no condition")
        problem = _not_scalar(cond, "b", "a bool")
        if problem:
            raise _fail("if-condition", node, f"condition {cond.name!r} {problem}")
        for branch in node.subgraphs():
            if branch.inputs:
                raise _fail("if-branches", node, f"branch {branch.name!r} takes inputs "
                                                 f"{[v.name for v in branch.inputs]}; branches take none")
            self.graph(branch)
            if len(branch.outputs) != len(node.outputs):
                raise _fail("if-branches", node, f"branch {branch.name!r} has {len(branch.outputs)} outputs, "
                                                 f"the node {len(node.outputs)}")
            for yielded, result in zip(branch.outputs, node.outputs):
                if _dtypes_differ(yielded.dtype, result.dtype):
                    raise _fail("if-branches", node, f"branch {branch.name!r} yields {yielded.name!r} as "
                                                     f"{yielded.dtype} for output {result.name!r} of {result.dtype}")

    # ------------------------------------------------------------------------------------ uses

    def count_reads(self, user: Node | Graph, values: Sequence[Value | None]) -> None:
        """Count ``user``'s reads; note the first one its value does not record."""
        for slot, value in enumerate(values):
            if value is not None:
                self.reads += 1
                if self.unrecorded is None and (user, slot) not in value._uses:  # a Use is a tuple
                    self.unrecorded = (user, slot, value)

    def uses(self, graph: Graph) -> None:
        """Each read is recorded, and as many uses are recorded as there are reads: so each recorded
        use is a read by a node or graph of the model (a use list is a set: no use is there twice).
        When that fails, a recorded use that is no read is named first: it says more."""
        if self.unrecorded is None and self.recorded == self.reads:
            return
        _extra_use(graph)
        if self.unrecorded is None:
            raise InternalError("the verifier counted more recorded uses than reads but found none extra")
        user, slot, value = self.unrecorded
        raise _fail("uses", user, f"reads {value.name!r} at slot {slot}, a use {value.name!r} does not record")


def _extra_use(graph: Graph) -> None:
    """Raise naming a use recorded by a value of ``graph`` that is no read, if there is one."""
    nodes = [node for _, node in graph.walk()]
    graphs = [graph, *(sub for node in nodes for sub in node.subgraphs())]
    members = {user for user in [*nodes, *graphs]}
    values = [v for g in graphs for v in g.inputs] + [v for node in nodes for v in node.outputs]
    for value in values:
        for user, slot in value._uses:
            if user not in members:  # only nodes and graphs of the model are members
                name = user.describe() if isinstance(user, Node) else f"graph {getattr(user, 'name', user)!r}"
                raise VerificationError(f"value {value.name!r} records a use by {name}, which is not in the "
                                        "model (a dangling use)", rule="uses", node=name)
            read = _reads(user)
            if not 0 <= slot < len(read) or read[slot] is not value:
                there = read[slot] if 0 <= slot < len(read) else None
                got = "nothing" if there is None else repr(there.name)
                raise _fail("uses", user, f"{value.name!r} records a use at slot {slot}, where it reads {got}")


# ------------------------------------------------------------------------------------- helpers

_NOT_SEEN = "is not seen at the body's end (neither a body value nor an outer one defined before the loop)"


def _reads(user: Node | Graph) -> Sequence[Value | None]:
    """What a user reads, by slot: a node's inputs, a graph's outputs (not copied: a loop's body may
    have thousands of outputs, each one a use looked up here)."""
    return user.inputs if isinstance(user, Node) else user.outputs


def _unseen(value: Value) -> str:
    """Why a read does not see ``value`` (said from what the value knows, not by searching)."""
    source = f" (the result of {value.producer.describe()})" if value.producer is not None else ""
    return f"reads {value.name!r}{source}, which is not defined before it in this graph or an enclosing one"


def _differ(held: Sequence[Value | None], named: Sequence[Value | None]) -> str:
    """How ``held`` differs from ``named`` as multisets of values ('' when they agree)."""
    have = Counter(v for v in held if v is not None)
    want = Counter(v for v in named if v is not None)
    if have == want:
        return ""
    names = {v: v.name for v in [*held, *named] if v is not None}
    extra = sorted(names[k] for k in (have - want).elements())
    missing = sorted(names[k] for k in (want - have).elements())
    return ", ".join(([f"{extra} too many"] if extra else []) + ([f"{missing} missing"] if missing else []))


def _not_scalar(value: Value, kinds: str, what: str) -> str:
    """'' when ``value`` may be a scalar of a dtype kind in ``kinds`` (rank 0, or rank 1 of one element)."""
    if value.dtype is not None and np.dtype(value.dtype).kind not in kinds:
        return f"is {value.dtype}, not {what} scalar"
    shape = value.shape
    if shape is not None and (len(shape) > 1 or (len(shape) == 1 and isinstance(shape[0], int) and shape[0] != 1)):
        return f"is not a scalar ({type_text(value)})"
    return ""


def _dtypes_differ(a: np.dtype[Any] | None, b: np.dtype[Any] | None) -> bool:
    return a is not None and b is not None and np.dtype(a) != np.dtype(b)


def _shapes_differ(a: Shape | None, b: Shape | None) -> bool:
    if a is None or b is None:
        return False
    if len(a) != len(b):
        return True
    return any(isinstance(x, int) and isinstance(y, int) and x != y for x, y in zip(a, b))


def _check_carried(loop: Loop, state: Value, other: Value, role: str) -> None:
    """A recurrence's init or next has the state's type."""
    differ = _shapes_differ(state.shape, other.shape)
    if _dtypes_differ(state.dtype, other.dtype) or differ:
        raise _fail("recurrence-types", loop, f"recurrence {state.name!r} is {type_text(state)} but its {role} "
                                              f"{other.name!r} is {type_text(other)}")


def _check_iterator(loop: Loop, param: Value, source: Value, axis: int) -> None:
    if source.shape is not None and not 0 <= axis < len(source.shape):
        raise _fail("iterator-axis", loop, f"iterator {param.name!r} slices {source.name!r} "
                                           f"({type_text(source)}) on axis {axis}, outside its rank")
    sliced = None if source.shape is None else source.shape[:axis] + source.shape[axis + 1:]
    if _dtypes_differ(param.dtype, source.dtype) or _shapes_differ(param.shape, sliced):
        raise _fail("iterator-type", loop, f"iterator {param.name!r} is {type_text(param)}, but a slice of "
                                           f"{source.name!r} ({type_text(source)}) on axis {axis} is not")


def _check_output(loop: Loop, kind: str, value: Value, result: Value, axis: int, states: set[Value]) -> None:
    if kind == "last" and value not in states:
        raise _fail("last-output", loop, f"'last' output {result.name!r} must read a recurrence state, "
                                         f"not {value.name!r}")
    if kind != "last" and result.shape is not None:
        if not 0 <= axis < len(result.shape):
            raise _fail("output-axis", loop, f"{kind} output {result.name!r} ({type_text(result)}) stacks on "
                                             f"axis {axis}, outside its rank")
        if value.shape is not None and len(value.shape) + 1 != len(result.shape):
            raise _fail("output-axis", loop, f"{kind} output {result.name!r} ({type_text(result)}) stacks "
                                             f"{value.name!r} ({type_text(value)}): its rank must be one more")
    if _dtypes_differ(value.dtype, result.dtype):
        raise _fail("output-dtype", loop, f"{kind} output {result.name!r} is {result.dtype} but its value "
                                          f"{value.name!r} is {value.dtype}")


__all__ = ["VerificationError", "verify", "verify_target"]

"""The IR's named edits: every change of an operand, result or loop role goes through a call that keeps the
use lists and the loop's operand layout right; plain assignment or list methods cannot edit a graph."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from loopc.errors import InternalError
from loopc.ir import Graph, Loop, LoopIterator, LoopOutput, Node, Recurrence, Use, Value, verify

F32 = np.dtype(np.float32)
I64 = np.dtype(np.int64)


def f32(name: str, *shape: int) -> Value:
    return Value(name, F32, shape)


def test_operands_read_as_tuples_and_change_only_through_calls() -> None:
    a, b, c, out = f32("a", 3), f32("b", 3), f32("c", 3), f32("out", 3)
    add = Node("Add", [a, b], [out])
    graph = Graph("g", [a, b, c], [out], [add])
    assert add.inputs == (a, b) and graph.outputs == (out,)
    with pytest.raises(AttributeError):
        add.inputs.append(c)  # type: ignore[attr-defined]
    add.set_input(1, c)
    assert add.inputs == (a, c) and b.uses() == [] and c.uses() == [Use(add, 1)]
    assert add.replace_input(a, c) == 1 and c.uses() == [Use(add, 1), Use(add, 0)] and not a.is_used()


def test_replace_all_uses_moves_node_and_graph_reads() -> None:
    a, b, out = f32("a", 3), f32("b", 3), f32("out", 3)
    neg = Node("Neg", [a], [out])
    graph = Graph("g", [a, b], [a, out], [neg])
    assert a.replace_all_uses_with(b) == 2
    assert neg.inputs == (b,) and graph.outputs == (b, out) and not a.is_used()
    assert sorted(u.slot for u in b.uses()) == [0, 0]


def test_inserting_an_operand_renumbers_the_reads_after_it() -> None:
    a, b, c, out = f32("a", 3), f32("b", 3), f32("c", 3), f32("out", 3)
    total = Node("Sum", [a, b], [out])
    Graph("g", [a, b, c], [out], [total])
    total.set_inputs([c, a, b])
    assert [u.slot for u in a.uses()] == [1] and [u.slot for u in b.uses()] == [2] and c.uses() == [Use(total, 0)]


class Carry:
    """A loop summing the rows of x[5, 3] into a [3] state, with a stacked output of the partial sums."""

    def __init__(self) -> None:
        self.x, self.init = f32("x", 5, 3), f32("init", 3)
        self.row, self.state, self.next = f32("row", 3), f32("sum", 3), f32("sum_out", 3)
        self.total, self.partials = f32("total", 3), f32("partials", 5, 3)
        self.trips = Value("n", I64, ())
        self.it = LoopIterator(self.row, self.x)
        self.rec = Recurrence(self.state, self.init, self.next)
        self.outs = [LoopOutput("last", self.state, self.total), LoopOutput("concat", self.next, self.partials)]
        self.loop = Loop(Graph("body", nodes=[Node("Add", [self.state, self.row], [self.next])]),
                         trip_count=self.trips, iterators=[self.it], recurrences=[self.rec],
                         loop_outputs=self.outs, name="loop")
        self.graph = Graph("main", [self.x, self.init, self.trips], [self.total, self.partials], [self.loop])


def test_a_loop_lays_out_its_operands_from_its_roles() -> None:
    s = Carry()
    assert s.loop.inputs == (s.trips, s.x, s.init) and s.loop.outputs == (s.total, s.partials)
    assert s.loop.body.inputs == (s.row, s.state) and s.loop.body.outputs == (s.next, s.state, s.next)
    verify(s.graph)


def test_roles_are_frozen_and_edited_through_their_loop() -> None:
    s = Carry()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.rec.next = s.row  # type: ignore[misc]
    s.loop.update(s.rec, next=s.row)
    assert s.rec.next is s.row and s.loop.body.outputs == (s.row, s.state, s.next)
    assert Use(s.loop.body, 0) in s.row.uses()
    verify(s.graph)


def test_adding_an_iterator_moves_only_the_operands_after_it() -> None:
    s = Carry()
    y, col = f32("y", 5, 3), f32("col", 3)
    extra = LoopIterator(col, y)
    s.loop.add_iterator(extra)
    assert s.loop.inputs == (s.trips, s.x, y, s.init) and s.loop.body.inputs == (s.row, col, s.state)
    assert s.init.uses() == [Use(s.loop, 3)] and y.uses() == [Use(s.loop, 2)]
    s.loop.remove_iterator(extra)
    assert s.loop.inputs == (s.trips, s.x, s.init) and not y.is_used() and s.init.uses() == [Use(s.loop, 2)]
    verify(s.graph)


def test_generic_edits_of_a_loop_go_through_its_roles() -> None:
    s = Carry()
    other = f32("other", 3)
    s.graph.add_input(other)
    s.init.replace_all_uses_with(other)  # the loop's operand 2 is the recurrence's init
    assert s.rec.init is other and s.loop.inputs[2] is other
    s.next.replace_all_uses_with(s.row)  # body results: the recurrence's next and the stacked output's value
    assert s.rec.next is s.row and s.outs[1].value is s.row


def test_removing_many_roles_at_once_keeps_the_layout() -> None:
    s = Carry()
    s.loop.remove_roles([s.outs[1]])
    assert s.loop.outputs == (s.total,) and s.loop.body.outputs == (s.next, s.state)
    s.graph.set_outputs([s.total])
    verify(s.graph)


def test_a_loop_body_s_inputs_and_outputs_follow_the_loop() -> None:
    s = Carry()
    with pytest.raises(InternalError, match="follow"):
        s.loop.body.set_outputs([s.next])
    with pytest.raises(InternalError, match="follow"):
        s.loop.set_inputs([s.x])


def test_a_role_belongs_to_one_loop_once() -> None:
    s = Carry()
    with pytest.raises(InternalError, match="already a role"):
        s.loop.add_iterator(s.it)
    with pytest.raises(InternalError, match="not a role"):
        s.loop.update(LoopIterator(f32("p", 3), s.x), axis=1)


def test_set_counter_and_condition_move_the_leading_body_operands() -> None:
    s = Carry()
    counter, go = Value("i", I64, ()), Value("go", np.dtype(bool), ())
    s.loop.set_counter(counter)
    s.loop.set_condition(go)
    assert s.loop.body.inputs == (counter, s.row, s.state)
    assert s.loop.body.outputs == (go, s.next, s.state, s.next)
    s.loop.set_condition(None)
    s.loop.set_counter(None)
    assert s.loop.body.inputs == (s.row, s.state) and not go.is_used()

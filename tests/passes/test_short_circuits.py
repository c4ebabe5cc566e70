"""Conditionals that only choose a flag, one of whose branches is a constant, become logic on their condition
(static-conditionals): ``if gate or i >= n: break`` as TorchScript writes it is two such Ifs, and as ``not gate
and not i >= n`` its counter test is a conjunct counted-loops can read."""

from __future__ import annotations

import itertools
from textwrap import dedent

import numpy as np
import pytest

from loopc.ir import Graph, If, Loop, constant_value, parse, verify
from loopc.ir.interpret import interpret
from loopc.passes import CountedLoops, DeadCode, PassManager, StaticConditionals

FLAGS = [np.array(flag) for flag in (False, True)]


def ir(text: str) -> Graph:
    graph = parse(dedent(text).strip())
    verify(graph)
    return graph


def one_if(then: str, otherwise: str) -> Graph:
    """``y = p ? <then> : <otherwise>``, each a constant flag or ``b``: ``q`` read by a node of its branch."""
    def branch(what: str, side: str) -> str:
        if what == "b":
            return "%b: bool[] = Xor(%q, %p)\n              yield %b"
        return f"%{side}: bool[] = Constant() value=bool[]:[{what}]\n              yield %{side}"
    return ir(f"""
        graph main(%p: bool[], %q: bool[]) -> (%y) {{
          %y: bool[] = if %p {{
            then {{
              {branch(then, 'k_then')}
            }}
            else {{
              {branch(otherwise, 'k_else')}
            }}
          }}
        }}
    """)


@pytest.mark.parametrize("then, otherwise", [("true", "b"), ("false", "b"), ("b", "true"), ("b", "false"),
                                             ("true", "false"), ("false", "true"), ("true", "true")])
def test_an_if_that_chooses_a_flag_is_logic_on_its_condition(then: str, otherwise: str) -> None:
    """``If(a, True, b)`` is ``a or b``, ``If(a, False, b)`` is ``not a and b``, and so on; every input gives what
    the If gave, with no If left."""
    def expected(p: bool, q: bool) -> bool:
        chosen = then if p else otherwise
        return bool(p ^ q) if chosen == "b" else chosen == "true"

    graph = one_if(then, otherwise)
    assert StaticConditionals()(graph).modified
    verify(graph)
    assert not any(isinstance(node, If) for _, node in graph.walk())
    for p, q in itertools.product(FLAGS, FLAGS):
        (y,) = interpret(graph, {"p": p, "q": q})
        assert bool(y) == expected(bool(p), bool(q)), (p, q)


WHILE_TRUE = """
    graph main(%x: f32[8], %limit: i64[]) -> (%picked) {
      %n: i64[] = Constant() value=i64[]:[100]
      %yes: bool[] = Constant() value=bool[]:[true]
      %zero: i64[] = Constant() value=i64[]:[0]
      %picked: f32[...] = loop count=%n while=%go {
        recurrence %go: bool[] = %yes -> %go_next
        recurrence %i: i64[] = %zero -> %i_next
        %one: i64[] = Constant() value=i64[]:[1]
        %i_next: i64[] = Add(%i, %one)
        %at: i64[1] = Unsqueeze(%i, %zero)
        %v: f32[1] = Gather(%x, %at) axis=0
        %half: f32[1] = Constant() value=f32[1]:[0.5]
        %gate1: bool[1] = Greater(%v, %half)
        %gate: bool[] = Squeeze(%gate1)
        %long: bool[] = GreaterOrEqual(%i_next, %limit)
        %stop: bool[] = if %gate {
          then {
            %t: bool[] = Constant() value=bool[]:[true]
            yield %t
          }
          else {
            yield %long
          }
        }
        %stop_flag: bool[] = Cast(%stop) to=9
        %go_next: bool[] = if %stop_flag {
          then {
            %f: bool[] = Constant() value=bool[]:[false]
            yield %f
          }
          else {
            %t2: bool[] = Constant() value=bool[]:[true]
            yield %t2
          }
        }
        concat %picked = %v axis 0
      }
    }
"""


def test_a_break_on_a_gate_or_a_length_is_counted() -> None:
    """``while True: ...; if x[i] > 0.5 or i + 1 >= limit: break``: the negated ``or`` is pushed into a
    conjunction (through the exporter's bool Cast), whose ``i + 1 < limit`` bounds the trips by ``limit``."""
    graph = ir(WHILE_TRUE)
    loop = next(node for node in graph.nodes if isinstance(node, Loop))
    count = loop.trip_count
    PassManager([StaticConditionals(), CountedLoops(), DeadCode()]).run(graph)
    assert not any(isinstance(node, If) for _, node in graph.walk())
    assert loop.trip_count is not count and constant_value(loop.trip_count) is None  # counted from ``limit``
    x = np.array([0.1, 0.2, 0.3, 0.9, 0.1, 0.2, 0.3, 0.4], np.float32)
    for limit, trips in ((2, 2), (6, 4), (20, 4)):
        (picked,) = interpret(graph, {"x": x, "limit": np.array(limit, np.int64)})
        np.testing.assert_array_equal(picked, x[:trips, None])

"""Each canonicalization pass on small loops written as IR text: the text it must leave, and the numbers.

Every case states the IR before, the IR the pass must leave (written by hand from what the pass
promises), and the outputs on a fixed input, computed by hand. The IR interpreter runs the graph
before and after the pass, so a rewrite that changes the text right but the meaning wrong fails too.
"""

from __future__ import annotations

from collections.abc import Sequence
from textwrap import dedent

import numpy as np
import pytest

from loopc.errors import PassError
from loopc.ir import Graph, format_graph, parse, verify
from loopc.ir.interpret import interpret
from loopc.passes import (ConstantFolding, DeadCode, GatherToIterator, Identities, Invariants, Pass, PassManager,
                          PassResult, RowSlices, SequenceAccumulation, StaticConditionals, TripLimits, default_passes)

X = np.arange(12, dtype=np.float32).reshape(4, 3)
#: The column sums of X: 0+3+6+9, 1+4+7+10, 2+5+8+11.
SUMS = np.array([18, 22, 26], np.float32)


def ir(text: str) -> Graph:
    graph = parse(dedent(text).strip())
    verify(graph)
    return graph


def check(p: Pass, before: str, after: str, feeds: dict[str, np.ndarray], expected: Sequence[np.ndarray]) -> PassResult:
    """Run ``p`` on ``before``; the graph must print as ``after`` and compute ``expected`` before and after."""
    graph = ir(before)
    _outputs(graph, feeds, expected)
    result = p(graph)
    verify(graph, after=p.name)
    assert format_graph(graph) == dedent(after).strip()
    _outputs(graph, feeds, expected)
    return result


def _outputs(graph: Graph, feeds: dict[str, np.ndarray], expected: Sequence[np.ndarray]) -> None:
    got = interpret(graph, feeds)
    assert len(got) == len(expected)
    for value, want in zip(got, expected):
        np.testing.assert_allclose(value, want, rtol=0, atol=0)


SUM_WITH_EXTRAS = """
    graph main(%x: f32[4,3]) -> (%total) {
      %n: i64[] = Constant() value=i64[]:[4]
      %zeros: f32[3] = Constant() value=f32[3]:[0,0,0]
      %total: f32[3] = loop count=%n {
        counter %i: i64[]
        iterator %row: f32[3] = %x[axis 0]
        recurrence %s: f32[3] = %zeros -> %s_next
        recurrence %k: f32[3] = %zeros -> %k_next
        %s_next: f32[3] = Add(%s, %row)
        %k_next: f32[3] = Mul(%k, %row)
        last %total = %s
      }
    }
"""


def test_dead_code_removes_an_unused_carry_and_the_unused_counter() -> None:
    result = check(DeadCode(), SUM_WITH_EXTRAS, """
        graph main(%x: f32[4,3]) -> (%total) {
          %n: i64[] = Constant() value=i64[]:[4]
          %zeros: f32[3] = Constant() value=f32[3]:[0,0,0]
          %total: f32[3] = loop count=%n {
            iterator %row: f32[3] = %x[axis 0]
            recurrence %s: f32[3] = %zeros -> %s_next
            %s_next: f32[3] = Add(%s, %row)
            last %total = %s
          }
        }
    """, {"x": X}, [SUMS])
    assert result.stats == {"nodes": 1, "recurrences": 1, "counters": 1}


def test_dead_code_keeps_a_counter_that_is_read() -> None:
    text = """
        graph main(%x: f32[4,3]) -> (%total) {
          %n: i64[] = Constant() value=i64[]:[4]
          %zeros: f32[3] = Constant() value=f32[3]:[0,0,0]
          %total: f32[3] = loop count=%n {
            counter %i: i64[]
            recurrence %s: f32[3] = %zeros -> %s_next
            %row: f32[3] = Gather(%x, %i) axis=0
            %s_next: f32[3] = Add(%s, %row)
            last %total = %s
          }
        }
    """
    assert not check(DeadCode(), text, text, {"x": X}, [SUMS]).modified


def test_dead_code_removes_a_carried_value_that_only_feeds_itself() -> None:
    """h = h + row is never read outside its own recurrence: a cycle, dead although every value has a use."""
    result = check(DeadCode(), """
        graph main(%x: f32[4,3]) -> (%n) {
          %n: i64[] = Constant() value=i64[]:[4]
          %zeros: f32[3] = Constant() value=f32[3]:[0,0,0]
          %h_last: f32[3] = loop count=%n {
            iterator %row: f32[3] = %x[axis 0]
            recurrence %h: f32[3] = %zeros -> %h_next
            %h_next: f32[3] = Add(%h, %row)
            last %h_last = %h
          }
        }
    """, """
        graph main(%x: f32[4,3]) -> (%n) {
          %n: i64[] = Constant() value=i64[]:[4]
        }
    """, {"x": X}, [np.array(4, np.int64)])
    assert result.stats == {"nodes": 2}


def test_invariant_carry_becomes_a_direct_read_and_body_constants_leave_the_loop() -> None:
    """c never changes (its next value is itself): reads of it read its initial value; the constant 2 is hoisted."""
    result = check(Invariants(), """
        graph main(%x: f32[4,3]) -> (%total) {
          %n: i64[] = Constant() value=i64[]:[4]
          %ones: f32[3] = Constant() value=f32[3]:[1,1,1]
          %total: f32[3] = loop count=%n {
            iterator %row: f32[3] = %x[axis 0]
            recurrence %c: f32[3] = %ones -> %c
            recurrence %s: f32[3] = %ones -> %s_next
            %two: f32[] = Constant() value=f32[]:[2]
            %scaled: f32[3] = Mul(%c, %row)
            %doubled: f32[3] = Mul(%scaled, %two)
            %s_next: f32[3] = Add(%s, %doubled)
            last %total = %s
          }
        }
    """, """
        graph main(%x: f32[4,3]) -> (%total) {
          %n: i64[] = Constant() value=i64[]:[4]
          %ones: f32[3] = Constant() value=f32[3]:[1,1,1]
          %two: f32[] = Constant() value=f32[]:[2]
          %total: f32[3] = loop count=%n {
            iterator %row: f32[3] = %x[axis 0]
            recurrence %s: f32[3] = %ones -> %s_next
            %scaled: f32[3] = Mul(%ones, %row)
            %doubled: f32[3] = Mul(%scaled, %two)
            %s_next: f32[3] = Add(%s, %doubled)
            last %total = %s
          }
        }
    """, {"x": X}, [1 + 2 * SUMS])
    assert result.stats == {"recurrences": 1, "constants": 1}


def test_gather_by_counter_becomes_an_iterator() -> None:
    result = check(GatherToIterator(), """
        graph main(%x: f32[4,3]) -> (%total) {
          %n: i64[] = Constant() value=i64[]:[4]
          %zeros: f32[3] = Constant() value=f32[3]:[0,0,0]
          %total: f32[3] = loop count=%n {
            counter %i: i64[]
            recurrence %s: f32[3] = %zeros -> %s_next
            %row: f32[3] = Gather(%x, %i) axis=0
            %s_next: f32[3] = Add(%s, %row)
            last %total = %s
          }
        }
    """, """
        graph main(%x: f32[4,3]) -> (%total) {
          %n: i64[] = Constant() value=i64[]:[4]
          %zeros: f32[3] = Constant() value=f32[3]:[0,0,0]
          %total: f32[3] = loop count=%n {
            counter %i: i64[]
            iterator %row_iter: f32[3] = %x[axis 0]
            recurrence %s: f32[3] = %zeros -> %s_next
            %s_next: f32[3] = Add(%s, %row_iter)
            last %total = %s
          }
        }
    """, {"x": X}, [SUMS])
    assert result.stats == {"iterators": 1}


def test_always_true_condition_is_dropped_from_a_counted_loop() -> None:
    result = check(TripLimits(), """
        graph main(%x: f32[4,3]) -> (%total) {
          %n: i64[] = Constant() value=i64[]:[4]
          %zeros: f32[3] = Constant() value=f32[3]:[0,0,0]
          %total: f32[3] = loop count=%n while=%go {
            iterator %row: f32[3] = %x[axis 0]
            recurrence %s: f32[3] = %zeros -> %s_next
            %go: bool[] = Constant() value=bool[]:[true]
            %s_next: f32[3] = Add(%s, %row)
            last %total = %s
          }
        }
    """, """
        graph main(%x: f32[4,3]) -> (%total) {
          %n: i64[] = Constant() value=i64[]:[4]
          %zeros: f32[3] = Constant() value=f32[3]:[0,0,0]
          %total: f32[3] = loop count=%n {
            iterator %row: f32[3] = %x[axis 0]
            recurrence %s: f32[3] = %zeros -> %s_next
            %go: bool[] = Constant() value=bool[]:[true]
            %s_next: f32[3] = Add(%s, %row)
            last %total = %s
          }
        }
    """, {"x": X}, [SUMS])
    assert result.stats == {"conditions_dropped": 1}


def test_negative_trip_count_becomes_zero_trips() -> None:
    """ONNX runs no trip for M < 0; TensorRT's count must not be negative: the last value is the initial one."""
    result = check(TripLimits(), """
        graph main(%x: f32[4,3]) -> (%total) {
          %n: i64[] = Constant() value=i64[]:[-3]
          %zeros: f32[3] = Constant() value=f32[3]:[0,0,0]
          %total: f32[3] = loop count=%n {
            recurrence %s: f32[3] = %zeros -> %s_next
            %s_next: f32[3] = Add(%s, %x)
            last %total = %s
          }
        }
    """.replace("%x: f32[4,3]", "%x: f32[3]"), """
        graph main(%x: f32[3]) -> (%total) {
          %n: i64[] = Constant() value=i64[]:[-3]
          %zeros: f32[3] = Constant() value=f32[3]:[0,0,0]
          %n_clamped: i64[] = Constant() value=i64[]:[0]
          %total: f32[3] = loop count=%n_clamped {
            recurrence %s: f32[3] = %zeros -> %s_next
            %s_next: f32[3] = Add(%s, %x)
            last %total = %s
          }
        }
    """, {"x": np.ones(3, np.float32)}, [np.zeros(3, np.float32)])
    assert result.stats == {"counts_clamped": 1}


def test_trip_count_beyond_int32_is_refused() -> None:
    graph = ir("""
        graph main(%x: f32[3]) -> (%total) {
          %n: i64[] = Constant() value=i64[]:[1099511627776]
          %total: f32[3] = loop count=%n {
            recurrence %s: f32[3] = %x -> %s_next
            %s_next: f32[3] = Add(%s, %x)
            last %total = %s
          }
        }
    """)
    with pytest.raises(PassError, match="exceeds TensorRT's INT32 limit"):
        TripLimits()(graph)


def test_identities_are_read_through() -> None:
    result = check(Identities(), """
        graph main(%x: f32[4,3]) -> (%y) {
          %a: f32[4,3] = Identity(%x)
          %b: f32[4,3] = Relu(%a)
          %y: f32[4,3] = Identity(%b)
        }
    """, """
        graph main(%x: f32[4,3]) -> (%b) {
          %b: f32[4,3] = Relu(%x)
        }
    """, {"x": X - 5}, [np.maximum(X - 5, 0)])
    assert result.stats == {"nodes": 2}


def test_a_cast_to_the_type_it_has_is_read_through() -> None:
    """TorchScript casts a carried value to its own type before growing it (torchvision's keypoint loop);
    a Cast that converts stays."""
    result = check(Identities(), """
        graph main(%x: f32[4,3]) -> (%a, %b) {
          %same: f32[4,3] = Cast(%x) to=1
          %a: f32[4,3] = Relu(%same)
          %b: i64[4,3] = Cast(%x) to=7
        }
    """, """
        graph main(%x: f32[4,3]) -> (%a, %b) {
          %a: f32[4,3] = Relu(%x)
          %b: i64[4,3] = Cast(%x) to=7
        }
    """, {"x": X - 5.5}, [np.maximum(X - 5.5, 0), (X - 5.5).astype(np.int64)])
    assert result.stats == {"nodes": 1}


def test_an_added_axis_taken_back_is_read_through() -> None:
    """Squeeze of the axis an Unsqueeze added, and Gather of index 0 (or -1) on it, compute their input;
    a 1-D index keeps the axis and another axis is other data, so those stay."""
    result = check(Identities(), """
        graph main(%x: f32[4,3]) -> (%a, %b, %c, %d, %e) {
          %zero: i64[] = Constant() value=i64[]:[0]
          %last: i64[] = Constant() value=i64[]:[-1]
          %first: i64[1] = Constant() value=i64[1]:[0]
          %minus3: i64[1] = Constant() value=i64[1]:[-3]
          %u: f32[1,4,3] = Unsqueeze(%x, %first)
          %g: f32[4,3] = Gather(%u, %zero) axis=0
          %a: f32[4,3] = Relu(%g)
          %s: f32[4,3] = Squeeze(%u, %minus3)
          %b: f32[4,3] = Neg(%s)
          %c: f32[1,4,3] = Gather(%u, %first) axis=0
          %e: f32[1,3] = Gather(%u, %zero) axis=1
          %h: f32[4,3] = Gather(%u, %last) axis=-3
          %d: f32[4,3] = Abs(%h)
        }
    """, """
        graph main(%x: f32[4,3]) -> (%a, %b, %c, %d, %e) {
          %zero: i64[] = Constant() value=i64[]:[0]
          %last: i64[] = Constant() value=i64[]:[-1]
          %first: i64[1] = Constant() value=i64[1]:[0]
          %minus3: i64[1] = Constant() value=i64[1]:[-3]
          %u: f32[1,4,3] = Unsqueeze(%x, %first)
          %a: f32[4,3] = Relu(%x)
          %b: f32[4,3] = Neg(%x)
          %c: f32[1,4,3] = Gather(%u, %first) axis=0
          %e: f32[1,3] = Gather(%u, %zero) axis=1
          %d: f32[4,3] = Abs(%x)
        }
    """, {"x": X - 5}, [np.maximum(X - 5, 0), 5 - X, (X - 5)[None], np.abs(X - 5), (X - 5)[None, 0]])
    assert result.stats == {"nodes": 3}


def test_constant_folding_computes_a_shape_chain() -> None:
    """Reshape's target from Shape → Gather → Concat on static dims: folded to the constant [4, 3] → [3, 4]."""
    check(ConstantFolding(), """
        graph main(%x: f32[4,3]) -> (%y) {
          %shape: i64[2] = Shape(%x)
          %one: i64[] = Constant() value=i64[]:[1]
          %cols: i64[] = Gather(%shape, %one) axis=0
          %axes: i64[1] = Constant() value=i64[1]:[0]
          %cols1: i64[1] = Unsqueeze(%cols, %axes)
          %rest: i64[1] = Constant() value=i64[1]:[-1]
          %target: i64[2] = Concat(%cols1, %rest) axis=0
          %y: f32[3,4] = Reshape(%x, %target)
        }
    """, """
        graph main(%x: f32[4,3]) -> (%y) {
          %shape: i64[2] = Constant() value=i64[2]:[4,3]
          %one: i64[] = Constant() value=i64[]:[1]
          %cols: i64[] = Constant() value=i64[]:[3]
          %axes: i64[1] = Constant() value=i64[1]:[0]
          %cols1: i64[1] = Constant() value=i64[1]:[3]
          %rest: i64[1] = Constant() value=i64[1]:[-1]
          %target: i64[2] = Constant() value=i64[2]:[3,-1]
          %y: f32[3,4] = Reshape(%x, %target)
        }
    """, {"x": X}, [X.reshape(3, 4)])


def test_constant_condition_inlines_the_branch_taken() -> None:
    """TorchScript's ``x.squeeze(1) if x.size(1) == 1 else x`` once the dim is known: only one branch can run."""
    check(StaticConditionals(), """
        graph main(%x: f32[4,1]) -> (%y) {
          %no: bool[] = Constant() value=bool[]:[false]
          %y: f32[...] = if %no {
            then {
              %axes: i64[1] = Constant() value=i64[1]:[1]
              %s: f32[4] = Squeeze(%x, %axes)
              yield %s
            }
            else {
              %n: f32[4,1] = Neg(%x)
              yield %n
            }
          }
        }
    """, """
        graph main(%x: f32[4,1]) -> (%n) {
          %no: bool[] = Constant() value=bool[]:[false]
          %n: f32[4,1] = Neg(%x)
        }
    """, {"x": X[:, :1]}, [-X[:, :1]])


def test_list_append_then_stack_becomes_a_concatenate_output() -> None:
    """rows = []; for i: h = relu(x[i]); rows.append(h); stack(rows, dim=0) — as PyTorch exports it."""
    result = check(SequenceAccumulation(), """
        graph main(%x: f32[4,3]) -> (%stacked) {
          %n: i64[] = Constant() value=i64[]:[4]
          %empty = SequenceEmpty() dtype=1
          %final = loop count=%n {
            iterator %row: f32[3] = %x[axis 0]
            recurrence %seq = %empty -> %seq_next
            %h: f32[3] = Relu(%row)
            %seq_next = SequenceInsert(%seq, %h)
            last %final = %seq
          }
          %stacked: f32[...] = ConcatFromSequence(%final) axis=0 new_axis=1
        }
    """, """
        graph main(%x: f32[4,3]) -> (%stacked_stacked) {
          %n: i64[] = Constant() value=i64[]:[4]
          %empty = SequenceEmpty() dtype=1
          %stacked_stacked: f32[?,3] = loop count=%n @final {
            iterator %row: f32[3] = %x[axis 0]
            %h: f32[3] = Relu(%row)
            concat %stacked_stacked = %h axis 0
          }
        }
    """, {"x": X - 5}, [np.maximum(X - 5, 0)])
    assert result.stats == {"sequences": 1}


def run_pipeline(text: str, feeds: dict[str, np.ndarray], expected: Sequence[np.ndarray]) -> Graph:
    graph = ir(text)
    _outputs(graph, feeds, expected)
    graph = PassManager(default_passes()).run(graph)
    _outputs(graph, feeds, expected)
    return graph


def test_pipeline_turns_a_gather_into_an_iterator_and_drops_the_counter_and_the_dead_carry() -> None:
    graph = run_pipeline("""
        graph main(%x: f32[4,3]) -> (%total) {
          %n: i64[] = Constant() value=i64[]:[4]
          %zeros: f32[3] = Constant() value=f32[3]:[0,0,0]
          %total: f32[3] = loop count=%n {
            counter %i: i64[]
            recurrence %s: f32[3] = %zeros -> %s_next
            recurrence %k: f32[3] = %zeros -> %k_next
            %row: f32[3] = Gather(%x, %i) axis=0
            %s_next: f32[3] = Add(%s, %row)
            %k_next: f32[3] = Mul(%k, %row)
            last %total = %s
          }
        }
    """, {"x": X}, [SUMS])
    assert format_graph(graph) == dedent("""
        graph main(%x: f32[4,3]) -> (%total) {
          %n: i64[] = Constant() value=i64[]:[4]
          %zeros: f32[3] = Constant() value=f32[3]:[0,0,0]
          %total: f32[3] = loop count=%n {
            iterator %row_iter: f32[3] = %x[axis 0]
            recurrence %s: f32[3] = %zeros -> %s_next
            %s_next: f32[3] = Add(%s, %row_iter)
            last %total = %s
          }
        }
    """).strip()


def test_carried_always_true_flag_is_no_while_limit() -> None:
    graph = run_pipeline("""
        graph main(%x: f32[4,3]) -> (%total) {
          %n: i64[] = Constant() value=i64[]:[4]
          %zeros: f32[3] = Constant() value=f32[3]:[0,0,0]
          %true: bool[] = Constant() value=bool[]:[true]
          %total: f32[3] = loop count=%n while=%flag {
            iterator %row: f32[3] = %x[axis 0]
            recurrence %flag: bool[] = %true -> %flag_next
            recurrence %s: f32[3] = %zeros -> %s_next
            %body_true: bool[] = Constant() value=bool[]:[true]
            %flag_next: bool[] = Identity(%body_true)
            %s_next: f32[3] = Add(%s, %row)
            last %total = %s
          }
        }
    """, {"x": X}, [SUMS])
    assert "while=" not in format_graph(graph) and "recurrence %flag" not in format_graph(graph)


GROWING = """
    graph main(%x: f32[3,1,3]) -> ({outputs}) {{
      %n: i64[] = Constant() value=i64[]:[3]
      %empty: f32[0,3] = Constant() value=f32[0,3]:[]
      {results} = loop count=%n {{
        iterator %row: f32[1,3] = %x[axis 0]
        recurrence %acc: f32[?,3] = %empty -> %grown
        %two: f32[] = Constant() value=f32[]:[2]
        %piece: f32[1,3] = Mul(%row, %two)
        %grown: f32[?,3] = Concat(%acc, %piece) axis=0
        {inside}
        last %result = %acc
        {concat}
      }}
    }}
"""
X3 = np.arange(9, dtype=np.float32).reshape(3, 1, 3)


def test_growing_carry_read_by_nothing_else_becomes_a_concatenate_output() -> None:
    text = GROWING.format(outputs="%result", results="%result: f32[?,3]", inside="", concat="")
    graph = run_pipeline(text, {"x": X3}, [2 * X3.reshape(3, 3)])
    loop = next(n for n in graph.nodes if n.op == "Loop")
    assert "recurrence" not in format_graph(graph) and "concat %acc_pieces = %piece axis 0" in format_graph(graph)
    assert graph.outputs[0].producer is not loop  # the stacked pieces merged back into axis 0 after the loop


def test_growing_carry_read_inside_with_constant_trips_is_unrolled() -> None:
    text = GROWING.format(outputs="%result, %totals", results="%result: f32[?,3], %totals: f32[3]",
                          inside="%total: f32[] = ReduceSum(%acc) keepdims=0", concat="concat %totals = %total axis 0")
    # the running sums of 2·x read before each trip: 0, then 2·(0+1+2) = 6, then 6 + 2·(3+4+5) = 30
    graph = run_pipeline(text, {"x": X3}, [2 * X3.reshape(3, 3), np.array([0, 6, 30], np.float32)])
    assert "loop" not in format_graph(graph)


ROW_AT_ARGMAX = """
    graph main(%x: f32[4,3], %s: f32[4]) -> (%row) {
      %i: i64[] = ArgMax(%s) axis=0 keepdims=0
      %one: i64[] = Constant() value=i64[]:[1]
      %end: i64[] = Add(%i, %one)
      %zero: i64[1] = Constant() value=i64[1]:[0]
      %starts: i64[1] = Unsqueeze(%i, %zero)
      %ends: i64[1] = Unsqueeze(%end, %zero)
      %row: f32[1,3] = Slice(%x, %starts, %ends, %zero)
    }
"""


def test_a_slice_of_one_row_at_an_argmax_becomes_a_gather() -> None:
    """``x[i:i+1]`` with ``i = argmax(s)``: ``i`` is within x's 4 rows, so no clamping; x[2:3] for s's peak at 2."""
    s = np.array([0.5, -1.0, 3.0, 2.0], np.float32)
    result = check(RowSlices(), ROW_AT_ARGMAX, """
        graph main(%x: f32[4,3], %s: f32[4]) -> (%row_row) {
          %i: i64[] = ArgMax(%s) axis=0 keepdims=0
          %one: i64[] = Constant() value=i64[]:[1]
          %end: i64[] = Add(%i, %one)
          %zero: i64[1] = Constant() value=i64[1]:[0]
          %starts: i64[1] = Unsqueeze(%i, %zero)
          %ends: i64[1] = Unsqueeze(%end, %zero)
          %row_row: f32[1,3] = Gather(%x, %starts) axis=0
        }
    """, {"x": X, "s": s}, [X[2:3]])
    assert result.stats == {"slices": 1}


def test_a_slice_of_one_row_at_a_squeezed_top_1_index_ending_at_start_plus_one_becomes_a_gather() -> None:
    """OpenVINO's converter writes argmax as Squeeze(TopK(s, 1).indices) and the end as Unsqueeze(i) + 1:
    the same read of row 2 (s's peak), as a Gather."""
    s = np.array([0.5, -1.0, 3.0, 2.0], np.float32)
    result = check(RowSlices(), """
        graph main(%x: f32[4,3], %s: f32[4]) -> (%row) {
          %k: i64[1] = Constant() value=i64[1]:[1]
          %top: f32[1], %top_i: i64[1] = TopK(%s, %k) axis=0 largest=1 sorted=1
          %zero: i64[1] = Constant() value=i64[1]:[0]
          %i: i64[] = Squeeze(%top_i, %zero)
          %starts: i64[1] = Unsqueeze(%i, %zero)
          %ends: i64[1] = Add(%starts, %k)
          %row: f32[1,3] = Slice(%x, %starts, %ends, %zero)
        }
    """, """
        graph main(%x: f32[4,3], %s: f32[4]) -> (%row_row) {
          %k: i64[1] = Constant() value=i64[1]:[1]
          %top: f32[1], %top_i: i64[1] = TopK(%s, %k) axis=0 largest=1 sorted=1
          %zero: i64[1] = Constant() value=i64[1]:[0]
          %i: i64[] = Squeeze(%top_i, %zero)
          %starts: i64[1] = Unsqueeze(%i, %zero)
          %ends: i64[1] = Add(%starts, %k)
          %row_row: f32[1,3] = Gather(%x, %starts) axis=0
        }
    """, {"x": X, "s": s}, [X[2:3]])
    assert result.stats == {"slices": 1}


def test_a_slice_at_an_index_that_may_be_out_of_range_stays() -> None:
    """ArgMax over 5 entries can give 4, past x's last row: ONNX's Slice clamps there (x[4:5] is empty)."""
    graph = ir(ROW_AT_ARGMAX.replace("%s: f32[4]", "%s: f32[5]").replace("%row: f32[1,3]", "%row: f32[?,3]"))
    assert not RowSlices()(graph).modified
    assert interpret(graph, {"x": X, "s": np.arange(5, dtype=np.float32)})[0].shape == (0, 3)


def test_a_where_whose_branch_has_unknown_dims_stays() -> None:
    """Where(all false, x, y) with y f32[?] and the output f32[?]: y may be [1] and broadcast against a [5]
    x, so y is not the output as it is (unknown dims equal prove nothing)."""
    graph = ir("""
        graph main(%x: f32[?], %y: f32[?]) -> (%out) {
          %c: bool[1] = Constant() value=bool[1]:[false]
          %out: f32[?] = Where(%c, %x, %y)
        }
    """)
    assert not Identities()(graph).modified
    got = interpret(graph, {"x": np.arange(5, dtype=np.float32), "y": np.array([7], np.float32)})[0]
    np.testing.assert_array_equal(got, np.full(5, 7, np.float32))


def test_a_where_of_a_known_condition_is_its_branch() -> None:
    """tf2onnx masks strided-slice bounds with Where(And(.., all false), ..): the kept branch is read
    through; a condition not known throughout, or a branch broadcast to the output, stays."""
    result = check(Identities(), """
        graph main(%x: f32[4,3], %m: bool[4,3]) -> (%a, %b, %c, %d) {
          %no: bool[4,3] = Constant() value=bool[4,3]:[false,false,false,false,false,false,false,false,false,false,false,false]
          %yes: bool[] = Constant() value=bool[]:[true]
          %row: f32[3] = Constant() value=f32[3]:[1,2,3]
          %both: bool[4,3] = And(%m, %no)
          %either: bool[4,3] = Or(%m, %yes)
          %a: f32[4,3] = Where(%both, %row, %x)
          %b: f32[4,3] = Where(%either, %x, %row)
          %c: f32[4,3] = Where(%m, %x, %row)
          %d: f32[4,3] = Where(%yes, %row, %x)
        }
    """, """
        graph main(%x: f32[4,3], %m: bool[4,3]) -> (%x, %x, %c, %d) {
          %no: bool[4,3] = Constant() value=bool[4,3]:[false,false,false,false,false,false,false,false,false,false,false,false]
          %yes: bool[] = Constant() value=bool[]:[true]
          %row: f32[3] = Constant() value=f32[3]:[1,2,3]
          %both: bool[4,3] = And(%m, %no)
          %either: bool[4,3] = Or(%m, %yes)
          %c: f32[4,3] = Where(%m, %x, %row)
          %d: f32[4,3] = Where(%yes, %row, %x)
        }
    """, {"x": X, "m": X > 5}, [X, X, np.where(X > 5, X, [1, 2, 3]), np.broadcast_to(np.float32([1, 2, 3]), (4, 3))])
    assert result.stats == {"nodes": 2}


def run_one(p: Pass, text: str, feeds: dict[str, np.ndarray], expected: Sequence[np.ndarray]) -> PassResult:
    """Run ``p`` on ``text``; the graph must compute ``expected`` before and after (its form is not compared)."""
    graph = ir(text)
    _outputs(graph, feeds, expected)
    result = p(graph)
    verify(graph, after=p.name)
    _outputs(graph, feeds, expected)
    return result


#: rows = []; for each row of x: h = relu(row); then the list is edited under ``if row[0] > 0`` (below).
CONDITIONAL_APPEND = """
    graph main(%x: f32[4,3]) -> (%stacked) {{
      %n: i64[] = Constant() value=i64[]:[4]
      %yes: bool[] = Constant() value=bool[]:[true]
      %empty = SequenceEmpty() dtype=1
      %final = loop count=%n while=%go {{
        iterator %row: f32[3] = %x[axis 0]
        recurrence %go: bool[] = %yes -> %go_next
        recurrence %seq = %empty -> %seq_next
        %h: f32[3] = Relu(%row)
        %zero: i64[1] = Constant() value=i64[1]:[0]
        %first: f32[1] = Gather(%row, %zero) axis=0
        %limit: f32[1] = Constant() value=f32[1]:[0]
        %stop1: bool[1] = Greater(%first, %limit)
        %stop: bool[] = Squeeze(%stop1)
        %go_next: bool[], %seq_next = if %stop {{
          then {{
            %flag: bool[] = Constant() value=bool[]:[{kept_flag}]
            yield %flag, %seq
          }}
          else {{
            %grown = SequenceInsert(%seq, %h)
            %more: bool[] = Constant() value=bool[]:[true]
            yield %more, %grown
          }}
        }}
        last %final = %seq
      }}
      %stacked: f32[...] = ConcatFromSequence(%final) axis=0 new_axis=1
    }}
"""
ROWS = np.array([[-1, 2, -3], [-2, 5, 1], [3, 1, 1], [-4, 0, 2]], np.float32)


def test_a_break_before_the_append_stacks_every_row_but_the_last_trips() -> None:
    """``if row[0] > 0: break`` before ``rows.append(h)``: rows 0 and 1 are kept, row 2 stops the loop unkept."""
    result = run_one(SequenceAccumulation(), CONDITIONAL_APPEND.format(kept_flag="false"), {"x": ROWS},
                     [np.maximum(ROWS[:2], 0)])
    assert result.stats == {"sequences": 1}
    result = run_one(SequenceAccumulation(), CONDITIONAL_APPEND.format(kept_flag="false"), {"x": -np.abs(ROWS)},
                     [np.zeros((4, 3), np.float32)])  # no break: every row kept


def test_a_skipped_append_that_goes_on_is_left_alone() -> None:
    """``if row[0] > 0: continue``: the list skips a row and the loop goes on, which no concatenated output is."""
    result = run_one(SequenceAccumulation(), CONDITIONAL_APPEND.format(kept_flag="true"), {"x": ROWS},
                     [np.maximum(ROWS[[0, 1, 3]], 0)])
    assert result.stats == {}


def test_the_lists_length_in_the_condition_is_the_trips_counted() -> None:
    """``while len(rows) < 3``: SequenceLength of the grown list, read after the append, is the trips so far."""
    result = run_one(SequenceAccumulation(), """
        graph main(%x: f32[4,3]) -> (%stacked, %count) {
          %n: i64[] = Constant() value=i64[]:[4]
          %yes: bool[] = Constant() value=bool[]:[true]
          %three: i64[] = Constant() value=i64[]:[3]
          %empty = SequenceEmpty() dtype=1
          %go_last, %final = loop count=%n while=%go {
            iterator %row: f32[3] = %x[axis 0]
            recurrence %go: bool[] = %yes -> %go_next
            recurrence %seq = %empty -> %seq_next
            %h: f32[3] = Relu(%row)
            %seq_next = SequenceInsert(%seq, %h)
            %length: i64[] = SequenceLength(%seq_next)
            %go_next: bool[] = Less(%length, %three)
            last %go_last = %go
            last %final = %seq
          }
          %stacked: f32[...] = ConcatFromSequence(%final) axis=0 new_axis=1
          %count: i64[] = SequenceLength(%final)
        }
    """, {"x": ROWS}, [np.maximum(ROWS[:3], 0), np.array(3)])
    assert result.stats == {"sequences": 1}

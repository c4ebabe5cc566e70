"""sequence-accumulation alone on lists a decoder reads back: ``outputs[-1]`` (or at ``len - 1``) read before or
after the append becomes a carried value or the element appended, the list a concatenated output; a read the
first trip cannot make, or at another position, is declined with its reason.

Every model is written as ONNX text and run by onnxruntime as the oracle; the IR after the pass is interpreted.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from loopc.ir import Graph
from loopc.passes import PassManager, SequenceAccumulation
from tests.passes.alone import assert_matches_onnxruntime, load, run_alone

RNG = np.random.default_rng(37)
X = RNG.standard_normal((6, 3)).astype(np.float32)
GO = RNG.standard_normal((2, 3)).astype(np.float32)


def sequence_ops(graph: Graph) -> list[str]:
    return [node.op for _, node in graph.walk() if "Sequence" in node.op]


#: ``frames += [h]``, then ``if sum(h) > limit: break``, else ``prev = frames[-1]`` read back in the If's branch
#: (Tacotron 2's ``Decoder.inference`` as TorchScript exports it): the read is of the list after the append.
READ_AFTER_APPEND = """
g (float[6,3] x, float[3] go, float limit) => (float[?,3] stacked, float[3] prev_last) {
  max = Constant <value = int64 {6}> ()
  c0 = Constant <value = bool {1}> ()
  empty = SequenceEmpty <dtype = 1> ()
  final, prev_last = Loop (max, c0, empty, go) <body = b (int64 i, bool c, seq(float[3]) s, float[3] prev)
                                                       => (bool c_out, seq(float[3]) s_out, float[3] prev_out) {
    row = Gather <axis = 0> (x, i)
    sum = Add (row, prev)
    h = Tanh (sum)
    s_out = SequenceInsert (s, h)
    total = ReduceSum <keepdims = 0> (h)
    stop = Greater (total, limit)
    c_out, prev_out = If (stop) <
      then_branch = t () => (bool no, float[3] kept) {
        no = Constant <value = bool {0}> ()
        kept = Identity (prev)
      },
      else_branch = e () => (bool yes, float[3] read) {
        yes = Constant <value = bool {1}> ()
        minus1 = Constant <value = int64 {-1}> ()
        read = SequenceAt (s_out, minus1)
      }>
  }>
  stacked = ConcatFromSequence <axis = 0, new_axis = 1> (final)
}"""


@pytest.mark.parametrize("limit", [0.5, 5.0])  # a break after a few trips; none (all 6 trips)
def test_the_last_element_read_after_the_append_is_the_element_appended(limit: float) -> None:
    proto, model = load(READ_AFTER_APPEND)
    assert run_alone(model, SequenceAccumulation()) == {"sequence-accumulation.sequences": 1}
    assert sequence_ops(model.graph) == ["SequenceEmpty"]  # the unread init, for dead-code to erase
    assert_matches_onnxruntime(proto, model, {"x": X, "go": GO[1], "limit": np.array(limit, np.float32)})


#: ``frames = [go0, go]``, then each trip ``prev = frames[-1]`` (POSITION) before ``frames += [h]``: the go frame
#: is the first trip's ``prev``; the frames are stacked (STACK) after the loop, go frames first, and counted.
GO_FRAME = """
g (float[6,3] x, float[3] go0, float[3] go, int64 n) => ({out} stacked, int64 count) {{
  start = SequenceConstruct (go0, go)
  c0 = Constant <value = bool {{1}}> ()
  final = Loop (n, c0, start) <body = b (int64 i, bool c, seq(float[3]) s) => (bool c_out, seq(float[3]) s_out) {{
    c_out = Identity (c)
    {position}
    prev = SequenceAt (s, at)
    row = Gather <axis = 0> (x, i)
    sum = Add (row, prev)
    h = Tanh (sum)
    s_out = SequenceInsert (s, h)
  }}>
  stacked = ConcatFromSequence <{stack}> (final)
  count = SequenceLength (final)
}}"""
POSITIONS = {
    "at -1": "at = Constant <value = int64 {-1}> ()",
    "at len - 1": """length = SequenceLength (s)
    one = Constant <value = int64 {1}> ()
    at = Sub (length, one)""",
}
STACKS = {"stacked on axis 0": ("axis = 0, new_axis = 1", "float[?,3]"),
          "stacked on the last axis": ("axis = -1, new_axis = 1", "float[3,?]"),
          "concatenated": ("axis = 0", "float[?]")}


@pytest.mark.parametrize("stack", list(STACKS))
@pytest.mark.parametrize("position", list(POSITIONS))
def test_the_last_element_read_before_the_append_is_carried_from_the_go_frame(position: str, stack: str) -> None:
    attrs, out = STACKS[stack]
    proto, model = load(GO_FRAME.format(position=POSITIONS[position], stack=attrs, out=out))
    assert run_alone(model, SequenceAccumulation()) == {"sequence-accumulation.sequences": 1}
    assert sequence_ops(model.graph) == ["SequenceConstruct"]  # the unread init, for dead-code to erase
    for trips in (0, 1, 4):
        assert_matches_onnxruntime(proto, model, {"x": X, "go0": GO[0], "go": GO[1], "n": np.array(trips, np.int64)})


def declined(text: str) -> list[str]:
    """The pass leaves the model as it is and says why."""
    _, model = load(text)
    before = sequence_ops(model.graph)
    manager = PassManager([SequenceAccumulation()])
    manager.run(model.graph)
    assert manager.stats == {}
    assert sequence_ops(model.graph) == before
    return [d.reason for d in manager.declines]


def test_a_list_read_at_its_end_before_its_first_append_is_declined() -> None:
    """``frames = []`` and ``frames[-1]`` read before the append: the first trip reads an empty list."""
    text = GO_FRAME.format(position=POSITIONS["at -1"], stack="axis = 0, new_axis = 1", out="float[?,3]").replace(
        "SequenceConstruct (go0, go)", "SequenceEmpty <dtype = 1> ()")
    assert declined(text) == ["the list 's' starts empty and is read at [-1] before its first append"]
    proto, _ = load(text)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(Exception):  # onnxruntime fails on the first trip too
        session.run(None, {"x": X, "go0": GO[0], "go": GO[1], "n": np.array(2, np.int64)})


def test_a_list_read_at_another_position_is_declined() -> None:
    """``frames[0]``: the first element, which no carried value of one trip holds."""
    text = GO_FRAME.format(position="at = Constant <value = int64 {0}> ()", stack="axis = 0, new_axis = 1",
                           out="float[?,3]")
    assert declined(text) == ["the list 's' is read in the loop other than by its append, len() or [-1]"]

"""The samples the picture tests draw, their networks' loops, and hand-made loops with awkward names."""

from __future__ import annotations

import functools
import pathlib
from collections.abc import Iterator

from loopc.compiler import compile as compile_model
from loopc.fingerprint import (ConditionalInfo, IteratorInfo, LoopInfo, NetworkInfo, Node, OutputInfo,
                               RecurrenceInfo, describe_network)

SAMPLES_DIR = pathlib.Path(__file__).resolve().parents[2] / "samples"
#: A kCOUNT+kWHILE loop with matrix products; nested loops (ONNX, OpenVINO); an If inside a loop.
SAMPLES = ["greedy_gru_decoder.onnx", "nested_loops.onnx", "openvino/loop_if.xml", "openvino/loop_in_loop.xml"]


@functools.cache
def sample_info(sample: str) -> NetworkInfo:
    """The loops of the TensorRT network loopc makes of ``sample``, read through the API."""
    return describe_network(compile_model(SAMPLES_DIR / sample).network)


def tree(nodes: list[Node], parent: str | None = None) -> Iterator[tuple[str, str, str | None]]:
    """(kind, name, parent's name) for every loop and conditional, outer first."""
    for node in nodes:
        yield node.kind, node.name, parent
        yield from tree(node.children, node.name)


NASTY = 'a<b>&"c\'/]]>{x}\\n -> ;'  # XML, DOT and shell metacharacters in one name


def awkward_info(path_length: int = 60) -> NetworkInfo:
    """Three levels of nesting, siblings, unknown MACs, a long critical path, metacharacters and wide characters."""
    inner = LoopInfo(f"inner {NASTY}", ["kWHILE"], None, [], [RecurrenceInfo("r", "r0", "step", [])],
                     [OutputInfo("o", "kLAST_VALUE")], 2, 0, 0, ["step"])
    branch = ConditionalInfo("分岐 branch", 5, [inner])
    sibling = LoopInfo("sibling", ["kCOUNT"], 3, [IteratorInfo("sibling/x", 0, False)], [],
                       [OutputInfo("sibling/y", "kREVERSE", 1)], 1, 0, 0, [])
    outer = LoopInfo(
        "outer/循環", ["kCOUNT", "kWHILE"], 1000, [IteratorInfo("outer/循環/tokens", 1, True)],
        [RecurrenceInfo("outer/循環/h", "h0", "outer/循環/cell_out", [2, -1])],
        [OutputInfo("outer/循環/ys", "kCONCATENATE", 0), OutputInfo("outer/循環/h_last", "kLAST_VALUE")],
        40, 4, None, [f"outer/循環/cell/step_{k}_" + "x" * (k % 7) for k in range(path_length)], [branch, sibling],
    )
    return NetworkInfo(123, [outer, ConditionalInfo("top if", 2)])

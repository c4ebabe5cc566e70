"""ONNX's strict shape inference as a check: its refusal made one error naming the node it is about.

Run strict, as onnx.checker runs it, ONNX's inference refuses a declared type or shape that a node's
inference contradicts, and an attribute the op's inference finds invalid — the checks the validator
does not repeat op by op. (onnxruntime refuses the same types and attributes, but only warns of a
contradicted shape and computes another; loopc does the same where it can say what the graph computes,
:mod:`loopc.frontend.onnx.declarations`, and refuses what is left.) Its message lists entries such as
``(op_type:Loop, node name: /Loop): [ShapeInferenceError] Inference error(s): (op_type:Add): [...] text``,
a graph attribute's entries nested in its node's. The first entry's innermost node is the one blamed:
found in the model by op and name level by level (an unnamed node by what it declares, when its
graph holds several of that op). An entry naming no node of the model (an error inside a function
op's own body) is onnx's, not the model's, and blames nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import onnx
from onnx import AttributeProto

from loopc.errors import LoopcError
from loopc.frontend.onnx.validate import _ELEM_NAMES, _display, label, node_error

_ENTRY = re.compile(r"\(op_type:(?P<op>[^,)]*)(?:, node name: (?P<name>.*?))?\): \[\w+\] ")
_NESTED = "Inference error(s): "
_CONTROL_FLOW = frozenset({"Loop", "Scan", "If"})
#: What to do, and who else refuses it: onnxruntime refuses a contradicted element type and what an op's
#: inference finds wrong, but only warns of a contradicted shape (and computes another one than declared).
TYPE_HINT = "fix the declared type (or leave it out) or the node; onnxruntime refuses this too"
SHAPE_HINT = "fix the declared shape (or leave it out) or the node; onnx.checker refuses this too"
NODE_HINT = "fix the node's attributes or inputs; onnxruntime refuses this too"


@dataclass(frozen=True)
class _Mismatch:
    """A declared type or shape inference contradicts: what each says, and a test for the declared one."""

    declared: str
    computed: str
    fits: Callable[[onnx.TypeProto], bool]
    hint: str = SHAPE_HINT


def _elem(inferred: int, declared: int) -> _Mismatch:
    def fits(tp: onnx.TypeProto) -> bool:
        return tp.HasField("tensor_type") and tp.tensor_type.elem_type == declared

    return _Mismatch(_elem_name(declared), _elem_name(inferred), fits, TYPE_HINT)


def _rank(inferred: int, declared: int) -> _Mismatch:
    def fits(tp: onnx.TypeProto) -> bool:
        dims = _shape(tp)
        return dims is not None and len(dims) == declared

    return _Mismatch(f"rank {declared}", f"rank {inferred}", fits)


def _dim(axis: int, inferred: int, declared: int) -> _Mismatch:
    def fits(tp: onnx.TypeProto) -> bool:
        dims = _shape(tp)
        return dims is not None and len(dims) > axis and dims[axis] == declared

    return _Mismatch(f"dim {axis} = {declared}", f"dim {axis} = {inferred}", fits)


#: ONNX's wording for a declared type or shape its inference contradicts (inferred first, then declared).
_MISMATCHES: tuple[tuple[re.Pattern[str], Callable[..., _Mismatch]], ...] = (
    (re.compile(r"Inferred elem type differs from existing elem type: \((-?\d+)\) vs \((-?\d+)\)"), _elem),
    (re.compile(r"Inferred shape and existing shape differ in rank: \((\d+)\) vs \((\d+)\)"), _rank),
    (re.compile(r"Inferred shape and existing shape differ in dimension (\d+): \((\d+)\) vs \((\d+)\)"), _dim),
    (re.compile(r"can't merge shape info\. Both inferred and declared dimension have values but they differ\. "
                r"Inferred=(\d+) Declared=(\d+) Dimension=(\d+)"), lambda i, d, axis: _dim(axis, i, d)),
)


def inference_error(exc: Exception, graph: onnx.GraphProto, opset: int) -> LoopcError | None:
    """``exc`` (strict inference's InferenceError) as an error naming the node, or None if it names none."""
    chain, detail = _first_entry(str(exc))
    if not chain or not detail:
        return None
    mismatch = next((make(*map(int, m.groups())) for pattern, make in _MISMATCHES
                     if (m := pattern.fullmatch(detail))), None)
    paths = list(_paths(graph, chain))
    if len(paths) > 1 and mismatch is not None:
        paths = [p for p in paths if _declared(p[-1][0], p[-1][1], mismatch)]
    if len(paths) != 1:
        return None
    g, node = paths[0][-1]
    if mismatch is None:
        message = detail[:1].lower() + detail[1:] if detail[1:2].islower() else detail
    else:
        values = _declared(g, node, mismatch)
        what = values[0] if len(values) == 1 else ("a value of its body, or an output,"
                                                   if node.op_type in _CONTROL_FLOW else "an output")
        message = f"{what} is declared {mismatch.declared}, but the node computes {mismatch.computed}"
    where = "".join(f" inside {n.op_type} {label(n)!r}" for _, n in reversed(paths[0][:-1]))
    return node_error(node, opset, f"{message} (ONNX shape inference{';' if where else ''}{where})",
                      hint=NODE_HINT if mismatch is None else mismatch.hint)


def _first_entry(text: str) -> tuple[list[tuple[str, str]], str]:
    """The (op, name) of each node the first entry nests into, and its text."""
    rest = text.strip()
    if _NESTED in rest:
        rest = rest[rest.index(_NESTED) + len(_NESTED):]
    chain: list[tuple[str, str]] = []
    while (entry := _ENTRY.match(rest)) is not None:
        chain.append((entry["op"], entry["name"] or ""))
        rest = rest[entry.end():]
        if not rest.startswith(_NESTED):
            break
        rest = rest[len(_NESTED):]
    return chain, rest.split("\n", 1)[0].strip().rstrip(" ={.")


def _paths(graph: onnx.GraphProto, chain: list[tuple[str, str]],
           path: tuple[tuple[onnx.GraphProto, onnx.NodeProto], ...] = ()
           ) -> Iterator[tuple[tuple[onnx.GraphProto, onnx.NodeProto], ...]]:
    """Each way down the graphs, one level per entry, that a node of the entry's op and name lies."""
    op, name = chain[len(path)]
    for node in graph.node:
        if node.op_type != op or node.name != name:
            continue
        here = (*path, (graph, node))
        if len(here) == len(chain):
            yield here
        else:
            for sub in _subgraphs(node):
                yield from _paths(sub, chain, here)


def _subgraphs(node: onnx.NodeProto) -> Iterable[onnx.GraphProto]:
    for attr in node.attribute:
        if attr.type == AttributeProto.GRAPH:
            yield attr.g
        elif attr.type == AttributeProto.GRAPHS:
            yield from attr.graphs


def _declared(graph: onnx.GraphProto, node: onnx.NodeProto, mismatch: _Mismatch) -> list[str]:
    """The values ``node`` declares as ``mismatch`` says: its outputs' declarations, and for Loop, Scan
    and If its bodies' inputs and outputs — described for a message."""
    wanted = set(node.output) - {""}
    found = [f"output {vi.name!r}" for vi in [*graph.value_info, *graph.output]
             if vi.name in wanted and mismatch.fits(vi.type)]
    for sub in _subgraphs(node) if node.op_type in _CONTROL_FLOW else ():
        found += [f"the body's {kind} {vi.name!r}" for kind, values in (("input", sub.input), ("output", sub.output))
                  for vi in values if mismatch.fits(vi.type)]
    return list(dict.fromkeys(found))


def _elem_name(elem: int) -> str:
    name = _ELEM_NAMES.get(elem)
    return _display(f"tensor({name})") if name else f"data type {elem} (not an ONNX type)"


def _shape(tp: onnx.TypeProto) -> list[int | None] | None:
    if not tp.HasField("tensor_type") or not tp.tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else None for d in tp.tensor_type.shape.dim]

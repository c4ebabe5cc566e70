"""What loopc knows of ONNX opsets newer than the installed onnx package, so that a model stamped with one
is read when its ops are ones loopc knows.

onnx's schemas (``onnx.defs``) define each op up to the newest opset the package knows, and a lookup at a
newer opset finds the op's newest version at or below it: right for every op a newer opset neither added
nor changed. :data:`NEWER` states, from the onnx release that defines each newer opset, which ops it added
and which it changed. An op it added is read with the schema given here (loopc converts it); an op it
changed is refused by name, since loopc would read it with its older meaning. A model stamped newer than
any opset loopc knows is read as the newest one it knows, with a warning: an op changed after that cannot
be told apart.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import onnx
from onnx import helper
from onnx.defs import OpSchema

from loopc.onnx_graphs import all_nodes, subgraphs

#: Rounds of ONNX's inference at most when typing added ops' outputs: one more op typed a round.
MAX_ROUNDS = 8
#: How many IR versions past the installed onnx's loopc reads (as that one, warned): a release adds at most one,
#: by fields an older reader passes over; a version further ahead is no release's near the installed onnx.
IR_VERSIONS_AHEAD = 2


@dataclass(frozen=True)
class AddedOp:
    """An op a newer opset introduced: its schema as that onnx release states it, and the type of its output
    from its inputs' types (None where they are not known), for ONNX's inference of what follows it."""

    schema: Callable[[], OpSchema]
    output_type: Callable[[list[onnx.TypeProto | None]], onnx.TypeProto | None]


@dataclass(frozen=True)
class NewerOpset:
    """A default-domain opset newer than some onnx packages: the release defining it, its ops' changes."""

    release: str
    #: Ops the opset introduced that loopc reads, with their schema and output type rule.
    added: dict[str, AddedOp] = field(default_factory=dict)
    #: Ops whose version the opset changed (loopc has only the older schema when onnx lacks this opset).
    changed: frozenset[str] = frozenset()


_FLOATS = ["tensor(float16)", "tensor(float)", "tensor(double)", "tensor(bfloat16)"]


def _grouped_matmul_schema() -> OpSchema:
    param, optional = OpSchema.FormalParameter, OpSchema.FormalParameterOption.Optional
    return OpSchema(
        "GroupedMatMul", "", 29,
        doc="output[m, i] = input[m] @ weights[group_indices[m, i]] (+ bias[group_indices[m, i]])",
        inputs=[param("input", "T"), param("weights", "T"), param("group_indices", "Tind"),
                param("bias", "T", param_option=optional)],
        outputs=[param("output", "T")],
        type_constraints=[("T", _FLOATS, ""), ("Tind", ["tensor(int32)", "tensor(int64)"], "")])


def _grouped_matmul_type(inputs: list[onnx.TypeProto | None]) -> onnx.TypeProto | None:
    """[M, S, N] from input [M, K], group_indices [M, S] and weights [G, K, N], of input's element type."""
    x, weights, indices = (inputs + [None] * 3)[:3]
    if x is None or not x.HasField("tensor_type") or not x.tensor_type.elem_type:
        return None
    out = onnx.TypeProto()
    out.tensor_type.elem_type = x.tensor_type.elem_type
    picks = ((x, 0, 2), (indices, 1, 2), (weights, 2, 3))  # (operand, dim, the rank it has)
    if all(t is not None and t.tensor_type.HasField("shape") and len(t.tensor_type.shape.dim) == rank
           for t, _, rank in picks):
        out.tensor_type.shape.dim.extend(t.tensor_type.shape.dim[d] for t, d, _ in picks)  # type: ignore[union-attr]
    return out


#: onnx 1.24 (onnx-weekly 1.24.0.dev): opset 29 adds GroupedMatMul and changes no op's version.
NEWER: dict[int, NewerOpset] = {
    29: NewerOpset("onnx 1.24", {"GroupedMatMul": AddedOp(_grouped_matmul_schema, _grouped_matmul_type)}),
}


def installed_opset() -> int:
    """The newest default-domain opset the installed onnx package defines."""
    return int(onnx.defs.onnx_opset_version())


def newest_opset() -> int:
    """The newest default-domain opset loopc knows: the installed onnx package's, or one :data:`NEWER` states."""
    return max(installed_opset(), *NEWER)


def _beyond_onnx(opset: int) -> Iterator[tuple[int, NewerOpset]]:
    """The opsets :data:`NEWER` states that the installed onnx lacks, up to ``opset``."""
    installed = installed_opset()
    return ((v, NEWER[v]) for v in sorted(NEWER) if installed < v <= opset)


@functools.cache
def added_schema(op: str, opset: int) -> OpSchema | None:
    """The schema of ``op`` at ``opset`` when a newer opset the installed onnx lacks added it (else None)."""
    for _, newer in _beyond_onnx(opset):
        if op in newer.added:
            return newer.added[op].schema()
    return None


def changed_in(op: str, opset: int) -> tuple[int, str] | None:
    """(version, release) of a newer opset the installed onnx lacks that changed ``op``, at or below ``opset``."""
    return next(((v, newer.release) for v, newer in _beyond_onnx(opset) if op in newer.changed), None)


def newest_ir_version() -> int:
    """The newest IR version loopc reads (see :data:`IR_VERSIONS_AHEAD`)."""
    return int(onnx.IR_VERSION) + IR_VERSIONS_AHEAD


def notice(ir_version: int, opset: int, source: str) -> str | None:
    """The one-line warning for a model stamped newer than the installed onnx package reads (None if it is not)."""
    parts = []
    if ir_version > onnx.IR_VERSION:
        parts.append(f"ir_version {ir_version} is newer than the installed onnx package reads (up to "
                     f"{onnx.IR_VERSION}): read as ir_version {onnx.IR_VERSION}")
    newest = newest_opset()
    if opset > newest:
        parts.append(f"default-domain opset {opset} is newer than loopc knows (up to {newest}): read as opset "
                     f"{newest}, so an op a later opset changed would be read with its opset-{newest} meaning")
    elif opset > installed_opset():
        changes = "; ".join(f"opset {v} of {newer.release} adds {', '.join(sorted(newer.added)) or 'no op'} and "
                            f"changes {', '.join(sorted(newer.changed)) or 'no other op'}"
                            for v, newer in _beyond_onnx(opset))
        parts.append(f"default-domain opset {opset} is newer than the installed onnx package knows (up to "
                     f"{installed_opset()}): read with what loopc knows of it: {changes}")
    return f"{source}: {'; '.join(parts)}" if parts else None


def declare_added_outputs(proto: onnx.ModelProto, opset: int) -> onnx.ModelProto:
    """``proto`` with the outputs of ops the installed onnx lacks (added by a newer opset) declared, so that
    ONNX's inference types what follows them (it leaves an op it does not know untyped); ``proto`` itself when
    it has none."""
    if not any(_default(n) and added_schema(n.op_type, opset) for n in all_nodes(proto.graph)):
        return proto
    model = onnx.ModelProto()
    model.CopyFrom(proto)
    for _ in range(MAX_ROUNDS):
        try:
            inferred = onnx.shape_inference.infer_shapes(model)
        except Exception:  # noqa: BLE001 - inference is a help here: the model's own run says what is wrong
            inferred = model
        if not _declare_round(model, opset, _types(inferred.graph)):
            break
    return model


def _declare_round(model: onnx.ModelProto, opset: int, types: dict[str, onnx.TypeProto]) -> bool:
    """Declare each added op's output whose inputs' types are now known; whether any was declared."""
    declared = False
    for graph in _graphs(model.graph):
        named = {vi.name for vi in [*graph.value_info, *graph.output] if vi.type.tensor_type.elem_type}
        for node in graph.node:
            found = _default(node) and added_schema(node.op_type, opset) is not None
            if not found or not node.output or not node.output[0] or node.output[0] in named:
                continue
            rule = next(n.added[node.op_type] for _, n in _beyond_onnx(opset) if node.op_type in n.added)
            typed = rule.output_type([types.get(name) if name else None for name in node.input])
            if typed is not None:
                graph.value_info.append(helper.make_value_info(node.output[0], typed))
                declared = True
    return declared


def _types(graph: onnx.GraphProto) -> dict[str, onnx.TypeProto]:
    found: dict[str, onnx.TypeProto] = {}
    for g in _graphs(graph):
        for init in g.initializer:
            found[init.name] = helper.make_tensor_type_proto(init.data_type, list(init.dims))
        found.update((vi.name, vi.type) for vi in [*g.input, *g.value_info, *g.output])
    return found


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    yield graph
    yield from subgraphs(graph)


def _default(node: onnx.NodeProto) -> bool:
    return node.domain in ("", "ai.onnx")

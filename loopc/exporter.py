"""``loopc.export``: model file → IR → passes → ONNX, for runtimes that read ONNX themselves.

The passes are the ones ``loopc build`` runs, so what reaches trtexec, onnxruntime or Triton has loopc's
loops: list appends as scan outputs, input projections hoisted out of recurrent steps, while-loop outputs cut
to the trips run, and OpenVINO IR loops as ONNX ``Loop``. The ``.onnx`` is written atomically.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import onnx

from loopc.errors import LoopcError
from loopc.spelling import option
from loopc.fileio import OutputFile
from loopc.ir import Model, format_graph
from loopc.onnx_graphs import all_nodes

#: protobuf's limit on one serialized message, which an ONNX file without external data is.
PROTOBUF_LIMIT = 2**31 - 1


@dataclass
class ModelSummary:
    """What a model holds, counted over its nested graphs too."""

    nodes: int = 0
    loops: int = 0
    conditionals: int = 0
    ops: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, model: onnx.ModelProto) -> ModelSummary:
        ops = Counter(node.op_type for node in all_nodes(model.graph))
        return cls(sum(ops.values()), ops["Loop"] + ops["Scan"], ops["If"], dict(sorted(ops.items())))


@dataclass
class ExportReport:
    model: str
    output: str = ""
    opset: int = 0
    #: The input (an OpenVINO IR: as loopc's frontend reads it, in ONNX ops) and the export.
    before: ModelSummary = field(default_factory=ModelSummary)
    after: ModelSummary = field(default_factory=ModelSummary)
    passes: dict[str, int] = field(default_factory=dict)
    optimizations: dict[str, bool] = field(default_factory=dict)
    seconds: float = 0.0
    bytes: int = 0
    #: The external weights file, when written (``--external-data`` or a model past 2 GiB).
    data_output: str = ""
    data_bytes: int = 0

    def op_changes(self) -> dict[str, int]:
        """Each op whose count changed, by how much (negative: fewer in the export)."""
        ops = set(self.before.ops) | set(self.after.ops)
        changes = {op: self.after.ops.get(op, 0) - self.before.ops.get(op, 0) for op in sorted(ops)}
        return {op: delta for op, delta in changes.items() if delta}

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "op_changes": self.op_changes()}, indent=2)


def export_model(
    model: onnx.ModelProto | str | os.PathLike[str],
    *,
    max_trips: int | None = None,
    shapes: Mapping[str, Sequence[int]] | None = None,
    disabled: Collection[str] = (),
    frontend: str | None = None,
    weights: str | os.PathLike[str] | None = None,
    dump_ir: Callable[[str, str], None] | None = None,
) -> tuple[onnx.ModelProto, ExportReport]:
    """``model`` after loopc's passes as an ONNX model, with a report of what changed.

    ``shapes`` fixes input dims before the passes run (``--shapes``: what a pass needs static); the other
    arguments are :func:`loopc.compiler.compile`'s.
    """
    from loopc.backend.onnx import to_onnx
    from loopc.compiler import load_ir, optimize
    from loopc.passes import OPTIMIZATIONS

    start = time.perf_counter()
    ir = load_ir(model, frontend, weights, disabled)
    if shapes:
        fix_input_shapes(ir, shapes)
    before = _input_summary(model, ir, frontend)
    if dump_ir:
        dump_ir("frontend", format_graph(ir.graph))
    # the weights and attention keep the model's layout: these hold them as TensorRT's builder stores them once
    disabled = {*disabled, "heads-first", "weight-layout"}
    stats = optimize(ir, (lambda name, g: dump_ir(name, format_graph(g))) if dump_ir else None, max_trips, disabled)
    proto = to_onnx(ir)
    report = ExportReport(ir.source, opset=proto.opset_import[0].version, before=before,
                          after=ModelSummary.of(proto), passes=stats,
                          optimizations={name: name not in disabled for name in OPTIMIZATIONS})
    report.seconds = time.perf_counter() - start
    return proto, report


def export(
    model: onnx.ModelProto | str | os.PathLike[str],
    output: str | os.PathLike[str] | OutputFile,
    *,
    external_data: bool = False,
    **kwargs: Any,
) -> ExportReport:
    """Write ``model`` after loopc's passes to ``output`` as ONNX (atomically); see :func:`export_model`.

    The weights go to ``<output>.data`` beside it when ``external_data`` asks, and whenever the model would be
    past protobuf's 2 GiB limit on one file; the data file is written first, so the model never names a
    file that is not there yet.
    """
    out = output if isinstance(output, OutputFile) else OutputFile(output)
    proto, report = export_model(model, **kwargs)
    if external_data or proto.ByteSize() > PROTOBUF_LIMIT:
        report.data_output, report.data_bytes = write_weights_beside(proto, out)
    data = serialized(proto)
    out.write(lambda handle: handle.write(data))
    report.output, report.bytes = out.path, len(data)
    return report


def write_weights_beside(proto: onnx.ModelProto, out: OutputFile) -> tuple[str, int]:
    """Move ``proto``'s weights to ``<out>.data`` and write that file; its path and size."""
    from loopc.backend.onnx.external_data import move_weights

    if not out.is_file():
        raise LoopcError(f"-o {out.path}: external weights need the model written to a file, not a device or pipe")
    data_file = OutputFile(out.path + ".data", "the external data file")
    pieces = move_weights(proto, os.path.basename(data_file.target))
    data_file.write(lambda handle: [handle.write(piece) for piece in pieces])
    return data_file.path, sum(map(len, pieces))


def serialized(proto: onnx.ModelProto) -> bytes:
    """The model's bytes; one still past protobuf's 2 GiB limit is refused by name rather than written broken."""
    size = proto.ByteSize()
    if size > PROTOBUF_LIMIT:
        raise LoopcError(f"the exported model is {size} bytes without its external weights, past protobuf's "
                         "2 GiB limit on one ONNX file")
    return proto.SerializeToString()


def fix_input_shapes(ir: Model, shapes: Mapping[str, Sequence[int]]) -> None:
    """Give the named inputs these dims (``--shapes``), each checked against what the model declares."""
    inputs = {v.name: v for v in ir.graph.inputs}
    inputs.update({alias: inputs[name] for alias, name in ir.input_aliases.items() if name in inputs})
    symbols: dict[str, int] = {}
    for name, dims in shapes.items():
        value = inputs.get(name)
        if value is None:
            raise LoopcError(f"{option('--shapes')} names {name!r}, which is not an input of the model (its inputs: "
                             f"{', '.join(sorted(v.name for v in ir.graph.inputs))})")
        declared = value.shape
        if declared is not None and (len(declared) != len(dims) or any(
                isinstance(d, int) and d != g for d, g in zip(declared, dims))):
            raise LoopcError(f"{option('--shapes')} gives input {name!r} dims {list(dims)}, but the model declares "
                             f"{list(declared)}")
        for declared_dim, dim in zip(declared or (), dims):
            if isinstance(declared_dim, str) and symbols.setdefault(declared_dim, dim) != dim:
                raise LoopcError(f"{option('--shapes')} gives dim {declared_dim!r} two sizes, {symbols[declared_dim]} and {dim}")
        value.shape = tuple(int(d) for d in dims)
    for _, node in ir.graph.walk():  # a symbolic dim is one size wherever the model names it
        for value in [*node.outputs, *(v for sub in node.subgraphs() for v in sub.inputs)]:
            if value.shape is not None:
                value.shape = tuple(symbols.get(d, d) if isinstance(d, str) else d for d in value.shape)


def _input_summary(model: onnx.ModelProto | str | os.PathLike[str], ir: Model, frontend: str | None) -> ModelSummary:
    """The input as its user knows it: an ONNX model's own nodes; an OpenVINO IR as loopc's frontend reads it."""
    from loopc.backend.onnx import to_onnx
    from loopc.frontend import detect

    if isinstance(model, onnx.ModelProto):
        return ModelSummary.of(model)
    if (frontend or detect(os.fspath(model))) == "onnx":
        return ModelSummary.of(onnx.load(os.fspath(model), load_external_data=False))
    return ModelSummary.of(to_onnx(ir))

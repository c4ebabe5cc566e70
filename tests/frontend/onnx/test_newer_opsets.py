"""Models stamped with an opset or IR version newer than the installed onnx package knows: read when their ops
are ones loopc knows (with one warning), refused by node when an op is new or changed."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnx.parser
import onnxruntime as ort
import pytest

from loopc.errors import FrontendError, UnsupportedOpError
from loopc.frontend.onnx import newer_opsets
from loopc.ir.interpret import interpret
from tests.frontend.onnx.helpers import imported, refused

INSTALLED = onnx.defs.onnx_opset_version()
NEXT = max(newer_opsets.NEWER)  # opset 29: GroupedMatMul added, no other op changed

#: Loop, Relu and Softmax: ops of every opset, the loop's body read with the model's opset too.
TEXT = """<ir_version: 8, opset_import: ["" : {opset}]>
g (int64 n, float[2,3] x0) => (float[2,3] y) {{
    go = Constant<value = bool {{1}}>()
    s = Loop(n, go, x0) <body = body (int64 i, bool c, float[2,3] x) => (bool c_out, float[2,3] x_out) {{
        c_out = Identity(c)
        r = Relu(x)
        x_out = Softmax<axis = -1>(r)
    }}>
    y = Identity(s)
}}"""
FEEDS = {"n": np.array(3, np.int64), "x0": np.array([[1, -2, 3], [0.5, 4, -1]], np.float32)}


def stamped(opset: int, ir_version: int | None = None) -> onnx.ModelProto:
    proto = onnx.parser.parse_model(TEXT.format(opset=opset))
    if ir_version is not None:
        proto.ir_version = ir_version
    return proto


def warned(proto: onnx.ModelProto) -> tuple[object, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = imported(proto)
    return model, [str(w.message) for w in caught]


def expected() -> list[np.ndarray]:
    """onnxruntime on the same model stamped with an opset it runs (no op of it changed since)."""
    session = ort.InferenceSession(stamped(21).SerializeToString(), providers=["CPUExecutionProvider"])
    return list(session.run(None, FEEDS))


@pytest.mark.parametrize(("opset", "ir_version", "fragments"), [
    (NEXT, None, [f"opset {NEXT} is newer than the installed onnx package knows (up to {INSTALLED})",
                  "adds GroupedMatMul and changes no other op"]),
    (21, onnx.IR_VERSION + 1, [f"ir_version {onnx.IR_VERSION + 1} is newer than the installed onnx package reads",
                               f"read as ir_version {onnx.IR_VERSION}"]),
    (NEXT + 3, onnx.IR_VERSION + 1, [f"opset {NEXT + 3} is newer than loopc knows (up to {NEXT})",
                                     f"read as opset {NEXT}", "ir_version"]),
], ids=["next-opset", "next-ir", "beyond-both"])
def test_newer_stamp_with_known_ops_is_read_with_one_warning(opset: int, ir_version: int | None,
                                                             fragments: list[str]) -> None:
    if INSTALLED >= NEXT:
        pytest.skip("the installed onnx knows the newest opset loopc knows of")
    model, messages = warned(stamped(opset, ir_version))
    assert len(messages) == 1 and "\n" not in messages[0], messages
    for fragment in fragments:
        assert fragment in messages[0], messages[0]
    for got, want in zip(interpret(model.graph, FEEDS), expected()):  # type: ignore[attr-defined]
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_a_stamp_the_installed_onnx_knows_gives_no_warning() -> None:
    _, messages = warned(stamped(INSTALLED))
    assert messages == []


def test_an_op_newer_than_loopc_knows_is_refused_by_node() -> None:
    text = TEXT.format(opset=NEXT + 1).replace("r = Relu(x)", "r = FancyNewOp(x)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        error = refused(text, UnsupportedOpError, f"node 'r' (FancyNewOp, opset {NEXT + 1})",
                        f"is not an op of any opset loopc knows (up to {NEXT}",
                        f"the model's opset {NEXT + 1} may have added it")
    assert (error.node, error.op, error.opset) == ("r", "FancyNewOp", NEXT + 1)


def test_an_op_a_newer_opset_changed_is_refused_by_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """Were opset 29 to change Softmax, an installed onnx without opset 29 could read only its older form."""
    if INSTALLED >= NEXT:
        pytest.skip("the installed onnx knows the newest opset loopc knows of")
    changed = newer_opsets.NewerOpset("onnx 1.24", newer_opsets.NEWER[NEXT].added, frozenset({"Softmax"}))
    monkeypatch.setitem(newer_opsets.NEWER, NEXT, changed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        refused(stamped(NEXT), UnsupportedOpError, f"(Softmax, opset {NEXT}): Softmax changed in opset {NEXT} "
                "(onnx 1.24), which the installed onnx package does not define", "install onnx 1.24 or newer")


GROUPED = """<ir_version: 10, opset_import: ["" : {opset}]>
g (float[T,4] x, float[3,4,5] w, int64[T,2] idx) => (float[T,2,5] y) {{
    p = GroupedMatMul({inputs})
    y = Relu(p)
}}"""


def test_grouped_matmul_is_typed_for_what_follows() -> None:
    """ONNX's inference does not know GroupedMatMul when onnx lacks opset 29: loopc types its output."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = imported(onnx.parser.parse_model(GROUPED.format(opset=NEXT, inputs="x, w, idx")))
    (node,) = [n for _, n in model.graph.walk() if n.op == "GroupedMatMul"]
    relu = next(n for _, n in model.graph.walk() if n.op == "Relu")
    for value in (node.outputs[0], relu.outputs[0]):
        assert (value.dtype, value.shape) == (np.dtype(np.float32), ("T", 2, 5)), value


@pytest.mark.parametrize(("opset", "inputs", "cls", "fragment"), [
    (28, "x, w, idx", FrontendError, "GroupedMatMul does not exist in opset 28; it was added in opset 29"),
    (NEXT, "x, w", FrontendError, "GroupedMatMul takes 3 to 4 inputs, the node has 2"),
    (NEXT, "x, idx, idx", FrontendError, "must be a bfloat16, float16, float32 or float64 tensor, not int64"),
])
def test_grouped_matmul_is_checked_against_its_schema(opset: int, inputs: str, cls: type[FrontendError],
                                                      fragment: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        refused(GROUPED.format(opset=opset, inputs=inputs), cls, "(GroupedMatMul, opset", fragment)

"""The weight-layout pass: a product's 2-D constant weight (float, or quantized under a DequantizeLinear) is held
transposed, once for all its readers, and read through a Transpose the backend folds into the product; a tied
table of odd rows is held padded to even rows for its Gathers and products alike. Most models are compiled by
loopc's whole pipeline, built by TensorRT's builder, run in loopc's simulator and compared with onnxruntime;
the tied tables' cases run the pass alone, interpreted. The IR after the pass shows the layout, and what the
pass leaves alone says why."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import ml_dtypes
import numpy as np
import onnx
import onnx.parser
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from loopc.compiler import Compiled, compile
from loopc.ir import Graph, Node, constant_value, verify
from loopc.passes import PassManager, WeightLayout
from loopc.passes.constant_folding import MAX_ELEMENTS
from loopc.sim import simulate
from loopc.trt.config import build_serialized, builder_config, pin_profile
from tests.passes.alone import HEADER, assert_matches_onnxruntime, load

RNG = np.random.default_rng(5)
K, N, P, TRIPS = 8, 6, 3, 4
#: The side of a quantized weight, a multiple of the block size 4: more elements than constant folding ever
#: computes, so its DequantizeLinear reaches this pass whatever folding does with small quantized constants.
KQ = 4 * (math.isqrt(MAX_ELEMENTS) // 4 + 1)


def weight(k: int = K, n: int = N) -> np.ndarray:
    return (RNG.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)


def model(nodes: list[onnx.NodeProto], inputs: Mapping[str, tuple[int, ...]], outputs: Mapping[str, tuple[int, ...]],
          initializers: Mapping[str, np.ndarray], opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape) for name, shape in inputs.items()],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape) for name, shape in outputs.items()],
        [numpy_helper.from_array(array, name) for name, array in initializers.items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    onnx.checker.check_model(proto)
    return proto


def decoder(product: str, initializers: Mapping[str, np.ndarray], before: list[onnx.NodeProto] = (),
            opset: int = 17, k: int = K) -> onnx.ModelProto:
    """The prompt's pass reads the [k, k] weight ``product`` names (``x @ W``, x [P, k]); its last row starts a
    Loop of TRIPS trips whose step is ``h <- tanh(h @ W)``, reading the same weight from the outer scope.
    ``before`` makes ``product`` (a DequantizeLinear of the quantized weight)."""
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h", product], ["hw"]), helper.make_node("Tanh", ["hw"], ["h_next"]),
         helper.make_node("Identity", ["go"], ["go_next"])], "step",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("go", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, k])],
        [helper.make_tensor_value_info("go_next", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_next", TensorProto.FLOAT, [1, k])])
    nodes = [*before, helper.make_node("MatMul", ["x", product], ["xw"]),
             helper.make_node("Slice", ["xw", "start", "end", "rows"], ["last"]),
             helper.make_node("Loop", ["trips", "", "last"], ["h_final"], body=body)]
    consts = {"start": np.array([P - 1], np.int64), "end": np.array([P], np.int64), "rows": np.array([0], np.int64),
              "trips": np.array(TRIPS, np.int64)}
    return model(nodes, {"x": (P, k)}, {"xw": (P, k), "h_final": (1, k)}, {**initializers, **consts}, opset)


def checked(proto: onnx.ModelProto, feeds: Mapping[str, np.ndarray], rtol: float = 1e-5,
            atol: float = 1e-6) -> Compiled:
    """Compile and build ``proto`` with loopc, simulate it and compare with onnxruntime (op by op)."""
    compiled = compile(proto)
    cfg = builder_config(compiled.session)
    pin_profile(compiled.session, compiled.network, cfg, feeds)
    build_serialized(compiled.session, compiled.network, cfg)
    got = simulate(compiled.network, feeds)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    oracle = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in proto.graph.output]
    for name, want in zip(names, oracle.run(names, dict(feeds))):
        np.testing.assert_allclose(got[name], want, rtol=rtol, atol=atol, err_msg=name)
    return compiled


def nodes(graph: Graph, op: str) -> list[Node]:
    return [node for _, node in graph.walk() if node.op == op]


def transposed_reads(graph: Graph) -> list[Node]:
    """The products' right operands that are Transposes (each product reading its weight as the pass made it)."""
    products = nodes(graph, "MatMul")
    return [p.inputs[1].producer for p in products if p.inputs[1].producer.op == "Transpose"]


def feeds(k: int = K) -> dict[str, np.ndarray]:
    return {"x": RNG.standard_normal((P, k)).astype(np.float32)}


def test_one_product_reads_its_weight_transposed() -> None:
    """A 3-D activation times a 2-D weight: the constant becomes W's transpose, read through a Transpose."""
    w = weight()
    proto = model([helper.make_node("MatMul", ["x", "W"], ["y"])], {"x": (2, 3, K)}, {"y": (2, 3, N)}, {"W": w})
    compiled = checked(proto, {"x": RNG.standard_normal((2, 3, K)).astype(np.float32)})
    (read,) = transposed_reads(compiled.model.graph)
    np.testing.assert_array_equal(constant_value(read.inputs[0]), w.T)
    assert compiled.report.passes["weight-layout.weights"] == 1


def test_a_weight_read_before_and_inside_a_loop_is_one_constant() -> None:
    """One constant holds Wᵀ; each graph that reads it has its own Transpose beside its product."""
    w = weight(K, K)
    compiled = checked(decoder("W", {"W": w}), feeds())
    graph = compiled.model.graph
    reads = transposed_reads(graph)
    assert len(reads) == 2 and reads[0].inputs[0] is reads[1].inputs[0]
    assert {id(r.graph) for r in reads} == {id(graph), id(nodes(graph, "Loop")[0].body)}
    weights = [n for n in nodes(graph, "Constant") if np.shape(n.attrs["value"]) == (K, K)]
    assert len(weights) == 1 and np.array_equal(weights[0].attrs["value"], w.T)


def test_a_gemm_sharing_the_weight_reads_it_with_trans_b() -> None:
    w = weight()
    proto = model([helper.make_node("MatMul", ["x", "W"], ["y"]), helper.make_node("Gemm", ["x", "W", "c"], ["z"])],
                  {"x": (P, K)}, {"y": (P, N), "z": (P, N)}, {"W": w, "c": np.arange(N, dtype=np.float32)})
    compiled = checked(proto, feeds())
    (gemm,) = nodes(compiled.model.graph, "Gemm")
    assert gemm.attrs["transB"] == 1 and gemm.inputs[1] is transposed_reads(compiled.model.graph)[0].inputs[0]


def quantized(kind: str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """A [KQ, KQ] quantized weight, its scales (and zero point) and the DequantizeLinear's attributes."""
    if kind == "int4 per channel":
        q = RNG.integers(-8, 8, (KQ, KQ)).astype(ml_dtypes.int4)
        return {"Wq": q, "scale": RNG.uniform(0.02, 0.05, KQ).astype(np.float32) / KQ**0.5}, {"axis": 1}
    q = RNG.integers(-127, 128, (KQ, KQ)).astype(np.int8)
    if kind == "int8 per tensor":
        return {"Wq": q, "scale": np.array(0.01 / KQ**0.5, np.float32)}, {}
    if kind == "int8 per channel":
        return {"Wq": q, "scale": RNG.uniform(0.005, 0.01, KQ).astype(np.float32) / KQ**0.5}, {"axis": -1}
    if kind == "int8 per block, zero point":  # of zeros: TensorRT's Dequantize layer takes no other
        blocks = (KQ // 4, KQ)
        return ({"Wq": q, "scale": RNG.uniform(0.005, 0.01, blocks).astype(np.float32) / KQ**0.5,
                 "zero": np.zeros(blocks, np.int8)}, {"axis": 0, "block_size": 4})
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["int8 per tensor", "int8 per channel", "int8 per block, zero point",
                                  "int4 per channel"])
def test_a_quantized_weight_is_transposed_under_its_dequantize(kind: str) -> None:
    """The quantized constant is held transposed, the scales' axis moved along (block scales transposed): the
    DequantizeLinear reads the quantized constant, so the engine keeps it quantized."""
    arrays, attrs = quantized(kind)
    dq = helper.make_node("DequantizeLinear", [name for name in ("Wq", "scale", "zero") if name in arrays], ["W"],
                          **attrs)
    compiled = checked(decoder("W", arrays, [dq], opset=21, k=KQ), feeds(KQ), rtol=1e-4, atol=1e-5)
    graph = compiled.model.graph
    (moved,) = nodes(graph, "DequantizeLinear")
    np.testing.assert_array_equal(constant_value(moved.inputs[0]).astype(np.float32),
                                  arrays["Wq"].T.astype(np.float32))
    assert len(transposed_reads(graph)) == 2
    assert all(read.inputs[0] is moved.outputs[0] for read in transposed_reads(graph))
    expected_axis = {"int8 per channel": 0, "int4 per channel": 0, "int8 per block, zero point": 1}
    if kind in expected_axis:
        assert moved.attrs["axis"] == expected_axis[kind]
    if "block" in kind:
        for slot, name in ((1, "scale"), (2, "zero")):
            np.testing.assert_array_equal(constant_value(moved.inputs[slot]), arrays[name].T)


def test_a_dequantize_in_each_graph_moves_onto_one_transposed_constant() -> None:
    """A quantizer that wrote one DequantizeLinear before the loop and another inside it: both read the one
    transposed quantized constant."""
    arrays, attrs = quantized("int8 per channel")
    inner = helper.make_node("DequantizeLinear", ["Wq", "scale"], ["W_in"], **attrs)
    proto = decoder("W", arrays, [helper.make_node("DequantizeLinear", ["Wq", "scale"], ["W"], **attrs)], opset=21,
                    k=KQ)
    body = proto.graph.node[-1].attribute[0].g
    body.node[0].input[1] = "W_in"
    body.node.insert(0, inner)
    compiled = checked(proto, feeds(KQ), rtol=1e-4, atol=1e-5)
    moved = nodes(compiled.model.graph, "DequantizeLinear")
    assert len(moved) == 2 and moved[0].inputs[0] is moved[1].inputs[0]
    assert [n.attrs["axis"] for n in moved] == [0, 0]


def declines(compiled: Compiled) -> list[str]:
    return [line for lines in compiled.report.declined.values() for line in lines if line.startswith("weight-layout")]


def test_what_it_leaves_alone_it_says_why() -> None:
    """A batch of matrices (3-D), a weight an Add reads too, and a quantized weight scaled per input channel
    stay as they are, each with its reason."""
    batch = RNG.standard_normal((2, K, N)).astype(np.float32)
    shared = weight(K, K)
    q = RNG.integers(-127, 128, (KQ, KQ)).astype(np.int8)
    proto = model([
        helper.make_node("MatMul", ["x3", "B"], ["batched"]),
        helper.make_node("MatMul", ["x", "S"], ["xs"]), helper.make_node("Add", ["xs", "S"], ["added"]),
        helper.make_node("DequantizeLinear", ["Q", "q_scale"], ["Wq"], axis=0),
        helper.make_node("MatMul", ["xk", "Wq"], ["xq"]),
    ], {"x3": (2, P, K), "x": (K, K), "xk": (P, KQ)}, {"batched": (2, P, N), "added": (K, K), "xq": (P, KQ)},
        {"B": batch, "S": shared, "Q": q, "q_scale": RNG.uniform(0.01, 0.02, KQ).astype(np.float32) / KQ}, opset=21)
    compiled = checked(proto, {"x3": RNG.standard_normal((2, P, K)).astype(np.float32),
                               "x": RNG.standard_normal((K, K)).astype(np.float32),
                               "xk": RNG.standard_normal((P, KQ)).astype(np.float32)}, rtol=1e-4, atol=1e-5)
    assert transposed_reads(compiled.model.graph) == []
    said = "\n".join(declines(compiled))
    assert "'B' is a 3-D constant" in said
    assert "'S' stays [in, out]" in said and "Add" in said
    assert "'Q' stays [in, out]" in said and "per channel along axis 0" in said


# --- a tied table of odd rows (the pass alone, on models written as text) --------------------------------

V, D = 7, 4


def constant(name: str, array: np.ndarray) -> str:
    """A line of ONNX text making the float constant ``name`` of ``array``."""
    dims = ",".join(map(str, array.shape))
    return f"{name} = Constant <value = float[{dims}] {{{', '.join(map(repr, array.ravel().tolist()))}}}> ()"


def tied(readers: str, table: np.ndarray, inputs: str = "int64[3] tokens", outputs: str = "float[3,7] logits",
         extra: str = "") -> str:
    """A graph holding ``table`` as the constant ``T`` (and the constants ``extra`` makes), its nodes ``readers``."""
    return f"""g ({inputs}) => ({outputs}) {{
      {constant("T", table)}
      {extra}
      {readers}
    }}"""


def laid_out(text: str) -> tuple[onnx.ModelProto, Any, PassManager]:
    """The model written in ``text``, loopc's import of it after this pass alone, and the manager (its statistics
    and what the pass declined)."""
    proto, imported = load(text)
    manager = PassManager([WeightLayout()])
    imported.graph = manager.run(imported.graph)
    verify(imported.graph)
    return proto, imported, manager


def constants(graph: Graph) -> list[Node]:
    return [node for node in nodes(graph, "Constant") if np.ndim(node.attrs["value"]) == 2]


def the_padded_table(graph: Graph, table: np.ndarray) -> Node:
    """The one 2-D constant left: the table with a zero row more."""
    (padded,) = constants(graph)
    np.testing.assert_array_equal(padded.attrs["value"], np.concatenate([table, np.zeros((1, D), np.float32)]))
    return padded


TOKENS = {"tokens": np.array([-1, 0, V - 1])}


def test_a_tied_table_of_odd_rows_is_one_padded_constant_for_the_gather_and_the_products() -> None:
    """The Gather, a MatMul through a Transpose, a Gemm with ``transB=1`` and a MatMul of a folded ``Tᵀ`` (its
    twin) all read one [V + 1, D] constant; each product's logits are sliced back to V columns."""
    table = weight(V, D)
    proto, imported, manager = laid_out(tied("""
      e = Gather <axis = 0> (T, tokens)
      Tt = Transpose <perm = [1, 0]> (T)
      logits = MatMul (e, Tt)
      gemm = Gemm <transB = 1> (e, T)
      folded = MatMul (e, W)""", table, outputs="float[3,7] logits, float[3,7] gemm, float[3,7] folded",
        extra=constant("W", table.T)))
    assert_matches_onnxruntime(proto, imported, TOKENS)
    graph = imported.graph
    padded = the_padded_table(graph, table).outputs[0]
    (gather,) = nodes(graph, "Gather")
    assert gather.inputs[0] is padded
    assert all(read.inputs[0] is padded for read in transposed_reads(graph))
    assert len(transposed_reads(graph)) == 2 and nodes(graph, "Gemm")[0].inputs[1] is padded
    assert [s.outputs[0].name for s in nodes(graph, "Slice")] == ["logits", "gemm", "folded"]
    assert manager.stats["weight-layout.padded tables"] == 1


@pytest.mark.parametrize("indices", ["unknown sign", "negative constant", "argmax"])
def test_the_gather_of_a_padded_table_counts_negative_indices_from_its_vocabulary(indices: str) -> None:
    """Index -1 is row V - 1, not the zero row: indices of unknown sign are wrapped by V at run time, negative
    constants are wrapped in place, and an ArgMax's (never negative) are read as they are."""
    table = weight(V, D)
    make = {"unknown sign": "", "negative constant": "tokens = Constant <value = int64[3] {-1, 0, -7}> ()",
            "argmax": "tokens = ArgMax <axis = 1, keepdims = 0> (x)"}[indices]
    inputs = {"unknown sign": "int64[3] tokens", "negative constant": "float[3] unused",
              "argmax": "float[3,7] x"}[indices]
    proto, imported, _ = laid_out(tied(f"""{make}
      e = Gather <axis = 0> (T, tokens)
      logits = MatMul (e, Tt)""", table, inputs=inputs, extra="Tt = Transpose <perm = [1, 0]> (T)"))
    feeds = {"unknown sign": TOKENS, "negative constant": {"unused": np.zeros(3, np.float32)},
             "argmax": {"x": RNG.standard_normal((3, V)).astype(np.float32)}}[indices]
    assert_matches_onnxruntime(proto, imported, feeds)
    graph = imported.graph
    (gather,) = nodes(graph, "Gather")
    assert gather.inputs[0] is the_padded_table(graph, table).outputs[0]
    read = gather.inputs[1].producer
    if indices == "unknown sign":
        assert read.op == "Where" and read.inputs[2].name == "tokens"
    elif indices == "negative constant":
        np.testing.assert_array_equal(constant_value(gather.inputs[1]), [V - 1, 0, 0])
    else:
        assert read.op == "ArgMax"
    assert (indices == "unknown sign") == bool(nodes(graph, "Where"))


def test_a_table_of_even_rows_is_left_as_it_is() -> None:
    """TensorRT pads no even table: nothing to do."""
    table = weight(V - 1, D)
    proto, imported, manager = laid_out(tied("""
      e = Gather <axis = 0> (T, tokens)
      Tt = Transpose <perm = [1, 0]> (T)
      logits = MatMul (e, Tt)""", table, outputs="float[3,6] logits"))
    assert_matches_onnxruntime(proto, imported, {"tokens": np.array([-1, 0, V - 2])})
    graph = imported.graph
    (kept,) = constants(graph)
    np.testing.assert_array_equal(kept.attrs["value"], table)
    assert nodes(graph, "Slice") == [] and nodes(graph, "Gather")[0].inputs[0] is kept.outputs[0]
    assert "weight-layout.padded tables" not in manager.stats


@pytest.mark.parametrize("other", ["add", "bias"])
def test_a_table_another_reader_reads_keeps_its_rows_and_says_why(other: str) -> None:
    """An Add reading the table too (it would read V + 1 rows), or a Gemm adding a bias of V columns."""
    table = weight(V, D)
    reader = {"add": "s = Add (T, T)", "bias": "s = Gemm <transB = 1> (e, T, c)"}[other]
    outputs = {"add": "float[7,4] s", "bias": "float[3,7] s"}[other]
    proto, imported, manager = laid_out(tied(f"""
      e = Gather <axis = 0> (T, tokens)
      Tt = Transpose <perm = [1, 0]> (T)
      logits = MatMul (e, Tt)
      {reader}""", table, outputs=f"float[3,7] logits, {outputs}",
        extra="c = Constant <value = float[7] {1, 2, 3, 4, 5, 6, 7}> ()"))
    assert_matches_onnxruntime(proto, imported, TOKENS)
    graph = imported.graph
    (kept,) = constants(graph)
    np.testing.assert_array_equal(kept.attrs["value"], table)
    assert nodes(graph, "Slice") == []
    said = [d.reason for d in manager.declines if d.rewrite == "weight-layout"]
    assert said and all("'T' keeps its 7 rows" in reason for reason in said)
    expected = {"add": "Add", "bias": "adds a bias of as many columns"}[other]
    assert all(expected in reason for reason in said)


def test_a_tied_decoder_reads_one_padded_table_before_and_inside_its_loop() -> None:
    """The whole pipeline (folding computes ``Tᵀ``, held transposed again: a twin), built and simulated: the
    prompt's tokens (of unknown sign) are wrapped, the loop's (an ArgMax's) are not."""
    table = weight(V, K)
    proto = onnx.parser.parse_model(f"""{HEADER}
    g (int64[3] tokens) => (float[3,7] logits, int64[4,3] generated) {{
      {constant("T", table)}
      Tt = Transpose <perm = [1, 0]> (T)
      e = Gather <axis = 0> (T, tokens)
      logits = MatMul (e, Tt)
      first = ArgMax <axis = 1, keepdims = 0> (logits)
      trips = Constant <value = int64 {{{TRIPS}}}> ()
      go = Constant <value = bool {{1}}> ()
      last, generated = Loop (trips, go, first) <body = step (int64 i, bool cond, int64[3] token)
          => (bool cond_out, int64[3] next, int64[3] picked) {{
        h = Gather <axis = 0> (T, token)
        scores = MatMul (h, Tt)
        next = ArgMax <axis = 1, keepdims = 0> (scores)
        cond_out = Identity (cond)
        picked = Identity (next)
      }}>
    }}""")
    compiled = checked(proto, TOKENS)
    graph = compiled.model.graph
    (padded,) = [n for n in nodes(graph, "Constant") if np.ndim(n.attrs["value"]) == 2]
    assert padded.attrs["value"].shape == (V + 1, K)
    gathers = nodes(graph, "Gather")
    assert len(gathers) == 2 and all(g.inputs[0] is padded.outputs[0] for g in gathers)
    assert all(read.inputs[0] is padded.outputs[0] for read in transposed_reads(graph))
    assert len(nodes(graph, "Where")) == 1 and len(nodes(graph, "Slice")) == 2

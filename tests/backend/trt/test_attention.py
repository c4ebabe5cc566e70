"""RotaryEmbedding, Attention and TensorScatter against onnxruntime (opsets 23 and 24)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend.trt.oracle import check_onnx

RNG = np.random.default_rng(5)
H23 = '<ir_version: 10, opset_import: ["" : 23]>'
H24 = '<ir_version: 10, opset_import: ["" : 24]>'


def _caches(rows: tuple[int, ...]) -> dict[str, np.ndarray]:
    angles = RNG.uniform(-3, 3, rows)
    return {"cos": np.cos(angles).astype(np.float32), "sin": np.sin(angles).astype(np.float32)}


@pytest.mark.parametrize("attrs", ["interleaved = 0", "interleaved = 1", "rotary_embedding_dim = 4",
                                   "interleaved = 1, rotary_embedding_dim = 4"])
def test_rope_4d_with_position_ids(attrs):
    half = 2 if "rotary_embedding_dim" in attrs else 4
    feeds = {"x": RNG.standard_normal((2, 3, 5, 8)).astype(np.float32), **_caches((16, half)),
             "pos": RNG.integers(0, 16, (2, 5)).astype(np.int64)}
    check_onnx(f"""{H23}
        g (float[2,3,5,8] x, float[16,{half}] cos, float[16,{half}] sin, int64[2,5] pos) => (float[2,3,5,8] y) {{
            y = RotaryEmbedding <{attrs}> (x, cos, sin, pos)
        }}""", feeds, rtol=1e-5, atol=1e-5)


def test_rope_3d_without_position_ids():
    feeds = {"x": RNG.standard_normal((2, 5, 24)).astype(np.float32), **_caches((2, 5, 4))}
    check_onnx(f"""{H23}
        g (float[2,5,24] x, float[2,5,4] cos, float[2,5,4] sin) => (float[2,5,24] y) {{
            y = RotaryEmbedding <num_heads = 3> (x, cos, sin)
        }}""", feeds, rtol=1e-5, atol=1e-5)


def _qkv(b: int, hq: int, hkv: int, s_q: int, s_kv: int, d: int) -> dict[str, np.ndarray]:
    return {"q": RNG.standard_normal((b, hq, s_q, d)).astype(np.float32),
            "k": RNG.standard_normal((b, hkv, s_kv, d)).astype(np.float32),
            "v": RNG.standard_normal((b, hkv, s_kv, d)).astype(np.float32)}


@pytest.mark.parametrize("attrs", ["is_causal = 0", "is_causal = 1", "scale = 0.3"])
def test_attention_4d_grouped(attrs):
    check_onnx(f"""{H23}
        g (float[2,4,3,8] q, float[2,2,5,8] k, float[2,2,5,8] v) => (float[2,4,3,8] y) {{
            y = Attention <{attrs}> (q, k, v)
        }}""", _qkv(2, 4, 2, 3, 5, 8), rtol=1e-4, atol=1e-5)


def test_causal_attention_with_fewer_queries_than_new_keys_after_past_keys():
    """The diagonal starts right after the past keys (ONNX's reference and node tests; onnxruntime ends it at the
    last key instead): TensorRT's lower-right diagonal holds only for as many new keys as queries, so with or
    without a mask that changes nothing the answer is the reference's."""
    import onnx.parser
    from onnx.reference import ReferenceEvaluator

    from loopc.frontend.onnx import import_model
    from tests.backend.trt.oracle import build_and_simulate

    feeds = {**_qkv(1, 2, 2, 1, 2, 4), "pk": RNG.standard_normal((1, 2, 4, 4)).astype(np.float32),
             "pv": RNG.standard_normal((1, 2, 4, 4)).astype(np.float32), "m": np.zeros((1, 6), np.float32)}
    for mask in ("", "m"):
        proto = onnx.parser.parse_model(f"""{H23}
            g (float[1,2,1,4] q, float[1,2,2,4] k, float[1,2,2,4] v, float[1,2,4,4] pk, float[1,2,4,4] pv
               {", float[1,6] m" if mask else ""}) => (float[1,2,1,4] y) {{
                y = Attention <is_causal = 1> (q, k, v, {mask}, pk, pv)
            }}""")
        used = {name: array for name, array in feeds.items() if name != "m" or mask}
        _, got = build_and_simulate(import_model(proto), used)
        want = ReferenceEvaluator(proto).run(None, used)[0]
        np.testing.assert_allclose(got["y"], want, rtol=1e-4, atol=1e-5, err_msg=f"mask {mask!r}")


def test_attention_with_past_and_present_causal():
    feeds = {**_qkv(1, 2, 2, 3, 3, 4), "pk": RNG.standard_normal((1, 2, 4, 4)).astype(np.float32),
             "pv": RNG.standard_normal((1, 2, 4, 4)).astype(np.float32)}
    check_onnx(f"""{H23}
        g (float[1,2,3,4] q, float[1,2,3,4] k, float[1,2,3,4] v, float[1,2,4,4] pk, float[1,2,4,4] pv)
            => (float[1,2,3,4] y, float[1,2,7,4] present_k, float[1,2,7,4] present_v) {{
            y, present_k, present_v = Attention <is_causal = 1> (q, k, v, , pk, pv)
        }}""", feeds, rtol=1e-4, atol=1e-5)


def test_attention_3d_with_a_bool_mask_and_an_empty_row():
    keep = RNG.random((3, 5)) > 0.4
    keep[1] = False  # a query that may see no key gets 0
    feeds = {"q": RNG.standard_normal((2, 3, 8)).astype(np.float32),
             "k": RNG.standard_normal((2, 5, 8)).astype(np.float32),
             "v": RNG.standard_normal((2, 5, 8)).astype(np.float32), "m": keep}
    check_onnx(f"""{H23}
        g (float[2,3,8] q, float[2,5,8] k, float[2,5,8] v, bool[3,5] m) => (float[2,3,8] y) {{
            y = Attention <q_num_heads = 2, kv_num_heads = 2> (q, k, v, m)
        }}""", feeds, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_attention_softcap_float_mask_and_scores(mode):
    feeds = {**_qkv(1, 2, 1, 3, 5, 4), "m": RNG.uniform(-1, 1, (3, 5)).astype(np.float32)}
    check_onnx(f"""{H23}
        g (float[1,2,3,4] q, float[1,1,5,4] k, float[1,1,5,4] v, float[3,5] m)
            => (float[1,2,3,4] y, float[1,2,3,5] qk) {{
            y, , , qk = Attention <softcap = 2.5, qk_matmul_output_mode = {mode}> (q, k, v, m)
        }}""", feeds, rtol=1e-4, atol=1e-5)


def test_attention_causal_with_padding_lengths():
    """Opset 24's nonpad_kv_seqlen: keys past each batch's length are masked, the diagonal ends at it."""
    feeds = {**_qkv(2, 2, 2, 2, 6, 4), "n": np.array([3, 6], np.int64)}
    check_onnx("""<ir_version: 10, opset_import: ["" : 24]>
        g (float[2,2,2,4] q, float[2,2,6,4] k, float[2,2,6,4] v, int64[2] n) => (float[2,2,2,4] y) {
            y = Attention <is_causal = 1> (q, k, v, , , , n)
        }""", feeds, rtol=1e-4, atol=1e-5)



def test_tensor_scatter_in_place_on_a_network_input():
    feeds = {"cache": RNG.standard_normal((2, 2, 6, 4)).astype(np.float32),
             "update": RNG.standard_normal((2, 2, 3, 4)).astype(np.float32), "w": np.array([3, 1], np.int64)}
    check_onnx(f"""{H24}
        g (float[2,2,6,4] cache, float[2,2,3,4] update, int64[2] w) => (float[2,2,6,4] present) {{
            present = TensorScatter (cache, update, w)
        }}""", feeds)


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter_of_a_computed_cache_along_axis_1(mode):
    feeds = {"cache": RNG.standard_normal((3, 5, 2)).astype(np.float32),
             "update": RNG.standard_normal((3, 2, 2)).astype(np.float32), "w": np.array([0, 3, 4 if mode == "circular"
                                                                                        else 2], np.int64)}
    check_onnx(f"""{H24}
        g (float[3,5,2] cache, float[3,2,2] update, int64[3] w) => (float[3,5,2] present) {{
            doubled = Add (cache, cache)
            present = TensorScatter <axis = 1, mode = "{mode}"> (doubled, update, w)
        }}""", feeds)


def test_node_tests_match():
    """Every Attention, RotaryEmbedding and TensorScatter node test (expansions aside) builds and matches."""
    from tests.conformance import MATCH, node_test_cases, run_case

    cases = [c for p in ("test_attention", "test_rotary_embedding", "test_tensorscatter")
             for c in node_test_cases(p) if not c.name.endswith("_expanded")]
    assert len(cases) >= 100
    wrong = [f"{c.name}: {r.status}: {r.detail}" for c in cases for r in [run_case(c, "loopc")] if r.status != MATCH]
    assert not wrong, "\n".join(wrong)


#: The parser's networks that disagree with the test data, and why: it drops nonpad_kv_seqlen and anchors
#: the causal diagonal at the top left, where ONNX ends it at each batch's valid length.
PARSER_WRONG = {"test_attention_4d_gqa_causal_nonpad_decode", "test_attention_4d_gqa_causal_nonpad_decode_fp16"}


def test_the_parsers_networks_simulate_to_the_test_data():
    """Independent evidence for the kernels: NVIDIA's parser builds these ops' networks, the simulator
    runs them, and the node tests' expected outputs judge."""
    from tests.conformance import MATCH, MISMATCH, node_test_cases, run_case

    cases = [c for p in ("test_attention", "test_rotary_embedding", "test_tensorscatter", "test_quantizelinear",
                         "test_dequantizelinear") for c in node_test_cases(p) if not c.name.endswith("_expanded")]
    built = [(c.name, r) for c in cases for r in [run_case(c, "trt-onnx")] if r.built]
    assert len(built) >= 17, [n for n, _ in built]
    wrong = [f"{n}: {r.status}: {r.detail}" for n, r in built
             if r.status != (MISMATCH if n in PARSER_WRONG else MATCH)]
    assert not wrong, "\n".join(wrong)


def test_decoding_loop_with_rope_cache_writes_and_padded_attention():
    """A decoder step per trip, as exporters write one: rotate the query at position i, write it and the
    value into fixed-size caches carried by the loop (TensorScatter at i), attend over the i + 1 keys
    written so far (nonpad_kv_seqlen), and feed the result to the next trip."""
    angles = RNG.uniform(-3, 3, (8, 2))
    feeds = {"n": np.array(5, np.int64), "x": RNG.standard_normal((1, 2, 1, 4)).astype(np.float32),
             "cos": np.cos(angles).astype(np.float32), "sin": np.sin(angles).astype(np.float32),
             "cache": np.zeros((1, 2, 6, 4), np.float32)}
    check_onnx(f"""{H24}
        g (int64 n, float[1,2,1,4] x, float[8,2] cos, float[8,2] sin, float[1,2,6,4] cache)
            => (float[1,2,1,4] last, float[N,1,2,1,4] steps) {{
            t = Constant <value = bool {{1}}> ()
            last, kc_end, vc_end, steps = Loop(n, t, x, cache, cache)
                <body = b (int64 i, bool c, float[1,2,1,4] s, float[1,2,6,4] kc, float[1,2,6,4] vc)
                        => (bool c2, float[1,2,1,4] s2, float[1,2,6,4] kc2, float[1,2,6,4] vc2, float[1,2,1,4] y) {{
                    shape11 = Constant <value = int64[2] {{1, 1}}> ()
                    shape1 = Constant <value = int64[1] {{1}}> ()
                    pos = Reshape(i, shape11)
                    at = Reshape(i, shape1)
                    q = RotaryEmbedding(s, cos, sin, pos)
                    kc2 = TensorScatter(kc, q, at)
                    vc2 = TensorScatter(vc, s, at)
                    one = Constant <value = int64 {{1}}> ()
                    seen = Add(at, one)
                    y = Attention(q, kc2, vc2, , , , seen)
                    s2 = Add(s, y)
                    c2 = Identity(c)
                }}>
        }}""", feeds, rtol=1e-4, atol=1e-5)


def test_attention_layer_inside_a_loop():
    """TensorRT's IAttention in a loop body: each trip attends over the carried keys and values."""
    feeds = {"n": np.array(3, np.int64), "x": RNG.standard_normal((1, 2, 2, 4)).astype(np.float32),
             "kv": RNG.standard_normal((1, 1, 5, 4)).astype(np.float32)}
    check_onnx(f"""{H23}
        g (int64 n, float[1,2,2,4] x, float[1,1,5,4] kv) => (float[1,2,2,4] last) {{
            t = Constant <value = bool {{1}}> ()
            last = Loop(n, t, x) <body = b (int64 i, bool c, float[1,2,2,4] s) => (bool c2, float[1,2,2,4] s2) {{
                y = Attention <is_causal = 1> (s, kv, kv)
                s2 = Add(s, y)
                c2 = Identity(c)
            }}>
        }}""", feeds, rtol=1e-4, atol=1e-5)


def test_attention_inside_a_conditional_branch():
    feeds = {"p": np.array(True), "x": RNG.standard_normal((1, 2, 2, 4)).astype(np.float32),
             "kv": RNG.standard_normal((1, 1, 5, 4)).astype(np.float32)}
    check_onnx(f"""{H23}
        g (bool p, float[1,2,2,4] x, float[1,1,5,4] kv) => (float[1,2,2,4] y) {{
            y = If(p) <then_branch = t () => (float[1,2,2,4] a) {{ a = Attention <is_causal = 1> (x, kv, kv) }},
                       else_branch = e () => (float[1,2,2,4] b) {{ b = Identity(x) }}>
        }}""", feeds, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("attrs", ["is_causal = 1", "softcap = 3.0", "is_causal = 1, softcap = 3.0"])
def test_attention_with_dynamic_sequence_lengths(attrs):
    """A decoder's lengths are dynamic: the IAttention (causal) takes them as they are, the products
    (softcap) compute the causal frontier from positions read off the shapes."""
    check_onnx(f"""{H23}
        g (float[B,2,S,8] q, float[B,1,T,8] k, float[B,1,T,8] v) => (float[B,2,S,8] y) {{
            y = Attention <{attrs}> (q, k, v)
        }}""", _qkv(2, 2, 1, 3, 5, 8), rtol=1e-4, atol=1e-5)


def test_causal_products_after_a_past_of_dynamic_length():
    feeds = {**_qkv(1, 2, 2, 3, 3, 4), "pk": RNG.standard_normal((1, 2, 4, 4)).astype(np.float32),
             "pv": RNG.standard_normal((1, 2, 4, 4)).astype(np.float32)}
    check_onnx(f"""{H23}
        g (float[1,2,S,4] q, float[1,2,S,4] k, float[1,2,S,4] v, float[1,2,P,4] pk, float[1,2,P,4] pv)
            => (float[1,2,S,4] y, float[1,2,T,4] pk2, float[1,2,T,4] pv2) {{
            y, pk2, pv2 = Attention <is_causal = 1, softcap = 4.0> (q, k, v, , pk, pv)
        }}""", feeds, rtol=1e-4, atol=1e-5)


def test_padding_lengths_over_keys_of_dynamic_length():
    feeds = {**_qkv(2, 2, 2, 2, 6, 4), "n": np.array([3, 6], np.int64)}
    check_onnx(f"""{H24}
        g (float[2,2,S,4] q, float[2,2,T,4] k, float[2,2,T,4] v, int64[2] n) => (float[2,2,S,4] y) {{
            y = Attention <is_causal = 1> (q, k, v, , , , n)
        }}""", feeds, rtol=1e-4, atol=1e-5)


def test_rope_3d_with_dynamic_batch_and_sequence():
    feeds = {"x": RNG.standard_normal((2, 5, 24)).astype(np.float32), **_caches((16, 4)),
             "pos": RNG.integers(0, 16, (2, 5)).astype(np.int64)}
    check_onnx(f"""{H23}
        g (float[B,S,24] x, float[16,4] cos, float[16,4] sin, int64[B,S] pos) => (float[B,S,24] y) {{
            y = RotaryEmbedding <num_heads = 3> (x, cos, sin, pos)
        }}""", feeds, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter_with_dynamic_batch_and_update_length(mode):
    feeds = {"cache": RNG.standard_normal((3, 2, 5, 2)).astype(np.float32),
             "update": RNG.standard_normal((3, 2, 2, 2)).astype(np.float32), "w": np.array([0, 3, 2], np.int64)}
    if mode == "circular":
        feeds["w"] = np.array([4, 3, 0], np.int64)
    check_onnx(f"""{H24}
        g (float[B,2,5,2] cache, float[B,2,S,2] update, int64[B] w) => (float[B,2,5,2] present) {{
            doubled = Add (cache, cache)
            present = TensorScatter <mode = "{mode}"> (doubled, update, w)
        }}""", feeds)


def test_tensor_scatter_without_write_indices_writes_from_the_start():
    feeds = {"cache": RNG.standard_normal((2, 5, 3)).astype(np.float32),
             "update": RNG.standard_normal((2, 2, 3)).astype(np.float32)}
    check_onnx(f"""{H24}
        g (float[B,5,3] cache, float[B,2,3] update) => (float[B,5,3] present) {{
            present = TensorScatter <axis = 1> (cache, update)
        }}""", feeds)


@pytest.mark.parametrize("precision", [1, 10])
def test_half_attention_with_a_softmax_precision(precision):
    """softmax_precision float (1) computes the softmax in float32 (the products); float16 (10), the
    inputs' own type, leaves the attention to the IAttention."""
    feeds = {k: a.astype(np.float16) for k, a in _qkv(1, 2, 2, 3, 4, 8).items()}
    check_onnx(f"""{H23}
        g (float16[1,2,3,8] q, float16[1,2,4,8] k, float16[1,2,4,8] v) => (float16[1,2,3,8] y) {{
            y = Attention <softmax_precision = {precision}> (q, k, v)
        }}""", feeds, rtol=2e-3, atol=2e-3)


def test_past_keys_with_padding_lengths_are_refused_in_one_line():
    """ONNX's reference refuses past_key together with nonpad_kv_seqlen: loopc builds no meaning of its own."""
    import onnx.parser

    from loopc.errors import LoopcError
    from loopc.frontend.onnx import import_model
    from tests.backend.trt.oracle import build_and_simulate

    proto = onnx.parser.parse_model(f"""{H24}
        g (float[1,2,1,4] q, float[1,2,1,4] k, float[1,2,1,4] v, float[1,2,3,4] pk, float[1,2,3,4] pv,
           int64[1] n) => (float[1,2,1,4] y) {{
            y = Attention (q, k, v, , pk, pv, n)
        }}""")
    with pytest.raises(LoopcError) as caught:
        build_and_simulate(import_model(proto), {})
    assert "\n" not in str(caught.value) and "past_key and nonpad_kv_seqlen" in str(caught.value)

"""The new converters inside loop bodies, where exporters put them: a beam/greedy decoding step
(OneHot of the last token, Tile, GatherND), a padded/masked state update (Pad, Trilu, Dropout),
a reversed window (ReverseSequence). Each against onnxruntime."""

from __future__ import annotations

import numpy as np

from tests.backend.trt.oracle import check_onnx

HEADER = '<ir_version: 8, opset_import: ["" : 19]>'
RNG = np.random.default_rng(4)


def test_greedy_step_with_one_hot_tile_and_gather_nd():
    """Each trip: embed the last token by OneHot x table, tile it over 2 beams, pick per-beam rows
    with GatherND, and take the argmax as the next token."""
    table = RNG.standard_normal((5, 5)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (int64 n, float[5,5] table, int64 start) => (int64 last, int64[T] tokens) {{
            t = Constant <value = bool {{1}}> ()
            last, tokens = Loop(n, t, start) <body = b (int64 i, bool c, int64 tok) => (bool c2, int64 nxt, int64 out) {{
                depth = Constant <value = int64 {{5}}> ()
                values = Constant <value = float[2] {{0.0, 1.0}}> ()
                ax = Constant <value = int64[1] {{0}}> ()
                tok1 = Unsqueeze(tok, ax)
                hot = OneHot(tok1, depth, values)
                emb = MatMul(hot, table)
                reps = Constant <value = int64[2] {{2, 1}}> ()
                beams = Tile(emb, reps)
                pick = Constant <value = int64[2,1] {{1, 0}}> ()
                rows = GatherND(beams, pick)
                summed = ReduceSum <keepdims = 0> (rows, ax)
                nxt = ArgMax <keepdims = 0> (summed)
                out = Identity(nxt)
                c2 = Identity(c)
            }}>
        }}""", {"n": np.array(4), "table": table, "start": np.array(2)})


def test_state_update_with_pad_trilu_and_dropout():
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (int64 n, float[4,3] x) => (float[4,3] final) {{
            t = Constant <value = bool {{1}}> ()
            final = Loop(n, t, x) <body = b (int64 i, bool c, float[4,3] s) => (bool c2, float[4,3] s2) {{
                p = Constant <value = int64[4] {{0, 1, 0, 0}}> ()
                wide = Pad <mode = "edge"> (s, p)
                lower = Trilu <upper = 0> (wide)
                starts = Constant <value = int64[1] {{0}}> ()
                ends = Constant <value = int64[1] {{3}}> ()
                axes = Constant <value = int64[1] {{1}}> ()
                cut = Slice(lower, starts, ends, axes)
                kept = Dropout(cut)
                half = Constant <value = float {{0.5}}> ()
                scaled = Mul(kept, half)
                s2 = Add(scaled, s)
                c2 = Identity(c)
            }}>
        }}""", {"n": np.array(3), "x": x})


def test_scan_over_windows_reversed_by_reverse_sequence():
    x = RNG.standard_normal((3, 2, 4)).astype(np.float32)
    check_onnx(f"""{HEADER}
        g (float[3,2,4] x, int64[2] lens) => (float[3,2,4] ys) {{
            ys = Scan <num_scan_inputs = 1, body = b (float[2,4] w) => (float[2,4] y) {{
                y = ReverseSequence <batch_axis = 0, time_axis = 1> (w, lens)
            }}> (x)
        }}""", {"x": x, "lens": np.array([4, 2])})

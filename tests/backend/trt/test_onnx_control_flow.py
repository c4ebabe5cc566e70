"""ONNX Loop, Scan and If through the ONNX frontend and this backend, against onnxruntime."""

from __future__ import annotations

import numpy as np

from loopc.ir import Model

from tests.backend.trt.oracle import check_onnx

HEADER = '<ir_version: 8, opset_import: ["" : 19]>'


def test_loop_with_carried_state_and_scan_output():
    check_onnx(f"""{HEADER}
        g (int64 m, float[3] init, float[5,3] x) => (float[3] total, float[5,3] partials) {{
            cond = Constant <value = bool {{1}}> ()
            total, partials = Loop(m, cond, init) <body = body (int64 i, bool c, float[3] acc) => (bool c_out,
                                                                    float[3] acc_out, float[3] scan) {{
                c_out = Identity(c)
                row = Gather <axis = 0> (x, i)
                t = Tanh(row)
                acc_out = Add(acc, t)
                scan = Identity(acc_out)
            }}>
        }}""", {"m": np.array(5), "init": np.ones(3, np.float32),
                "x": np.random.default_rng(5).standard_normal((5, 3)).astype(np.float32)}, rtol=1e-6)


def test_scan_with_reverse_input():
    check_onnx(f"""{HEADER}
        g (float[2] init, float[4,2] x) => (float[2] last, float[4,2] ys) {{
            last, ys = Scan <num_scan_inputs = 1, scan_input_directions = [1], body = body (
                    float[2] s, float[2] e) => (float[2] s_out, float[2] y) {{
                s_out = Add(s, e)
                y = Mul(s_out, e)
            }}> (init, x)
        }}""", {"init": np.zeros(2, np.float32), "x": np.arange(8, dtype=np.float32).reshape(4, 2)})


def test_if():
    for flag in (True, False):
        check_onnx(f"""{HEADER}
            g (bool c, float[3] x) => (float[3] y) {{
                y = If(c) <then_branch = t () => (float[3] a) {{ a = Sqrt(x) }},
                           else_branch = e () => (float[3] b) {{ b = Neg(x) }}>
            }}""", {"c": np.array(flag), "x": np.array([1, 4, 9], np.float32)})


def test_while_loop_without_scan_outputs():
    # s = 1; while s < limit: s = 3s + 1
    check_onnx(f"""{HEADER}
        g (float limit) => (float s_final) {{
            s0 = Constant <value = float {{1.0}}> ()
            go = Less(s0, limit)
            s_final = Loop(, go, s0) <body = body (int64 i, bool c, float s) => (bool c_out, float s_out) {{
                three = Constant <value = float {{3.0}}> ()
                one = Constant <value = float {{1.0}}> ()
                s3 = Mul(s, three)
                s_out = Add(s3, one)
                c_out = Less(s_out, limit)
            }}>
        }}""", {"limit": np.array(50, np.float32)})


def test_inner_loop_reading_rows_up_to_the_outer_counter():
    # for i in range(3): for j in range(i + 1): acc += x[j]  — the inner trip count varies per outer trip
    check_onnx(f"""{HEADER}
        g (float[N,2] x, float[2] acc0) => (float[2] acc) {{
            three = Constant <value = int64 {{3}}> ()
            yes = Constant <value = bool {{1}}> ()
            acc = Loop(three, yes, acc0) <body = outer (int64 i, bool c, float[2] a) => (bool c2, float[2] a2) {{
                c2 = Identity(c)
                one = Constant <value = int64 {{1}}> ()
                n = Add(i, one)
                a2 = Loop(n, c, a) <body = inner (int64 j, bool d, float[2] b) => (bool d2, float[2] b2) {{
                    d2 = Identity(d)
                    row = Gather <axis = 0> (x, j)
                    b2 = Add(b, row)
                }}>
            }}>
        }}""", {"x": np.arange(8, dtype=np.float32).reshape(4, 2), "acc0": np.zeros(2, np.float32)})


def check_through_passes(text: str, feeds: list[dict[str, np.ndarray]], rtol: float = 1e-6,
                         atol: float = 0.0) -> Model:
    """The model through loopc's passes, the real builder and the simulator, against onnxruntime, per feed;
    the model after the passes."""
    import onnx
    import onnxruntime as ort

    from loopc.frontend.onnx import import_model
    from loopc.passes import PassManager, default_passes
    from tests.backend.trt.oracle import build_and_simulate

    proto = onnx.parser.parse_model(text)
    onnx.checker.check_model(proto)
    oracle = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in proto.graph.output]
    model = import_model(proto)
    model.graph = PassManager(default_passes()).run(model.graph)
    for feed in feeds:
        got = build_and_simulate(model, feed)[1]
        for name, want in zip(names, oracle.run(names, feed)):
            assert got[name].shape == want.shape, name
            np.testing.assert_allclose(got[name], want, rtol=rtol, atol=atol, err_msg=name)
    return model


def test_while_loop_stacking_on_a_later_axis():
    # `torch.stack(frames, 2)` after a scripted while loop (a Tacotron decoder's mel frames): the stacked output
    # on axis 2 of a loop whose trip count is known only at run time; TensorRT's builder failed on it with
    # "No scan input/output tensor to derive shape" until loopc stacked on axis 0 and transposed
    x = np.linspace(0.25, 1.0, 8, dtype=np.float32).reshape(1, 8)
    # stops at n = 3; or on the sum (sum(x) = 5, so 5 * 6 trips reaches 30)
    check_through_passes(f"""{HEADER}
        g (float[1,8] x, int64 n) => (float out, int64 steps) {{
            zero = Constant <value = int64 {{0}}> ()
            start = Less (zero, n)
            seq0 = SequenceEmpty <dtype = 1> ()
            steps, seq = Loop ("", start, zero, seq0) <body = body (int64 i, bool c, int64 s, seq_in)
                                                              => (bool c2, int64 s2, seq_out) {{
                one = Constant <value = int64 {{1}}> ()
                s2 = Add (s, one)
                sf = Cast <to = 1> (s2)
                y = Mul (x, sf)
                seq_out = SequenceInsert (seq_in, y)
                more = Less (s2, n)
                total = ReduceSum <keepdims = 0> (y)
                big = Constant <value = float {{30.0}}> ()
                small = Less (total, big)
                c2 = And (more, small)
            }}>
            out = ConcatFromSequence <axis = 2, new_axis = 1> (seq)
        }}""", [{"x": x, "n": np.array(n, np.int64)} for n in (3, 20)])


def test_greedy_picking_rows_at_the_argmax_in_a_while_loop():
    # a greedy NMS loop's `i = int(torch.argmax(live))`, `scores[i:i + 1]`: TensorRT's builder failed on the Slice
    # (a length computed from data inside a loop: makeScopeNodesContiguous) until loopc made it a Gather
    check_through_passes(f"""{HEADER}
        g (float[6] scores, float[6,2] boxes) => (float[2] picked, int64 taken) {{
            zero = Constant <value = int64 {{0}}> ()
            acc0 = Constant <value = float[2] {{0.0, 0.0}}> ()
            floor = Constant <value = float {{0.0}}> ()
            best0 = ReduceMax <keepdims = 0> (scores)
            start = Greater (best0, floor)
            taken, live_out, picked = Loop ("", start, zero, scores, acc0) <body = body (int64 it, bool c, int64 k,
                    float[6] live, float[2] acc) => (bool c2, int64 k2, float[6] live2, float[2] acc2) {{
                i = ArgMax <axis = 0, keepdims = 0> (live)
                one = Constant <value = int64 {{1}}> ()
                end = Add (i, one)
                axis0 = Constant <value = int64[1] {{0}}> ()
                starts = Unsqueeze (i, axis0)
                ends = Unsqueeze (end, axis0)
                score = Slice (live, starts, ends, axis0)
                box = Slice (boxes, starts, ends, axis0)
                two = Constant <value = int64[1] {{2}}> ()
                row = Reshape (box, two)
                weighted = Mul (row, score)
                acc2 = Add (acc, weighted)
                positions = Constant <value = int64[6] {{0, 1, 2, 3, 4, 5}}> ()
                hit = Equal (positions, i)
                gone = Constant <value = float {{-1.0}}> ()
                live2 = Where (hit, gone, live)
                k2 = Add (k, one)
                three = Constant <value = int64 {{3}}> ()
                more = Less (k2, three)
                best = ReduceMax <keepdims = 0> (live2)
                alive = Greater (best, floor)
                c2 = And (more, alive)
            }}>
        }}""", [{"scores": np.array(s, np.float32), "boxes": np.arange(12, dtype=np.float32).reshape(6, 2)}
                for s in ([0.1, 0.9, -0.5, 0.4, 0.7, -0.2], [-1, -1, 0.3, -1, -1, -1])])

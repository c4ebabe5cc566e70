"""The simulator fails with a clear SimulationError that names what is wrong, never a hang or a crash."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from loopc.errors import SimulationError
from loopc.sim import Simulator, simulate



def ew(nb: Any, a: Any, b: Any, op: str) -> Any:
    return nb.network.add_elementwise(a, b, getattr(nb.trt.ElementWiseOperation, op)).get_output(0)


def negate_network(nb: Any) -> Any:
    """y = -x for x: FLOAT [2, 3]."""
    x = nb.input("x", nb.trt.float32, (2, 3))
    nb.output(nb.network.add_unary(x, nb.trt.UnaryOperation.NEG).get_output(0), "y")
    return nb.network


def scan_loop(nb: Any, rows: int, length: int, scan_iterator: bool = True) -> dict[str, Any]:
    """A loop whose trip count is the input ``n``, iterating over ``x`` [rows, 2].

    Its kCONCATENATE output stacks the rows (or, with ``scan_iterator=False``, a trip counter)
    to ``length``.
    """
    trt, net = nb.trt, nb.network
    loop = net.add_loop()
    loop.name = "scan_rows"
    loop.add_trip_limit(nb.input("n", trt.int32, ()), trt.TripLimit.COUNT)
    iterator = loop.add_iterator(nb.input("x", trt.float32, (rows, 2)))
    iterator.name = "row_iterator"
    scanned = iterator.get_output(0)
    if not scan_iterator:
        rec = loop.add_recurrence(nb.const(0, np.int32))
        rec.set_input(1, ew(nb, rec.get_output(0), nb.const(1, np.int32), "SUM"))
        scanned = rec.get_output(0)
    out = loop.add_loop_output(scanned, trt.LoopOutput.CONCATENATE, 0)
    out.name = "stack_rows"
    out.set_input(1, nb.const(length, np.int32))
    nb.output(out.get_output(0), "y")
    return {"x": np.zeros((rows, 2), np.float32)}


# -- unsupported layers -----------------------------------------------------------------------


def test_unsupported_layer_names_the_layer_and_its_type(nb):
    x = nb.input("x", nb.trt.float32, (1, 2, 4))
    ragged = nb.network.add_ragged_softmax(x, nb.const(np.array([[[3], [4]]], np.int32)))
    ragged.name = "scores"
    nb.output(ragged.get_output(0), "y")

    unsupported = r"'scores' \(RAGGED_SOFTMAX\).*does not support layer type RAGGED_SOFTMAX"
    with pytest.raises(SimulationError, match=unsupported):
        simulate(nb.network, {"x": np.zeros((1, 2, 4), np.float32)})
    assert Simulator(nb.network).unsupported_layers() == ["layer 'scores' (RAGGED_SOFTMAX)"]


def test_unsupported_layer_inside_a_loop(nb):
    trt, net = nb.trt, nb.network
    loop = net.add_loop()
    loop.add_trip_limit(nb.const(2, np.int32), trt.TripLimit.COUNT)
    rows = loop.add_iterator(nb.input("x", trt.float32, (2, 1, 1, 3))).get_output(0)
    ragged = net.add_ragged_softmax(rows, nb.const(np.full((1, 1, 1), 3, np.int32)))
    ragged.name = "smooth"
    out = loop.add_loop_output(ragged.get_output(0), trt.LoopOutput.CONCATENATE, 0)
    out.set_input(1, nb.const(2, np.int32))
    nb.output(out.get_output(0), "y")

    with pytest.raises(SimulationError, match=r"'smooth' \(RAGGED_SOFTMAX\)"):
        simulate(net, {"x": np.zeros((2, 1, 1, 3), np.float32)})


# -- loops that misbehave ---------------------------------------------------------------------


def test_while_loop_that_never_ends_stops_at_the_iteration_cap(nb):
    # i = 0; while i >= 0: i += 1
    trt, net = nb.trt, nb.network
    loop = net.add_loop()
    loop.name = "forever"
    rec = loop.add_recurrence(nb.const(0, np.int32))
    i = rec.get_output(0)
    rec.set_input(1, ew(nb, i, nb.const(1, np.int32), "SUM"))
    never_false = ew(nb, ew(nb, i, nb.const(0, np.int32), "GREATER"), ew(nb, i, nb.const(0, np.int32), "EQUAL"), "OR")
    loop.add_trip_limit(never_false, trt.TripLimit.WHILE)
    nb.output(loop.add_loop_output(i, trt.LoopOutput.LAST_VALUE).get_output(0), "i")
    assert nb.serialize()

    with pytest.raises(SimulationError, match=r"loop 'forever' did not end within 50 trips"):
        simulate(net, {}, max_iterations=50)


def test_iterator_reading_past_the_end_of_its_input(nb):
    inputs = scan_loop(nb, rows=3, length=3)
    assert nb.serialize({**inputs, "n": np.array(3, np.int32)})

    with pytest.raises(SimulationError, match=r"'row_iterator' \(ITERATOR\): iteration 3 reads past the end"):
        simulate(nb.network, {**inputs, "n": np.array(5, np.int32)})


def test_concatenate_length_smaller_than_trip_count(nb):
    # (TensorRT's builder rejects a length below the iterator's extent, so the loop scans a counter.)
    inputs = scan_loop(nb, rows=4, length=2, scan_iterator=False)
    assert nb.serialize({**inputs, "n": np.array(2, np.int32)})

    with pytest.raises(SimulationError, match=r"'stack_rows' \(LOOP_OUTPUT\): the loop ran 4 trips, but this output was "
                                              r"built to hold 2 .*max_trips=N"):
        simulate(nb.network, {**inputs, "n": np.array(4, np.int32)})


def test_failing_assertion_reports_its_message(nb):
    # Assertion inputs are shape tensors, so the checked input is INT32; nothing consumes the layer.
    k = nb.input("k", nb.trt.int32, (3,))
    check = nb.network.add_assertion(ew(nb, k, nb.const(np.zeros(3, np.int32)), "GREATER"), "k must be positive")
    check.name = "check_k"
    nb.output(nb.network.add_identity(nb.input("x", nb.trt.float32, (3,))).get_output(0), "y")
    x = np.array([1, 2, 3], np.float32)
    assert nb.serialize({"k": np.array([1, 2, 3], np.int32), "x": x})

    np.testing.assert_array_equal(simulate(nb.network, {"k": np.array([1, 2, 3], np.int32), "x": x})["y"], x)
    with pytest.raises(SimulationError, match=r"'check_k' \(ASSERTION\): assertion failed: k must be positive"):
        simulate(nb.network, {"k": np.array([1, -2, 3], np.int32), "x": x})


def test_network_whose_shapes_tensorrt_cannot_infer(nb):
    # The length input of a kCONCATENATE output must be 0-D; this one has shape (1,).
    trt, net = nb.trt, nb.network
    loop = net.add_loop()
    loop.add_trip_limit(nb.const(2, np.int32), trt.TripLimit.COUNT)
    row = loop.add_iterator(nb.input("x", trt.float32, (2, 3))).get_output(0)
    out = loop.add_loop_output(row, trt.LoopOutput.CONCATENATE, 0)
    out.set_input(1, nb.const(np.array([2], np.int32)))
    nb.output(out.get_output(0), "rows")

    with pytest.raises(SimulationError, match=r"cannot compute the shape of tensor 'rows'"):
        simulate(net, {"x": np.zeros((2, 3), np.float32)})


# -- bad inputs -------------------------------------------------------------------------------


def test_missing_input(nb):
    with pytest.raises(SimulationError, match=r"missing network input\(s\): x"):
        simulate(negate_network(nb), {})


def test_extra_input(nb):
    net = negate_network(nb)
    with pytest.raises(SimulationError, match=r"unknown input\(s\) z; the network's inputs are x"):
        simulate(net, {"x": np.zeros((2, 3), np.float32), "z": np.zeros(1, np.float32)})


def test_wrong_dtype(nb):
    with pytest.raises(SimulationError, match=r"input 'x' has dtype float64, the network expects float32"):
        simulate(negate_network(nb), {"x": np.zeros((2, 3))})


@pytest.mark.parametrize("shape", [(3, 2), (2, 3, 1), (6,)])
def test_wrong_shape(nb, shape):
    with pytest.raises(SimulationError, match=r"input 'x' has shape \(.*\), the network expects \(2, 3\)"):
        simulate(negate_network(nb), {"x": np.zeros(shape, np.float32)})

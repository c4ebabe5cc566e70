"""A loop layer that takes a shape (a size, or slice bounds) from values the loop computes each trip:
TensorRT's builder fails on it without naming a layer, and loopc names it. The networks are built by hand (and one from ONNX through loopc); each is
given to the real builder, so a TensorRT that learns to build them makes these tests say so."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx.parser
import pytest

from loopc.errors import BackendError
from loopc.frontend.onnx import import_model
from loopc.trt import trt
from loopc.trt.config import Session, build_serialized, builder_config
from loopc.trt.loop_shapes import trip_shaped_layer
from tests.backend.trt.oracle import build_and_simulate


def loop_network(sized: str) -> tuple[Session, Any]:
    """A loop over ``ks`` (three trips) whose body reads ``x`` through one layer given the size
    [1, 1, k, k] (``sized`` names which); for "start", a fixed-size slice starting at k - 1; for
    "shape", a slice of x·k sized by the Shape of x·k (fixed, though its values change); the body's sum
    is a concatenated output."""
    t = trt()
    session = Session()
    net = session.create_network()
    ks = net.add_input("ks", t.int64, (3,))
    x = net.add_input("x", t.float32, (1, 1, 4, 4))
    loop = net.add_loop()
    loop.name = "loop"
    trips = net.add_constant((), np.array(3, np.int32)).get_output(0)
    loop.add_trip_limit(trips, t.TripLimit.COUNT)
    k = loop.add_iterator(ks, 0, False).get_output(0)
    k1 = net.add_shuffle(k)
    k1.reshape_dims = (1,)
    ones = net.add_constant((2,), np.array([1, 1], np.int64)).get_output(0)
    size = net.add_concatenation([ones, k1.get_output(0), k1.get_output(0)]).get_output(0)
    if sized == "resize":
        layer = net.add_resize(x)
        layer.set_input(1, size)
    elif sized == "fill":
        layer = net.add_fill((1, 1, 1, 1), t.FillOperation.LINSPACE, t.float32)
        layer.set_input(0, size)
        layer.set_input(1, net.add_constant((), np.array(0, np.float32)).get_output(0))
        layer.set_input(2, net.add_constant((4,), np.zeros(4, np.float32)).get_output(0))
    elif sized == "shape":
        k4 = net.add_shuffle(k)
        k4.reshape_dims = (1, 1, 1, 1)
        scaled = net.add_elementwise(x, net.add_cast(k4.get_output(0), t.float32).get_output(0),
                                     t.ElementWiseOperation.PROD).get_output(0)
        layer = net.add_slice(scaled, (0, 0, 0, 0), (1, 1, 1, 1), (1, 1, 1, 1))
        layer.set_input(2, net.add_shape(scaled).get_output(0))
    else:
        layer = net.add_slice(x, (0, 0, 0, 0), (1, 1, 2, 2), (1, 1, 1, 1))
        if sized == "slice":
            layer.set_input(2, size)
        else:
            shift = net.add_constant((4,), np.array([1, 1, 1, 1], np.int64)).get_output(0)
            layer.set_input(1, net.add_elementwise(size, shift, t.ElementWiseOperation.SUB).get_output(0))
        layer.mode = t.SampleMode.CLAMP
    layer.name = "sized"
    total = net.add_reduce(layer.get_output(0), t.ReduceOperation.SUM, 0b1111, False).get_output(0)
    flat = net.add_shuffle(total)
    flat.reshape_dims = (1,)
    out = loop.add_loop_output(flat.get_output(0), t.LoopOutput.CONCATENATE, 0)
    out.set_input(1, trips)
    net.mark_output(out.get_output(0))
    return session, net


@pytest.mark.parametrize("sized", ["resize", "fill", "slice", "start"])
def test_a_layer_shaped_in_each_trip_is_named_when_the_builder_fails(sized: str) -> None:
    session, net = loop_network(sized)
    assert trip_shaped_layer(net) == "sized"
    with pytest.raises(BackendError, match="layer 'sized' takes a shape .* from values its loop computes"):
        build_serialized(session, net, builder_config(session))


def test_a_shape_read_from_a_tensor_that_keeps_its_shape_builds() -> None:
    session, net = loop_network("shape")
    assert trip_shaped_layer(net) is None
    assert len(build_serialized(session, net, builder_config(session))) > 1000


def test_an_onnx_resize_to_a_size_read_in_each_trip_is_refused_by_node() -> None:
    """torchvision's mask pasting resizes each detection's mask to its box inside a Loop."""
    text = """<ir_version: 8, opset_import: ["" : 13]>
        g (int64[3] ks, float[1,1,4,4] x) => (float[M,1] out) {
          n = Constant <value = int64 {3}> ()
          t = Constant <value = bool {1}> ()
          out = Loop(n, t) <body = b (int64 i, bool c) => (bool c2, float[1] s) {
              zero = Constant <value = int64[1] {0}> ()
              k = Gather(ks, i)
              k1 = Unsqueeze(k, zero)
              one2 = Constant <value = int64[2] {1, 1}> ()
              size = Concat <axis = 0> (one2, k1, k1)
              none = Constant <value = float[0] {}> ()
              m = Resize <mode = "linear"> (x, none, none, size)
              total = ReduceSum <keepdims = 0> (m)
              s = Unsqueeze(total, zero)
              c2 = Identity(c)
          }>
        }"""
    feeds = {"ks": np.array([3, 5, 2], np.int64), "x": np.ones((1, 1, 4, 4), np.float32)}
    with pytest.raises(BackendError, match="layer 'm' takes a shape .* from values its loop computes in each trip"):
        build_and_simulate(import_model(onnx.parser.parse_model(text)), feeds)

"""Find the layer of a TensorRT loop that takes a shape from values the loop computes in each trip.

loopc's passes legalize every loop (:mod:`loopc.ir.target`), so in a network made from its IR this is an
assertion (:func:`assert_legal`); in a network TensorRT's own parser made it names the culprit. TensorRT's
builder cannot build such a loop (a Resize, fill or reshape whose size, or a slice whose
size or bounds, come from an iterator or a recurrence): it fails an internal assertion
(``makeScopeNodesContiguous``) that names no layer. Naming the layer makes that an error a user can
act on.
"""

from __future__ import annotations

from typing import Any

from loopc.errors import InternalError, NetworkReadError
from loopc.trt.read_back import Layer, Network, Tensor, read_back

#: Shape-tensor inputs: sizes, and a slice's start, size, stride and axes.
_SHAPE_INPUTS = {"SHUFFLE": (1,), "SLICE": (1, 2, 3, 5), "FILL": (0,), "RESIZE": (1,), "TOPK": (1,)}
#: Layers whose output shape follows the values of their data.
_DATA_SIZED = {"NON_ZERO"}
#: Boundary layers whose outputs are the same on every trip, or outside the loop.
_TRIP_INVARIANT = {"LOOP_OUTPUT", "TRIP_LIMIT", "SHAPE"}

#: What TensorRT's builder says when it meets such a layer.
SYMPTOM = "makeScopeNodesContiguous"


def trip_shaped_layer(network: Any) -> str | None:
    """The name of the first layer of ``network`` (an ``INetworkDefinition``, or one read back by
    :func:`~loopc.trt.read_back.read_back`) that takes a shape from values that change between trips of its
    loop, or None. A Shape layer's output counts as fixed: a changing shape is caught at its source.

    Layers are not listed in data order (an input may be set after its reader was added), so the values
    that change are found by spreading from the iterators and recurrences through their readers."""
    net = network if isinstance(network, Network) else read_back(network)
    readers: dict[Tensor, list[Layer]] = {}
    for layer in net.layers:
        for tensor in layer.inputs:
            if tensor is not None:
                readers.setdefault(tensor, []).append(layer)
    changing = [layer for layer in net.layers if layer.type in ("ITERATOR", "RECURRENCE")]
    varying: set[Tensor] = set()
    while changing:
        for tensor in changing.pop().outputs:
            if tensor not in varying:
                varying.add(tensor)
                changing.extend(r for r in readers.get(tensor, ()) if r.type not in _TRIP_INVARIANT)
    for layer in sorted(net.layers, key=lambda lay: lay.index):
        slots = _SHAPE_INPUTS.get(layer.type, ())
        if any(i < len(layer.inputs) and layer.inputs[i] in varying for i in slots) or (
                layer.type in _DATA_SIZED and any(t in varying for t in layer.inputs)):
            return layer.name
    return None


def refusal(network: Any) -> str | None:
    """Why TensorRT's builder refuses ``network`` for this limitation, naming the layer; None when no layer takes a
    shape from per-trip values. Asked once the builder has failed: the check also flags loops the builder orders."""
    try:
        culprit = trip_shaped_layer(network)
    except NetworkReadError:  # a network TensorRT cannot read back names no layer
        return None
    if culprit is None:
        return None
    return (f"layer '{culprit}' takes a shape (a size, or slice bounds) from values its loop computes in each "
            f"trip, which TensorRT's builder cannot build ({SYMPTOM}); compute it outside the loop, or read the "
            "data with a gather")


def assert_legal(network: Network) -> None:
    """What loopc's verifier promised (``loop-target``, see :mod:`loopc.ir.target`) holds in the network made
    from the IR: no layer of a loop takes a shape from per-trip values. A layer that does is loopc's bug (a
    lowering that computes a shape from data), reported as such before TensorRT's builder fails unnamed."""
    culprit = trip_shaped_layer(network)
    if culprit is not None:
        raise InternalError(f"layer '{culprit}' takes a shape from values its loop computes in each trip, although "
                            "the IR it was made from was legal for TensorRT: the lowering made that shape")


def explain(network: Any, reason: str) -> str:
    """``reason`` (TensorRT's error) with the layer it is about, when it is this limitation."""
    if SYMPTOM not in reason:
        return reason
    return refusal(network) or reason

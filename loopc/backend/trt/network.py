"""IR model → INetworkDefinition: inputs, nodes in order (each by its registered converter), outputs
under the model's names."""

from __future__ import annotations

import logging
from typing import Any

from loopc.backend.trt.context import LONGEST_NAME, ConversionContext, UnheardRefusal, trt_dtype
from loopc.errors import BackendError
from loopc.gc_pause import gc_paused
from loopc.ir import Model
from loopc.trt.config import Session
from loopc.trt.messages import captured

log = logging.getLogger(__name__)


@gc_paused()
def to_network(model: Model, session: Session | None = None) -> tuple[Session, Any]:
    """Build the TensorRT network of ``model``; returns the session (it owns the builder) and network.

    Dynamic dims (symbolic or unknown) become -1; the caller adds an optimization profile.

    TensorRT reports some refusals only in its log (see :meth:`ConversionContext.convert_node`).
    Capturing the log node by node costs system calls for every node, so the network is first
    built with one capture for all the nodes; only when TensorRT logged an error there is it built
    again, node by node, to name the node the error is about.
    """
    session = session or Session()
    try:
        network = _network(model, session, per_node=False)
    except UnheardRefusal:
        network = None
    if network is None:
        network = _network(model, session, per_node=True)
    return session, network


def _network(model: Model, session: Session, per_node: bool) -> Any:
    """The network, or None when ``per_node`` is off and TensorRT logged an error converting a node
    (:class:`UnheardRefusal` when it refused one)."""
    network = session.create_network()
    ctx = ConversionContext(session, network, per_node_messages=per_node)
    graph = model.graph
    for name, _ in model.outputs():
        _check_name_length("output", name)
    ctx.reserve({v: name for name, v in model.outputs() if v not in graph.inputs})
    logged: list[str] = []
    with captured(session.errors):
        for value in graph.inputs:
            if value.dtype is None or value.shape is None:
                raise BackendError(f"input {value.name!r} has no known dtype and rank; TensorRT needs both")
            _check_name_length("input", value.name)
            dims = tuple(d if isinstance(d, int) else -1 for d in value.shape)
            tensor = network.add_input(value.name, trt_dtype(value.dtype), dims)
            ctx.claim(value.name)
            ctx.set(value, tensor)
        with captured(logged):
            ctx.convert_graph(graph)
        if logged:
            if not per_node:
                return None
            raise BackendError(f"TensorRT rejected the network: {logged[0]}")
        _mark_outputs(ctx, model)
        _check_output_shapes(ctx, network)
    # TensorRT reads constant weights at build time without copying them: the session keeps them.
    session.keep_alive.append(ctx)
    return network


def _mark_outputs(ctx: ConversionContext, model: Model) -> None:
    """Mark the outputs under the model's names; an input, or a tensor already marked, gets an Identity."""
    marked: set[str] = set()
    inputs = {v.name for v in model.graph.inputs}
    for name, value in model.outputs():
        if name in inputs:
            raise BackendError(f"output {name!r} has the name of an input; a TensorRT network's inputs and outputs "
                               "need distinct names", hint="rename the output in the model")
        tensor = ctx.get(value)
        if tensor.name != name or tensor.name in marked or tensor.name in inputs:
            tensor = ctx.out(ctx.network.add_identity(tensor), f"output.{name}")
            tensor.name = name
        ctx.network.mark_output(tensor)
        marked.add(name)


def _check_name_length(what: str, name: str) -> None:
    """An engine's inputs and outputs keep the model's names, which TensorRT takes only so long."""
    if len(name) > LONGEST_NAME:
        raise BackendError(f"{what} {name[:32] + '...'!r} has a name of {len(name)} characters; TensorRT takes at "
                           f"most {LONGEST_NAME}", hint=f"rename the {what} in the model")


def _check_output_shapes(ctx: ConversionContext, network: Any) -> None:
    """Ask TensorRT for every output's shape now, so a network it cannot shape fails here, clearly."""
    for i in range(network.num_outputs):
        tensor = network.get_output(i)
        errors: list[str] = []
        try:
            with captured(errors):
                tuple(tensor.shape)
        except RuntimeError:
            reason = errors[0] if errors else "no reason given"
            raise BackendError(f"TensorRT cannot compute the shape of output {tensor.name!r}: {reason}") from None

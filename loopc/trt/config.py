"""Builder configuration: the one place that knows how to build engines with or without a GPU.

TensorRT-RTX builds ahead of time for a named compute capability, which is what lets a machine
without a GPU serialize an engine. Datacenter TensorRT always builds for the GPU it runs on.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

from loopc.errors import BackendError, LoopcError
from loopc.precision import Precision
from loopc.spelling import option
from loopc.trt import gpu, is_rtx, trt
from loopc.trt.loop_shapes import explain
from loopc.trt.messages import captured

log = logging.getLogger(__name__)

DEFAULT_TARGET = "sm89"


_shared_logger: Any = None


def shared_logger() -> Any:
    """The process's one TensorRT logger.

    TensorRT keeps the first logger it is given for process-wide use (the plugin registry logs
    through it), so a logger that is freed while the process goes on leaves a dangling pointer:
    the next plugin lookup crashes. One logger that lives as long as the process avoids that.
    """
    global _shared_logger
    if _shared_logger is None:
        _shared_logger = trt().Logger(trt().Logger.ERROR)
    _shared_logger.min_severity = trt().Logger.INFO if log.isEnabledFor(logging.DEBUG) else trt().Logger.ERROR
    return _shared_logger


class Session:
    """A builder and the errors TensorRT reported through it."""

    def __init__(self) -> None:
        #: TensorRT's error messages from the calls made through this session, newest last.
        self.errors: list[str] = []
        #: Objects a network built through this session needs until its build (weights arrays).
        self.keep_alive: list[Any] = []
        with captured(self.errors):
            self.logger = shared_logger()
            self.builder = trt().Builder(self.logger)

    def create_network(self) -> Any:
        with captured(self.errors):
            return self.builder.create_network(0)


#: GPU architectures TensorRT-RTX does not build for, by target: their GPUs, and what builds for them (None: say
#: only what TensorRT-RTX does build for).
_DATACENTER = ("build for it with datacenter TensorRT (pip install tensorrt; loopc then uses it), which builds for the "
               "GPU present, on a machine with that GPU")
_JETSON = "build for it with the TensorRT of NVIDIA JetPack, on the device"
_NOT_RTX = {
    "sm60": ("Pascal: P100", None), "sm61": ("Pascal: GeForce 10 series, P4, P40", None),
    "sm70": ("Volta: V100", None), "sm72": ("Volta: Jetson AGX Xavier", _JETSON),
    "sm87": ("Ampere: Jetson Orin", _JETSON),
    "sm90": ("Hopper: H100, H200, GH200", _DATACENTER), "sm100": ("Blackwell: B200, GB200", _DATACENTER),
    "sm103": ("Blackwell: B300, GB300", _DATACENTER), "sm101": ("Blackwell: Jetson Thor", _JETSON),
    "sm110": ("Blackwell: Jetson Thor", _JETSON),
}


def targets() -> list[str]:
    """The compute capabilities this TensorRT-RTX builds for, as ``--target`` takes them: ``sm75``, ..., ``sm121``
    in numeric order ([] for datacenter TensorRT, which builds for the GPU present)."""
    known = getattr(trt(), "ComputeCapability", None)
    names = [name for name in dir(known) if name.startswith("SM") and name[2:].isdigit()] if known else []
    return [f"sm{digits}" for digits in sorted((name[2:] for name in names), key=int)]


def compute_capability_enum(target: str) -> Any:
    """Map ``sm89`` / ``8.9`` to ``trt.ComputeCapability.SM89``; a target TensorRT-RTX does not build for is
    refused, saying which it does build for (and, for a GPU it does not, what does)."""
    digits = target.lower().removeprefix("sm").replace(".", "").replace("_", "")
    found = getattr(trt().ComputeCapability, f"SM{digits}", None) if digits.isdigit() else None
    if found is not None:
        return found
    listed = ", ".join(targets())
    gpus = _NOT_RTX.get(f"sm{digits}")
    if gpus is None:
        example = "--target sm89" if option("--target").startswith("--") else 'target="sm89"'
        raise LoopcError(f"unknown target {target!r}", hint=f"TensorRT-RTX builds for {listed} (e.g. {example})")
    name, remedy = gpus
    raise LoopcError(f"target {target!r} ({name}) is not one TensorRT-RTX builds for ({listed})", hint=remedy)


def build_target(target: str | None = None) -> str:
    """What an engine is built for: ``target`` (lower case), else the GPU present, else :data:`DEFAULT_TARGET` on
    TensorRT-RTX; datacenter TensorRT builds for the GPU present whatever is asked."""
    if not is_rtx():
        return "the GPU present"
    if target is not None:
        return target.lower()
    cc = gpu.compute_capability()
    return f"sm{cc[0]}{cc[1]}" if cc else DEFAULT_TARGET


def builder_config(session: Session, target: str | None = None, precision: Precision = Precision()) -> Any:
    """Create a builder config that can build here: the GPU present, else ``target`` ahead of time.

    A half ``precision`` is a builder flag on datacenter TensorRT; TensorRT-RTX has none (its networks are
    strongly typed: loopc retyped the network already, see :mod:`loopc.precision`)."""
    cfg = session.builder.create_builder_config()
    if is_rtx():
        cfg.num_compute_capabilities = 1
        cfg.set_compute_capability(compute_capability_enum(build_target(target)), 0)
    elif target is not None:
        log.warning("datacenter TensorRT builds for the GPU present; ignoring target %s", target)
    if precision and not is_rtx():
        cfg.set_flag(trt().BuilderFlag.FP16 if precision.half == "fp16" else trt().BuilderFlag.BF16)
    return cfg


def pin_profile(session: Session, network: Any, cfg: Any, inputs: Mapping[str, np.ndarray]) -> None:
    """Add an optimization profile whose min = opt = max are the shapes (and values) of ``inputs``."""
    from loopc.profiles import ShapeProfile

    names = {network.get_input(i).name for i in range(network.num_inputs)}
    ShapeProfile.pinned({k: v for k, v in inputs.items() if k in names}).apply(session.builder, network, cfg)


def build_serialized(session: Session, network: Any, cfg: Any) -> bytes:
    """Build and serialize ``network``; raise :class:`BackendError` with TensorRT's own reason."""
    session.errors.clear()
    with captured(session.errors):
        blob = session.builder.build_serialized_network(network, cfg)
    if blob is None:
        reason = session.errors[-1] if session.errors else "no reason given"
        raise BackendError(f"TensorRT could not build the network: {explain(network, reason)}")
    return bytes(memoryview(blob))

"""TensorRT's builder in a worker process, so that a crash of TensorRT's own code cannot take loopc down.

TensorRT-RTX's builder can crash (SIGSEGV) on a network its API accepted. loopc therefore builds engines in a
worker: it sends the loop IR after the passes, in its lossless text form (:func:`loopc.ir.format_model`), with the
optimization profile the parent resolved and the builder settings. The large arrays the text keeps beside it (the
weights) go through a temporary file that the worker maps (:class:`WeightsFile`): one copy, into the page cache,
whose pages the worker's network then reads as they are (pickled through the pipe they were copied on both sides,
64 KiB at a time, and held in the worker's memory besides). The worker makes the network from that IR with the
same converter walk the parent used (:func:`loopc.backend.trt.network.to_network`: one backend, run twice), checks
that its network is the parent's layer for layer, builds, and sends the serialized engine back. The parent keeps
its own network for the simulator and the report. A worker that dies by a signal becomes one
:class:`BuilderCrashError` naming the model, the phase it was in and the signal.

A worker serves one build at a time and lives as long as the process that started it (it leaves when its
standard input closes), so its imports are paid once per process, not per build; :func:`prestart` starts one
while the parent is still compiling. A worker that died is replaced at the next build.
"""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import gc
import hashlib
import logging
import math
import mmap
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, Any

import numpy as np

from loopc import errors
from loopc.errors import BackendError, InternalError, LoopcError
from loopc.ir import Model, format_model
from loopc.precision import Precision

log = logging.getLogger(__name__)

#: The phases of a worker's build, as a crash message names them.
PHASES = {
    "start": "while starting", "ir": "while reading the IR", "network": "while making the network",
    "config": "while configuring the builder", "build": "in build_serialized_network",
}

#: How a worker starts: the parent's import path first (so that it imports the same loopc), then serve requests.
_BOOT = ("import pickle, sys; sys.path[:] = pickle.load(sys.stdin.buffer); "
         "from loopc.trt.isolated import serve; serve(*pickle.load(sys.stdin.buffer))")


class BuilderCrashError(BackendError):
    """TensorRT's code crashed the worker process that was building an engine; loopc itself is unharmed."""

    def __init__(self, message: str, *, signal_name: str | None = None, phase: str = "", hint: str | None = None):
        super().__init__(message, hint=hint)
        self.signal_name = signal_name
        self.phase = phase


#: Where an array lies in a :class:`WeightsFile`: its offset in bytes, its dtype and its shape.
Placed = tuple[int, np.dtype[Any], tuple[int, ...]]


@dataclass
class WeightsFile:
    """Arrays written one after another to a temporary file, each at an offset of :data:`ALIGNMENT` bytes, and where
    each is: the worker maps the file (:meth:`arrays`) instead of reading them."""

    #: The file; "" when none could be written.
    path: str
    placed: dict[str, Placed]
    #: The arrays that travel with the request instead: of Python objects (no bytes to write), or all of them when
    #: no file could be written (a full or read-only temporary folder).
    carried: dict[str, np.ndarray]

    #: Each array starts at a multiple of this (a cache line, and any element's size).
    ALIGNMENT = 64

    @classmethod
    def write(cls, arrays: Mapping[str, np.ndarray]) -> WeightsFile:
        """``arrays`` written to a new temporary file, which the worker removes once mapped (see :meth:`remove`)."""
        placed: dict[str, Placed] = {}
        carried = {key: array for key, array in arrays.items() if array.dtype.hasobject}
        path = ""
        try:
            handle, path = tempfile.mkstemp(prefix="loopc-weights-", suffix=".bin")
            with open(handle, "wb") as out:
                for key, array in arrays.items():
                    if key not in carried:
                        out.write(bytes(-out.tell() % cls.ALIGNMENT))
                        placed[key] = (out.tell(), array.dtype, array.shape)
                        out.write(np.ascontiguousarray(array).reshape(-1).view(np.uint8).data)
        except BaseException as exc:
            if path:
                os.unlink(path)
            if not isinstance(exc, OSError):
                raise
            log.info("the weights go to the builder's worker through its pipe: no temporary file for them (%s)", exc)
            return cls("", {}, dict(arrays))
        return cls(path, placed, carried)

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays, read-only views of the file mapped into memory, which then is removed: the mapping lives as
        long as an array of it."""
        found = dict(self.carried)
        if not self.path:
            return found
        with open(self.path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            mapped = mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ) if size else b""
        os.unlink(self.path)
        for key, (offset, dtype, shape) in self.placed.items():
            found[key] = np.frombuffer(mapped, dtype, math.prod(shape), offset).reshape(shape)
        return found

    def remove(self) -> None:
        """Remove the file if the worker did not: it died before it mapped the file."""
        if self.path:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)


@dataclass
class BuildRequest:
    """Everything a worker needs to build the engine of a compiled model, and nothing ONNX."""

    #: The model's IR after the passes, in its text form, and the arrays the text keeps outside it.
    ir_text: str
    weights: WeightsFile
    #: The optimization profile the parent resolved: per input, min / opt / max dims or shape-tensor values.
    profile: dict[str, Any]
    target: str | None = None
    precision: Precision = Precision()
    #: What is being built, for messages: the engine of which model, for which target.
    label: str = "the engine"
    #: The parent's network, layer by layer (see :func:`network_digest`): the worker's must be the same.
    digest: str = ""


def build_engine(model: Model, network: Any, profile: Mapping[str, Any], *, target: str | None = None,
                 precision: Precision = Precision()) -> bytes:
    """The serialized engine of ``network`` (made from ``model`` by :func:`to_network`), built by a worker.

    ``profile`` maps each input to its record (:class:`loopc.profiles.InputProfile`). TensorRT's refusal is a
    :class:`BackendError` as in-process; a crash of the worker is a :class:`BuilderCrashError`.
    """
    from loopc.trt.config import build_target

    constants: dict[str, np.ndarray] = {}
    label = f"the engine of {model.source!r}" if model.source else "the engine"
    text = format_model(model, constants=constants)
    weights = WeightsFile.write(constants)
    del constants
    try:
        request = BuildRequest(text, weights, dict(profile), target, precision, f"{label} for {build_target(target)}",
                               network_digest(network))
        worker = _take_worker()
        try:
            return worker.build(request)
        finally:
            _give_back(worker)
    finally:
        weights.remove()


def prestart() -> None:
    """Start a worker now, if none is idle, so that its imports overlap the parent's compiling."""
    setting = _setting()
    with _lock:
        _forget_inherited()
        if not any(worker.setting == setting for worker in _idle):
            _idle.append(_Worker(setting))


def _setting() -> tuple[str, int]:
    """What a worker must share with this process: the TensorRT module, and the level loopc logs at."""
    from loopc.trt import trt

    return trt().__name__, logging.getLogger("loopc").getEffectiveLevel()


def network_digest(network: Any) -> str:
    """A digest of ``network``'s layers: type, name, inputs and output shapes, in order."""
    digest = hashlib.sha256()
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        inputs = [layer.get_input(k) for k in range(layer.num_inputs)]
        outputs = [layer.get_output(k) for k in range(layer.num_outputs)]
        digest.update(repr((str(layer.type), layer.name, [t.name if t is not None else None for t in inputs],
                            [(t.name, tuple(t.shape)) for t in outputs])).encode())
    return digest.hexdigest()


# -- the parent's side -----------------------------------------------------------------------------------------

_lock = threading.Lock()
_idle: list[_Worker] = []
_owner = os.getpid()


def _forget_inherited() -> None:
    """Workers belong to the process that started them: a forked child starts its own."""
    global _owner
    if _owner != os.getpid():
        _idle.clear()
        _owner = os.getpid()


def _take_worker() -> _Worker:
    setting = _setting()
    with _lock:
        _forget_inherited()
        for worker in [w for w in _idle if w.setting == setting]:
            _idle.remove(worker)
            if worker.process.poll() is None:
                return worker
            worker.close()
    return _Worker(setting)


def _give_back(worker: _Worker) -> None:
    """Keep a worker that is still alive for the next build; let a dead one go."""
    if worker.process.poll() is not None:
        worker.close()
        return
    with _lock:
        _idle.append(worker)


@atexit.register
def _close_all() -> None:
    with _lock:
        while _idle:
            _idle.pop().close()


class _Worker:
    """One worker process: requests down its standard input, answers up its standard output, its standard
    error (its log, and a crash's last words) in a file."""

    def __init__(self, setting: tuple[str, int]) -> None:
        self.setting = setting
        self.log: IO[bytes] = tempfile.TemporaryFile()
        self.read_to = 0
        self.process = subprocess.Popen([sys.executable, "-c", _BOOT], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self.log)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.requests, self.answers = self.process.stdin, self.process.stdout
        self._send(list(sys.path))
        self._send(setting)

    def build(self, request: BuildRequest) -> bytes:
        start = time.perf_counter()
        phase = "start"
        try:
            self._send(request)
            while (answer := pickle.load(self.answers))[0] == "phase":
                phase = answer[1]
        except (EOFError, OSError, pickle.UnpicklingError):
            raise self._crash(request, phase, self._log()) from None
        self._log()
        kind, *rest = answer
        if kind == "done":
            plan, seconds = rest
            log.info("built in a worker process in %.2f s, TensorRT's build %.2f s of it", time.perf_counter() - start,
                     seconds)
            return bytes(plan)
        if kind == "error":
            raise _error_class(rest[0])(rest[1])
        raise InternalError(f"the engine's worker process failed: {rest[0]}")

    def close(self) -> None:
        """Let the worker leave (its standard input closes), and wait a moment for it."""
        for stream in (self.requests, self.answers):
            try:
                stream.close()
            except OSError:
                pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()

    def _send(self, message: Any) -> None:
        pickle.dump(message, self.requests, protocol=pickle.HIGHEST_PROTOCOL)
        self.requests.flush()

    def _crash(self, request: BuildRequest, phase: str, said: str) -> BuilderCrashError:
        code = self.process.wait()
        name = _signal_name(-code) if code < 0 else None
        how = f"TensorRT crashed ({name})" if name else f"the build process ended with exit code {code}"
        last = _last_words(said)
        message = (f"building {request.label}: {how} {PHASES.get(phase, phase)}; the build ran in a separate process, "
                   "so nothing was written" + (f" (its last words: {last})" if last else ""))
        return BuilderCrashError(message, signal_name=name, phase=phase, hint="run with -v to see TensorRT's messages")

    def _log(self) -> str:
        """What the worker logged since last asked; also on our standard error when loopc logs at INFO (``-v``)."""
        self.log.seek(self.read_to)
        data = self.log.read()
        self.read_to += len(data)
        text = data.decode(errors="replace")
        if text and self.setting[1] <= logging.INFO:
            sys.stderr.write(text)
        return text


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _last_words(text: str) -> str:
    """TensorRT's last error line before the worker died, if it logged one (``-v`` logs them)."""
    telling = [line.strip() for line in text.splitlines() if "[E]" in line or "[F]" in line]
    return telling[-1] if telling else ""


def _error_class(name: str) -> type[LoopcError]:
    found = getattr(errors, name, None)
    return found if isinstance(found, type) and issubclass(found, LoopcError) else BackendError


# -- the worker's side -----------------------------------------------------------------------------------------

def serve(module: str, level: int) -> None:
    """The worker's loop: read a request, build, answer; leave when the parent closes our standard input.

    It uses TensorRT ``module`` and logs at ``level``, as its parent does, and imports what a build needs before
    the first request comes."""
    from loopc.trt import force, trt

    faulthandler.enable()  # a crash's Python stack goes to the log, for -v
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    force(module)
    trt()
    import loopc.backend.trt.network  # noqa: F401  (imported now, while the parent compiles)
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever TensorRT prints outside a capture goes to the log, not into the answers
    requests = sys.stdin.buffer
    while True:
        try:
            request = pickle.load(requests)
        except EOFError:
            return

        def say(message: tuple[Any, ...]) -> None:
            pickle.dump(message, answers, protocol=pickle.HIGHEST_PROTOCOL)
            answers.flush()

        try:
            say(("done", *_build(request, lambda phase: say(("phase", phase)))))
        except LoopcError as exc:
            say(("error", type(exc).__name__, str(exc)))
        except Exception as exc:  # noqa: BLE001  (a bug of ours: the parent says it as an internal error)
            log.debug("worker failed", exc_info=True)
            say(("internal", f"{type(exc).__name__}: {exc}"))
        del request
        gc.collect()  # the model's cycles, and with them the mapped weights, go now, not at some later build


def _build(request: BuildRequest, phase: Callable[[str], None]) -> tuple[bytes, float]:
    from loopc.backend.trt.network import to_network
    from loopc.ir import parse_model
    from loopc.profiles import add_profile
    from loopc.trt.config import build_serialized, builder_config

    phase("ir")
    model = parse_model(request.ir_text, request.weights.arrays())
    phase("network")
    session, network = to_network(model)
    if request.digest and network_digest(network) != request.digest:
        raise InternalError("the network made again from the IR's text form is not the one the compiler made")
    phase("config")
    cfg = builder_config(session, target=request.target, precision=request.precision)
    add_profile(session.builder, network, cfg, request.profile)
    phase("build")
    start = time.perf_counter()
    plan = build_serialized(session, network, cfg)
    return plan, time.perf_counter() - start

"""TensorRT's own messages, caught instead of printed.

loopc gives TensorRT its native logger, never a Python subclass: a Python logger is called from
inside TensorRT while it holds internal locks, and a garbage collection that runs in that callback
and frees another builder deadlocks the process. The native logger prints to file descriptor 1,
and its ONNX parser prints some complaints to descriptor 2, so the calls that log are wrapped in
:func:`captured`, which moves what they print into Python logging and keeps the error lines for
error messages.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from typing import IO

log = logging.getLogger("loopc.tensorrt")

# Printed by TensorRT-RTX's shape analysis on machines without a GPU: noise, not a failure.
_NOISE = ("CUDA driver version is insufficient",)


#: The file descriptors 1 and 2 point at while a capture is on (captures nest; file descriptors are
#: the process's, so this is too).
_sink: list[IO[bytes]] = []


@contextlib.contextmanager
def captured(errors: list[str] | None = None) -> Iterator[None]:
    """Capture TensorRT's output for the duration; append its error lines to ``errors``.

    A capture inside another (one per converted node, inside the whole network's) shares its file:
    it reads what was written since it began, and cuts that off, so the outer one does not see it twice.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    if _sink:
        sink = _sink[-1]
        start = sink.seek(0, os.SEEK_END)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            if sink.seek(0, os.SEEK_END) != start:  # most calls print nothing
                sink.seek(start)
                text = sink.read().decode(errors="replace")
                sink.truncate(start)
                sink.seek(start)
                _forward(text, errors)
        return
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        _sink.append(sink)
        try:
            yield
        finally:
            _sink.pop()
            for fd, original in zip((1, 2), saved):
                os.dup2(original, fd)
                os.close(original)
            sink.seek(0)
            text = sink.read().decode(errors="replace")
            _forward(text, errors)


#: Where in TensorRT's own sources a message comes from (`` In operator() at /_src/x.cpp:12``): not
#: the user's business, and it makes one message differ between TensorRT builds.
_SOURCE_LOCATION = re.compile(r"\s+In [^\n]*? at /\S+:\d+")


#: A message's tail that is only the noise of :data:`_NOISE` (``[checkMacros.cpp::...] Error Code 1: Cuda Runtime
#: (... CUDA driver version is insufficient ...)``), which TensorRT appends to unrelated errors on such machines.
_NOISE_TAIL = re.compile(r"\s*\[[^\]]*\][^\[]*?(" + "|".join(map(re.escape, _NOISE)) + r").*$", re.DOTALL)


def tidy(message: str) -> str:
    """TensorRT's message without the location in its sources, and without the noise a machine without a GPU
    appends to it."""
    return _SOURCE_LOCATION.sub("", _NOISE_TAIL.sub("", message)).strip()


def _forward(text: str, errors: list[str] | None) -> None:
    for line in text.splitlines():
        if not line.strip():
            continue
        if any(noise in line for noise in _NOISE):
            log.debug("%s", line)
        elif "[E]" in line or "[F]" in line:
            log.info("%s", line)
            if errors is not None:
                errors.append(tidy(line.split("] ", 3)[-1] if "[TRT]" in line else line))
        else:
            log.debug("%s", line)

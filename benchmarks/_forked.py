"""One call in a forked process, for benchmarks that build engines: TensorRT-RTX's builder can crash (SIGSEGV) on
networks it accepted, and a crash is then a row of the table, not the end of the run."""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def in_fork(work: Callable[[], T], died: Callable[[str], T]) -> T:
    """``work()``'s result, computed in a forked process; ``died(how)`` ("signal SIGSEGV", "exit code 1") when
    that process ends without one."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    worker = context.Process(target=lambda: send.send(work()))
    worker.start()
    send.close()
    try:
        return receive.recv()
    except EOFError:
        worker.join()
        code = worker.exitcode or 0
        return died(f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}")
    finally:
        worker.join()

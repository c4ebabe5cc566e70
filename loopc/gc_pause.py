"""Python's cyclic garbage collector paused while loopc builds a large graph.

Importing, rewriting and converting a model allocate one object after another and free almost
none, so every collection the allocations trigger walks the whole growing IR and finds nothing
to free: at 8k nodes that was a third of the import's time. While :func:`gc_paused` is on, those
collections wait; the collector resumes when the outermost pause ends (pauses nest, across
threads too), and reference counting frees everything that is not a cycle meanwhile.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause cyclic collection for the block (a decorator too)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()

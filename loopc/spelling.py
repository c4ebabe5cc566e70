"""How a user spells an option, so that a message tells them what to type: ``--max-trips`` on the command line,
``max_trips=`` in the Python API (the default), ``max-trips`` as a ``loopc check`` manifest key. The CLI and the
manifest reader switch for the duration of their work.

Warnings from the Python API are attributed to the user's line, not to loopc's (:func:`warn`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextvars import ContextVar

_SPELLINGS: dict[str, Callable[[str], str]] = {
    "python": lambda name: f"{name.replace('-', '_')}=",
    "command line": lambda name: f"--{name}",
    "manifest": lambda name: name,
}
_SPELLING: ContextVar[str] = ContextVar("loopc_spelling", default="python")


def option(flag: str) -> str:
    """``flag`` (``--max-trips``) as the user gives it where they are (see the module). Several flags joined by
    ``/`` are each respelled."""
    spell = _SPELLINGS[_SPELLING.get()]
    return "/".join(spell(name.lstrip("-")) for name in flag.split("/"))


@contextlib.contextmanager
def spelled(where: str) -> Iterator[None]:
    """Messages made inside spell options as ``where`` (one of ``python``, ``command line``, ``manifest``) does."""
    token = _SPELLING.set(where)
    try:
        yield
    finally:
        _SPELLING.reset(token)


def warn(message: str) -> None:
    """``warnings.warn`` attributed to the first caller outside loopc: the user's line that called the API."""
    inside = _package_dirs()
    frame, level = sys._getframe(1), 2
    while frame.f_back is not None and frame.f_code.co_filename.startswith(inside):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, stacklevel=level)


def _package_dirs() -> tuple[str, ...]:
    """loopc's own source folders: the package, and ``loopc.passes`` wherever it lives (``passes/`` in a checkout)."""
    dirs = {os.path.dirname(__file__)}
    passes = sys.modules.get("loopc.passes")
    if passes is not None and passes.__file__:
        dirs.add(os.path.dirname(passes.__file__))
    return tuple(d + os.sep for d in dirs)

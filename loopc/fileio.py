"""Writing results so that a failure never leaves a partial or clobbered file behind."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from typing import IO

import numpy as np

from loopc.errors import LoopcError


def write_atomically(path: str | os.PathLike[str], write: Callable[[IO[bytes]], None]) -> None:
    """Call ``write`` on a temporary file beside ``path``, then rename it over ``path``."""
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        raise LoopcError(f"{target}: directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=".loopc-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise


def save_arrays(path: str | os.PathLike[str], arrays: Mapping[str, np.ndarray]) -> None:
    """Save ``arrays`` as an ``.npz`` keyed by name, atomically."""
    write_atomically(path, lambda handle: np.savez(handle, **arrays))


def load_arrays(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Load an ``.npz`` of named arrays (no pickles: the file is untrusted)."""
    try:
        with np.load(os.fspath(path), allow_pickle=False) as data:
            return {name: data[name] for name in data.files}
    except FileNotFoundError:
        raise LoopcError(f"{os.fspath(path)}: no such file") from None
    except (ValueError, OSError) as exc:
        raise LoopcError(f"{os.fspath(path)}: not a readable .npz of arrays ({exc})") from None

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
    """Load an ``.npz`` of named arrays; never unpickles (the file is untrusted: a pickle runs code)."""
    where = os.fspath(path)
    arrays: dict[str, np.ndarray] = {}
    try:
        data = np.load(where, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise LoopcError(f"{where}: a single array, not an .npz of arrays keyed by input name")
        with data:
            for name in data.files:
                try:
                    arrays[name] = data[name]
                except ValueError as exc:
                    if "allow_pickle" not in str(exc):
                        raise
                    raise LoopcError(f"{where}: array {name!r} holds Python objects, which loopc does not "
                                     "unpickle; save numeric arrays") from None
    except FileNotFoundError:
        raise LoopcError(f"{where}: no such file") from None
    except (ValueError, OSError, EOFError) as exc:
        raise LoopcError(f"{where}: not a readable .npz of arrays ({exc})") from None
    return arrays

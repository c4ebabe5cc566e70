"""Files loopc reads and writes: outputs checked before the work starts, never left partial; ``.npz`` read defensively.

An output path is checked when the command starts (:class:`OutputFile`), so a missing folder or a
directory in the way fails before a build, not after it replaced another file. A regular file (or
a new one) is written atomically: a temporary file beside it, renamed over it. A symlink is
followed: its target is replaced, the link stays. A character device (``/dev/null``, a terminal) or
a FIFO (``-o /dev/stdout | ...``) is written through, never replaced by a regular file, and so is the
file stdout is redirected to (``-o /dev/stdout > out.npz``); a directory,
a socket or a block device is refused.

An ``.npz`` is untrusted: it is read member by member, each ``.npy`` header first, so that a header
claiming 2**40 elements, a truncated member or a pickle is one error naming the file, before any
array is allocated (see :mod:`loopc.limits`).
"""

from __future__ import annotations

import errno
import fcntl
import io
import os
import stat
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from typing import IO, Any

import numpy as np

from loopc.errors import LoopcError
from loopc.limits import check_constant, constant_bytes

#: Kinds of existing file an output is written through to, rather than replaced.
_WRITTEN_THROUGH = {stat.S_IFCHR: "character device", stat.S_IFIFO: "FIFO"}
_REFUSED = {stat.S_IFDIR: "a directory", stat.S_IFSOCK: "a socket", stat.S_IFBLK: "a block device"}


class OutputFile:
    """An output path, checked now and written later (see the module docstring for what each kind gets).

    ``what`` names the option in errors (``-o``, ``--report``). A FIFO is opened at once, so that
    one with no reader is an error now rather than a build that blocks at the end.
    """

    def __init__(self, path: str | os.PathLike[str], what: str = "output") -> None:
        self.path = os.fspath(path)
        self.what = what
        self.target = os.path.realpath(self.path)
        self._fd: int | None = None
        #: Whether the output is this process's stdout (``-o /dev/stdout``): messages then go to stderr.
        self.to_stdout = False
        try:
            mode = os.stat(self.path).st_mode  # follows links: /dev/stdout is a FIFO or a terminal
        except FileNotFoundError:
            mode = None
        except OSError as exc:
            raise self._error(exc.strerror or str(exc)) from None
        kind = stat.S_IFMT(mode) if mode is not None else None
        if kind in _REFUSED:
            raise self._error(f"is {_REFUSED[kind]}; give a file name")
        if kind in _WRITTEN_THROUGH or (kind == stat.S_IFREG and _is_stdout(self.path)):
            self._fd = self._open_through(kind)
            self.to_stdout = _is_stdout(self.path)
        elif kind not in (None, stat.S_IFREG):
            raise self._error("is not a regular file, a character device or a FIFO")
        else:
            self._check_folder()

    def is_file(self) -> bool:
        """Whether the output is a regular file (replaced atomically), not a device or FIFO written through."""
        return self._fd is None

    def same_file(self, other: str | os.PathLike[str]) -> bool:
        """Whether ``other`` (an input, another output) is the file this output would replace."""
        return self._fd is None and os.path.realpath(other) == self.target

    def write(self, write: Callable[[IO[bytes]], object]) -> None:
        """Call ``write`` with a binary handle: through to a device or FIFO, else atomically."""
        if self._fd is not None:  # formed in memory first: a zip seeks, and a device or FIFO cannot
            fd, self._fd = self._fd, None
            buffer = io.BytesIO()
            write(buffer)
            with os.fdopen(fd, "wb") as handle:
                handle.write(buffer.getbuffer())
            return
        self._check_folder()
        fd, tmp = tempfile.mkstemp(prefix=".loopc-", dir=os.path.dirname(self.target))
        try:
            with os.fdopen(fd, "wb") as handle:
                write(handle)
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, self.target)
        except BaseException:
            os.unlink(tmp)
            raise

    def _check_folder(self) -> None:
        folder = os.path.dirname(self.target)
        if not os.path.isdir(folder):
            raise self._error(f"folder {folder} does not exist")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise self._error(f"folder {folder} is not writable")

    def _open_through(self, kind: int) -> int:
        flags = os.O_WRONLY | {stat.S_IFIFO: os.O_NONBLOCK, stat.S_IFREG: os.O_TRUNC}.get(kind, 0)
        try:
            fd = os.open(self.path, flags)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                raise self._error("is a FIFO that no process is reading") from None
            raise self._error(exc.strerror or str(exc)) from None
        if kind == stat.S_IFIFO:
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return fd

    def _error(self, what_is_wrong: str) -> LoopcError:
        return LoopcError(f"{self.what} {self.path}: {what_is_wrong}")

    def __del__(self) -> None:
        if self._fd is not None:
            os.close(self._fd)


def check_readable(path: str | os.PathLike[str], what: str = "") -> None:
    """Refuse, in one line, a path that is not a regular file this process may read (a model, weights).

    A device or FIFO is refused rather than read: ``/dev/zero`` never ends, and a FIFO can block forever.
    """
    where = f"{what} {os.fspath(path)}".strip()
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise LoopcError(f"{where}: no such file") from None
    except OSError as exc:
        raise LoopcError(f"{where}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        kind = {**_WRITTEN_THROUGH, **{k: v.removeprefix("a ") for k, v in _REFUSED.items()}}.get(
            stat.S_IFMT(mode), "special file")
        raise LoopcError(f"{where}: is a {kind}, not a file loopc can read")
    if not os.access(path, os.R_OK):
        raise LoopcError(f"{where}: permission denied")


def _is_stdout(path: str) -> bool:
    """``-o /dev/stdout`` with stdout redirected to a file is that file, written through like a pipe."""
    try:
        return os.path.samestat(os.stat(path), os.fstat(1))
    except OSError:
        return False


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def save_arrays(path: str | os.PathLike[str] | OutputFile, arrays: Mapping[str, np.ndarray]) -> None:
    """Save ``arrays`` as an ``.npz`` keyed by name (through :class:`OutputFile`)."""
    target = path if isinstance(path, OutputFile) else OutputFile(path)
    # allow_pickle named (NumPy's default): an array called "allow_pickle" is an error, not taken for the flag
    target.write(lambda handle: np.savez(handle, allow_pickle=True, **arrays))


def load_arrays(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Load an ``.npz`` of named arrays, each checked from its header before it is read; never unpickles."""
    where = os.fspath(path)
    check_readable(where)
    try:
        with open(where, "rb") as handle:
            if handle.read(6) == b"\x93NUMPY":
                raise LoopcError(f"{where}: a single .npy array, not an .npz of arrays keyed by input name "
                                 "(save with numpy.savez(path, name=array))")
            handle.seek(0)
            try:
                archive = zipfile.ZipFile(handle)
            except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
                raise LoopcError(f"{where}: not an .npz (a zip of .npy arrays): {exc}") from None
            with archive:
                arrays: dict[str, np.ndarray] = {}
                for info in archive.infolist():
                    name = _member_name(where, info)
                    if name in arrays:
                        raise LoopcError(f"{where}: array {name!r} appears twice; the file is damaged")
                    arrays[name] = _read_member(where, archive, info)
                return arrays
    except OSError as exc:
        raise LoopcError(f"{where}: cannot be read: {exc.strerror or exc}") from None


def _member_name(where: str, info: zipfile.ZipInfo) -> str:
    if info.is_dir() or not info.filename.endswith(".npy"):
        raise LoopcError(f"{where}: member {info.filename!r} is not an .npy array; is this an .npz?")
    return info.filename[: -len(".npy")]


def _read_member(where: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    """One array: header, then checks against the stored size and loopc's limit, then the data."""
    name = info.filename[: -len(".npy")]
    what = f"{where}: array {name!r}"
    try:
        with archive.open(info) as member:
            shape, fortran, dtype = _read_header(member, what)
            header_bytes = member.tell()
            if dtype.hasobject:
                raise LoopcError(f"{what} holds Python objects, which loopc does not unpickle; save numeric arrays")
            nbytes = constant_bytes(shape, dtype)
            if header_bytes + nbytes != info.file_size:
                raise LoopcError(f"{what}: its header declares shape {list(shape)} ({dtype}, {nbytes} bytes) but "
                                 f"the member holds {info.file_size - header_bytes} bytes of data; the file is "
                                 "damaged")
            check_constant(shape, dtype, what)
            data = member.read(nbytes)
    except LoopcError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, RuntimeError, NotImplementedError) as exc:
        raise LoopcError(f"{what} cannot be read: {type(exc).__name__}: {exc}") from None
    if len(data) != nbytes:
        raise LoopcError(f"{what}: {len(data)} of {nbytes} bytes present; the file is truncated")
    array = np.frombuffer(data, dtype=dtype).copy()
    return array.reshape(shape[::-1]).transpose() if fortran else array.reshape(shape)


_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def _read_header(member: IO[bytes], what: str) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    """The ``.npy`` header, or one error: NumPy's parser raises many kinds on a damaged one."""
    try:
        version = np.lib.format.read_magic(member)
        if version not in _HEADER_READERS:
            raise ValueError(f".npy format version {version[0]}.{version[1]}, which loopc does not read")
        shape, fortran, dtype = _HEADER_READERS[version](member)
    except Exception as exc:  # noqa: BLE001  (ValueError, SyntaxError, TokenError, ... all mean a bad header)
        raise LoopcError(f"{what}: not a valid .npy header ({type(exc).__name__}: {exc})") from None
    if not all(isinstance(d, int) and d >= 0 for d in shape):
        raise LoopcError(f"{what}: not a valid .npy header (shape {shape})")
    return tuple(shape), bool(fortran), np.dtype(dtype)

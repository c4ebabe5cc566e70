"""The one registry shape: frontend translators, backend converters and simulator kernels are all one.

A :class:`Registry` maps keys (an op type, a TensorRT layer type, an op type and version) to entries
(usually functions) that modules register with a decorator where they are defined. Adding an op is
adding a decorated function; nothing lists the ops by hand. The modules that register are named by
the registry and imported on its first read, not by the module that defines it: the registering
modules import the registry (and the context types it serves), so importing them eagerly would be
an import cycle.

    KERNELS: Registry[str, KernelFactory] = Registry("simulator kernel", loaders=("loopc.sim.ops",))

    @KERNELS.register("ELEMENTWISE")
    def elementwise(layer): ...

    KERNELS.lookup("ELEMENTWISE", missing)   # missing(key) is the error raised when there is none
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Generic, TypeVar

from loopc.errors import InternalError

K = TypeVar("K", bound=Hashable)
E = TypeVar("E")


class Registry(Generic[K, E]):
    """Entries by key, registered once each; read only after the registering modules are loaded.

    Args:
        what: what an entry is, for messages (``"TensorRT converter"``).
        loaders: modules whose import registers the entries; imported on the first read.
    """

    def __init__(self, what: str, *, loaders: Sequence[str] = ()) -> None:
        self.what = what
        self._loaders = tuple(loaders)
        self._loaded = not self._loaders
        self._entries: dict[K, E] = {}

    # -- writing --------------------------------------------------------------------------------

    def add(self, key: K, entry: E) -> None:
        """Register ``entry`` under ``key``; a second entry for a key is a bug in loopc, refused."""
        if key in self._entries:
            raise InternalError(f"two {self.what}s for {key!r}: {_name(self._entries[key])} and {_name(entry)}")
        self._entries[key] = entry

    def register(self, *keys: K) -> Callable[[E], E]:
        """Decorator: register the decorated object under each of ``keys`` and return it unchanged."""
        if not keys:
            raise InternalError(f"a {self.what} registered under no key")

        def decorate(entry: E) -> E:
            for key in keys:
                self.add(key, entry)
            return entry

        return decorate

    # -- reading --------------------------------------------------------------------------------

    def get(self, key: K) -> E | None:
        """The entry for ``key``, None when there is none."""
        self._load()
        return self._entries.get(key)

    def lookup(self, key: K, missing: Callable[[K], Exception]) -> E:
        """The entry for ``key``; without one, raise ``missing(key)`` (the caller says whose error it is)."""
        self._load()
        found = self._entries.get(key)
        if found is None:
            raise missing(key)
        return found

    def keys(self) -> list[K]:
        """Every key, in registration order (what ``loopc ops`` lists, sorted by the caller)."""
        self._load()
        return list(self._entries)

    def items(self) -> list[tuple[K, E]]:
        self._load()
        return list(self._entries.items())

    def __contains__(self, key: object) -> bool:
        self._load()
        return key in self._entries

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())

    def __len__(self) -> int:
        self._load()
        return len(self._entries)

    def _load(self) -> None:
        """Import the registering modules once; a module that imports the registry back finds it loading."""
        if self._loaded:
            return
        self._loaded = True
        try:
            for module in self._loaders:
                importlib.import_module(module)
        except BaseException:
            self._loaded = False
            raise

    def __repr__(self) -> str:
        return f"Registry({self.what!r}, {len(self._entries)} entries)"


def _name(entry: object) -> str:
    module = getattr(entry, "__module__", None)
    name = getattr(entry, "__qualname__", None) or getattr(entry, "__name__", None) or repr(entry)
    return f"{module}.{name}" if module else str(name)

"""The one registry shape that frontends, the backend and the simulator share."""

from __future__ import annotations

import sys
import types

import pytest

from loopc.errors import InternalError, LoopcError
from loopc.registry import Registry


def double(x: int) -> int:
    return 2 * x


def test_registered_entries_are_found_by_each_key() -> None:
    registry: Registry[str, object] = Registry("doubler")
    assert registry.register("Add", "Sum")(double) is double  # the decorator returns the function unchanged
    assert registry.get("Add") is double and registry.get("Sum") is double
    assert registry.get("Mul") is None
    assert registry.keys() == ["Add", "Sum"] and "Sum" in registry and len(registry) == 2


def test_a_second_entry_for_a_key_is_refused_as_a_bug() -> None:
    registry: Registry[str, object] = Registry("doubler")
    registry.register("Add")(double)
    with pytest.raises(InternalError, match=r"two doublers for 'Add': .*double and .*<lambda>"):
        registry.register("Add")(lambda x: x)
    assert registry.get("Add") is double


def test_lookup_raises_the_callers_error() -> None:
    registry: Registry[str, object] = Registry("doubler")

    def missing(key: str) -> LoopcError:
        return LoopcError(f"op {key!r} has none", node="n", op=key)

    with pytest.raises(LoopcError, match="^node 'n' \\(Mul\\): op 'Mul' has none$"):
        registry.lookup("Mul", missing)


def test_registering_modules_are_imported_on_first_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry names the modules that register into it and imports them when first read, so the
    module defining the registry never imports them (they import it: that would be a cycle)."""
    registry: Registry[str, object] = Registry("doubler", loaders=("loopc_test_ops",))
    imported = []

    module = types.ModuleType("loopc_test_ops")

    class Finder:
        @staticmethod
        def find_spec(name: str, path: object = None, target: object = None) -> object:
            if name != "loopc_test_ops":
                return None
            import importlib.machinery

            class Loader:
                @staticmethod
                def create_module(spec: object) -> types.ModuleType:
                    return module

                @staticmethod
                def exec_module(mod: types.ModuleType) -> None:
                    imported.append(mod)
                    registry.register("Add")(double)

            return importlib.machinery.ModuleSpec(name, Loader())

    monkeypatch.setattr(sys, "meta_path", [Finder(), *sys.meta_path])
    monkeypatch.delitem(sys.modules, "loopc_test_ops", raising=False)
    assert imported == []
    assert registry.get("Add") is double
    assert registry.keys() == ["Add"] and len(imported) == 1  # once

"""The simulator is an independent check of the backend: the backend, the passes, the compiler, the TensorRT
helpers and the build report's reading of a network never import it (formulas both need live in :mod:`loopc.semantics`)."""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _imports(path: pathlib.Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


@pytest.mark.parametrize("tree", ["loopc/backend", "passes", "loopc/compiler.py", "loopc/semantics", "loopc/trt",
                                  "loopc/fingerprint.py"])
def test_no_simulator_import(tree: str) -> None:
    files = [ROOT / tree] if tree.endswith(".py") else sorted((ROOT / tree).rglob("*.py"))
    assert files
    bad = {str(f.relative_to(ROOT)): name for f in files for name in _imports(f)
           if name == "loopc.sim" or name.startswith("loopc.sim.")}
    assert not bad

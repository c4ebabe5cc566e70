"""Type-check loopc laid out as it is installed, with mypy, and report repository paths.

pyproject.toml installs the top-level folder ``passes/`` as ``loopc.passes`` (setuptools ``package-dir``).
mypy cannot follow that mapping from the repository: every ``loopc.passes`` import would be missing. So this
script lays the installed packages out in a temporary folder of symbolic links (``loopc/`` holding a link to
each entry of the repository's ``loopc/``, ``loopc/passes`` a link to ``passes/``), runs mypy there with this
interpreter and the repository's configuration, and rewrites the paths mypy reports (it keeps the link paths
it walked) into the repository's own. The cache stays in the repository's ``.mypy_cache`` from run to run.

Usage: ``python tools/mypy_tree.py [PATH ...] [-- MYPY_OPTION ...]``, repository paths; by default every
installed package. The exit status is mypy's (0 clean, 1 errors found, 2 mypy could not run).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The path at the start of a line of mypy's report (``path:line: error: ...``, ``path: note: ...``).
_REPORTED_PATH = re.compile(r"^(?P<path>[^\s:][^:]*\.pyi?)(?=:)")


def package_folders(pyproject: Path) -> dict[Path, Path]:
    """Where each mapped package lives: its folder in the installed layout → its folder in the repository."""
    setuptools = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]
    mapping: dict[str, str] = setuptools.get("package-dir", {})
    if "" in mapping:
        raise SystemExit("mypy_tree: a package-dir entry for the root package is not supported")
    folders = {Path(*package.split(".")): Path(folder) for package, folder in mapping.items()}
    for package in setuptools.get("packages", []):
        top = Path(*package.split("."))
        while top not in folders and len(top.parts) > 1:
            top = top.parent
        folders.setdefault(top, top)
    return folders


def lay_out(tree: Path, folders: dict[Path, Path]) -> None:
    """Build the installed layout under ``tree`` from symbolic links into the repository.

    A package with no mapped package beneath it is one link to its folder; one with mapped packages beneath it
    is a real folder holding a link to each of its entries, so that those packages can be linked in their place.
    """

    def build(dest: Path, source: Path) -> None:
        beneath = {d.relative_to(dest).parts[0] for d in folders if dest in d.parents}
        if not beneath:
            (tree / dest).symlink_to(source, target_is_directory=True)
            return
        (tree / dest).mkdir(parents=True)
        names = {entry.name for entry in source.iterdir()} if source.is_dir() else set()
        for name in sorted(names | beneath):
            child = dest / name
            if child in folders:
                build(child, ROOT / folders[child])
            elif name in beneath:
                build(child, source / name)
            else:
                (tree / child).symlink_to(source / name, target_is_directory=(source / name).is_dir())

    tree.mkdir(parents=True, exist_ok=True)
    for top in sorted(d for d in folders if len(d.parts) == 1):
        build(top, ROOT / folders[top])


def to_tree(path: str, folders: dict[Path, Path]) -> str:
    """A repository path (file or folder) as a path in the installed layout."""
    target = (Path.cwd() / path).resolve()
    best: tuple[Path, Path] | None = None
    for dest, source in folders.items():
        source = (ROOT / source).resolve()
        if (target == source or source in target.parents) and (best is None or len(source.parts) > len(best[1].parts)):
            best = (dest, source)
    if best is None:
        raise SystemExit(f"mypy_tree: {path} is not inside a package installed from this repository")
    return str(best[0] / target.relative_to(best[1]))


def to_repository(line: str, tree: Path) -> str:
    """A line of mypy's report with its leading path (a link in the tree) rewritten as a repository path."""
    match = _REPORTED_PATH.match(line)
    if match is None:
        return line
    real = Path(os.path.realpath(tree / match["path"]))
    if ROOT not in real.parents:
        return line
    return str(real.relative_to(ROOT)) + line[match.end():]


def main(argv: list[str]) -> int:
    paths, options = (argv[: argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    folders = package_folders(ROOT / "pyproject.toml")
    targets = [to_tree(p, folders) for p in paths]
    if not targets:
        targets = [arg for top in sorted(d for d in folders if len(d.parts) == 1) for arg in ("-p", top.name)]
    with tempfile.TemporaryDirectory(prefix="loopc-mypy-") as tree:
        lay_out(Path(tree), folders)
        command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                   "--cache-dir", str(ROOT / ".mypy_cache"), *options, *targets]
        done = subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False)
        for line in done.stdout.splitlines():
            print(to_repository(line, Path(tree)))
        for line in done.stderr.splitlines():
            print(to_repository(line, Path(tree)), file=sys.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

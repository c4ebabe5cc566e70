"""The packages, found rather than listed: ``loopc/`` and its subpackages, and ``passes/`` as ``loopc.passes``
(the ``package-dir`` mapping in pyproject.toml). Everything else about the project is in pyproject.toml."""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["loopc", "loopc.*"]),
                *(f"loopc.passes{'.' + name if name else ''}" for name in ["", *find_packages("passes")])])

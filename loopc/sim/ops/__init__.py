"""Kernels for each TensorRT layer family; importing this package registers them all (every module in
it, so adding a family is adding a module)."""

import importlib
import pkgutil

for _family in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_family.name}")

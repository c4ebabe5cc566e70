"""Whether this machine has a usable NVIDIA GPU, asked of the CUDA driver directly."""

from __future__ import annotations

import ctypes
import functools


@functools.cache
def compute_capability() -> tuple[int, int] | None:
    """Return the first GPU's (major, minor) compute capability, or None without a GPU or driver."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    count = ctypes.c_int(0)
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value < 1:
        return None
    major, minor = ctypes.c_int(0), ctypes.c_int(0)
    # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75, _MINOR = 76
    if cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, 0) != 0:
        return None
    if cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, 0) != 0:
        return None
    return major.value, minor.value


def available() -> bool:
    """True when a GPU can run engines here."""
    return compute_capability() is not None

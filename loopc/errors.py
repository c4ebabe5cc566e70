"""One exception root for everything a user can cause, and a separate type for our own bugs.

The CLI prints ``str(error)`` of a :class:`LoopcError` as one line and exits 1; an
:class:`InternalError` (or any other exception) exits 2, since it means loopc is wrong.
"""

from __future__ import annotations


class LoopcError(Exception):
    """An error the user can fix: bad input, unsupported construct, missing GPU."""


class FrontendError(LoopcError):
    """A model file could not be read or translated."""


class UnsupportedOpError(FrontendError):
    """A node uses an op or attribute loopc does not handle."""


class PassError(LoopcError):
    """A pass found the IR in a state it cannot handle."""


class BackendError(LoopcError):
    """TensorRT rejected the network or the build configuration."""


class SimulationError(LoopcError):
    """The simulator cannot run the network with the given inputs."""


class InternalError(Exception):
    """A bug in loopc: an invariant that should hold did not."""

"""The optimizations a user may leave out (``--disable NAME``; ``-O0``: all of them), named where the command line
can read them without importing the passes."""

from __future__ import annotations

#: What only makes loops faster: each can be switched off. All are passes but ``stack-directions``, the recurrent
#: ops' lowering running both directions of a bidirectional op in one loop (the frontends make it; see
#: :func:`loopc.frontend.load`).
OPTIMIZATIONS = ("stack-directions", "narrow-products", "inline-one-trip", "scatter-to-concat", "loop-distribution",
                 "wavefront", "heads-first", "weight-layout")

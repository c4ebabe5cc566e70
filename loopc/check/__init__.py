"""``loopc check MANIFEST``: engine regression checks for CI (build, numbers, loop fingerprints, reports)."""

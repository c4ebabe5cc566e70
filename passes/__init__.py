"""Canonicalization and optimization passes over the loop IR, installed as ``loopc.passes``."""

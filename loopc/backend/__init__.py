"""Backends: loopc IR to executable networks."""

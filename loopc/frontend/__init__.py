"""Frontends: model files into loopc's IR."""

"""The ``loopc`` command line."""

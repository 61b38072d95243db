"""The ``orcamem`` command line: one skin over the four memory systems."""

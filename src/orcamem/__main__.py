"""``python -m orcamem`` is the ``orcamem`` command."""

from .interfaces.cli import main

main()

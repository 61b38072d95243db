"""``python -m orcamem`` is the ``orcamem`` command."""

from .interfaces.cli.entry import main

main()

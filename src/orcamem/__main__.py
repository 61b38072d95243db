"""``python -m orcamem`` is the ``orcamem`` command."""

from .interfaces.cli.main import main

main()

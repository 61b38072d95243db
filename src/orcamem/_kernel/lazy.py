"""Names a package loads from its submodules on first use (PEP 562), to keep its import light.

``import orcamem`` must not import an HTTP client, and the job queue must not import a
schema validator to say NOTHING; a package maps such names to the submodule that defines them:

>>> __getattr__ = lazy_names(__name__, {"OpenAIChat": "openai"})  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping

__all__ = ["lazy_names"]


def lazy_names(package: str, names: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package``: ``names`` maps a name to its submodule.

    The first use imports the submodule and keeps the value in the package, so later uses are
    plain attribute reads.
    """

    def __getattr__(name: str) -> object:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{names[name]}", package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__

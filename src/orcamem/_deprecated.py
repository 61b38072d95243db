"""One-release aliases for the module paths the docs taught before the re-cut (issue 10).

``import orcamem.services.memory_bank`` still works and gives the new module, with a
``DeprecationWarning`` naming the path to import from instead. Nothing inside orcamem imports
an old path; remove this file (and its line in ``__init__.py``) in the next release.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

MOVED = {
    "orcamem.foundation.config": "orcamem._kernel.config",
    "orcamem.foundation.llm": "orcamem._kernel.llm",
    "orcamem.foundation.redact": "orcamem._kernel.redact",
    "orcamem.interfaces.mcp_server": "orcamem.interfaces.mcp.server",
    "orcamem.pipelines.recall.presets": "orcamem.recall.presets",
    "orcamem.services.capability": "orcamem.capability.capability",
    "orcamem.services.capability_settings": "orcamem.capability.settings",
    "orcamem.services.local_memory": "orcamem.local.memory",
    "orcamem.services.memory": "orcamem.engine.memory",
    "orcamem.services.memory_bank": "orcamem.bank.bank",
    "orcamem.stores.objects": "orcamem.bank.objects",
    "orcamem.stores.transcript": "orcamem.local.transcript",
}
"""Old module path -> where it lives now."""

PACKAGES = frozenset(
    {"orcamem.foundation", "orcamem.pipelines", "orcamem.pipelines.recall"}
    | {"orcamem.services", "orcamem.stores"}
)
"""Old packages that only hold moved modules now (empty, so the old paths resolve)."""


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name in MOVED or name in PACKAGES:
            return importlib.util.spec_from_loader(name, self, is_package=name in PACKAGES)
        return None

    def create_module(self, spec):
        if spec.name in PACKAGES:
            return None  # a plain, empty package module
        new = MOVED[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new}; import from there (or from orcamem) instead: "
            "the old path goes away in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(new)

    def exec_module(self, module):
        """Nothing to run: the module is the new one, already imported."""


def install() -> None:
    """Put the alias finder behind the normal ones (once)."""
    if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
        sys.meta_path.append(_Alias())

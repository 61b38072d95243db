"""The docs teach only public names: what they import is in the ``__all__`` of a public package."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PUBLIC = {
    "orcamem",
    "orcamem.engine",
    "orcamem.bank",
    "orcamem.capability",
    "orcamem.local",
    "orcamem.interfaces.http",
    "orcamem.interfaces.http.api",
    # each integration is its own public face (importing it needs its framework)
    "orcamem.integrations.langgraph",
    "orcamem.integrations.langchain",
    "orcamem.integrations.agents",
}
IMPORT = re.compile(r"^\s*from (orcamem[\w.]*) import (?:\(([^)]*)\)|([^\n(]+))", re.M)


def _imports() -> list[tuple[str, str, str]]:
    found = []
    for path in DOCS:
        for block in re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.S):
            for module, grouped, single in IMPORT.findall(block):
                for name in filter(None, (n.strip() for n in (grouped or single).split(","))):
                    found.append((path.name, module, name.split(" as ")[0]))
    return found


@pytest.mark.parametrize(("doc", "module", "name"), _imports())
def test_a_docs_import_is_a_public_name(doc: str, module: str, name: str) -> None:
    assert module in PUBLIC, f"{doc} imports from the private module {module}"
    assert name in importlib.import_module(module).__all__, f"{doc}: {module}.{name} is not public"

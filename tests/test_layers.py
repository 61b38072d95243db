"""The layering rules that import-linter cannot see (``.importlinter`` checks the imports).

An interface is a skin: it calls ``Memory`` (and the other systems' classes), never the store
behind them. Reaching ``memory.store`` from an interface is how SQL leaks into a REST route.
"""

from __future__ import annotations

import ast
from pathlib import Path

import orcamem

SRC = Path(orcamem.__file__).resolve().parent


def test_no_interface_or_benchmark_reaches_a_memory_store() -> None:
    found = []
    for folder in ("interfaces", "bench"):
        for path in sorted((SRC / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute) and node.attr == "store":
                    found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert found == [], "use a Memory method instead of memory.store at: " + ", ".join(found)


def test_the_kernel_imports_only_the_error_family() -> None:
    """Checked by the layers contract too; this says it in one line a reader can find."""
    for path in sorted((SRC / "_kernel").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                target = (node.module or "").split(".")[0]
                depth = len(path.relative_to(SRC).parts) - 1
                if node.level > depth:  # leaves _kernel
                    assert target == "errors", f"{path.relative_to(SRC)}:{node.lineno}"

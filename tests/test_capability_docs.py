"""docs/capability.md maps every behaviour sentence of the spec to a test: the tests it names
must exist, and every test of the capability's modules must be reachable from the docs."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "capability.md"


def table_rows() -> list[tuple[int, list[tuple[str, str]]]]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Spec sentence → test", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].isdigit():
            refs = re.findall(r"`(test_[a-z_]+\.py)::(test_[a-z0-9_]+)`", cells[2])
            rows.append((int(cells[0]), refs))
    return rows


def defined_tests(filename: str) -> set[str]:
    module = ast.parse((ROOT / "tests" / filename).read_text(encoding="utf-8"))
    return {
        node.name
        for node in module.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    }


def test_every_row_names_tests_that_exist() -> None:
    rows = table_rows()
    assert [number for number, _ in rows] == list(range(1, len(rows) + 1))
    assert len(rows) >= 80
    missing = [
        f"row {number}: {filename}::{name}"
        for number, refs in rows
        for filename, name in refs
        if name not in defined_tests(filename)
    ]
    assert all(refs for _, refs in rows), "a row without a test"
    assert not missing, missing


def test_the_spec_numbers_are_in_the_doc() -> None:
    text = DOC.read_text(encoding="utf-8")
    for number in ("1,000", "8,000", "**20", "0.25", "0.7", "0.3", "0.9", "1–50", "1–3650"):
        assert number in text, number

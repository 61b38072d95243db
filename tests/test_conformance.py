"""docs/conformance.md maps every concrete statement of the four seeds to its status and the test
that pins it: rows are numbered, every ✔ row names tests that exist, every ◐/✘ row says why and
which issue covers it."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "conformance.md"
SEEDS = ("003", "002", "004", "000")
STATUSES = ("✔", "◐", "✘")
TEST_REF = re.compile(r"`(test_\w+\.py)::([\w:]+)`")


def sections() -> dict[str, list[list[str]]]:
    """Each ``## Seed NNN`` section's table rows, as their cells."""
    found: dict[str, list[list[str]]] = {}
    for part in DOC.read_text(encoding="utf-8").split("\n## ")[1:]:
        seed = re.match(r"Seed (\d{3})\b", part)
        if seed is None:
            continue
        rows = found.setdefault(seed.group(1), [])
        for line in part.splitlines():
            cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
            if line.startswith("|") and cells[0].isdigit():
                rows.append(cells)
    return found


def _tests_in(body: list[ast.stmt], prefix: str = "") -> set[str]:
    return {
        prefix + node.name
        for node in body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.name.startswith("test_")
    }


@cache
def defined_tests(filename: str) -> frozenset[str]:
    """``test_name`` and ``TestClass::test_name`` for every test the file defines."""
    module = ast.parse((ROOT / "tests" / filename).read_text(encoding="utf-8"))
    names = _tests_in(module.body)
    for node in module.body:
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            names |= _tests_in(node.body, f"{node.name}::")
    return frozenset(names)


def test_there_is_one_table_per_seed() -> None:
    assert sorted(sections()) == sorted(SEEDS)


@pytest.mark.parametrize("seed", SEEDS)
def test_rows_are_numbered_and_every_status_is_backed(seed: str) -> None:
    rows = sections()[seed]
    assert [int(cells[0]) for cells in rows] == list(range(1, len(rows) + 1))
    problems = []
    for cells in rows:
        if len(cells) != 4:
            problems.append(f"row {cells[0]}: {len(cells)} cells, want 4")
            continue
        number, _, status, why = cells
        refs = TEST_REF.findall(why)
        if status not in STATUSES:
            problems.append(f"row {number}: status {status!r}, use one of {STATUSES}")
        elif status == "✔" and not refs:
            problems.append(f"row {number}: ✔ without a test")
        elif status != "✔" and not re.search(r"#\d+", why):
            problems.append(f"row {number}: {status} without the issue that covers it (#NN)")
        problems += [
            f"row {number}: {filename}::{name} does not exist"
            for filename, name in refs
            if not (ROOT / "tests" / filename).exists() or name not in defined_tests(filename)
        ]
    assert not problems, "\n".join(problems)


def test_every_seed_is_covered_in_full() -> None:
    counts = {seed: len(rows) for seed, rows in sections().items()}
    assert counts["003"] >= 60 and counts["002"] >= 40 and counts["000"] >= 30, counts
    assert counts["004"] >= 86, counts  # the capability's table moved here whole


def test_the_capability_numbers_are_in_its_doc() -> None:
    text = (ROOT / "docs" / "capability.md").read_text(encoding="utf-8")
    for number in ("1,000", "8,000", "**20", "0.25", "0.7", "0.3", "0.9", "1–50", "1–3650"):
        assert number in text, number


def test_capability_md_points_at_the_table() -> None:
    text = (ROOT / "docs" / "capability.md").read_text(encoding="utf-8")
    assert "conformance.md#seed-004" in text
    assert "| 1 | Memory is off by default" not in text  # moved, not copied


def test_the_summary_counts_match_the_rows() -> None:
    """The table at the top is the rows counted, so two merges that each change rows cannot
    leave it stale."""
    text = DOC.read_text(encoding="utf-8")
    for seed, rows in sections().items():
        found = re.search(rf"^\| \[{seed} [^|]*\| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", text, re.M)
        assert found, f"no summary row for seed {seed}"
        want = [len(rows), *(sum(cells[2] == status for cells in rows) for status in STATUSES)]
        assert [int(n) for n in found.groups()] == want, (seed, want)

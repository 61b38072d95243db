"""What every fault-injection script shares: its flags, the orcamem child, counts, the report.

Each script starts orcamem as a real subprocess (``python -m orcamem`` with ``PYTHONPATH`` set to
the tree under test, so the same script measures any checkout), kills it with SIGKILL at a
seeded random point and counts what survived. Nothing here imports orcamem: the script runs
the tree it is pointed at, not the one it was written in.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

# Anything that could point the child at a real model, bucket or home directory.
_STRIPPED = ("ORCA", "ANTHROPIC", "OPENAI", "S3_", "INTERNAL_S3_", "AWS_")

TRACEBACK = "Traceback (most recent call last)"


def parser(description: str, trials: int) -> argparse.ArgumentParser:
    """The flags every script takes: --trials, --seed, --json and the tree under test."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--trials", type=int, default=trials, help=f"trials to run (default {trials})")
    p.add_argument("--seed", type=int, default=11, help="seed of every random choice")
    p.add_argument("--json", action="store_true", help="print the counts as one JSON object")
    p.add_argument(
        "--src",
        type=Path,
        default=REPO / "src",
        help="the src/ directory of the orcamem tree under test (default: this checkout's)",
    )
    p.add_argument("--python", default=sys.executable, help="the interpreter that runs orcamem")
    return p


class Orcamem:
    """``python -m orcamem`` of one tree, with a clean environment and its own ORCA_HOME."""

    def __init__(self, args: argparse.Namespace, home: Path) -> None:
        self.python = args.python
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(_STRIPPED)}
        self.env.update(PYTHONPATH=str(args.src.resolve()), ORCA_HOME=str(home))
        self.env.pop("PYTHONSTARTUP", None)

    def argv(self, *args: str) -> list[str]:
        return [self.python, "-m", "orcamem", *args]

    def run(self, *args: str, timeout: float = 120.0) -> Finished:
        """Run one command to its end (or kill it at ``timeout``), with its CPU seconds."""
        before = _children_cpu()
        start = time.monotonic()
        try:
            done = subprocess.run(
                self.argv(*args), env=self.env, capture_output=True, text=True, timeout=timeout
            )
            code, out, err, timed_out = done.returncode, done.stdout, done.stderr, False
        except subprocess.TimeoutExpired as exc:  # run() killed and reaped the child
            code, timed_out = None, True
            out, err = _text(exc.stdout), _text(exc.stderr)
        return Finished(
            code, out, err, timed_out, time.monotonic() - start, _children_cpu() - before
        )

    def start(self, *args: str) -> subprocess.Popen:
        """Start a long-running command, its output discarded (pipes could fill and block it)."""
        return subprocess.Popen(
            self.argv(*args),
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )


class Finished:
    """How one command ended: exit code (None: killed at its timeout), output, time, CPU."""

    def __init__(
        self,
        code: int | None,
        out: str,
        err: str,
        timed_out: bool,
        seconds: float,
        cpu: float,
    ) -> None:
        self.code, self.out, self.err = code, out, err
        self.timed_out, self.seconds, self.cpu = timed_out, seconds, cpu

    @property
    def traceback(self) -> bool:
        return TRACEBACK in self.out or TRACEBACK in self.err

    def last_line(self) -> str:
        lines = [line for line in (self.err + "\n" + self.out).splitlines() if line.strip()]
        return lines[-1] if lines else ""


def _text(value: bytes | str | None) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value or ""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sigkill(proc: subprocess.Popen) -> int | None:
    """SIGKILL ``proc`` (if it still runs) and reap it; its exit code if it had already ended."""
    ended = proc.poll()
    if ended is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return ended


def free_port() -> int:
    """A loopback port nobody holds right now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def query(db: Path, sql: str, params: tuple = ()) -> list[tuple]:
    """Read ``db`` through a read-only connection (safe next to a writer in WAL mode)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def scalar(db: Path, sql: str, params: tuple = ()) -> Any:
    return query(db, sql, params)[0][0]


def write_export(path: Path, episodes: int, seed: int, space: str = "default") -> None:
    """An export file of ``episodes`` short turns with consolidatable facts in them."""
    import random

    rng = random.Random(seed)
    header = {"type": "orcamem-export", "version": 1, "space": space}
    with path.open("w", encoding="utf-8") as f:
        f.write(json.dumps(header) + "\n")
        for i in range(1, episodes + 1):
            text = (
                f"I moved to city{rng.randrange(50)} and my favourite colour is "
                f"c{rng.randrange(20)} now (turn {i})"
            )
            record = {
                "type": "episode",
                "id": i,
                "space": space,
                "kind": "turn",
                "role": "user" if i % 2 else "assistant",
                "session_id": f"s{i // 20}",
                "turn_id": f"t{i}",
                "text": text,
                "meta": {},
                "occurred_at": "2026-01-01T00:00:00Z",
                "created_at": "2026-01-01T00:00:00Z",
            }
            f.write(json.dumps(record) + "\n")


def report(args: argparse.Namespace, summary: str, counts: dict[str, Any]) -> None:
    """Print the one-line summary, or with --json the counts (and the summary) as one object."""
    if args.json:
        print(json.dumps({**counts, "summary": summary}, indent=2, sort_keys=True))
    else:
        print(summary)

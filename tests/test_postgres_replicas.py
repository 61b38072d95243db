"""Many replicas, one database: two real ``orcamem serve`` processes on one PostgreSQL.

Clients write through both at once; every acknowledged write is read back through the *other*
replica at once (read-after-write: visible as soon as the write is acknowledged, no delay);
both replicas race ``/api/sleep`` on one space; keys made once are honoured by both, and a key
scoped to one space reaches nothing else on either. Real processes, real PostgreSQL; the only
waits are for the servers to start, bounded.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from orcamem import Memory
from servers import child_env, free_port

pytestmark = pytest.mark.slow

STATEMENTS = [
    "I moved from Pune to Bangalore last week.",
    "My dentist is Dr Rao.",
    "I am allergic to peanuts.",
    "My manager is Priya.",
]


def _start(url: str, port: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "orcamem", "serve", "--db", url, "--port", str(port),
         "--require-keys", "--no-auto-sleep"],
        env={**os.environ, **child_env()},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def _ready(proc: subprocess.Popen, base: str) -> None:
    deadline = time.monotonic() + 120  # a guard against a hang, never a measurement
    while True:
        assert proc.poll() is None, f"orcamem serve exited: {proc.stderr.read()}"
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code < 500:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "orcamem serve did not start"
        time.sleep(0.1)


@pytest.fixture
def replicas(pg_url: str) -> Iterator[tuple[list[str], dict[str, str]]]:
    with Memory(pg_url) as mem:  # keys are made once, in the shared database
        admin = mem.keys.create(spaces=[], admin=True, name="ops", now="2026-11-01T10:00:00Z")
        alice = mem.keys.create(spaces=["alice"], admin=False, name="a", now="2026-11-01T10:00:00Z")
    ports = [free_port(), free_port()]
    procs = [_start(pg_url, port) for port in ports]
    bases = [f"http://127.0.0.1:{port}" for port in ports]
    try:
        for proc, base in zip(procs, bases, strict=True):
            _ready(proc, base)
        yield bases, {"admin": admin[1], "alice": alice[1]}
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(30)


def test_two_replicas_lose_no_write_and_duplicate_no_state(replicas) -> None:
    bases, keys = replicas
    admin = {"Authorization": f"Bearer {keys['admin']}"}

    def write(job: tuple[int, int]) -> tuple[str, int, str]:
        n, replica = job
        space = ("alice", "bob")[n % 2]
        text = f"{STATEMENTS[n % len(STATEMENTS)]} (note {n})"
        with httpx.Client(base_url=bases[replica], headers=admin, timeout=60) as client:
            made = client.post(
                "/api/episodes", params={"space": space}, json={"text": text, "role": "user"}
            )
            assert made.status_code == 201, made.text
            episode = made.json()["episodes"][0]["id"]
            other = httpx.get(
                f"{bases[1 - replica]}/api/episodes/{episode}", params={"space": space},
                headers=admin, timeout=60,
            )  # fmt: skip
            assert other.status_code == 200 and other.json()["text"] == text  # read-after-write
        return space, episode, text

    with ThreadPoolExecutor(8) as pool:
        acknowledged = list(pool.map(write, [(n, n % 2) for n in range(80)]))
    assert len({(space, episode) for space, episode, _ in acknowledged}) == 80

    def sleep(replica: int) -> dict:
        got = httpx.post(
            f"{bases[replica]}/api/sleep", params={"space": "alice"}, headers=admin, timeout=120
        )
        assert got.status_code == 200, got.text
        return got.json()

    with ThreadPoolExecutor(4) as pool:
        reports = list(pool.map(sleep, [0, 1, 0, 1]))
    consolidated = sum(report["episodes"] for report in reports)
    assert consolidated == 40  # every alice episode once, by whichever replica took it

    for base in bases:
        with httpx.Client(base_url=base, headers=admin, timeout=60) as client:
            for space in ("alice", "bob"):
                texts, after = [], 0
                while page := client.get(
                    "/api/episodes", params={"space": space, "after": after, "limit": 100}
                ).json()["episodes"]:
                    texts += [e["text"] for e in page]
                    after = page[-1]["id"]
                assert sorted(texts) == sorted(t for s, _, t in acknowledged if s == space)
            facts = client.get("/api/facts", params={"space": "alice"}).json()["facts"]
            slots = [(f["entity"], f["attribute"]) for f in facts if f["category"] == "state"]
            assert slots and len(slots) == len(set(slots))  # no state twice
            assert client.get("/api/facts", params={"space": "bob"}).json()["facts"] == []

    scoped = {"Authorization": f"Bearer {keys['alice']}"}
    for base in bases:
        with httpx.Client(base_url=base, headers=scoped, timeout=60) as client:
            hits = client.get(
                "/api/search", params={"space": "alice", "q": "allergic to peanuts"}
            ).json()
            assert hits["hits"] and all("peanuts" in h["text"] for h in hits["hits"])
            assert (
                client.get("/api/search", params={"space": "bob", "q": "dentist"}).status_code
                == 403
            )

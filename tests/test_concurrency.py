"""Several processes share one database file; a SIGKILL never loses an acknowledged write."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from orcamem import Config, Memory
from orcamem.engine import RecallConfig

WRITER = textwrap.dedent("""
    import sys
    from orcamem import Memory
    path, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with Memory(path) as mem:
        for i in range(count):
            mem.add(f"writer {tag} note {i}", space="shared")
""")

BULK = textwrap.dedent("""
    import sys
    from orcamem import Memory
    path = sys.argv[1]
    with Memory(path) as mem:
        batch = 0
        while True:
            items = [f"bulk batch {batch} item {i} about the quarterly roadmap" for i in range(200)]
            mem.add_many(items, space="bulk")
            print(batch, flush=True)   # acknowledged: add_many returned
            batch += 1
""")


def run(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    Memory(path).close()
    writers = [run(WRITER, path, tag, "60") for tag in ("a", "b", "c")]
    for proc in writers:
        _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 0, stderr
    with Memory(path) as mem:
        texts = {e.text for e in mem.iter_episodes(space="shared")}
        assert texts == {f"writer {t} note {i}" for t in "abc" for i in range(60)}
        assert mem.store.integrity_check() == "ok"


def test_vector_index_sees_another_process_write(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    with Memory(
        path,
        space="shared",
        config=Config(recall=RecallConfig(preset="vector", novelty_threshold=1.0)),
    ) as reader:
        reader.add("The spare key hides under the blue flowerpot.")
        assert reader.search("where is the key?").hits  # index now loaded in this process
        proc = run(WRITER, path, "z", "3")
        assert proc.wait(timeout=60) == 0
        texts = [hit.text for hit in reader.search("writer z note", top_k=10).hits]
        assert {"writer z note 0", "writer z note 1", "writer z note 2"} <= set(texts)
        # a delete in another process reaches this process's index too
        victim = next(e for e in reader.iter_episodes() if e.text == "writer z note 1")
        with Memory(path, space="shared") as other:
            other.forget(victim.id)
        texts = [hit.text for hit in reader.search("writer z note", top_k=10).hits]
        assert "writer z note 1" not in texts and "writer z note 2" in texts


def test_sigkill_during_bulk_import_keeps_acknowledged_adds(tmp_path: Path) -> None:
    path = str(tmp_path / "crash.db")
    proc = run(BULK, path)
    acknowledged = -1
    deadline = time.monotonic() + 60
    assert proc.stdout is not None
    while acknowledged < 5 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line:
            acknowledged = int(line)
    time.sleep(0.05)  # let it be in the middle of the next batch
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert acknowledged >= 5, proc.stderr.read() if proc.stderr else ""
    with Memory(path, space="bulk") as mem:
        assert mem.store.integrity_check() == "ok"
        texts = {e.text for e in mem.iter_episodes()}
        for batch in range(acknowledged + 1):
            assert f"bulk batch {batch} item 199 about the quarterly roadmap" in texts
        batches = {int(t.split()[2]) for t in texts}
        for batch in batches:  # transactions are whole: a batch is all there or absent
            assert sum(t.startswith(f"bulk batch {batch} ") for t in texts) == 200
        assert mem.search("quarterly roadmap").hits


@pytest.mark.parametrize("threads", [4])
def test_threads_share_one_memory(tmp_path: Path, threads: int) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with Memory(tmp_path / "t.db") as mem:

        def work(n: int) -> None:
            for i in range(25):
                mem.add(f"thread {n} item {i}")
                mem.search(f"thread {n}")

        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(work, range(threads)))
        assert mem.stats()["episodes"] == threads * 25
        json.dumps(mem.stats())

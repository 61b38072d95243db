"""The servers under load (issue 16): log lines never block the event loop (a stderr nobody
reads is a full pipe), and ``--workers N`` processes on one SQLite file lose no acknowledged
write and read each other's writes."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import httpx
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from orcamem import Memory
from orcamem.interfaces.cli.main import app
from orcamem.interfaces.http.logs import JsonLines, QueuedStderr
from servers import child_env, free_port

STARTED = b"Application startup complete."


@contextmanager
def _orcamem(args: list[str], stderr: int | IO[bytes], processes: int = 1) -> Iterator[str]:
    """``orcamem <args> --port P`` in a child process, once it answers ``/healthz`` and
    ``processes`` of its processes have logged ``STARTED`` (read from ``stderr`` when it is a
    file); terminated at the end."""
    port = free_port()
    child = subprocess.Popen(
        [sys.executable, "-m", "orcamem", *args, "--port", str(port)],
        env={**os.environ, **child_env()},
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(timeout=5) as probe:
            while True:  # the suite's timeout guards against a server that never comes up
                assert child.poll() is None, f"orcamem {args[0]} exited with {child.returncode}"
                try:
                    if probe.get(f"{url}/healthz").status_code == 200:
                        if processes == 1:
                            break
                        stderr.seek(0)  # type: ignore[union-attr]
                        if stderr.read().count(STARTED) >= processes:  # type: ignore[union-attr]
                            break
                except httpx.HTTPError:
                    pass
                threading.Event().wait(0.1)
        yield url
    finally:
        child.terminate()
        child.wait(60)


def test_a_server_whose_stderr_is_a_full_pipe_keeps_serving(tmp_path: Path) -> None:
    """Nobody reads the server's stderr: its 64 KiB pipe fills after ~200 request lines (a
    long request id makes each ~400 bytes). A handler that writes from the event loop
    blocks it there and every later request times out; the queued handler keeps serving,
    and the lines are all written once the pipe is read again."""
    args = ["serve", "--db", str(tmp_path / "m.db"), "--no-auto-sleep"]
    read, write = os.pipe()
    chunks: list[bytes] = []

    def drain() -> None:
        while chunk := os.read(read, 1 << 16):
            chunks.append(chunk)

    reader = threading.Thread(target=drain)
    try:
        with _orcamem(args, write) as url, httpx.Client(base_url=url, timeout=10) as http:
            os.close(write)  # the child holds the only write end now
            codes = [
                http.get("/healthz", headers={"x-request-id": f"{n:04d}" + "x" * 120}).status_code
                for n in range(600)
            ]
            added = http.post("/api/episodes", json={"text": "still served after 600 lines"})
            found = http.get("/api/search", params={"q": "served after"})
            assert codes == [200] * 600
            assert added.status_code == 201 and found.json()["hits"]
            reader.start()  # the pipe is read again: the queued lines reach it as it stops
    finally:
        if reader.is_alive():
            reader.join(60)
        os.close(read)
    lines = [json.loads(line) for line in b"".join(chunks).splitlines() if line.startswith(b"{")]
    given = [line["request_id"] for line in lines if line.get("route") == "/healthz"]
    served = [rid[:4] for rid in given if not rid.startswith("req-")]  # not the probe's
    assert served == [f"{n:04d}" for n in range(600)]  # every line, in order


def test_log_lines_beyond_the_queue_are_dropped_counted_and_the_count_written() -> None:
    """The caller never waits on a stuck stream: with the writer blocked on a full pipe and
    the queue full, lines are dropped and counted, and the count is written before the next
    line once the pipe is read again."""
    read, write = os.pipe()
    stream = os.fdopen(write, "w", buffering=1)
    handler = QueuedStderr(stream, capacity=5)
    handler.setFormatter(JsonLines())
    logger = logging.getLogger("orcamem.test-queued")
    logger.addHandler(handler)
    logger.propagate = False
    got: list[bytes] = []
    try:
        os.set_blocking(write, False)
        try:
            while True:  # fill the pipe itself: the writer thread blocks on its first line
                os.write(write, b"." * 4096)
        except BlockingIOError:
            pass
        os.set_blocking(write, True)
        for n in range(100):  # returns: the caller only ever puts on the queue
            logger.warning("line %d", n)
        assert handler.dropped >= 100 - 5 - 1  # 5 queued, at most one taken by the writer
        with os.fdopen(read, "rb") as pipe:
            reader = threading.Thread(target=lambda: got.append(pipe.read()))
            reader.start()
            assert handler.drain()
            logger.warning("after the drain")
            handler.close()
            stream.close()
            reader.join()
    finally:
        logger.removeHandler(handler)
    lines = [json.loads(line[line.find(b"{") :]) for line in got[0].splitlines()]
    messages = [line["msg"] for line in lines]
    kept = [int(m.split()[1]) for m in messages if m.startswith("line ")]
    notes = [line for line in lines if line["logger"] == "orcamem.logs"]
    assert kept == sorted(kept) and 1 <= len(kept) <= 6
    assert len(notes) == 1 and notes[0]["level"] == "warning"
    assert notes[0]["msg"].startswith(f"{100 - len(kept)} log line(s) dropped")
    assert messages[-1] == "after the drain"


def test_two_worker_processes_lose_no_acknowledged_write_and_read_each_others(
    tmp_path: Path,
) -> None:
    """``serve --workers 2`` on one SQLite file: 8 clients write 200 episodes at once over
    fresh connections; both processes served writes, every acknowledged write is in the
    file, and each process finds what the other wrote."""
    db = tmp_path / "m.db"
    args = ["serve", "--db", str(db), "--no-auto-sleep", "--workers", "2"]
    acknowledged: list[str] = []
    lock = threading.Lock()

    def client(number: int) -> None:
        for n in range(25):
            text = f"worker note {number}-{n} about kumquat{number}x{n}"
            reply = httpx.post(f"{url}/api/episodes", json={"text": text}, timeout=60)
            assert reply.status_code == 201, reply.text
            with lock:
                acknowledged.append(text)

    with tempfile.TemporaryFile() as log, _orcamem(args, log, processes=2) as url:
        threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        log.seek(0)
        lines = [json.loads(line) for line in log.read().splitlines() if line[:1] == b"{"]
        writers = {line["pid"] for line in lines if line.get("route") == "/api/episodes"}
        assert len(writers) == 2, writers  # the two processes both wrote
        for number in range(8):  # each search over a fresh connection: either process
            found = httpx.get(
                f"{url}/api/search", params={"q": f"kumquat{number}x24", "top_k": 3}
            ).json()
            assert f"worker note {number}-24 about kumquat{number}x24" in {
                hit["text"] for hit in found["hits"]
            }
    assert len(acknowledged) == 200
    with Memory(db) as memory:
        stored = [episode.text for episode in memory.iter_episodes(space="default")]
    assert sorted(stored) == sorted(acknowledged)


def test_workers_refuse_a_bank_that_each_process_would_keep_alone(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["serve", "--db", str(tmp_path / "m.db"), "--workers", "2", "--bank", "memory"],
    )
    assert result.exit_code == 2
    assert "--workers needs a database and a Memory Bank every process shares" in result.output


def _sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample of a Prometheus text exposition (0 when absent)."""
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


def test_metrics_of_two_workers_count_the_whole_server_whichever_answers(
    tmp_path: Path,
) -> None:
    """``serve --workers 2``: 60 searches over fresh connections are served by both
    processes, and every scrape, whichever process answers it, counts all 60 (requests and
    latency observations); scrapes are repeated until both processes have answered one."""
    args = ["serve", "--db", str(tmp_path / "m.db"), "--no-auto-sleep", "--workers", "2"]
    sent = 60
    search = {"method": "GET", "route": "/api/search"}
    with tempfile.TemporaryFile() as log, _orcamem(args, log, processes=2) as url:
        for n in range(sent):
            reply = httpx.get(f"{url}/api/search", params={"q": f"plum{n}"}, timeout=60)
            assert reply.status_code == 200, reply.text
        scraped: list[tuple[float, float, float]] = []
        answered: set[int] = set()
        for _ in range(400):  # fresh connections: the kernel hands each to either process
            text = httpx.get(f"{url}/metrics", timeout=60).text
            scraped.append(
                (
                    _sample(text, "orcamem_http_requests_total", **search, status="200"),
                    _sample(text, "orcamem_http_request_duration_seconds_count", **search),
                    _sample(text, "orcamem_http_requests_in_flight"),
                )
            )
            log.seek(0)
            lines = [json.loads(line) for line in log.read().splitlines() if line[:1] == b"{"]
            answered = {line["pid"] for line in lines if line.get("route") == "/metrics"}
            if len(answered) == 2:
                break
        searched = {line["pid"] for line in lines if line.get("route") == "/api/search"}
    assert len(searched) == 2, searched  # both processes served searches
    assert len(answered) == 2, answered  # and both answered scrapes
    # each scrape is itself in flight (in the process that answers it), nothing else is
    assert set(scraped) == {(sent, sent, 1.0)}, scraped[:5]


def test_the_workers_listening_socket_gives_connections_tcp_nodelay() -> None:
    """The socket ``--workers`` listens on is uvicorn's, stated as TCP: asyncio then turns
    Nagle off on every connection it accepts, as it does for the one-process server (with it
    on, each keep-alive request after a connection's first waited for a delayed ACK)."""
    import asyncio
    import socket

    import uvicorn

    from orcamem.interfaces.http.server import tcp_socket

    seen: list[int] = []

    class Accepted(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            sock = transport.get_extra_info("socket")
            seen.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    async def accept_one() -> None:
        listening = tcp_socket(uvicorn.Config(app=None, host="127.0.0.1", port=0).bind_socket())
        server = await asyncio.get_running_loop().create_server(Accepted, sock=listening)
        port = listening.getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        while not seen:
            await asyncio.sleep(0.01)
        writer.close()
        server.close()
        await server.wait_closed()

    asyncio.run(accept_one())
    assert seen == [1]


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from ``/proc``)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _is_worker(pid: int) -> bool:
    """A uvicorn worker process (not multiprocessing's resource tracker)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"spawn_main" in command and b"resource_tracker" not in command


def _gone(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return True
    return fields[0] == "Z"  # a zombie serves nothing


def test_workers_end_when_their_supervisor_is_killed(tmp_path: Path) -> None:
    """SIGKILL of ``serve --workers 2`` had left both workers serving and writing to the
    file under init, holding the port: a restart on it failed ("Address already in use")."""
    db = tmp_path / "m.db"
    args = ["serve", "--db", str(db), "--no-auto-sleep", "--workers", "2", "--port"]
    port = free_port()
    log = (tmp_path / "serve.log").open("w+b")
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "orcamem", *args, str(port)],
        env={**os.environ, **child_env()},
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    workers: list[int] = []
    try:
        while True:  # the suite's timeout guards against a server that never comes up
            assert supervisor.poll() is None, "orcamem serve exited"
            log.seek(0)
            if log.read().count(STARTED) >= 2:
                break
            threading.Event().wait(0.1)
        workers = [pid for pid in _children(supervisor.pid) if _is_worker(pid)]
        assert len(workers) == 2, workers
        supervisor.kill()
        supervisor.wait(60)
        while not all(_gone(pid) for pid in workers):  # the suite's timeout guards a hang
            threading.Event().wait(0.1)
    finally:
        for pid in workers:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
        log.close()
    again = subprocess.Popen(  # on the same port: nothing holds it any more
        [sys.executable, "-m", "orcamem", *args, str(port)],
        env={**os.environ, **child_env()},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with httpx.Client(timeout=5) as probe:
            while True:  # the suite's timeout guards against a server that never comes up
                assert again.poll() is None, f"the restart exited with {again.returncode}"
                with contextlib.suppress(httpx.HTTPError):
                    if probe.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                        break
                threading.Event().wait(0.1)
    finally:
        again.terminate()
        again.wait(60)

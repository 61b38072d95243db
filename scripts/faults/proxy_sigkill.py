"""SIGKILL the memory proxy mid-traffic and count acknowledged exchanges it never recorded.

Each trial starts ``python -m orcamem proxy`` on a fresh database and a free loopback port, in
front of a fake model server in this process (loopback, port 0), and sends chat exchanges from
``--clients`` threads (half streamed, half not). At a random moment the proxy gets SIGKILL; it
is then restarted on the same database (on a new free port), and every exchange the client saw
answered in full (a 200 with the whole JSON body, or a stream up to ``[DONE]``) is looked up in
the episode log: its user turn (the question's text) and its reply (the fake model's text for
that question).

    PYTHONPATH=src .venv/bin/python scripts/faults/proxy_sigkill.py --trials 10
    PYTHONPATH=src .venv/bin/python scripts/faults/proxy_sigkill.py --trials 10 --json

Texts are matched, not turn ids, so the same script measures any version of the proxy.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from _harness import free_port

from orcamem import Memory

SPACE = "faults"


def _reply_to(question: str) -> str:
    return f"The answer to {question}."


class _Model(BaseHTTPRequestHandler):
    """A chat-completions server: the reply names the question; ``stream`` gets SSE."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        question = payload["messages"][-1]["content"]
        reply = _reply_to(question)
        if payload.get("stream"):
            words = reply.split(" ")
            events = [
                {"choices": [{"index": 0, "delta": {"content": w if i == 0 else f" {w}"}}]}
                for i, w in enumerate(words)
            ]
            body = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events)
            body += b"data: [DONE]\n\n"
            kind = "text/event-stream"
        else:
            message = {"role": "assistant", "content": reply}
            body = json.dumps({"choices": [{"index": 0, "message": message}]}).encode()
            kind = "application/json"
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _ModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a killed proxy resets its connections: that is the point, not an error


def _start_proxy(db: Path, port: int, upstream: str, home: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "orcamem", "proxy", "--db", str(db), "--port", str(port),
               "--upstream", upstream, "--model", "fake"]  # fmt: skip
    env = {**os.environ, "ORCA_HOME": str(home)}
    log = home.with_suffix(".log")
    with log.open("ab") as sink:  # a file, not a pipe: a full pipe would stall the server
        child = subprocess.Popen(command, env=env, stdout=sink, stderr=sink)
    deadline = time.monotonic() + 60
    while True:
        if child.poll() is not None:
            raise SystemExit(f"the proxy exited at startup:\n{log.read_text()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return child
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            child.kill()
            raise SystemExit("the proxy did not answer /healthz within 60 s")
        time.sleep(0.05)


def _exchange(client: httpx.Client, url: str, question: str, stream: bool) -> bool:
    """Send one chat; True only if the whole answer arrived."""
    request = {"messages": [{"role": "user", "content": question}], "stream": stream}
    try:
        if not stream:
            reply = client.post(url, json=request)
            return reply.status_code == 200 and bool(reply.json()["choices"])
        with client.stream("POST", url, json=request) as reply:
            body = b"".join(reply.iter_raw())
        return reply.status_code == 200 and b"data: [DONE]\n\n" in body
    except (httpx.HTTPError, ValueError):
        return False


def _client(url: str, name: str, stop: threading.Event, answered: list[str]) -> None:
    headers = {"x-orma-space": SPACE}
    with httpx.Client(timeout=10, headers=headers) as client:
        n = 0
        while not stop.is_set():
            question = f"question {name}-{n}"
            if not _exchange(client, url, question, stream=n % 2 == 1):
                return  # the proxy is gone
            answered.append(question)
            n += 1


def trial(number: int, clients: int, kill_after: float, upstream: str, work: Path) -> dict:
    db, home = work / f"trial-{number}.db", work / f"home-{number}"
    port = free_port()
    proxy = _start_proxy(db, port, upstream, home)
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    stop, answered = threading.Event(), []
    threads = [
        threading.Thread(target=_client, args=(url, f"{number}.{c}", stop, answered))
        for c in range(clients)
    ]
    for thread in threads:
        thread.start()
    time.sleep(kill_after)
    proxy.send_signal(signal.SIGKILL)
    proxy.wait()
    stop.set()
    for thread in threads:
        thread.join(30)
    restarted = _start_proxy(db, free_port(), upstream, home)  # the file opens after the crash
    try:
        with Memory(db) as mem:
            texts = {(e.role, e.text) for e in mem.iter_episodes(space=SPACE)}
    finally:
        restarted.terminate()
        restarted.wait(30)
    acknowledged = list(answered)
    return {
        "acknowledged": len(acknowledged),
        "user_turns_lost": sum(("user", q) not in texts for q in acknowledged),
        "replies_lost": sum(("assistant", _reply_to(q)) not in texts for q in acknowledged),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=10, help="kill-and-restart rounds")
    parser.add_argument("--clients", type=int, default=4, help="client threads per trial")
    parser.add_argument("--min-s", type=float, default=0.5, help="earliest kill after start")
    parser.add_argument("--max-s", type=float, default=2.0, help="latest kill after start")
    parser.add_argument("--seed", type=int, default=None, help="seed for the kill moments")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    if args.trials < 1 or args.clients < 1 or not 0 <= args.min_s <= args.max_s:
        parser.error("use --trials >= 1, --clients >= 1 and 0 <= --min-s <= --max-s")
    pick = random.Random(args.seed)
    model = _ModelServer(("127.0.0.1", 0), _Model)
    threading.Thread(target=model.serve_forever, args=(0.05,), daemon=True).start()
    upstream = f"http://127.0.0.1:{model.server_address[1]}/v1"
    totals = {"trials": args.trials, "acknowledged": 0, "user_turns_lost": 0, "replies_lost": 0}
    per_trial = []
    try:
        with tempfile.TemporaryDirectory(prefix="proxy-sigkill-") as tmp:
            for number in range(args.trials):
                kill_after = pick.uniform(args.min_s, args.max_s)
                counts = trial(number, args.clients, kill_after, upstream, Path(tmp))
                per_trial.append({"kill_after_s": round(kill_after, 3), **counts})
                for name in ("acknowledged", "user_turns_lost", "replies_lost"):
                    totals[name] += counts[name]
                if not args.json:
                    print(f"trial {number}: killed after {kill_after:.2f} s: {counts}", flush=True)
    finally:
        model.shutdown()
        model.server_close()
    if args.json:
        print(json.dumps({**totals, "per_trial": per_trial}))
    else:
        print(
            f"trials {totals['trials']}, acknowledged {totals['acknowledged']}, "
            f"user turns lost {totals['user_turns_lost']}, replies lost {totals['replies_lost']}"
        )


if __name__ == "__main__":
    main()

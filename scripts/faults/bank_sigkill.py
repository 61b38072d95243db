"""SIGKILL `orcamem serve` while a client saves Memory Bank memories; count what survived.

Issue 11 item 5. Each trial starts `orcamem serve` on a free loopback port with a fresh
ORCA_HOME (the default bank: $ORCA_HOME/bank on main, whatever the tree under test does by
default), lets a client thread POST memories one after another, SIGKILLs the server at a seeded
random moment, restarts it on the same home and lists the profile. Every memory acknowledged
with 201 must be there after the restart (lost = 0); a memory saved but not acknowledged (the
kill cut the response) may be there too, and is counted.
"""

from __future__ import annotations

import http.client
import json
import random
import tempfile
import threading
import time
from pathlib import Path

from _harness import Orcamem, free_port, parser, report, sigkill

PROFILE = "faults"
ROUTE = f"/api/profiles/{PROFILE}/memories"


class Saver(threading.Thread):
    """POSTs memories until the server goes away; records what was sent and acknowledged."""

    def __init__(self, port: int, prefix: str) -> None:
        super().__init__(daemon=True)
        self.port, self.prefix = port, prefix
        self.sent: list[str] = []
        self.acked: list[str] = []
        self.other: list[int] = []  # statuses other than 201 (none expected)
        self.first_ack = threading.Event()

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        body = {"content": ""}
        while True:
            content = f"{self.prefix} fact {len(self.sent)}"
            body["content"] = content
            self.sent.append(content)
            try:
                conn.request("POST", ROUTE, json.dumps(body), {"content-type": "application/json"})
                response = conn.getresponse()
                response.read()
            except (OSError, http.client.HTTPException):
                return  # the server died: this one is sent, not acknowledged
            if response.status == 201:
                self.acked.append(content)
                self.first_ack.set()
            else:
                self.other.append(response.status)


def serve(cli: Orcamem, home: Path) -> tuple:
    """Start `orcamem serve` and wait until it answers; the process and its port."""
    port = free_port()
    proc = cli.start("serve", "--db", str(home / "memory.db"), "--port", str(port))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"orcamem serve exited {proc.returncode}: {proc.stderr.read()}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", f"{ROUTE}?limit=1")
            if conn.getresponse().status == 200:
                return proc, port
        except OSError:
            time.sleep(0.05)
    sigkill(proc)
    raise SystemExit("orcamem serve did not answer within 60 s")


def listed(port: int) -> set[str]:
    """Every memory of the profile, page by page."""
    found: set[str] = set()
    offset: int | None = 0
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    while offset is not None:
        conn.request("GET", f"{ROUTE}?limit=1000&offset={offset}")
        page = json.loads(conn.getresponse().read())
        found.update(m["rawInput"] for m in page["memories"])
        offset = page.get("nextOffset")
    return found


def _parses(path: Path) -> bool:
    try:
        json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return False
    return True


def trial(args, rng: random.Random, n: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="orcamem-bank-") as tmp:
        home = Path(tmp)
        (home / "profiles.json").write_text(json.dumps([{"name": PROFILE, "tools": ["@memory"]}]))
        cli = Orcamem(args, home)
        proc, port = serve(cli, home)
        saver = Saver(port, f"trial {n}")
        saver.start()
        if not saver.first_ack.wait(30):
            raise SystemExit("no memory was acknowledged within 30 s")
        time.sleep(rng.uniform(0, args.window))
        sigkill(proc)
        saver.join(60)
        err = proc.stderr.read()
        proc, port = serve(cli, home)
        try:
            present = listed(port)
        finally:
            sigkill(proc)
            err += proc.stderr.read()
        torn = [f for f in home.glob("bank/**/*.json") if not _parses(f)]
        acked = set(saver.acked)
        unacked = set(saver.sent) - acked
        return {
            "sent": len(saver.sent),
            "acknowledged": len(acked),
            "lost": len(acked - present),
            "unacked_present": len(unacked & present),
            "unacked_absent": len(unacked - present),
            "unexpected": len(present - set(saver.sent)),
            "partial": len(torn),
            "other_status": len(saver.other),
            "tracebacks": int("Traceback (most recent call last)" in err),
        }


def main() -> None:
    p = parser(__doc__.splitlines()[0], trials=20)
    p.add_argument("--window", type=float, default=3.0, help="kill within this many seconds")
    args = p.parse_args()
    rng = random.Random(args.seed)
    runs = [trial(args, rng, n) for n in range(args.trials)]
    total = {key: sum(r[key] for r in runs) for key in runs[0]} if runs else {}
    counts = {
        "trials": len(runs),
        **total,
        "spins": None,  # nothing here loops: a server that does not answer stops the run
        "trials_with_loss": sum(r["lost"] > 0 for r in runs),
    }
    summary = (
        f"bank_sigkill: {len(runs)} trials, {total.get('sent', 0)} sent, "
        f"{total.get('acknowledged', 0)} acknowledged (201), {total.get('lost', 0)} lost after "
        f"restart (in {counts['trials_with_loss']} trials), {total.get('unacked_present', 0)} "
        f"unacknowledged but present, {total.get('unexpected', 0)} unexpected, "
        f"{total.get('partial', 0)} torn objects, "
        f"{total.get('tracebacks', 0)} tracebacks"
    )
    report(args, summary, counts)


if __name__ == "__main__":
    main()

"""SIGKILL `orcamem sleep` mid-batch until a batch fails, then check the next sleep stops.

Issue 11 items 1 and 2. Each trial imports a few hundred episodes into a fresh database and
runs `orcamem sleep` again and again, killing it (SIGKILL, a seeded random delay after a
consolidation job is seen running) while it holds a batch. The first kill that leaves a batch
leased by the dead process is followed by one `orcamem sleep`: it must return and say that a
lease holds the batch (item 2), not "nothing to do". Between kills the dead worker's lease is
aged in the database, which stands in for waiting out its 120 s lease; the kill on a batch's
last attempt makes the job fail. Then a final `orcamem sleep` (killed at --timeout if it
spins) must return, report the failed batch (exit 1) and use little CPU (item 1);
`orcamem sleep --retry-failed` must consolidate what is left; no episode may be lost, and no
kill may leave part of a batch written (a memory cited from an episode still pending).
"""

from __future__ import annotations

import random
import sqlite3
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from _harness import Orcamem, parser, query, report, scalar, sigkill, write_export

ALIVE = "2001-01-01T00:00:00Z"  # a lease expiring later than this was taken by a live claim
AGED = "2000-01-01T00:00:00.000000Z"

RUNNING = (
    "SELECT id, attempts, max_attempts FROM jobs WHERE kind = 'consolidate' "
    "AND status = 'running' AND lease_expires_at > ?"
)
PENDING = (
    "SELECT count(*) FROM episodes WHERE id > "
    "coalesce((SELECT last_episode_id FROM consolidation_progress WHERE space = 'default'), 0)"
)
# A memory cited from a line of an episode above the watermark: a batch written in part.
PARTIAL = (
    "SELECT count(*) FROM memory_citations c JOIN lines l ON l.id = c.line_id WHERE "
    "l.episode_id > coalesce((SELECT last_episode_id FROM consolidation_progress "
    "WHERE space = 'default'), 0)"
)


def kill_mid_batch(cli: Orcamem, db: Path, rng: random.Random, jitter: float) -> tuple | None:
    """Run `orcamem sleep`, SIGKILL it once a job runs; the job its dead worker still holds."""
    proc = cli.start("sleep", "--db", str(db))
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        while proc.poll() is None:
            if conn.execute(RUNNING, (ALIVE,)).fetchone():
                time.sleep(rng.uniform(0, jitter))
                break
            time.sleep(0.0005)
    finally:
        conn.close()
    if sigkill(proc) is not None:
        return None  # it finished on its own
    held = query(db, RUNNING, (ALIVE,))
    return held[0] if held else None


def age_leases(db: Path) -> None:
    """Let the dead worker's lease run out, as 120 s of waiting would."""
    conn = sqlite3.connect(db, timeout=30)
    with conn:
        conn.execute("UPDATE jobs SET lease_expires_at = ? WHERE status = 'running'", (AGED,))
    conn.close()


def trial(args, rng: random.Random, retry_flag: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="orcamem-sleep-") as tmp:
        home = Path(tmp)
        cli, db, source = Orcamem(args, home), home / "memory.db", home / "episodes.jsonl"
        write_export(source, args.episodes, rng.randrange(2**32))
        added = cli.run("import", str(source), "--db", str(db))
        if added.code != 0:
            raise SystemExit(f"import failed: {added.last_line()}")
        before = scalar(db, "SELECT count(*) FROM episodes")
        out: dict = {"acknowledged": before, "kills": 0, "partial": False, "calls": [added]}
        held = None
        for _ in range(args.max_runs):
            held = kill_mid_batch(cli, db, rng, args.jitter)
            if held is None:
                if scalar(db, PENDING) == 0:
                    break  # everything got consolidated between kills
                continue
            out["kills"] += 1
            out["partial"] |= scalar(db, PARTIAL) > 0
            if "lease" not in out:  # item 2: a dead worker's live lease holds the batch
                out["lease"] = cli.run("sleep", "--db", str(db), timeout=args.timeout)
                out["calls"].append(out["lease"])
            age_leases(db)
            if held[1] >= held[2]:
                break
        out["failed_reached"] = held is not None and held[1] >= held[2]
        out["final"] = cli.run("sleep", "--db", str(db), timeout=args.timeout)
        out["again"] = cli.run("sleep", "--db", str(db), timeout=args.timeout)
        out["calls"] += [out["final"], out["again"]]
        if retry_flag:
            out["retry"] = cli.run("sleep", "--db", str(db), "--retry-failed", timeout=args.timeout)
            out["calls"].append(out["retry"])
        out["pending_after"] = scalar(db, PENDING)
        out["lost"] = before - scalar(db, "SELECT count(*) FROM episodes")
        return out


def reported_failed(call) -> bool:
    return call.code == 1 and "failed" in call.out and "--retry-failed" in call.out


def after_failure(name: str, calls: list) -> dict:
    """How the sleeps after a batch failed ended: returned, exit codes, reported, CPU, text."""
    cpu = [c.cpu for c in calls] or [0.0]
    return {
        f"{name}_returned": sum(not c.timed_out for c in calls),
        f"{name}_exit_codes": dict(Counter(str(c.code) for c in calls)),
        f"{name}_reported_failed": sum(reported_failed(c) for c in calls),
        f"{name}_cpu_s_max": round(max(cpu), 2),
        f"{name}_cpu_s_median": round(statistics.median(cpu), 2),
        f"{name}_messages": sorted({" ".join(c.out.split())[-160:] for c in calls}),
    }


def main() -> None:
    p = parser(__doc__.splitlines()[0], trials=8)
    p.add_argument("--episodes", type=int, default=400, help="episodes imported per trial")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds before a sleep spins")
    p.add_argument("--jitter", type=float, default=0.004, help="kill within this many seconds")
    p.add_argument("--max-runs", type=int, default=40, help="kill attempts per trial at most")
    args = p.parse_args()
    rng = random.Random(args.seed)
    probe = Orcamem(args, Path(tempfile.gettempdir())).run("sleep", "--help")
    retry_flag = "--retry-failed" in probe.out
    runs = [trial(args, rng, retry_flag) for _ in range(args.trials)]
    reached = [r for r in runs if r["failed_reached"]]
    leases = [r["lease"] for r in runs if "lease" in r]
    retried = [r for r in reached if "retry" in r]
    counts = {
        "trials": len(runs),
        "acknowledged": sum(r["acknowledged"] for r in runs),
        "lost": sum(r["lost"] for r in runs),
        "partial": sum(r["partial"] for r in runs),
        "tracebacks": sum(c.traceback for r in runs for c in r["calls"]),
        "spins": sum(r[c].timed_out for r in reached for c in ("final", "again")),
        "kills": sum(r["kills"] for r in runs),
        "failed_batch_reached": len(reached),
        **after_failure("final", [r["final"] for r in reached]),
        **after_failure("again", [r["again"] for r in reached]),
        "lease_checks": len(leases),
        "lease_reported": sum("leased by another worker" in c.out for c in leases),
        "lease_said_nothing_to_do": sum("nothing to do" in c.out for c in leases),
        "lease_exit_codes": dict(Counter(str(c.code) for c in leases)),
        "retry_flag": retry_flag,
        "retry_exit_codes": dict(Counter(str(r["retry"].code) for r in retried)),
        "retry_consolidated_all": sum(r["pending_after"] == 0 for r in retried),
    }
    n = len(reached)
    summary = (
        f"sleep_sigkill: {counts['trials']} trials, {counts['kills']} kills, failed batch in "
        f"{n}; first sleep after it: returned {counts['final_returned']}/{n}, reported it "
        f"{counts['final_reported_failed']}/{n}, CPU max {counts['final_cpu_s_max']} s; second: "
        f"returned {counts['again_returned']}/{n}, reported it "
        f"{counts['again_reported_failed']}/{n}, CPU max {counts['again_cpu_s_max']} s; "
        f"spins {counts['spins']}; dead lease reported {counts['lease_reported']}/{len(leases)}; "
        f"retry consolidated {counts['retry_consolidated_all']}/{len(retried)}; lost "
        f"{counts['lost']}/{counts['acknowledged']}, partial {counts['partial']}, "
        f"tracebacks {counts['tracebacks']}"
    )
    report(args, summary, counts)


if __name__ == "__main__":
    main()

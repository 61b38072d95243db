"""SIGKILL `orcamem import` mid-write, and import damaged exports: all or nothing, never a trace.

Issue 11 item 7. Setup: a space of a few thousand episodes (and the memories `orcamem sleep`
derives from them) is exported with `orcamem export`. Kill trials: the export is imported into
a fresh database and the import is SIGKILLed after a seeded random delay within the time a
whole import takes; the target must then hold none or all of the export's episodes and
memories, and a second import must complete. Mutation trials: --mutations copies of a smaller
export, each damaged once (a flipped bit, a dropped field, a value of the wrong type, a
truncated line), are imported into a copy of a database that already has data; each must
either exit 2 with a one-line error and leave the database exactly as it was, or exit 0 and
import every episode of the file. None may print a traceback.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import sqlite3
import tempfile
import time
from collections import Counter
from pathlib import Path

from _harness import Orcamem, parser, report, sigkill, write_export

COUNTS = "SELECT (SELECT count(*) FROM episodes), (SELECT count(*) FROM memories)"


def counts(db: Path) -> tuple[int, int]:
    if not db.exists():
        return (0, 0)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return tuple(conn.execute(COUNTS).fetchone())
    except sqlite3.OperationalError:  # killed before the schema was there
        return (0, 0)
    finally:
        conn.close()


def fingerprint(db: Path) -> dict[str, str]:
    """A digest of every table's rows (what a partial import would change)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {
            t: hashlib.sha256(
                repr(conn.execute(f'SELECT * FROM "{t}"').fetchall()).encode()
            ).hexdigest()
            for t in tables
        }
    finally:
        conn.close()


def exported(cli: Orcamem, home: Path, name: str, episodes: int, seed: int) -> Path:
    """Import generated turns into a database, consolidate them, and export the space."""
    source, db, out = home / f"{name}.gen.jsonl", home / f"{name}.db", home / f"{name}.jsonl"
    write_export(source, episodes, seed)
    for step in (
        ("import", str(source), "--db", str(db)),
        ("sleep", "--db", str(db)),
        ("export", "--db", str(db), "-o", str(out)),
    ):
        done = cli.run(*step)
        if done.code != 0:
            raise SystemExit(f"orcamem {step[0]} failed: {done.last_line()}")
    return out


# -- kill trials -------------------------------------------------------------------------------


def kill_trial(cli: Orcamem, export: Path, full: tuple, window: float, rng, tmp: Path) -> dict:
    target = Path(tempfile.mkdtemp(dir=tmp)) / "target.db"
    proc = cli.start("import", str(export), "--db", str(target))
    time.sleep(rng.uniform(0, window))
    wal = target.with_name(target.name + "-wal")
    writing = wal.exists() and wal.stat().st_size > 0
    finished = sigkill(proc) is not None
    after_kill = counts(target)
    second = cli.run("import", str(export), "--db", str(target))
    complete = second.code == 0 and counts(target) == full
    shutil.rmtree(target.parent)
    return {
        "finished": finished,
        "writing": writing,
        "after_kill": after_kill,
        "second": second,
        "complete": complete,
    }


# -- mutation trials ---------------------------------------------------------------------------


def mutate(lines: list[str], rng: random.Random) -> tuple[str, list[str]]:
    """One damage of one line: flip a bit, drop a field, a wrong type, or truncate it."""
    lines = list(lines)
    n = rng.randrange(len(lines))
    kind = rng.choice(["flip", "drop", "type", "truncate"])
    if kind == "flip":
        raw = bytearray(lines[n].encode("utf-8"))
        i = rng.randrange(len(raw))
        raw[i] ^= 1 << rng.randrange(8)
        lines[n] = raw.decode("utf-8", "surrogateescape")
    elif kind == "truncate":
        lines[n] = lines[n][: rng.randrange(len(lines[n]))]
    else:
        record = json.loads(lines[n])
        key = rng.choice(sorted(record))
        if kind == "drop":
            del record[key]
        else:
            record[key] = _wrong(record[key], rng)
        lines[n] = json.dumps(record)
    return kind, lines


def _wrong(value, rng: random.Random):
    """A value of another JSON type than ``value``."""
    choices = [17, -1, 2.5, "x", "", None, True, [], {}, [1, "a"], {"a": 1}]
    return rng.choice([c for c in choices if type(c) is not type(value)])


def episodes_in(lines: list[str]) -> int:
    n = 0
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        n += isinstance(record, dict) and record.get("type") == "episode"
    return n


def mutation_trial(cli: Orcamem, lines: list[str], base: Path, rng, tmp: Path) -> dict:
    kind, damaged = mutate(lines, rng)
    work = Path(tempfile.mkdtemp(dir=tmp))
    path, target = work / "damaged.jsonl", work / "target.db"
    path.write_bytes("\n".join(damaged).encode("utf-8", "surrogateescape") + b"\n")
    shutil.copy(base, target)
    before, episodes = fingerprint(target), counts(target)[0]
    done = cli.run("import", str(path), "--db", str(target))
    after = fingerprint(target)
    changed = sorted(t for t in after.keys() | before.keys() if after.get(t) != before.get(t))
    added = counts(target)[0] - episodes
    shutil.rmtree(work)
    err = [line for line in done.err.splitlines() if line.strip()]
    return {
        "kind": kind,
        "code": done.code,
        "one_line": done.code == 2 and len(err) == 1,
        "partial": done.code != 0 and bool(changed),
        "changed": changed,
        "short": done.code == 0 and added != episodes_in(damaged),
        "traceback": done.traceback,
        "timed_out": done.timed_out,
        "error": (err[-1] if done.traceback else err[0])[:200] if err else "",
    }


def outcome(kill: dict, full: tuple) -> str:
    """What the SIGKILL left: none (while the write was under way or before), all, partial."""
    if kill["finished"]:
        return "finished"
    if kill["after_kill"] == (0, 0):
        return "none_mid_write" if kill["writing"] else "none"
    return "all" if kill["after_kill"] == full else "partial"


def main() -> None:
    p = parser(__doc__.splitlines()[0], trials=20)
    p.add_argument("--episodes", type=int, default=3000, help="episodes in the killed import")
    p.add_argument("--mutations", type=int, default=300, help="damaged exports to import")
    p.add_argument("--mutation-episodes", type=int, default=100, help="episodes a damaged one")
    args = p.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="orcamem-import-") as tmp:
        home = Path(tmp)
        cli = Orcamem(args, home)
        export = exported(cli, home, "big", args.episodes, rng.randrange(2**32))
        full = counts(home / "big.db")
        clean = cli.run("import", str(export), "--db", str(home / "clean.db"))
        kills = [
            kill_trial(cli, export, full, clean.seconds, rng, home) for _ in range(args.trials)
        ]
        small = exported(cli, home, "small", args.mutation_episodes, rng.randrange(2**32))
        exported(cli, home, "base", 50, rng.randrange(2**32))  # the data already there
        lines = small.read_text(encoding="utf-8").splitlines()
        base = home / "base.db"
        damaged = [mutation_trial(cli, lines, base, rng, home) for _ in range(args.mutations)]
    outcomes = Counter(outcome(k, full) for k in kills)
    counts_ = {
        "trials": len(kills),
        "export": {"episodes": full[0], "memories": full[1], "import_s": round(clean.seconds, 2)},
        "acknowledged": sum(k["second"].code == 0 for k in kills),
        "kill_outcomes": dict(outcomes),
        "lost": sum(not k["complete"] for k in kills),
        "mutations": len(damaged),
        "mutation_kinds": dict(Counter(d["kind"] for d in damaged)),
        "mutation_exit_codes": dict(Counter(str(d["code"]) for d in damaged)),
        "exit2_one_line": sum(d["one_line"] for d in damaged),
        "accepted_short": sum(d["short"] for d in damaged),
        "partial": outcomes["partial"] + sum(d["partial"] for d in damaged),
        "partial_after_kill": outcomes["partial"],
        "partial_mutations": sum(d["partial"] for d in damaged),
        "tracebacks": sum(k["second"].traceback for k in kills)
        + sum(d["traceback"] for d in damaged),
        "spins": sum(k["second"].timed_out for k in kills) + sum(d["timed_out"] for d in damaged),
        "sample_errors": sorted({d["error"] for d in damaged if d["error"]})[:8],
        "traceback_samples": sorted({d["error"] for d in damaged if d["traceback"]})[:5],
        "partial_samples": [
            {k: d[k] for k in ("kind", "code", "error", "changed")} for d in damaged if d["partial"]
        ][:5],
    }
    summary = (
        f"import_sigkill: {len(kills)} kills of a {full[0]}-episode import: "
        f"{outcomes['none'] + outcomes['none_mid_write']} none ({outcomes['none_mid_write']} "
        f"killed while its -wal file grew), {outcomes['all']} all, {outcomes['partial']} partial, "
        f"{outcomes['finished']} finished first; second import complete "
        f"{len(kills) - counts_['lost']}/{len(kills)}; {len(damaged)} damaged exports: "
        f"{counts_['exit2_one_line']} exit 2 one-line, exit codes {counts_['mutation_exit_codes']}, "
        f"{counts_['partial_mutations']} partial, {counts_['accepted_short']} accepted short, "
        f"{counts_['tracebacks']} tracebacks"
    )
    report(args, summary, counts_)


if __name__ == "__main__":
    main()

"""The CPU one search costs, and every search's hits, on a 10k synthetic space and on LoCoMo.

    python scripts/search_cpu.py LOCOMO_JSON [--dump HITS.json]
    python scripts/search_cpu.py --diff BEFORE.json AFTER.json
    python scripts/search_cpu.py --pair LOCOMO_JSON SRC_A SRC_B [ROUNDS]

Builds both corpora in a temporary directory on a frozen clock (the latency bench's 10,000
turns, ``bench.runs.load_turns``; the LoCoMo samples as ``bench locomo`` loads them), then runs
300 synthetic searches (200 plain, 50 filtered to a session, 50 to a role) and the 786 LoCoMo
dev questions, each timed with ``time.process_time`` (CPU of every thread of the process, not
wall time: the machine is shared). Prints the mean and p50 CPU ms per search and the load, as
JSON; ``--dump`` writes each search's hit ids and scores (rounded to 1e-9) for ``--diff``,
which counts the searches whose hits differ (a speed-up must leave it at 0). ``--pair`` runs
two checkouts' ``src`` side by side in two worker processes, each search on one right after
the other (the order alternating), ``ROUNDS`` times (default 3), and keeps each search's least
CPU: on a loaded machine only such pairs tell two versions apart. A plain script, not a test:
run it pinned (``OMP_NUM_THREADS=1``).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from orcamem import Memory
from orcamem._kernel.clock import FrozenClock
from orcamem.bench import runs

NOW = "2027-01-01T00:00:00+00:00"
SEARCHES = 200


def _synthetic(db: Path) -> list[tuple[str, str, dict | None]]:
    texts = runs._Texts(runs._vocabulary())
    with Memory(db, space="bench", clock=FrozenClock(NOW)) as mem:
        runs.load_turns(mem, texts, 10_000, None)
    questions = [texts.question() for _ in range(SEARCHES)]
    return [
        *(("bench", q, None) for q in questions),
        *(("bench", q, {"session": f"s{i % 500}"}) for i, q in enumerate(questions[:50])),
        *(("bench", q, {"role": "user"}) for q in questions[:50]),
    ]


def _locomo(db: Path, path: str) -> list[tuple[str, str, dict | None]]:
    jobs: list[tuple[str, str, dict | None]] = []
    with Memory(db, clock=FrozenClock(NOW)) as mem:
        for index, sample in enumerate(runs.load_locomo(path)):
            space = f"locomo-{index}"
            mem.add_many(runs._turns(sample), space=space)
            jobs += [
                (space, str(qa["question"]), None)
                for qa in sample["qa"]
                if qa.get("category") != 5 and runs._evidence(qa)
            ]
    return jobs


def _worker(locomo: str) -> None:
    """Build both corpora, then run the search whose index each stdin line names."""
    with tempfile.TemporaryDirectory(prefix="orcamem-search-cpu-") as tmp:
        synthetic, dialogue = Path(tmp) / "synthetic.db", Path(tmp) / "locomo.db"
        jobs = [(synthetic, *job) for job in _synthetic(synthetic)]
        jobs += [(dialogue, *job) for job in _locomo(dialogue, locomo)]
        mems = {
            db: Memory(db, space="bench", clock=FrozenClock(NOW)) for db in (synthetic, dialogue)
        }
        for db, space, query, _ in (jobs[0], jobs[-1]):
            mems[db].search(query, space=space)  # load the indexes once
        print(len(jobs), flush=True)
        for line in sys.stdin:
            db, space, query, where = jobs[int(line)]
            began = time.process_time()
            mems[db].search(query, space=space, filters=where, top_k=10)
            print((time.process_time() - began) * 1000, flush=True)
        for mem in mems.values():
            mem.close()


def pair(locomo: str, sources: tuple[str, str], rounds: int) -> dict[str, object]:
    """Per corpus, each checkout's mean and p50 of each search's least CPU over ``rounds``,
    and the median per-search ratio of the second to the first."""
    workers = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", locomo],
            env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": source},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for source in sources
    ]
    (count,) = {int(worker.stdout.readline()) for worker in workers}  # the same searches
    spent: list[list[list[float]]] = [[[] for _ in range(count)] for _ in workers]
    load = os.getloadavg()
    for round_ in range(rounds):
        for index in range(count):
            for side in (0, 1) if (index + round_) % 2 == 0 else (1, 0):
                workers[side].stdin.write(f"{index}\n")
                workers[side].stdin.flush()
                spent[side][index].append(float(workers[side].stdout.readline()))
    for worker in workers:
        worker.stdin.close()
        worker.wait()
    least = [[min(times) for times in side] for side in spent]
    report: dict[str, object] = {}
    for name, part in (("synthetic_10k", slice(0, 300)), ("locomo", slice(300, count))):
        report[name] = {
            **{
                source: {
                    "mean_ms": round(statistics.mean(side[part]), 3),
                    "p50_ms": round(statistics.median(side[part]), 3),
                }
                for source, side in zip(sources, least, strict=True)
            },
            "median_ratio": round(
                statistics.median(
                    b / a for a, b in zip(least[0][part], least[1][part], strict=True)
                ),
                3,
            ),
        }
    return {**report, "rounds": rounds, "load": [load, os.getloadavg()]}


def _run(db: Path, jobs: list[tuple[str, str, dict | None]]) -> tuple[list, dict[str, float]]:
    hits, spent = [], []
    with Memory(db, space="bench", clock=FrozenClock(NOW)) as mem:
        mem.search(jobs[0][1], space=jobs[0][0])  # load the indexes once, as a server would
        for space, query, where in jobs:
            began = time.process_time()
            result = mem.search(query, space=space, filters=where, top_k=10)
            spent.append((time.process_time() - began) * 1000)
            hits.append([[hit.id, round(hit.score, 9)] for hit in result.hits])
    spent.sort()
    cpu = {"mean_ms": round(sum(spent) / len(spent), 3), "p50_ms": round(spent[len(spent) // 2], 3)}
    return hits, {**cpu, "searches": len(spent)}


def main(locomo: str, dump: str | None) -> dict[str, object]:
    report: dict[str, object] = {}
    found: dict[str, list] = {}
    with tempfile.TemporaryDirectory(prefix="orcamem-search-cpu-") as tmp:
        for name, build in (("synthetic_10k", _synthetic), ("locomo", _locomo)):
            db = Path(tmp) / f"{name}.db"
            jobs = build(db) if name == "synthetic_10k" else build(db, locomo)
            found[name], report[name] = _run(db, jobs)
    if dump:
        Path(dump).write_text(json.dumps(found))
    return {**report, "load": os.getloadavg()}


def diff(before: str, after: str) -> dict[str, int]:
    """Per corpus, the searches whose hits (ids, scores) differ."""
    old, new = json.loads(Path(before).read_text()), json.loads(Path(after).read_text())
    return {name: sum(a != b for a, b in zip(old[name], new[name], strict=True)) for name in old}


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--diff"] and len(args) == 3:
        print(json.dumps(diff(args[1], args[2])))
    elif args[:1] == ["--worker"] and len(args) == 2:
        _worker(args[1])
    elif args[:1] == ["--pair"] and len(args) in (4, 5):
        print(json.dumps(pair(args[1], (args[2], args[3]), int(args[4]) if len(args) == 5 else 3)))
    elif len(args) in (1, 3) and (len(args) == 1 or args[1] == "--dump"):
        print(json.dumps(main(args[0], args[2] if len(args) == 3 else None)))
    else:
        sys.exit(__doc__)

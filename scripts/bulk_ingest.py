"""Bulk ingest at scale: ``add_many`` of N synthetic turns, then ``orcamem import`` of their export.

    PYTHONPATH=src python scripts/bulk_ingest.py 100000 [addmany|both] [workdir]
        [--db postgresql://…] [--one-call]

``add_many`` goes through the ``bench latency`` loader (``bench.runs.load_turns``: the bench's
synthetic turns, 20 to a session, in calls of 50,000, each of ten 5,000-turn batches, the next
prepared in a child process while the caller writes one; with ``--one-call`` the same turns in
a single call);
the import runs the real CLI in a child
process on the export of that space. Both go to fresh SQLite files in a temporary directory,
or with ``--db`` to that database, which must hold neither space ``bench`` (``add_many``) nor
``bench-import`` (the import). Prints one JSON line: wall seconds, turns/s and CPU seconds of
each (this process's, and the import's child; a server's are not counted), with the 1-minute
load at the start and the end (compare two checkouts by alternating them in one session; the
CPU seconds move less with the machine's load).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from orcamem import Memory
from orcamem.bench.runs import _Texts, _vocabulary, load_turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int)
    parser.add_argument("what", nargs="?", choices=["addmany", "both"], default="both")
    parser.add_argument("workdir", nargs="?")
    parser.add_argument("--db", help="a database URL instead of fresh SQLite files")
    parser.add_argument("--one-call", action="store_true", help="add_many all turns at once")
    args = parser.parse_args()
    n = args.n
    work = Path(tempfile.mkdtemp(dir=args.workdir))
    source = args.db or str(work / "a.db")
    target = [
        "--db",
        args.db or str(work / "b.db"),
        "--space",
        "bench-import" if args.db else "bench",
    ]
    result: dict[str, float] = {"n": n, "load_start": round(os.getloadavg()[0], 2)}
    try:
        with Memory(source, space="bench") as mem:
            mem.embedder.embed(["warm up"])
            cpu = time.process_time()
            if args.one_call:
                texts = _Texts(_vocabulary()).sentences(n)
                items = [
                    {"text": t, "kind": "turn", "role": "user" if i % 2 else "assistant",
                     "session_id": f"s{i // 20}"}
                    for i, t in enumerate(texts)
                ]  # fmt: skip
                cpu = time.process_time()
                began = time.perf_counter()
                mem.add_many(items)
                seconds = time.perf_counter() - began
            else:
                seconds = load_turns(mem, _Texts(_vocabulary()), n, None)
            result["add_many_s"] = round(seconds, 2)
            result["add_many_tps"] = round(n / seconds)
            result["add_many_cpu_s"] = round(time.process_time() - cpu, 2)
            if args.what == "both":
                with open(work / "export.jsonl", "w", encoding="utf-8") as out:
                    mem.export(out, space="bench")
        if args.what == "both":
            command = [sys.executable, "-m", "orcamem", "import", str(work / "export.jsonl")]
            began = time.perf_counter()
            subprocess.run([*command, *target], check=True, stdout=subprocess.DEVNULL)
            seconds = time.perf_counter() - began
            usage = resource.getrusage(resource.RUSAGE_CHILDREN)
            result["import_s"] = round(seconds, 2)
            result["import_tps"] = round(n / seconds)
            result["import_cpu_s"] = round(usage.ru_utime + usage.ru_stime, 2)
    finally:
        shutil.rmtree(work)
    result["load_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()

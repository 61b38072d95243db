"""LoCoMo turn recall for several configs over files built once, and where the misses rank.

    python scripts/locomo_sweep.py LOCOMO_JSON [SPEC ...] [--cache DIR] [--misses] [--reweigh]

SPEC is ``-`` (the defaults) or ``section.name=value,…`` (``signals.activation_weight=0.3``).
Conversation *i* is searched in a file holding conversations 0…*i*, as ``orcamem bench
locomo`` builds its one file (BM25's statistics are the file's), so the defaults give the
bench's whole-set numbers; each line prints any@5 / any@10 / all@10 / session any@5 for the
whole set, the tune half (0-2) and the check half (3-4: here ranked beside 0-2, unlike
``bench locomo --conversations 3-4``). ``--cache`` keeps the files for the next run.

``--misses``: for the defaults, the questions with no evidence turn in the top 10, by
category and by where their best evidence turn ranks among the first 50 hits.
``--reweigh``: how far re-weighting the score's parts (a hit's ``breakdown``) can take the
first 50 hits: a seeded hill climb of one multiplier a part on the tune half, then the same
weights on the check half. A plain script, not a test.
"""

from __future__ import annotations

import argparse
import ast
import random
import shutil
import statistics
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path

from orcamem import Config, Memory
from orcamem.bench.runs import _evidence, _score, _turns, load_locomo

TOP = 50


def build(samples: list, cache: Path) -> list[Path]:
    """File *i* holds conversations 0…*i* (each made from the one before)."""
    files = []
    for index, sample in enumerate(samples):
        path = cache / f"locomo-0-{index}.db"
        if not path.exists():
            if files:
                shutil.copy(files[-1], path)
            with Memory(path) as mem:
                mem.add_many(_turns(sample), space=f"locomo-{index}")
        files.append(path)
    return files


def config_of(spec: str) -> Config:
    config = Config()
    for part in filter(None, ("" if spec == "-" else spec).split(",")):
        key, value = part.split("=", 1)
        section, name = key.split(".")
        current = getattr(config, section)
        config = config.with_(**{section: replace(current, **{name: ast.literal_eval(value)})})
    return config


def searched(samples: list, files: list[Path], config: Config) -> list[dict]:
    """Each scored question: its conversation, category, evidence and first hits."""
    found = []
    for index, (sample, path) in enumerate(zip(samples, files, strict=True)):
        with Memory(path, config=config) as mem:
            for qa in sample["qa"]:
                if qa.get("category") == 5 or not _evidence(qa):
                    continue
                result = mem.search(str(qa["question"]), space=f"locomo-{index}", top_k=TOP)
                hits = [(hit.turn_id, dict(hit.breakdown)) for hit in result.hits if hit.turn_id]
                found.append(
                    {"conv": index, "qa": qa, "evidence": set(_evidence(qa)), "hits": hits}
                )
    return found


def recall_of(rows: list[dict]) -> str:
    scored = [_score(row["qa"], [turn for turn, _ in row["hits"]], 0) for row in rows]
    keys = ("recall_any@5", "recall_any@10", "recall_all@10", "session_recall_any@5")
    return " / ".join(f"{statistics.fmean(s[key] for s in scored):.3f}" for key in keys)


def halves(rows: list[dict]) -> str:
    tune = [row for row in rows if row["conv"] <= 2]
    check = [row for row in rows if row["conv"] >= 3]
    return f"all {recall_of(rows)} | 0-2 {recall_of(tune)} | 3-4 {recall_of(check)}"


def misses(rows: list[dict]) -> None:
    missed = [row for row in rows if not row["evidence"] & {turn for turn, _ in row["hits"][:10]}]
    where: Counter = Counter()
    for row in missed:
        ranks = [i for i, (turn, _) in enumerate(row["hits"]) if turn in row["evidence"]]
        where["11-20" if ranks and ranks[0] < 20 else "21-50" if ranks else f">{TOP}"] += 1
    print(f"{len(missed)} of {len(rows)} questions miss at 10")
    print("by category:", dict(sorted(Counter(row["qa"]["category"] for row in missed).items())))
    print("best evidence rank:", dict(sorted(where.items())))


def reweighed(rows: list[dict], weights: dict[str, float]) -> list[dict]:
    out = []
    for row in rows:
        hits = sorted(
            row["hits"], key=lambda hit: -sum(weights.get(k, 1.0) * v for k, v in hit[1].items())
        )
        out.append({**row, "hits": hits})
    return out


def reweigh(rows: list[dict], rounds: int = 300) -> None:
    tune = [row for row in rows if row["conv"] <= 2]
    check = [row for row in rows if row["conv"] >= 3]
    parts = sorted({key for row in rows for _, parts in row["hits"] for key in parts})

    def gain(weights: dict[str, float]) -> float:
        scored = [
            _score(row["qa"], [turn for turn, _ in row["hits"]], 0)
            for row in reweighed(tune, weights)
        ]
        return sum(
            s["recall_any@10"] + 0.5 * (s["recall_any@5"] + s["recall_all@10"]) for s in scored
        )

    rng = random.Random(1)
    best: dict[str, float] = {}
    best_gain = gain(best)
    for _ in range(rounds):
        trial = dict(best)
        part = rng.choice(parts)
        trial[part] = trial.get(part, 1.0) * rng.choice([0.5, 0.7, 0.85, 1.2, 1.4, 2.0])
        if (trial_gain := gain(trial)) > best_gain:
            best, best_gain = trial, trial_gain
    print("weights:", {key: round(value, 3) for key, value in sorted(best.items())})
    print(f"0-2 {recall_of(tune)} -> {recall_of(reweighed(tune, best))}")
    print(f"3-4 {recall_of(check)} -> {recall_of(reweighed(check, best))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("data")
    parser.add_argument("specs", nargs="*", default=["-"])
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--misses", action="store_true")
    parser.add_argument("--reweigh", action="store_true")
    args = parser.parse_args()
    samples = load_locomo(args.data)
    with tempfile.TemporaryDirectory() as scratch:
        cache = args.cache or Path(scratch)
        cache.mkdir(parents=True, exist_ok=True)
        files = build(samples, cache)
        for spec in args.specs:
            print(f"{spec:40s} {halves(searched(samples, files, config_of(spec)))}", flush=True)
        if args.misses or args.reweigh:
            rows = searched(samples, files, Config())
            if args.misses:
                misses(rows)
            if args.reweigh:
                reweigh(rows)


if __name__ == "__main__":
    main()

"""Benchmarks: latency at several sizes, and retrieval quality on the LoCoMo format.

Numbers are medians and percentiles of many calls in one process, reported with the
machine's load; compare ratios within one run (2 noisy cores).
"""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from .._kernel.config import Config
from .._kernel.embed import DEFAULT_MODEL_DIR, Embedder, make_embedder
from .._kernel.text import STOPWORDS, estimate_tokens
from ..engine.memory import Memory
from ..errors import InvalidInputError

__all__ = ["latency", "load_locomo", "locomo", "machine"]

Progress = Callable[[str, int, int], None]
KS = (1, 5, 10, 20)


def machine() -> dict[str, Any]:
    """Where a number was measured: cores, load, Python, platform."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    return {
        "cores": os.cpu_count(),
        "load_1m": round(load[0], 2),
        "load_5m": round(load[1], 2),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
    }


def _percentile(samples: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples), q)) if samples else 0.0


def _vocabulary() -> list[str]:
    """Whole English words from the shipped model's WordPiece vocabulary, for synthetic text."""
    tokenizer = json.loads((DEFAULT_MODEL_DIR / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = tokenizer["model"]["vocab"]
    return sorted(w for w in vocab if w.isalpha() and w.isascii() and len(w) > 2)[:20000]


class _Texts:
    """Deterministic synthetic English-like text, made in vectorised batches.

    Words follow Zipf's law over the whole language: stop words take about half the tokens
    (as in real chat), and content words continue the Zipf curve *after* the stop words
    (rank r gets weight 1/(r + len(STOPWORDS))). Without that shift the most common
    "content" word would occur in every tenth token and every OR query would match most
    of the corpus, which no real memory looks like. A batch draws all its words with a few
    numpy calls (a word per call made a million turns take ~45 minutes); the content words
    said are kept as one integer array, so a question can ask about any sentence made.
    """

    def __init__(self, vocab: list[str], seed: int = 7) -> None:
        self._rng = np.random.default_rng(seed)
        content = [word for word in vocab if word not in STOPWORDS]
        stopwords = sorted(word for word in STOPWORDS if "'" not in word and len(word) > 1)
        ranks = np.arange(1, len(content) + 1)
        weights = 1.0 / (ranks + len(STOPWORDS))
        self._cdf = np.cumsum(weights / weights.sum())
        order = self._rng.permutation(len(content))
        self._words = np.array([content[i] for i in order] + stopwords, dtype=object)
        self._content_count = len(content)
        self._stop_count = len(stopwords)
        self._said: list[np.ndarray] = []  # content word ids of the sentences made, per batch
        self._said_ends: list[np.ndarray] = []  # where each sentence's ids end, per batch

    def _content(self, count: int) -> np.ndarray:
        """``count`` content word ids drawn by the Zipf weights."""
        picks = np.searchsorted(self._cdf, self._rng.random(count), side="right")
        return np.minimum(picks, self._content_count - 1)

    def sentences(self, count: int) -> list[str]:
        """``count`` statements of 8–23 words each, about half of them stop words."""
        lengths = self._rng.integers(8, 24, count)
        total = int(lengths.sum())
        is_content = self._rng.random(total) < 0.5
        ids = np.where(
            is_content,
            self._content(total),
            self._content_count + self._rng.integers(0, self._stop_count, total),
        )
        ends = np.cumsum(lengths)
        said = np.cumsum(is_content)[ends - 1]  # content words up to each sentence's end
        self._said.append(ids[is_content])
        self._said_ends.append(said)
        words = self._words[ids].tolist()
        starts = ends - lengths
        return [
            " ".join(words[a:b]).capitalize() + "."
            for a, b in zip(starts.tolist(), ends.tolist(), strict=True)
        ]

    def sentence(self) -> str:
        """One statement (see :meth:`sentences`)."""
        return self.sentences(1)[0]

    def question(self) -> str:
        """A question with 2–5 content words of one sentence said, the way a user asks about
        something in the past: recall has evidence to find (one turn holds all of it, as the
        per-item gate wants), so it never abstains and the full path is timed."""
        opener = str(self._rng.choice(["what did", "when did", "where is", "who was", "how do"]))
        count = int(self._rng.integers(2, 6))
        said = self._said_words()
        picks = said[self._rng.integers(0, len(said), count)] if len(said) else self._content(count)
        content = " ".join(self._words[picks].tolist())
        return f"{opener.capitalize()} {content}?"

    def _said_words(self) -> np.ndarray:
        """The content word ids of one sentence made so far, chosen at random."""
        made = sum(len(ends) for ends in self._said_ends)
        if not made:
            return np.zeros(0, dtype=np.int64)
        pick = int(self._rng.integers(0, made))
        for ids, ends in zip(self._said, self._said_ends, strict=True):
            if pick < len(ends):
                begin = int(ends[pick - 1]) if pick else 0
                return ids[begin : int(ends[pick])]
            pick -= len(ends)
        raise AssertionError("unreachable: pick < made")


_LOAD_CALL = 50_000


def load_turns(mem: Memory, texts: _Texts, records: int, progress: Progress | None) -> float:
    """``records`` synthetic turns (user and assistant alternating, 20 to a session) added in
    ``add_many`` calls of 50,000, as an importer would: the corpus every latency bench starts
    from (a call of several batches prepares the next in a child process, ``engine.ahead``;
    calls of one batch would not). Returns the seconds spent in ``add_many`` alone (making up
    the texts is not ingest)."""
    seconds = 0.0
    for start in range(0, records, _LOAD_CALL):
        batch = texts.sentences(min(_LOAD_CALL, records - start))
        items = [
            {
                "text": text,
                "kind": "turn",
                "role": "user" if i % 2 else "assistant",
                "session_id": f"s{i // 20}",
            }
            for i, text in enumerate(batch, start=start)
        ]
        began = time.perf_counter()
        mem.add_many(items, progress=progress and _loading(progress, start, records))
        seconds += time.perf_counter() - began
    return seconds


def _loading(progress: Progress, start: int, records: int) -> Callable[[int, int], None]:
    """``add_many``'s progress within a call as the loader's over all ``records``."""
    return lambda done, _: progress(f"{records:,} records: loading", start + done, records)


@contextmanager
def _database(db: str | None, name: str, spaces: Sequence[str], workdir: str | None):
    """Where a bench runs: a fresh SQLite file in a temporary directory, or ``db`` (a
    ``postgresql://`` URL, say), which must not hold the spaces the bench writes."""
    if db is None:
        with tempfile.TemporaryDirectory(dir=workdir) as tmp:
            yield Path(tmp) / name
        return
    with Memory(db) as mem:
        taken = sorted(set(mem.spaces()) & set(spaces))
    if taken:
        raise InvalidInputError(
            f"{mem.path} already has the space(s) {', '.join(taken[:3])} this bench writes: "
            "pass an empty database"
        )
    yield db


def latency(
    records: Sequence[int],
    *,
    queries: int = 200,
    adds: int = 200,
    config: Config | None = None,
    embedder: Embedder | str | None = None,
    progress: Progress | None = None,
    workdir: str | None = None,
    db: str | None = None,
) -> dict[str, Any]:
    """Bulk-load N synthetic turns per size, then time single adds, searches and contexts
    (``embedder``: a spec or an ``Embedder``, default the shipped static model). Searches are
    timed once the in-process indexes are loaded (``Memory.warm``; its seconds are
    ``warm_s``): on PostgreSQL a third of a 100,000-line run had searched beside the
    postings' background load, and its p50 measured that load.

    ``db``: run on that database (one space ``bench-N`` a size) instead of a fresh SQLite file.

    Returns:
        ``{"records": {"10000": {"add_p50_ms": …, …}}, "embedder": id, "machine": {…}}``
    """
    model = make_embedder(embedder)  # loaded once for every size
    results: dict[str, Any] = {}
    for size in records:
        if size < 1:
            raise InvalidInputError(f"records={size}: use a positive number")
        space = "bench" if db is None else f"bench-{size}"
        with _database(db, "bench.db", [space], workdir) as path:
            with Memory(path, space=space, config=config, embedder=model) as mem:
                texts = _Texts(_vocabulary())
                ingest_seconds = load_turns(mem, texts, size, progress)
                add_ms = []
                for i in range(adds):
                    text = texts.sentence()
                    begin = time.perf_counter()
                    mem.observe("user", text, session_id=f"live{i // 20}")
                    add_ms.append((time.perf_counter() - begin) * 1000)
                search_ms, context_ms = [], []
                filtered_ms: dict[str, list[float]] = {"session": [], "role": []}
                questions = [texts.question() for _ in range(queries)]
                began = time.perf_counter()
                mem.warm()  # the in-process indexes loaded, as a server that has run a while
                warm_s = time.perf_counter() - began
                mem.search(questions[0])
                for i, question in enumerate(questions):
                    begin = time.perf_counter()
                    mem.search(question)
                    search_ms.append((time.perf_counter() - begin) * 1000)
                    for name, where in _filters(i, size).items():
                        begin = time.perf_counter()
                        mem.search(question, filters=where)
                        filtered_ms[name].append((time.perf_counter() - begin) * 1000)
                    begin = time.perf_counter()
                    mem.build_context([{"role": "user", "content": question}])
                    context_ms.append((time.perf_counter() - begin) * 1000)
                    if progress and i % 20 == 0:
                        progress(f"{size:,} records: querying", i, queries)
                size_bytes = mem.stats()["size_bytes"]
            pruning = _pruning(path, space, model, questions, config or Config())
            results[str(size)] = {
                "add_p50_ms": round(_percentile(add_ms, 50), 3),
                "add_p95_ms": round(_percentile(add_ms, 95), 3),
                "search_p50_ms": round(_percentile(search_ms, 50), 3),
                "search_p95_ms": round(_percentile(search_ms, 95), 3),
                **{
                    f"search_{name}_filter_p50_ms": round(_percentile(samples, 50), 3)
                    for name, samples in filtered_ms.items()
                },
                "build_context_p50_ms": round(_percentile(context_ms, 50), 3),
                "build_context_p95_ms": round(_percentile(context_ms, 95), 3),
                "ingest_turns_per_s": round(size / ingest_seconds, 1),
                "warm_s": round(warm_s, 3),
                "db_mb": round(size_bytes / 1e6, 2),
                **pruning,
            }
    return {"records": results, "embedder": model.id, "machine": machine()}


def _filters(i: int, size: int) -> dict[str, dict[str, str]]:
    """The filtered searches each question also runs: one loaded session (20 turns, a narrow
    filter) and one role (half the space, a wide one)."""
    return {"session": {"session": f"s{i % max(1, size // 20)}"}, "role": {"role": "user"}}


def _pruning(
    path: Path | str, space: str, model: Embedder, questions: Sequence[str], config: Config
) -> dict[str, float]:
    """The same searches with vector pruning forced on and off, on the same file, unfiltered
    and with the role filter of :func:`_filters` (half the space): the p50 and p95 of each
    and ``pruned_recall`` (``pruned_role_recall``), the share of the exact search's hits the
    pruned one returns (the default config prunes only above ``storage.pruning_threshold``)."""
    found: dict[str, list[list[str]]] = {}
    timed: dict[str, list[float]] = {}
    for name, storage in (
        ("exact", config.storage.with_(vector_pruning=False)),
        ("pruned", config.storage.with_(vector_pruning=True, pruning_threshold=0)),
    ):
        with Memory(path, space=space, config=config.with_(storage=storage), embedder=model) as mem:
            mem.warm()
            mem.search(questions[0])  # and fit the projection once
            for kind, where in (("", None), ("role_", {"role": "user"})):
                timings, hits = [], []
                for question in questions:
                    begin = time.perf_counter()
                    result = mem.search(question, filters=where)
                    timings.append((time.perf_counter() - begin) * 1000)
                    hits.append([hit.id for hit in result.hits])
                found[kind + name], timed[kind + name] = hits, timings
    out: dict[str, float] = {}
    for kind in ("", "role_"):
        for name in ("exact", "pruned"):
            out[f"search_{kind}{name}_p50_ms"] = round(_percentile(timed[kind + name], 50), 3)
            out[f"search_{kind}{name}_p95_ms"] = round(_percentile(timed[kind + name], 95), 3)
        shared = [
            len(set(exact) & set(pruned)) / len(exact)
            for exact, pruned in zip(found[kind + "exact"], found[kind + "pruned"], strict=True)
            if exact
        ]
        out[f"pruned_{kind}recall"] = round(statistics.fmean(shared), 4) if shared else 1.0
    return out


# -- LoCoMo -------------------------------------------------------------------------------

_SESSION_RE = re.compile(r"session_(\d+)$")


def _session_time(text: str) -> str | None:
    """``1:56 pm on 8 May, 2023`` → ISO time (None when unparseable)."""
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=timezone.utc).isoformat()
        except ValueError:
            continue
    return None


def load_locomo(path: str | Path) -> list[dict[str, Any]]:
    """Read a LoCoMo JSON file and check its shape, with a clear error if it is not one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"cannot read LoCoMo data from {path}: {exc}") from None
    if not isinstance(data, list) or not all(
        isinstance(s, dict) and "conversation" in s and "qa" in s for s in data
    ):
        raise InvalidInputError(
            f"{path} is not in the LoCoMo format: expected a list of samples "
            "with 'conversation' and 'qa'"
        )
    for number, sample in enumerate(data):
        for key, turns in sample["conversation"].items():
            if not _SESSION_RE.match(key):
                continue
            if not isinstance(turns, list) or not all(
                isinstance(t, dict) and isinstance(t.get("text"), str) and t.get("dia_id")
                for t in turns
            ):
                raise InvalidInputError(
                    f"{path}: sample {number} {key} must be a list of turns with 'speaker', "
                    "'dia_id' and 'text'"
                )
    if not any(q.get("category") != 5 and _evidence(q) for s in data for q in s["qa"]):
        raise InvalidInputError(
            f"{path} has no question to score (all are category 5 or lack evidence)"
        )
    return data


def _turns(sample: dict[str, Any]) -> list[dict[str, Any]]:
    conversation = sample["conversation"]
    items = []
    sessions = sorted(
        (int(m.group(1)), key) for key in conversation if (m := _SESSION_RE.match(key))
    )
    for number, key in sessions:
        when = _session_time(str(conversation.get(f"{key}_date_time", "")))
        for turn in conversation[key]:
            meta = {}
            if turn.get("blip_caption"):
                meta["caption"] = turn["blip_caption"]
            text = turn["text"]
            if not text.strip() and meta:
                text = f"[shares an image: {meta['caption']}]"
            items.append(
                {
                    "text": text,
                    "kind": "turn",
                    "role": turn["speaker"],
                    "session_id": f"session_{number}",
                    "turn_id": turn["dia_id"],
                    "occurred_at": when,
                    "meta": meta or None,
                }
            )
    return items


def _evidence(qa: dict[str, Any]) -> list[str]:
    ids: list[str] = []
    for item in qa.get("evidence", []):
        ids.extend(part for part in re.split(r"[;,\s]+", str(item)) if part.startswith("D"))
    return ids


def _session_of(dia_id: str) -> str:
    return dia_id.split(":", 1)[0]


def locomo(
    path: str | Path,
    *,
    config: Config | None = None,
    embedder: Embedder | str | None = None,
    progress: Progress | None = None,
    limit_samples: int | None = None,
    conversations: set[int] | None = None,
    workdir: str | None = None,
    db: str | None = None,
) -> dict[str, Any]:
    """Turn- and session-level recall on LoCoMo (category 5, adversarial, excluded).

    ``db``: run on that database (empty of ``locomo-N`` spaces) instead of a fresh SQLite file.
    ``conversations`` keeps only those sample indexes (tune on 0-2, check on 3-4);
    ``embedder`` is a spec or an ``Embedder`` (default the shipped static model).

    Returns:
        ``{"overall": {"recall_any@10": …, …}, "by_category": {"1": {…}}, "embedder": id,
        "machine": {…}}``
    """
    samples = [
        (index, sample)
        for index, sample in enumerate(load_locomo(path)[:limit_samples])
        if conversations is None or index in conversations
    ]
    if not samples:
        raise InvalidInputError(
            f"conversations {sorted(conversations or ())} match no sample of {path}: "
            "indexes start at 0"
        )
    rows: list[dict[str, Any]] = []
    search_ms: list[float] = []
    spaces = [f"locomo-{index}" for index in range(len(samples))]
    with (
        _database(db, "locomo.db", spaces, workdir) as target,
        Memory(target, config=config, embedder=embedder) as mem,
    ):
        for position, (index, sample) in enumerate(samples):
            space = f"locomo-{index}"
            mem.add_many(_turns(sample), space=space)
            questions = [qa for qa in sample["qa"] if qa.get("category") != 5 and _evidence(qa)]
            for number, qa in enumerate(questions):
                begin = time.perf_counter()
                result = mem.search(str(qa["question"]), space=space, top_k=max(KS))
                search_ms.append((time.perf_counter() - begin) * 1000)
                ranked = [hit.turn_id for hit in result.hits if hit.turn_id]
                block = mem.recall(str(qa["question"]), space=space)
                rows.append(_score(qa, ranked, estimate_tokens(block) if block else 0))
                if progress and number % 25 == 0:
                    progress(f"sample {position + 1}/{len(samples)}", number, len(questions))
    by_category: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_category.setdefault(str(row["category"]), []).append(row)
    return {
        "overall": _aggregate(rows),
        "by_category": {key: _aggregate(value) for key, value in sorted(by_category.items())},
        "search_p50_ms": round(_percentile(search_ms, 50), 3),
        "embedder": mem.embedder.id,
        "machine": machine(),
    }


def ablated(config: Config, name: str) -> Config:
    """``config`` with the switch ``name`` (``enable_…`` of any section) flipped: one
    ablation (a switch on by default runs off, one off by default runs on)."""
    for section in fields(config):
        current = getattr(config, section.name)
        if name.startswith("enable_") and isinstance(getattr(current, name, None), bool):
            return config.with_(
                **{section.name: replace(current, **{name: not getattr(current, name)})}
            )
    switches = sorted(
        f.name
        for section in fields(config)
        for f in fields(getattr(config, section.name))
        if f.name.startswith("enable_")
    )
    raise InvalidInputError(f"--ablate {name!r} is no switch: use one of {', '.join(switches)}")


def _score(qa: dict[str, Any], ranked: list[str], tokens: int) -> dict[str, Any]:
    evidence = set(_evidence(qa))
    row: dict[str, Any] = {"category": qa.get("category"), "tokens": tokens}
    for k in KS:
        top = set(ranked[:k])
        row[f"recall_any@{k}"] = float(bool(evidence & top))
        row[f"recall_all@{k}"] = float(evidence <= top)
    sessions = {_session_of(t) for t in ranked[:5]}
    row["session_recall_any@5"] = float(bool({_session_of(e) for e in evidence} & sessions))
    return row


def _aggregate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    keys = [f"recall_{kind}@{k}" for kind in ("any", "all") for k in KS]
    keys.append("session_recall_any@5")
    summary: dict[str, Any] = {
        key: round(statistics.fmean(r[key] for r in rows), 4) for key in keys
    }
    summary["context_tokens"] = round(statistics.fmean(r["tokens"] for r in rows), 1)
    summary["questions"] = len(rows)
    return summary


# -- consolidation ------------------------------------------------------------------------


def load_fixtures(path: str | Path | None = None) -> list[dict[str, Any]]:
    """The consolidation fixtures (default: the set shipped in ``orcamem/samples``)."""
    from importlib import resources

    try:
        if path is None:
            text = resources.files("orcamem").joinpath("samples/consolidation.json").read_text()
        else:
            text = Path(path).read_text(encoding="utf-8")
        conversations = json.loads(text)["conversations"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InvalidInputError(f"cannot read consolidation fixtures from {path}: {exc}") from None
    return conversations


def _key(kind: str, attribute: str | None, value: str | None, condition: str | None) -> tuple:
    from .._kernel.claims.verify import normal_words

    return (
        kind,
        attribute or "",
        tuple(normal_words(value or "")),
        tuple(normal_words(condition or "")),
    )


def consolidate(
    *, model: Any = None, fixtures: str | Path | None = None, progress: Progress | None = None
) -> dict[str, Any]:
    """Precision and recall of the memories a consolidator keeps on the fixture set.

    Each conversation goes into a fresh in-memory database; ``sleep`` runs after every
    session (so later sessions can supersede earlier ones). Precision: active memories that
    match an expected one / all active memories; recall: expected memories found / expected;
    supersession: expected outdated values that ended inactive with ``superseded_by`` set.

    Returns:
        ``{"extractor": …, "precision": …, "recall": …, "supersession": …,
        "p50_s_per_episode": …, "conversations": [{…}], "machine": {…}}``
    """
    from .._kernel.clock import FrozenClock
    from .consolidation import replay

    conversations = load_fixtures(fixtures)
    kept = matched = expected_total = superseded_ok = superseded_total = 0
    per_episode: list[float] = []
    rows = []
    extractor = ""
    for number, conversation in enumerate(conversations):
        clock = FrozenClock(conversation["sessions"][0]["at"])
        with Memory(":memory:", clock=clock, model=model) as mem:
            sessions = [(s["at"], [tuple(t) for t in s["turns"]]) for s in conversation["sessions"]]
            seconds, used = replay(mem, clock, sessions)
            per_episode += seconds
            extractor = extractor or ",".join(used)
            active = mem.facts()
            history = mem.facts(include_history=True)
        want = {_key(*item) for item in conversation["active"]}
        got = {_key(m.category, m.attribute, m.value, m.condition) for m in active}
        hits = want & got
        outdated = {
            (m.attribute, tuple(_key("", "", m.value, "")[2]))
            for m in history
            if not m.active and m.superseded_by
        }
        wanted_outdated = {(a, _key("", "", v, "")[2]) for a, v in conversation["superseded"]}
        kept += len(got)
        matched += len(hits)
        expected_total += len(want)
        superseded_ok += len(wanted_outdated & outdated)
        superseded_total += len(wanted_outdated)
        rows.append(
            {
                "name": conversation["name"],
                "expected": len(want),
                "kept": len(got),
                "matched": len(hits),
                "missing": sorted(" ".join(map(str, k[:2])) for k in want - got),
                "unexpected": sorted(
                    f"{m.category} {m.attribute}: {m.value}"
                    for m in active
                    if _key(m.category, m.attribute, m.value, m.condition) not in want
                ),
            }
        )
        if progress:
            progress("consolidate", number + 1, len(conversations))
    return {
        "extractor": extractor,
        "precision": round(matched / kept, 4) if kept else 1.0,
        "recall": round(matched / expected_total, 4) if expected_total else 1.0,
        "supersession": round(superseded_ok / superseded_total, 4) if superseded_total else 1.0,
        "p50_s_per_episode": round(_percentile(per_episode, 50), 6),
        "conversations": rows,
        "machine": machine(),
    }

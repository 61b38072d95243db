"""The labelled consolidation set and its per-kind score (issue 14).

``data/consolidation.jsonl`` holds invented conversations (user and assistant, and two named
people), one per line, each turn labelled with the durable items a careful reader would keep
from it (an empty list: a non-fact). Each conversation is in the ``tune`` or ``held-out``
part; patterns are tuned on the first and reported on both.

Matching, defined once (``matches``), on *content words* (lower case, punctuation and a plural
``s`` dropped, stop words and never/don't/please/avoid left out):

- **state** (state, preference and fact memories without a condition): same entity, same
  attribute, same content words of the value;
- **exception**: the same, and the same content words of the condition;
- **event**: same entity; the label's value words all said in the memory's value (and its
  day, when the label gives one);
- **rule**: same polarity (forbidden or always); the label's words all said in the rule;
- **supersession**: a memory of the entity and attribute with the old value ended inactive,
  superseded by the one with the new value.

A state label that is the old side of a supersession is not expected to stay active. Each
label and each memory is matched at most once; precision is matched memories over the
memories kept of that kind, recall matched labels over labels.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Iterable
from datetime import timedelta
from importlib import resources
from pathlib import Path
from typing import Any

from .._kernel.claims.verify import normal_words
from .._kernel.clock import FrozenClock, parse_time
from .._kernel.model import MemoryRecord
from .._kernel.text import STOPWORDS
from ..engine.consolidate.gate import rule_words
from ..engine.memory import Memory
from ..errors import InvalidInputError

__all__ = ["KINDS", "PARTS", "label_set", "replay", "score_labelled"]

KINDS = ("state", "event", "rule", "exception", "supersession")
PARTS = ("tune", "held-out", "fresh", "all")
Progress = Callable[[str, int, int], None]


def label_set(data: str | Path = "builtin", part: str = "all") -> list[dict[str, Any]]:
    """The labelled conversations of ``part`` from ``data`` (a JSONL file, or ``builtin``)."""
    if part not in PARTS:
        raise InvalidInputError(f"part {part!r}: use one of {', '.join(PARTS)}")
    try:
        if str(data) == "builtin":
            text = resources.files("orcamem.bench").joinpath("data/consolidation.jsonl")
            text = text.read_text(encoding="utf-8")
        else:
            text = Path(data).read_text(encoding="utf-8")
        conversations = [json.loads(row) for row in text.splitlines() if row.strip()]
        for conversation in conversations:
            if not isinstance(conversation["sessions"], list) or "part" not in conversation:
                raise KeyError("sessions/part")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InvalidInputError(
            f"cannot read labelled conversations from {data}: {exc} "
            "(expected JSON lines with name, part, roles and sessions; or use 'builtin')"
        ) from None
    return [c for c in conversations if part == "all" or c["part"] == part]


def replay(
    mem: Memory, clock: FrozenClock, sessions: Iterable[tuple[str, list[tuple[str, str]]]]
) -> tuple[list[float], list[str]]:
    """Observe each session's turns a minute apart from its start, then sleep a day later (so
    later sessions can supersede earlier ones); returns the seconds per consolidated episode of
    each sleep and the extractors that ran."""
    per_episode: list[float] = []
    extractors: list[str] = []
    for index, (at, turns) in enumerate(sessions):
        start = parse_time(at)
        for offset, (role, text) in enumerate(turns):
            when = (start + timedelta(minutes=offset)).isoformat()
            mem.observe(role, text, session_id=f"s{index + 1}", occurred_at=when)
        clock.advance(days=1)
        begin = time.perf_counter()
        report = mem.sleep()
        if report.episodes:
            per_episode.append((time.perf_counter() - begin) / report.episodes)
        extractors += [name for name in report.extractors if name not in extractors]
    return per_episode, extractors


def _words(text: str | None) -> tuple[str, ...]:
    return tuple(w for w in normal_words(text or "") if w not in STOPWORDS)


def _attribute(text: str | None) -> tuple[str, ...]:
    return tuple(normal_words((text or "").replace("_", " ")))


def _inhibitory(memory: MemoryRecord) -> bool:
    return memory.prohibited or (memory.attribute or "").startswith("avoid")


def _kept(memories: list[MemoryRecord]) -> dict[str, list[dict[str, Any]]]:
    """What consolidation kept, in the labels' shape, by kind."""
    by_id = {m.id: m for m in memories}
    kept: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    for m in memories:
        item = {"entity": m.entity or "user", "attribute": m.attribute, "value": m.value}
        if not m.active:
            after = by_id.get(m.superseded_by or "")
            if after is not None:
                kept["supersession"].append({**item, "old": m.value, "new": after.value})
        elif _inhibitory(m) or m.category == "rule":
            kept["rule"].append({**item, "value": m.value or m.content,
                                 "prohibited": _inhibitory(m)})  # fmt: skip
        elif m.category == "event":
            kept["event"].append({**item, "date": m.event_date})
        elif m.condition:
            kept["exception"].append({**item, "condition": m.condition})
        else:
            kept["state"].append(item)
    return kept


def matches(kind: str, label: dict[str, Any], got: dict[str, Any]) -> bool:
    """Whether a kept memory is the labelled item (the rules in the module docstring)."""
    if kind != "rule" and label["entity"] != got["entity"]:
        return False
    if kind == "rule":
        wanted = set(rule_words(label["value"])) - STOPWORDS
        return label["prohibited"] == got["prohibited"] and wanted <= set(
            rule_words(got["value"] or "")
        )
    if kind == "event":
        day = label.get("date")
        return set(_words(label["value"])) <= set(_words(got["value"])) and (
            not day or day == got["date"]
        )
    same = _attribute(label["attribute"]) == _attribute(got["attribute"])
    if kind == "supersession":
        return same and (_words(label["old"]), _words(label["new"])) == (
            _words(got["old"]),
            _words(got["new"]),
        )
    condition = kind != "exception" or _words(label["condition"]) == _words(got["condition"])
    return same and condition and _words(label["value"]) == _words(got["value"])


def _expected(conversation: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    labels = [i for s in conversation["sessions"] for t in s["turns"] for i in t["expect"]]
    old = {
        (i["entity"], _attribute(i["attribute"]), _words(i["old"]))
        for i in labels
        if i["kind"] == "supersession"
    }
    expected: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    for item in labels:
        key = (item.get("entity"), _attribute(item.get("attribute")), _words(item.get("value")))
        if item["kind"] in ("state", "exception") and key in old:
            continue
        if item not in expected[item["kind"]]:
            expected[item["kind"]].append(item)
    return expected


def _pair(kind: str, want: list[dict], got: list[dict]) -> tuple[list[dict], list[dict]]:
    """Labels left unmatched and memories left unmatched, one-to-one, first fit."""
    free = list(got)
    missing = []
    for label in want:
        hit = next((g for g in free if matches(kind, label, g)), None)
        if hit is None:
            missing.append(label)
        else:
            free.remove(hit)
    return missing, free


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def score_labelled(
    *,
    data: str | Path = "builtin",
    part: str = "all",
    model: Any = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Precision and recall per kind of one consolidator on the labelled set.

    Returns:
        ``{"extractor": …, "part": …, "turns": …, "kinds": {"state": {"precision", "recall",
        "expected", "kept", "matched"}, …}, "overall": {…}, "conversations": [{…}], …}``
    """
    conversations = label_set(data, part)
    totals = {kind: {"expected": 0, "kept": 0, "matched": 0} for kind in KINDS}
    rows: list[dict[str, Any]] = []
    per_episode: list[float] = []
    extractors: list[str] = []
    turns = 0
    for number, conversation in enumerate(conversations):
        roles = conversation.get("roles", {})
        sessions = [
            (s["at"], [(roles.get(t["speaker"], t["speaker"]), t["text"]) for t in s["turns"]])
            for s in conversation["sessions"]
        ]
        turns += sum(len(s[1]) for s in sessions)
        clock = FrozenClock(sessions[0][0])
        with Memory(":memory:", clock=clock, model=model) as mem:
            seconds, used = replay(mem, clock, sessions)
            memories = mem.facts(include_history=True)
        per_episode += seconds
        extractors += [name for name in used if name not in extractors]
        expected, kept = _expected(conversation), _kept(memories)
        row: dict[str, Any] = {"name": conversation["name"], "part": conversation["part"],
                               "missing": [], "unexpected": []}  # fmt: skip
        for kind in KINDS:
            missing, extra = _pair(kind, expected[kind], kept[kind])
            totals[kind]["expected"] += len(expected[kind])
            totals[kind]["kept"] += len(kept[kind])
            totals[kind]["matched"] += len(expected[kind]) - len(missing)
            row["missing"] += [_show(kind, i) for i in missing]
            row["unexpected"] += [_show(kind, i) for i in extra]
        rows.append(row)
        if progress:
            progress("consolidate", number + 1, len(conversations))
    overall = {key: sum(t[key] for t in totals.values()) for key in ("expected", "kept", "matched")}
    return {
        "extractor": ",".join(extractors),
        "part": part,
        "conversations_scored": len(conversations),
        "turns": turns,
        "kinds": {kind: _summary(t) for kind, t in totals.items()},
        "overall": _summary(overall),
        "p50_s_per_episode": round(statistics.median(per_episode), 6) if per_episode else 0.0,
        "conversations": rows,
    }


def _summary(counts: dict[str, int]) -> dict[str, Any]:
    return {
        "precision": _ratio(counts["matched"], counts["kept"]),
        "recall": _ratio(counts["matched"], counts["expected"]),
        **counts,
    }


def _show(kind: str, item: dict[str, Any]) -> str:
    if kind == "supersession":
        return f"supersession {item['entity']}.{item['attribute']}: {item['old']} -> {item['new']}"
    if kind == "rule":
        return f"rule {'forbidden' if item['prohibited'] else 'always'}: {item['value']}"
    condition = f" | {item['condition']}" if item.get("condition") else ""
    attribute = f".{item['attribute']}" if item.get("attribute") else ""
    return f"{kind} {item['entity']}{attribute}: {item['value']}{condition}"

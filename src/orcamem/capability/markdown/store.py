"""The built-in Markdown memory store: plain files with frontmatter under ``<workspace>/memory/``.

::

    <workspace>/memory/
      entries/*.md          hot — searched by default
      archive/*.md          cold storage — reached only on purpose
      retrieval-log.jsonl   one line per retrieval

The folders are created by the first save, never by choosing the provider or searching. A
file's folder, not its frontmatter, decides whether it is archived. A memory file::

    ---
    id: 20260828T193000-a1b2c3d4
    created: 2026-08-28T19:30:00.000Z
    updated: 2026-08-28T19:30:00.000Z
    importance: 0.5
    tags: [roadmap, headroom]
    citations: 3
    last-cited: 2026-08-29T08:00:00.000Z
    ---

    Jeff runs upstream Craft stable side-by-side with Vorno, ...

Only ``id`` is required; a key with no value is omitted rather than written empty. Scoped
memories (explicit use only) add ``session:``, ``agent:`` or ``turn:``; keys this version does
not know are kept as written. A file that cannot be parsed is skipped, never fatal.

Retrieval refreshes ``last-cited`` and bumps ``citations`` of the hot memories it returns and
never touches ``updated``; archived hits are left as they are. Decay ``0.5 ** (age /
half-life)`` (see ``recall.markdown``) sends a memory below 0.25 to ``archive/``
with the mandatory cold-storage banner; that sweep runs when a memory is saved, never when one
is searched. Nothing here deletes a file.

All file access goes through :mod:`orcamem.capability.markdown.io`; this module only parses,
renders and decides.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..._kernel.clock import Clock, SystemClock, format_time, parse_time
from ..._kernel.model import validate_count, validate_id, validate_text
from ..._kernel.redact import redact
from ...errors import InvalidInputError, MarkdownParseError, StoreError, TransientError
from ...recall import markdown as scoring
from ...recall.presets import get_preset
from . import io

__all__ = [
    "BANNER_HEADLINE",
    "LOGGED_QUERY_CHARS",
    "PROVIDER_NAME",
    "SCOPE_KEYS",
    "Archived",
    "MarkdownEntry",
    "MarkdownHit",
    "MarkdownParseError",
    "MarkdownSearch",
    "MarkdownStore",
    "banner",
    "parse_entry",
    "render_entry",
    "split_banner",
]

PROVIDER_NAME = "builtin-markdown"
SCOPE_KEYS = ("session", "agent", "turn")
"""The scope layers below the user layer; an entry without any of them is unscoped (user)."""
BANNER_HEADLINE = (
    "> **⚠️ From cold storage — this was true at one time, but it may not be true now.**"
)
LOGGED_QUERY_CHARS = 500
"""The retrieval log keeps this much of a query (redacted first, so a cut cannot reveal one)."""

_KEY_ORDER = ("id", "created", "updated", "importance", "tags", "citations", "last-cited")
_TIME_KEYS = ("created", "updated", "last-cited")
_KEY_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:(.*)$")


@dataclass(frozen=True)
class MarkdownEntry:
    """One memory file, parsed. ``archived`` comes from its folder, never its frontmatter."""

    id: str
    body: str
    created: str | None = None
    updated: str | None = None
    importance: float | None = None
    tags: tuple[str, ...] = ()
    citations: int | None = None
    last_cited: str | None = None
    scope: Mapping[str, str] = field(default_factory=dict)
    """``session`` / ``agent`` / ``turn`` this memory is pinned to; empty: unscoped (user)."""
    extra: tuple[str, ...] = ()
    """Frontmatter lines of keys this version does not know, kept verbatim."""
    path: Path | None = None
    archived: bool = False

    @property
    def weight(self) -> float:
        """Importance, 0.5 (neutral) when the file does not say."""
        return 0.5 if self.importance is None else self.importance

    @property
    def text(self) -> str:
        """The content as it travels: archived with its banner (one is supplied if a hand-moved
        file lacks it), hot without a stale banner left from an earlier archiving."""
        found, rest = split_banner(self.body)
        if not self.archived:
            return rest.strip()
        if found is None:
            found = banner(None, "moved to archive/ by hand")
        return f"{found}\n\n{rest.strip()}".strip()


# -- frontmatter ------------------------------------------------------------------------------


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        if value[0] == '"':
            try:
                return str(json.loads(value))
            except ValueError as exc:
                raise MarkdownParseError(f"bad quoted value {value!r}") from exc
        return "'".join(
            value[1:-1].split("''")
        )  # YAML's '' escape; no str.replace: see the I/O test
    return value


def _flow_list(value: str) -> list[str]:
    inner = value.strip()[1:-1]
    items: list[str] = []
    current = ""
    quote = ""
    escaped = False
    for char in inner:
        if quote:
            current += char
            if escaped:
                escaped = False
            elif char == "\\" and quote == '"':
                escaped = True
            elif char == quote:
                quote = ""
            continue
        if char in "\"'" and not current.strip():
            quote = char
            current = current.strip() + char
        elif char == ",":
            items.append(current)
            current = ""
        else:
            current += char
    if quote:
        raise MarkdownParseError(f"unterminated quote in list {value!r}")
    if current.strip() or items:
        items.append(current)
    return [_unquote(item) for item in items if item.strip()]


def _tag_text(tag: str) -> str:
    if tag != tag.strip() or not tag or any(ch in tag for ch in ",[]{}\"'#:\n"):
        return json.dumps(tag, ensure_ascii=False)
    return tag


def _number(value: float) -> str:
    return repr(round(float(value), 4))


def parse_entry(text: str, *, path: Path | None = None, archived: bool = False) -> MarkdownEntry:
    """Parse a memory file.

    Raises:
        MarkdownParseError: no frontmatter, a line that is not ``key: value``, a missing
            ``id``, or a known key with a value of the wrong kind (a time that is not ISO-8601,
            importance outside 0–1, citations not a whole number ≥ 0).
    """
    lines = text.lstrip("\ufeff").split("\n")
    if not lines or lines[0].strip() != "---":
        raise MarkdownParseError("no frontmatter: the file must start with a '---' line")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise MarkdownParseError("frontmatter is not closed by a '---' line") from None
    values: dict[str, Any] = {}
    extra: list[str] = []
    current: str | None = None
    for raw in lines[1:end]:
        line = raw.rstrip("\r")
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):  # a hand-written comment: kept, as unknown keys are
            extra.append(line)
            continue
        if stripped.startswith("- ") or stripped == "-":
            if current is None:
                raise MarkdownParseError(f"list item outside a key: {stripped!r}")
            if current in _KEY_ORDER or current in SCOPE_KEYS:
                if current != "tags":
                    raise MarkdownParseError(f"{current} cannot be a list")
                values.setdefault("tags", []).append(_unquote(stripped[1:]))
            else:
                extra.append(line)
            continue
        found = _KEY_RE.match(stripped)
        if found is None:
            raise MarkdownParseError(f"not a 'key: value' line: {stripped!r}")
        key, value = found.group(1), found.group(2).strip()
        current = key
        if key not in _KEY_ORDER and key not in SCOPE_KEYS:
            extra.append(line)
            continue
        if not value:
            if key == "tags":
                values["tags"] = []
            continue
        if key == "tags":
            values["tags"] = (
                _flow_list(value)
                if value.startswith("[") and value.endswith("]")
                else [_unquote(value)]
            )
        else:
            values[key] = _unquote(value)
    entry_id = values.get("id")
    if not entry_id:
        raise MarkdownParseError("no id: 'id' is the one required key")
    times: dict[str, str | None] = {}
    for key in _TIME_KEYS:
        value = values.get(key)
        if value:
            try:
                parse_time(value, what=key)
            except InvalidInputError as exc:
                raise MarkdownParseError(str(exc)) from None
        times[key] = value or None
    importance = None
    if values.get("importance"):
        try:
            importance = float(values["importance"])
        except ValueError:
            raise MarkdownParseError("importance must be a number from 0 to 1") from None
        if not 0.0 <= importance <= 1.0:
            raise MarkdownParseError(f"importance {importance} is outside 0–1")
    citations = None
    if values.get("citations"):
        try:
            citations = int(values["citations"])
        except ValueError:
            raise MarkdownParseError("citations must be a whole number") from None
        if citations < 0:
            raise MarkdownParseError("citations cannot be negative")
    body = "\n".join(lines[end + 1 :])
    if body.startswith("\n"):
        body = body[1:]
    return MarkdownEntry(
        id=str(entry_id),
        body=body,
        created=times["created"],
        updated=times["updated"],
        importance=importance,
        tags=tuple(tag for tag in values.get("tags", []) if tag),
        citations=citations,
        last_cited=times["last-cited"],
        scope={key: values[key] for key in SCOPE_KEYS if values.get(key)},
        extra=tuple(extra),
        path=path,
        archived=archived,
    )


def render_entry(entry: MarkdownEntry) -> str:
    """The file text: frontmatter in the documented key order, empty keys omitted, then the body."""
    rows = [f"id: {entry.id}"]
    if entry.created:
        rows.append(f"created: {entry.created}")
    if entry.updated:
        rows.append(f"updated: {entry.updated}")
    if entry.importance is not None:
        rows.append(f"importance: {_number(entry.importance)}")
    if entry.tags:
        rows.append(f"tags: [{', '.join(_tag_text(tag) for tag in entry.tags)}]")
    if entry.citations is not None:
        rows.append(f"citations: {entry.citations}")
    if entry.last_cited:
        rows.append(f"last-cited: {entry.last_cited}")
    for key in SCOPE_KEYS:
        if entry.scope.get(key):
            rows.append(f"{key}: {_tag_text(entry.scope[key])}")
    rows.extend(entry.extra)
    body = entry.body if entry.body.endswith("\n") else entry.body + "\n"
    return "---\n" + "\n".join(rows) + "\n---\n\n" + body


# -- the cold-storage banner ------------------------------------------------------------------


def banner(archived_at: str | None, reason: str) -> str:
    """The two-line banner an archived memory carries as the first line of its body."""
    when = f"Archived {archived_at}" if archived_at else "Archived"
    return f"{BANNER_HEADLINE}\n> {when}; unverified since. Reason: {reason}."


def split_banner(body: str) -> tuple[str | None, str]:
    """``(banner, rest)`` when ``body`` starts with the cold-storage banner, else ``(None, body)``."""
    lines = body.split("\n")
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    if start >= len(lines) or lines[start].strip() != BANNER_HEADLINE:
        return None, body
    end = start + 1
    while end < len(lines) and lines[end].startswith(">"):
        end += 1
    rest = "\n".join(lines[end:]).lstrip("\n")
    return "\n".join(lines[start:end]), rest


# -- the store --------------------------------------------------------------------------------


@dataclass(frozen=True)
class MarkdownHit:
    """A memory a search kept, with why."""

    entry: MarkdownEntry
    match: scoring.Match
    decay: float
    score: float


@dataclass(frozen=True)
class MarkdownSearch:
    """What a search kept, and the counts its retrieval-log line records."""

    hits: list[MarkdownHit]
    loaded: int
    """Memory files read and parsed in the folders searched."""
    trimmed: int
    """Loaded but not kept: out of scope, under the minimum match, or past top-k."""
    skipped: list[Path]
    """Files that could not be parsed (skipped, not fatal)."""


@dataclass(frozen=True)
class Archived:
    """A memory the sweep moved to ``archive/``."""

    id: str
    path: Path
    score: float
    age_days: float


def _ms(moment: float | None) -> datetime | None:
    return None if moment is None else datetime.fromtimestamp(moment, tz=timezone.utc)


def _time(value: str | None) -> datetime | None:
    return parse_time(value) if value else None


def _in_scope(entry: MarkdownEntry, scope: Mapping[str, str]) -> bool:
    """Unscoped memories are found from every scope; a scoped one only from its own."""
    return all(scope.get(key) == value for key, value in entry.scope.items())


class MarkdownStore:
    """Memories as Markdown files in one workspace.

    Args:
        workspace: the workspace folder; memories live in ``<workspace>/memory/``.
        clock: where "now" comes from (tests pass a ``FrozenClock``).
        half_life_days: the decay half-life for an ordinary memory (``decayHalfLifeDays``).
        preset: the recall preset holding the lexical weights.

    >>> import tempfile, pathlib
    >>> store = MarkdownStore(pathlib.Path(tempfile.mkdtemp()))
    >>> entry = store.save("Our branching policy: one topic branch per plan.")
    >>> [hit.entry.id for hit in store.search("branching policy").hits] == [entry.id]
    True
    """

    def __init__(
        self,
        workspace: str | Path,
        *,
        clock: Clock | None = None,
        half_life_days: float = 60.0,
        preset: str = "markdown",
    ) -> None:
        if not half_life_days > 0:
            raise InvalidInputError(f"half_life_days={half_life_days!r}: use a positive number")
        self.workspace = Path(workspace)
        self.root = self.workspace / "memory"
        self.entries_dir = self.root / "entries"
        self.archive_dir = self.root / "archive"
        self.log_path = self.root / "retrieval-log.jsonl"
        self.clock = clock or SystemClock()
        self.half_life_days = float(half_life_days)
        self.weights = dict(get_preset(preset).weights)
        self._lock = io.lock(self.root)  # a search's refresh, a save, the sweep, the log
        io.remove_stale_temps(self.root, clock=self.clock)  # what killed writers left

    # -- reading ----------------------------------------------------------------------------

    def load(self, *, include_archived: bool = False) -> tuple[list[MarkdownEntry], list[Path]]:
        """Parse the hot files (and the archived ones); returns ``(entries, unreadable files)``."""
        entries, bad = self._scan(include_archived)
        return entries, [path for path, _ in bad]

    def _scan(self, include_archived: bool) -> tuple[list[MarkdownEntry], list[tuple[Path, str]]]:
        """The entries, and each unreadable file with the parser's reason."""
        folders = [(self.entries_dir, False)]
        if include_archived:
            folders.append((self.archive_dir, True))
        entries: list[MarkdownEntry] = []
        skipped: list[tuple[Path, str]] = []
        for folder, archived in folders:
            for path in io.list_markdown(folder):
                text = io.read_text(path)
                try:
                    if text is None:
                        raise MarkdownParseError("it cannot be read (permissions? not UTF-8?)")
                    entries.append(parse_entry(text, path=path, archived=archived))
                except MarkdownParseError as exc:
                    skipped.append((path, str(exc)))
        return entries, skipped

    def decay_of(self, entry: MarkdownEntry, now: datetime) -> tuple[float, float]:
        """``(decay score, age in days)`` of an entry at ``now``."""
        fallback = _ms(io.modified_at(entry.path)) if entry.path is not None else None
        age = scoring.age_days(
            now,
            created=_time(entry.created),
            updated=_time(entry.updated),
            last_cited=_time(entry.last_cited),
            fallback=fallback,
        )
        return scoring.decay(age, self.half_life_days, entry.weight), age

    def search(
        self,
        query: str,
        *,
        top_k: int = 5,
        include_archived: bool = False,
        scope: Mapping[str, str] | None = None,
        destination: str = "main-context",
        record: bool = True,
    ) -> MarkdownSearch:
        """Rank the memories for ``query``; refresh the hot hits and log the search.

        Args:
            query: the words to match (the user's message, verbatim, on the automatic path).
            top_k: at most this many hits.
            include_archived: also search ``archive/`` (cold storage).
            scope: the searcher's scope (``session``/``agent``/``turn``); unscoped memories
                match every scope.
            destination: recorded in the retrieval log's ``target``.
            record: refresh ``last-cited``/``citations`` and append the log line (a capability
                probe passes False). Neither happens before the first save made ``memory/``.
        """
        if not isinstance(query, str):
            raise InvalidInputError("query must be a string")
        validate_count(top_k, what="top_k", low=1, high=1000)
        wanted = dict(scope or {})
        now = self.clock.now()
        entries, skipped = self.load(include_archived=include_archived)
        words = scoring.query_terms(query)
        ranked: list[MarkdownHit] = []
        for entry in entries:
            if not _in_scope(entry, wanted):
                continue
            found = scoring.match(
                query, split_banner(entry.body)[1], entry.tags, self.weights, query_words=words
            )
            if not scoring.clears_floor(found, self.weights):
                continue
            score, _ = self.decay_of(entry, now)
            ranked.append(
                MarkdownHit(
                    entry, found, score, scoring.rank(found, score, entry.weight, self.weights)
                )
            )
        ranked.sort(key=lambda hit: (-hit.score, hit.entry.id))
        kept = ranked[:top_k]
        if record and io.exists(self.root):
            kept = self._refresh(kept, now)
            self._log(query, wanted, destination, len(entries), kept, now)
        return MarkdownSearch(kept, len(entries), len(entries) - len(kept), skipped)

    def _refresh(self, hits: list[MarkdownHit], now: datetime) -> list[MarkdownHit]:
        """Being retrieved resets the clock (hot hits only): last-cited and citations, never
        updated. Under the store's lock, across processes: a sweep or another search in a
        hook's process is never overwritten (one that holds it past the wait leaves the hits
        unrefreshed: the search still answers)."""
        try:
            with self._lock.hold():
                return [self._refreshed(hit, now) for hit in hits]
        except TransientError:
            return hits

    def _refreshed(self, hit: MarkdownHit, now: datetime) -> MarkdownHit:
        entry = hit.entry
        current = self._reread(entry) if not entry.archived else None
        if current is None:  # archived, or moved, deleted or edited into junk meanwhile
            return hit
        fresh = replace(
            current, last_cited=format_time(now, digits=3), citations=(current.citations or 0) + 1
        )
        try:
            io.replace_text(current.path, render_entry(fresh))  # type: ignore[arg-type]
        except (OSError, StoreError):
            fresh = entry  # the hit is still returned; its clock just was not reset
        return replace(hit, entry=fresh)

    def _reread(self, entry: MarkdownEntry) -> MarkdownEntry | None:
        """The entry as its file says now (under the lock: a hand edit, a sweep or a delete
        since it was loaded is respected, never overwritten or resurrected)."""
        if entry.path is None:
            return None
        text = io.read_text(entry.path)
        if text is None:
            return None
        try:
            current = parse_entry(text, path=entry.path, archived=entry.archived)
        except MarkdownParseError:
            return None
        return current if current.id == entry.id else None

    def _log(
        self,
        query: str,
        scope: Mapping[str, str],
        destination: str,
        loaded: int,
        kept: Sequence[MarkdownHit],
        now: datetime,
    ) -> None:
        """One JSON line: when, the query, counts and the kept ids. Never memory content, nor a
        secret the query held (redacted), nor more than ``LOGGED_QUERY_CHARS`` of it: a pasted
        log or key in a prompt must not land in clear in a file beside the project."""
        line = {
            "ts": format_time(now, digits=3),
            "query": redact(query[: LOGGED_QUERY_CHARS + 200]).text[:LOGGED_QUERY_CHARS],
            "provider": PROVIDER_NAME,
            "target": {"scope": dict(scope), "destination": destination},
            "loaded": loaded,
            "trimmed": loaded - len(kept),
            "kept": [hit.entry.id for hit in kept],
        }
        try:
            with self._lock.hold():
                io.append_line(
                    self.log_path, json.dumps(line, ensure_ascii=False, separators=(",", ":"))
                )
        except (OSError, StoreError, TransientError):
            pass  # a log that cannot be written must not take the search down

    # -- writing ----------------------------------------------------------------------------

    def new_id(self, now: datetime) -> str:
        """``20260828T193000-a1b2c3d4``: the save time and eight random hex digits."""
        return now.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(4)

    def save(
        self,
        text: str,
        *,
        importance: float = 0.5,
        tags: Sequence[str] = (),
        scope: Mapping[str, str] | None = None,
    ) -> MarkdownEntry:
        """Write a new memory to ``entries/`` (creating the folders on the first save), then
        sweep decayed memories into ``archive/``.

        Raises:
            InvalidInputError: blank text, importance outside 0–1, blank tags, an unknown
                scope key.
        """
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("a memory needs some text")
        validate_text(text, what="text")
        if (
            isinstance(importance, bool)
            or not isinstance(importance, (int, float))
            or not (0.0 <= float(importance) <= 1.0)
        ):
            raise InvalidInputError(f"importance={importance!r}: use a number from 0 to 1")
        if isinstance(tags, str) or not all(isinstance(t, str) and t.strip() for t in tags):
            raise InvalidInputError("tags must be a list of non-blank strings")
        for tag in tags:
            validate_id(tag, what="tag")
        pinned = {key: value for key, value in (scope or {}).items() if value}
        unknown = sorted(set(pinned) - set(SCOPE_KEYS))
        if unknown:
            raise InvalidInputError(f"unknown scope key(s) {unknown}: use {list(SCOPE_KEYS)}")
        now = self.clock.now()
        with self._lock.hold():
            io.ensure_dirs(self.entries_dir, self.archive_dir)
            entry_id = self.new_id(now)
            path = self.entries_dir / f"{entry_id}.md"
            while io.exists(path):  # same second, same random suffix: astronomically rare
                entry_id = self.new_id(now)
                path = self.entries_dir / f"{entry_id}.md"
            entry = MarkdownEntry(
                id=entry_id,
                body=text.strip() + "\n",
                created=format_time(now, digits=3),
                updated=format_time(now, digits=3),
                importance=float(importance),
                tags=tuple(tag.strip() for tag in tags),
                scope={key: str(value) for key, value in pinned.items()},
                path=path,
            )
            io.write_new(path, render_entry(entry))
        self.sweep()
        return entry

    def sweep(self) -> list[Archived]:
        """Move every hot memory whose decay fell below 0.25 (and is not pinned) to
        ``archive/`` with the banner. Runs on save; never on search."""
        now = self.clock.now()
        moved: list[Archived] = []
        with self._lock.hold():  # loaded under it: a memory cited meanwhile is seen as cited
            entries, _ = self.load()
            for entry in entries:
                score, age = self.decay_of(entry, now)
                if not scoring.is_archive_candidate(score, entry.weight) or entry.path is None:
                    continue
                reason = f"decayed out (score {score:.3f} after {int(age)}d)"
                _, rest = split_banner(entry.body)
                body = f"{banner(format_time(now, digits=3), reason)}\n\n{rest.lstrip()}"
                try:
                    target = io.move_into(entry.path, self.archive_dir)
                    io.replace_text(target, render_entry(replace(entry, body=body)))
                except (OSError, StoreError):
                    continue
                moved.append(Archived(entry.id, target, score, age))
        return moved

    def summary(self) -> dict[str, Any]:
        """Counts for ``orcamem doctor``: hot and archived memories, unreadable files."""
        hot, bad_hot = self.load()
        everything, bad_all = self._scan(include_archived=True)
        return {
            "folder": str(self.root),
            "exists": io.exists(self.root),
            "entries": len(hot),
            "archived": len(everything) - len(hot),
            "unreadable": [str(path) for path, _ in bad_all],
            "unreadable_why": {str(path): why for path, why in bad_all},
            "unreadable_hot": len(bad_hot),
        }

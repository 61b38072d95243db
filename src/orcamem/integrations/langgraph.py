"""LangGraph's long-term memory store (``BaseStore``) backed by orcamem.

A LangGraph namespace is an orcamem **space** and an item a ``document`` episode in it, so a
store item is recalled by the same hybrid pipeline (BM25 + vectors + signals) as any memory:

- namespace ``("users", "alice")`` is space ``lg:users.alice``: the labels joined by ``.``
  (LangGraph forbids ``.`` in a label), each label's characters other than ``A-Z a-z 0-9 _ -``
  written ``@`` and two hex digits per UTF-8 byte (``"a b"`` -> ``a@20b``). The mapping is
  reversible (``space_of`` / ``namespace_of``); a namespace whose space name would pass 128
  characters is refused;
- item key ``k`` is the episode's ``session_id``: ``lg-`` + the first 32 hex digits of
  SHA-256(k) + ``-a`` or ``-b`` (an indexed look-up, whatever characters the key holds); the
  key and the value are kept whole in the episode's ``meta``; the episode's text is what is
  searched: the item's ``index`` fields (LangGraph's JSON paths; ``$``, the default, is the
  whole value as JSON);
- ``put`` appends the new version in the slot (``a``/``b``) the current one is not in, then
  deletes the older versions: a crash between the two leaves both and the newest wins, and the
  new version is never indexed with the old one's words (ingest lends an episode the previous
  text of its session as lexical context; the other slot is empty). It keeps the first
  version's ``created_at``; ``delete`` removes every version;
- ``search(query=...)`` ranks by ``Memory.search`` over each namespace under the prefix: the
  items recall finds evidence for come first, best first, scored by their best line; the other
  items that pass the filter follow, newest first, with ``score=None`` (recall abstains where
  nothing bears on the query; LangGraph's stores list every item, ranked). Keep only
  ``item.score is not None`` for what the query matched. ``filter`` applies LangGraph's operators (``$eq $ne $gt $gte $lt
  $lte``, nested dicts, exact lists) to the value (order operators compare numbers, numeric
  strings too, as numbers);
- TTL: ``ttl`` minutes from the last write (or read, when ``refresh_on_read``: the read writes
  a new version with the later expiry). An expired item is never returned; ``sweep_ttl``
  deletes them.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from .._kernel.clock import format_time, parse_time
from .._kernel.ids import sha256
from .._kernel.model import Episode, storable_text
from .._kernel.names import SPACE
from ..engine.memory import Memory
from ..errors import InvalidInputError, NotFoundError

__all__ = ["OrcamemStore", "namespace_of", "space_of"]

PREFIX = "lg"
_KEEP = re.compile(r"[A-Za-z0-9_-]")
_ESCAPE = re.compile(r"(?:@[0-9a-f]{2})+")
_LABEL = re.compile(r"(?:[A-Za-z0-9_-]|@[0-9a-f]{2})+")
"""A label as :func:`space_of` writes it: a space of another shape is no namespace of the
prefix (``lg:tenant1:users`` is not the default store's ``('tenant1:users',)``)."""
_META = "langgraph"
_PAGE = 500
_RECALL_TOP_K = 1000


def space_of(namespace: tuple[str, ...], prefix: str = PREFIX) -> str:
    """The orcamem space that holds ``namespace`` (see the module docstring).

    >>> space_of(("users", "alice"))
    'lg:users.alice'
    >>> space_of(("docs", "a b:c"))
    'lg:docs.a@20b@3ac'
    """
    if not namespace:
        raise InvalidNamespaceError("a namespace needs at least one label")
    for label in namespace:
        _unicode(label, "namespace label")
    labels = ["".join(c if _KEEP.fullmatch(c) else _hex(c) for c in label) for label in namespace]
    space = f"{prefix}:{'.'.join(labels)}"
    if not SPACE.ok(space):
        raise InvalidInputError(
            f"namespace {namespace!r} is space {space[:60]!r}... ({len(space)} characters), "
            "over the 128 an orcamem space may have: use fewer or shorter labels"
        )
    return space


def namespace_of(space: str, prefix: str = PREFIX) -> tuple[str, ...] | None:
    """The namespace ``space`` holds, or ``None`` if it is not one of this prefix's spaces.

    >>> namespace_of("lg:docs.a@20b@3ac")
    ('docs', 'a b:c')
    """
    head = f"{prefix}:"
    if not space.startswith(head):
        return None
    labels = space[len(head) :].split(".")
    if not all(_LABEL.fullmatch(label) for label in labels):
        return None
    try:
        return tuple(
            _ESCAPE.sub(lambda m: bytes.fromhex(m.group().replace("@", "")).decode(), label)
            for label in labels
        )
    except UnicodeDecodeError:  # escapes no space_of wrote
        return None


def _unicode(text: str, what: str) -> str:
    """``text`` if it is valid Unicode (no lone surrogate, which no file or database holds)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(
            f"{what} {text!r} holds a lone surrogate, not text: pass valid Unicode"
        ) from None
    return text


def _hex(char: str) -> str:
    return "".join(f"@{byte:02x}" for byte in char.encode("utf-8"))


_SLOTS = ("a", "b")


def _session(key: str, slot: str) -> str:
    return f"lg-{sha256(key)[:32]}-{slot}"


@dataclass(frozen=True)
class _Version:
    """One stored version of an item: its episode and what ``meta`` says of it."""

    episode: Episode
    namespace: tuple[str, ...]

    @property
    def data(self) -> dict[str, Any]:
        return self.episode.meta[_META]

    def expired(self, now: datetime) -> bool:
        expires = self.data.get("expires_at")
        return expires is not None and parse_time(expires) <= now

    def item(self) -> Item:
        return Item(**self._fields())

    def search_item(self, score: float | None) -> SearchItem:
        return SearchItem(**self._fields(), score=score)

    def _fields(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "key": self.data["key"],
            "value": self.data["value"],
            "created_at": parse_time(self.data["created_at"]),
            "updated_at": parse_time(self.episode.created_at),
        }


class OrcamemStore(BaseStore):
    """``BaseStore`` over a ``Memory``: every namespace is a space (``lg:<labels>``).

    ``index={"fields": [...]}`` names the JSON paths searched (default ``["$"]``, the whole
    value); ``dims`` and ``embed`` are not used: orcamem embeds with the space's own embedder.
    ``ttl={"default_ttl": minutes, "refresh_on_read": True}`` as LangGraph defines it.
    """

    supports_ttl = True

    def __init__(
        self,
        memory: Memory,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        prefix: str = PREFIX,
    ) -> None:
        if not isinstance(memory, Memory):
            raise InvalidInputError(
                f"OrcamemStore needs an orcamem Memory, got {type(memory).__name__}: "
                "OrcamemStore(Memory('memory.db'))"
            )
        if not isinstance(prefix, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,32}", prefix):
            raise InvalidInputError(
                f"prefix {prefix!r} must be 1 to 32 letters, digits, '_' or '-' (':', '.' and "
                "'@' would let one store's spaces read as another's namespaces)"
            )
        self.memory = memory
        self.prefix = prefix
        self.fields = list((index or {}).get("fields") or ["$"])
        self.ttl_config = ttl

    # -- BaseStore ---------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the ops in order (a later op sees an earlier put of the same batch)."""
        results: list[Result] = []
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise InvalidInputError(
                    f"unknown store operation {type(op).__name__}: use GetOp, SearchOp, PutOp "
                    "or ListNamespacesOp"
                )
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread (SQLite and embedding block)."""
        return await asyncio.to_thread(self.batch, list(ops))

    def sweep_ttl(self) -> int:
        """Delete every expired item of this store's namespaces; returns how many."""
        now = self.memory.clock.now()
        swept = 0
        for space in self._spaces(()):
            for version in self._versions(space):
                if version.expired(now):
                    self.memory.forget(version.episode.id, space=space)
                    swept += 1
        return swept

    # -- operations --------------------------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        space = space_of(op.namespace, self.prefix)
        versions = self._key_versions(space, _unicode(op.key, "key"))
        if not versions:
            return None
        current = versions[-1]
        if current.expired(self.memory.clock.now()):
            return None
        if op.refresh_ttl:
            current = self._refresh(space, current)
        return current.item()

    def _put(self, op: PutOp) -> None:
        space = space_of(op.namespace, self.prefix)
        if not isinstance(op.key, str) or not op.key:
            raise InvalidInputError(f"key {op.key!r}: use a non-empty string")
        _unicode(op.key, "key")
        versions = self._key_versions(space, op.key)
        if op.value is None:
            self._drop(space, versions)
            return
        if not isinstance(op.value, dict):
            raise InvalidInputError(
                f"value must be a dict of JSON values, got {type(op.value).__name__}"
            )
        try:
            json.dumps(op.value)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"the value of key {op.key!r} is not JSON ({exc}): store dicts of str, "
                "numbers, bools, None, lists and dicts"
            ) from None
        now = self.memory.clock.now()
        alive = [v for v in versions if not v.expired(now)]
        created = alive[-1].data["created_at"] if alive else format_time(now)
        paths = self.fields if op.index is None else (op.index or [])
        ttl = self._minutes(op.ttl, now)
        data = {
            "key": op.key,
            "value": op.value,
            "created_at": created,
            "indexed": bool(paths),
            "ttl": ttl,
            "expires_at": format_time(now + timedelta(minutes=ttl)) if ttl is not None else None,
            "index": paths,
        }
        self._replace(space, data, versions)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        now = self.memory.clock.now()
        spaces = self._spaces(op.namespace_prefix)
        wanted = op.offset + op.limit
        found: list[tuple[_Version, float | None]] = []
        if op.query:
            recalled = self._recalled(
                spaces, op.query, now, top_k=min(_RECALL_TOP_K, 4 * wanted + 20)
            )
            found = [
                (v, score) for v, score in recalled if _matches(v.data["value"], op.filter or {})
            ]
        if not op.query or len(found) < wanted:  # the rest, newest first, only when needed
            seen = {version.episode.id for version, _ in found}
            rest = sorted(
                (v for space in spaces for v in self._current(space, now)),
                key=lambda version: version.episode.id,
                reverse=True,
            )
            found.extend(
                (v, None)
                for v in rest
                if v.episode.id not in seen and _matches(v.data["value"], op.filter or {})
            )
        items = []
        for version, score in found[op.offset : wanted]:
            if op.refresh_ttl:
                version = self._refresh(space_of(version.namespace, self.prefix), version)
            items.append(version.search_item(score))
        return items

    @staticmethod
    def _minutes(ttl: Any, now: datetime) -> float | None:
        """A TTL in minutes: a number, a ``timedelta``, or a ``datetime`` to expire at."""
        if isinstance(ttl, timedelta):
            ttl = ttl.total_seconds() / 60
        elif isinstance(ttl, datetime):
            moment = ttl if ttl.tzinfo else ttl.astimezone()
            ttl = (moment - now).total_seconds() / 60
        if ttl is None:
            return None
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0:
            raise InvalidInputError(
                f"ttl={ttl!r}: use minutes (a number above 0), a timedelta, or None to keep it"
            )
        return float(ttl)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found: set[tuple[str, ...]] = set()
        for info in self.memory.space_infos():
            namespace = namespace_of(info.name, self.prefix)
            if namespace is None or not info.episodes:
                continue
            if all(_condition(namespace, c.match_type, c.path) for c in op.match_conditions or ()):
                found.add(namespace[: op.max_depth] if op.max_depth else namespace)
        return sorted(found)[op.offset : op.offset + op.limit]

    # -- the episodes behind the items -------------------------------------------------------

    def _replace(self, space: str, data: dict[str, Any], versions: list[_Version]) -> _Version:
        """Write ``data`` as the key's new version, then drop the old ``versions``."""
        current = versions[-1].episode.session_id if versions else None
        slot = _SLOTS[1] if current == _session(data["key"], _SLOTS[0]) else _SLOTS[0]
        session = _session(data["key"], slot)
        self._drop(space, [v for v in versions if v.episode.session_id == session])
        texts = [t for path in data["index"] for t in _texts(data["value"], path)]
        episode = self.memory.add(  # the value is kept whole in meta; the searchable text
            storable_text("\n".join(texts)) or data["key"],  # as a recorder must (no ESC, 1 MiB)
            kind="document",
            space=space,
            session_id=session,
            meta={_META: data},
        )
        self._drop(space, [v for v in versions if v.episode.session_id != session])
        return next(self._own(space, [episode]))

    def _refresh(self, space: str, version: _Version) -> _Version:
        """A new version with the expiry pushed back (an item with a TTL, read)."""
        ttl = version.data.get("ttl")
        if ttl is None:
            return version
        now = self.memory.clock.now()
        data = {**version.data, "expires_at": format_time(now + timedelta(minutes=ttl))}
        return self._replace(space, data, self._key_versions(space, data["key"]))

    def _drop(self, space: str, versions: Iterable[_Version]) -> None:
        for version in versions:
            with suppress(NotFoundError):  # deleted by another writer meanwhile
                self.memory.forget(version.episode.id, space=space)

    def _key_versions(self, space: str, key: str) -> list[_Version]:
        """The stored versions of ``key``, oldest first (normally one)."""
        if self.memory.space_info(space) is None:
            return []
        episodes = [
            episode
            for slot in _SLOTS
            for episode in self.memory.episodes_page(
                space=space, session_id=_session(key, slot), limit=_PAGE
            )
        ]
        episodes.sort(key=lambda episode: episode.id)
        return [v for v in self._own(space, episodes) if v.data["key"] == key]

    def _versions(self, space: str) -> Iterator[_Version]:
        after = 0
        while True:
            page = self.memory.episodes_page(space=space, after=after, limit=_PAGE)
            if not page:
                return
            yield from self._own(space, page)
            after = page[-1].id

    def _current(self, space: str, now: datetime) -> list[_Version]:
        """The newest unexpired version of each key of the space."""
        newest: dict[str, _Version] = {}
        for version in self._versions(space):
            newest[version.data["key"]] = version
        return [v for v in newest.values() if not v.expired(now)]

    def _own(self, space: str, episodes: Iterable[Episode]) -> Iterator[_Version]:
        namespace = namespace_of(space, self.prefix)
        assert namespace is not None
        for episode in episodes:
            if isinstance(episode.meta.get(_META), dict):
                yield _Version(episode, namespace)

    def _spaces(self, prefix: tuple[str, ...]) -> list[str]:
        spaces = []
        for info in self.memory.space_infos():
            namespace = namespace_of(info.name, self.prefix)
            if namespace is not None and namespace[: len(prefix)] == prefix:
                spaces.append(info.name)
        return spaces

    def _recalled(
        self, spaces: list[str], query: str, now: datetime, *, top_k: int
    ) -> list[tuple[_Version, float | None]]:
        """The current items recall finds for ``query`` in ``spaces``, best first."""
        best: dict[tuple[str, int], float] = {}
        for space in spaces:
            result = self.memory.search(query, space=space, top_k=top_k)
            for hit in result.hits:
                if hit.kind == "passage" and hit.episode_id is not None:
                    at = (space, hit.episode_id)
                    best[at] = max(best.get(at, hit.score), hit.score)
        found = []
        for (space, episode_id), score in best.items():
            try:
                episode = self.memory.episode(episode_id, space=space)
            except NotFoundError:  # replaced since the search
                continue
            for version in self._own(space, [episode]):
                if version.data.get("indexed", True) and not version.expired(now):
                    found.append((version, score))
        return sorted(found, key=lambda pair: -pair[1])


def _texts(value: dict[str, Any], path: str) -> list[str]:
    if path == "$":
        return [json.dumps(value, ensure_ascii=False)]
    return [t for t in get_text_at_path(value, tokenize_path(path)) if t.strip()]


def _condition(namespace: tuple[str, ...], match_type: str, path: tuple[str, ...]) -> bool:
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if match_type == "prefix" else namespace[-len(path) :]
    return all(want in ("*", have) for want, have in zip(path, part, strict=True))


_ORDER = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}
_OPERATORS = ("$eq", "$ne", *_ORDER)


def _matches(value: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics: a dict of ``$`` operators, a nested dict, a list matched
    item by item, else equality."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(value, op, operand) for op, operand in wanted.items())
        return isinstance(value, dict) and all(_matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(wanted)
            and all(_matches(v, w) for v, w in zip(value, wanted, strict=True))
        )
    return value == wanted


def _operator(value: Any, op: str, operand: Any) -> bool:
    """``$eq``/``$ne`` compare as they are; an order operator compares numbers as numbers
    (``"3"`` and ``3`` alike, as LangGraph's own stores do), else two strings as strings, and
    anything else (a missing key, a string and a number) matches nothing."""
    if op == "$eq":
        return bool(value == operand)
    if op == "$ne":
        return bool(value != operand)
    if op not in _ORDER:
        raise InvalidInputError(f"filter operator {op!r}: use one of {', '.join(_OPERATORS)}")
    numbers = _number(value), _number(operand)
    if None not in numbers:
        return bool(_ORDER[op](*numbers))
    if isinstance(value, str) and isinstance(operand, str):
        return bool(_ORDER[op](value, operand))
    return False


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None

"""``MemoryObjectStore``: a dict, for tests and for a bank without a bucket."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from ...errors import NotFoundError
from .base import ObjectInfo, StoredObject, check_key, check_preconditions, etag_of

__all__ = ["MemoryObjectStore"]


class MemoryObjectStore:
    """Objects in a dict (this process only). Thread-safe; etags are content MD5s plus a
    version counter, so rewriting the same bytes still makes a new version."""

    def __init__(self) -> None:
        self._objects: dict[str, tuple[bytes, str]] = {}
        self._lock = threading.Lock()
        self._version = 0

    @property
    def location(self) -> str:
        return "memory"

    @property
    def durable(self) -> bool:
        return False

    def get(self, key: str) -> StoredObject:
        with self._lock:
            found = self._objects.get(check_key(key))
        if found is None:
            raise NotFoundError(f"no object {key!r} in memory")
        return StoredObject(key, found[0], found[1])

    def put(
        self, key: str, body: bytes, *, if_none_match: bool = False, if_match: str | None = None
    ) -> str:
        check_key(key)
        with self._lock:
            current = self._objects.get(key)
            check_preconditions(key, current[1] if current else None, if_none_match, if_match)
            self._version += 1
            etag = f"{etag_of(body)}-{self._version}"
            self._objects[key] = (bytes(body), etag)
        return etag

    def delete(self, key: str) -> None:
        with self._lock:
            self._objects.pop(check_key(key), None)

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        with self._lock:
            items = sorted((k, v) for k, v in self._objects.items() if k.startswith(prefix))
        for key, (body, etag) in items:
            yield ObjectInfo(key, etag, len(body))

    def close(self) -> None:
        pass

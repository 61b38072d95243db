"""``FileObjectStore``: a directory; atomic replace + fsync, and a cross-process file lock around
writes and deletes so several processes can share it."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from ..._kernel.clock import Clock
from ..._kernel.files import (
    FileLock,
    is_temp,
    make_dirs,
    remove,
    remove_stale_temps,
    store_error,
    write_atomic,
)
from ...errors import NotFoundError
from .base import ObjectInfo, StoredObject, check_key, check_preconditions

__all__ = ["FileObjectStore"]


class FileObjectStore:
    """Objects as files under ``root`` (``root/<key>``).

    A write replaces the key's file atomically and durably (``_kernel.files.write_atomic``): a
    reader sees the old or the new bytes, never half. Writes and deletes hold the file lock on
    ``root/.lock`` (``_kernel.files.FileLock``), so processes sharing the directory never lose
    an update. The etag is the content's SHA-256 (first 32 hex digits). Opening removes the
    temp files a killed writer left (older than ``_kernel.files.TEMP_GRACE_S`` by ``clock``).
    """

    LOCK_NAME = ".lock"

    def __init__(self, root: str | Path, *, clock: Clock | None = None) -> None:
        self.root = Path(root).expanduser()
        make_dirs(self.root)
        remove_stale_temps(self.root, clock=clock)
        self._lock = FileLock(self.root / self.LOCK_NAME)

    @property
    def location(self) -> str:
        return f"file://{self.root}"

    @property
    def durable(self) -> bool:
        return True

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*check_key(key).split("/"))

    @staticmethod
    def _etag(body: bytes) -> str:
        return hashlib.sha256(body).hexdigest()[:32]

    def get(self, key: str) -> StoredObject:
        path = self._path(key)
        try:
            body = path.read_bytes()
        except FileNotFoundError:
            raise NotFoundError(f"no object {key!r} in {self.location}") from None
        except IsADirectoryError:
            raise NotFoundError(f"no object {key!r} in {self.location}") from None
        except OSError as exc:
            raise store_error("read", path, exc) from exc
        return StoredObject(key, body, self._etag(body))

    def _current_etag(self, path: Path) -> str | None:
        try:
            return self._etag(path.read_bytes())
        except (FileNotFoundError, IsADirectoryError):
            return None

    def put(
        self, key: str, body: bytes, *, if_none_match: bool = False, if_match: str | None = None
    ) -> str:
        path = self._path(key)
        with self._lock.hold():
            if if_none_match or if_match is not None:
                check_preconditions(key, self._current_etag(path), if_none_match, if_match)
            make_dirs(path.parent)
            remove_stale_temps(path.parent, of=path.name, older_than_s=0)  # the lock is held
            write_atomic(path, body)
        return self._etag(body)

    def delete(self, key: str) -> None:
        path = self._path(key)
        with self._lock.hold():
            remove(path)

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        found: list[tuple[str, Path]] = []
        for directory, folders, files in os.walk(self.root):
            folders.sort()
            base = Path(directory).relative_to(self.root)
            for name in files:
                if is_temp(name) or (base == Path(".") and name == self.LOCK_NAME):
                    continue
                key = (base / name).as_posix() if base != Path(".") else name
                if key.startswith(prefix):
                    found.append((key, Path(directory) / name))
        for key, path in sorted(found):
            try:
                body = path.read_bytes()
            except FileNotFoundError:  # deleted while listing
                continue
            yield ObjectInfo(key, self._etag(body), len(body))

    def close(self) -> None:
        pass

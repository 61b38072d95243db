"""The object store protocol: keys → bytes with an ``etag`` per stored version and two
preconditions (create only; replace only that version), and what every backend shares."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..._kernel.names import OBJECT_KEY
from ...errors import PreconditionFailedError

__all__ = [
    "LIST_PAGE_SIZE",
    "ObjectInfo",
    "ObjectStore",
    "StoredObject",
    "check_key",
    "check_preconditions",
    "etag_of",
]


LIST_PAGE_SIZE = 1000
"""Keys per ListObjectsV2 page: S3's own maximum (servers cap ``max-keys`` at 1,000)."""


@dataclass(frozen=True)
class ObjectInfo:
    """A listed object."""

    key: str
    etag: str
    """The version's entity tag, without quotes."""
    size: int


@dataclass(frozen=True)
class StoredObject:
    """An object read back: its bytes and the etag of that version."""

    key: str
    body: bytes
    etag: str


@runtime_checkable
class ObjectStore(Protocol):
    """Keys to bytes with versions (etags) and conditional writes."""

    @property
    def location(self) -> str:
        """Where the objects live, for messages: ``s3://bucket at URL``, ``file://…``, ``memory``."""
        ...

    @property
    def durable(self) -> bool:
        """Whether an object survives this process."""
        ...

    def get(self, key: str) -> StoredObject:
        """The object, or ``NotFoundError``."""
        ...

    def put(
        self, key: str, body: bytes, *, if_none_match: bool = False, if_match: str | None = None
    ) -> str:
        """Store ``body`` under ``key``; returns the new etag once the object has landed.

        Raises:
            PreconditionFailedError: ``if_none_match`` and the key exists, or ``if_match`` and
                the stored version is another one (or none).
        """
        ...

    def delete(self, key: str) -> None:
        """Remove the object; removing a missing key is not an error."""
        ...

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        """Every object whose key starts with ``prefix``, in key order, all pages."""
        ...

    def close(self) -> None: ...


def check_key(key: str) -> str:
    """``key`` if it is a safe object key (``names.OBJECT_KEY``: no empty, ``.`` or ``..``
    segment, no leading ``/``)."""
    return OBJECT_KEY.validate(key)


def etag_of(body: bytes) -> str:
    return hashlib.md5(body, usedforsecurity=False).hexdigest()


def check_preconditions(
    key: str, current_etag: str | None, if_none_match: bool, if_match: str | None
) -> None:
    if if_none_match and current_etag is not None:
        raise PreconditionFailedError(f"object {key!r} already exists (If-None-Match: *)")
    if if_match is not None and current_etag != if_match:
        state = "was deleted" if current_etag is None else "was changed by another writer"
        raise PreconditionFailedError(f"object {key!r} {state} (If-Match {if_match})")

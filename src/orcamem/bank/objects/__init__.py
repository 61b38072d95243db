"""The ``objects`` store: keys → bytes, with conditional writes, behind one small protocol.

Three backends answer :class:`ObjectStore`:

- :class:`S3ObjectStore` (``s3.py``) — any S3-compatible server over plain ``httpx`` with AWS
  Signature V4, path-style URLs.
- :class:`FileObjectStore` (``file.py``) — a directory; atomic replace + fsync, a cross-process file lock
  around writes and deletes so several processes can share it.
- :class:`MemoryObjectStore` (``memory.py``) — a dict, for tests and for a bank without a bucket.

Every backend gives each stored version an ``etag`` and honours the two preconditions:
``put(..., if_none_match=True)`` creates only (fails if the key exists) and
``put(..., if_match=etag)`` replaces only that version (fails if the object changed or was
deleted). A failed precondition is :class:`PreconditionFailedError`; an unknown key on ``get``
is :class:`~orcamem.errors.NotFoundError`; anything else that goes wrong is a
:class:`~orcamem.errors.StoreError` naming the location and the next step.
``list`` pages through every key under a prefix (S3 returns at most 1,000 per page).
"""

from ...errors import PreconditionFailedError
from .base import LIST_PAGE_SIZE, ObjectInfo, ObjectStore, StoredObject, check_key
from .file import FileObjectStore
from .memory import MemoryObjectStore
from .s3 import S3ObjectStore

__all__ = [
    "LIST_PAGE_SIZE",
    "FileObjectStore",
    "MemoryObjectStore",
    "ObjectInfo",
    "ObjectStore",
    "PreconditionFailedError",
    "S3ObjectStore",
    "StoredObject",
    "check_key",
]

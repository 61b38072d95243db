"""The ``objects`` store: keys → bytes, with conditional writes, behind one small protocol.

Three backends answer :class:`ObjectStore`:

- :class:`S3ObjectStore` — any S3-compatible server (AWS S3, MinIO, SeaweedFS, R2) over plain
  ``httpx`` with AWS Signature V4, path-style URLs. No ``boto3``: the bank needs five calls
  (GET, conditional PUT, DELETE, ListObjectsV2 with paging, create bucket), orcamem already
  ships ``httpx``, and owning the requests keeps the timeouts, the ``If-None-Match`` /
  ``If-Match`` headers and the error messages under our control (botocore is ~15 MB and
  grows its own retry and threading rules).
- :class:`FileObjectStore` — a directory; atomic replace + fsync, a cross-process file lock
  around writes and deletes so several processes can share it.
- :class:`MemoryObjectStore` — a dict, for tests and for a bank without a bucket.

Every backend gives each stored version an ``etag`` and honours the two preconditions:
``put(..., if_none_match=True)`` creates only (fails if the key exists) and
``put(..., if_match=etag)`` replaces only that version (fails if the object changed or was
deleted). A failed precondition is :class:`PreconditionFailedError`; an unknown key on ``get``
is :class:`~orcamem.errors.NotFoundError`; anything else that goes wrong is a
:class:`~orcamem.errors.StoreError` naming the location and the next step.
``list`` pages through every key under a prefix (S3 returns at most 1,000 per page).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol, runtime_checkable
from urllib.parse import quote

import httpx

from .._kernel.env import S3Settings
from .._kernel.files import (
    FileLock,
    is_temp,
    make_dirs,
    remove_stale_temps,
    store_error,
    write_atomic,
)
from .._kernel.http import client as http_client
from ..errors import InvalidInputError, NotFoundError, PreconditionFailedError, StoreError

__all__ = [
    "FileObjectStore",
    "MemoryObjectStore",
    "ObjectInfo",
    "ObjectStore",
    "PreconditionFailedError",
    "S3ObjectStore",
    "StoredObject",
]

LIST_PAGE_SIZE = 1000
"""Keys per ListObjectsV2 page: S3's own maximum (servers cap ``max-keys`` at 1,000)."""

_KEY_RE = re.compile(r"[A-Za-z0-9._\-/@:]{1,1024}")


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
    """``key`` if it is a safe object key (no empty, ``.`` or ``..`` segment, no leading ``/``)."""
    if (
        not isinstance(key, str)
        or not _KEY_RE.fullmatch(key)
        or key.startswith("/")
        or any(part in ("", ".", "..") for part in key.split("/"))
    ):
        raise InvalidInputError(
            f"object key {key!r} is not allowed: use 1-1024 characters of A-Z a-z 0-9 . _ - / @ : "
            "with no empty, '.' or '..' path segment"
        )
    return key


def _etag_of(body: bytes) -> str:
    return hashlib.md5(body, usedforsecurity=False).hexdigest()


# -- in memory ----------------------------------------------------------------------------------


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
            _check_preconditions(key, current[1] if current else None, if_none_match, if_match)
            self._version += 1
            etag = f"{_etag_of(body)}-{self._version}"
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


def _check_preconditions(
    key: str, current_etag: str | None, if_none_match: bool, if_match: str | None
) -> None:
    if if_none_match and current_etag is not None:
        raise PreconditionFailedError(f"object {key!r} already exists (If-None-Match: *)")
    if if_match is not None and current_etag != if_match:
        state = "was deleted" if current_etag is None else "was changed by another writer"
        raise PreconditionFailedError(f"object {key!r} {state} (If-Match {if_match})")


# -- a directory --------------------------------------------------------------------------------


class FileObjectStore:
    """Objects as files under ``root`` (``root/<key>``).

    A write replaces the key's file atomically and durably (``_kernel.files.write_atomic``): a
    reader sees the old or the new bytes, never half. Writes and deletes hold the file lock on
    ``root/.lock`` (``_kernel.files.FileLock``), so processes sharing the directory never lose
    an update. The etag is the content's SHA-256 (first 32 hex digits).
    """

    LOCK_NAME = ".lock"

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).expanduser()
        make_dirs(self.root)
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
                _check_preconditions(key, self._current_etag(path), if_none_match, if_match)
            make_dirs(path.parent)
            remove_stale_temps(path)
            write_atomic(path, body)
        return self._etag(body)

    def delete(self, key: str) -> None:
        path = self._path(key)
        with self._lock.hold():
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise store_error("delete", path, exc) from exc

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


# -- S3 -----------------------------------------------------------------------------------------

_UNRESERVED = "-_.~"


def _uri_encode(text: str, *, keep_slash: bool = False) -> str:
    return quote(text, safe=_UNRESERVED + ("/" if keep_slash else ""))


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def sigv4_headers(
    method: str,
    host: str,
    path: str,
    query: list[tuple[str, str]],
    payload: bytes,
    *,
    region: str,
    access_key_id: str,
    secret_access_key: str,
    session_token: str | None = None,
    now: datetime | None = None,
) -> dict[str, str]:
    """The headers that sign one S3 request with AWS Signature Version 4.

    ``path`` is the already URI-encoded path (``/bucket/key``); ``query`` the raw pairs.
    Signs ``host``, ``x-amz-content-sha256``, ``x-amz-date`` (and the session token).
    """
    moment = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    amz_date = moment.strftime("%Y%m%dT%H%M%SZ")
    day = moment.strftime("%Y%m%d")
    payload_hash = hashlib.sha256(payload).hexdigest()
    headers = {"host": host, "x-amz-content-sha256": payload_hash, "x-amz-date": amz_date}
    if session_token:
        headers["x-amz-security-token"] = session_token
    names = sorted(headers)
    canonical = "\n".join(
        [
            method,
            path,
            "&".join(f"{_uri_encode(k)}={_uri_encode(v)}" for k, v in sorted(query)),
            "".join(f"{name}:{headers[name].strip()}\n" for name in names),
            ";".join(names),
            payload_hash,
        ]
    )
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = ("AWS4" + secret_access_key).encode()
    for part in (day, region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={access_key_id}/{scope}, "
        f"SignedHeaders={';'.join(names)}, Signature={signature}"
    )
    return headers


class S3ObjectStore:
    """A bucket of an S3-compatible server, path-style (``{endpoint}/{bucket}/{key}``).

    Args:
        settings: bucket, endpoint, region and credentials (``_kernel.env.S3Settings``;
            :func:`~orcamem._kernel.env.memory_bank_s3` reads them from the environment).
        timeout_s: per-request timeout (connect, read, write).
        page_size: keys per ListObjectsV2 page (at most 1,000).

    Reads and lists are retried twice on a connection error or a 5xx; writes are not (a
    conditional PUT whose answer was lost must not be replayed blindly: the caller re-reads).
    """

    def __init__(
        self, settings: S3Settings, *, timeout_s: float = 10.0, page_size: int = LIST_PAGE_SIZE
    ) -> None:
        if not 1 <= page_size <= LIST_PAGE_SIZE:
            raise InvalidInputError(f"page_size={page_size}: use 1 to {LIST_PAGE_SIZE}")
        if not settings.endpoint.startswith(("http://", "https://")):
            raise InvalidInputError(
                f"S3 endpoint {settings.endpoint!r} must start with http:// or https://"
            )
        self.settings = settings
        self.page_size = page_size
        self._base = httpx.URL(settings.endpoint.rstrip("/"))
        self._prefix_path = self._base.path.rstrip("/")
        self._host = self._base.netloc.decode("ascii")
        self._client = http_client(timeout=timeout_s)
        self._closed = False

    @property
    def location(self) -> str:
        return f"s3://{self.settings.bucket} at {self.settings.endpoint}"

    @property
    def durable(self) -> bool:
        return True

    def _request(
        self,
        method: str,
        key: str | None,
        *,
        query: list[tuple[str, str]] | None = None,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        retries: int = 0,
    ) -> httpx.Response:
        if self._closed:
            raise StoreError(f"the object store {self.location} was closed")
        path = f"{self._prefix_path}/{_uri_encode(self.settings.bucket)}"
        if key is not None:
            path += "/" + _uri_encode(check_key(key), keep_slash=True)
        pairs = list(query or [])
        raw = path + (
            "?" + "&".join(f"{_uri_encode(k)}={_uri_encode(v)}" for k, v in pairs) if pairs else ""
        )
        url = self._base.copy_with(raw_path=raw.encode("ascii"))
        for attempt in range(retries + 1):
            signed = {}
            if self.settings.access_key_id and self.settings.secret_access_key:
                signed = sigv4_headers(
                    method,
                    self._host,
                    path,
                    pairs,
                    body,
                    region=self.settings.region,
                    access_key_id=self.settings.access_key_id,
                    secret_access_key=self.settings.secret_access_key,
                    session_token=self.settings.session_token,
                )
            try:
                response = self._client.request(
                    method, url, content=body, headers={**signed, **(headers or {})}
                )
            except httpx.HTTPError as exc:
                if attempt < retries:
                    time.sleep(0.1 * (attempt + 1))
                    continue
                raise StoreError(
                    f"cannot reach the object store {self.location}: {exc!s} "
                    "(is the server up and the endpoint right?)"
                ) from None
            if response.status_code >= 500 and attempt < retries:
                time.sleep(0.1 * (attempt + 1))
                continue
            return response
        raise AssertionError("unreachable")  # pragma: no cover

    def _fail(self, response: httpx.Response, what: str) -> StoreError:
        code = _error_code(response.text)
        status = response.status_code
        if status in (401, 403):
            hint = "check the access key, secret and region, and the bucket policy"
        elif code == "NoSuchBucket":
            hint = f"create the bucket {self.settings.bucket!r} first"
        else:
            hint = "check the server's log"
        return StoreError(
            f"{what} failed at {self.location}: {status} {code or response.reason_phrase}: {hint}"
        )

    def get(self, key: str) -> StoredObject:
        response = self._request("GET", key, retries=2)
        if response.status_code == 404 and _error_code(response.text) != "NoSuchBucket":
            raise NotFoundError(f"no object {key!r} in {self.location}")
        if response.status_code != 200:
            raise self._fail(response, f"GET {key}")
        return StoredObject(key, response.content, _clean_etag(response.headers.get("etag", "")))

    def put(
        self, key: str, body: bytes, *, if_none_match: bool = False, if_match: str | None = None
    ) -> str:
        headers = {"content-type": "application/json"}
        if if_none_match:
            headers["if-none-match"] = "*"
        if if_match is not None:
            headers["if-match"] = f'"{if_match}"'
        response = self._request("PUT", key, body=bytes(body), headers=headers)
        status = response.status_code
        if status == 412 or (status == 409 and (if_none_match or if_match is not None)):
            # 409 ConditionalRequestConflict: another conditional write to the key was in flight.
            raise PreconditionFailedError(
                f"object {key!r} at {self.location} "
                + ("already exists" if if_none_match else "was changed by another writer")
            )
        if status == 404 and if_match is not None and _error_code(response.text) == "NoSuchKey":
            raise PreconditionFailedError(f"object {key!r} at {self.location} was deleted")
        if status not in (200, 201):
            raise self._fail(response, f"PUT {key}")
        etag = _clean_etag(response.headers.get("etag", ""))
        return etag or _etag_of(body)

    def delete(self, key: str) -> None:
        response = self._request("DELETE", key, retries=2)
        if response.status_code not in (200, 204, 404):
            raise self._fail(response, f"DELETE {key}")

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        token: str | None = None
        while True:
            query = [("list-type", "2"), ("prefix", prefix), ("max-keys", str(self.page_size))]
            if token:
                query.append(("continuation-token", token))
            response = self._request("GET", None, query=query, retries=2)
            if response.status_code != 200:
                raise self._fail(response, f"listing {prefix!r}")
            try:
                root = ET.fromstring(response.content)
            except ET.ParseError as exc:
                raise StoreError(
                    f"the object store {self.location} answered a listing that is not XML: {exc}"
                ) from None
            truncated = False
            token = None
            for child in root:
                name = _local(child.tag)
                if name == "Contents":
                    fields = {_local(item.tag): (item.text or "") for item in child}
                    yield ObjectInfo(
                        fields.get("Key", ""),
                        _clean_etag(fields.get("ETag", "")),
                        int(fields.get("Size") or 0),
                    )
                elif name == "IsTruncated":
                    truncated = (child.text or "").strip().lower() == "true"
                elif name == "NextContinuationToken":
                    token = child.text or None
            if not truncated:
                return
            if not token:
                raise StoreError(
                    f"the object store {self.location} said the listing of {prefix!r} goes on "
                    "but gave no continuation token"
                )

    def ensure_bucket(self) -> None:
        """Create the bucket if it does not exist (for dev servers and tests)."""
        response = self._request("PUT", None)
        if response.status_code in (200, 204):
            return
        if response.status_code == 409 and _error_code(response.text) in (
            "BucketAlreadyOwnedByYou",
            "BucketAlreadyExists",
        ):
            return
        raise self._fail(response, f"creating bucket {self.settings.bucket!r}")

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._client.close()


def _clean_etag(value: str) -> str:
    value = value.strip()
    if value.startswith("W/"):
        value = value[2:]
    return value.strip('"')


def _error_code(text: str) -> str | None:
    match = re.search(r"<Code>([^<]{1,100})</Code>", text or "")
    return match.group(1) if match else None

"""``S3ObjectStore``: any S3-compatible server (AWS S3, MinIO, SeaweedFS, R2) over plain
``httpx`` with AWS Signature V4 and path-style URLs.

No ``boto3``: the bank needs five calls (GET, conditional PUT, DELETE, ListObjectsV2 with
paging, create bucket), orcamem already ships ``httpx``, and owning the requests keeps the
timeouts, the ``If-None-Match`` / ``If-Match`` headers and the error messages under our control
(botocore is ~15 MB and grows its own retry and threading rules).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import datetime, timezone
from urllib.parse import quote

import httpx

from ..._kernel.env import S3Settings
from ..._kernel.http import client as http_client
from ...errors import InvalidInputError, NotFoundError, PreconditionFailedError, StoreError
from .base import LIST_PAGE_SIZE, ObjectInfo, StoredObject, check_key, etag_of

__all__ = ["S3ObjectStore", "sigv4_headers"]


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
        return etag or etag_of(body)

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

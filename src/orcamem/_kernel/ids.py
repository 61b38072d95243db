"""Ids and digests, one way each: random ids for new records, stable ids and SHA-256 digests
for what must come out the same in every process (idempotency keys, fingerprints, identities).

>>> stable_id("job-", "user_a", "extract", length=24)[:4]
'job-'
>>> sha256("abc")[:8], tagged("abc")[:15]
('ba7816bf', 'sha256:ba7816bf')
"""

from __future__ import annotations

import hashlib
import secrets

__all__ = ["random_id", "sha256", "stable_id", "tagged"]

_SEPARATOR = "\x1f"
"""Joins the parts of a stable id: a character no name or digest contains."""


def sha256(data: str | bytes) -> str:
    """The SHA-256 hex digest of ``data`` (text as UTF-8; lone surrogates kept, never lost)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def tagged(data: str | bytes) -> str:
    """``sha256:<hex>``: a digest that says how it was made (sources, ledger fingerprints)."""
    return "sha256:" + sha256(data)


def stable_id(prefix: str, *parts: str, length: int) -> str:
    """``prefix`` + the first ``length`` hex digits of the parts' digest: the same id for the
    same parts, in every process and store."""
    return prefix + sha256(_SEPARATOR.join(parts))[:length]


def random_id(prefix: str, hexdigits: int = 8) -> str:
    """``prefix`` + ``hexdigits`` random hex digits (``mem-1a2b3c4d``, ``key-…``)."""
    return prefix + secrets.token_hex(hexdigits // 2)

"""API keys: random secrets shown once, stored only as SHA-256 hashes, scoped to spaces.

A key for space A can neither read nor write space B through any route (REST, proxy, MCP over
HTTP): every handler resolves its space through ``Principal.space``. An admin key reaches all
spaces and the key routes. The keys live in the memory database (``api_keys``), reached as
``Memory.keys``.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass

from .._kernel.ids import random_id, sha256
from .._kernel.model import validate_id, validate_space
from ..errors import AuthError, ForbiddenError, InvalidInputError, NotFoundError
from .store.base import KeyRows

__all__ = ["ADMIN", "ApiKeys", "Principal"]


@dataclass(frozen=True)
class Principal:
    """Who is calling: an admin, or a key scoped to some spaces."""

    key_id: str
    admin: bool
    spaces: frozenset[str]

    def space(self, name: str) -> str:
        """The validated space if this principal may use it, else ``ForbiddenError``."""
        name = validate_space(name)
        if not self.admin and name not in self.spaces:
            raise ForbiddenError(
                f"this API key is not allowed to use space {name!r}: use a key created with "
                f"`orcamem keys create --space {name}`"
            )
        return name

    def require_admin(self) -> None:
        if not self.admin:
            raise ForbiddenError("this route needs an admin key (`orcamem keys create --admin`)")


ADMIN = Principal("local", True, frozenset())
"""The principal of a loopback server that does not require keys."""


def _hash(key: str) -> str:
    return sha256(key)


class ApiKeys:
    """Create, list, revoke and check API keys in a store's ``keys`` rows.

    ``Memory.keys`` is the one for a memory's database.
    """

    def __init__(self, rows: KeyRows) -> None:
        self.rows = rows

    def create(self, *, spaces: list[str], admin: bool, name: str, now: str) -> tuple[str, str]:
        """A new key: returns ``(key id, secret)``; the secret is never stored."""
        spaces = list(dict.fromkeys(validate_space(space) for space in spaces))
        if name:  # a label shown in `keys list`: no control characters
            validate_id(name, what="name")
        if not admin and not spaces:
            raise InvalidInputError("a key needs at least one space (--space NAME), or --admin")
        secret = "om_" + secrets.token_urlsafe(32)
        key_id = random_id("key-")
        self.rows.add(key_id, _hash(secret), name, spaces, admin, now)
        return key_id, secret

    def list(self) -> list[dict]:
        return self.rows.list()

    def revoke(self, key_id: str, now: str) -> None:
        if not self.rows.revoke(key_id, now):
            raise NotFoundError(f"no active key {key_id!r}: list them with `orcamem keys list`")

    def check(self, secret: str | None) -> Principal:
        """The principal of a presented secret, or ``AuthError``."""
        if not secret:
            raise AuthError(
                "this server requires an API key: send 'Authorization: Bearer <key>' (or "
                "'x-api-key: <key>'); create one with `orcamem keys create --space NAME`"
            )
        digest = _hash(secret)
        found = self.rows.active(digest)
        if found is None or not hmac.compare_digest(found[1], digest):
            raise AuthError("unknown or revoked API key: check the key, or create a new one")
        key_id, _, spaces, admin = found
        return Principal(key_id, admin, frozenset(spaces))

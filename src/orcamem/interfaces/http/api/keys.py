"""``/api/keys``: create, list and revoke API keys (admin keys only)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Response

from ....engine.keys import ApiKeys
from ....errors import InvalidInputError
from ..deps import MemoryDep
from .common import key_store, now, require_admin
from .schemas import KEY_ID_PATTERN, KeyCreated, KeyIn, KeyOut, KeysOut, errors

router = APIRouter(
    prefix="/keys",
    tags=["keys"],
    dependencies=[Depends(require_admin)],
    responses=errors(401, 403, 422, 503),
)

KeysDep = Annotated[ApiKeys, Depends(key_store)]


@router.post("", status_code=201, summary="Create a key", responses=errors(400, 413))
def create_key(memory: MemoryDep, keys: KeysDep, body: KeyIn) -> KeyCreated:
    """A new key for ``spaces`` (or ``admin``). The secret is in this response only: the
    server stores its SHA-256 hash. Send it as ``Authorization: Bearer <secret>``."""
    if not body.admin and not body.spaces:
        raise InvalidInputError("a key needs at least one space in `spaces`, or `admin: true`")
    key_id, secret = keys.create(
        spaces=body.spaces, admin=body.admin, name=body.name, now=now(memory)
    )
    info = next(key for key in keys.list() if key["id"] == key_id)
    return KeyCreated(**info, secret=secret)


@router.get("", summary="List keys")
def list_keys(keys: KeysDep) -> KeysOut:
    """Every key, revoked ones included (with ``revoked_at``); never a secret."""
    return KeysOut(keys=[KeyOut(**key) for key in keys.list()])


@router.delete("/{key_id}", status_code=204, summary="Revoke a key", responses=errors(404))
def revoke_key(
    memory: MemoryDep,
    keys: KeysDep,
    key_id: Annotated[str, Path(pattern=KEY_ID_PATTERN, description="key-<8hex>")],
) -> Response:
    """Revoke the key: it stops working at once. 404 if unknown or already revoked."""
    keys.revoke(key_id, now(memory))
    return Response(status_code=204)

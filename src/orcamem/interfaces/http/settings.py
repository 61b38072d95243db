"""Server settings: where to listen, what to forward to, and whether keys are required.

``orcamem up/serve/proxy`` build them from the one settings model (``_kernel.settings``: the
upstream, the model and ``require_keys`` come from flags, the environment or the file)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ..._kernel.settings import check_upstream
from ...errors import InvalidInputError

__all__ = ["ServerSettings"]

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServerSettings:
    """How ``orcamem up/serve/proxy`` runs.

    Binding anywhere but loopback requires API keys (``require_keys``): a key is scoped to
    spaces, an admin key to all. On loopback keys are optional unless ``require_keys`` is set.
    """

    host: str = "127.0.0.1"
    port: int = 8080
    upstream: str | None = None
    """OpenAI-compatible base URL the proxy forwards to (``…/v1``); None: the proxy answers 503."""
    model: str | None = None
    """Model name to use when a request names none (and for sleep, if set)."""
    require_keys: bool = False
    workspace: str | None = None
    """The host workspace whose memory capability ``GET /api/capability`` reports."""
    local_memory_dir: str | None = None
    """The local agent memory ``/api/local`` reads; None: ``$ORCA_HOME/memory``, the CLI's."""
    max_body_bytes: int = 2 * 1024 * 1024
    """The REST API's limit (a memory's text is at most 1 MiB)."""
    proxy_max_body_bytes: int = 32 * 1024 * 1024
    """The proxy's: a chat with inline images is large (``proxy_max_body_mb``)."""
    upstream_timeout_s: float = 600.0
    allowed_hosts: tuple[str, ...] = ()
    """Extra names the ``Host`` (and a state-changing request's ``Origin``) may carry, beyond
    the bound address and, on loopback, ``127.0.0.1``/``localhost``/``[::1]`` (``NAME`` any
    port, ``NAME:PORT`` one): the names a reverse proxy or a LAN client reaches it by."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "allowed_hosts", tuple(self.allowed_hosts))
        for name in self.allowed_hosts:
            if not name or any(c in name for c in "/ *@"):
                raise InvalidInputError(
                    f"allowed host {name!r}: give a host name such as memory.example.lan "
                    "(or NAME:PORT), no scheme, path or wildcard"
                )
        if not 0 <= self.port <= 65535:
            raise InvalidInputError(f"port={self.port}: use 0-65535")
        if not is_loopback(self.host) and not self.require_keys:
            raise InvalidInputError(
                f"binding {self.host} exposes memory beyond this machine: create keys with "
                "`orcamem keys create` and pass --require-keys, or bind 127.0.0.1"
            )
        if self.upstream is not None:
            check_upstream(self.upstream)

    @property
    def upstream_base(self) -> str | None:
        return self.upstream.rstrip("/") if self.upstream else None

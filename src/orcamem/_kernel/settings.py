"""One configuration for every command and server: defaults < the file < the environment < flags.

The file is the ``[orcamem]`` table of ``$ORCA_HOME/config.toml`` (the file local memory reads
its ``auto_memory`` from; ``$ORCAMEM_CONFIG`` names another one), read by pydantic-settings' TOML
source. The environment comes from ``env.settings_environ`` (``ORCAMEM_*``): orcamem reads the
environment in ``env`` alone, so the tests' strip covers every variable. Flags are what a command
was given. :func:`load` merges the layers, checks the result once (a bad value is an
``InvalidInputError`` naming where it came from and the rule it broke) and keeps each value's
origin for ``orcamem config show``.

API keys come from the environment only (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``: the names
the providers' own clients read): a key written in the file is refused, not silently unused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, TomlConfigSettingsSource

from ..errors import InvalidInputError
from . import env
from .config import Config, PackConfig, SleepConfig
from .embed import check_spec
from .redact import safe_url

__all__ = ["ENV_NAMES", "ORIGINS", "Loaded", "Settings", "check_upstream", "load"]

ORIGINS = ("default", "file", "env", "flag")
"""Where a value can come from, weakest first."""

TABLE = "orcamem"
"""The settings' table in the file (the file's other keys belong to local memory)."""

ENV_NAMES = {
    "db": env.DB_ENV,
    "embedder": env.EMBEDDER_ENV,
    "timezone": env.TIMEZONE_ENV,
    "context_budget": env.CONTEXT_BUDGET_ENV,
    "auto_sleep": env.AUTO_SLEEP_ENV,
    "log_blocks": env.LOG_BLOCKS_ENV,
    "log_block_content": env.LOG_BLOCK_CONTENT_ENV,
    "upstream": env.UPSTREAM_ENV,
    "model": env.MODEL_ENV,
    "require_keys": env.REQUIRE_KEYS_ENV,
    "proxy_max_body_mb": env.PROXY_MAX_BODY_ENV,
    "upstream_timeout": env.UPSTREAM_TIMEOUT_ENV,
    "openai_api_key": env.OPENAI_API_KEY_ENV,
    "anthropic_api_key": env.ANTHROPIC_API_KEY_ENV,
}
"""The variable of each setting."""

SECRETS = ("openai_api_key", "anthropic_api_key")


def check_upstream(url: str) -> str:
    """``url`` if it is an http(s) base URL (the proxy forwards to it, sleep asks it)."""
    if not url.startswith(("http://", "https://")):
        raise InvalidInputError(
            f"upstream {safe_url(url)!r} must be an http(s) URL such as http://127.0.0.1:11434/v1"
        )
    return url


def _rule(check: Any, **value: Any) -> None:
    """Run a ``Config`` section's check, raising only the rule it states (pydantic adds where)."""
    try:
        check(**value)
    except InvalidInputError as exc:
        raise ValueError(re.sub(r"^[a-z]+\.[a-z_]+=.*?: (?=use )", "", str(exc))) from None


class Settings(BaseSettings):
    """What every ``orcamem`` command and server runs with (docs/configuration.md)."""

    model_config = SettingsConfigDict(extra="forbid", frozen=True)

    db: str | None = None
    """The database: a file path (default ``<home>/memory.db``) or a URL the store accepts."""
    embedder: str = "static"
    """The embedder of new spaces; a space already embedded keeps its own (``reembed``)."""
    timezone: str = "UTC"
    """The user's IANA zone: consolidation counts "yesterday" from local days."""
    context_budget: int = PackConfig().context_budget_tokens
    """The memory block's budget in WordPiece tokens."""
    auto_sleep: bool = True
    """Servers consolidate in the background."""
    log_blocks: bool = False
    """Log every injected block: ids, tokens, the query's hash (``Config.pack.log_blocks``)."""
    log_block_content: bool = False
    """With ``log_blocks``, the query and the block's text too."""
    upstream: str | None = None
    """The OpenAI-compatible chat server the proxy forwards to and sleep asks."""
    model: str | None = None
    """The model at ``upstream`` (alone: a local Ollama)."""
    require_keys: bool = False
    """Servers require orcamem API keys on every request."""
    proxy_max_body_mb: float = 32.0
    """The largest request the proxy forwards, in MiB: a chat with inline images is large."""
    upstream_timeout: float = 600.0
    """Seconds the proxy waits for the model server's answer before a 504."""
    openai_api_key: SecretStr | None = None
    """Sent to OpenAI-compatible servers (environment only)."""
    anthropic_api_key: SecretStr | None = None
    """Consolidation by Claude when set and no upstream is named (environment only)."""

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: Any, init_settings: Any, **_: Any
    ) -> tuple[Any, ...]:
        """Only the values :func:`load` merged: the file and the environment are read there."""
        return (init_settings,)

    @field_validator("db", "model")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("give a value, or leave it out for the default")
        return value

    @field_validator("embedder")
    @classmethod
    def _embedder(cls, value: str) -> str:
        _rule(check_spec, spec=value)
        return value

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        _rule(SleepConfig, timezone=value)
        return value

    @field_validator("context_budget")
    @classmethod
    def _budget(cls, value: int) -> int:
        _rule(PackConfig, context_budget_tokens=value)
        return value

    @field_validator("upstream")
    @classmethod
    def _upstream(cls, value: str | None) -> str | None:
        return None if value is None else check_upstream(value)

    @field_validator("proxy_max_body_mb", "upstream_timeout")
    @classmethod
    def _positive(cls, value: float) -> float:
        if not 0 < value <= 100_000:  # NaN fails too
            raise ValueError("use a positive number (at most 100000)")
        return value

    def config(self, base: Config | None = None, *, auto_sleep: bool = False) -> Config:
        """``base`` (default ``Config()``) with the time zone, the block budget and the block
        log of these settings, and the background sleeper on when ``auto_sleep`` (servers pass theirs)."""
        base = base or Config()
        return base.with_(
            pack=base.pack.with_(
                context_budget_tokens=self.context_budget,
                log_blocks=self.log_blocks,
                log_block_content=self.log_block_content,
            ),
            sleep=base.sleep.with_(timezone=self.timezone, auto=auto_sleep),
        )

    def secret(self, name: str) -> str | None:
        """The key ``name`` in clear (``None`` when unset): only the caller that sends it asks."""
        value = getattr(self, name)
        return value.get_secret_value() if value is not None else None


@dataclass(frozen=True)
class Loaded:
    """Settings and, per setting, its origin (``ORIGINS``) and where (a file, a variable)."""

    settings: Settings
    origins: dict[str, str]
    where: dict[str, str]

    @property
    def embedder(self) -> str | None:
        """What to open a ``Memory`` with: the embedder a file, variable or flag set, else
        ``None``, so each space opens with the embedder it records (a new one: the default)."""
        return None if self.origins["embedder"] == "default" else self.settings.embedder

    def rows(self) -> list[dict[str, Any]]:
        """One row per setting for ``orcamem config show``: keys are shown masked, and so is
        the password of a URL (``postgresql://orca:…@db``, an upstream's ``user:…@``)."""
        rows = []
        for name in Settings.model_fields:
            value = getattr(self.settings, name)
            if name in SECRETS:
                value = None if value is None else "********"
            elif name == "db" and value is None:
                value = str(env.default_db_path())
            elif isinstance(value, str):
                value = safe_url(value)
            rows.append(
                {
                    "name": name,
                    "value": value,
                    "origin": self.origins[name],
                    "where": self.where[name],
                    "env": ENV_NAMES[name],
                }
            )
        return rows


def _file_values() -> tuple[dict[str, Any], str]:
    path = env.config_file()
    if env.settings_file_named() and not path.is_file():
        raise InvalidInputError(
            f"{env.CONFIG_ENV}={path} "
            f"{'is a directory' if path.is_dir() else 'does not exist'}: "
            f"point it at your settings file, or unset it to use {env.user_config_file()}"
        )
    try:
        values = TomlConfigSettingsSource(Settings, toml_file=path, toml_table_header=(TABLE,))()
    except KeyError:  # the file exists without an [orcamem] table
        return {}, str(path)
    except (AttributeError, TypeError):  # orcamem = "…": the source expects a table
        raise InvalidInputError(f"{path}: [{TABLE}] must be a table of settings") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # TOMLDecodeError is a ValueError
        raise InvalidInputError(
            f"cannot read the settings in {path} ({exc}): fix the file, or point "
            f"{env.CONFIG_ENV} at another one"
        ) from None
    for name in SECRETS:
        if name in values:
            raise InvalidInputError(
                f"{name} in {path}: keep API keys out of files; set {ENV_NAMES[name]} in the "
                "environment instead"
            )
    return dict(values), str(path)


def load(flags: dict[str, Any] | None = None) -> Loaded:
    """The settings of this process: the file, then the environment, then ``flags`` (``None``
    values are flags not given).

    Raises:
        InvalidInputError: a value breaks its rule, or the file is unreadable or names a
            setting that does not exist; the message says which value, from where, and why.
    """
    file_values, path = _file_values()
    given = {k: v for k, v in (flags or {}).items() if v is not None}
    environ = env.settings_environ()
    layers = (
        ("file", file_values, lambda name: f"{path} [{TABLE}]"),
        (
            "env",
            {f: environ[v] for f, v in ENV_NAMES.items() if v in environ},
            lambda name: ENV_NAMES[name],
        ),
        ("flag", given, lambda name: _flag(name, given[name])),
    )
    values: dict[str, Any] = {}
    origins = dict.fromkeys(Settings.model_fields, "default")
    where = dict.fromkeys(Settings.model_fields, "")
    for origin, layer, place in layers:
        for name, value in layer.items():
            values[name] = value
            origins[name] = origin
            where[name] = place(name)
    try:
        settings = Settings(**values)
    except ValidationError as exc:
        raise InvalidInputError(
            "; ".join(_explain(e, values, where) for e in exc.errors())
        ) from None
    return Loaded(settings, origins, where)


def _flag(name: str, value: Any) -> str:
    """The flag as typed: ``--context-budget``, ``--no-auto-sleep``."""
    return f"--{'no-' if value is False else ''}{name.replace('_', '-')}"


def _explain(error: Any, values: dict[str, Any], where: dict[str, str]) -> str:
    name = str(error["loc"][0]) if error["loc"] else "?"
    if error["type"] == "extra_forbidden":
        known = ", ".join(n for n in Settings.model_fields if n not in SECRETS)
        return f"{name} (from {where.get(name)}) is not a setting: use one of {known}"
    value = values.get(name)
    shown = (
        "********"
        if name in SECRETS
        else repr(safe_url(value) if isinstance(value, str) else value)
    )
    rule = str(error["msg"]).removeprefix("Value error, ")
    return f"{name}={shown} (from {where.get(name) or 'the default'}): {rule}"

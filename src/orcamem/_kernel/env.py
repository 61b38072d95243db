"""The environment, read in one place: every variable orcamem reads is named and read here.

Each reader takes an optional ``environ`` mapping (tests pass a dict; ``None`` is
``os.environ``). :data:`NAMES` lists every variable the readers (and the CLI's ``--db``
option) read, so a test fixture can strip exactly those; ``tests/test_env.py`` fails if code
outside this module reads the environment or a reader reads a name missing from ``NAMES``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "ANTHROPIC_API_KEY_ENV",
    "ANTHROPIC_BASE_URL_ENV",
    "ANTHROPIC_MEMORY_MODEL_ENV",
    "ANTHROPIC_MODEL_ENV",
    "AUTO_SLEEP_ENV",
    "CONFIG_ENV",
    "CONTEXT_BUDGET_ENV",
    "DB_ENV",
    "DEFAULT_ANTHROPIC_BASE_URL",
    "DEFAULT_ANTHROPIC_MEMORY_MODEL",
    "DEFAULT_ANTHROPIC_MODEL",
    "EMBEDDER_ENV",
    "HEADROOM_PYTHON_ENV",
    "HOME_ENV",
    "LOG_BLOCKS_ENV",
    "LOG_BLOCK_CONTENT_ENV",
    "MODEL_ENV",
    "NAMES",
    "OPENAI_API_KEY_ENV",
    "OTEL_SERVICE_ENV",
    "OTLP_ENDPOINT_ENV",
    "OTLP_TRACES_ENDPOINT_ENV",
    "PASSTHROUGH",
    "PROFILES_ENV",
    "PROFILE_ENV",
    "PROMETHEUS_DIR",
    "PROXY_MAX_BODY_ENV",
    "REQUIRE_KEYS_ENV",
    "SETTINGS_NAMES",
    "TIMEZONE_ENV",
    "UPSTREAM_ENV",
    "UPSTREAM_TIMEOUT_ENV",
    "S3Settings",
    "anthropic_api_key",
    "anthropic_base_url",
    "anthropic_memory_model",
    "anthropic_model",
    "child_environ",
    "child_environ_importing",
    "config_file",
    "default_db_path",
    "exported",
    "headroom_python",
    "home_dir",
    "instance_config_path",
    "memory_bank_dir",
    "memory_bank_profiles_path",
    "memory_bank_s3",
    "memory_bank_storage",
    "memory_dir",
    "openai_api_key",
    "otlp_endpoint",
    "otlp_service",
    "settings_environ",
    "settings_file_named",
    "user_config_file",
]

Environ = Mapping[str, str]

HOME_ENV = "ORCA_HOME"
"""orcamem's home (``~/.orca`` when unset): the database, config and memory live under it."""
CONFIG_ENV = "ORCAMEM_CONFIG"
"""The settings file, when not ``<home>/config.toml`` (``_kernel.settings``)."""
DB_ENV = "ORCAMEM_DB"
"""The database every command and server opens (``_kernel.settings``: the ``db`` setting)."""
EMBEDDER_ENV = "ORCAMEM_EMBEDDER"
TIMEZONE_ENV = "ORCAMEM_TIMEZONE"
CONTEXT_BUDGET_ENV = "ORCAMEM_CONTEXT_BUDGET"
AUTO_SLEEP_ENV = "ORCAMEM_AUTO_SLEEP"
LOG_BLOCKS_ENV = "ORCAMEM_LOG_BLOCKS"
"""Log every injected block (ids, tokens, the query's hash; ``engine.blocklog``)."""
LOG_BLOCK_CONTENT_ENV = "ORCAMEM_LOG_BLOCK_CONTENT"
"""With the block log on, keep the query and the block's text in it too."""
UPSTREAM_ENV = "ORCAMEM_UPSTREAM"
MODEL_ENV = "ORCAMEM_MODEL"
REQUIRE_KEYS_ENV = "ORCAMEM_REQUIRE_KEYS"
PROXY_MAX_BODY_ENV = "ORCAMEM_PROXY_MAX_BODY_MB"
UPSTREAM_TIMEOUT_ENV = "ORCAMEM_UPSTREAM_TIMEOUT"
PROMETHEUS_DIR = "PROMETHEUS_MULTIPROC_DIR"
"""Where prometheus_client's multiprocess mode keeps each ``--workers`` process's counts: set
by the server for the workers it spawns (:func:`exported`), read only by prometheus_client, so
not one of :data:`NAMES`."""
OTLP_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
"""OpenTelemetry's standard collector base URL: when set, servers export spans (``_kernel.trace``)."""
OTLP_TRACES_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
OTEL_SERVICE_ENV = "OTEL_SERVICE_NAME"
"""The ``service.name`` exported spans carry (tell replicas apart); default ``orcamem``."""
OPENAI_API_KEY_ENV = "OPENAI_API_KEY"
ANTHROPIC_API_KEY_ENV = "ANTHROPIC_API_KEY"
ANTHROPIC_MODEL_ENV = "ORCAMEM_ANTHROPIC_MODEL"
ANTHROPIC_BASE_URL_ENV = "ANTHROPIC_BASE_URL"
ANTHROPIC_MEMORY_MODEL_ENV = "ANTHROPIC_MEMORY_MODEL"
HEADROOM_PYTHON_ENV = "ORCAMEM_HEADROOM_PYTHON"
"""Names the interpreter of a Headroom (``headroom-ai``) install, overriding the uv tool path."""
PROFILES_ENV = "ORCAMEM_PROFILES"
PROFILE_ENV = "ORCAMEM_PROFILE"
"""``orcamem mcp``'s ``--profile`` default: the profile a stdio session's memory tools work on
(read by Typer through ``envvar=``; listed so tests strip it)."""
BANK_ENV = "ORCAMEM_BANK"
"""The Memory Bank's storage when no bucket is set: ``file`` (default) or ``memory``."""
BANK_STORAGES = ("file", "memory")

_S3_PREFIXES = ("INTERNAL_S3_", "S3_")
"""The Memory Bank's bucket variables, tried in this order."""
_S3_FIELDS = ("BUCKET", "ENDPOINT", "REGION", "ACCESS_KEY_ID", "SECRET_ACCESS_KEY", "SESSION_TOKEN")
_AWS_REGION = ("AWS_REGION", "AWS_DEFAULT_REGION")
_AWS_ENDPOINT = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
_AWS_ACCESS_KEY_ID = "AWS_ACCESS_KEY_ID"
_AWS_SECRET_ACCESS_KEY = "AWS_SECRET_ACCESS_KEY"
_AWS_SESSION_TOKEN = "AWS_SESSION_TOKEN"

SETTINGS_NAMES: tuple[str, ...] = (
    DB_ENV,
    EMBEDDER_ENV,
    TIMEZONE_ENV,
    CONTEXT_BUDGET_ENV,
    AUTO_SLEEP_ENV,
    LOG_BLOCKS_ENV,
    LOG_BLOCK_CONTENT_ENV,
    UPSTREAM_ENV,
    MODEL_ENV,
    REQUIRE_KEYS_ENV,
    PROXY_MAX_BODY_ENV,
    UPSTREAM_TIMEOUT_ENV,
    OPENAI_API_KEY_ENV,
    ANTHROPIC_API_KEY_ENV,
)
"""The variables of ``_kernel.settings`` (each names one setting), read by :func:`settings_environ`."""

NAMES: tuple[str, ...] = (
    HOME_ENV,
    CONFIG_ENV,
    *SETTINGS_NAMES,
    ANTHROPIC_MODEL_ENV,
    ANTHROPIC_BASE_URL_ENV,
    ANTHROPIC_MEMORY_MODEL_ENV,
    HEADROOM_PYTHON_ENV,
    PROFILES_ENV,
    PROFILE_ENV,
    BANK_ENV,
    OTLP_ENDPOINT_ENV,
    OTLP_TRACES_ENDPOINT_ENV,
    OTEL_SERVICE_ENV,
    *(prefix + name for prefix in _S3_PREFIXES for name in _S3_FIELDS),
    *_AWS_REGION,
    *_AWS_ENDPOINT,
    _AWS_ACCESS_KEY_ID,
    _AWS_SECRET_ACCESS_KEY,
    _AWS_SESSION_TOKEN,
)
"""Every variable orcamem reads as a setting; a test fixture strips exactly these."""

PASSTHROUGH: tuple[str, ...] = ("PYTHONPATH",)
"""Variables orcamem only hands on to a child orcamem process (never interprets). Not in
``NAMES``: stripping them would make a test's child process import another checkout."""

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-6"
"""The Claude model used when neither ``model=`` nor ``$ORCAMEM_ANTHROPIC_MODEL`` names one."""

DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"

DEFAULT_ANTHROPIC_MEMORY_MODEL = "claude-haiku-4-5-20251001"
"""The model the Memory Bank's processor uses when ``$ANTHROPIC_MEMORY_MODEL`` names none."""


@contextmanager
def exported(name: str, value: str) -> Iterator[None]:
    """``name=value`` in this process's environment, so in every child it spawns, for the
    block; then as it was before."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def _env(environ: Environ | None) -> Environ:
    return os.environ if environ is None else environ


def _value(environ: Environ | None, name: str) -> str:
    """The variable stripped of blanks, ``""`` when unset: a blank value counts as unset."""
    return (_env(environ).get(name) or "").strip()


# -- home and the files under it ----------------------------------------------------------------


def home_dir(environ: Environ | None = None) -> Path:
    """``$ORCA_HOME`` if set, else ``~/.orca``: the only place orcamem reads its home from."""
    value = _env(environ).get(HOME_ENV)
    return Path(value).expanduser() if value else Path.home() / ".orca"


def memory_dir(environ: Environ | None = None) -> Path:
    """Local agent memory's root: ``$ORCA_HOME/memory`` if set, else ``~/.orca/memory``."""
    return home_dir(environ) / "memory"


def user_config_file(environ: Environ | None = None) -> Path:
    """The user's ``config.toml`` (``auto_memory = false`` lives here): ``<home>/config.toml``."""
    return home_dir(environ) / "config.toml"


def default_db_path(environ: Environ | None = None) -> Path:
    """The engine's database when no path is given: ``<home>/memory.db``."""
    return home_dir(environ) / "memory.db"


def config_file(environ: Environ | None = None) -> Path:
    """The settings file (its ``[orcamem]`` table): ``$ORCAMEM_CONFIG`` if set, else
    :func:`user_config_file` (``<home>/config.toml``, the file local memory reads too)."""
    value = _value(environ, CONFIG_ENV)
    return Path(value).expanduser() if value else user_config_file(environ)


def settings_file_named(environ: Environ | None = None) -> bool:
    """Whether ``$ORCAMEM_CONFIG`` names the settings file (then it must exist: a misspelt
    path must not leave every setting at its default without a word)."""
    return bool(_value(environ, CONFIG_ENV))


def settings_environ(environ: Environ | None = None) -> dict[str, str]:
    """The :data:`SETTINGS_NAMES` that are set (blank counts as unset), stripped of blanks."""
    return {name: value for name in SETTINGS_NAMES if (value := _value(environ, name))}


def instance_config_path(environ: Environ | None = None) -> Path:
    """The instance-wide ``config.json`` (its ``memory`` object is the memory capability's base
    layer): ``$ORCA_HOME/config.json``, else ``~/.orca/config.json``."""
    return home_dir(environ) / "config.json"


def headroom_python(environ: Environ | None = None) -> Path:
    """The Python of the ``headroom-ai`` install the ``headroom-mcp`` memory provider runs:
    ``$ORCAMEM_HEADROOM_PYTHON`` if set, else where ``uv tool install headroom-ai`` puts it
    (``~/.local/share/uv/tools/headroom-ai/bin/python``)."""
    value = _value(environ, HEADROOM_PYTHON_ENV)
    if value:
        return Path(value).expanduser()
    return Path.home() / ".local" / "share" / "uv" / "tools" / "headroom-ai" / "bin" / "python"


def child_environ(environ: Environ | None = None) -> dict[str, str]:
    """The :data:`PASSTHROUGH` variables that are set, for a child process started with a
    minimal environment (so it imports the same orcamem as this process)."""
    env = _env(environ)
    return {name: env[name] for name in PASSTHROUGH if name in env}


def child_environ_importing(environ: Environ | None = None) -> dict[str, str]:
    """This whole environment with the folder this orcamem is imported from first on
    ``PYTHONPATH``: a child started with it imports the same orcamem as this process, even
    one a caller put on ``sys.path`` itself."""
    env = dict(_env(environ))
    path = env.get(PASSTHROUGH[0])
    folder = str(Path(__file__).resolve().parents[2])
    env[PASSTHROUGH[0]] = folder + (os.pathsep + path if path else "")
    return env


def otlp_endpoint(environ: Environ | None = None) -> str | None:
    """Where spans go: ``$OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` as it is, else
    ``$OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/traces`` (OpenTelemetry's rule), else ``None``."""
    traces = _value(environ, OTLP_TRACES_ENDPOINT_ENV)
    if traces:
        return traces
    base = _value(environ, OTLP_ENDPOINT_ENV)
    return f"{base.rstrip('/')}/v1/traces" if base else None


def otlp_service(environ: Environ | None = None) -> str:
    """``$OTEL_SERVICE_NAME`` if set, else ``orcamem``."""
    return _value(environ, OTEL_SERVICE_ENV) or "orcamem"


# -- model providers ----------------------------------------------------------------------------


def openai_api_key(environ: Environ | None = None) -> str | None:
    """``$OPENAI_API_KEY``, sent to OpenAI-compatible embedding servers when set."""
    return _env(environ).get(OPENAI_API_KEY_ENV) or None


def anthropic_api_key(environ: Environ | None = None) -> str | None:
    """``$ANTHROPIC_API_KEY``: when set (and no ``--upstream`` is given) consolidation uses Claude."""
    return _env(environ).get(ANTHROPIC_API_KEY_ENV) or None


def anthropic_model(environ: Environ | None = None) -> str:
    """``$ORCAMEM_ANTHROPIC_MODEL`` if set, else :data:`DEFAULT_ANTHROPIC_MODEL`."""
    return _value(environ, ANTHROPIC_MODEL_ENV) or DEFAULT_ANTHROPIC_MODEL


def anthropic_base_url(environ: Environ | None = None) -> str:
    """``$ANTHROPIC_BASE_URL`` (a gateway or proxy, as the Anthropic SDKs read it), else the API."""
    return _value(environ, ANTHROPIC_BASE_URL_ENV) or DEFAULT_ANTHROPIC_BASE_URL


def anthropic_memory_model(environ: Environ | None = None) -> str:
    """``$ANTHROPIC_MEMORY_MODEL`` if set, else :data:`DEFAULT_ANTHROPIC_MEMORY_MODEL`."""
    return _value(environ, ANTHROPIC_MEMORY_MODEL_ENV) or DEFAULT_ANTHROPIC_MEMORY_MODEL


# -- the Memory Bank (issue 5) ------------------------------------------------------------------


@dataclass(frozen=True)
class S3Settings:
    """Where an S3-compatible bucket is and how to sign for it (the secret is not in ``repr``)."""

    bucket: str
    endpoint: str
    region: str = "us-east-1"
    access_key_id: str | None = None
    secret_access_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    source: str = ""
    """The variable that named the bucket (``INTERNAL_S3_BUCKET`` or ``S3_BUCKET``)."""


def _s3_from(environ: Environ | None, prefix: str) -> S3Settings | None:
    bucket = _value(environ, f"{prefix}BUCKET")
    if not bucket:
        return None

    def pick(*names: str) -> str | None:
        return next((value for name in names if (value := _value(environ, name))), None)

    region = pick(f"{prefix}REGION", *_AWS_REGION) or "us-east-1"
    endpoint = pick(f"{prefix}ENDPOINT", *_AWS_ENDPOINT)
    return S3Settings(
        bucket=bucket,
        endpoint=endpoint or f"https://s3.{region}.amazonaws.com",
        region=region,
        access_key_id=pick(f"{prefix}ACCESS_KEY_ID", _AWS_ACCESS_KEY_ID),
        secret_access_key=pick(f"{prefix}SECRET_ACCESS_KEY", _AWS_SECRET_ACCESS_KEY),
        session_token=pick(f"{prefix}SESSION_TOKEN", _AWS_SESSION_TOKEN),
        source=f"{prefix}BUCKET",
    )


def memory_bank_s3(environ: Environ | None = None) -> S3Settings | None:
    """The Memory Bank's bucket: ``$INTERNAL_S3_BUCKET`` and friends, else ``$S3_BUCKET`` and
    friends (single-bucket dev/CI setups), else ``None`` (the bank keeps its objects in
    :func:`memory_bank_dir`, or in memory only when :func:`memory_bank_storage` says so).

    Friends of ``<P>BUCKET`` (``<P>`` is ``INTERNAL_S3_`` or ``S3_``): ``<P>ENDPOINT``,
    ``<P>REGION``, ``<P>ACCESS_KEY_ID``, ``<P>SECRET_ACCESS_KEY``, ``<P>SESSION_TOKEN``, each
    falling back to the standard ``AWS_ENDPOINT_URL_S3``/``AWS_ENDPOINT_URL``,
    ``AWS_REGION``/``AWS_DEFAULT_REGION``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
    ``AWS_SESSION_TOKEN``; without an endpoint, AWS S3 in the region (default ``us-east-1``).
    """
    return next(
        (s3 for prefix in _S3_PREFIXES if (s3 := _s3_from(environ, prefix)) is not None), None
    )


def memory_bank_profiles_path(environ: Environ | None = None) -> Path:
    """The Memory Bank's profile list: ``$ORCAMEM_PROFILES`` if set, else
    ``$ORCA_HOME/profiles.json`` (a JSON list of ``{"name": ..., "tools": [...]}``)."""
    value = _value(environ, PROFILES_ENV)
    return Path(value).expanduser() if value else home_dir(environ) / "profiles.json"


def memory_bank_dir(environ: Environ | None = None) -> Path:
    """The Memory Bank's directory when no bucket is set: ``$ORCA_HOME/bank`` (``~/.orca/bank``)."""
    return home_dir(environ) / "bank"


def memory_bank_storage(environ: Environ | None = None) -> str | None:
    """``$ORCAMEM_BANK`` lower-cased, ``None`` when unset: ``memory`` (in memory only, lost at
    exit) or ``file`` (the :func:`memory_bank_dir` directory even when a bucket is set); the
    Memory Bank refuses any other value (``InvalidInputError``)."""
    return _value(environ, BANK_ENV).lower() or None

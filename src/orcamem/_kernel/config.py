"""Configuration: one frozen object; the environment is read only by the functions here."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError

__all__ = [
    "DEFAULT_ANTHROPIC_BASE_URL",
    "DEFAULT_ANTHROPIC_MEMORY_MODEL",
    "DEFAULT_ANTHROPIC_MODEL",
    "Config",
    "S3Settings",
    "anthropic_api_key",
    "anthropic_base_url",
    "anthropic_memory_model",
    "anthropic_model",
    "default_db_path",
    "headroom_python",
    "home_dir",
    "instance_config_path",
    "memory_bank_profiles_path",
    "memory_bank_s3",
    "memory_dir",
    "openai_api_key",
    "user_config_file",
]

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-6"
"""The Claude model used when neither ``model=`` nor ``$ORCAMEM_ANTHROPIC_MODEL`` names one."""

DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"


def home_dir(environ: dict[str, str] | None = None) -> Path:
    """``$ORCA_HOME`` if set, else ``~/.orca``: the only place orcamem reads its home from."""
    env = os.environ if environ is None else environ
    value = env.get("ORCA_HOME")
    return Path(value).expanduser() if value else Path.home() / ".orca"


def memory_dir(environ: dict[str, str] | None = None) -> Path:
    """Local agent memory's root: ``$ORCA_HOME/memory`` if set, else ``~/.orca/memory``."""
    return home_dir(environ) / "memory"


def user_config_file(environ: dict[str, str] | None = None) -> Path:
    """The user's ``config.toml`` (``auto_memory = false`` lives here): ``<home>/config.toml``."""
    return home_dir(environ) / "config.toml"


def openai_api_key(environ: dict[str, str] | None = None) -> str | None:
    """``$OPENAI_API_KEY``, sent to OpenAI-compatible embedding servers when set."""
    env = os.environ if environ is None else environ
    return env.get("OPENAI_API_KEY") or None


def anthropic_api_key(environ: dict[str, str] | None = None) -> str | None:
    """``$ANTHROPIC_API_KEY``: when set (and no ``--upstream`` is given) consolidation uses Claude."""
    env = os.environ if environ is None else environ
    return env.get("ANTHROPIC_API_KEY") or None


def anthropic_model(environ: dict[str, str] | None = None) -> str:
    """``$ORCAMEM_ANTHROPIC_MODEL`` if set, else :data:`DEFAULT_ANTHROPIC_MODEL`."""
    env = os.environ if environ is None else environ
    return (env.get("ORCAMEM_ANTHROPIC_MODEL") or "").strip() or DEFAULT_ANTHROPIC_MODEL


def anthropic_base_url(environ: dict[str, str] | None = None) -> str:
    """``$ANTHROPIC_BASE_URL`` (a gateway or proxy, as the Anthropic SDKs read it), else the API."""
    env = os.environ if environ is None else environ
    return (env.get("ANTHROPIC_BASE_URL") or "").strip() or DEFAULT_ANTHROPIC_BASE_URL


def default_db_path(environ: dict[str, str] | None = None) -> Path:
    return home_dir(environ) / "memory.db"


def instance_config_path(environ: dict[str, str] | None = None) -> Path:
    """The instance-wide ``config.json`` (its ``memory`` object is the memory capability's base
    layer): ``$ORCA_HOME/config.json``, else ``~/.orca/config.json``."""
    return home_dir(environ) / "config.json"


HEADROOM_PYTHON_ENV = "ORCAMEM_HEADROOM_PYTHON"
"""Names the interpreter of a Headroom (``headroom-ai``) install, overriding the uv tool path."""


def headroom_python(environ: dict[str, str] | None = None) -> Path:
    """The Python of the ``headroom-ai`` install the ``headroom-mcp`` memory provider runs:
    ``$ORCAMEM_HEADROOM_PYTHON`` if set, else where ``uv tool install headroom-ai`` puts it
    (``~/.local/share/uv/tools/headroom-ai/bin/python``)."""
    env = os.environ if environ is None else environ
    value = (env.get(HEADROOM_PYTHON_ENV) or "").strip()
    if value:
        return Path(value).expanduser()
    return Path.home() / ".local" / "share" / "uv" / "tools" / "headroom-ai" / "bin" / "python"


# -- the Memory Bank (issue 5) ------------------------------------------------------------------

DEFAULT_ANTHROPIC_MEMORY_MODEL = "claude-haiku-4-5-20251001"
"""The model the Memory Bank's processor uses when ``$ANTHROPIC_MEMORY_MODEL`` names none."""


def anthropic_memory_model(environ: dict[str, str] | None = None) -> str:
    """``$ANTHROPIC_MEMORY_MODEL`` if set, else :data:`DEFAULT_ANTHROPIC_MEMORY_MODEL`."""
    env = os.environ if environ is None else environ
    return (env.get("ANTHROPIC_MEMORY_MODEL") or "").strip() or DEFAULT_ANTHROPIC_MEMORY_MODEL


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


def _s3_from(env: Any, prefix: str) -> S3Settings | None:
    bucket = (env.get(f"{prefix}BUCKET") or "").strip()
    if not bucket:
        return None

    def pick(*names: str) -> str | None:
        for name in names:
            value = (env.get(name) or "").strip()
            if value:
                return value
        return None

    region = pick(f"{prefix}REGION", "AWS_REGION", "AWS_DEFAULT_REGION") or "us-east-1"
    endpoint = pick(f"{prefix}ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
    return S3Settings(
        bucket=bucket,
        endpoint=endpoint or f"https://s3.{region}.amazonaws.com",
        region=region,
        access_key_id=pick(f"{prefix}ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID"),
        secret_access_key=pick(f"{prefix}SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY"),
        session_token=pick(f"{prefix}SESSION_TOKEN", "AWS_SESSION_TOKEN"),
        source=f"{prefix}BUCKET",
    )


def memory_bank_s3(environ: dict[str, str] | None = None) -> S3Settings | None:
    """The Memory Bank's bucket: ``$INTERNAL_S3_BUCKET`` and friends, else ``$S3_BUCKET`` and
    friends (single-bucket dev/CI setups), else ``None`` (the bank runs in memory only).

    Friends of ``<P>BUCKET`` (``<P>`` is ``INTERNAL_S3_`` or ``S3_``): ``<P>ENDPOINT``,
    ``<P>REGION``, ``<P>ACCESS_KEY_ID``, ``<P>SECRET_ACCESS_KEY``, ``<P>SESSION_TOKEN``, each
    falling back to the standard ``AWS_ENDPOINT_URL_S3``/``AWS_ENDPOINT_URL``,
    ``AWS_REGION``/``AWS_DEFAULT_REGION``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
    ``AWS_SESSION_TOKEN``; without an endpoint, AWS S3 in the region (default ``us-east-1``).
    """
    env = os.environ if environ is None else environ
    return _s3_from(env, "INTERNAL_S3_") or _s3_from(env, "S3_")


def memory_bank_profiles_path(environ: dict[str, str] | None = None) -> Path:
    """The Memory Bank's profile list: ``$ORCAMEM_PROFILES`` if set, else
    ``$ORCA_HOME/profiles.json`` (a JSON list of ``{"name": ..., "tools": [...]}``)."""
    env = os.environ if environ is None else environ
    value = (env.get("ORCAMEM_PROFILES") or "").strip()
    return Path(value).expanduser() if value else home_dir(environ) / "profiles.json"


@dataclass(frozen=True)
class Config:
    """Every switch of the engine. Pass ``Memory(config=Config(...))`` or use ``with_``.

    Recall switches follow the episode-engine spec (``enable_*``); numbers without a seed
    value are tuned by ``orcamem bench locomo`` and documented in docs/recall.md.
    """

    # -- recall candidates and fusion
    preset: str = "hybrid"
    """Recall preset: a named set of signal weights (see ``recall.presets``)."""
    top_k: int = 10
    lexical_candidates: int = 100
    vector_candidates: int = 100
    lexical_context_weight: float = 0.4
    """BM25 weight of a line's lexical context (speaker, date, neighbouring turns) against 1.0
    for the line's own words."""
    fusion: str = "minmax"
    """``minmax`` (normalised score fusion) or ``rrf`` (reciprocal rank fusion, k=60)."""
    noise_floor_percentile: float = 50.0
    """Vector hits under this percentile of random pairwise cosine carry no weight (spec: 50th)."""
    neighbour_weights_before: tuple[float, ...] = (0.4, 0.3)
    """A turn borrows these shares of the score of the turn 1, 2, … places *after* it in its
    session (the question or remark that a matching reply answers)."""
    neighbour_weights_after: tuple[float, ...] = (0.4, 0.3)
    """A turn borrows these shares of the score of the turn 1, 2, … places *before* it in its
    session (the reply that follows a matching turn often holds the fact)."""
    neighbour_sources: int = 30
    """Only this many best-matching turns lend to their neighbours (bounds recall's work)."""
    answer_share: float = 0.8
    """The least share a turn that asks a question (ends with ``?``) lends to the next turn,
    which answers it."""
    session_weight: float = 0.3
    """Additive bonus for a passage, times its session's strength: how well the session's
    ``session_top`` best turns match the query, the strongest session being 1."""
    session_top: int = 1
    """How many of a session's best turns its strength averages."""
    date_weight: float = 0.8
    """Additive bonus for a passage said on a date the query names (``May 8, 2022``,
    ``December 2023``, ``2023``), within the slack below."""
    date_slack_before_days: float = 1.0
    """Days before a named date that still count as said on it."""
    date_slack_after_days: float = 3.0
    """Days after a named date that still count as said on it (events are told later)."""
    novelty_threshold: float = 0.97
    """Hits whose cosine to an already selected hit is at least this are duplicates."""
    min_score: float = 0.0

    # -- signals (bounded additive boosts)
    enable_recency: bool = True
    recency_weight: float = 0.05
    recency_half_life_days: float = 30.0
    enable_usage: bool = True
    usage_weight: float = 0.05
    enable_hawkes: bool = True
    hawkes_alpha: float = 0.4
    hawkes_half_life_seconds: float = 1800.0
    hawkes_weight: float = 0.05
    enable_ebbinghaus: bool = True
    ebbinghaus_s0_days: float = 2.0
    ebbinghaus_gain: float = 0.5
    ebbinghaus_weight: float = 0.05
    enable_speaker_bonus: bool = True
    speaker_weight: float = 1.0

    # -- packing
    enable_sutra_packing: bool = True
    context_budget_tokens: int = 800
    max_forbidden_rules: int = 12
    max_passage_chars: int = 400

    # -- consolidation (sleep)
    timezone: str = "UTC"
    """The user's IANA zone: "yesterday" and "last week" are counted from local days."""
    sleep_batch_size: int = 32
    """Episodes per consolidation batch (one extractor call, one transaction)."""
    auto_sleep: bool = False
    """Consolidate in the background (a sleeper thread and a job worker per ``Memory``)."""
    sleep_idle_seconds: float = 120.0
    """Background: consolidate a space once no episode has arrived for this long."""
    sleep_batch_threshold: int = 32
    """Background: consolidate a space at once when this many episodes are pending."""
    sleep_lease_seconds: float = 120.0
    """How long a consolidation job's lease lasts between renewals (renewed every third)."""

    # -- storage
    synchronous: str = "FULL"
    """SQLite ``synchronous`` pragma: FULL survives power loss, NORMAL only process crashes."""
    busy_timeout_ms: int = 10_000
    blas_threads: int = 1
    """BLAS threads for the query path (one is ~25x faster on a busy 2-core machine)."""

    def __post_init__(self) -> None:
        if self.fusion not in ("minmax", "rrf"):
            raise InvalidInputError(f"fusion={self.fusion!r}: use 'minmax' or 'rrf'")
        if self.top_k < 1 or self.top_k > 1000:
            raise InvalidInputError(f"top_k={self.top_k}: use a number from 1 to 1000")
        if self.synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise InvalidInputError(
                f"synchronous={self.synchronous!r}: use OFF, NORMAL, FULL or EXTRA"
            )
        if not 0.0 < self.novelty_threshold <= 1.0:
            raise InvalidInputError("novelty_threshold must be in (0, 1]")
        if self.context_budget_tokens < 32:
            raise InvalidInputError("context_budget_tokens must be at least 32")

    def with_(self, **changes: Any) -> Config:
        """A copy with some fields changed (unknown names are an error)."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise InvalidInputError(f"unknown config field(s) {unknown}; known: {sorted(known)}")
        return replace(self, **changes)

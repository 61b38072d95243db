"""``orcamem doctor``'s report: the memory settings with where each value came from, and the
selected provider's state found by one real call (seed 004: providers say what they can do)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .providers import MemoryProvider, make_provider
from .settings import load_settings

__all__ = ["doctor_report"]


def doctor_report(
    workspace: str | Path,
    *,
    instance_config: str | Path | None = None,
    provider: MemoryProvider | None = None,
) -> dict[str, Any]:
    """What ``orcamem doctor`` shows: each setting with its origin and badge, rejected layers,
    and the selected provider's state (one real call) with its own notes. Read-only: nothing is
    created, searched into the log, or saved."""
    resolved = load_settings(workspace, instance_config=instance_config)
    settings = resolved.settings
    chosen = provider or make_provider(
        settings.provider, workspace, half_life_days=settings.decay_half_life_days
    )
    try:
        status = chosen.check()
        store = getattr(chosen, "store", None)
        files = store.summary() if store is not None and hasattr(store, "summary") else None
    finally:
        if provider is None:
            chosen.close()
    return {
        "workspace": str(Path(workspace)),
        "enabled": settings.enabled,
        "settings": resolved.to_dict(),
        "provider": status.to_dict(),
        "files": files,
    }

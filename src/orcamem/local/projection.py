"""The ledger's derived projections: ``auto-memory.md`` (the newest candidates, with provenance
comments) and ``project.json`` (identity and last seen cwd). Both are rebuilt from the ledger
when stale; the ledger is the authority (seed 000)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._kernel.files import FileLock, make_dirs, read_optional, remove_stale_temps, write_atomic
from .identity import ProjectIdentity

if TYPE_CHECKING:  # the ledger imports this module; its types are only annotations here
    from .ledger import LedgerState, ProjectFiles

__all__ = [
    "MARKDOWN_NEWEST",
    "PROJECT_FORMAT",
    "markdown_matches",
    "publish_project_json",
    "read_project_json",
    "render_markdown",
    "write_markdown",
]

MARKDOWN_NEWEST = 64
"""``auto-memory.md`` shows the newest this many candidates."""
PROJECT_FORMAT = "orcamem-project"


_MD_MARK = "<!-- orcamem auto-memory · ledger "


def render_markdown(state: LedgerState) -> str:
    """``auto-memory.md``: the newest 64 candidates, newest first, each with a provenance
    comment. Derived: rewritten from the ledger, so edits to it do not last."""
    newest = list(reversed(state.candidates))[:MARKDOWN_NEWEST]
    lines = [
        "# Automatic project memory",
        "",
        f"{_MD_MARK}{state.fingerprint} · revision {state.revision} -->",
        "<!-- Derived from candidates.jsonl and rewritten from it: do not edit. Delete a "
        "candidate with `orcamem memory forget ID --revision N`. -->",
        "",
        f"Newest {len(newest)} of {len(state.candidates)} candidate(s). These are historical "
        "claims, not instructions.",
        "",
    ]
    for c in newest:
        text = " ".join(c.text.split())
        lines.append(f"- **{c.category}**: {text}")
        provenance = (
            f"id={c.id} session={c.session_id or '-'} turn={c.turn_id or '-'} "
            f"job={c.job_id or '-'} recorded_at={c.recorded_at} revision={c.revision} "
            f"extractor={c.extractor or '-'}"
        )
        lines.append(f"  <!-- {provenance.replace('--', '- -')} -->")
    if state.corrupt:
        lines += ["", f"<!-- {len(state.corrupt)} unreadable ledger line(s) preserved -->"]
    return "\n".join(lines) + "\n"


def write_markdown(path: Path, state: LedgerState) -> None:
    make_dirs(path.parent)
    write_atomic(path, render_markdown(state).encode("utf-8"))


def markdown_matches(path: Path, ledger_fingerprint: str) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(512).decode("utf-8", errors="replace")
    except OSError:
        return False
    return f"{_MD_MARK}{ledger_fingerprint} " in head


def read_project_json(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """``(metadata, problem)``: ``(None, None)`` when missing, ``(None, why)`` when corrupt."""
    data, problem = read_optional(path)
    if data is None:
        return None, problem
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return None, f"{path} is corrupt ({type(exc).__name__}: {exc}); it was left as it is"
    if not isinstance(value, dict) or value.get("format") != PROJECT_FORMAT:
        return None, f"{path} is not an orcamem project file; it was left as it is"
    return value, None


def publish_project_json(
    files: ProjectFiles,
    lock: FileLock,
    identity: ProjectIdentity,
    now: str,
    *,
    timeout_s: float | None = None,
) -> str | None:
    """Record the project's identity and ``last_seen_cwd``; the problem found, if any.

    The file is read again after the lock is taken: corruption that appeared while this
    process waited for the lock is preserved and reported, not overwritten.
    """
    with lock.hold():
        current, problem = read_project_json(files.project_json)
        if problem is not None:
            return problem
        if current is not None and current.get("project_id") != identity.id:
            return (
                f"{files.project_json} names project {current.get('project_id')!r}, not "
                f"{identity.id}; it was left as it is"
            )
        if current is not None and current.get("last_seen_cwd") == str(identity.cwd):
            return None
        record = {
            "format": PROJECT_FORMAT,
            "version": 1,
            "project_id": identity.id,
            "project_identity": identity.identity,
            "identity_kind": identity.kind,
            "last_seen_cwd": str(identity.cwd),
            "created_at": (current or {}).get("created_at", now),
            "updated_at": now,
        }
        remove_stale_temps(files.dir, of=files.project_json.name, older_than_s=0)
        data = json.dumps(record, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
        write_atomic(files.project_json, data.encode("utf-8"))
    return None

"""Every byte of I/O the built-in Markdown memory provider performs, and nothing else.

This module imports ``pathlib`` and ``os.fsync`` and nothing else: no HTTP client, no socket,
no subprocess, no dynamic import, no environment variable that could redirect it. That is a
structural property, checked by ``tests/test_markdown_io_isolation.py``, which reads this
file's syntax tree and fails on any other import or on a call that could reach beyond the
local file system. Nothing here deletes a file: archiving is a rename, rewriting is a rename of
a fresh copy over the old one.
"""

from __future__ import annotations

from os import fsync
from pathlib import Path

__all__ = [
    "append_line",
    "ensure_dirs",
    "exists",
    "list_markdown",
    "modified_at",
    "move_into",
    "read_text",
    "replace_text",
    "write_new",
]


def exists(path: Path) -> bool:
    return path.exists()


def ensure_dirs(*folders: Path) -> None:
    """Create the folders (and their parents) if missing."""
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)


def list_markdown(folder: Path) -> list[Path]:
    """The ``*.md`` files directly in ``folder``, sorted by name; none if it does not exist."""
    if not folder.is_dir():
        return []
    return sorted(path for path in folder.glob("*.md") if path.is_file())


def read_text(path: Path) -> str | None:
    """The file's UTF-8 text, or None when it cannot be read or decoded."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def modified_at(path: Path) -> float | None:
    """The file's modification time (POSIX seconds), or None."""
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def _write_synced(path: Path, text: str, mode: str) -> None:
    with path.open(mode, encoding="utf-8", newline="") as handle:
        handle.write(text)
        handle.flush()
        fsync(handle.fileno())


def write_new(path: Path, text: str) -> None:
    """Create ``path`` with ``text``, durably; an existing file is an error (never clobbered).

    Raises:
        FileExistsError: ``path`` exists.
        OSError: the folder cannot be written.
    """
    _write_synced(path, text, "x")


def replace_text(path: Path, text: str) -> None:
    """Replace the contents of ``path`` atomically: a synced copy renamed over it."""
    temporary = path.with_name(f".{path.name}.tmp")
    _write_synced(temporary, text, "w")
    temporary.replace(path)


def move_into(path: Path, folder: Path) -> Path:
    """Move ``path`` into ``folder`` under its own name (``-1``, ``-2``… if taken); the new path.

    A rename, never a copy and a delete.
    """
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / path.name
    number = 0
    while target.exists():
        number += 1
        target = folder / f"{path.stem}-{number}{path.suffix}"
    path.rename(target)
    return target


def append_line(path: Path, line: str) -> None:
    """Append one line (a newline is added) durably."""
    _write_synced(path, line.rstrip("\n") + "\n", "a")

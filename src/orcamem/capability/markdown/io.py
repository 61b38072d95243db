"""Every byte of I/O the built-in Markdown memory provider performs, and nothing else.

This module imports ``pathlib``, ``os.fsync`` and the kernel's file helpers
(``orcamem._kernel.files``: the one atomic write, directory fsync, temp-file sweep) and nothing
else: no HTTP client, no socket, no subprocess, no dynamic import, no environment variable that
could redirect it. That is a structural property, checked by
``tests/test_markdown_io_isolation.py``, which reads this file's (and those helpers') syntax
tree and fails on any other import or on a call that could reach beyond the local file system.
Nothing here deletes a memory file: archiving is a rename, rewriting is a rename of a fresh
copy over the old one; the only files ever removed are the ``.<name>.<pid>.<hex>.tmp`` copies a
killed writer left (:func:`remove_stale_temps`, on open).
"""

from __future__ import annotations

from os import fsync
from pathlib import Path

from orcamem._kernel.files import (
    FileLock,
    fsync_dir,
    make_dirs,
    remove_stale_temps,
    write_atomic,
)
from orcamem._kernel.files import write_new as create_whole

__all__ = [
    "append_line",
    "ensure_dirs",
    "exists",
    "list_markdown",
    "lock",
    "modified_at",
    "move_into",
    "read_text",
    "remove_stale_temps",
    "replace_text",
    "write_new",
]


def lock(root: Path) -> FileLock:
    """The store's one lock, across threads and processes (each hook run is a process of its
    own): ``<root>/.lock``, created with ``root`` by the first write that takes it."""
    return FileLock(root / ".lock")


def exists(path: Path) -> bool:
    return path.exists()


def ensure_dirs(*folders: Path) -> None:
    """Create the folders (and their parents) if missing, durably; the umask decides the mode."""
    for folder in folders:
        make_dirs(folder, mode=0o777)


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
    """Create ``path`` with ``text``, durably and whole (``_kernel.files.write_new``: a temp file
    linked to its name); an existing file is an error (never clobbered).

    Raises:
        FileExistsError: ``path`` exists.
        StoreError: the folder cannot be written.
    """
    create_whole(path, text.encode("utf-8"))


def replace_text(path: Path, text: str) -> None:
    """Replace the contents of ``path`` atomically and durably (``write_atomic``).

    Raises:
        StoreError: it could not be written (the old contents stay).
    """
    write_atomic(path, text.encode("utf-8"), mode=0o666)  # a workspace file: the umask decides


def move_into(path: Path, folder: Path) -> Path:
    """Move ``path`` into ``folder`` under its own name (``-1``, ``-2``… if taken); the new path.

    A rename, never a copy and a delete.
    """
    make_dirs(folder, mode=0o777)
    target = folder / path.name
    number = 0
    while target.exists():
        number += 1
        target = folder / f"{path.stem}-{number}{path.suffix}"
    path.rename(target)
    fsync_dir(folder)
    fsync_dir(path.parent)
    return target


def append_line(path: Path, line: str) -> None:
    """Append one line (a newline is added) durably."""
    new = not path.exists()
    _write_synced(path, line.rstrip("\n") + "\n", "a")
    if new:
        fsync_dir(path.parent)

"""Files that survive crashes and share with other processes: atomic writes and one file lock.

- :func:`write_atomic` replaces a file whole and durably (temporary file in the same directory,
  ``fsync``, ``os.replace``, directory ``fsync``): a reader, which takes no lock, sees the old
  or the new content, never a mix, and a crash leaves at most a ``.<name>.<pid>.<hex>.tmp``
  file (:func:`temp_path` makes every such name, :func:`is_temp` recognises it), which
  :func:`remove_stale_temps` clears: every store that keeps a directory calls it on open.
- :func:`make_dirs` fsyncs each directory it creates into its parent, so a file made durable
  inside it cannot vanish with the directory at a power loss.
- :class:`FileLock` is a cross-process lock on one lock file (``filelock``) with a timeout.
- :func:`store_error` turns an ``OSError`` into a :class:`StoreError` that names the path
  (:class:`ReadOnlyStoreError` for a permission problem).

Every store that keeps files (local agent memory, the Memory Bank's directory store, the
capability's settings) uses these, so there is one answer to "what if it crashes mid-write".
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path

import filelock

from ..errors import ReadOnlyStoreError, StoreError, TransientError
from .clock import Clock, SystemClock

__all__ = [
    "LOCK_TIMEOUT_S",
    "TEMP_GRACE_S",
    "FileLock",
    "fsync_dir",
    "is_temp",
    "make_dirs",
    "read_optional",
    "remove",
    "remove_stale_temps",
    "store_error",
    "temp_path",
    "write_atomic",
    "write_new",
]

LOCK_TIMEOUT_S = 10.0
"""How long :class:`FileLock` waits for another process before giving up."""
TEMP_GRACE_S = 3600.0
"""A temp file modified less than this long ago may be another process's write in flight."""

_TEMP = re.compile(r"\..+\.\d+\.[0-9a-f]{8}\.tmp")


def store_error(what: str, path: Path, exc: OSError) -> StoreError:
    """``cannot <what> <path>: <reason>`` as the StoreError to raise ``from exc``."""
    if isinstance(exc, PermissionError):
        return ReadOnlyStoreError(
            f"cannot {what} {path}: permission denied; make the directory writable or choose "
            "another location (local memory: ORCA_HOME)"
        )
    return StoreError(f"cannot {what} {path}: {exc.strerror or exc}")


def make_dirs(path: Path, *, mode: int = 0o700) -> None:
    """Create ``path`` and its parents if missing, each new one with ``mode`` (private by
    default: a parent made on the way, such as local memory's ``projects/``, is as private as
    what it holds) and fsynced into its parent."""
    missing = []
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing.append(folder)
    for created in reversed(missing):
        try:
            created.mkdir(mode=mode, exist_ok=True)
        except OSError as exc:
            raise store_error("create the directory", created, exc) from exc
        fsync_dir(created.parent)


def temp_path(path: Path) -> Path:
    """A fresh temporary name beside ``path``, unique across processes and threads."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def is_temp(name: str) -> bool:
    """Is ``name`` a :func:`temp_path` file (a write in flight, or one a crash left)?"""
    return _TEMP.fullmatch(name) is not None


def fsync_dir(directory: Path) -> None:
    """Make the names in ``directory`` (a rename, a new file or folder) durable; a platform or
    filesystem that cannot fsync a directory (Windows, some network mounts) is skipped."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_atomic(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """Replace ``path`` with ``data`` atomically and durably (temp file, fsync, rename, fsync).

    ``mode``: the new file's permissions before the umask (private by default).

    Raises:
        StoreError: the file could not be written (nothing changed; the message names it).
    """
    tmp = temp_path(path)
    try:
        _write_synced(tmp, data, mode)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise store_error("write", path, exc) from exc
    fsync_dir(path.parent)


def _write_synced(tmp: Path, data: bytes, mode: int) -> None:
    """``data`` in a new file ``tmp``, whole and fsynced."""
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def write_new(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """Create ``path`` holding ``data``, durably and whole, never over an existing file: the
    data goes to a temp file first, which is then linked to its name (a crash leaves a temp
    file, never an empty or half-written ``path``; a killed save had left an empty memory
    file that every later read skipped with a warning).

    Raises:
        FileExistsError: ``path`` exists (nothing written).
        StoreError: the file could not be written.
    """
    tmp = temp_path(path)
    try:
        _write_synced(tmp, data, mode)
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError as exc:
        raise store_error("write", path, exc) from exc
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    fsync_dir(path.parent)


def read_optional(path: Path) -> tuple[bytes | None, str | None]:
    """``(data, None)``; ``(None, None)`` when the file does not exist; ``(None, why)`` when it
    cannot be read. For the small files a missing copy of which is a normal state (settings,
    a project's metadata): the caller decides whether a problem is fatal."""
    try:
        return path.read_bytes(), None
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror or exc}"


def remove(path: Path) -> bool:
    """Delete ``path`` durably; False if it was already gone.

    Raises:
        StoreError: it exists but cannot be deleted (permissions, a read-only disk).
    """
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise store_error("delete", path, exc) from exc
    fsync_dir(path.parent)
    return True


def remove_stale_temps(
    directory: Path,
    *,
    of: str | None = None,
    older_than_s: float = TEMP_GRACE_S,
    clock: Clock | None = None,
) -> int:
    """Remove the temp files that writers killed mid-write left; how many were removed.

    Without ``of``: every :func:`is_temp` file under ``directory``, at any depth (a store calls
    this on open). With ``of`` (a file name): only that file's temp copies in ``directory``.
    A file modified less than ``older_than_s`` before ``clock``'s now may be a write in flight
    in another process and is kept; a caller holding the lock every writer of ``of`` takes
    passes ``older_than_s=0``: then every temp copy is stale. Failures are ignored (a
    read-only directory keeps its leftovers; they are invisible to readers).
    """
    now = (clock or SystemClock()).now().timestamp()
    if of is not None:
        found = [
            directory / name
            for name in _names(directory)
            if is_temp(name) and name.rsplit(".", 3)[0] == f".{of}"
        ]
    else:
        found = [
            Path(folder) / name
            for folder, _, names in os.walk(directory)  # symlinked folders are not followed
            for name in names
            if is_temp(name)
        ]
    removed = 0
    for leftover in found:
        with contextlib.suppress(OSError):
            if older_than_s <= 0 or now - leftover.stat().st_mtime > older_than_s:
                leftover.unlink()
                removed += 1
    return removed


def _names(directory: Path) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


_LOCKS: dict[str, filelock.FileLock] = {}
_LOCKS_GUARD = threading.Lock()


def _forget_locks() -> None:
    """In a forked child: a parent's lock objects refuse to be used there (``filelock``: "was
    inherited across fork"), and the child holds none of the parent's locks; start afresh."""
    global _LOCKS_GUARD
    _LOCKS.clear()
    _LOCKS_GUARD = threading.Lock()


os.register_at_fork(after_in_child=_forget_locks)


class FileLock:
    """A cross-process lock on one lock file (``filelock``), re-entrant within a thread.

    Every lock on the same path in a process shares one ``filelock.FileLock`` (re-entrant per
    thread); other threads and other processes wait. A lock that is not acquired within the
    timeout is a :class:`TransientError`: the caller retries later.
    """

    def __init__(self, path: Path, timeout_s: float = LOCK_TIMEOUT_S) -> None:
        self.path = path
        self.timeout_s = timeout_s

    def _lock(self) -> filelock.FileLock:
        key = os.path.abspath(self.path)
        with _LOCKS_GUARD:
            lock = _LOCKS.get(key)
            if lock is None:
                lock = _LOCKS[key] = filelock.FileLock(key, mode=0o600)
            return lock

    @contextlib.contextmanager
    def hold(self, timeout_s: float | None = None) -> Iterator[None]:
        """Hold the lock for the block (``timeout_s`` overrides the lock's own wait).

        Raises:
            TransientError: another process held it longer than the wait.
            StoreError: the lock file could not be created or opened.
        """
        wait = self.timeout_s if timeout_s is None else timeout_s
        make_dirs(self.path.parent)
        lock = self._lock()
        try:
            lock.acquire(timeout=wait)
        except filelock.Timeout:
            raise TransientError(
                f"the lock {self.path} is held by another process (waited {wait:g} s); "
                "nothing committed is lost: retry later"
            ) from None
        except OSError as exc:
            raise store_error("lock", self.path, exc) from exc
        try:
            yield
        finally:
            lock.release()

"""Project identity (seed 000): which project a working directory belongs to, so its memory is
found again from any clone or subfolder: the normalised Git origin when there is one, else the
repository root, else the directory itself. The id is a SHA-256; nothing here is sent to a model.

Case: the host is always lower-cased; the path is lower-cased only on the forges whose
owner/repository names are case-insensitive (:data:`CASE_INSENSITIVE_FORGES`), so ``Acme/API``
and ``acme/api`` are one GitHub project but two on a self-hosted server that keeps case. A
project directory written under an older, case-kept key is found again (:func:`find_project`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit

from .._kernel.ids import sha256
from ..errors import InvalidInputError

__all__ = [
    "CASE_INSENSITIVE_FORGES",
    "ProjectIdentity",
    "find_project",
    "normalize_origin",
    "project_identity",
]

CASE_INSENSITIVE_FORGES = frozenset({"github.com", "gitlab.com"})
"""Hosts whose owner/repository paths are case-insensitive (a different case is the same
repository there); elsewhere a path's case is kept, as Git servers may tell ``A`` from ``a``."""


@dataclass(frozen=True)
class ProjectIdentity:
    """Which project a working directory belongs to. Never sent to a model."""

    id: str
    """``sha256`` hex of :attr:`identity`: the project's directory name."""
    kind: str
    """``git-origin`` | ``repo-root`` | ``path``."""
    identity: str
    """The normalized origin (``github.com/acme/api``) or the canonical path."""
    root: Path
    """The working tree root (Git) or the canonical directory: where project config lives."""
    cwd: Path
    """The canonical working directory."""

    @property
    def space(self) -> str:
        """The orcamem space of the project (``project:<sha256>``; DESIGN.md)."""
        return f"project:{self.id}"


def _scp_like(url: str) -> tuple[str, str] | None:
    """``[user@]host:path`` (Git's SCP-like syntax), not a Windows drive or a local path."""
    match = re.fullmatch(r"(?:[^@/\s]+@)?([^@:/\s]+):(?!//)(.+)", url)
    if match is None or len(match.group(1)) == 1:
        return None
    return match.group(1), match.group(2)


def normalize_origin(url: str) -> str:
    """The identity of a Git origin URL: host, non-default port and path, nothing secret.

    User info (``user:token@``), query parameters and fragments are removed; so are the
    scheme, a trailing ``.git`` and ``/``, so the SSH and HTTPS clones of one repository share
    one identity. The host is lower-cased, and so is the path on a
    :data:`CASE_INSENSITIVE_FORGES` host. Local origins (a path or ``file://``) become
    ``file:<path>``.

    >>> normalize_origin("https://alice:ghp_x@GitHub.com/Acme/API.git?ref=1#readme")
    'github.com/acme/api'
    >>> normalize_origin("git@git.example.com:Acme/API.git")
    'git.example.com/Acme/API'
    """
    text = url.strip()
    if not text:
        raise InvalidInputError("an empty origin URL has no identity")
    scp = None if "://" in text else _scp_like(text)
    if scp is not None:
        host, path = scp[0].lower(), scp[1]
        port = None
    elif "://" in text:
        parts = urlsplit(text)
        if parts.scheme.lower() == "file":
            return "file:" + _clean_path(parts.path)
        host = (parts.hostname or "").lower()
        try:
            port = parts.port
        except ValueError:
            port = None
        if port in (22, 80, 443, 9418):
            port = None
        path = parts.path
    else:  # a local path
        return "file:" + _clean_path(os.path.normpath(text))
    path = re.sub(r"/{2,}", "/", path).strip("/")
    path = path.split("?", 1)[0].split("#", 1)[0]
    if path.endswith(".git"):
        path = path[:-4]
    path = path.rstrip("/")
    return _fold(f"{host}{f':{port}' if port else ''}/{path}")


def _fold(identity: str) -> str:
    """``identity`` (``host[:port]/path``) with the path lower-cased on a case-insensitive
    forge; anything else as it is."""
    host, slash, path = identity.partition("/")
    return f"{host}{slash}{path.lower()}" if host in CASE_INSENSITIVE_FORGES else identity


def _clean_path(path: str) -> str:
    path = re.sub(r"/{2,}", "/", path).split("?", 1)[0].split("#", 1)[0].rstrip("/")
    return path[:-4] if path.endswith(".git") else path


def _git_dirs(start: Path) -> tuple[Path, Path] | None:
    """``(working tree root, common git dir)`` of the repository containing ``start``.

    Reads the files Git itself reads (``.git`` directory or ``gitdir:`` file, ``commondir``),
    so no ``git`` executable is needed and a worktree resolves to its main repository.
    """
    for directory in (start, *start.parents):
        dot = directory / ".git"
        try:
            if dot.is_dir():
                gitdir = dot
            elif dot.is_file():
                content = dot.read_text(encoding="utf-8", errors="replace").strip()
                if not content.startswith("gitdir:"):
                    continue
                gitdir = (directory / content[len("gitdir:") :].strip()).resolve()
            else:
                continue
            common = gitdir
            commondir = gitdir / "commondir"
            if commondir.is_file():
                common = (gitdir / commondir.read_text(encoding="utf-8").strip()).resolve()
        except OSError:
            continue
        return directory, common.resolve()
    return None


def _origin_url(common: Path) -> str | None:
    """``remote.origin.url`` from the repository's ``config`` (the first one), or ``None``."""
    try:
        text = (common / "config").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    in_origin = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        section = re.fullmatch(r'\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]', line)
        if section is not None:
            in_origin = section.group(1).lower() == "remote" and section.group(2) == "origin"
            continue
        if line.startswith("["):
            in_origin = False
            continue
        if not in_origin:
            continue
        key, _, value = line.partition("=")
        if key.strip().lower() != "url":
            continue
        value = value.strip()
        if value.startswith('"'):
            end = value.find('"', 1)
            value = value[1:end] if end > 0 else value[1:]
        else:
            value = re.split(r"\s[#;]", value, maxsplit=1)[0].strip()
        if value:
            return value
    return None


def project_identity(cwd: str | Path) -> ProjectIdentity:
    """The project of a working directory (spec: "Storage").

    Git clones and worktrees with the same normalized origin share project memory;
    repositories without an origin use their canonical repository root (a worktree's is its
    main repository's); other directories their canonical path.
    """
    here = Path(cwd).expanduser().resolve()
    if not here.is_dir():  # a mistyped --cwd would file facts under a project of its own
        raise InvalidInputError(
            f"the working directory {here} does not exist or is no directory: pass the "
            "project's directory"
        )
    found = _git_dirs(here)
    if found is not None:
        worktree, common = found
        origin = _origin_url(common)
        if origin:
            try:
                identity, kind = normalize_origin(origin), "git-origin"
            except InvalidInputError:
                identity, kind = "", ""
            if identity:
                return _identity(kind, identity, worktree, here)
        root = common.parent if common.name == ".git" else common
        return _identity("repo-root", str(root), worktree, here)
    return _identity("path", str(here), here, here)


def _identity(kind: str, identity: str, root: Path, cwd: Path) -> ProjectIdentity:
    ident = sha256(identity)
    return ProjectIdentity(ident, kind, identity, root, cwd)


def find_project(identity: ProjectIdentity, projects: Path) -> ProjectIdentity:
    """``identity``, or the same project under the key an older version wrote it with.

    Versions before path-case folding kept an origin's path case (``github.com/Acme/API``):
    when the folded key's directory under ``projects`` does not exist, a directory whose
    ``project.json`` records a Git origin that folds to the same identity is used under its
    old id (aliased, not renamed: its jobs and spaces keep naming that id). No such directory:
    ``identity`` as it is.
    """
    if identity.kind != "git-origin" or (projects / identity.id).exists():
        return identity
    try:
        found = sorted(projects.glob("*/project.json"))
    except OSError:
        return identity
    for path in found:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if (
            isinstance(record, dict)
            and record.get("identity_kind") == "git-origin"
            and isinstance(record.get("project_identity"), str)
            and _fold(record["project_identity"]) == identity.identity
            and record.get("project_id") == path.parent.name
        ):
            return replace(identity, id=path.parent.name)
    return identity

"""Bulk ingest prepared one batch ahead, in a child process on a core of its own.

``add_many`` and ``import`` spend about half their CPU preparing a batch (sentence split,
lexical context, embedding, each line's entities) and half writing it in SQLite, which holds the GIL for most of
that: a thread preparing batch k+1 beside the writer saved nothing (docs/storage.md). A child
process does. It is a plain ``python -m orcamem.engine.ahead`` speaking pickle over its
pipes, not ``multiprocessing``, whose children import the caller's ``__main__`` again: a
script without a ``__main__`` guard would run its ingest a second time there.

One request is in flight at a time (send batch k+1, write batch k, then read k+1), so neither
pipe can fill while the other side waits on it. Whatever goes wrong with the child (it does
not start, dies, or answers with an error), the rest is prepared in this process: the child
only ever saves time, and it prepares exactly what this process would.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from .._kernel.embed import Embedder, StaticEmbedder
from .._kernel.env import child_environ_importing
from .._kernel.model import NewEpisode
from .ingest import prepare_writes
from .store.base import EpisodeWrite

__all__ = ["Batch", "prepared"]

log = logging.getLogger(__name__)


@dataclass
class Batch:
    """What one batch's preparation needs: its episodes and each space's embedder."""

    episodes: Sequence[NewEpisode]
    embedders: Mapping[str, Embedder]
    now: datetime
    previous: dict[tuple[str, str], str]
    """The latest text per ``(space, session_id)`` before this batch (see ``prepare_writes``)."""
    created_at: Sequence[str | None] = field(default_factory=tuple)


def prepare(batch: Batch) -> list[EpisodeWrite]:
    """``batch``'s writes in its order, each space's episodes embedded by that space's embedder."""
    if len(batch.embedders) == 1:
        (embedder,) = batch.embedders.values()
        return prepare_writes(batch.episodes, embedder, batch.now, batch.previous, batch.created_at)
    created = list(batch.created_at) + [None] * (len(batch.episodes) - len(batch.created_at))
    writes: list[Any] = [None] * len(batch.episodes)
    for space, embedder in batch.embedders.items():
        at = [i for i, ep in enumerate(batch.episodes) if ep.space == space]
        made = prepare_writes(
            [batch.episodes[i] for i in at],
            embedder,
            batch.now,
            batch.previous,
            [created[i] for i in at],
        )
        for i, write in zip(at, made, strict=True):
            writes[i] = write
    return writes


def prepared(batches: Iterable[Batch], *, ahead: bool) -> Iterator[list[EpisodeWrite]]:
    """Each batch's writes in order; with ``ahead``, batch k+1 is prepared in a child process
    while the caller writes batch k (when the machine has a second core and every embedder is
    a static one a child can load; the first batch is prepared here while the child starts).
    Close it (``contextlib.closing``) if you stop early.

    An error raised by ``batches`` itself (a bad item) comes after the writes prepared before
    it, so the caller stores what came before the bad batch, as without the child."""
    batches = iter(batches)
    child = _Child.start() if ahead and _cores() > 1 else None
    try:
        current, with_child = next(batches, None), False  # the first is prepared here, while
        while current is not None:  # the child starts
            try:
                following = next(batches, None)
            except Exception:
                yield _receive(child if with_child else None, current)
                raise
            if with_child:  # one request in flight: its answer before the next request
                writes = _receive(child, current)
            if child is not None and (child.failed or following is None):
                child.stop()
                child = None
            if child is not None:
                child = child.send(following)
            if not with_child:
                writes = prepare(current)
            yield writes
            current, with_child = following, child is not None
    finally:
        if child is not None:
            child.stop()


def _receive(child: _Child | None, batch: Batch) -> list[EpisodeWrite]:
    """The child's answer for ``batch`` (the one in flight), or ``batch`` prepared here."""
    if child is not None:
        writes = child.receive(batch)
        if writes is not None:
            return writes
    return prepare(batch)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _spec(embedder: Embedder) -> tuple[str, int, str] | None:
    """What a child rebuilds ``embedder`` from (its folder, token cap and id), if it can."""
    if type(embedder) is not StaticEmbedder:
        return None
    return (str(embedder.folder), embedder.max_tokens, embedder.id)


class _Child:
    """The preparing process, one request in flight; ``None`` from any step means: do it here."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.process = process
        self.failed = False

    @classmethod
    def start(cls) -> _Child | None:
        if not sys.executable:
            return None
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "orcamem.engine.ahead"],
                env=child_environ_importing(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except OSError as exc:
            log.warning("bulk ingest prepares in this process: no child (%s)", exc)
            return None
        return cls(process)

    def send(self, batch: Batch) -> _Child | None:
        specs = {space: _spec(e) for space, e in batch.embedders.items()}
        if None in specs.values():
            self.stop()
            return None
        episodes = [tuple(ep.__dict__.values()) for ep in batch.episodes]  # no dataclass pickling
        request = (episodes, specs, batch.now, batch.previous, batch.created_at)
        try:
            pickle.dump(request, self.process.stdin, pickle.HIGHEST_PROTOCOL)
            self.process.stdin.flush()
        except (OSError, ValueError) as exc:  # the child is gone
            return self._fail(f"it stopped reading ({exc})")
        return self

    def receive(self, batch: Batch) -> list[EpisodeWrite] | None:
        try:
            ok, answer, vectors = pickle.load(self.process.stdout)
        except Exception as exc:  # died mid-answer, or never started Python at all
            self._fail(f"no answer ({type(exc).__name__})")
            return None
        if not ok:
            self._fail(answer)
            return None
        writes = []
        offset = 0
        for ep, (context, lines, names, occurred_at, created_at) in zip(
            batch.episodes, answer, strict=True
        ):
            writes.append(
                EpisodeWrite(
                    episode=NewEpisode(**{**ep.__dict__, "context": context}),
                    lines=lines,
                    vectors=vectors[offset : offset + len(lines)],
                    embedder_id=batch.embedders[ep.space].id,
                    occurred_at=occurred_at,
                    created_at=created_at,
                    names=names,
                )
            )
            offset += len(lines)
        return writes

    def _fail(self, why: str) -> None:
        log.warning("bulk ingest prepares the rest in this process: the child failed: %s", why)
        self.failed = True
        self.stop()

    def stop(self) -> None:
        process = self.process
        if process.poll() is None:
            with contextlib.suppress(OSError):
                process.stdin.close()
            if process.poll() is None:
                process.kill()
        process.wait()
        process.stdout.close()


def _serve() -> None:
    """The child: prepare each batch read from stdin and answer on stdout, until stdin ends:
    ``(True, [(context, lines, names, occurred_at, created_at)…], all their vectors)`` or
    ``(False, why, None)`` (plain tuples: pickling a dataclass costs ten times more)."""
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write into the answers
    embedders: dict[tuple[str, int, str], Embedder] = {}
    while True:
        try:
            episodes, specs, now, previous, created_at = pickle.load(source)
        except EOFError:
            return
        try:
            for spec in set(specs.values()):
                if spec not in embedders:
                    folder, max_tokens, expected = spec
                    embedders[spec] = StaticEmbedder(folder, max_tokens=max_tokens)
                    if embedders[spec].id != expected:
                        raise RuntimeError(f"{folder} changed: it is {embedders[spec].id} now")
            batch = Batch(
                [NewEpisode(*fields) for fields in episodes],
                {s: embedders[spec] for s, spec in specs.items()},
                now,
                previous,
                created_at,
            )
            writes = prepare(batch)
            answer: tuple[bool, Any, Any] = (
                True,
                [
                    (w.episode.context, w.lines, w.names, w.occurred_at, w.created_at)
                    for w in writes
                ],
                np.concatenate([w.vectors for w in writes]),
            )
        except Exception as exc:
            answer = (False, f"{type(exc).__name__}: {exc}", None)
        pickle.dump(answer, sink, pickle.HIGHEST_PROTOCOL)
        sink.flush()


if __name__ == "__main__":
    _serve()

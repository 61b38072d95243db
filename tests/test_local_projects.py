"""``LocalProjects``: every project under a ``memory/`` root, opened by id (what ``/api/local``
reads) — on the same stores a ``LocalMemory`` session runs on, so a delete here is the
session's revisioned delete and a fact file reads as a session loads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from local_memory_helpers import turn
from orcamem._kernel.clock import FrozenClock
from orcamem.errors import InvalidInputError, NotFoundError, RevisionConflictError
from orcamem.local import JsonlTranscript, LocalMemory, LocalProjects

T0 = "2026-11-01T10:00:00Z"


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(T0)


def session(tmp_path: Path, clock: FrozenClock, name: str) -> LocalMemory:
    cwd = tmp_path / name
    cwd.mkdir(exist_ok=True)
    transcript = JsonlTranscript(tmp_path / f"{name}.jsonl")
    return LocalMemory(
        cwd, root=tmp_path / "memory", session_id="s1", transcript=transcript, clock=clock,
        start=False,
    )  # fmt: skip


def test_projects_are_the_sha256_directories_newest_seen_first(
    tmp_path: Path, clock: FrozenClock
) -> None:
    with session(tmp_path, clock, "a") as a:
        a.remember("project: A uses Poetry.")
    clock.advance(minutes=1)
    with session(tmp_path, clock, "b") as b:
        b.remember("project: B uses uv.")
    (tmp_path / "memory" / "projects" / "scratch").mkdir()
    projects = LocalProjects(tmp_path / "memory", clock=clock)
    assert projects.ids() == sorted([a.identity.id, b.identity.id])
    summaries = projects.summaries()
    assert [s.id for s in summaries] == [b.identity.id, a.identity.id]
    assert (summaries[0].name, summaries[0].kind, summaries[0].last_seen_cwd) == (
        "b",
        "path",
        str((tmp_path / "b").resolve()),
    )
    assert projects.open(a.identity.id).facts().facts == ("A uses Poetry.",)
    with pytest.raises(InvalidInputError, match="not a project id"):
        projects.open("scratch")
    with pytest.raises(NotFoundError, match="list the projects again"):
        projects.open("f" * 64)
    assert LocalProjects(tmp_path / "nowhere").summaries() == []


def test_fact_files_read_as_a_session_loads_them(tmp_path: Path, clock: FrozenClock) -> None:
    with session(tmp_path, clock, "a") as memory:
        memory.remember("I write British English.")
        for n in range(200):
            memory.remember(f"project: Service {n} is deployed by the platform team.")
        loaded = memory.session_context()
        project = memory.identity.id
    projects = LocalProjects(tmp_path / "memory")
    user = projects.user_facts()
    assert user.facts == ("I write British English.",) and user.size == user.loaded
    facts = projects.open(project).facts()
    assert facts.loaded <= 8 * 1024 < facts.size
    assert all(f"- {fact}" in loaded for fact in facts.facts)
    assert f"Service {len(facts.facts)} is" not in loaded  # past the cut: neither has it


def test_a_delete_by_id_is_the_sessions_revisioned_delete(
    tmp_path: Path, clock: FrozenClock
) -> None:
    with session(tmp_path, clock, "a") as memory:
        turn(memory.transcript, "t1", "I prefer pytest. Never commit directly to main.", "Ok.")
        memory.finish_turn("t1")
        memory.run_jobs()
        state = memory.candidates()
    project = LocalProjects(tmp_path / "memory", clock=clock).open(memory.identity.id)
    first = state.candidates[0].id
    with pytest.raises(RevisionConflictError):
        project.forget([first], revision=state.revision - 1)
    result = project.forget([first], revision=state.revision)
    assert result.deleted == (first,) and result.revision == state.revision + 1
    with session(tmp_path, clock, "a") as again:
        after = again.candidates()
        assert first not in after.ids() and after.revision == result.revision
        assert again.status()["stale_projections"] == []  # both projections re-derived
        assert again.forget([first], revision=state.revision).repeated  # the same request


def test_a_working_directory_that_is_none_is_refused_and_files_nothing(
    tmp_path: Path, clock: FrozenClock
) -> None:
    """A mistyped --cwd would otherwise file facts under a project of its own."""
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    for cwd in (tmp_path / "missing" / "dir", tmp_path / "notes.txt"):
        with pytest.raises(InvalidInputError, match="no directory"):
            LocalMemory(cwd, root=tmp_path / "memory", clock=clock, start=False)
    assert not (tmp_path / "memory").exists()

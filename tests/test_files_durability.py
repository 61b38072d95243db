"""What a crash leaves behind, and what a power loss cannot take.

A killed writer leaves a ``.<name>.<pid>.<hex>.tmp`` file (``_kernel.files.temp_path``); each
directory-backed store removes the old ones when it opens and keeps a fresh one, which may be
another process's write in flight. Age is the file's mtime against the store's injected clock.
A real power loss cannot be simulated in a test, so the fsync tests record which files and
directories ``os.fsync`` was called on (by inode) and check that the directory is among them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from orcamem import InvalidInputError, MarkdownParseError
from orcamem._kernel.clock import FrozenClock, parse_time
from orcamem._kernel.files import TEMP_GRACE_S, make_dirs, temp_path, write_atomic
from orcamem.bank.objects.file import FileObjectStore
from orcamem.bank.record import BankMemory
from orcamem.capability.markdown import io as markdown_io
from orcamem.capability.markdown.store import MarkdownStore, parse_entry
from orcamem.capability.settings import set_workspace_override, workspace_config_path
from orcamem.local import index as ledger_index
from orcamem.local.memory import LocalMemory
from orcamem.local.transcript import JsonlTranscript
from servers import child_env
from strategies import ISO_LIKE

NOW = datetime(2026, 10, 17, 9, 30, tzinfo=timezone.utc)


def leftover(path: Path, age_s: float) -> Path:
    """A temp copy of ``path`` as a killed writer leaves it, last modified ``age_s`` before NOW."""
    tmp = temp_path(path)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_bytes(b"half a write")
    os.utime(tmp, (NOW.timestamp() - age_s, NOW.timestamp() - age_s))
    return tmp


def test_a_bank_directory_sweeps_old_temp_files_on_open_and_keeps_fresh_ones(
    tmp_path: Path,
) -> None:
    FileObjectStore(tmp_path).put("memory/p/mem-00000001.json", b"{}")
    old = leftover(tmp_path / "memory" / "p" / "mem-00000001.json", TEMP_GRACE_S + 60)
    fresh = leftover(tmp_path / "memory" / "p" / "mem-00000002.json", 60)
    FileObjectStore(tmp_path, clock=FrozenClock(NOW))
    assert not old.exists() and fresh.exists()
    assert (tmp_path / "memory" / "p" / "mem-00000001.json").read_bytes() == b"{}"


def test_local_memory_sweeps_the_ledger_directory_and_user_facts_on_open(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    with LocalMemory(tmp_path, root=root, clock=FrozenClock(NOW), start=False) as memory:
        memory.remember("project: We deploy on Fridays.")
        memory.remember("I prefer short answers.")
        files, user_md = memory.files, memory.layout.user_md
    old = [
        leftover(files.memory_md, TEMP_GRACE_S + 60),  # a copy of the user's project facts
        leftover(user_md, TEMP_GRACE_S + 60),
        leftover(files.candidates, TEMP_GRACE_S + 60),
        leftover(files.jobs / "job-0123.json", TEMP_GRACE_S + 60),
    ]
    fresh = leftover(files.memory_md, 60)
    with LocalMemory(tmp_path, root=root, clock=FrozenClock(NOW), start=False) as memory:
        assert "We deploy on Fridays." in memory.session_context()
    assert [path.exists() for path in old] == [False] * len(old)
    assert fresh.exists()


def test_the_markdown_store_sweeps_temp_files_on_open_and_never_a_memory(tmp_path: Path) -> None:
    store = MarkdownStore(tmp_path, clock=FrozenClock(NOW))
    entry = store.save("Our branching policy: one topic branch per plan.")
    assert entry.path is not None
    os.utime(entry.path, (NOW.timestamp() - 10 * TEMP_GRACE_S,) * 2)
    old = leftover(entry.path, TEMP_GRACE_S + 60)
    fresh = leftover(entry.path, 60)
    MarkdownStore(tmp_path, clock=FrozenClock(NOW))
    assert not old.exists() and fresh.exists() and entry.path.exists()


def test_editing_workspace_settings_removes_old_temp_copies_of_the_file(tmp_path: Path) -> None:
    path = workspace_config_path(tmp_path)
    old, fresh = temp_path(path), temp_path(path)
    for copy, age in ((old, 2 * TEMP_GRACE_S), (fresh, 60.0)):
        copy.write_bytes(b"{")
        os.utime(copy, (time.time() - age,) * 2)
    set_workspace_override(tmp_path, "enabled", True)
    assert not old.exists() and fresh.exists()


WRITER = """
import sys
from pathlib import Path
from orcamem._kernel.files import temp_path
target = Path(sys.argv[1])
tmp = temp_path(target)
tmp.write_bytes(b"the new value")
print(tmp, flush=True)
sys.stdin.readline()  # hold the write open until the test has reopened the store
tmp.replace(target)
"""


def test_a_write_in_flight_in_another_process_survives_the_sweep(tmp_path: Path) -> None:
    target = tmp_path / "memory" / "p" / "mem-00000001.json"
    target.parent.mkdir(parents=True)
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(target)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **child_env()},
    )
    assert child.stdout is not None and child.stdin is not None
    in_flight = Path(child.stdout.readline().strip())
    old = temp_path(target)
    old.write_bytes(b"a killed writer's")
    os.utime(old, (time.time() - 2 * TEMP_GRACE_S,) * 2)
    FileObjectStore(tmp_path)  # the real clock: the child's file is seconds old
    assert in_flight.exists() and not old.exists()
    child.stdin.write("go\n")
    child.stdin.close()
    assert child.wait(timeout=60) == 0
    assert FileObjectStore(tmp_path).get("memory/p/mem-00000001.json").body == b"the new value"


@pytest.fixture
def fsynced(monkeypatch: pytest.MonkeyPatch) -> set[int]:
    """The inodes ``os.fsync`` is called on from now on."""
    inodes: set[int] = set()
    real = os.fsync

    def recording(fd: int) -> None:
        inodes.add(os.fstat(fd).st_ino)
        real(fd)

    monkeypatch.setattr(os, "fsync", recording)
    return inodes


def test_a_file_written_into_new_directories_is_durable_with_every_name_on_its_path(
    tmp_path: Path, fsynced: set[int]
) -> None:
    path = tmp_path / "a" / "b" / "state.json"
    make_dirs(path.parent)
    write_atomic(path, b"{}")
    synced = [path, path.parent, tmp_path / "a", tmp_path]  # the file, its folder, each new one
    assert {p.stat().st_ino for p in synced} <= fsynced


def test_the_ledger_index_is_written_whole_and_durably(tmp_path: Path, fsynced: set[int]) -> None:
    path = tmp_path / "index.sqlite3"
    ledger_index.build(path, "fp-1", [])
    assert ledger_index.matches(path, "fp-1")
    assert {path.stat().st_ino, tmp_path.stat().st_ino} <= fsynced
    assert [p.name for p in tmp_path.iterdir()] == ["index.sqlite3"]
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_markdown_rewrite_is_durable_and_leaves_no_temp_file(
    tmp_path: Path, fsynced: set[int]
) -> None:
    path = tmp_path / "entry.md"
    markdown_io.write_new(path, "one\n")
    markdown_io.replace_text(path, "two\n")
    assert path.read_text() == "two\n" and [p.name for p in tmp_path.iterdir()] == ["entry.md"]
    assert {path.stat().st_ino, tmp_path.stat().st_ino} <= fsynced


def test_a_markdown_save_killed_midway_leaves_no_memory_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file was created under its own name and then written: a save killed between the
    two left an empty ``entries/<id>.md`` that every later read skipped with a warning. Now
    the name appears only once the whole text is on disk."""
    path = tmp_path / "entry.md"

    def killed(fd: int) -> None:
        raise KeyboardInterrupt  # the process dies before the data is durable

    monkeypatch.setattr(os, "fsync", killed)
    with pytest.raises(KeyboardInterrupt):
        markdown_io.write_new(path, "---\nid: x\n---\nbody\n")
    assert not path.exists()
    monkeypatch.undo()
    markdown_io.write_new(path, "one\n")
    with pytest.raises(FileExistsError):
        markdown_io.write_new(path, "two\n")  # never over an existing memory
    assert path.read_text() == "one\n" and [p.name for p in tmp_path.iterdir()] == ["entry.md"]


def test_an_append_after_a_torn_transcript_line_is_read_back(tmp_path: Path) -> None:
    """A writer killed mid-line (a 200 MB tool message) left no newline: the next process's
    acknowledged append was glued to the torn line and skipped with it as garbage."""
    path = tmp_path / "transcript.jsonl"
    transcript = JsonlTranscript(path)
    transcript.message("s1", "t1", "user", "Hello.")
    with path.open("ab") as handle:
        handle.write(b'{"kind": "message", "session_id": "s1", "text": "cut sh')  # the kill
    transcript.message("s1", "t2", "user", "I prefer tabs over spaces.")
    said = [record.text for record in transcript.turn_records("s1", "t2")]
    assert said == ["I prefer tabs over spaces."]
    assert [r.text for r in transcript.turn_records("s1", "t1")] == ["Hello."]


def test_a_new_transcript_is_durable_with_its_name(tmp_path: Path, fsynced: set[int]) -> None:
    transcript = JsonlTranscript(tmp_path / "transcript.jsonl")
    transcript.message("s1", "t1", "user", "Hello.")
    assert {(tmp_path / "transcript.jsonl").stat().st_ino, tmp_path.stat().st_ino} <= fsynced


# -- times: one parser, one error family -----------------------------------------------------

TIMES = settings(max_examples=150, deadline=None)
EDGES = [
    "0001-01-01T00:00:00+01:00",  # before year 1 in UTC: was an OverflowError
    "9999-12-31T23:59:59-01:00",  # after 9999 in UTC: was an OverflowError
    "10000-01-01T00:00:00Z",
    "0999-06-01T12:00:00Z",
]


def with_examples(**fixed: object):  # type: ignore[no-untyped-def]
    def add(test):  # type: ignore[no-untyped-def]
        for value in EDGES:
            test = example(value=value, **fixed)(test)
        return test

    return add


@TIMES
@given(value=st.one_of(ISO_LIKE, st.text(max_size=40)))
@with_examples()
def test_parse_time_parses_or_raises_invalid_input(value: str) -> None:
    try:
        moment = parse_time(value)
    except InvalidInputError:
        return
    assert moment.tzinfo is timezone.utc and 1 <= moment.year <= 9999


@TIMES
@given(value=st.one_of(ISO_LIKE, st.text(max_size=40)))
@with_examples()
def test_a_markdown_time_parses_or_is_a_markdown_parse_error(value: str) -> None:
    shown = value.replace("\n", " ").replace("\r", " ")
    text = f"---\nid: mem-1\ncreated: {shown}\n---\nA memory.\n"
    try:
        entry = parse_entry(text)
    except MarkdownParseError:
        return
    assert entry.id == "mem-1"


BANK_BODY = {
    "id": "mem-0000000a",
    "profileName": "p",
    "rawInput": "I like tea.",
    "processedContent": "Likes tea.",
    "summary": "tea",
    "category": "preference",
    "source": "user",
    "confidence": 0.9,
    "accessCount": 0,
    "createdAt": "2026-10-17T09:30:00.000000Z",
}


@TIMES
@given(
    value=st.one_of(ISO_LIKE, st.text(max_size=40), st.integers(), st.none(), st.booleans()),
    field=st.sampled_from(["createdAt", "lastAccessedAt"]),
)
@with_examples(field="createdAt")
def test_a_bank_record_time_parses_or_is_invalid_input(value: object, field: str) -> None:
    body = json.dumps({**BANK_BODY, field: value}).encode()
    try:
        memory = BankMemory.decode(body, "memory/p/mem-0000000a.json")
    except InvalidInputError:
        return
    assert memory.created_at.endswith("Z")

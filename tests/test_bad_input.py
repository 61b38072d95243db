"""Bad input gets one clear OrcamemError subclass, and nothing partial is written."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from orcamem import (
    CorruptStoreError,
    DimensionMismatchError,
    InvalidInputError,
    InvalidSpaceError,
    Memory,
    NotFoundError,
    OrcamemError,
    ReadOnlyStoreError,
    SchemaTooNewError,
)


@pytest.mark.parametrize("text", ["", "   ", "\n\t "])
def test_blank_text_is_refused(mem: Memory, text: str) -> None:
    with pytest.raises(InvalidInputError, match="empty"):
        mem.add(text)
    assert mem.stats()["episodes"] == 0


def test_text_over_one_mebibyte_is_refused(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="1 MiB"):
        mem.add("x" * (1024 * 1024 + 1))
    mem.add("y" * (1024 * 1024 - 10) + " end.")  # just under the limit is fine


def test_non_utf8_bytes_are_refused(mem: Memory, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="UTF-8"):
        mem.add(b"caf\xe9 au lait")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("café".encode("latin-1"))
    with pytest.raises(InvalidInputError, match="UTF-8"):
        mem.add_file(latin1)
    assert mem.add(b"caf\xc3\xa9").text == "café"


def test_control_characters_are_refused(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="control character"):
        mem.add("binary\x00data")


@pytest.mark.parametrize(
    "space", ["", "a/b", "..", ".", "a\\b", "tab\there", "x" * 129, "new\nline", "spaces here", "é"]
)
def test_invalid_space_names(mem: Memory, space: str) -> None:
    with pytest.raises(InvalidSpaceError, match="invalid space name"):
        mem.add("hello", space=space)
    with pytest.raises(InvalidSpaceError):
        mem.search("hello", space=space)
    assert mem.spaces() == []


def test_valid_space_names(mem: Memory) -> None:
    for space in ("user_alice", "project:abc123", "profile:bot@team", "a.b-c"):
        mem.add("hello", space=space)
    assert len(mem.spaces()) == 4


def test_unknown_ids(mem: Memory) -> None:
    with pytest.raises(NotFoundError, match="mem-00000000"):
        mem.forget("mem-00000000")
    with pytest.raises(NotFoundError, match="no episode 99"):
        mem.forget("ep-99")
    with pytest.raises(NotFoundError, match="neither a memory id"):
        mem.forget("banana")


def test_bad_memory_fields(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="category"):
        mem.remember("x", category="gossip")
    with pytest.raises(InvalidInputError, match="confidence"):
        mem.remember("x", confidence=1.5)
    with pytest.raises(InvalidInputError, match="importance"):
        mem.remember("x", importance=-0.1)
    assert mem.facts() == []


def test_bad_episode_fields(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="kind"):
        mem.add("x", kind="dream")
    with pytest.raises(InvalidInputError, match="occurred_at"):
        mem.add("x", occurred_at="last tuesday")
    with pytest.raises(InvalidInputError, match="meta"):
        mem.add("x", meta={"when": object()})
    assert mem.stats()["episodes"] == 0


def test_bad_item_in_a_batch_writes_nothing_of_that_batch(mem: Memory) -> None:
    items = [{"text": f"fine {i}"} for i in range(10)] + [{"text": ""}]
    with pytest.raises(InvalidInputError, match="item 10"):
        mem.add_many(items)
    assert mem.stats()["episodes"] == 0


def test_blank_query(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="query"):
        mem.search("  ")


def test_non_sqlite_file(tmp_path: Path) -> None:
    bogus = tmp_path / "memory.db"
    bogus.write_text("this is a to-do list, not a database\n")
    with pytest.raises(CorruptStoreError, match="not an SQLite database"):
        Memory(bogus)
    assert bogus.read_text() == "this is a to-do list, not a database\n"


def test_corrupt_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with Memory(path) as mem:
        for i in range(200):
            mem.add(f"filler note number {i} with enough words to span pages")
    data = bytearray(path.read_bytes())
    data[100 : 4096 * 3] = b"\xff" * (4096 * 3 - 100)  # wreck the schema page
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptStoreError, match="not a usable orcamem database"):
        Memory(path)


def test_directory_as_path(tmp_path: Path) -> None:
    with pytest.raises(CorruptStoreError, match="directory"):
        Memory(tmp_path)


READ_ONLY_PROBE = """
import sys
from orcamem import Memory, ReadOnlyStoreError
try:
    Memory(sys.argv[1]).add("must not be written")
except ReadOnlyStoreError as exc:
    print("refused:", exc)
"""


def as_unprivileged(code: str, *args: str) -> subprocess.CompletedProcess:
    """Run Python as 'nobody' when the tests run as root (root ignores file permissions)."""
    prefix = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("needs setpriv to drop root")
        prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    return subprocess.run(
        [*prefix, sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def world_readable(tmp_path: Path) -> Path:
    """A directory tree 'nobody' can read and enter but not write."""
    for part in [tmp_path, *tmp_path.parents]:
        if part == Path("/"):
            break
        part.chmod(part.stat().st_mode | 0o055)
    locked = tmp_path / "locked"
    locked.mkdir()
    return locked


def test_read_only_directory(world_readable: Path) -> None:
    world_readable.chmod(0o555)
    done = as_unprivileged(READ_ONLY_PROBE, str(world_readable / "memory.db"))
    assert "refused: the directory" in done.stdout, done.stderr
    assert "writable location" in done.stdout
    assert list(world_readable.iterdir()) == []


def test_read_only_database_file(world_readable: Path) -> None:
    path = world_readable / "memory.db"
    with Memory(path) as mem:
        mem.add("written by the owner")
    for file in world_readable.iterdir():
        file.chmod(0o444)
    world_readable.chmod(0o555)
    before = path.read_bytes()
    done = as_unprivileged(READ_ONLY_PROBE, str(path))
    assert "refused:" in done.stdout and "read-only" in done.stdout, done.stderr
    assert path.read_bytes() == before


def test_read_only_location(tmp_path: Path) -> None:
    """Even root cannot write below a regular file: the error says what to do."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    with pytest.raises(ReadOnlyStoreError, match="writable location"):
        Memory(blocker / "sub" / "memory.db")


def test_schema_from_the_future(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    Memory(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO schema_version VALUES (999, 'future', 'x')")
    with pytest.raises(SchemaTooNewError, match="upgrade orcamem"):
        Memory(path)


def test_every_error_is_an_orcamem_error_with_a_status() -> None:
    import orcamem

    for name in orcamem.__all__:
        obj = getattr(orcamem, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, OrcamemError)
            assert 400 <= obj.status < 600


class LyingEmbedder:
    """Declares the default model's id and dim but returns shorter vectors."""

    def __init__(self) -> None:
        from orcamem._kernel.embed import make_embedder

        self.inner = make_embedder()
        self.id, self.dim = self.inner.id, self.inner.dim

    def embed(self, texts):
        return self.inner.embed(texts)[:, :64]


def test_wrong_dimension_vectors_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with Memory(path) as mem:
        mem.add("a note written with the real model")
    with Memory(path, embedder=LyingEmbedder()) as mem:
        with pytest.raises(DimensionMismatchError, match="declares dim 256"):
            mem.add("never stored")
        with pytest.raises(DimensionMismatchError):
            mem.remember("never stored either")
        with pytest.raises(DimensionMismatchError):
            mem.search("a note")
        with pytest.raises(DimensionMismatchError):
            mem.reembed()
        assert [e.text for e in mem.iter_episodes()] == ["a note written with the real model"]
        assert mem.facts() == []

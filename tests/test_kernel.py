"""The kernel's shared helpers, each the one place its concept lives: NOTHING and schema checks
(``_kernel.llm``), HTTP clients (``_kernel.http``), atomic writes and the file lock
(``_kernel.files``), the UTC stamp (``_kernel.clock``)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import example, given, settings
from hypothesis import strategies as st

from orcamem import (
    InvalidInputError,
    OrcamemError,
    ReadOnlyStoreError,
    StoreError,
    TransientError,
)
from orcamem._kernel import http, llm
from orcamem._kernel.clock import FrozenClock, format_time, parse_time
from orcamem._kernel.files import (
    FileLock,
    is_temp,
    remove,
    remove_stale_temps,
    temp_path,
    write_atomic,
)
from orcamem._kernel.jobs import queue
from orcamem._kernel.llm import NOTHING, is_nothing, schema_errors
from orcamem._kernel.model import validate_time
from servers import serve
from strategies import ISO_LIKE

# -- NOTHING ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["NOTHING", " nothing\n", '"NOTHING"', "`Nothing`", "“nothing”"])
def test_nothing_in_any_case_and_quoting_is_nothing(value: str) -> None:
    assert is_nothing(value)


@pytest.mark.parametrize("value", ["NOTHING.", "nothing to report", "", None, [], {}, 0])
def test_anything_else_is_not_nothing(value: object) -> None:
    assert not is_nothing(value)


def test_the_job_queue_publishes_the_models_nothing() -> None:
    assert queue.NOTHING is NOTHING


def test_the_package_names_load_on_use_and_nothing_loads_light() -> None:
    code = (
        "import sys, orcamem._kernel.jobs.queue; "
        "print(sorted(m for m in ('httpx', 'jsonschema') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    for name in llm.__all__:
        assert getattr(llm, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'Missing'"):
        _ = llm.Missing  # type: ignore[attr-defined]


# -- schema checks --------------------------------------------------------------------------------


def test_schema_errors_cut_a_long_value_short() -> None:
    [line] = schema_errors(
        {"tags": ["x" * 500]}, {"properties": {"tags": {"items": {"type": "integer"}}}}
    )
    assert line.startswith("$.tags[0]: 'xxx") and line.endswith("… is not of type 'integer'")
    assert len(line) < 120


def test_schema_errors_follow_references() -> None:
    schema = {
        "$defs": {"name": {"type": "string", "minLength": 2}},
        "type": "object",
        "properties": {"who": {"$ref": "#/$defs/name"}},
    }
    assert schema_errors({"who": "A"}, schema) == ["$.who: 1 characters, at least 2 allowed"]
    assert schema_errors({"who": "Ann"}, schema) == []


def test_a_broken_schema_is_the_callers_error() -> None:
    with pytest.raises(InvalidInputError, match=r"not a valid JSON Schema \(\$\.type: "):
        schema_errors("x", {"type": "text"})


# -- HTTP clients ---------------------------------------------------------------------------------


def test_a_client_has_explicit_timeouts_and_ignores_the_environment() -> None:
    with http.client(timeout=5.0, base_url="http://127.0.0.1:9", headers={"x-a": "1"}) as sync:
        assert sync.timeout == httpx.Timeout(5.0)
        assert not sync.trust_env
        assert sync.base_url == "http://127.0.0.1:9" and sync.headers["x-a"] == "1"
    pool = http.async_client(timeout=600.0, connect=10.0, keepalive=32)
    try:
        assert pool.timeout == httpx.Timeout(600.0, connect=10.0) and not pool.trust_env
    finally:
        asyncio.run(pool.aclose())


def test_a_proxy_in_the_environment_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    app = FastAPI()
    app.get("/ping")(lambda: {"ok": True})
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with serve(app) as url, http.client(timeout=5.0, base_url=url) as sync:
        assert sync.get("/ping").json() == {"ok": True}


@pytest.mark.parametrize(
    "options", [{"timeout": 0}, {"timeout": None}, {"timeout": 5, "connect": -1}]
)
def test_a_client_without_a_positive_timeout_is_refused(options: dict) -> None:
    with pytest.raises(InvalidInputError, match="positive number of seconds"):
        http.client(**options)


# -- atomic writes and the file lock ------------------------------------------------------------


def test_write_atomic_replaces_the_file_whole_and_privately(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    write_atomic(path, b"old\n")
    write_atomic(path, b"new\n")
    assert path.read_bytes() == b"new\n"
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["ledger.jsonl"]  # no temp file left


def test_write_atomic_names_the_path_it_could_not_write(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("a file, not a directory")
    target = tmp_path / "file" / "x.json"
    with pytest.raises(StoreError, match=f"cannot write {target}"):
        write_atomic(target, b"{}")


def test_remove_deletes_once_and_names_a_path_it_cannot_delete(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_bytes(b"{}")
    assert remove(path) is True and not path.exists()
    assert remove(path) is False  # already gone: idempotent
    (tmp_path / "file").write_text("a file, not a directory")
    with pytest.raises(StoreError, match="cannot delete"):
        remove(tmp_path / "file" / "x.json")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_a_read_only_directory_is_a_read_only_store_error(tmp_path: Path) -> None:
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(ReadOnlyStoreError, match="permission denied"):
            write_atomic(tmp_path / "x", b"")
    finally:
        tmp_path.chmod(0o700)


def test_stale_temps_are_recognised_and_removed(tmp_path: Path) -> None:
    path = tmp_path / "memory.md"
    fresh, old = temp_path(path), temp_path(path)
    deep = temp_path(tmp_path / "jobs" / "job-1.json")
    assert fresh != old and is_temp(fresh.name) and not is_temp(path.name)
    deep.parent.mkdir()
    now = datetime(2026, 10, 17, tzinfo=timezone.utc)
    for leftover in (fresh, old, deep):
        leftover.write_bytes(b"half")
        os.utime(leftover, (now.timestamp() - 120,) * 2)
    os.utime(fresh, (now.timestamp(),) * 2)
    path.write_bytes(b"kept")
    clock = FrozenClock(now)
    assert remove_stale_temps(tmp_path, older_than_s=60, clock=clock) == 2  # at any depth
    assert fresh.exists() and not old.exists() and not deep.exists() and path.exists()
    # with the lock held, every temp copy of the file is stale
    assert remove_stale_temps(tmp_path, of=path.name, older_than_s=0) == 1
    assert not fresh.exists() and path.read_bytes() == b"kept"


def test_the_lock_is_reentrant_in_a_thread_and_makes_other_threads_wait(tmp_path: Path) -> None:
    lock = FileLock(tmp_path / "sub" / ".lock")
    order: list[str] = []

    def other_thread() -> None:
        with lock.hold():
            order.append("b")

    with lock.hold(), lock.hold():  # re-entrant; the directory is made
        waiter = threading.Thread(target=other_thread)
        waiter.start()
        time.sleep(0.2)
        order.append("a")
    waiter.join(5)
    assert order == ["a", "b"]


def test_a_lock_held_by_another_process_is_a_transient_error(tmp_path: Path) -> None:
    path = tmp_path / ".lock"
    code = (
        "import sys, time, filelock; lock = filelock.FileLock(sys.argv[1]); lock.acquire(); "
        "print('held', flush=True); time.sleep(30)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        busy = f"the lock {path} is held by another process"
        with pytest.raises(TransientError, match=busy), FileLock(path, timeout_s=0.2).hold():
            pass
    finally:
        holder.kill()
        holder.wait()
    with FileLock(path, timeout_s=5).hold():  # free again once the holder is gone
        pass


# -- the UTC stamp --------------------------------------------------------------------------------


def test_one_stamp_in_microseconds_or_the_markdown_stores_milliseconds() -> None:
    moment = datetime(2026, 8, 28, 21, 30, 0, 987654, tzinfo=timezone(timedelta(hours=2)))
    assert format_time(moment) == "2026-08-28T19:30:00.987654Z"
    assert format_time(moment, digits=3) == "2026-08-28T19:30:00.987Z"  # cut, not rounded
    assert format_time(moment.replace(tzinfo=None)) == "2026-08-28T21:30:00.987654Z"  # naive: UTC
    assert parse_time(format_time(moment, digits=3)) == moment.replace(microsecond=987000)
    with pytest.raises(InvalidInputError, match="digits=2"):
        format_time(moment, digits=2)  # type: ignore[arg-type]


def test_the_stamp_always_has_a_four_digit_year() -> None:
    assert format_time(datetime(999, 1, 1, tzinfo=timezone.utc)) == "0999-01-01T00:00:00.000000Z"
    assert format_time(datetime(1, 2, 3, 4, 5, 6, 7), digits=3) == "0001-02-03T04:05:06.000Z"
    assert format_time(datetime(9999, 12, 31, 23, 59, 59, 999999)) == (
        "9999-12-31T23:59:59.999999Z"
    )
    assert validate_time("0999-01-01T00:00:00Z") == "0999-01-01T00:00:00.000000Z"


@pytest.mark.parametrize(
    "value",
    [
        "0000-01-01T00:00:00Z",  # year 0
        "-0001-01-01T00:00:00Z",
        "10000-01-01T00:00:00Z",
        "0001-01-01T00:00:00+01:00",  # before year 1 in UTC
        "9999-12-31T23:59:59-01:00",  # after 9999 in UTC
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5))),
    ],
)
def test_times_outside_the_years_0001_to_9999_are_refused(value: str | datetime) -> None:
    with pytest.raises(InvalidInputError, match="0001-9999"):
        validate_time(value)


STORED_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        ISO_LIKE,
        st.text(),
        st.datetimes(timezones=st.one_of(st.none(), st.timezones())),
        st.integers(),
        st.none(),
    )
)
@example("0999-01-01T00:00:00Z")
@example("0001-01-01T00:00:00+00:01")
def test_any_occurred_at_is_stored_fixed_width_or_refused_with_an_orcamem_error(
    value: object,
) -> None:
    try:
        stored = validate_time(value)  # type: ignore[arg-type]
    except OrcamemError:
        return
    if value is None:
        assert stored is None
        return
    assert stored is not None and STORED_TIME.fullmatch(stored), stored
    assert validate_time(stored) == stored  # stored form is a fixed point
    assert format_time(parse_time(stored)) == stored


def test_stable_ids_are_the_ones_already_on_disk() -> None:
    """Job and candidate ids name files and ledger lines written by earlier versions: the one
    id helper must give exactly the ids the old code gave (values recorded from it)."""
    from orcamem._kernel.jobs import job_id
    from orcamem.local.ledger import candidate_id

    assert job_id("user_a", "extract", "s1", "t1", "sha256:ab12") == "job-1f196e14d3061554da6c1596"
    assert candidate_id("job-x", "We deploy with Helm") == "cand-7e2162d7bad27d78"


def test_random_ids_follow_the_name_rules() -> None:
    from orcamem._kernel.ids import random_id
    from orcamem._kernel.names import KEY_ID, MEMORY_ID

    assert MEMORY_ID.ok(random_id("mem-")) and KEY_ID.ok(random_id("key-"))
    assert random_id("mem-") != random_id("mem-")

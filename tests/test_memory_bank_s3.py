"""The Memory Bank on a real S3-compatible server (SeaweedFS, ``tests/s3_server.py``): the
bucket chosen from the environment, saves that have landed when they return, ListObjectsV2
paging past 1,000 objects, conditional writes between concurrent runners, and malformed
objects skipped and reported."""

from __future__ import annotations

import json
import logging
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from orcamem._kernel.clock import FrozenClock
from orcamem._kernel.env import S3Settings, memory_bank_s3
from orcamem.bank import BankMemory, MemoryBank
from orcamem.bank.objects import LIST_PAGE_SIZE, PreconditionFailedError, S3ObjectStore
from test_memory_bank import _two_writers

pytest_plugins = ["s3_server"]

NOW = "2026-11-01T10:00:00Z"


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(NOW)


def env_for(settings: S3Settings, prefix: str) -> dict[str, str]:
    return {
        "ORCA_HOME": os.environ["ORCA_HOME"],  # the test's, never the developer's profiles
        f"{prefix}BUCKET": settings.bucket,
        f"{prefix}ENDPOINT": settings.endpoint,
        f"{prefix}ACCESS_KEY_ID": settings.access_key_id or "",
        f"{prefix}SECRET_ACCESS_KEY": settings.secret_access_key or "",
    }


def test_the_bucket_comes_from_internal_then_primary_variables() -> None:
    internal = {"INTERNAL_S3_BUCKET": "orca-internal", "S3_BUCKET": "artefacts"}
    assert memory_bank_s3(internal).bucket == "orca-internal"
    assert memory_bank_s3(internal).source == "INTERNAL_S3_BUCKET"
    primary = memory_bank_s3({"S3_BUCKET": "artefacts", "AWS_REGION": "eu-west-1"})
    assert (primary.bucket, primary.source, primary.region) == (
        "artefacts",
        "S3_BUCKET",
        "eu-west-1",
    )
    assert primary.endpoint == "https://s3.eu-west-1.amazonaws.com"
    assert memory_bank_s3({}) is None
    secret = memory_bank_s3({"S3_BUCKET": "b", "S3_SECRET_ACCESS_KEY": "hunter2"})
    assert secret.secret_access_key == "hunter2" and "hunter2" not in repr(secret)


def test_a_save_has_landed_in_the_internal_bucket_when_it_returns(
    s3_server, s3_bucket: S3Settings, clock: FrozenClock
) -> None:
    decoy = s3_server.new_bucket()  # S3_BUCKET is set too, but INTERNAL_S3_BUCKET wins
    environ = {**env_for(decoy, "S3_"), **env_for(s3_bucket, "INTERNAL_S3_")}
    with MemoryBank.from_env(
        profiles={"researcher": ["@memory"]}, clock=clock, environ=environ
    ) as bank:
        assert bank.objects.location == f"s3://{s3_bucket.bucket} at {s3_bucket.endpoint}"
        saved = bank.save("researcher", content="The user is allergic to peanuts.", category="fact")
        reader = S3ObjectStore(s3_bucket)  # another client, straight after the save returned
        stored = reader.get(f"memory/researcher/{saved.id}.json")
        assert BankMemory.decode(stored.body, stored.key) == saved
        assert json.loads(stored.body)["rawInput"] == "The user is allergic to peanuts."
        assert list(S3ObjectStore(decoy).list("")) == []
        reader.close()
    # a new runner hydrates from the bucket
    with MemoryBank.from_env(clock=clock, environ=environ) as again:
        assert again.get("researcher", saved.id) == saved


def test_without_internal_the_bank_falls_back_to_the_primary_bucket(
    s3_bucket: S3Settings, clock: FrozenClock, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.INFO, logger="orcamem.bank"),
        MemoryBank.from_env(
            profiles={"p": []}, clock=clock, environ=env_for(s3_bucket, "S3_")
        ) as bank,
    ):
        saved = bank.save("p", content="Single-bucket dev setup.")
        assert S3ObjectStore(s3_bucket).get(f"memory/p/{saved.id}.json").body == saved.encode()
    assert any("using S3_BUCKET" in r.getMessage() for r in caplog.records)


def test_load_all_pages_through_more_than_1000_objects(
    s3_bucket: S3Settings, clock: FrozenClock
) -> None:
    assert LIST_PAGE_SIZE == 1000
    store = S3ObjectStore(s3_bucket)
    template = BankMemory(
        id="mem-00000000",
        profile_name="big",
        raw_input="x",
        processed_content="x",
        summary="x",
        category="general",
        source="explicit",
        confidence=1.0,
        created_at="2026-11-01T10:00:00.000000Z",
        last_accessed_at=None,
        access_count=0,
        staleness_score=0.0,
    )

    def write(n: int) -> None:
        memory = BankMemory(**{**template.__dict__, "id": f"mem-{n:08x}", "raw_input": f"n{n}"})
        store.put(f"memory/big/{memory.id}.json", memory.encode(), if_none_match=True)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(1005)))
    requests = []
    original = store._request

    def counting(*args, **kwargs):
        requests.append(kwargs.get("query"))
        return original(*args, **kwargs)

    store._request = counting  # type: ignore[method-assign]
    with MemoryBank(store, clock=clock) as bank:
        assert bank.last_load.loaded == 1005 and bank.last_load.skipped == []
        page = bank.list("big", limit=1000)
        assert page.total == 1005 and page.next_offset == 1000
        assert bank.stats()["perProfile"] == {"big": 1005}
    listings = [query for query in requests if query]
    assert len(listings) == 2  # two ListObjectsV2 pages: 1,000 + 5
    assert ("continuation-token" in dict(listings[1])) and dict(listings[0])["max-keys"] == "1000"
    store.close()


def test_two_runners_on_one_bucket_lose_no_update(
    s3_bucket: S3Settings, clock: FrozenClock
) -> None:
    _two_writers(lambda: S3ObjectStore(s3_bucket), clock)


def test_the_server_enforces_both_preconditions(s3_bucket: S3Settings) -> None:
    store = S3ObjectStore(s3_bucket)
    etag = store.put("memory/p/mem-00000001.json", b"{}", if_none_match=True)
    with pytest.raises(PreconditionFailedError, match="already exists"):
        store.put("memory/p/mem-00000001.json", b"{}", if_none_match=True)
    with pytest.raises(PreconditionFailedError):
        store.put("memory/p/mem-00000001.json", b"[]", if_match="0" * 32)
    newer = store.put("memory/p/mem-00000001.json", b"[]", if_match=etag)
    assert [(i.key, i.etag) for i in store.list("memory/")] == [
        ("memory/p/mem-00000001.json", newer)
    ]
    store.delete("memory/p/mem-00000001.json")
    with pytest.raises(PreconditionFailedError):
        store.put("memory/p/mem-00000001.json", b"{}", if_match=newer)
    store.close()


def test_an_access_never_resurrects_a_deleted_memory(
    s3_bucket: S3Settings, clock: FrozenClock
) -> None:
    with (
        MemoryBank(S3ObjectStore(s3_bucket), profiles={"p": []}, clock=clock) as one,
        MemoryBank(S3ObjectStore(s3_bucket), profiles={"p": []}, clock=clock) as other,
    ):
        saved = one.save("p", content="Soon gone.")
        other.load_all()
        one.delete("p", saved.id)
        other.mark_accessed("p", [saved.id]).result(10)
        assert list(one.objects.list("memory/")) == []
        assert other.list("p").total == 0


def test_malformed_objects_in_the_bucket_are_skipped_and_reported(
    s3_bucket: S3Settings, clock: FrozenClock
) -> None:
    store = S3ObjectStore(s3_bucket)
    with MemoryBank(store, profiles={"p": []}, clock=clock) as writer:
        good = writer.save("p", content="Valid.")
    store.put("memory/p/mem-0000000a.json", b"{truncated")
    store.put("memory/p/mem-0000000b.json", json.dumps({"id": "mem-0000000b"}).encode())
    ticker = [0.0]
    with MemoryBank(store, role="conductor", clock=clock, ticker=lambda: ticker[0]) as bank:
        assert bank.last_load.loaded == 1
        assert sorted(s.key for s in bank.last_load.skipped) == [
            "memory/p/mem-0000000a.json",
            "memory/p/mem-0000000b.json",
        ]
        assert [m.id for m in bank.list("p").memories] == [good.id]
        # a later refresh still reports them (unchanged objects are not read again), and
        # forgets them once they are gone
        store.delete("memory/p/mem-0000000a.json")
        ticker[0] += 2.0
        assert [s["key"] for s in bank.stats()["skipped"]] == ["memory/p/mem-0000000b.json"]
    store.close()

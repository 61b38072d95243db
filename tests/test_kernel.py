"""The kernel's shared helpers, each the one place its concept lives: NOTHING and schema checks
(``_kernel.llm``), HTTP clients (``_kernel.http``)."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import httpx
import pytest
from fastapi import FastAPI

from orcamem import InvalidInputError
from orcamem._kernel import http, llm
from orcamem._kernel.jobs import queue
from orcamem._kernel.llm import NOTHING, is_nothing, schema_errors
from servers import serve

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
